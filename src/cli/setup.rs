//! Turns command-line arguments into a ready engine (shared by headless mode and the TUI).

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;

use super::args::{Cli, InputFormat};
use crate::compact::CompactSettings;
use crate::compact::record::ToolLog;
use crate::config::settings::{Scope, Settings, SettingsError};
use crate::config::trust::{self, ProjectTrust};
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
    /// The session's MCP servers (planned, not started: front ends start them).
    pub mcp: Arc<crate::mcp::McpHub>,
    /// Project MCP servers waiting for the user's approval (interactive mode only).
    pub mcp_pending: Vec<crate::mcp::setup::PendingApproval>,
    /// What the session takes from the project's own settings (see `config::trust`).
    pub trust: ProjectTrust,
    /// The model as the user named it (`ollama/qwen3-coder`).
    pub model_spec: String,
    /// Builds providers for `/model` switches (`None` with the script provider).
    pub catalog: Option<Arc<Catalog>>,
    /// The fallback model, kept across `/model` switches.
    pub fallback_model: Option<String>,
}

/// Setup for a run that asks no trust question: headless runs apply project settings as they
/// are; an interactive one without a recorded answer treats the folder as untrusted.
pub fn prepare(cli: &Cli) -> Result<Prepared, SetupError> {
    // A program driving keel over stream-json is headless too.
    let trust = if cli.print || cli.programs.input_format == InputFormat::StreamJson {
        ProjectTrust::Headless
    } else {
        let trusted = std::env::current_dir()
            .and_then(|d| d.canonicalize())
            .ok()
            .zip(paths::keel_home())
            .is_some_and(|(cwd, home)| trust::is_trusted(&home, &cwd));
        if trusted {
            ProjectTrust::Trusted
        } else {
            ProjectTrust::Untrusted
        }
    };
    prepare_with(cli, trust)
}

pub fn prepare_with(cli: &Cli, trust: ProjectTrust) -> Result<Prepared, SetupError> {
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| SetupError::Invalid(format!("cannot determine the working directory: {e}")))?;
    let home =
        paths::keel_home().ok_or_else(|| SetupError::Invalid("cannot find a home directory; set KEEL_HOME".into()))?;
    crate::checkpoint::check_env().map_err(SetupError::Invalid)?;
    crate::fsutil::stale::start(&home);
    let user_home = dirs::home_dir();
    let mut settings = Settings::load(user_home.as_deref(), &home, &cwd, cli.settings.as_deref())?;
    if let Some(list) = &cli.programs.setting_sources {
        let scopes = setting_sources(list)?;
        settings
            .layers
            .retain(|l| l.scope == Scope::Cli || scopes.contains(&l.scope));
    }
    let ignored = if trust == ProjectTrust::Untrusted {
        trust::restrict(&mut settings, &cwd)
    } else {
        Vec::new()
    };
    let mut permissions = permission_config::build(
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
    if !ignored.is_empty() {
        warnings.push(format!(
            "this folder is not trusted, so keel ignores what its settings would run or allow: {}. Trust it \
             when keel asks at the next start to use them.",
            ignored.join("; ")
        ));
    }
    let extensions = super::extensions::load(
        cli,
        &mut settings,
        &cwd,
        user_home.as_deref(),
        &home,
        &permissions.authorizer.working_dirs()[1..],
    )?;
    extensions.grant_memory(&mut permissions.authorizer)?;
    warnings.extend(extensions.warnings.iter().cloned());
    let sandbox_config = SandboxConfig::from_settings(&settings, cli.sandbox)?;
    let output_cap = crate::sandbox::contain::output_cap(&settings)?;

    let (context_window, compact) = context_settings(&settings)?;
    let choice = super::model::choose(cli, &settings, context_window.is_some())?;
    warnings.extend(choice.warnings.iter().cloned());
    let provider = choice.provider.clone();
    let model = choice.model.clone();

    let project_dir = paths::project_dir(&home, &cwd);
    let (session_id, transcript_path, history, resume_warnings) = resolve_session(cli, &home, &project_dir)?;
    // --fork-session: the earlier conversation continues under a new id; its file stays as it was.
    let (session_id, transcript_path) = if cli.programs.fork_session && history.is_some() {
        let id = uuid::Uuid::new_v4().to_string();
        let path = project_dir.join(format!("{id}.jsonl"));
        (id, path)
    } else {
        (session_id, transcript_path)
    };
    warnings.extend(resume_warnings);
    let session_dir = project_dir.join(&session_id);
    if let Some(log) = crate::debug::attach_session(&session_dir) {
        tracing::info!(id = %session_id, log = %log.display(), resumed = history.is_some(), "session");
    }
    let (sandbox_mode, sandbox_warning) = SandboxMode::decide(
        &sandbox_config,
        &permissions.authorizer.working_dirs(),
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
    let mut authorizer = permissions.authorizer;
    authorizer.set_jail_probe(|| crate::sandbox::capabilities().jail);
    let authorizer = Arc::new(authorizer);
    if let Some(shared) = std::sync::Arc::get_mut(&mut session.shared) {
        let guard = authorizer.clone();
        shared.read_guard = crate::tools::ReadGuard::new(move |p| guard.read_denied(p));
        let rules = authorizer.clone();
        shared.confiner = Some(Arc::new(crate::sandbox::Confiner::new(
            authorizer.working_dirs().to_vec(),
            user_home.clone(),
            shared.session_dir.join("tmp"),
            move |p| rules.read_denied_by_rule(p),
        )));
        shared.sandbox = sandbox_mode;
        shared.output_cap = output_cap;
        shared.set_extra_dirs(authorizer.working_dirs().into_iter().skip(1).collect());
    }
    let resumed = history.is_some();
    let forked = resumed && cli.programs.fork_session;
    let mut loss = None;
    if let Some((h, todos, unsaved)) = history {
        if forked {
            // The fork's own file starts with the conversation it continues.
            session.write_meta(&model);
            for m in &h {
                if let Err(e) = session.transcript.message(m) {
                    warnings.push(e.to_string());
                    break;
                }
            }
        }
        session.set_history(h);
        session.restore_todos(todos);
        loss = unsaved;
    } else {
        session.write_meta(&model);
    }
    if resumed {
        session.log_event(
            if forked { "forked" } else { "resumed" },
            serde_json::json!({"model": model}),
        );
        session.log_loss(loss.as_ref());
    }

    let structured_schema = match &cli.programs.json_schema {
        None => None,
        Some(raw) => Some(
            serde_json::from_str::<serde_json::Value>(raw)
                .map_err(|e| SetupError::Invalid(format!("--json-schema is not valid JSON: {e}")))?,
        ),
    };
    let mut registry = extensions.add_tools(ToolRegistry::new(builtin_tools())?)?;
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
    let (replace, append) = system_prompt_texts(cli)?;
    let mut project = ProjectContext::gather(&Gather {
        cwd: &cwd,
        model: &model,
        home: home_dir.as_deref(),
        replace: replace.as_deref(),
        append: append.as_deref(),
    });
    project.instructions.include_dirs(&authorizer.working_dirs()[1..]);
    warnings.extend(project.instructions.skipped_notices());
    // Headless runs ask nobody, unless the driving program answers (`--permission-prompt-tool stdio`).
    let headless = cli.print || cli.programs.input_format == InputFormat::StreamJson;
    let program_answers = cli.programs.permission_prompt_tool.as_deref() == Some("stdio");
    if let Some(b) = cli.programs.max_budget_usd
        && !(b.is_finite() && b > 0.0)
    {
        return Err(SetupError::Invalid(format!(
            "--max-budget-usd must be a positive amount of US dollars, got {b}"
        )));
    }
    extensions.decorate(&mut project, &registry, context_window.unwrap_or(info.context_window));
    let (verification, verification_warnings) =
        crate::evidence::Config::from_settings(&settings, project.instructions.all().map(|f| f.content.as_str()))?;
    warnings.extend(verification_warnings);
    if let Some(shared) = Arc::get_mut(&mut session.shared) {
        shared.evidence = Arc::new(crate::evidence::Evidence::new(
            &cwd,
            &shared.session_dir,
            verification,
            !cli.no_session_persistence,
        ));
    }
    let config = EngineConfig {
        system: project.system_blocks(),
        model,
        max_tokens: info.max_output,
        max_turns: cli.max_turns,
        interactive: !headless || program_answers,
        context_window,
        compact,
        max_budget_usd: cli.programs.max_budget_usd,
        reasoning: reasoning(cli, info.max_output)?,
    };
    let mut hook_config = HookConfig::from_settings(&settings)?;
    extensions.plugins.tag_hooks(&mut hook_config);
    warnings.extend(hook_config.warnings.iter().cloned());
    let hooks = Hooks::new(hook_config, cwd.clone(), session.id.clone(), session.transcript.clone());
    let window = tokens::Window::new(info.context_window, context_window, info.max_output);
    let denies = authorizer.clone();
    let mcp = crate::mcp::setup::build(&crate::mcp::setup::McpInputs {
        cli_configs: &cli.mcp_config,
        strict: cli.strict_mcp_config,
        settings: &settings,
        cwd: &cwd,
        home: user_home.as_deref(),
        keel_home: &home,
        session_dir: &session.shared.session_dir,
        context_window: window.total,
        interactive: !cli.print,
        hidden: Arc::new(move |name| denies.denies_whole_tool(name)),
        project_trusted: trust.allows_project_commands(),
        plugin_servers: extensions.plugins.mcp_servers(),
    })
    .map_err(SetupError::Invalid)?;
    warnings.extend(mcp.notices);
    mcp.hub.attach(&registry);
    hooks.set_env_file(session.shared.hook_env_file());
    let (mut engine, events) = Engine::new(config, provider, registry, authorizer, Arc::new(hooks), session);
    if let Some(shared) = Arc::get_mut(&mut engine.session.shared) {
        shared.mcp = Some(mcp.hub.clone());
    }
    engine.set_project(project);
    extensions.install(&mut engine)?;
    if let Some(schema) = structured_schema {
        crate::headless::protocol::control::require_structured_output(&mut engine, schema)
            .map_err(|e| SetupError::Invalid(format!("--json-schema: {e}")))?;
    }
    Ok(Prepared {
        engine,
        events,
        permission_mode,
        warnings,
        resumed,
        mcp: mcp.hub,
        mcp_pending: mcp.pending,
        trust,
        model_spec: choice.spec,
        catalog: choice.catalog,
        fallback_model: choice.fallback,
    })
}

/// `--max-thinking-tokens`, `--thinking` and `--effort` as request parameters.
fn reasoning(cli: &Cli, max_tokens: u32) -> Result<crate::provider::Reasoning, SetupError> {
    use crate::provider::Thinking;
    let p = &cli.programs;
    let budget = |n: u32| -> Result<Thinking, SetupError> {
        if n == 0 {
            return Ok(Thinking::Disabled);
        }
        if n < 1024 || n >= max_tokens {
            return Err(SetupError::Invalid(format!(
                "--max-thinking-tokens must be 0 (off) or from 1024 to below the model's output limit of {max_tokens}, got {n}"
            )));
        }
        Ok(Thinking::Enabled { budget_tokens: n })
    };
    let thinking = match (p.thinking.as_deref(), p.max_thinking_tokens) {
        (None, None) => None,
        (None, Some(n)) | (Some("enabled"), Some(n)) => Some(budget(n)?),
        (Some("enabled"), None) => Some(budget((max_tokens / 2).min(16_000))?),
        (Some("adaptive"), _) => Some(Thinking::Adaptive),
        (Some("disabled"), _) => Some(Thinking::Disabled),
        (Some(other), _) => {
            return Err(SetupError::Invalid(format!(
                "--thinking must be enabled, adaptive or disabled, got `{other}`"
            )));
        }
    };
    let effort = match p.effort.as_deref() {
        None => None,
        Some(e @ ("low" | "medium" | "high" | "xhigh" | "max")) => Some(e.to_string()),
        Some(other) => {
            return Err(SetupError::Invalid(format!(
                "--effort must be low, medium, high, xhigh or max, got `{other}`"
            )));
        }
    };
    Ok(crate::provider::Reasoning { thinking, effort })
}

/// `--setting-sources user,project,local`: which settings files count.
fn setting_sources(list: &str) -> Result<Vec<Scope>, SetupError> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| match s {
            "user" => Ok(Scope::User),
            "project" => Ok(Scope::Project),
            "local" => Ok(Scope::Local),
            other => Err(SetupError::Invalid(format!(
                "--setting-sources: unknown source `{other}`; use user, project and/or local"
            ))),
        })
        .collect()
}

/// The system prompt replacement and addition, from the flags or the files they name.
pub fn system_prompt_texts(cli: &Cli) -> Result<(Option<String>, Option<String>), SetupError> {
    let read = |flag: &str, path: &std::path::Path| {
        std::fs::read_to_string(path)
            .map_err(|e| SetupError::Invalid(format!("{flag}: cannot read {}: {e}", path.display())))
    };
    let replace = match &cli.programs.system_prompt_file {
        Some(p) => Some(read("--system-prompt-file", p)?),
        None => cli.system_prompt.clone(),
    };
    let append = match &cli.programs.append_system_prompt_file {
        Some(p) => Some(read("--append-system-prompt-file", p)?),
        None => cli.append_system_prompt.clone(),
    };
    Ok((replace, append))
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
        tools: registry.tool_set().as_slice(),
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
    Option<(
        Vec<crate::message::Message>,
        Vec<crate::tools::Todo>,
        Option<transcript::UnsavedRecord>,
    )>,
    Vec<String>,
);

fn resolve_session(cli: &Cli, home: &std::path::Path, project_dir: &std::path::Path) -> Result<Resolved, SetupError> {
    // `--resume` without an id opens the picker in interactive mode; the session starts fresh.
    let path = if let Some(id) = cli.resume.as_deref().filter(|id| !id.is_empty()) {
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
    let warnings = loaded.warnings(&path);
    Ok((id, path, Some((loaded.history, loaded.todos, loaded.unsaved)), warnings))
}
