//! `/init`: the model studies the repository and writes its instructions file for coding
//! agents. It works through the ordinary tools, so the file is written by Write or Edit and
//! the user approves it in the dialog, seeing its content first. keel only chooses the file
//! (an existing `CLAUDE.md` or `AGENTS.md` is improved; otherwise `AGENTS.md` is created,
//! which keel and other agents read) and says what belongs in it.

use std::path::Path;

/// The instructions file `/init` writes in `cwd`.
pub fn target(cwd: &Path) -> &'static str {
    if cwd.join("CLAUDE.md").is_file() {
        "CLAUDE.md"
    } else {
        "AGENTS.md"
    }
}

/// The request sent to the model.
pub fn prompt(cwd: &Path) -> String {
    let file = target(cwd);
    let existing = if cwd.join(file).is_file() {
        format!("{file} exists: read it first, keep what is still true, correct what is not, and add what is missing.")
    } else {
        format!("There is no {file} yet: create it.")
    };
    format!(
        "/init: write the instructions file coding agents read in this repository, {file} at its root. {existing}\n\n\
         Study the repository before writing: the README, build and package files, CI configuration, the \
         layout of the source tree, and any existing guidance (CONTRIBUTING, .cursorrules, .cursor/rules, \
         .github/copilot-instructions.md, AGENTS.md or CLAUDE.md in subfolders).\n\n\
         The file should tell a newcomer who is an experienced engineer what they cannot guess:\n\
         - the exact commands to build, run the tests (also a single test), lint and format — only commands \
         you found in the repository, never invented ones;\n\
         - the architecture in a few lines: the main parts and how a request or a change flows through them;\n\
         - conventions that differ from the language's defaults, and pitfalls the repository warns about.\n\n\
         Keep it short (well under 200 lines), specific to this repository, without generic advice or \
         lists of every file. Write it with the Write tool (or Edit for an existing file), then say in one \
         or two sentences what it covers."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_claude_md_is_improved_otherwise_agents_md_is_created() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(target(dir.path()), "AGENTS.md");
        assert!(prompt(dir.path()).contains("There is no AGENTS.md yet"));
        std::fs::write(dir.path().join("AGENTS.md"), "# Notes\n").unwrap();
        assert!(prompt(dir.path()).contains("AGENTS.md exists"));
        std::fs::write(dir.path().join("CLAUDE.md"), "# Notes\n").unwrap();
        assert_eq!(target(dir.path()), "CLAUDE.md");
        assert!(prompt(dir.path()).contains("never invented"));
    }
}
