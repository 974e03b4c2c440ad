//! End-to-end tests: the real `keel` binary against a scripted model server on loopback.

mod support;

mod bash;
mod compaction;
mod demo;
mod edit_guards;
mod engine_loop;
mod headless;
mod hooks;
mod hooks_integration;
mod openai;
mod permissions;
mod provider;
mod provider_faults;
mod sandbox;
mod subagents;
mod tui;
