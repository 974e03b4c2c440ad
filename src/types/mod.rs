//! Plain data shared by every layer: messages, engine events, tool outputs, the task list,
//! permission modes and questions. This module imports nothing else of keel, so the engine,
//! its services and the front ends meet through these types without depending on each other.

pub mod events;
pub mod ip_range;
pub mod message;
pub mod permission;
pub mod todo_deps;
pub mod tool;
pub mod untrusted;
