//! End-to-end tests: the real `keel` binary against a scripted model server on loopback.

mod support;

mod agents;
mod bash;
mod compaction;
mod demo;
mod edit_guards;
mod engine_loop;
mod file_safety;
mod harness_attacks;
mod headless;
mod hooks;
mod hooks_integration;
mod permissions;
mod plugins;
mod provider;
mod sandbox;
mod skills;
mod subagents;
mod trust;
mod tui;
