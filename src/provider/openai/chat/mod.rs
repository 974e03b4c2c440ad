//! Chat Completions (`POST /chat/completions`, streamed): what OpenAI, OpenRouter, DeepSeek,
//! Ollama, vLLM, llama.cpp and LM Studio all speak.

pub mod assembler;
pub mod wire;

pub use assembler::Assembler;
