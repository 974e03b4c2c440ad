//! `keel context`: what keel puts in front of the conversation here — the layers with their
//! estimated sizes, the instruction files loaded at start (with imports) and those that load
//! later, when a tool first touches their directory.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::instructions::InstructionFile;
use super::project::ProjectContext;
use super::tokens::{self, Window};
use crate::provider::ToolDefinition;

/// Entries looked at when listing nested instruction files.
const MAX_WALK_ENTRIES: usize = 20_000;

pub struct Report<'a> {
    pub model: &'a str,
    pub window: Window,
    pub threshold: u64,
    pub auto: bool,
    pub project: &'a ProjectContext,
    pub tools: &'a [ToolDefinition],
}

pub fn render(r: &Report<'_>) -> String {
    let p = r.project;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Context for {} (model {}, window {} tokens, {} kept for the answer)",
        p.cwd.display(),
        r.model,
        r.window.total,
        r.window.output_reserve
    );
    if r.auto {
        let _ = writeln!(out, "Automatic compaction at about {} tokens.", r.threshold);
    } else {
        let _ = writeln!(out, "Automatic compaction is off.");
    }
    let files: u64 = p.instructions.files.iter().map(|f| tokens::text(&f.content)).sum();
    let env = tokens::text(p.environment_text()) + p.git.as_ref().map(|g| tokens::text(&g.render())).unwrap_or(0);
    out.push_str("\nLayers (estimated tokens):\n");
    let _ = writeln!(out, "  {:>7}  system prompt (static core)", tokens::text(p.core_text()));
    let _ = writeln!(
        out,
        "  {:>7}  tool definitions ({} tools)",
        tokens::tools(r.tools),
        r.tools.len()
    );
    let git = if p.git.is_some() {
        "git snapshot"
    } else {
        "not a git repository"
    };
    let _ = writeln!(out, "  {env:>7}  environment and {git}");
    let _ = writeln!(
        out,
        "  {files:>7}  instruction files ({} loaded at start)",
        p.instructions.files.len()
    );
    let listings: u64 = p.listings.iter().map(|l| tokens::text(l)).sum();
    if listings > 0 {
        let _ = writeln!(out, "  {listings:>7}  skill and sub-agent listings");
    }
    if let Some(m) = &p.memory {
        let _ = writeln!(
            out,
            "  {:>7}  project memory ({}: {})",
            tokens::text(&m.render()),
            m.origin.describe(),
            m.file.display()
        );
    }

    if !p.listing_notes.is_empty() {
        out.push_str("\nSkills the listing's budget left out:\n");
        for n in &p.listing_notes {
            let _ = writeln!(out, "  {n}");
        }
    }

    out.push_str("\nInstruction files loaded at start, in order (later ones take precedence):\n");
    if p.instructions.files.is_empty() {
        out.push_str("  (none)\n");
    }
    for f in &p.instructions.files {
        file_line(&mut out, f);
    }
    if !p.instructions.scoped.is_empty() {
        out.push_str("\nRules that load when a tool first works on a matching file:\n");
        for r in &p.instructions.scoped {
            let _ = writeln!(
                out,
                "  {:<7}  {}  (paths: {})",
                r.scope.as_str(),
                r.path.display(),
                r.patterns.join(", ")
            );
        }
    }
    let nested = nested_files(&p.cwd);
    if !nested.is_empty() {
        out.push_str("\nLoaded when a tool first works in their directory:\n");
        for (path, size) in nested {
            let _ = writeln!(out, "  {:>9}  nested   {}", human(size), path.display());
        }
    }
    let skipped = p.instructions.skipped_notices();
    if !p.instructions.warnings.is_empty() || !skipped.is_empty() {
        out.push_str("\nWarnings:\n");
        for w in p.instructions.warnings.iter().chain(&skipped) {
            let _ = writeln!(out, "  {w}");
        }
    }
    out
}

fn file_line(out: &mut String, f: &InstructionFile) {
    let _ = write!(
        out,
        "  {:>9}  {:<7}  {}",
        human(f.bytes() as u64),
        f.scope.as_str(),
        f.path.display()
    );
    if f.rule.is_some() {
        out.push_str("  (rule)");
    }
    if let Some(by) = &f.imported_by {
        let _ = write!(out, "  (imported by {})", by.display());
    }
    out.push('\n');
}

fn human(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    }
}

/// Instruction files in directories below `cwd` (honouring .gitignore), with their sizes.
pub fn nested_files(cwd: &Path) -> Vec<(PathBuf, u64)> {
    let Ok(mut walk) = crate::fsutil::walk::safe_walk(cwd, |e| e.file_name() != ".git") else {
        return Vec::new();
    };
    let walker = walk.builder.require_git(true).build();
    let mut out = Vec::new();
    for entry in walker.flatten().take(MAX_WALK_ENTRIES) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        let (Some(name), Some(parent)) = (path.file_name().and_then(|n| n.to_str()), path.parent()) else {
            continue;
        };
        // The directory a file gives instructions for: `.claude/CLAUDE.md` speaks for the
        // directory above `.claude`.
        let owner = match name {
            "CLAUDE.md" if parent.file_name().is_some_and(|n| n == ".claude") => parent.parent(),
            "CLAUDE.md" | "AGENTS.md" | "CLAUDE.local.md" => Some(parent),
            _ => None,
        };
        if owner.is_some_and(|o| o != cwd && o.starts_with(cwd)) {
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            out.push((path.to_path_buf(), size));
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::project::Gather;

    #[test]
    fn lists_loaded_imported_and_nested_files_with_sizes() {
        let t = tempfile::tempdir().unwrap();
        let cwd = t.path().canonicalize().unwrap();
        std::fs::write(cwd.join("CLAUDE.md"), "Use @docs/style.md always.").unwrap();
        std::fs::create_dir_all(cwd.join("docs")).unwrap();
        std::fs::write(cwd.join("docs/style.md"), "x".repeat(2_048)).unwrap();
        std::fs::create_dir_all(cwd.join("crates/core/.claude")).unwrap();
        std::fs::write(cwd.join("crates/core/AGENTS.md"), "core rules").unwrap();
        std::fs::write(cwd.join("crates/core/.claude/CLAUDE.md"), "more").unwrap();
        let project = ProjectContext::gather(&Gather {
            cwd: &cwd,
            model: "m",
            home: None,
            replace: None,
            append: None,
        });
        let window = Window::new(200_000, Some(50_000), 32_000);
        let text = render(&Report {
            model: "m",
            window,
            threshold: window.threshold(85),
            auto: true,
            project: &project,
            tools: &[],
        });
        assert!(text.contains("window 50000 tokens"), "{text}");
        assert!(
            text.contains("2.0 KB  project  ") && text.contains("docs/style.md  (imported by "),
            "{text}"
        );
        let style = text.find("docs/style.md").unwrap();
        let main = text.find(&format!("{}\n", cwd.join("CLAUDE.md").display())).unwrap();
        assert!(style < main, "imports come before the importer:\n{text}");
        assert!(
            text.contains("Loaded when a tool first works in their directory"),
            "{text}"
        );
        assert!(
            text.contains("crates/core/AGENTS.md") && text.contains("crates/core/.claude/CLAUDE.md"),
            "{text}"
        );
    }
}
