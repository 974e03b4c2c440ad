//! Turns command-line arguments into a ready engine (shared by headless mode and the TUI).

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;

use super::args::{Cli, ProviderKind};
use crate::config::{models, paths};
use crate::context::system_prompt;
use crate::engine::{Engine, EngineConfig, EngineEvent, Session};
use crate::permissions::Mode;
use crate::provider::anthropic::{AnthropicConfig, AnthropicProvider};
use crate::provider::retry::RetryPolicy;
use crate::provider::script::ScriptProvider;
use crate::provider::{Provider, ProviderError};
use crate::tools::builtin_tools;
use crate::tools::registry::{RegistryError, ToolRegistry};
use crate::transcript::{self, Transcript, TranscriptError};

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("{0}")]
    Invalid(String),
}

pub struct Prepared {
    pub engine: Engine,
    pub events: UnboundedReceiver<EngineEvent>,
    pub permission_mode: Mode,
    /// Lines of the resumed transcript that could not be read.
    pub resume_warnings: Vec<String>,
}

pub fn prepare(cli: &Cli) -> Result<Prepared, SetupError> {
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| SetupError::Invalid(format!("cannot determine the working directory: {e}")))?;
    let home =
        paths::keel_home().ok_or_else(|| SetupError::Invalid("cannot find a home directory; set KEEL_HOME".into()))?;
    let permission_mode = permission_mode(cli)?;

    let (provider, script_model): (Arc<dyn Provider>, Option<String>) = match cli.provider {
        ProviderKind::Anthropic => {
            if cli.script.is_some() {
                return Err(SetupError::Invalid("--script needs --provider script".into()));
            }
            let retry = RetryPolicy::from_env().map_err(SetupError::Invalid)?;
            let config = AnthropicConfig::from_env()?;
            (
                Arc::new(AnthropicProvider::new(config, retry, cli.include_partial_messages)?),
                None,
            )
        }
        ProviderKind::Script => {
            let path = cli
                .script
                .as_ref()
                .ok_or_else(|| SetupError::Invalid("--provider script needs --script FILE".into()))?;
            let p = ScriptProvider::load(path)?;
            let model = p.model().to_string();
            (Arc::new(p), Some(model))
        }
    };
    let model = cli
        .model
        .clone()
        .or_else(|| std::env::var("ANTHROPIC_MODEL").ok().filter(|m| !m.trim().is_empty()))
        .map(|m| models::resolve_alias(&m))
        .or(script_model)
        .unwrap_or_else(|| models::DEFAULT_MODEL.to_string());

    let project_dir = paths::project_dir(&home, &cwd);
    let (session_id, transcript_path, history, resume_warnings) = resolve_session(cli, &home, &project_dir)?;
    let session_dir = project_dir.join(&session_id);
    let transcript = if cli.no_session_persistence {
        Transcript::disabled(transcript_path)
    } else {
        Transcript::create(&transcript_path)?
    };
    let mut session = Session::new(session_id, cwd.clone(), session_dir, transcript);
    session.shared.set_mode(permission_mode);
    let resumed = history.is_some();
    if let Some((h, todos)) = history {
        session.set_history(h);
        session.restore_todos(todos);
    } else {
        session.write_meta(&model);
    }
    if resumed {
        session.log_event("resumed", serde_json::json!({"model": model}));
    }

    let registry = Arc::new(ToolRegistry::new(builtin_tools())?);
    let info = models::info(&model);
    let config = EngineConfig {
        system: system_prompt::build(
            &cwd,
            &model,
            cli.system_prompt.as_deref(),
            cli.append_system_prompt.as_deref(),
        ),
        model,
        max_tokens: info.max_output,
        max_turns: cli.max_turns,
    };
    let (engine, events) = Engine::new(config, provider, registry, session);
    Ok(Prepared {
        engine,
        events,
        permission_mode,
        resume_warnings,
    })
}

fn permission_mode(cli: &Cli) -> Result<Mode, SetupError> {
    if cli.dangerously_skip_permissions {
        return Ok(Mode::BypassPermissions);
    }
    match cli.permission_mode.as_deref() {
        None => Ok(Mode::Default),
        Some(m) => Mode::parse(m).ok_or_else(|| {
            SetupError::Invalid(format!(
                "unknown permission mode `{m}`; use one of: {}",
                Mode::ALL.map(Mode::as_str).join(", ")
            ))
        }),
    }
}

/// Session id, transcript path, resumed history and task list, warnings.
type Resolved = (
    String,
    PathBuf,
    Option<(Vec<crate::message::Message>, Vec<crate::tools::Todo>)>,
    Vec<String>,
);

fn resolve_session(cli: &Cli, home: &std::path::Path, project_dir: &std::path::Path) -> Result<Resolved, SetupError> {
    let path = if let Some(id) = &cli.resume {
        Some(transcript::find_session(home, project_dir, id)?)
    } else if cli.continue_session {
        Some(transcript::latest_in(project_dir)?)
    } else {
        None
    };
    let Some(path) = path else {
        let id = match &cli.session_id {
            Some(id) => uuid::Uuid::parse_str(id)
                .map_err(|_| SetupError::Invalid(format!("--session-id must be a UUID, got `{id}`")))?
                .to_string(),
            None => uuid::Uuid::new_v4().to_string(),
        };
        let transcript_path = project_dir.join(format!("{id}.jsonl"));
        if transcript_path.exists() {
            return Err(SetupError::Invalid(format!(
                "session {id} already exists; resume it with --resume {id}"
            )));
        }
        return Ok((id, transcript_path, None, Vec::new()));
    };
    let loaded = transcript::load(&path)?;
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .map(str::to_string)
        .ok_or_else(|| SetupError::Invalid(format!("odd transcript file name {}", path.display())))?;
    let mut warnings = Vec::new();
    if !loaded.bad_lines.is_empty() {
        warnings.push(format!(
            "transcript {}: skipped {} unreadable line(s) ({})",
            path.display(),
            loaded.bad_lines.len(),
            loaded
                .bad_lines
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if loaded.repaired_calls > 0 {
        warnings.push(format!(
            "transcript {}: {} tool call(s) had no result (the session ended mid-turn); they are marked interrupted",
            path.display(),
            loaded.repaired_calls
        ));
    }
    Ok((id, path, Some((loaded.history, loaded.todos)), warnings))
}
