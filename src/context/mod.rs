//! Prompt assembly: the static system prompt and the environment block.

pub mod system_prompt;
