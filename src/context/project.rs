//! The layers in front of the conversation, outermost first:
//!
//! 1. the static core prompt (with the tool definitions, which the API puts before the
//!    system prompt) — identical across sessions;
//! 2. the project context: environment (cwd, platform, date, model), the git snapshot and the
//!    instruction files — identical for the whole session;
//! 3. text the user appended with `--append-system-prompt`.
//!
//! Both stable layers end in a prompt-cache breakpoint; the turn driver adds at most two more
//! on the tail of the conversation (see `context::assemble`).

use std::path::{Path, PathBuf};

use super::git::{self, GitSnapshot};
use super::import_policy::ImportPolicy;
use super::instructions::{self, Instructions};
use super::system_prompt;
use crate::message::CacheControl;
use crate::provider::SystemBlock;

#[derive(Debug, Clone)]
pub struct ProjectContext {
    pub cwd: PathBuf,
    core: String,
    environment: String,
    pub git: Option<GitSnapshot>,
    pub instructions: Instructions,
    append: Option<String>,
    /// Sections keel adds after the instruction files (the skill and sub-agent listings).
    pub listings: Vec<String>,
    /// The project's memory (the main agent's only).
    pub memory: Option<crate::memory::Memory>,
}

/// What to gather for a session.
pub struct Gather<'a> {
    pub cwd: &'a Path,
    pub model: &'a str,
    /// The user's home directory (for `~/.claude/CLAUDE.md` and `@~/` imports).
    pub home: Option<&'a Path>,
    /// `--system-prompt`: replaces the core prompt.
    pub replace: Option<&'a str>,
    /// `--append-system-prompt`.
    pub append: Option<&'a str>,
}

impl ProjectContext {
    /// Reads the environment, asks git for a snapshot and loads the instruction files.
    pub fn gather(g: &Gather<'_>) -> Self {
        ProjectContext {
            cwd: g.cwd.to_path_buf(),
            core: g.replace.unwrap_or(system_prompt::core()).to_string(),
            environment: system_prompt::environment(g.cwd, g.model),
            git: git::snapshot(g.cwd),
            instructions: Instructions::discover_with(
                g.cwd,
                g.home,
                ImportPolicy::for_session(g.cwd, g.home, crate::config::paths::keel_home().as_deref()),
            ),
            append: g.append.filter(|s| !s.trim().is_empty()).map(str::to_string),
            listings: Vec::new(),
            memory: None,
        }
    }

    /// Only the core prompt and a fixed environment line: no git, no instruction files.
    pub fn bare(cwd: &Path, environment: &str) -> Self {
        ProjectContext {
            cwd: cwd.to_path_buf(),
            core: system_prompt::core().to_string(),
            environment: environment.to_string(),
            git: None,
            instructions: Instructions::none(cwd),
            append: None,
            listings: Vec::new(),
            memory: None,
        }
    }

    /// The text of the project layer: the base (environment, git, instruction files), the
    /// listings and the memory.
    pub fn project_text(&self) -> String {
        let mut out = self.base_text();
        for l in &self.listings {
            out.push_str("\n\n");
            out.push_str(l);
        }
        if let Some(m) = &self.memory {
            out.push_str("\n\n");
            out.push_str(&m.render());
        }
        out
    }

    /// Environment, git snapshot and instruction files.
    pub fn base_text(&self) -> String {
        let mut out = self.environment.clone();
        if let Some(g) = &self.git {
            out.push_str("\n\n");
            out.push_str(&g.render());
        }
        let files = instructions::render(&self.instructions.files);
        if !files.is_empty() {
            out.push_str("\n\n");
            out.push_str(&files);
        }
        out
    }

    /// The system blocks, with cache breakpoints on the core and on the last block.
    pub fn system_blocks(&self) -> Vec<SystemBlock> {
        // An empty core (`--system-prompt ""`) is left out: the API rejects empty text blocks.
        let mut blocks = Vec::with_capacity(3);
        if !self.core.trim().is_empty() {
            blocks.push(SystemBlock::text(self.core.clone()));
        }
        blocks.push(SystemBlock::text(self.project_text()));
        if let Some(a) = &self.append {
            blocks.push(SystemBlock::text(a.clone()));
        }
        blocks[0].cache_control = Some(CacheControl::ephemeral());
        if let Some(last) = blocks.last_mut() {
            last.cache_control = Some(CacheControl::ephemeral());
        }
        blocks
    }

    /// Re-reads the start set of instruction files from disk (after compaction); returns
    /// whether the project layer changed.
    pub fn reload_instructions(&mut self) -> bool {
        let before = instructions::render(&self.instructions.files);
        self.instructions.reload();
        let memory_changed = self.memory.as_mut().is_some_and(|m| m.reload());
        before != instructions::render(&self.instructions.files) || memory_changed
    }

    /// Takes over the sections keel added to another project layer (a model switch rebuilds
    /// the layer from disk).
    pub fn adopt_sections(&mut self, from: &ProjectContext) {
        self.instructions.include_dirs(from.instructions.included_dirs());
        if self.listings.is_empty() {
            self.listings = from.listings.clone();
        }
        if self.memory.is_none() {
            self.memory = from.memory.clone();
        }
    }

    pub fn core_text(&self) -> &str {
        &self.core
    }

    pub fn environment_text(&self) -> &str {
        &self.environment
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_are_ordered_marked_and_stable() {
        let t = tempfile::tempdir().unwrap();
        let cwd = t.path().canonicalize().unwrap();
        std::fs::write(cwd.join("CLAUDE.md"), "Run `make check` before saying done.").unwrap();
        let g = Gather {
            cwd: &cwd,
            model: "claude-sonnet-4-5",
            home: None,
            replace: None,
            append: Some("extra words"),
        };
        let ctx = ProjectContext::gather(&g);
        let blocks = ctx.system_blocks();
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[0].text, system_prompt::core());
        assert!(blocks[1].text.starts_with("Environment:"));
        assert!(blocks[1].text.contains("Run `make check` before saying done."));
        assert_eq!(blocks[2].text, "extra words");
        let marked: Vec<bool> = blocks.iter().map(|b| b.cache_control.is_some()).collect();
        assert_eq!(marked, vec![true, false, true]);
        // Built twice, byte-identical: nothing in the layers depends on the moment of the call.
        assert_eq!(
            serde_json::to_string(&blocks).unwrap(),
            serde_json::to_string(&ctx.system_blocks()).unwrap()
        );
        let mut ctx = ctx;
        assert!(!ctx.reload_instructions());
        std::fs::write(cwd.join("CLAUDE.md"), "New rule.").unwrap();
        assert!(ctx.reload_instructions());
        assert!(ctx.system_blocks()[1].text.contains("New rule."));
    }
}
