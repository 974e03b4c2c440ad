//! The capabilities a tool call may be given: narrow handles on the session's state, each
//! built once when the session starts. A tool declares which it needs
//! ([`super::Tool::capabilities`]); the pipeline hands it those and no others.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use super::bash::background::BackgroundShells;
use super::bash::gate::CommandGate;
use super::file_state::FileStateMap;
use crate::checkpoint::{Checkpoints, Hashed};
use crate::sandbox::{Confiner, Limits, SandboxMode};
use crate::types::permission::Mode;
use crate::types::tool::Todo;

/// What a tool may ask for besides the workspace, which every call gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    /// The read-file state, the read guard and the checkpoint log (Read, Write, Edit, Grep).
    Files,
    /// The shell environment: confinement, working directory, background shells (Bash).
    Shell,
    /// The session's task list (TodoWrite).
    Tasks,
    /// The permission mode (ExitPlanMode reads it).
    Mode,
    /// The sub-agent runner (Agent).
    Agents,
    /// The skill loader (Skill).
    Skills,
}

/// The subfolders of the session folder whose files the model is pointed at (spilled tool
/// results, shell output): file tools read them without asking. The rest of the session
/// folder (hook environment, checkpoints, the debug log) is not the model's.
pub const MODEL_OUTPUT_DIRS: [&str; 2] = [SPILL_DIR, SHELL_OUTPUT_DIR];
/// Where results over a tool's budget are written whole.
pub const SPILL_DIR: &str = "tool-results";
/// Where shell commands write their output.
pub const SHELL_OUTPUT_DIR: &str = "shell-output";

/// The directories a session works in.
#[derive(Debug)]
pub struct Workspace {
    /// The workspace root: the directory keel was started in.
    pub cwd: PathBuf,
    /// Where spill files and other per-session artefacts live.
    pub session_dir: PathBuf,
    /// Working directories besides `cwd` (`--add-dir`, `permissions.additionalDirectories`,
    /// and those a driving program adds during the session).
    extra_dirs: RwLock<Vec<PathBuf>>,
}

impl Workspace {
    pub fn new(cwd: PathBuf, session_dir: PathBuf, extra_dirs: Vec<PathBuf>) -> Self {
        Workspace {
            cwd,
            session_dir,
            extra_dirs: RwLock::new(extra_dirs),
        }
    }

    /// Whether `path` lies inside the workspace (where the shell's `cd` may stay): the working
    /// directory or an added one.
    pub fn is_in_workspace(&self, path: &Path) -> bool {
        path.starts_with(&self.cwd) || self.extra_dirs().iter().any(|d| path.starts_with(d))
    }

    /// The workspace roots (canonical) below which file tools open files.
    pub fn roots(&self) -> Vec<PathBuf> {
        let mut roots = vec![self.cwd.clone()];
        roots.extend(self.extra_dirs());
        roots
    }

    pub fn extra_dirs(&self) -> Vec<PathBuf> {
        self.extra_dirs.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces the working directories besides `cwd` (a program's permission update).
    pub fn set_extra_dirs(&self, dirs: Vec<PathBuf>) {
        *self.extra_dirs.write().unwrap_or_else(|p| p.into_inner()) = dirs;
    }

    /// Where SessionStart hooks write `export` lines (`CLAUDE_ENV_FILE`); every shell command
    /// of the session reads it first.
    pub fn hook_env_file(&self) -> PathBuf {
        self.session_dir.join("hook-env.sh")
    }
}

/// Decides which files Grep and Glob leave out (credential files, Read deny rules), so a search
/// never shows what Read would refuse.
#[derive(Clone, Default)]
pub struct ReadGuard(Option<Arc<DenyFn>>);

/// The path, and whether the caller already knows it is no symbolic link.
type DenyFn = dyn Fn(&Path, bool) -> bool + Send + Sync;

impl ReadGuard {
    pub fn new(denies: impl Fn(&Path, bool) -> bool + Send + Sync + 'static) -> Self {
        ReadGuard(Some(Arc::new(denies)))
    }

    pub fn denies(&self, path: &Path) -> bool {
        self.0.as_ref().is_some_and(|f| f(path, false))
    }

    /// [`Self::denies`] for a path the caller knows is no link (a walk entry typed as a
    /// regular file): the guard then need not look at it again.
    pub fn denies_regular(&self, path: &Path) -> bool {
        self.0.as_ref().is_some_and(|f| f(path, true))
    }
}

impl std::fmt::Debug for ReadGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "ReadGuard(active)"
        } else {
            "ReadGuard(none)"
        })
    }
}

/// What the model has seen of each file, what it may not see, and where changes are logged
/// for rewinding.
#[derive(Debug)]
pub struct FileAccess {
    state: Mutex<FileStateMap>,
    pub read_guard: ReadGuard,
    /// Previous contents of changed files (shared with sub-agents working in the same tree:
    /// one rewind takes back the parent's and the child's changes).
    pub checkpoints: Arc<Checkpoints>,
    /// The session's language servers (diagnostics after edits); none in bare sessions.
    pub lsp: Option<Arc<super::lsp::Lsp>>,
}

impl FileAccess {
    pub fn new(state: FileStateMap, read_guard: ReadGuard, checkpoints: Arc<Checkpoints>) -> Self {
        FileAccess {
            state: Mutex::new(state),
            read_guard,
            checkpoints,
            lsp: None,
        }
    }

    pub fn with_lsp(mut self, lsp: Option<Arc<super::lsp::Lsp>>) -> Self {
        self.lsp = lsp;
        self
    }

    /// Locks the read-file state; a poisoned lock (a panicking tool) is recovered because the
    /// map holds plain data that stays consistent per entry.
    pub fn files(&self) -> MutexGuard<'_, FileStateMap> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Logs the previous content of `path` before a tool changes it (`None`: absent; else with
    /// the file's metadata, read when it was loaded), so the change can be rewound. Returns a
    /// note for the tool result when it cannot be.
    pub fn checkpoint(
        &self,
        path: &Path,
        before: Option<(Hashed<'_>, &std::fs::Metadata)>,
        after: Hashed<'_>,
        by: &str,
    ) -> Option<String> {
        use std::os::unix::fs::PermissionsExt;
        let mode = before.map_or(0o666 & !0o022, |(_, meta)| meta.permissions().mode() & 0o7777);
        match self
            .checkpoints
            .record_hashed(path, before.map(|(content, _)| content), Some(after), mode, by)
        {
            Ok(note) => note,
            Err(e) => Some(format!("Note: {e}; this change cannot be rewound.")),
        }
    }
}

/// Where and how shell commands run.
#[derive(Debug)]
pub struct ShellEnv {
    /// How shell commands a human or rule approved are confined.
    pub sandbox: SandboxMode,
    /// The session's confinement state (read-only jail, credential scan); none in bare test
    /// sessions, whose commands then run as `sandbox` says.
    pub confiner: Option<Arc<Confiner>>,
    /// Most bytes one shell command's output file keeps (head and tail; `shellOutputMaxBytes`).
    pub output_cap: u64,
    /// Processes and memory each command may use (`sandbox.limits`).
    pub limits: Limits,
    /// Keeps sandboxed commands that may create configuration at the top of the workspace
    /// apart from unsandboxed ones (shared with sub-agents).
    pub gate: Arc<CommandGate>,
    /// Where the next Bash command starts: `cd` persists while it stays inside the workspace.
    pub(crate) cwd: Mutex<PathBuf>,
    /// Background shells; all of them are killed when the session ends (and on drop).
    pub shells: BackgroundShells,
    /// The session's id, given to every command as `CLAUDE_CODE_SESSION_ID` (the id hooks
    /// receive as `session_id`, so a command's records can be matched with a hook's).
    pub(crate) session_id: Mutex<Option<String>>,
}

impl ShellEnv {
    pub fn new(sandbox: SandboxMode, confiner: Option<Arc<Confiner>>, output_cap: u64, cwd: PathBuf) -> Self {
        ShellEnv {
            sandbox,
            confiner,
            output_cap,
            limits: Limits::default(),
            gate: Arc::default(),
            cwd: Mutex::new(cwd),
            shells: BackgroundShells::default(),
            session_id: Mutex::new(None),
        }
    }

    pub fn session_id(&self) -> Option<String> {
        self.session_id.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn set_session_id(&self, id: Option<String>) {
        *self.session_id.lock().unwrap_or_else(|p| p.into_inner()) = id;
    }

    /// Where the next command starts.
    pub fn cwd(&self) -> PathBuf {
        self.cwd.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn set_cwd(&self, dir: PathBuf) {
        *self.cwd.lock().unwrap_or_else(|p| p.into_inner()) = dir;
    }
}

/// The session's task list (TodoWrite).
#[derive(Debug, Default)]
pub struct TaskList(Mutex<Vec<Todo>>);

impl TaskList {
    pub fn get(&self) -> Vec<Todo> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces the list, returning the previous one.
    pub fn replace(&self, todos: Vec<Todo>) -> Vec<Todo> {
        std::mem::replace(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()), todos)
    }
}

/// The current permission mode; front ends change it between or during turns.
#[derive(Debug, Default)]
pub struct ModeCell(Mutex<Mode>);

impl ModeCell {
    pub fn new(mode: Mode) -> Self {
        ModeCell(Mutex::new(mode))
    }

    pub fn get(&self) -> Mode {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set(&self, mode: Mode) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = mode;
    }
}
