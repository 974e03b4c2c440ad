//! keel: a terminal coding agent whose host runtime keeps the model's claims tied to evidence.
//!
//! See docs/ARCHITECTURE.md for the map of the modules and how a prompt flows through them.

pub mod agents;
pub mod checkpoint;
pub mod cli;
pub mod commands;
pub mod compact;
pub mod config;
pub mod context;
pub mod debug;
pub mod engine;
pub mod evidence;
pub mod frontmatter;
pub mod fsutil;
pub mod headless;
pub mod hooks;
pub mod launch;
pub mod mcp;
pub mod memory;
pub mod permissions;
pub mod plugins;
pub mod provider;
pub mod sandbox;
pub mod shell;
pub mod shutdown;
pub mod skills;
pub mod tools;
pub mod transcript;
pub mod tui;
pub mod types;
pub mod workspace;
