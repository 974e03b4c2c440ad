//! keel: a terminal coding agent whose host runtime keeps the model's claims tied to evidence.
//!
//! See docs/ARCHITECTURE.md for the map of the modules and how a prompt flows through them.
//! Modules are `pub(crate)` unless the binary, the benchmark examples or the end-to-end tests
//! use them.

pub(crate) mod agents;
pub mod checkpoint;
pub mod cli;
pub(crate) mod commands;
pub mod compact;
pub(crate) mod config;
pub(crate) mod console;
pub mod context;
pub(crate) mod debug;
pub mod engine;
pub mod evidence;
pub(crate) mod export;
pub(crate) mod frontmatter;
pub(crate) mod fsutil;
pub(crate) mod headless;
pub(crate) mod hooks;
pub(crate) mod launch;
pub(crate) mod mcp;
pub(crate) mod memory;
pub(crate) mod permissions;
pub(crate) mod plugins;
pub mod provider;
pub(crate) mod redact;
pub mod sandbox;
pub(crate) mod shell;
pub(crate) mod shutdown;
pub(crate) mod skills;
pub mod tools;
pub mod transcript;
pub(crate) mod tui;
pub mod types;
pub mod workspace;
