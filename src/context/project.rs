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
use crate::provider::SystemBlock;
use crate::types::message::CacheControl;

/// The git section of a large repository's project layer.
const LATE_GIT: &str = "Git: a large repository; keel's snapshot of its state (branch, status, recent commits) \
is still being taken and follows in a later message. Run git for the current state.";

#[derive(Debug, Clone)]
pub struct ProjectContext {
    pub cwd: PathBuf,
    core: String,
    environment: String,
    pub git: Option<GitSnapshot>,
    /// The snapshot of a large repository, still being taken when the layer was built: the
    /// layer says it comes later, and [`ProjectContext::take_late_git`] hands it out once.
    git_later: Option<git::Pending>,
    pub instructions: Instructions,
    append: Option<String>,
    /// Sections keel adds after the instruction files (the skill and sub-agent listings).
    pub listings: Vec<String>,
    /// What the skill listing's budget left out, for `/context` (never in the prompt).
    pub listing_notes: Vec<String>,
    /// The project's memory (the main agent's only).
    pub memory: Option<crate::memory::Memory>,
    /// The environment, git snapshot and memory go in the session's first user message instead
    /// (a driving program's `excludeDynamicSections`), so the system prompt is the same for
    /// every user and folder and its cache is shared.
    pub dynamic_in_message: bool,
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
    /// Reads the environment, asks git for a snapshot (started in the background in a large
    /// repository) and loads the instruction files.
    pub fn gather(g: &Gather<'_>) -> Self {
        let (git, git_later) = match git::start(g.cwd) {
            git::Start::Now(snapshot) => (snapshot, None),
            git::Start::Later(pending) => (None, Some(pending)),
        };
        ProjectContext {
            cwd: g.cwd.to_path_buf(),
            core: g.replace.unwrap_or(system_prompt::core()).to_string(),
            environment: system_prompt::environment(g.cwd, g.model),
            git,
            git_later,
            instructions: Instructions::discover_with(
                g.cwd,
                g.home,
                ImportPolicy::for_session(g.cwd, g.home, crate::config::paths::keel_home().as_deref()),
            ),
            append: g.append.filter(|s| !s.trim().is_empty()).map(str::to_string),
            listings: Vec::new(),
            listing_notes: Vec::new(),
            memory: None,
            dynamic_in_message: false,
        }
    }

    /// Only the core prompt and a fixed environment line: no git, no instruction files.
    pub fn bare(cwd: &Path, environment: &str) -> Self {
        ProjectContext {
            cwd: cwd.to_path_buf(),
            core: system_prompt::core().to_string(),
            environment: environment.to_string(),
            git: None,
            git_later: None,
            instructions: Instructions::none(cwd),
            append: None,
            listings: Vec::new(),
            listing_notes: Vec::new(),
            memory: None,
            dynamic_in_message: false,
        }
    }

    /// The text of the project layer: the base (environment, git, instruction files), the
    /// listings and the memory.
    pub fn project_text(&self) -> String {
        let mut parts = Vec::new();
        if !self.dynamic_in_message {
            parts.push(self.environment.clone());
            parts.extend(self.git_text());
        }
        parts.push(instructions::render(&self.instructions.files));
        parts.extend(self.listings.iter().cloned());
        if !self.dynamic_in_message {
            parts.extend(self.memory.as_ref().map(|m| m.render()));
        }
        let text = parts
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        if text.is_empty() {
            // The API rejects empty text blocks.
            "No project instructions.".into()
        } else {
            text
        }
    }

    /// The git section: the snapshot, or where a large repository's will come. Decided when the
    /// layer is built, never by when git finishes, so the layer stays byte-identical.
    fn git_text(&self) -> Option<String> {
        if self.git_later.is_some() {
            return Some(LATE_GIT.to_string());
        }
        self.git.as_ref().map(GitSnapshot::render)
    }

    /// A large repository's snapshot, once it is ready; only the first call after that gets it.
    pub fn take_late_git(&self) -> Option<GitSnapshot> {
        self.git_later.as_ref()?.take()
    }

    /// The snapshot as far as it is known now (a sub-agent's prompt, built later, includes a
    /// large repository's snapshot once it is ready).
    pub fn git_now(&self) -> Option<GitSnapshot> {
        self.git.clone().or_else(|| self.git_later.as_ref()?.peek())
    }

    /// What `dynamic_in_message` keeps out of the system prompt, for the first user message.
    pub fn dynamic_text(&self) -> Option<String> {
        if !self.dynamic_in_message {
            return None;
        }
        let mut parts = vec![self.environment.clone()];
        parts.extend(self.git_text());
        parts.extend(self.memory.as_ref().map(|m| m.render()));
        Some(
            parts
                .into_iter()
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join("\n\n"),
        )
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
            self.listing_notes = from.listing_notes.clone();
        }
        if self.memory.is_none() {
            self.memory = from.memory.clone();
        }
        self.dynamic_in_message |= from.dynamic_in_message;
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
        assert_eq!(ctx.dynamic_text(), None);
        // A program's excludeDynamicSections: the environment leaves the system prompt.
        ctx.dynamic_in_message = true;
        let project = &ctx.system_blocks()[1].text;
        assert!(
            !project.contains("Environment:") && project.contains("New rule."),
            "{project}"
        );
        assert!(ctx.dynamic_text().unwrap().starts_with("Environment:"));
    }
}
