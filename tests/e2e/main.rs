//! End-to-end tests: the real `keel` binary against a scripted model server on loopback.

// Test code: a failed unwrap is a failed test, reported with its panic message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod agents;
mod bash;
mod compaction;
mod containment;
mod demo;
mod edit_guards;
mod engine_loop;
mod evidence;
mod file_safety;
mod harness_attacks;
mod headless;
mod headless_programs;
mod home_reads;
mod hooks;
mod hooks_integration;
mod instruction_imports;
mod jail;
mod mcp;
mod openai;
mod permissions;
mod plugins;
mod provider;
mod provider_faults;
mod red_team;
mod rewind;
mod robustness;
mod sandbox;
mod sdk_client;
mod sdk_mcp;
mod sdk_permissions;
mod skills;
mod stream_control;
mod stream_json;
mod subagents;
mod toolchains;
mod trust;
mod ts_sdk;
mod tui;
mod tui_approvals;
mod tui_render;
