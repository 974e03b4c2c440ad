//! The evidence ledger: no claim of "tests pass" outruns what actually ran.
//!
//! keel watches every Bash, Edit and Write call of the session (`engine::pipeline` calls
//! [`Evidence::before`] and [`Evidence::after`] around each one):
//! - Edit and Write step the working-tree version; a shell command steps it when the workspace
//!   fingerprint ([`crate::workspace`]) differs before and after it, and changes between two
//!   commands that no keel tool made are recorded as made outside;
//! - a command line is read for verification runs ([`runners`]), whose output is parsed
//!   ([`parse`]) and classified ([`classify`]) into the [`ledger`], with the log kept on disk;
//! - a change to a test file is compared with the file as the session first saw it
//!   ([`weakened`]): removed assertions (or ones replaced by assertions that cannot fail), added
//!   skip markers, deleted tests, deselections added to a test configuration and changed
//!   snapshot values are flagged in the tool result and the ledger;
//! - a run that selects part of a suite records what selected it ([`subset`]).
//!
//! The engine asks the stop [`gate`] before a turn may end; the front ends show the
//! [`report`]. The ledger is host state, persisted in the session directory (a snapshot in
//! `evidence.json` and an append-only journal beside it, see `store`), so compaction cannot
//! rewrite it and `--resume` continues it.

mod baselines;
pub mod classify;
/// The tolerant split of command lines (it lives with the other readers of shell lines).
pub use crate::shell::split as command;
mod command_changes;
mod command_run;
mod config;
pub mod declared;
pub mod expand;
pub mod gate;
pub mod ledger;
pub mod own;
pub mod parse;
pub mod report;
pub mod runners;
mod store;
pub mod subset;
pub mod targets;
mod uplink;
pub mod weakened;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use serde_json::Value;

pub use command_changes::CommandChanges;
use command_changes::command_changes;
pub use config::Config;
pub use gate::GateMode;
pub use ledger::{Ledger, Status};
use ledger::{Run, Source};
use runners::Declared;
use store::baselines_path;
pub use store::load_ledger;

use crate::shell::plan::CommandPlan;
use crate::types::message::{ToolResultBlock, ToolResultContent};
use crate::types::tool::{Effects, ToolOutput};
use crate::workspace::fingerprint::Stamp;
use crate::workspace::{Fingerprinter, Snapshot, Watcher};

/// What [`Evidence::before`] saw, for [`Evidence::after`].
pub enum Watch {
    /// Nothing to watch.
    None,
    /// An edit of one file.
    Edit { tool: String, rel: String, path: PathBuf },
    /// A foreground shell command and the workspace before it.
    Bash {
        /// The call's one reading of its line.
        plan: Arc<CommandPlan>,
        cwd: PathBuf,
        started: Instant,
        started_at: std::time::SystemTime,
    },
}

struct State {
    ledger: Ledger,
    /// What the last command changed, until taken.
    command_changes: Option<CommandChanges>,
    /// The latest fingerprint (after the last command).
    last: Option<Snapshot>,
    /// Paths keel's own tools changed since `last` was taken, with the file's stamp right after
    /// (`None`: it could not be read), so a command run right after is not taken for the writer.
    touched: HashMap<String, Option<Stamp>>,
    /// The version the current turn began at, and the gate's sends in it.
    turn_start: u64,
    sends: u32,
    /// The first failure to save the ledger (reported once).
    write_error: Option<String>,
    /// What the saved files hold.
    saved: store::Saved,
    /// A sub-agent's channel to its parent's ledger.
    uplink: Option<uplink::Uplink>,
    /// Counts the fingerprints taken into `last` (a sub-agent hands a new one up).
    last_taken: u64,
    /// Files whose committed content was already asked of git (asked again only after a
    /// command moved `HEAD`).
    heads_asked: HashSet<String>,
    /// `HEAD` when `heads_asked` was started ([`crate::context::git::head_stamp`]).
    head_stamp: Option<Vec<u8>>,
    /// A resumed session's digest not yet compared with the workspace (the comparison waits
    /// for the watcher's first walk, which runs in the background from start-up).
    digest_unchecked: bool,
}

/// The session's evidence: the ledger and what keeps it current.
pub struct Evidence {
    cwd: PathBuf,
    /// Keeps the workspace's fingerprint current (one per tree, shared with sub-agents).
    watcher: Arc<Watcher>,
    config: Config,
    /// `evidence.json` (the snapshot; its journal lies beside it); `None` without session
    /// persistence.
    store: Option<PathBuf>,
    /// Where run logs go.
    log_dir: PathBuf,
    /// Committed contents, through one git process kept running (shared with sub-agents).
    blobs: Arc<crate::context::git::Blobs>,
    state: Mutex<State>,
}

impl std::fmt::Debug for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evidence")
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl Evidence {
    /// A ledger kept in memory, stop gate off: for embedding and tests (`cli::setup` builds the
    /// configured one).
    pub fn in_memory(cwd: &Path, session_dir: &Path) -> Evidence {
        Evidence::new(
            cwd,
            session_dir,
            Config {
                gate: GateMode::Off,
                declared: Declared::default(),
            },
            false,
        )
    }

    /// The session's evidence; with `persist`, the ledger saved in `session_dir` is continued
    /// (a resumed session) and kept up to date. Files that changed while a resumed session was
    /// closed make its earlier passes stale.
    pub fn new(cwd: &Path, session_dir: &Path, config: Config, persist: bool) -> Evidence {
        let store = persist.then(|| store::snapshot_path(session_dir));
        let (mut ledger, mut saved) = match &store {
            Some(p) => {
                let loaded = store::load(p);
                store::remove_stale(p, &loaded.1);
                loaded
            }
            None => (Ledger::default(), store::Saved::default()),
        };
        if let Some(baselines) = store
            .as_ref()
            .and_then(|p| std::fs::read(baselines_path(p)).ok())
            .and_then(|b| serde_json::from_slice(&b).ok())
        {
            ledger.baselines = baselines;
        }
        saved.baselines = ledger.baselines.len();
        // The session directory may lie inside the workspace (KEEL_HOME there): its files are
        // keel's, not the project's. The watcher's first walk starts in the background now.
        let watcher = Watcher::shared(Fingerprinter::new(cwd).excluding(session_dir));
        let mut state = State {
            ledger,
            command_changes: None,
            last: None,
            touched: HashMap::new(),
            turn_start: 0,
            sends: 0,
            write_error: None,
            saved,
            uplink: None,
            last_taken: 0,
            heads_asked: HashSet::new(),
            head_stamp: None,
            digest_unchecked: false,
        };
        // Files changed while the session was closed matter only to the runs it recorded (they
        // make passes stale); a ledger without runs has nothing such a change could alter, so
        // its session does not wait for the watcher's first walk to find out.
        state.digest_unchecked = state.ledger.digest.is_some() && !state.ledger.runs.is_empty();
        state.turn_start = state.ledger.version;
        Evidence {
            cwd: cwd.to_path_buf(),
            watcher,
            config,
            store,
            log_dir: session_dir.join("evidence"),
            blobs: Arc::new(crate::context::git::Blobs::new(cwd)),
            state: Mutex::new(state),
        }
    }

    /// The evidence of another session of the same workspace (a front end swapped sessions):
    /// same settings and persistence, that session's own ledger.
    pub fn for_session(&self, session_dir: &Path) -> Evidence {
        Evidence::new(&self.cwd, session_dir, self.config.clone(), self.store.is_some())
    }

    /// The state, with a resumed session's digest compared first (waiting for the watcher's
    /// first walk if it is still running).
    fn lock(&self) -> MutexGuard<'_, State> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.digest_unchecked {
            s.digest_unchecked = false;
            if let Some(digest) = s.ledger.digest {
                // Files that changed while the session was closed make its passes stale.
                let now = self.watcher.snapshot();
                if now.digest() != digest {
                    let before = s.ledger.version;
                    s.ledger.change(Vec::new(), Source::Outside, true);
                    // Found after a turn began without waiting for it ([`Evidence::begin_turn`]),
                    // it still happened before that turn.
                    if s.turn_start == before {
                        s.turn_start = s.ledger.version;
                    }
                }
                s.ledger.digest = Some(now.digest());
                s.last = Some(now);
            }
        }
        s
    }

    /// When a resumed session's check is still to be made, waits for the watcher's first walk
    /// off the async threads, so [`Evidence::lock`] does not block a runtime thread on it.
    async fn ready(&self) {
        if self.watcher.is_ready() || !self.state.lock().unwrap_or_else(|p| p.into_inner()).digest_unchecked {
            return;
        }
        let w = self.watcher.clone();
        let _ = tokio::task::spawn_blocking(move || w.wait_ready()).await;
    }

    pub fn gate_mode(&self) -> GateMode {
        self.config.gate
    }

    /// A copy of the ledger now.
    pub fn ledger(&self) -> Ledger {
        self.lock().ledger.clone()
    }

    /// Reads the ledger without copying it.
    pub fn with_ledger<T>(&self, f: impl FnOnce(&Ledger) -> T) -> T {
        f(&self.lock().ledger)
    }

    /// A new user turn begins: the gate judges changes from here on, and may send again. Does
    /// not wait for a resumed session's comparison with the workspace: every change of the
    /// ledger comes after it, and what it finds is counted before this turn.
    pub fn begin_turn(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.turn_start = s.ledger.version;
        s.sends = 0;
    }

    /// The stop gate's note for a model that wants to end its turn, counted as one send.
    pub fn gate(&self, todos: &[crate::types::tool::Todo]) -> Option<String> {
        {
            // A resumed session not yet compared with the workspace recorded nothing since it
            // started (every change compares first), so the gate has no work to judge; only the
            // task-list rule could speak, and only then is the comparison waited for.
            let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if s.digest_unchecked && gate::todos_unverified(todos).is_none() {
                return None;
            }
        }
        let mut s = self.lock();
        let note = gate::note(&s.ledger, s.turn_start, todos, s.sends + 1, self.config.gate)?;
        s.sends += 1;
        Some(note)
    }

    /// Saves the ledger if it changed (the engine calls this after each round of tool calls, so
    /// a round of edits costs one write).
    pub fn flush(&self) {
        let mut s = self.lock();
        self.save(&mut s);
        Evidence::flush_up(&s);
    }

    /// Reads the fingerprint that stands for the workspace before the next command (taken after
    /// the last one) and the paths keel's own tools changed since, so the shell checkpoint
    /// reuses it instead of walking the workspace again.
    pub fn with_last<R>(&self, f: impl FnOnce(Option<&Snapshot>, &HashMap<String, Option<Stamp>>) -> R) -> R {
        let s = self.lock();
        f(s.last.as_ref(), &s.touched)
    }

    /// What the last foreground command changed (once).
    pub fn take_command_changes(&self) -> Option<CommandChanges> {
        self.lock().command_changes.take()
    }

    /// The first failure to save the ledger, once.
    pub fn take_write_error(&self) -> Option<String> {
        // Not a reading of the ledger: no reason to wait for a resumed session's comparison.
        self.state.lock().unwrap_or_else(|p| p.into_inner()).write_error.take()
    }

    /// Before a tool call: fingerprints the workspace before a foreground command (recording
    /// changes made since the last one by anything but keel's tools), and keeps the baseline
    /// of a test file about to be edited.
    /// `plan`: the call's reading of its command line, when the pipeline made one (else it is
    /// made here).
    pub async fn before(
        &self,
        tool: &str,
        effects: Effects,
        input: &Value,
        plan: Option<Arc<CommandPlan>>,
        shell_cwd: &Path,
    ) -> Watch {
        self.ready().await;
        if effects.runs_commands {
            if input.get("run_in_background").and_then(Value::as_bool) == Some(true) {
                return Watch::None;
            }
            let Some(command) = input.get("command").and_then(Value::as_str) else {
                return Watch::None;
            };
            let plan = plan
                .filter(|p| p.line == command)
                .unwrap_or_else(|| CommandPlan::new(command));
            Evidence::pull_down(&mut self.lock());
            // One fingerprint per command: the one taken after the previous command stands for
            // the tree before this one (the session's first command takes its own).
            if self.lock().last.is_none() {
                let first = self.fingerprint().await;
                let mut s = self.lock();
                s.last = Some(first);
                s.last_taken += 1;
            }
            // Test files the command names: keep what they hold now, in case it changes them
            // (read first, the lock taken only to store them).
            let mut named = Vec::new();
            for seg in &plan.segments {
                for w in seg.words.iter().chain(&seg.writes) {
                    let path = crate::fsutil::paths::resolve(shell_cwd, w);
                    if weakened::is_test_file(&path) && path.is_file() {
                        named.push((self.rel(&path), path));
                    }
                }
            }
            let texts = self.baselines_wanted(named);
            let mut s = self.lock();
            for (rel, text) in texts {
                s.ledger.baselines.entry(rel).or_insert(text);
            }
            Evidence::hand_up(&mut s);
            return Watch::Bash {
                plan,
                cwd: shell_cwd.to_path_buf(),
                started: Instant::now(),
                started_at: std::time::SystemTime::now(),
            };
        }
        if effects.edits_files
            && let Some(p) = input
                .get("file_path")
                .or_else(|| input.get("notebook_path"))
                .and_then(Value::as_str)
        {
            let path = crate::fsutil::paths::resolve(&self.cwd, p);
            let rel = self.rel(&path);
            let texts = self.baselines_wanted(vec![(rel.clone(), path.clone())]);
            let mut s = self.lock();
            for (rel, text) in texts {
                s.ledger.baselines.entry(rel).or_insert(text);
            }
            Evidence::hand_up(&mut s);
            return Watch::Edit {
                tool: tool.to_string(),
                rel,
                path,
            };
        }
        Watch::None
    }

    /// After the call: records the change or the runs, flags weakened tests, and appends what
    /// the model must know to the result (zero tests executed, a hidden failure, weakened tests).
    /// The ledger is saved by [`Evidence::flush`].
    pub async fn after(&self, watch: Watch, output: &mut ToolOutput, known: &(dyn Fn(&Path) -> Option<String> + Sync)) {
        let notes = match watch {
            Watch::None => return,
            Watch::Edit { tool, rel, path } => {
                if output.is_error {
                    return;
                }
                // Read before the lock is taken: git runs in a blocking task, never under it.
                let read = self.prefetch(std::slice::from_ref(&rel)).await;
                let stamp = std::fs::symlink_metadata(&path).ok().map(|m| Stamp::of(&m));
                let mut s = self.lock();
                s.ledger
                    .change(vec![rel.clone()], Source::Tool { tool: tool.clone() }, false);
                s.touched.insert(rel.clone(), stamp);
                // Edit and Write kept the baseline before the call; the read state already
                // holds the new content, so it is no baseline.
                let _ = known;
                let notes = self
                    .check_weakened(&mut s.ledger, &rel, &path, &tool, &|_| None, &read)
                    .into_iter()
                    .collect::<Vec<_>>();
                Evidence::hand_up(&mut s);
                notes
            }
            Watch::Bash {
                plan,
                cwd,
                started,
                started_at,
            } => {
                let after = self.fingerprint().await;
                let duration = started.elapsed().as_millis() as u64;
                self.after_command(&plan, &cwd, started_at, after, output, duration, known)
                    .await
            }
        };
        for n in notes {
            append_note(output, &n);
        }
    }

    /// The workspace now: the watcher's view brought up to date (a walk when it cannot vouch
    /// for it), in a blocking task. The command has ended: every change it made is queued.
    async fn fingerprint(&self) -> Snapshot {
        let w = self.watcher.clone();
        tokio::task::spawn_blocking(move || w.snapshot())
            .await
            .unwrap_or_default()
    }

    fn rel(&self, path: &Path) -> String {
        match path.strip_prefix(&self.cwd) {
            Ok(r) => rel_string(r),
            Err(_) => path.display().to_string(),
        }
    }

    /// The `verification` object of the headless result.
    pub fn report_json(&self) -> Value {
        report::json(&self.lock().ledger)
    }

    /// The line text mode prints on stderr, when the work is not shown to be verified.
    pub fn text_line(&self) -> Option<String> {
        report::text_line(&self.lock().ledger)
    }

    /// The TUI status line's label. Never waits for the watcher's first walk (drawn from
    /// start-up on): until it is done, a resumed session shows its ledger as saved.
    pub fn status_label(&self) -> Option<String> {
        if self.watcher.is_ready() {
            return report::status_label(&self.lock().ledger);
        }
        report::status_label(&self.state.lock().unwrap_or_else(|p| p.into_inner()).ledger)
    }

    /// `/evidence`.
    pub fn listing(&self) -> String {
        report::listing(&self.lock().ledger, self.config.gate.as_str())
    }

    /// How the ledger reads a command line (with the project's declared commands): the one
    /// recogniser of test, build and lint runs, for others that label commands.
    pub fn recognise(&self, command: &str) -> runners::Reading {
        runners::recognise(command, &self.config.declared)
    }

    /// The compaction hand-off's verification section.
    pub fn handoff_section(&self) -> String {
        report::handoff_section(&self.lock().ledger)
    }
}

/// What the model must be told about a run right away (the rest is in the ledger).
fn run_note(run: &Run) -> Option<String> {
    use ledger::Outcome;
    let what = match run.outcome {
        Outcome::NotRun => "executed zero tests, which is not a pass".to_string(),
        Outcome::Unknown => format!(
            "gave no result keel could read ({})",
            run.note.as_deref().unwrap_or("output not understood")
        ),
        Outcome::CouldNotRun => format!(
            "did not run ({}): it verifies nothing; say so in your answer rather than counting it as passed",
            run.note.as_deref().unwrap_or("could not run")
        ),
        Outcome::Failed if run.exit_hidden && run.exit_code == Some(0) => {
            format!(
                "failed although the command line exited 0: {}",
                run.note.as_deref().unwrap_or("")
            )
        }
        Outcome::Passed if run.stale_target.is_some() => match &run.stale_target {
            Some(t) => format!(
                "passed, but {}. This pass is stale evidence: restart that process and run the tests again",
                t.describe()
            ),
            None => return None,
        },
        _ => return None,
    };
    Some(format!("[keel: verification] `{}` {what}.", run.runner_command))
}

fn rel_string(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Adds a paragraph to a tool result.
pub fn append_note(output: &mut ToolOutput, note: &str) {
    match &mut output.content {
        ToolResultContent::Text(t) => {
            t.push_str("\n\n");
            t.push_str(note);
        }
        ToolResultContent::Blocks(blocks) => blocks.push(ToolResultBlock::Text {
            text: format!("\n\n{note}"),
        }),
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
