//! Lifecycle hooks, compatible with the reference's configuration and payloads.
//!
//! [`Hooks::fire`] runs every handler matching an event in parallel on one cached JSON
//! payload, folds their results in configuration order ([`outcome::Aggregate`]), and records
//! each run in the transcript and as an engine event.

pub mod callback;
pub mod config;
pub mod delegated;
pub mod failure;
mod handler_parse;
pub mod matcher;
mod once;
pub mod outcome;
pub mod process;
pub mod runner;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tracing::Instrument;

pub use callback::HookCallbacks;
pub use config::{Event, HookConfig, HookConfigError};
pub use delegated::HookDelegate;
pub use outcome::{Aggregate, Permission, Ran};

use crate::transcript::SharedTranscript;
pub use crate::types::events::HookRun;
use crate::types::events::{EngineEvent, EventSink, NoticeLevel};
use crate::types::permission::Mode;
use runner::HookEnv;

/// The effort level hooks are told when the session names none: the level providers use then.
pub const DEFAULT_EFFORT: &str = "high";

pub struct Hooks {
    config: HookConfig,
    /// Hooks registered at run time by the program driving keel (SDK `initialize`), and the
    /// way to call them.
    client: std::sync::RwLock<callback::ClientHooks>,
    /// Hooks that hold while something is active (a loaded skill's front matter), by owner.
    scoped: std::sync::RwLock<Vec<(String, HookConfig)>>,
    /// Scoped `once: true` handlers that have run in this session.
    spent: std::sync::Mutex<once::Spent>,
    /// What answers `prompt`, `agent` and `mcp_tool` hooks (set by the engine).
    delegate: std::sync::RwLock<Option<std::sync::Arc<dyn HookDelegate>>>,
    /// The prompt the current turn answers (`prompt_id` in every payload).
    prompt_id: std::sync::RwLock<Option<String>>,
    /// Where SessionStart hooks may write `export` lines for later shell commands
    /// (`CLAUDE_ENV_FILE`, `KEEL_ENV_FILE`).
    env_file: std::sync::RwLock<Option<PathBuf>>,
    env: HookEnv,
    /// The session hooks report on; replaced by `/clear` and `/resume`.
    session: std::sync::RwLock<(String, SharedTranscript)>,
    default_timeout: Duration,
    /// `async: true` handlers still running; the session waits for them before it exits.
    background: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Hooks {
    pub fn new(config: HookConfig, project_dir: PathBuf, session_id: String, transcript: SharedTranscript) -> Self {
        let default_timeout = std::env::var("KEEL_HOOK_TIMEOUT_SECS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|v| *v > 0)
            .unwrap_or(runner::DEFAULT_TIMEOUT_SECS);
        Hooks {
            env: HookEnv {
                cwd: project_dir.clone(),
                project_dir,
                env_file: None,
                effort: DEFAULT_EFFORT.into(),
            },
            config,
            client: std::sync::RwLock::new(callback::ClientHooks::default()),
            scoped: std::sync::RwLock::new(Vec::new()),
            spent: std::sync::Mutex::new(once::Spent::new()),
            delegate: std::sync::RwLock::new(None),
            prompt_id: std::sync::RwLock::new(None),
            env_file: std::sync::RwLock::new(None),
            session: std::sync::RwLock::new((session_id, transcript)),
            background: std::sync::Mutex::new(Vec::new()),
            default_timeout: Duration::from_secs(default_timeout),
        }
    }

    /// Hooks that never run (tests, `disableAllHooks`).
    pub fn none(project_dir: PathBuf, session_id: String, transcript: SharedTranscript) -> Self {
        Hooks::new(HookConfig::default(), project_dir, session_id, transcript)
    }

    /// Waits for background (`async: true`) handlers to finish; each is bounded by its own
    /// timeout, so this never hangs. Called when a session ends, so no hook is cut off.
    pub async fn wait_background(&self) {
        let tasks: Vec<_> = std::mem::take(&mut *self.background.lock().unwrap_or_else(|p| p.into_inner()));
        for t in tasks {
            let _ = t.await;
        }
    }

    /// Points the hooks at another session (after `/clear` or `/resume`).
    pub fn rebind(&self, session_id: String, transcript: SharedTranscript) {
        *self.session.write().unwrap_or_else(|p| p.into_inner()) = (session_id, transcript);
        // `once` counts per session.
        self.spent.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// The transcript of the session the hooks serve (for audit lines of the pipeline).
    pub fn transcript(&self) -> SharedTranscript {
        self.session().1
    }

    fn session(&self) -> (String, SharedTranscript) {
        self.session.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The session's effort level (`effort.level` in payloads, `$CLAUDE_EFFORT`); call before
    /// the hooks are shared.
    pub fn set_effort(&mut self, level: Option<&str>) {
        self.env.effort = level.unwrap_or(DEFAULT_EFFORT).to_string();
    }

    pub fn config(&self) -> &HookConfig {
        &self.config
    }

    /// Installs the hooks a client registered and the way to call them; replaces earlier ones.
    /// Refused (with the reason) when managed settings allow only their own hooks.
    pub fn set_client_hooks(
        &self,
        config: HookConfig,
        invoker: std::sync::Arc<dyn HookCallbacks>,
    ) -> Result<(), String> {
        if self.config.managed_only {
            return Err(
                "the program's hooks are not registered: managed settings allow only their own hooks \
                 (allowManagedHooksOnly)"
                    .into(),
            );
        }
        *self.client.write().unwrap_or_else(|p| p.into_inner()) = callback::ClientHooks {
            config,
            invoker: Some(invoker),
        };
        Ok(())
    }

    /// Registers hooks that hold until [`Hooks::remove_scoped`] with the same owner (a skill's
    /// front matter while it is active); registering an owner again replaces its hooks. Its
    /// `once` handlers that already ran in this session are left out.
    pub fn add_scoped(&self, owner: &str, mut config: HookConfig) {
        config.drop_spent(owner, &self.spent.lock().unwrap_or_else(|p| p.into_inner()));
        let mut scoped = self.scoped.write().unwrap_or_else(|p| p.into_inner());
        scoped.retain(|(o, _)| o != owner);
        if !config.is_empty() {
            scoped.push((owner.to_string(), config));
        }
    }

    pub fn remove_scoped(&self, owner: &str) {
        self.scoped
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(o, _)| o != owner);
    }

    /// The owners of the scoped hooks in force.
    pub fn scoped_owners(&self) -> Vec<String> {
        let scoped = self.scoped.read().unwrap_or_else(|p| p.into_inner());
        scoped.iter().map(|(o, _)| o.clone()).collect()
    }

    /// What answers `prompt`, `agent` and `mcp_tool` hooks.
    pub fn set_delegate(&self, delegate: std::sync::Arc<dyn HookDelegate>) {
        *self.delegate.write().unwrap_or_else(|p| p.into_inner()) = Some(delegate);
    }

    /// Names the prompt the current turn answers.
    pub fn set_prompt_id(&self, id: String) {
        *self.prompt_id.write().unwrap_or_else(|p| p.into_inner()) = Some(id);
    }

    /// The file SessionStart hooks may append `export` lines to (read by every later shell).
    pub fn set_env_file(&self, path: PathBuf) {
        *self.env_file.write().unwrap_or_else(|p| p.into_inner()) = Some(path);
    }

    pub fn has(&self, event: Event) -> bool {
        let scoped = self.scoped.read().unwrap_or_else(|p| p.into_inner());
        self.config.events.get(&event).is_some_and(|g| !g.is_empty())
            || scoped
                .iter()
                .any(|(_, c)| c.events.get(&event).is_some_and(|g| !g.is_empty()))
            || self
                .client
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .config
                .events
                .get(&event)
                .is_some_and(|g| !g.is_empty())
    }

    /// The JSON every handler of this event receives on stdin.
    pub fn payload(&self, event: Event, mode: Mode, fields: Map<String, Value>) -> Value {
        let (session_id, transcript) = self.session();
        let mut m = Map::new();
        m.insert("session_id".into(), session_id.into());
        m.insert("transcript_path".into(), transcript.path().display().to_string().into());
        m.insert("cwd".into(), self.env.cwd.display().to_string().into());
        if let Some(id) = self.prompt_id.read().unwrap_or_else(|p| p.into_inner()).clone() {
            m.insert("prompt_id".into(), id.into());
        }
        m.insert("permission_mode".into(), mode.as_str().into());
        m.insert("effort".into(), json!({"level": self.env.effort}));
        m.insert("hook_event_name".into(), event.as_str().into());
        m.extend(fields);
        Value::Object(m)
    }

    /// Runs the handlers of `event` whose matcher fits `target`.
    pub async fn fire(
        &self,
        event: Event,
        target: Option<&str>,
        mode: Mode,
        fields: Map<String, Value>,
        sink: &EventSink,
    ) -> Aggregate {
        let mut handlers = self.config.matching(event, target);
        {
            // A scoped `once` handler runs this time and is taken out under the same lock.
            let mut scoped = self.scoped.write().unwrap_or_else(|p| p.into_inner());
            let mut spent = Vec::new();
            for (owner, c) in scoped.iter_mut() {
                for h in c.matching(event, target) {
                    if !handlers.contains(&h) {
                        handlers.push(h);
                    }
                }
                spent.extend(c.take_once(owner, event, target));
            }
            if !spent.is_empty() {
                self.spent.lock().unwrap_or_else(|p| p.into_inner()).extend(spent);
            }
        }
        let delegate = self.delegate.read().unwrap_or_else(|p| p.into_inner()).clone();
        let invoker = {
            let client = self.client.read().unwrap_or_else(|p| p.into_inner());
            for h in client.config.matching(event, target) {
                if !handlers.contains(&h) {
                    handlers.push(h);
                }
            }
            client.invoker.clone()
        };
        let mut agg = Aggregate::default();
        if handlers.is_empty() {
            return agg;
        }
        let payload_value = self.payload(event, mode, fields);
        let tool_use_id = payload_value
            .get("tool_use_id")
            .and_then(Value::as_str)
            .map(str::to_string);
        let payload = serde_json::to_vec(&payload_value).unwrap_or_default();
        let mut env = self.env.clone();
        if event == Event::SessionStart {
            env.env_file = self.env_file.read().unwrap_or_else(|p| p.into_inner()).clone();
            // Hooks append to it (`>>`): the file must be there to receive them.
            if let Some(f) = &env.env_file
                && let Some(dir) = f.parent()
            {
                let _ = std::fs::create_dir_all(dir);
                let _ = std::fs::OpenOptions::new().create(true).append(true).open(f);
            }
        }
        let hook_name = match target {
            Some(t) if !t.is_empty() => format!("{}:{t}", event.as_str()),
            _ => event.as_str().to_string(),
        };
        let started = |sink: &EventSink| {
            let hook_id = uuid::Uuid::new_v4().to_string();
            sink.emit(EngineEvent::HookStarted {
                hook_id: hook_id.clone(),
                hook_name: hook_name.clone(),
                event: event.as_str().to_string(),
            });
            Named {
                hook_id,
                hook_name: hook_name.clone(),
            }
        };
        let (background, foreground): (Vec<_>, Vec<_>) = handlers.into_iter().partition(|h| h.is_async());
        for h in background {
            let payload = payload.clone();
            let env = env.clone();
            let timeout = self.default_timeout;
            let transcript = self.session().1;
            let sink = sink.clone();
            let name = started(&sink);
            let task = tokio::spawn(async move {
                let r = runner::run(&h, &payload, &env, timeout).await;
                let mut scratch = Aggregate::default();
                let i = outcome::interpret(event, &h.label(), &r, h.on_failure(), &mut scratch);
                record(&transcript, &sink, event, &h.label(), &name, &r, &i, true);
                for w in scratch.warnings {
                    sink.notice(NoticeLevel::Warning, w);
                }
            });
            let mut running = self.background.lock().unwrap_or_else(|p| p.into_inner());
            running.retain(|t| !t.is_finished());
            running.push(task);
        }
        let names: Vec<Named> = foreground.iter().map(|_| started(sink)).collect();
        let (invoker, delegate, payload_value, payload, env, tool_use_id) =
            (&invoker, &delegate, &payload_value, &payload, &env, &tool_use_id);
        let runs = futures_util::future::join_all(foreground.iter().map(|h| async move {
            match h {
                config::Handler::Callback { id, timeout_secs } => {
                    let timeout = timeout_secs.map(Duration::from_secs).unwrap_or(self.default_timeout);
                    callback::run(
                        invoker.as_deref(),
                        id,
                        payload_value.clone(),
                        tool_use_id.clone(),
                        timeout,
                    )
                    .await
                }
                h if h.is_delegated() => {
                    delegated::run(delegate.as_deref(), h, event, payload_value, self.default_timeout).await
                }
                _ => runner::run(h, payload, env, self.default_timeout).await,
            }
        }))
        .instrument(tracing::debug_span!("hook", event = event.as_str()))
        .await;
        let transcript = self.session().1;
        for ((h, r), name) in foreground.iter().zip(runs).zip(&names) {
            let stopped_before = agg.stop.is_some();
            let i = outcome::interpret(event, &h.label(), &r, h.on_failure(), &mut agg);
            agg.ran.push(outcome::Ran::of(&h.label(), &r, i.outcome));
            // `continueOnBlock`: the handler's stop becomes feedback for the model.
            if h.continue_on_block()
                && matches!(event, Event::PostToolUse | Event::PostToolUseFailure)
                && !stopped_before
                && let Some(reason) = agg.stop.take()
                && !agg.blocks.contains(&reason)
            {
                agg.blocks.push(reason);
            }
            record(&transcript, sink, event, &h.label(), name, &r, &i, false);
        }
        for w in &agg.warnings {
            sink.notice(NoticeLevel::Warning, w.clone());
        }
        for m in &agg.system_messages {
            sink.notice(NoticeLevel::Warning, m.clone());
        }
        agg
    }
}

/// How one handler run is named in `hook_started` / `hook_response`.
struct Named {
    hook_id: String,
    hook_name: String,
}

#[allow(clippy::too_many_arguments)]
fn record(
    transcript: &SharedTranscript,
    sink: &EventSink,
    event: Event,
    label: &str,
    name: &Named,
    r: &runner::RunResult,
    i: &outcome::Interpreted,
    background: bool,
) {
    tracing::debug!(
        event = event.as_str(),
        handler = label,
        exit_code = r.exit_code,
        duration_ms = r.duration_ms,
        outcome = i.outcome,
        background,
        "hook ran"
    );
    let run = HookRun {
        hook_id: name.hook_id.clone(),
        hook_name: name.hook_name.clone(),
        event: event.as_str().into(),
        handler: label.into(),
        exit_code: r.exit_code,
        duration_ms: r.duration_ms,
        outcome: i.outcome.into(),
        decision: i.decision.clone(),
        stdout: truncate(&r.stdout),
        stderr: truncate(&r.stderr),
    };
    let _ = transcript.event(
        "hook_run",
        json!({
            "hook_event": run.event, "handler": run.handler, "exit_code": run.exit_code,
            "duration_ms": run.duration_ms, "outcome": run.outcome, "decision": run.decision,
                        "async": background, "stdout": recorded_stdout(&r.stdout), "stderr": truncate(&r.stderr),
        }),
    );
    sink.emit(EngineEvent::HookRun(run));
}

/// A hook's stdout as the transcript keeps it; `suppressOutput: true` keeps it out.
fn recorded_stdout(stdout: &str) -> String {
    let suppressed = serde_json::from_str::<Value>(stdout.trim())
        .ok()
        .is_some_and(|v| v.get("suppressOutput") == Some(&Value::Bool(true)));
    if suppressed {
        "(suppressed by the hook)".into()
    } else {
        truncate(stdout)
    }
}

fn truncate(s: &str) -> String {
    if s.len() <= 4000 {
        s.to_string()
    } else {
        let mut end = 4000;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}… [{} bytes]", &s[..end], s.len())
    }
}

/// Builds the event-specific fields from `(key, value)` pairs.
pub fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}
