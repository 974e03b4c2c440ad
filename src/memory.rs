//! Project memory: `MEMORY.md` under `~/.keel/projects/<project>/memory/`, kept across sessions.
//! Where keel has none yet but the reference tool keeps one for the project
//! (`~/.claude/projects/<project>/memory/MEMORY.md`, the same encoding of the project's path),
//! that one is used, so a memory built there carries over; the session says which file it uses.
//!
//! The first 200 lines load into the project layer of the system prompt at session start (and
//! again after compaction), together with the rules for what belongs there; the rest and any
//! topic files beside it are read on demand with the ordinary file tools, which may read and
//! write this folder without asking. The project is the repository root (the working directory
//! outside a repository), so every subdirectory of a repository shares one memory.

use std::path::{Path, PathBuf};

/// Lines of `MEMORY.md` loaded at start.
pub const HEAD_LINES: usize = 200;
/// Bytes of `MEMORY.md` loaded at start, whatever the line count.
pub const HEAD_BYTES: usize = 25_000;

const RULES: &str = "\
Project memory (kept across sessions; read and write it with the file tools, no approval needed \
in its folder). MEMORY.md holds one line per memory. Record only what helps a later session: the \
user's profile and preferences; feedback they gave, with why and how to apply it; project facts \
not in the code, with absolute dates; where to find outside resources. Never what the code, git \
log or a test run tells, never guesses or secrets; fix memories that turn out wrong.";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    pub dir: PathBuf,
    pub file: PathBuf,
    /// The loaded head of MEMORY.md (empty when it does not exist yet).
    pub head: String,
    /// Lines of MEMORY.md not loaded.
    pub more_lines: usize,
    /// Why MEMORY.md could not be read (said in the prompt instead of an empty memory).
    pub problem: Option<String>,
    /// Whose folder this is: keel's own, or the reference tool's for the same project.
    pub origin: Origin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Keel,
    /// `~/.claude/projects/<project>/memory/`, used because keel had no MEMORY.md of its own.
    Reference,
}

impl Origin {
    pub fn describe(self) -> &'static str {
        match self {
            Origin::Keel => "keel's project memory",
            Origin::Reference => "the project memory the reference tool keeps (keel has none of its own here)",
        }
    }
}

/// Largest MEMORY.md read (its head is loaded; the rest is counted).
const MAX_FILE: u64 = 8 * 1024 * 1024;

/// The project a directory belongs to: its repository root, or itself.
pub fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// Whether auto memory is on: the `autoMemoryEnabled` setting (default true), and neither
/// `KEEL_DISABLE_AUTO_MEMORY` nor `CLAUDE_CODE_DISABLE_AUTO_MEMORY` set to 1.
pub fn enabled(setting: Option<bool>) -> bool {
    let off = |k: &str| std::env::var(k).is_ok_and(|v| matches!(v.trim(), "1" | "true"));
    setting.unwrap_or(true) && !off("KEEL_DISABLE_AUTO_MEMORY") && !off("CLAUDE_CODE_DISABLE_AUTO_MEMORY")
}

impl Memory {
    /// The memory of the project containing `cwd` (read now; missing is empty): keel's, or
    /// the reference tool's when only that one has a `MEMORY.md` (`user_home` is the home
    /// directory holding `.claude`).
    pub fn load(keel_home: &Path, user_home: Option<&Path>, cwd: &Path) -> Memory {
        let project = project_root(cwd);
        let own = crate::config::paths::project_dir(keel_home, &project).join("memory");
        let reference =
            user_home.map(|h| crate::config::paths::project_dir(&h.join(".claude"), &project).join("memory"));
        // `symlink_metadata`: a link or anything else in the name counts as there (its problem
        // is then said), never read past.
        let present = |d: &Path| std::fs::symlink_metadata(d.join("MEMORY.md")).is_ok();
        match reference {
            Some(r) if !present(&own) && present(&r) && r != own => {
                let mut m = Memory::at(r);
                m.origin = Origin::Reference;
                m
            }
            _ => Memory::at(own),
        }
    }

    pub fn at(dir: PathBuf) -> Memory {
        let file = dir.join("MEMORY.md");
        let mut m = Memory {
            dir,
            file,
            head: String::new(),
            more_lines: 0,
            problem: None,
            origin: Origin::Keel,
        };
        m.reload();
        m
    }

    /// Reads MEMORY.md again; returns whether what is loaded changed.
    pub fn reload(&mut self) -> bool {
        use crate::fsutil::open::{ReadError, read_file_capped};
        // Never a FIFO or a device in its place, never an endless file.
        let (text, problem) = match read_file_capped(&self.file, MAX_FILE) {
            Ok(b) => (String::from_utf8_lossy(&b).into_owned(), None),
            Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => (String::new(), None),
            Err(e) => (String::new(), Some(e.to_string())),
        };
        let problem_changed = problem != self.problem;
        self.problem = problem;
        let mut head = String::new();
        let mut taken = 0;
        for line in text.lines() {
            if taken >= HEAD_LINES || head.len() + line.len() + 1 > HEAD_BYTES {
                break;
            }
            head.push_str(line);
            head.push('\n');
            taken += 1;
        }
        let more = text.lines().count().saturating_sub(taken);
        let changed = head != self.head || more != self.more_lines || problem_changed;
        self.head = head;
        self.more_lines = more;
        changed
    }

    /// The memory section of the system prompt.
    pub fn render(&self) -> String {
        let mut out = format!("{RULES}\n\nMemory folder: {}\n", self.dir.display());
        if let Some(problem) = &self.problem {
            out.push_str(&format!(
                "{} could not be loaded ({problem}); tell the user, and do not overwrite it.",
                self.file.display()
            ));
        } else if self.head.trim().is_empty() {
            out.push_str(&format!("{} does not exist yet or is empty.", self.file.display()));
        } else {
            out.push_str(&format!(
                "Contents of {} (the user's memory for this project, kept across sessions):\n\n{}",
                self.file.display(),
                self.head.trim_end()
            ));
            if self.more_lines > 0 {
                out.push_str(&format!(
                    "\n\n[{} more line(s) not loaded; Read the file for them]",
                    self.more_lines
                ));
            }
        }
        out
    }

    /// Appends a note as one line of MEMORY.md (the TUI's `#` prefix); nothing is lost of the
    /// file as it was.
    pub fn append_note(&mut self, note: &str) -> std::io::Result<()> {
        let note = note.split_whitespace().collect::<Vec<_>>().join(" ");
        if note.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the note is empty",
            ));
        }
        std::fs::create_dir_all(&self.dir)?;
        self.reload();
        if let Some(problem) = &self.problem {
            return Err(std::io::Error::other(format!(
                "{} cannot be read ({problem}), so nothing was added",
                self.file.display()
            )));
        }
        let mut text = match std::fs::read_to_string(&self.file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => "# Memory\n\n".to_string(),
            Err(e) => return Err(e),
        };
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("- {note}\n"));
        crate::fsutil::write_atomic(&self.file, text.as_bytes())?;
        self.reload();
        Ok(())
    }

    /// The permission rules that let the file tools use the memory folder without asking.
    pub fn allow_rules(&self) -> Vec<String> {
        let d = self.dir.display();
        vec![format!("Read(/{d}/**)"), format!("Edit(/{d}/**)")]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_the_head_and_appends_notes() {
        let t = tempfile::tempdir().unwrap();
        let mut m = Memory::at(t.path().join("memory"));
        assert!(m.render().contains("does not exist yet"));
        m.append_note("  the user prefers   small commits ").unwrap();
        assert!(m.head.contains("- the user prefers small commits"));
        assert!(m.render().contains("- the user prefers small commits"));
        assert!(m.append_note("   ").is_err());
        let many: String = (0..250).map(|i| format!("- note {i}\n")).collect();
        std::fs::write(&m.file, many).unwrap();
        assert!(m.reload());
        assert_eq!(m.head.lines().count(), HEAD_LINES);
        assert_eq!(m.more_lines, 50);
        let text = m.render();
        assert!(text.contains("- note 199") && !text.contains("- note 200"));
        assert!(text.contains("50 more line(s)"));
        assert!(!m.reload(), "unchanged");
    }

    #[test]
    fn the_project_is_the_repository_root() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("r");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("a/b")).unwrap();
        assert_eq!(project_root(&repo.join("a/b")), repo);
        let m = Memory::load(&t.path().join("home"), None, &repo.join("a/b"));
        assert!(m.dir.ends_with("memory"));
        assert!(
            m.dir
                .to_string_lossy()
                .contains(&crate::config::paths::encode_cwd(&repo))
        );
    }

    /// The reference tool's memory of the project is used while keel has none; once keel's
    /// exists, keel's wins.
    #[test]
    fn the_reference_tools_memory_is_used_when_keel_has_none() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("r");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let home = t.path().join("user");
        let keel = home.join(".keel");
        let enc = crate::config::paths::encode_cwd(&repo);
        let theirs = home.join(".claude/projects").join(&enc).join("memory");
        std::fs::create_dir_all(&theirs).unwrap();
        assert_eq!(
            Memory::load(&keel, Some(&home), &repo).origin,
            Origin::Keel,
            "no file yet"
        );
        std::fs::write(theirs.join("MEMORY.md"), "- deploys go through make ship\n").unwrap();
        let m = Memory::load(&keel, Some(&home), &repo);
        assert_eq!(m.origin, Origin::Reference);
        assert_eq!(m.file, theirs.join("MEMORY.md"));
        assert!(m.render().contains("make ship"));
        let mine = keel.join("projects").join(&enc).join("memory");
        std::fs::create_dir_all(&mine).unwrap();
        std::fs::write(mine.join("MEMORY.md"), "- mine\n").unwrap();
        let m = Memory::load(&keel, Some(&home), &repo);
        assert_eq!((m.origin, m.file), (Origin::Keel, mine.join("MEMORY.md")));
    }

    /// Something other than a text file in MEMORY.md's place (a FIFO would block every
    /// session's start) or a file too large is said, not read and not taken for an empty memory.
    #[test]
    fn a_memory_file_that_cannot_be_read_is_said_not_blocked_on() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("memory");
        std::fs::create_dir_all(&dir).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(dir.join("MEMORY.md"))
            .status()
            .unwrap();
        assert!(made.success());
        let mut m = Memory::at(dir.clone());
        assert!(
            m.problem.as_deref().is_some_and(|p| p.contains("not a regular file")),
            "{m:?}"
        );
        let err = m.append_note("a note").unwrap_err().to_string();
        assert!(err.contains("nothing was added"), "{err}");
        let text = m.render();
        assert!(
            text.contains("could not be loaded") && !text.contains("does not exist yet"),
            "{text}"
        );
        std::fs::remove_file(dir.join("MEMORY.md")).unwrap();
        let f = std::fs::File::create(dir.join("MEMORY.md")).unwrap();
        f.set_len(MAX_FILE + 1).unwrap();
        let m = Memory::at(dir);
        assert!(m.problem.as_deref().is_some_and(|p| p.contains("larger than")), "{m:?}");
    }
}
