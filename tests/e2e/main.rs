//! End-to-end tests: the real `keel` binary against a scripted model server on loopback.

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
mod hooks;
mod hooks_integration;
mod jail;
mod mcp;
mod openai;
mod permissions;
mod plugins;
mod provider;
mod provider_faults;
mod rewind;
mod robustness;
mod sandbox;
mod sdk_client;
mod skills;
mod stream_json;
mod subagents;
mod trust;
mod tui;
