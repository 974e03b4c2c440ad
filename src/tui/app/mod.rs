//! The TUI's state and everything that changes it: keys, engine events, worker replies.
//!
//! `App` does no I/O. It turns inputs into state changes and [`Effect`]s (jobs for the engine
//! task, file indexing) that the runtime carries out, which keeps it testable without a
//! terminal.

mod approval;
mod busy;
mod events;
mod harness;
mod keys;
mod live;
mod picker;
mod replies;
mod search;
mod usage;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

pub use approval::Approval;
pub(crate) use approval::GRACE;
pub use busy::{Activity, Busy};
#[cfg(test)]
pub(crate) use events::stable_split;
pub use live::{LIVE_AFTER_MS, LIVE_POLL, LIVE_READ_MAX};
pub use picker::{PickItem, Picker, PickerKind};
#[cfg(test)]
pub(crate) use replies::context_grid;
pub use search::HistorySearch;

use super::commands::{self, Command, CommandInfo};
use super::input::completion::{self, Completion, Query};
use super::input::editor::{Editor, Submission};
use super::transcript::{CellKind, ShellCell, Transcript};
use super::worker::Job;
use crate::config::models;
use crate::engine::NoticeLevel;
use crate::engine::SessionServices;
use crate::engine::harness::Harness;
use crate::engine::session::Totals;
use crate::permissions::Mode;

/// How long a first Ctrl+C waits for the second.
pub const EXIT_CONFIRM: Duration = Duration::from_secs(2);

/// Something the runtime must do for the app.
#[derive(Debug)]
pub enum Effect {
    Job(Job),
    /// Build the `@` completion index (off the UI thread).
    IndexFiles,
    /// Open this file in the user's editor (the TUI steps aside meanwhile).
    Edit(PathBuf),
    /// Edit the prompt's text in the user's editor (Ctrl+G); the result replaces the prompt.
    EditPrompt(String),
    /// Append a submitted prompt to this project's history file.
    RememberPrompt(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitReason {
    User,
    /// SIGTERM / SIGHUP / SIGINT, with the signal number.
    Signal(i32),
}

/// A prompt, command or shell line waiting for the running job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued {
    pub submission: Submission,
}

/// Facts the status line shows.
#[derive(Debug, Clone)]
pub struct Status {
    pub model: String,
    /// Models `/model` offers (current first), as the user names them.
    pub model_choices: Vec<String>,
    pub context_window: u64,
    pub totals: Totals,
    /// Figures of the requests a resumed session made before this run.
    pub earlier: Totals,
    /// Tokens the last request occupied in the window.
    pub context_tokens: u64,
    pub session_id: String,
    pub started: Instant,
    /// The request streaming now.
    pub in_flight: Option<usage::InFlight>,
    /// Requests that ended without an answer (their figures are estimates).
    pub cut: Totals,
}

pub struct AppInit {
    pub cwd: PathBuf,
    pub model: String,
    pub session_id: String,
    pub shared: Arc<SessionServices>,
    pub bypass_available: bool,
    /// The highest mode Shift+Tab may reach (a managed ceiling, `disableBypassPermissionsMode`).
    pub mode_ceiling: Option<Mode>,
    /// Skills (and custom commands), sub-agent types and plugins of the session.
    pub harness: Harness,
    pub project_dir: PathBuf,
}

pub struct App {
    pub transcript: Transcript,
    pub editor: Editor,
    pub completion: Option<Completion>,
    /// Ctrl+R: searching the prompt history.
    pub search: Option<HistorySearch>,
    /// Esc closed the menu; it stays closed until the text changes.
    completion_dismissed_for: Option<String>,
    pub status: Status,
    pub shared: Arc<SessionServices>,
    pub bypass_available: bool,
    pub mode_ceiling: Option<Mode>,
    pub busy: Option<Busy>,
    pub queue: VecDeque<Queued>,
    pub approval: Option<Approval>,
    pub forms: crate::tui::elicit::Forms,
    pending_approvals: VecDeque<crate::permissions::PermissionPrompt>,
    /// When each open question arrived, by tool call (the wait is not the tool's time).
    approval_waits: std::collections::HashMap<String, Instant>,
    pub picker: Option<Picker>,
    pub show_todos: bool,
    pub exit_armed: Option<Instant>,
    /// When Esc was last pressed on an empty, idle prompt (a second press lists the rewind
    /// points).
    pub rewind_armed: Option<Instant>,
    pub exit: Option<ExitReason>,
    effects: Vec<Effect>,
    pub dirty: bool,
    pub harness: Harness,
    command_list: Vec<CommandInfo>,
    files: Option<Arc<Vec<String>>>,
    files_requested: bool,
    /// The assistant text cell of the request being streamed.
    streaming: Option<usize>,
    /// Text arrived as deltas in the current request (the final message then adds none).
    text_streamed: bool,
    /// The text cells of the current request (a retry empties them).
    request_text_cells: Vec<usize>,
    thinking: Option<usize>,
    /// Tool cells created while the current request streamed (voided by a retry).
    request_tools: Vec<String>,
    retry_cell: Option<usize>,
    /// Output of commands typed while an answer streams, shown when its block ends.
    deferred: Vec<CellKind>,
    /// A command's output is being placed (it may have to wait for the answer).
    holding: bool,
    /// The notice of the last compaction, which `/compact`'s report completes.
    compact_notice: Option<usize>,
    pub cwd: PathBuf,
    pub project_dir: PathBuf,
    /// Ask the runtime to repaint everything (Ctrl+L).
    pub full_redraw: bool,
}

impl App {
    pub fn new(init: AppInit) -> App {
        let command_list = commands::all(&init.harness.skills);
        App {
            transcript: Transcript::default(),
            editor: Editor::default(),
            completion: None,
            search: None,
            completion_dismissed_for: None,
            status: Status {
                context_window: models::info(&init.model).context_window,
                model_choices: vec![init.model.clone()],
                model: init.model,
                totals: Totals::default(),
                earlier: Totals::default(),
                context_tokens: 0,
                session_id: init.session_id,
                started: Instant::now(),
                in_flight: None,
                cut: Totals::default(),
            },
            shared: init.shared,
            bypass_available: init.bypass_available,
            mode_ceiling: init.mode_ceiling,
            busy: None,
            queue: VecDeque::new(),
            approval: None,
            forms: Default::default(),
            pending_approvals: VecDeque::new(),
            approval_waits: Default::default(),
            picker: None,
            show_todos: false,
            exit_armed: None,
            rewind_armed: None,
            exit: None,
            effects: Vec::new(),
            dirty: true,
            harness: init.harness,
            command_list,
            files: None,
            files_requested: false,
            streaming: None,
            text_streamed: false,
            request_text_cells: Vec::new(),
            thinking: None,
            request_tools: Vec::new(),
            retry_cell: None,
            deferred: Vec::new(),
            holding: false,
            compact_notice: None,
            cwd: init.cwd,
            project_dir: init.project_dir,
            full_redraw: false,
        }
    }

    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    pub fn mode(&self) -> Mode {
        self.shared.mode()
    }

    pub fn notice(&mut self, level: NoticeLevel, text: impl Into<String>) {
        self.place(CellKind::Notice {
            level,
            text: text.into(),
        });
    }

    fn info(&mut self, title: &str, markdown: String) {
        self.place(CellKind::Info {
            title: title.to_string(),
            markdown,
        });
    }

    /// Adds a cell; what a command prints while an answer streams waits for the answer's
    /// block to end, so it never lands inside it.
    fn place(&mut self, cell: CellKind) {
        if self.holding && self.streaming.is_some() {
            self.deferred.push(cell);
        } else {
            self.transcript.push(cell);
        }
        self.dirty = true;
    }

    /// Shows what commands printed while an answer streamed.
    fn release_deferred(&mut self) {
        for cell in std::mem::take(&mut self.deferred) {
            self.transcript.push(cell);
        }
    }

    /// When the app next needs to wake up by itself (spinner, Ctrl+C confirmation timeout,
    /// arming an approval dialog).
    pub fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        let spinner = self.busy.as_ref().map(|_| now + Duration::from_millis(100));
        let exit = self.exit_armed.map(|t| t + EXIT_CONFIRM);
        let arm = self.approval.as_ref().and_then(Approval::arms_at);
        [spinner, exit, arm].into_iter().flatten().min()
    }

    /// Called on every timer wakeup (never while terminal input is waiting to be read):
    /// expires the Ctrl+C confirmation, arms an approval dialog, animates the spinner.
    pub fn tick(&mut self, now: Instant) {
        self.arm_approval(now);
        if let Some(t) = self.exit_armed
            && now >= t + EXIT_CONFIRM
        {
            self.exit_armed = None;
            self.dirty = true;
        }
        if self.busy.is_some() {
            self.dirty = true;
        }
    }

    pub fn set_files(&mut self, files: Arc<Vec<String>>) {
        self.files = Some(files);
        self.refresh_completion();
    }

    /// Recomputes the completion menu for the text at the cursor.
    pub fn refresh_completion(&mut self) {
        self.dirty = true;
        if self.completion_dismissed_for.as_deref() == Some(self.editor.text()) {
            return;
        }
        self.completion_dismissed_for = None;
        let previous = self.completion.take();
        self.completion = match completion::query_at(self.editor.text(), self.editor.cursor()) {
            Some(Query::Command { query, range }) => completion::commands(&query, &self.command_list, range),
            Some(Query::Path { query, range }) => match &self.files {
                Some(files) => completion::paths(&query, files, range),
                None => {
                    if !self.files_requested {
                        self.files_requested = true;
                        self.effects.push(Effect::IndexFiles);
                    }
                    None
                }
            },
            None => None,
        };
        // Keep the highlighted item when the list did not change.
        if let (Some(new), Some(old)) = (&mut self.completion, previous)
            && new.items == old.items
        {
            new.selected = old.selected;
        }
    }

    pub fn dismiss_completion(&mut self) {
        self.completion = None;
        self.completion_dismissed_for = Some(self.editor.text().to_string());
        self.dirty = true;
    }

    /// Applies the highlighted completion. Returns the accepted item's text.
    pub fn accept_completion(&mut self) -> Option<String> {
        let c = self.completion.take()?;
        let item = c.selected_item()?.clone();
        self.editor.replace(c.range, &item.replacement);
        self.refresh_completion();
        Some(item.replacement)
    }

    /// Handles Enter on the editor's text.
    pub fn submit(&mut self) {
        if self.editor.text().trim().is_empty() {
            return;
        }
        let sub = self.editor.submit();
        self.effects.push(Effect::RememberPrompt(sub.text.clone()));
        self.completion = None;
        self.transcript.scroll_to_bottom();
        self.dispatch(sub);
    }

    /// Replaces the prompt's text (it came back from the user's editor).
    pub fn set_prompt(&mut self, text: &str) {
        self.editor.set_text(text);
        self.refresh_completion();
    }

    /// Submits text as if typed (the prompt given on the command line).
    pub fn submit_text(&mut self, text: &str) {
        self.editor.set_text(text);
        self.submit();
    }

    fn dispatch(&mut self, sub: Submission) {
        self.dirty = true;
        let text = sub.text.trim();
        if commands::is_command(text) {
            self.holding = true;
            match commands::parse(text, &self.harness.skills) {
                Some(Ok(cmd)) if !cmd.needs_engine() => self.run_local(cmd),
                Some(Err(e)) => self.notice(NoticeLevel::Error, e),
                _ => {
                    self.holding = false;
                    return self.dispatch_to_engine(sub);
                }
            }
            self.holding = false;
            return;
        }
        self.dispatch_to_engine(sub);
    }

    fn dispatch_to_engine(&mut self, sub: Submission) {
        if self.busy.is_some() {
            self.queue.push_back(Queued { submission: sub });
            return;
        }
        self.start(sub);
    }

    /// Starts a submission on the (idle) engine task.
    fn start(&mut self, sub: Submission) {
        let text = sub.text.trim().to_string();
        let cancel = CancellationToken::new();
        if let Some(note) = harness::memory_note(&text) {
            self.begin(Activity::Command("#".into()), cancel);
            return self.remember(note);
        }
        if let Some(command) = text.strip_prefix('!') {
            let command = command.trim().to_string();
            if command.is_empty() {
                return;
            }
            self.transcript.push(CellKind::Shell(ShellCell {
                command: command.clone(),
                output: String::new(),
                exit_code: None,
                running: true,
                duration_ms: None,
                expanded: false,
            }));
            self.begin(Activity::Shell, cancel.clone());
            self.effects.push(Effect::Job(Job::Shell { command, cancel }));
            return;
        }
        if commands::is_command(&text) {
            match commands::parse(&text, &self.harness.skills) {
                Some(Ok(cmd)) => return self.run_engine_command(cmd, &sub, cancel),
                Some(Err(e)) => return self.notice(NoticeLevel::Error, e),
                None => {}
            }
        }
        self.transcript.push(CellKind::User {
            text: sub.shown.clone(),
        });
        self.begin(Activity::Thinking, cancel.clone());
        self.effects.push(Effect::Job(Job::Turn { text, cancel }));
    }

    fn begin(&mut self, activity: Activity, cancel: CancellationToken) {
        self.busy = Some(Busy::new(activity, cancel, Instant::now()));
        self.streaming = None;
        self.thinking = None;
        self.request_tools.clear();
        self.retry_cell = None;
        self.compact_notice = None;
        self.dirty = true;
    }

    /// Commands that need no engine: they run at once, even while a turn runs.
    fn run_local(&mut self, cmd: Command) {
        match cmd {
            Command::Help => self.info("Help", commands::help(&self.harness.skills)),
            Command::Tasks => self.info("Tasks", self.tasks_report()),
            Command::Skills => self.info("Skills", self.skills_report()),
            Command::Agents => self.info("Agents", self.agents_report()),
            Command::Memory => self.open_memory(),
            Command::Cost => self.info("Cost", self.cost_report()),
            Command::Evidence => self.info("Evidence", format!("```text\n{}```", self.shared.evidence.listing())),
            Command::Todos => self.info("Todos", self.todos_report()),
            Command::Model(None) => {
                let names = self.model_choices();
                let items = names
                    .iter()
                    .map(|m| {
                        let info = models::info(m);
                        let current = if *m == self.status.model { "current · " } else { "" };
                        PickItem {
                            label: m.clone(),
                            detail: format!(
                                "{current}{}k context, from {}",
                                info.context_window / 1000,
                                info.source.as_str()
                            ),
                        }
                    })
                    .collect();
                self.open_picker(Picker::new(
                    " Model ",
                    items,
                    PickerKind::Model(names),
                    "Enter to switch (saved as your default) · type to filter, or any id, PROVIDER/MODEL · Esc to cancel",
                ));
            }
            Command::Exit => self.exit = Some(ExitReason::User),
            other => self.notice(NoticeLevel::Error, format!("{other:?} needs the engine")),
        }
    }

    fn run_engine_command(&mut self, cmd: Command, sub: &Submission, cancel: CancellationToken) {
        let job = match cmd {
            Command::Clear => Job::Clear,
            Command::Compact(instructions) => Job::Compact {
                instructions,
                cancel: cancel.clone(),
            },
            Command::Context => Job::Context,
            Command::Model(Some(m)) => Job::SetModel { model: m },
            Command::Permissions => Job::Permissions,
            Command::Hooks => Job::Hooks,
            Command::Rewind(arg) => Job::Rewind { arg },
            Command::Mcp => Job::Mcp,
            Command::McpLogin { name, open_browser } => Job::McpLogin {
                name,
                open_browser,
                cancel: cancel.clone(),
            },
            Command::McpPrompt(line) => Job::McpPrompt {
                line,
                cancel: cancel.clone(),
            },
            Command::Resume(Some(id)) => {
                let path = self.project_dir.join(format!("{id}.jsonl"));
                if !path.is_file() {
                    return self.notice(
                        NoticeLevel::Error,
                        format!("no session {id} in this directory; /resume without an id lists them"),
                    );
                }
                Job::Resume { path }
            }
            Command::Resume(None) => Job::ListSessions {
                project_dir: self.project_dir.clone(),
                exclude: self.status.session_id.clone(),
            },
            Command::Init => {
                self.transcript.push(CellKind::User {
                    text: sub.shown.clone(),
                });
                self.begin(Activity::Thinking, cancel.clone());
                self.effects.push(Effect::Job(Job::Init { cancel }));
                return;
            }
            Command::Skill { name, args } => {
                self.transcript.push(CellKind::User {
                    text: sub.shown.clone(),
                });
                self.begin(Activity::Thinking, cancel.clone());
                self.effects.push(Effect::Job(Job::Slash { name, args, cancel }));
                return;
            }
            other => return self.run_local(other),
        };
        let label = sub.text.split_whitespace().next().unwrap_or("").to_string();
        self.begin(Activity::Command(label), cancel);
        self.effects.push(Effect::Job(job));
    }

    /// The job finished: idle, then start the next queued item.
    fn job_finished(&mut self) {
        self.release_deferred();
        self.busy = None;
        self.streaming = None;
        self.thinking = None;
        self.dirty = true;
        if let Some(next) = self.queue.pop_front() {
            self.start(next.submission);
        }
    }

    /// Esc / Ctrl+C while working: cancels the job; queued prompts go back to the editor so
    /// the user decides what still applies.
    pub fn interrupt(&mut self) {
        if let Some(b) = &self.busy {
            b.cancel.cancel();
        }
        if !self.queue.is_empty() {
            let mut texts: Vec<String> = self.queue.drain(..).map(|q| q.submission.shown).collect();
            if !self.editor.is_empty() {
                texts.insert(0, self.editor.text().to_string());
            }
            self.editor.set_text(&texts.join("\n"));
        }
        self.dirty = true;
    }

    pub fn cycle_mode(&mut self) {
        let next = self.mode().cycle_within(self.bypass_available, self.mode_ceiling);
        self.shared.set_mode(next);
        self.dirty = true;
    }

    /// The models `/model` offers: the current one first, then those configured (providers in
    /// the settings, the fallback), then the known families.
    fn model_choices(&self) -> Vec<String> {
        let mut out = vec![self.status.model.clone()];
        for m in &self.status.model_choices {
            if !out.contains(m) {
                out.push(m.clone());
            }
        }
        // The catalog's list already holds what this session's providers can serve (Claude
        // models only when Anthropic is among them).
        out
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    pub fn app() -> App {
        app_in(PathBuf::from("/work/proj"))
    }

    pub fn app_in(cwd: PathBuf) -> App {
        let shared = SessionServices::builder(cwd.clone(), cwd.join(".session")).build();
        App::new(AppInit {
            project_dir: cwd.join(".keel-projects"),
            cwd,
            model: "claude-sonnet-4-5".into(),
            session_id: "00000000-0000-0000-0000-000000000000".into(),
            shared,
            bypass_available: false,
            mode_ceiling: None,
            harness: Harness::default(),
        })
    }
}
