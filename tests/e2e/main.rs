//! End-to-end tests: the real `keel` binary against a scripted model server on loopback.

// Test code: a failed unwrap is a failed test, reported with its panic message.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code prints what it skipped or measured for the person running it.
#![allow(clippy::disallowed_macros)]

mod support;

mod agents;
mod bash;
mod clear_messages;
mod compaction;
mod containment;
mod demo;
mod edit_guards;
mod engine_loop;
mod evidence;
mod evidence_runs;
mod evidence_weakenings;
mod export;
mod fallback_chain;
mod file_safety;
mod git_calls;
mod harbor;
mod harness_attacks;
mod headless;
mod headless_programs;
mod home_reads;
mod hook_guards;
mod hooks;
mod hooks_integration;
mod instruction_imports;
mod jail;
mod limits;
mod link_escapes;
mod local_servers;
mod mcp;
mod mcp_failures;
mod openai;
mod permissions;
mod plugins;
mod provider;
mod provider_faults;
mod red_team;
mod rewind;
mod robustness;
mod sandbox;
mod sandbox_network;
mod sandbox_top;
mod sdk_client;
mod sdk_mcp;
mod sdk_permissions;
mod session_lock;
mod settings_layers;
mod shm;
mod silent_waits;
mod skills;
mod stream_control;
mod stream_json;
mod subagents;
mod task_budget;
mod terminal_output;
mod toolchains;
mod trust;
mod ts_sdk;
mod tui;
mod tui_approvals;
mod tui_render;
mod undo_crash;
mod undo_full;
mod web;
