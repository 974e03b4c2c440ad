//! The engine's own task. The TUI sends it jobs (a turn, a shell command, a session change);
//! it runs them one at a time and answers each with exactly one [`Reply`]. Engine events flow
//! to the TUI on the engine's own channel while a job runs.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

use super::integration::{self, CompactReport, ContextReport, HookEntry, PermissionsReport};
use super::sessions::{self, SessionPlace};
use super::shell::{self, ShellResult};
use crate::config::models;
use crate::context::{Gather, ProjectContext};
use crate::engine::SessionServices;
use crate::engine::{Engine, NoticeLevel, Session};
use crate::types::message::{ContentBlock, Message};

#[derive(Debug)]
pub enum Job {
    /// A prompt; `@path` mentions are resolved here, where the session's read state lives.
    Turn {
        text: String,
        cancel: CancellationToken,
    },
    Shell {
        command: String,
        cancel: CancellationToken,
    },
    /// `/init`: a turn asking the model to write the repository's instructions file.
    Init {
        cancel: CancellationToken,
    },
    /// `/name args`: a skill or custom command, expanded here (its shell snippets run through
    /// the permission check), then a turn.
    Slash {
        name: String,
        args: String,
        cancel: CancellationToken,
    },
    /// `# note`: appended to the project's memory.
    Remember {
        note: String,
    },
    Clear,
    /// The sessions `/resume` offers (the transcripts are read here, off the UI thread).
    ListSessions {
        project_dir: PathBuf,
        exclude: String,
    },
    Resume {
        path: PathBuf,
    },
    SetModel {
        model: String,
    },
    Compact {
        instructions: Option<String>,
        cancel: CancellationToken,
    },
    Context,
    Permissions,
    Hooks,
    /// `/rewind [N [code|conversation|preview]]`.
    Rewind {
        arg: Option<String>,
    },
    Mcp,
    /// `/mcp login NAME`: the browser sign-in (its address shown as a notice), then the
    /// server connected again; Esc cancels the wait.
    McpLogin {
        name: String,
        /// False with `--no-browser`: the address is only shown.
        open_browser: bool,
        cancel: CancellationToken,
    },
    McpPrompt {
        line: String,
        cancel: CancellationToken,
    },
}

/// A new session is in place (after `/clear` or `/resume`).
#[derive(Debug)]
pub struct NewSession {
    pub id: String,
    pub shared: Arc<SessionServices>,
    pub history: Vec<Message>,
    /// The resumed session's figures of earlier runs (tokens, cost, context).
    pub figures: super::transcript::resumed::Figures,
    pub warnings: Vec<String>,
}

#[derive(Debug)]
pub enum Reply {
    TurnDone,
    ShellDone(ShellResult),
    Sessions(Vec<sessions::SessionSummary>),
    Session(NewSession),
    /// The model in use now (as named, e.g. `ollama/qwen3-coder`), and what to tell the user.
    ModelSet {
        model: String,
        notes: Vec<String>,
    },
    Compacted(Result<CompactReport, String>),
    Context(Result<ContextReport, String>),
    Permissions(Result<PermissionsReport, String>),
    Hooks(Result<Vec<HookEntry>, String>),
    Rewound(Result<integration::Rewound, String>),
    /// `/mcp`: the servers as markdown.
    Mcp(String),
    Notice(NoticeLevel, String),
    Failed(String),
    /// An MCP server's elicitation request, for the form (not a job's end).
    Elicitation(super::elicit::FormPrompt),
    /// The engine's token and cost totals, sent before each job's reply (they include
    /// compaction requests and sub-agents, which send no `Assistant` event).
    Totals(crate::engine::session::Totals),
}

/// What the worker needs to build new sessions and system prompts.
#[derive(Clone)]
pub struct WorkerConfig {
    pub place: SessionPlace,
    pub system_prompt: Option<String>,
    pub append_system_prompt: Option<String>,
    /// Whether the first session continues an earlier one (SessionStart `resume`).
    pub resumed: bool,
    /// How `/model` finds providers and where it saves the choice (`None`: the script
    /// provider, where only the model id changes).
    pub models: Option<ModelSwitch>,
}

#[derive(Clone)]
pub struct ModelSwitch {
    pub catalog: Arc<crate::provider::catalog::Catalog>,
    /// Kept behind every model the user switches to.
    pub fallback: Option<String>,
    /// The user's settings file, where the choice is saved as the default.
    pub settings_path: PathBuf,
}

pub async fn run(
    mut engine: Engine,
    mut jobs: UnboundedReceiver<Job>,
    replies: UnboundedSender<Reply>,
    config: WorkerConfig,
) {
    engine
        .session_start(if config.resumed { "resume" } else { "startup" })
        .await;
    // The servers start while the interface is up; the first turn waits for them.
    if let Some(hub) = engine.mcp() {
        hub.elicitation().set(std::sync::Arc::new(super::elicit::TuiElicitor {
            replies: replies.clone(),
        }));
        hub.start_all().await;
        for line in crate::mcp::startup::problems(&hub) {
            engine.events().notice(NoticeLevel::Warning, line);
        }
        for name in crate::mcp::startup::needing_sign_in(&hub) {
            engine.events().notice(
                NoticeLevel::Info,
                format!("MCP server `{name}` needs you to sign in: type /mcp login {name}"),
            );
        }
    }
    while let Some(job) = jobs.recv().await {
        let reply = handle(&mut engine, job, &config).await;
        let _ = replies.send(Reply::Totals(engine.totals().clone()));
        if replies.send(reply).is_err() {
            break;
        }
    }
    engine.session_end("prompt_input_exit").await;
}

async fn handle(engine: &mut Engine, job: Job, config: &WorkerConfig) -> Reply {
    match job {
        Job::Turn { text, cancel } => {
            let mcp_text = text.clone();
            let Some(resolved) = engine.mentions().attach(text, &cancel).await else {
                engine.events().notice(
                    NoticeLevel::Warning,
                    "interrupted while attaching the mentioned files; nothing was sent",
                );
                return Reply::TurnDone;
            };
            let mut blocks = resolved.blocks;
            let mut notes = resolved.notes;
            if let Some(hub) = engine.mcp() {
                let attached = crate::mcp::mentions::resolve(&hub, &mcp_text, &cancel).await;
                blocks.extend(attached.blocks);
                notes.retain(|n| !attached.handled.iter().any(|h| n.starts_with(&format!("@{h}:"))));
                notes.extend(attached.notes);
            }
            for note in notes {
                engine.events().notice(NoticeLevel::Warning, note);
            }
            engine.run_turn(blocks, cancel).await;
            Reply::TurnDone
        }
        Job::Init { cancel } => {
            let text = super::commands::init::prompt(engine.cwd());
            engine.run_turn(vec![ContentBlock::text(text)], cancel).await;
            Reply::TurnDone
        }
        Job::Slash { name, args, cancel } => match engine.expand_slash_skill(&name, &args, &cancel).await {
            Ok(content) => {
                engine.run_turn(content, cancel).await;
                Reply::TurnDone
            }
            Err(e) => Reply::Failed(format!("/{name}: {e}")),
        },
        Job::Remember { note } => match engine.remember(&note) {
            Ok(file) => Reply::Notice(NoticeLevel::Info, format!("Saved to memory: {}", file.display())),
            Err(e) => Reply::Failed(e),
        },
        Job::Shell { command, cancel } => {
            let result = shell::run(&command, engine.cwd(), &cancel).await;
            engine
                .session
                .push_user(vec![ContentBlock::text(shell::context_text(&command, &result))]);
            Reply::ShellDone(result)
        }
        Job::Clear => match sessions::fresh(&config.place, engine.model(), Some(&engine.services())) {
            Ok(session) => {
                engine.session_end("clear").await;
                let new = replace_session(engine, session, Vec::new());
                engine.session_start("clear").await;
                Reply::Session(new)
            }
            Err(e) => Reply::Failed(format!("cannot start a new session: {e}")),
        },
        Job::ListSessions { project_dir, exclude } => Reply::Sessions(sessions::list(&project_dir, &exclude)),
        Job::Resume { path } => {
            match sessions::resume(&config.place, &path, engine.model(), Some(&engine.services())) {
                Ok((session, warnings)) => {
                    engine.session_end("resume").await;
                    let new = replace_session(engine, session, warnings);
                    engine.session_start("resume").await;
                    Reply::Session(new)
                }
                Err(e) => Reply::Failed(format!("cannot resume {}: {e}", path.display())),
            }
        }
        Job::SetModel { model } => match switch_model(engine, &model, config).await {
            Ok((spec, notes)) => {
                let home = dirs::home_dir();
                let project = ProjectContext::gather(&Gather {
                    cwd: engine.cwd(),
                    model: engine.model(),
                    home: home.as_deref(),
                    replace: config.system_prompt.as_deref(),
                    append: config.append_system_prompt.as_deref(),
                });
                engine.set_project(project);
                engine
                    .session
                    .log_event("model_changed", serde_json::json!({"model": spec}));
                Reply::ModelSet { model: spec, notes }
            }
            Err(e) => Reply::Failed(format!("/model {model}: {e}")),
        },
        Job::Compact { instructions, cancel } => Reply::Compacted(
            integration::compact(engine, instructions.as_deref(), &cancel)
                .await
                .map_err(|e| e.to_string()),
        ),
        Job::Context => Reply::Context(integration::context(engine).map_err(|e| e.to_string())),
        Job::Permissions => Reply::Permissions(integration::permissions(engine).map_err(|e| e.to_string())),
        Job::Hooks => Reply::Hooks(integration::hooks(engine).map_err(|e| e.to_string())),
        Job::Rewind { arg } => Reply::Rewound(integration::rewind(engine, arg.as_deref()).map_err(|e| e.to_string())),
        Job::Mcp => Reply::Mcp(integration::mcp(engine)),
        Job::McpLogin {
            name,
            open_browser,
            cancel,
        } => match engine.mcp() {
            Some(hub) => mcp_login(&hub, engine.events().clone(), &name, open_browser, &cancel).await,
            None => Reply::Failed("no MCP servers are configured".into()),
        },
        Job::McpPrompt { line, cancel } => {
            let expanded = match engine.mcp() {
                Some(hub) => hub.expand_prompt(&line).await,
                None => None,
            };
            match expanded {
                Some(Ok(text)) => {
                    engine.run_turn(vec![ContentBlock::text(text)], cancel).await;
                    Reply::TurnDone
                }
                Some(Err(e)) => Reply::Failed(e),
                None => Reply::Failed("no MCP servers are configured".into()),
            }
        }
    }
}

/// How long `/mcp login` waits for the browser to come back.
const LOGIN_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

async fn mcp_login(
    hub: &crate::mcp::McpHub,
    events: crate::types::events::EventSink,
    name: &str,
    open_browser: bool,
    cancel: &CancellationToken,
) -> Reply {
    let say = |line: &str| events.notice(NoticeLevel::Info, line);
    let login = crate::mcp::signin::login_in_session(hub, name, LOGIN_WAIT, open_browser, &say);
    tokio::select! {
        done = login => match done {
            Ok(text) => Reply::Notice(NoticeLevel::Info, text),
            Err(e) => Reply::Failed(format!("/mcp login {name}: {e}")),
        },
        _ = cancel.cancelled() => Reply::Notice(
            NoticeLevel::Warning,
            format!("Sign-in to MCP server `{name}` cancelled; nothing was changed."),
        ),
    }
}

/// Moves the engine to another model; with a catalog, possibly to another provider, and the
/// choice is saved as the default. Returns the model as named and notes for the user.
async fn switch_model(
    engine: &mut Engine,
    wanted: &str,
    config: &WorkerConfig,
) -> Result<(String, Vec<String>), String> {
    if let Some(why) = engine.model_refused(wanted) {
        return Err(why);
    }
    let Some(switch) = &config.models else {
        let model = models::resolve_alias(wanted);
        let provider = engine.provider();
        engine.switch_model(provider, model.clone());
        return Ok((model, Vec::new()));
    };
    let resolved = match &switch.fallback {
        Some(f) if f != wanted => switch.catalog.resolve_with_fallback(Some(wanted), f),
        _ => switch.catalog.resolve(Some(wanted)),
    }
    .map_err(|e| e.to_string())?;
    let mut notes = Vec::new();
    if crate::launch::model::should_ask(
        &resolved.model,
        &resolved.endpoint,
        resolved.kind,
        !engine.window_from_model(),
    ) {
        let probe = crate::provider::probe::context_window(&resolved.endpoint, &resolved.model).await;
        crate::launch::model::learn(&resolved.model, &probe, &mut notes);
        if models::info(&resolved.model).source == models::Source::Default && engine.window_from_model() {
            notes.push(crate::launch::model::unknown_window_note(&resolved.model, true));
        }
    }
    engine.switch_model(resolved.provider, resolved.model);
    match models::save_default(&switch.settings_path, &resolved.spec) {
        Ok(()) => notes.push(format!(
            "Saved as the default model in {}.",
            switch.settings_path.display()
        )),
        Err(e) => notes.push(format!("Not saved as the default: {e}")),
    }
    Ok((resolved.spec, notes))
}

/// Swaps in a new session (built from the old one's services, so the permission mode the
/// user chose and the startup decisions stay). What the old session left running (background
/// shells and sub-agents) ends with it.
fn replace_session(engine: &mut Engine, session: Session, mut warnings: Vec<String>) -> NewSession {
    engine.end_processes();
    engine.swap_session(session);
    // The new session gets its own spawn budget (`agents.maxTotal` counts per session) and
    // its own id in skills (`${CLAUDE_SESSION_ID}`).
    if engine.subagent_runner().is_some()
        && let Err(e) = engine.install_subagents()
    {
        warnings.push(format!("sub-agents are not available in the new session: {e}"));
    }
    if engine.has_skill_runner() {
        engine.install_skills(engine.skills());
    }
    let resumed = super::transcript::resumed::read(&engine.transcript_path());
    NewSession {
        id: engine.session_id().to_string(),
        shared: engine.services(),
        // What the screen shows: the whole conversation of a compacted session.
        history: resumed.conversation.unwrap_or_else(|| engine.history().to_vec()),
        figures: resumed.figures,
        warnings,
    }
}
