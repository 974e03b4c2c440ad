//! Prompt assembly: the layers in front of the conversation and the accounting of what a
//! request occupies in the context window.
//!
//! - `system_prompt`: the static core prompt and the environment facts.
//! - `project`: the project layer (environment, git snapshot, instruction files) and the
//!   system blocks with their cache breakpoints.
//! - `instructions`, `imports`: CLAUDE.md / AGENTS.md discovery and `@path` imports.
//! - `rules`: `.claude/rules/**/*.md`, at start or (with `paths:`) for matching files.
//! - `import_policy`: which imports are read (never credentials; outside the project only
//!   when the user approved) and where the answers are kept.
//! - `git`: the repository snapshot from the real `git`.
//! - `tokens`: estimates, the provider-calibrated counter and the window.
//! - `assemble`: a request from the layers and the view, with cache breakpoints on its tail.
//! - `report`: `keel context`.

pub mod assemble;
pub mod git;
pub mod import_policy;
pub mod imports;
pub mod instructions;
pub mod project;
pub mod report;
pub mod rules;
pub mod system_prompt;
pub mod tokens;

pub use project::{Gather, ProjectContext};
