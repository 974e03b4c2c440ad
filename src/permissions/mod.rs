//! Permission modes and the approval protocol between the engine and a front end.
//!
//! The rule engine (allow/ask/deny, compound shell commands, protected paths) plugs into the
//! tool pipeline's authorization step; this module also defines how the engine asks a human.

pub mod authorizer;
pub mod config;
pub mod protected;
pub mod rules;
pub mod updates;

pub use crate::types::permission::{Mode, PermissionPrompt, PermissionReply};
pub use authorizer::{AskInfo, Authorizer, HookDecision, Verdict};
