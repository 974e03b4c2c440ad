//! Turns command-line arguments into a ready engine (shared by headless mode and the TUI).

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;

use super::args::Cli;
use crate::compact::CompactSettings;
use crate::compact::record::ToolLog;
use crate::config::settings::{Settings, SettingsError};
use crate::config::{models, paths};
use crate::context::{Gather, ProjectContext, tokens};
use crate::engine::{Engine, EngineConfig, EngineEvent, Session};
use crate::hooks::{HookConfig, HookConfigError, Hooks};
use crate::permissions::Mode;
use crate::permissions::config::{self as permission_config, CliPermissions, PermissionConfigError};
use crate::provider::ProviderError;
use crate::provider::catalog::Catalog;
use crate::sandbox::{SandboxConfig, SandboxMode};
use crate::tools::builtin_tools;
use crate::tools::registry::{RegistryError, ToolRegistry};
use crate::transcript::{self, Transcript, TranscriptError};

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Permissions(#[from] PermissionConfigError),
    #[error(transparent)]
    Hooks(#[from] HookConfigError),
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
    /// Whether this continues an earlier session (SessionStart source `resume`).
    pub resumed: bool,
    /// Things to tell the user once at startup (unreadable transcript lines, sandbox limits).
    pub warnings: Vec<String>,
    /// The model as the user named it (`ollama/qwen3-coder`).
    pub model_spec: String,
    /// Builds providers for `/model` switches (`None` with the script provider).
    pub catalog: Option<Arc<Catalog>>,
    /// The fallback model, kept across `/model` switches.
    pub fallback_model: Option<String>,
}

pub fn prepare(cli: &Cli) -> Result<Prepared, SetupError> {
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| SetupError::Invalid(format!("cannot determine the working directory: {e}")))?;
    let home =
        paths::keel_home().ok_or_else(|| SetupError::Invalid("cannot find a home directory; set KEEL_HOME".into()))?;
    if cli.debug {
        crate::debug::enable();
    }
    let user_home = dirs::home_dir();
    let settings = Settings::load(user_home.as_deref(), &home, &cwd, cli.settings.as_deref())?;
    let permissions = permission_config::build(
        &settings,
        &CliPermissions {
            allowed_tools: cli.allowed_tools.clone(),
            disallowed_tools: cli.disallowed_tools.clone(),
            add_dirs: cli.add_dir.clone(),
            mode: permission_mode(cli)?,
        },
        &cwd,
        user_home.as_deref(),
        &builtin_tools().iter().map(|t| t.name()).collect::<Vec<_>>(),
    )?;
    let permission_mode = permissions.mode;
    let mut warnings = permissions.warnings.clone();
    let sandbox_config = SandboxConfig::from_settings(&settings, cli.sandbox)?;

    let (context_window, compact) = context_settings(&settings)?;
    let choice = super::model::choose(cli, &settings, context_window.is_some())?;
    warnings.extend(choice.warnings.iter().cloned());
    let provider = choice.provider.clone();
    let model = choice.model.clone();

    let project_dir = paths::project_dir(&home, &cwd);
    let (session_id, transcript_path, history, resume_warnings) = resolve_session(cli, &home, &project_dir)?;
    warnings.extend(resume_warnings);
    let session_dir = project_dir.join(&session_id);
    let (sandbox_mode, sandbox_warning) = SandboxMode::decide(
        &sandbox_config,
        permissions.authorizer.working_dirs(),
        &session_dir.join("tmp"),
    );
    warnings.extend(sandbox_warning);
    let transcript = if cli.no_session_persistence {
        Transcript::disabled(transcript_path)
    } else {
        Transcript::create(&transcript_path)?
    };
    let tool_log = if cli.no_session_persistence {
        ToolLog::in_memory()
    } else {
        ToolLog::open(session_dir.join("tool-log.jsonl"))
    };
    let mut session = Session::new(session_id, cwd.clone(), session_dir, transcript);
    session.tool_log = tool_log;
    session.shared.set_mode(permission_mode);
    let authorizer = Arc::new(permissions.authorizer);
    if let Some(shared) = std::sync::Arc::get_mut(&mut session.shared) {
        let guard = authorizer.clone();
        shared.read_guard = crate::tools::ReadGuard::new(move |p| guard.read_denied(p));
        shared.sandbox = sandbox_mode;
        shared.extra_dirs = authorizer.working_dirs().iter().skip(1).cloned().collect();
    }
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

    let mut registry = ToolRegistry::new(builtin_tools())?;
    if let Some(list) = &cli.tools {
        let wanted: Vec<&str> = list
            .split([',', ' '])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if list.trim() != "default" {
            for w in &wanted {
                if registry.get(w).is_none() {
                    return Err(SetupError::Invalid(format!(
                        "--tools names `{w}`, which is not a built-in tool (available: {})",
                        registry.names().join(", ")
                    )));
                }
            }
            registry.retain(|n| wanted.contains(&n));
        }
    }
    registry.retain(|n| !authorizer.denies_whole_tool(n));
    let registry = Arc::new(registry);
    let info = models::info(&model);
    let home_dir = dirs::home_dir();
    let project = ProjectContext::gather(&Gather {
        cwd: &cwd,
        model: &model,
        home: home_dir.as_deref(),
        replace: cli.system_prompt.as_deref(),
        append: cli.append_system_prompt.as_deref(),
    });
    let config = EngineConfig {
        system: project.system_blocks(),
        model,
        max_tokens: info.max_output,
        max_turns: cli.max_turns,
        interactive: !cli.print,
        context_window,
        compact,
    };
    let hook_config = HookConfig::from_settings(&settings)?;
    warnings.extend(hook_config.warnings.iter().cloned());
    let hooks = Hooks::new(hook_config, cwd.clone(), session.id.clone(), session.transcript.clone());
    let (mut engine, events) = Engine::new(config, provider, registry, authorizer, Arc::new(hooks), session);
    engine.set_project(project);
    engine.install_subagents()?;
    Ok(Prepared {
        engine,
        events,
        permission_mode,
        warnings,
        resumed,
        model_spec: choice.spec,
        catalog: choice.catalog,
        fallback_model: choice.fallback,
    })
}

/// The context window and compaction settings: the environment (`context_env`) wins over the
/// `contextWindow` and `autoCompactEnabled` settings.
fn context_settings(settings: &Settings) -> Result<(Option<u64>, CompactSettings), SetupError> {
    let (mut window, mut compact) = context_env().map_err(SetupError::Invalid)?;
    if window.is_none()
        && let Some((v, layer)) = settings.scalar("contextWindow")
    {
        let tokens = v.as_u64().filter(|t| *t > 0).ok_or_else(|| {
            SetupError::Invalid(format!(
                "{}: contextWindow must be a positive number of tokens, found {v}",
                layer.label()
            ))
        })?;
        window = Some(tokens);
    }
    if std::env::var_os("KEEL_DISABLE_AUTO_COMPACT").is_none()
        && let Some(enabled) = settings.flag(&["autoCompactEnabled"])?
    {
        compact.auto = enabled;
    }
    Ok((window, compact))
}

/// The `keel context` listing for the current directory (no provider or session needed).
pub fn context_report(cli: &Cli) -> Result<String, SetupError> {
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| SetupError::Invalid(format!("cannot determine the working directory: {e}")))?;
    let model = cli
        .model
        .clone()
        .or_else(|| std::env::var("ANTHROPIC_MODEL").ok().filter(|m| !m.trim().is_empty()))
        .map(|m| models::resolve_alias(&m))
        .unwrap_or_else(|| models::DEFAULT_MODEL.to_string());
    let (context_window, compact) = context_env().map_err(SetupError::Invalid)?;
    let info = models::info(&model);
    let window = tokens::Window::new(info.context_window, context_window, info.max_output);
    let home_dir = dirs::home_dir();
    let project = ProjectContext::gather(&Gather {
        cwd: &cwd,
        model: &model,
        home: home_dir.as_deref(),
        replace: cli.system_prompt.as_deref(),
        append: cli.append_system_prompt.as_deref(),
    });
    let registry = ToolRegistry::new(builtin_tools())?;
    Ok(crate::context::report::render(&crate::context::report::Report {
        model: &model,
        window,
        threshold: window.threshold(compact.threshold_pct),
        auto: compact.auto,
        project: &project,
        tools: registry.definitions(),
    }))
}

/// The context window override and compaction settings from the environment:
/// `KEEL_CONTEXT_WINDOW` (tokens), `KEEL_AUTOCOMPACT_PCT` (1-100, of the input budget) and
/// `KEEL_DISABLE_AUTO_COMPACT=1`. The `contextWindow` setting, when set, applies under the
/// environment variable.
pub fn context_env() -> Result<(Option<u64>, CompactSettings), String> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let window = var("KEEL_CONTEXT_WINDOW")
        .map(|raw| tokens::parse_window("KEEL_CONTEXT_WINDOW", &raw))
        .transpose()?;
    let mut compact = CompactSettings::default();
    if let Some(raw) = var("KEEL_AUTOCOMPACT_PCT") {
        compact.threshold_pct = match raw.trim().trim_end_matches('%').parse::<u8>() {
            Ok(p) if (1..=100).contains(&p) => p,
            _ => {
                return Err(format!(
                    "KEEL_AUTOCOMPACT_PCT must be a percentage from 1 to 100, got `{raw}`"
                ));
            }
        };
    }
    if let Some(raw) = var("KEEL_DISABLE_AUTO_COMPACT") {
        compact.auto = !matches!(raw.trim(), "1" | "true" | "yes");
    }
    Ok((window, compact))
}

fn permission_mode(cli: &Cli) -> Result<Option<Mode>, SetupError> {
    if cli.dangerously_skip_permissions {
        return Ok(Some(Mode::BypassPermissions));
    }
    match cli.permission_mode.as_deref() {
        None => Ok(None),
        Some(m) => Mode::parse(m).map(Some).ok_or_else(|| {
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
