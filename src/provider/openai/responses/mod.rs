//! The Responses API (`POST /responses`, streamed): OpenAI's current API for its newest models.
//! keel keeps no state on the server (`store: false`): every request carries the conversation,
//! and reasoning items come back with their encrypted content so the model keeps its chain of
//! thought between tool calls.

pub mod assembler;
pub mod wire;

pub use assembler::Assembler;
