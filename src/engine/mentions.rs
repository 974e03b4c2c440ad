//! `@path` mentions: the files (or directory listings) a prompt names are attached to it, so
//! the model gets them without a tool call. An attached file counts as fully read.
//!
//! A mention is decided like a Read call of its path and opened exactly where that check
//! resolved it: regular files only (a FIFO or `/dev/zero` behind a link is refused before
//! anything blocks), at most [`MAX_ATTACH`] bytes, on the blocking pool so a cancelled turn
//! can abandon it. What the check does not allow outright:
//!
//! - in an interactive session, a path merely outside the working directories is the user's
//!   own choice and is attached; one the check must ask about (an ask rule, a path that leads
//!   out of the workspace through a link inside it) is asked like a tool call;
//! - where nobody can answer (`-p`, dontAsk), it is not attached and a note names the path it
//!   resolved to: the prompt may come from a file or another program.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{Engine, EngineEvent, EventSink, NoticeLevel, SessionServices};
use crate::fsutil::open::{self, OpenError};
use crate::permissions::authorizer::Call;
use crate::permissions::{AskInfo, Authorizer, Mode, PermissionPrompt, PermissionReply, Verdict};
use crate::tools::file_state::{FileView, ViewKind, file_mtime};
use crate::transcript::SharedTranscript;
use crate::types::message::ContentBlock;
use crate::types::permission::{Body, Preview};

/// Largest file attached whole.
pub const MAX_ATTACH: u64 = 256 * 1024;
/// Entries listed for a mentioned directory.
const MAX_LISTING: usize = 200;
/// How an attachment block begins (a resumed session shows these as one line, not in full).
pub const ATTACHMENT_LEAD: &str = "The user attached the ";

#[derive(Debug, Default)]
pub struct Resolved {
    /// The prompt followed by one block per attachment.
    pub blocks: Vec<ContentBlock>,
    /// What the user should know (a mention that could not be attached, and why).
    pub notes: Vec<String>,
}

/// The `@tokens` of a prompt, in order, without duplicates.
pub fn mentions(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let Some(m) = word.strip_prefix('@') else {
            continue;
        };
        if !m.is_empty() && !out.iter().any(|o| o == m) {
            out.push(m.to_string());
        }
    }
    out
}

/// What the check says about one mentioned path.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    /// Attach what the path resolved to.
    Attach(PathBuf),
    /// Someone must approve reading it first.
    Ask { real: PathBuf, info: AskInfo },
    /// Not attached, for this reason.
    Refuse(String),
}

/// A mention found on disk and the check's answer.
#[derive(Debug)]
pub struct Found {
    /// The mention as typed (without `@`).
    pub shown: String,
    pub path: PathBuf,
    pub check: Check,
}

fn resolve_path(cwd: &Path, m: &str) -> PathBuf {
    if let Some(rest) = m.strip_prefix("~/")
        && let Some(home) = dirs::home_dir()
    {
        return home.join(rest);
    }
    cwd.join(m)
}

/// What became of one mention, in the prompt's order.
#[derive(Debug)]
pub enum Entry {
    Found(Found),
    /// Read it: (as typed, path, where it resolved).
    Cleared(String, PathBuf, PathBuf),
    Note(String),
}

/// The prompt's mentions: those that name something on disk with the check's answer, notes
/// about those that name nothing.
pub fn survey(text: &str, cwd: &Path, check: &dyn Fn(&Path) -> Check) -> Vec<Entry> {
    let mut out = Vec::new();
    for m in mentions(text) {
        // A mention at the end of a sentence: `see @src/a.rs.`
        let candidates = [
            m.as_str(),
            m.trim_end_matches(['.', ',', ';', ':', ')', '!', '?', '\'', '"']),
        ];
        let Some((shown, path)) = candidates
            .iter()
            .map(|c| (c.to_string(), resolve_path(cwd, c)))
            .find(|(_, p)| p.exists())
        else {
            if m.contains('/') || m.contains('.') {
                out.push(Entry::Note(format!(
                    "@{m}: no such file or directory; sent as plain text"
                )));
            }
            continue;
        };
        let check = check(&path);
        out.push(Entry::Found(Found { shown, path, check }));
    }
    out
}

/// The Read check of a mention's path. `answerable`: someone can be asked (an interactive
/// session not in dontAsk).
pub fn check(authorizer: &Authorizer, shared: &SessionServices, path: &Path, answerable: bool) -> Check {
    let input = json!({ "file_path": path });
    let call = Call::named("Read", &input, true, &shared.cwd).in_session(&shared.session_dir);
    let decision = authorizer.decide_call(&call, shared.mode(), &shared.cwd, None, &[]);
    let real = decision
        .resolved
        .unwrap_or_else(|| crate::fsutil::paths::real_path(path));
    match decision.verdict {
        Verdict::Deny(reason) => Check::Refuse(reason),
        Verdict::Allow | Verdict::AllowConfined(_) => Check::Attach(real),
        // The user typed a path outside the working directories: that is their choice.
        Verdict::Ask { hard: false, .. } if answerable => Check::Attach(real),
        Verdict::Ask { info, .. } if answerable => Check::Ask { real, info },
        Verdict::Ask { info, .. } => Check::Refuse(format!(
            "{}; nobody can approve reading it in this session, so it was not read",
            info.reason
        )),
    }
}

/// Attaches the mentions cleared to be read, after the prompt; every other entry becomes a
/// note (what would need a question is refused: nobody was asked).
pub fn attach_all(text: &str, entries: Vec<Entry>, shared: &SessionServices) -> Resolved {
    let mut out = Resolved {
        blocks: vec![ContentBlock::text(text)],
        notes: Vec::new(),
    };
    for entry in entries {
        let refused = |shown: &str, reason: &str| format!("@{shown}: not attached: {reason}");
        match entry {
            Entry::Cleared(shown, path, real)
            | Entry::Found(Found {
                shown,
                path,
                check: Check::Attach(real),
            }) => match attach(&shown, &path, &real, shared) {
                Ok(block) => out.blocks.push(block),
                Err(note) => out.notes.push(note),
            },
            Entry::Found(Found {
                shown,
                check: Check::Ask { info, .. },
                ..
            }) => out.notes.push(refused(&shown, &info.reason)),
            Entry::Found(Found {
                shown,
                check: Check::Refuse(reason),
                ..
            }) => out.notes.push(refused(&shown, &reason)),
            Entry::Note(note) => out.notes.push(note),
        }
    }
    out
}

/// Builds the content of a prompt with no one to ask.
pub fn resolve(text: &str, shared: &SessionServices, check: &dyn Fn(&Path) -> Check) -> Resolved {
    attach_all(text, survey(text, &shared.cwd, check), shared)
}

/// What attaching a prompt's mentions needs of an engine, owned, so the work can await
/// questions and the blocking pool without holding the engine.
pub struct Mentions {
    shared: Arc<SessionServices>,
    authorizer: Arc<Authorizer>,
    events: EventSink,
    transcript: SharedTranscript,
    /// Someone answers questions: an interactive session not in dontAsk.
    answerable: bool,
}

impl Engine {
    /// The attacher of this session's `@path` mentions.
    pub fn mentions(&self) -> Mentions {
        let shared = self.session.services.clone();
        Mentions {
            answerable: self.config.interactive && shared.mode() != Mode::DontAsk,
            shared,
            authorizer: self.authorizer.clone(),
            events: self.events.clone(),
            transcript: self.hooks.transcript(),
        }
    }
}

impl Mentions {
    /// The content of a prompt: its text, then the files its `@path` mentions name, decided as
    /// a Read of each (see the module's description); `None` when `cancel` fired first.
    pub async fn attach(self, text: String, cancel: &CancellationToken) -> Option<Resolved> {
        if mentions(&text).is_empty() {
            return Some(Resolved {
                blocks: vec![ContentBlock::text(text)],
                notes: Vec::new(),
            });
        }
        let surveyed = {
            let (shared, authorizer, text) = (self.shared.clone(), self.authorizer.clone(), text.clone());
            let answerable = self.answerable;
            blocking(cancel, move || {
                survey(&text, &shared.cwd, &|p| check(&authorizer, &shared, p, answerable))
            })
            .await?
        };
        let mut entries = Vec::new();
        for (n, entry) in surveyed.into_iter().enumerate() {
            entries.push(match entry {
                Entry::Found(Found {
                    shown,
                    path,
                    check: Check::Ask { real, info },
                }) => {
                    if self.ask(n, &shown, &path, &info, cancel).await? {
                        Entry::Cleared(shown, path, real)
                    } else {
                        Entry::Note(format!("@{shown}: not attached: you declined reading it"))
                    }
                }
                other => other,
            });
        }
        let shared = self.shared.clone();
        blocking(cancel, move || attach_all(&text, entries, &shared)).await
    }

    /// Asks the front end whether a mention may be read, as a Read call would be asked;
    /// `None` when `cancel` fired first.
    async fn ask(
        &self,
        n: usize,
        shown: &str,
        path: &Path,
        info: &AskInfo,
        cancel: &CancellationToken,
    ) -> Option<bool> {
        let id = format!("mention-{}", n + 1);
        let (tx, rx) = oneshot::channel();
        self.events.emit(EngineEvent::PermissionRequest(PermissionPrompt {
            tool_use_id: id.clone(),
            tool_name: "Read".into(),
            input: json!({ "file_path": path }),
            detail: format!("Attach @{shown} to the prompt\n\n({})", info.reason),
            preview: Preview {
                reason: info.reason.clone(),
                body: Body::Detail,
            },
            suggested_rule: info.rules_to_save.first().or(info.session_grants.first()).cloned(),
            reason: info.reason.clone(),
            suggestions: crate::permissions::updates::suggestions(info),
            reply: tx,
        }));
        let reply = tokio::select! {
            _ = cancel.cancelled() => return None,
            // A front end that drops the question without answering denies.
            r = rx => r.unwrap_or(PermissionReply::Deny { feedback: None }),
        };
        let (decision, allowed) = match &reply {
            PermissionReply::AllowOnce => ("allow_once", true),
            PermissionReply::AllowAlways => ("allow_always", true),
            PermissionReply::Allow { .. } => ("allow", true),
            PermissionReply::Deny { .. } | PermissionReply::Reject { .. } => ("deny", false),
        };
        let _ = self.transcript.event(
            "permission_decision",
            json!({"tool_use_id": id, "tool": "Read", "mention": shown, "decided_by": "user", "decision": decision}),
        );
        match reply {
            PermissionReply::AllowAlways => {
                if let Some(warning) = self.authorizer.grant(info) {
                    self.events.notice(NoticeLevel::Warning, warning);
                }
            }
            PermissionReply::Allow { updates, .. } if !updates.is_empty() => self.events.notice(
                NoticeLevel::Warning,
                format!(
                    "the permission updates sent with the answer about @{shown} were not applied: they apply to tool calls"
                ),
            ),
            _ => {}
        }
        Some(allowed)
    }
}

/// Runs file work on the blocking pool; `None` when `cancel` fires first (the work left
/// behind is bounded: files are opened without blocking and read with a size cap).
async fn blocking<T: Send + 'static>(
    cancel: &CancellationToken,
    work: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let task = tokio::task::spawn_blocking(work);
    tokio::select! {
        _ = cancel.cancelled() => None,
        r = task => r.ok(),
    }
}

fn attach(shown: &str, path: &Path, real: &Path, shared: &SessionServices) -> Result<ContentBlock, String> {
    let mut opened = match open::regular(real, &shared.roots()) {
        Ok(o) => o,
        Err(OpenError::Directory(_)) => return list_directory(shown, path, real),
        Err(OpenError::NotRegular { kind, .. }) => {
            return Err(format!("@{shown}: {kind}, not a regular file; not attached"));
        }
        Err(e) => return Err(format!("@{shown}: {e}; not attached")),
    };
    let too_large = |len: u64| {
        format!(
            "@{shown}: {} KB is too large to attach (limit {} KB); the model can read it with its tools",
            len / 1024,
            MAX_ATTACH / 1024
        )
    };
    if opened.meta.len() > MAX_ATTACH {
        return Err(too_large(opened.meta.len()));
    }
    let bytes = match open::read_capped(&mut opened.file, MAX_ATTACH) {
        Ok(Ok(b)) => b,
        Ok(Err(seen)) => return Err(too_large(seen)),
        Err(e) => return Err(format!("@{shown}: {e}")),
    };
    let meta = opened.meta;
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Err(format!("@{shown}: not a text file; not attached"));
    };
    if text.contains('\0') {
        return Err(format!("@{shown}: not a text file; not attached"));
    }
    shared.files().record(
        path.to_path_buf(),
        FileView::new(&bytes, file_mtime(&meta), ViewKind::Complete),
    );
    let numbered: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
        .collect();
    Ok(ContentBlock::text(format!(
        "{ATTACHMENT_LEAD}file {} ({} lines):\n{numbered}",
        path.display(),
        text.lines().count()
    )))
}

fn list_directory(shown: &str, path: &Path, real: &Path) -> Result<ContentBlock, String> {
    let mut entries: Vec<String> = std::fs::read_dir(real)
        .map_err(|e| format!("@{shown}: {e}"))?
        .flatten()
        .map(|e| {
            let mut name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                name.push('/');
            }
            name
        })
        .collect();
    entries.sort();
    let total = entries.len();
    entries.truncate(MAX_LISTING);
    let mut listing = entries.join("\n");
    if total > MAX_LISTING {
        listing.push_str(&format!("\n… and {} more entries", total - MAX_LISTING));
    }
    Ok(ContentBlock::text(format!(
        "{ATTACHMENT_LEAD}directory {} ({total} entries):\n{listing}",
        path.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(b: &ContentBlock) -> &str {
        match b {
            ContentBlock::Text { text, .. } => text,
            _ => panic!("not text"),
        }
    }

    #[test]
    fn attaches_files_and_directories_and_records_the_read() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(cwd.join("src")).unwrap();
        std::fs::write(cwd.join("src/a.rs"), "fn a() {}\n").unwrap();
        std::fs::write(cwd.join("bin.dat"), [0u8, 159, 146, 150]).unwrap();
        let shared = SessionServices::builder(cwd.clone(), cwd.join(".s")).build();
        let r = resolve(
            "explain @src/a.rs, list @src and @bin.dat and @missing/x.rs, cc @alice",
            &shared,
            &|p| Check::Attach(p.to_path_buf()),
        );
        assert_eq!(r.blocks.len(), 3, "{:?}", r.blocks);
        assert!(text_of(&r.blocks[1]).contains("     1\tfn a() {}"));
        assert!(text_of(&r.blocks[2]).contains("a.rs"));
        assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
        assert!(r.notes[0].contains("not a text file"));
        assert!(r.notes[1].contains("no such file"));
        let view = shared.files().get(&cwd.join("src/a.rs")).cloned().unwrap();
        assert!(view.is_complete());
    }

    #[test]
    fn denied_paths_are_not_attached() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        std::fs::write(cwd.join(".env"), "SECRET=1\n").unwrap();
        let shared = SessionServices::builder(cwd.clone(), cwd.join(".s")).build();
        let r = resolve("check @.env", &shared, &|_| {
            Check::Refuse("a deny rule covers it".into())
        });
        assert_eq!(r.blocks.len(), 1);
        assert!(r.notes[0].contains("deny rule"));
    }

    /// The check of a mention is a Read check: a path that leaves the workspace through a link
    /// is asked where someone can answer and refused, naming where it leads, where nobody can;
    /// a path typed outside the workspace is the user's choice only where they can be asked.
    #[test]
    fn mentions_through_a_link_out_of_the_workspace_are_asked_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (cwd, git) = (base.join("work"), base.join("home/.config/git"));
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(&git).unwrap();
        std::fs::write(git.join("notes"), "SECRET\n").unwrap();
        std::os::unix::fs::symlink(&git, cwd.join("docs")).unwrap();
        std::fs::write(cwd.join("b.txt"), "inside\n").unwrap();
        std::os::unix::fs::symlink("b.txt", cwd.join("a.txt")).unwrap();
        let shared = SessionServices::builder(cwd.clone(), base.join("session")).build();
        let authorizer = Authorizer::new(Vec::new(), vec![cwd.clone()], Some(base.join("home")), None);
        let creds = git.join("notes");
        match check(&authorizer, &shared, &cwd.join("docs/notes"), true) {
            Check::Ask { real, info } => {
                assert_eq!(real, creds);
                assert!(info.reason.contains(&creds.display().to_string()), "{}", info.reason);
            }
            other => panic!("{other:?}"),
        }
        let r = resolve(
            &format!("summarize @docs/notes and @a.txt and @{}", creds.display()),
            &shared,
            &|p| check(&authorizer, &shared, p, false),
        );
        let sent: String = r.blocks.iter().map(text_of).collect();
        assert!(!sent.contains("SECRET"), "{sent}");
        assert!(
            sent.contains("inside"),
            "a link inside the workspace is attached: {sent}"
        );
        assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
        for note in &r.notes {
            assert!(
                note.contains(&creds.display().to_string()) && note.contains("not attached"),
                "{note}"
            );
        }
        assert_eq!(
            check(&authorizer, &shared, &creds, true),
            Check::Attach(creds.clone()),
            "typed outside, with someone to ask: the user's choice"
        );
    }
}
