//! Hook configuration from every settings layer (the reference's `hooks` shape).

use std::collections::BTreeMap;

use serde_json::Value;

use super::failure::OnFailure;
use super::handler_parse::parse_handler;
use super::matcher::Matcher;
use crate::config::settings::Settings;

/// The lifecycle events keel fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Event {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PermissionRequest,
    PostToolUse,
    PostToolUseFailure,
    Notification,
    Stop,
    SubagentStart,
    SubagentStop,
    /// A sub-agent needs a worktree: the hook makes it and prints its path (instead of git).
    WorktreeCreate,
    /// A sub-agent's worktree is to be removed (an unchanged git one, or one a hook made).
    WorktreeRemove,
    PreCompact,
    PostCompact,
    SessionEnd,
    /// A settings file changed during the session (matched on its source: `user_settings`,
    /// `project_settings`, `local_settings`, `policy_settings`).
    ConfigChange,
    /// After every tool round, with all its calls and results.
    PostToolBatch,
    /// The turn ended on an API error (matched on its kind: `rate_limit`, `overloaded`, …).
    StopFailure,
    /// An item appeared on the task list (TodoWrite).
    TaskCreated,
    /// An item of the task list became completed.
    TaskCompleted,
    /// The shell's working directory changed (a Bash `cd`).
    CwdChanged,
    /// An instruction file (CLAUDE.md, AGENTS.md, a rules file) was loaded into the context.
    InstructionsLoaded,
    /// A typed `/name` is about to expand (matched on the name).
    UserPromptExpansion,
    /// An MCP server asks for input (matched on the server's name); a hook may answer it.
    Elicitation,
    /// The answer to an MCP server's question, before it is sent (matched on the server's
    /// name); a hook may change it.
    ElicitationResult,
}

impl Event {
    pub const ALL: [Event; 25] = [
        Event::SessionStart,
        Event::UserPromptSubmit,
        Event::PreToolUse,
        Event::PermissionRequest,
        Event::PostToolUse,
        Event::PostToolUseFailure,
        Event::Notification,
        Event::Stop,
        Event::SubagentStart,
        Event::SubagentStop,
        Event::WorktreeCreate,
        Event::WorktreeRemove,
        Event::PreCompact,
        Event::PostCompact,
        Event::SessionEnd,
        Event::ConfigChange,
        Event::PostToolBatch,
        Event::StopFailure,
        Event::TaskCreated,
        Event::TaskCompleted,
        Event::CwdChanged,
        Event::InstructionsLoaded,
        Event::UserPromptExpansion,
        Event::Elicitation,
        Event::ElicitationResult,
    ];

    /// Events of the reference for features keel does not have: their hooks are not registered
    /// (a warning says why).
    pub const UNSUPPORTED: [(&'static str, &'static str); 5] = [
        (
            "PermissionDenied",
            "keel has no auto mode whose classifier denies calls",
        ),
        ("Setup", "keel has no `--init` / `--maintenance` runs"),
        ("FileChanged", "keel has no hook-watched paths (`watchPaths`)"),
        ("TeammateIdle", "keel has no agent teams"),
        (
            "MessageDisplay",
            "keel's front ends show messages as the model wrote them",
        ),
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::PreToolUse => "PreToolUse",
            Event::PermissionRequest => "PermissionRequest",
            Event::PostToolUse => "PostToolUse",
            Event::PostToolUseFailure => "PostToolUseFailure",
            Event::Notification => "Notification",
            Event::Stop => "Stop",
            Event::SubagentStart => "SubagentStart",
            Event::SubagentStop => "SubagentStop",
            Event::WorktreeCreate => "WorktreeCreate",
            Event::WorktreeRemove => "WorktreeRemove",
            Event::PreCompact => "PreCompact",
            Event::PostCompact => "PostCompact",
            Event::SessionEnd => "SessionEnd",
            Event::ConfigChange => "ConfigChange",
            Event::PostToolBatch => "PostToolBatch",
            Event::StopFailure => "StopFailure",
            Event::TaskCreated => "TaskCreated",
            Event::TaskCompleted => "TaskCompleted",
            Event::CwdChanged => "CwdChanged",
            Event::InstructionsLoaded => "InstructionsLoaded",
            Event::UserPromptExpansion => "UserPromptExpansion",
            Event::Elicitation => "Elicitation",
            Event::ElicitationResult => "ElicitationResult",
        }
    }

    pub fn parse(s: &str) -> Option<Event> {
        Event::ALL.into_iter().find(|e| e.as_str() == s)
    }
}

/// One hook handler. Identical handlers (same kind and command/url) run once per event.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Handler {
    Command {
        /// Shell form (`sh -c`), or the program of the exec form when `args` is given.
        command: Option<String>,
        args: Option<Vec<String>>,
        shell: Option<String>,
        timeout_secs: Option<u64>,
        run_async: bool,
        /// A plugin's hook: its folder, `CLAUDE_PLUGIN_ROOT` in the process's environment.
        plugin_root: Option<std::path::PathBuf>,
        on_failure: OnFailure,
        continue_on_block: bool,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        allowed_env_vars: Vec<String>,
        timeout_secs: Option<u64>,
        on_failure: OnFailure,
        continue_on_block: bool,
    },
    /// One request to the session's provider; the model answers `{"ok", "reason"}`.
    Prompt {
        prompt: String,
        model: Option<String>,
        timeout_secs: Option<u64>,
        on_failure: OnFailure,
        continue_on_block: bool,
    },
    /// A short sub-agent run with tools; its final message is the verdict.
    Agent {
        prompt: String,
        model: Option<String>,
        timeout_secs: Option<u64>,
        on_failure: OnFailure,
        continue_on_block: bool,
    },
    /// A tool of a configured MCP server; its result is the hook's output.
    McpTool {
        server: String,
        tool: String,
        /// The `input` object as JSON text (`${tool_input.file_path}` references written in
        /// when it runs).
        input: String,
        timeout_secs: Option<u64>,
        on_failure: OnFailure,
        continue_on_block: bool,
    },
    /// A hook that lives in the program driving keel (registered by the SDK's `initialize`),
    /// called through it with the same payload; its answer is the same JSON a command prints.
    Callback { id: String, timeout_secs: Option<u64> },
}

impl Handler {
    /// How the handler is shown in listings and logs.
    pub fn label(&self) -> String {
        match self {
            Handler::Command { command, args, .. } => match (command, args) {
                (Some(c), None) => c.clone(),
                (c, Some(a)) => {
                    let mut parts: Vec<String> = c.iter().cloned().collect();
                    parts.extend(a.iter().cloned());
                    parts.join(" ")
                }
                (None, None) => "(empty command)".into(),
            },
            Handler::Http { url, .. } => format!("POST {url}"),
            Handler::Callback { id, .. } => format!("SDK callback {id}"),
            Handler::Prompt { prompt, .. } => format!("prompt: {}", short(prompt)),
            Handler::Agent { prompt, .. } => format!("agent: {}", short(prompt)),
            Handler::McpTool { server, tool, .. } => format!("mcp_tool {server}/{tool}"),
        }
    }

    /// `onFailure` (SDK callbacks have none: their failures warn).
    pub fn on_failure(&self) -> OnFailure {
        match self {
            Handler::Command { on_failure, .. }
            | Handler::Http { on_failure, .. }
            | Handler::Prompt { on_failure, .. }
            | Handler::Agent { on_failure, .. }
            | Handler::McpTool { on_failure, .. } => *on_failure,
            Handler::Callback { .. } => OnFailure::Warn,
        }
    }

    /// `continueOnBlock`: a stop this handler asks for after a tool ran goes to the model as
    /// feedback instead, and the turn goes on.
    pub fn continue_on_block(&self) -> bool {
        match self {
            Handler::Command { continue_on_block, .. }
            | Handler::Http { continue_on_block, .. }
            | Handler::Prompt { continue_on_block, .. }
            | Handler::Agent { continue_on_block, .. }
            | Handler::McpTool { continue_on_block, .. } => *continue_on_block,
            Handler::Callback { .. } => false,
        }
    }

    fn timeout_secs(&self) -> Option<u64> {
        match self {
            Handler::Command { timeout_secs, .. }
            | Handler::Http { timeout_secs, .. }
            | Handler::Callback { timeout_secs, .. }
            | Handler::Prompt { timeout_secs, .. }
            | Handler::Agent { timeout_secs, .. }
            | Handler::McpTool { timeout_secs, .. } => *timeout_secs,
        }
    }

    /// Answered by keel's own parts (provider, sub-agents, MCP hub), not a process.
    pub fn is_delegated(&self) -> bool {
        matches!(
            self,
            Handler::Prompt { .. } | Handler::Agent { .. } | Handler::McpTool { .. }
        )
    }

    pub fn is_async(&self) -> bool {
        matches!(self, Handler::Command { run_async: true, .. })
    }
}

#[derive(Debug, Clone)]
pub struct Group {
    pub matcher: Matcher,
    pub matcher_text: String,
    pub handlers: Vec<Handler>,
    /// The settings file the group came from.
    pub source: String,
    /// Its handlers were marked `once: true`: in a skill's front matter they run at most once
    /// per session (see `once.rs`); elsewhere the mark means nothing.
    pub once: bool,
}

#[derive(Debug, Clone, Default)]
pub struct HookConfig {
    pub events: BTreeMap<Event, Vec<Group>>,
    /// Problems found while reading (unsupported types, unknown events); shown at startup.
    pub warnings: Vec<String>,
    /// Managed settings allow only their own hooks (`allowManagedHooksOnly`): a driving
    /// program's hooks are refused too.
    pub managed_only: bool,
    /// Only managed hooks run (`allowManagedHooksOnly`, or `disableAllHooks`): hooks a skill
    /// brings are refused too.
    pub only_managed: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("{source_label}: hooks.{event}: {problem}")]
pub struct HookConfigError {
    pub source_label: String,
    pub event: String,
    pub problem: String,
}

impl HookConfig {
    pub fn from_settings(settings: &Settings) -> Result<HookConfig, HookConfigError> {
        use crate::config::settings::Scope;
        let mut config = HookConfig {
            managed_only: settings.managed_flag(&["allowManagedHooksOnly"]),
            ..HookConfig::default()
        };
        // `disableAllHooks` turns off the hooks of the layers below managed ones; only a
        // managed file turns off managed hooks.
        let disabled = settings
            .scalar("disableAllHooks")
            .filter(|(v, _)| v == &&Value::Bool(true))
            .map(|(_, layer)| layer.scope);
        if disabled == Some(Scope::Managed) {
            config.only_managed = true;
            return Ok(config);
        }
        let skip_below_managed = disabled.is_some() || config.managed_only;
        config.only_managed = skip_below_managed;
        for layer in &settings.layers {
            if skip_below_managed && layer.scope != Scope::Managed {
                continue;
            }
            let Some(hooks) = layer.value.get("hooks") else {
                continue;
            };
            config.add_layer(hooks, &layer.label())?;
        }
        Ok(config)
    }

    /// Hooks in the settings shape (`{"EventName": [groups]}`) read from `label` (a settings
    /// file, a skill's front matter); unknown events and types become warnings.
    pub fn add_layer(&mut self, hooks: &Value, label: &str) -> Result<(), HookConfigError> {
        let label = label.to_string();
        let config = self;
        let Some(map) = hooks.as_object() else {
            return Err(HookConfigError {
                source_label: label,
                event: "*".into(),
                problem: "`hooks` must be an object keyed by event name".into(),
            });
        };
        for (name, groups) in map {
            let err = |problem: String| HookConfigError {
                source_label: label.clone(),
                event: name.clone(),
                problem,
            };
            let Some(event) = Event::parse(name) else {
                config.warnings.push(unknown_event(&label, name));
                continue;
            };
            let groups = groups
                .as_array()
                .ok_or_else(|| err("must be an array of matcher groups".into()))?;
            for g in groups {
                let matcher_text = g.get("matcher").and_then(Value::as_str).map(str::to_string);
                let matcher = Matcher::parse(matcher_text.as_deref()).map_err(&err)?;
                let list = g
                    .get("hooks")
                    .and_then(Value::as_array)
                    .ok_or_else(|| err("each group needs a `hooks` array".into()))?;
                // Handlers marked `once` get groups of their own, in place, so order holds.
                let mut runs: Vec<(bool, Vec<Handler>)> = Vec::new();
                for h in list {
                    let once = match h.get("once") {
                        None | Some(Value::Null) => false,
                        Some(Value::Bool(b)) => *b,
                        Some(v) => return Err(err(format!("`once` must be true or false, found {v}"))),
                    };
                    match parse_handler(h) {
                        Ok(Some(handler)) => match runs.last_mut() {
                            Some((o, hs)) if *o == once => hs.push(handler),
                            _ => runs.push((once, vec![handler])),
                        },
                        Ok(None) => config.warnings.push(format!(
                            "{label}: a {name} hook of type `{}` is not supported by keel and will not run",
                            h.get("type").and_then(Value::as_str).unwrap_or("?")
                        )),
                        Err(p) => return Err(err(p)),
                    }
                }
                if runs.is_empty() {
                    runs.push((false, Vec::new()));
                }
                for (once, handlers) in runs {
                    config.events.entry(event).or_default().push(Group {
                        matcher: matcher.clone(),
                        matcher_text: matcher_text.clone().unwrap_or_default(),
                        handlers,
                        source: label.clone(),
                        once,
                    });
                }
            }
        }
        Ok(())
    }

    /// Marks the command hooks read from the file `source` as a plugin's, run with
    /// `CLAUDE_PLUGIN_ROOT` set to `root` (the reference's plugin scripts read it).
    pub fn set_plugin_root(&mut self, source: &str, root: &std::path::Path) {
        for g in self.events.values_mut().flatten().filter(|g| g.source == source) {
            for h in &mut g.handlers {
                if let Handler::Command { plugin_root, .. } = h {
                    *plugin_root = Some(root.to_path_buf());
                }
            }
        }
    }

    /// Handlers for an event whose matcher fits `target`, each distinct handler once, in
    /// configuration order.
    pub fn matching(&self, event: Event, target: Option<&str>) -> Vec<Handler> {
        let mut out: Vec<Handler> = Vec::new();
        for g in self.events.get(&event).into_iter().flatten() {
            if g.matcher.matches(target) {
                for h in &g.handlers {
                    if !out.contains(h) {
                        out.push(h.clone());
                    }
                }
            }
        }
        out
    }

    /// Adds a matcher group (hooks registered at run time, e.g. by an SDK client).
    pub fn add_group(
        &mut self,
        event: Event,
        matcher_text: Option<&str>,
        handlers: Vec<Handler>,
        source: &str,
    ) -> Result<(), String> {
        let matcher = Matcher::parse(matcher_text)?;
        self.events.entry(event).or_default().push(Group {
            matcher,
            matcher_text: matcher_text.unwrap_or_default().to_string(),
            handlers,
            source: source.to_string(),
            once: false,
        });
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.events.values().all(|g| g.iter().all(|g| g.handlers.is_empty()))
    }

    /// A human-readable listing by event and source file (`keel hooks`, `/hooks`).
    pub fn describe(&self) -> String {
        let mut out = String::new();
        if self.is_empty() {
            out.push_str("No hooks configured.\n");
        }
        for (event, groups) in &self.events {
            out.push_str(&format!("{}\n", event.as_str()));
            for g in groups {
                let m = if g.matcher_text.is_empty() {
                    "*"
                } else {
                    g.matcher_text.as_str()
                };
                for h in &g.handlers {
                    let mut extra: Vec<String> = h.timeout_secs().iter().map(|t| format!("timeout {t}s")).collect();
                    if h.is_async() {
                        extra.push("async".into());
                    }
                    if h.continue_on_block() {
                        extra.push("continueOnBlock".into());
                    }
                    extra.extend(h.on_failure().describe());
                    let extra = if extra.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", extra.join(", "))
                    };
                    out.push_str(&format!("  [{m}] {}{extra}\n      from {}\n", h.label(), g.source));
                }
            }
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out
    }
}

fn unknown_event(label: &str, name: &str) -> String {
    let unsupported = Event::UNSUPPORTED.iter().find(|(n, _)| *n == name);
    if let Some((_, why)) = unsupported {
        return format!("{label}: hooks for `{name}` are not registered: {why}");
    }
    format!(
        "{label}: hooks for `{name}` are ignored: keel has no such event{}",
        crate::config::spelling::did_you_mean(name, Event::ALL.iter().map(|e| e.as_str()))
    )
}

fn short(s: &str) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    if line.chars().count() > 60 {
        format!("{}…", line.chars().take(60).collect::<String>())
    } else {
        line.to_string()
    }
}
