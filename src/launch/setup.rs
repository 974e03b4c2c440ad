//! Turns command-line arguments into a ready engine (shared by headless mode and the TUI).

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;

use super::options::{InputFormat, Options};
use super::place::Place;
pub use super::values::{context_report, system_prompt_texts};
use super::values::{context_settings, permission_mode, reasoning, setting_sources};
use crate::compact::CompactSettings;
use crate::compact::record::ToolLog;
use crate::config::precedence::{self, Weigh};
use crate::config::settings::{Scope, Settings, SettingsError};
use crate::config::trust::{self, ProjectTrust};
use crate::config::{models, paths};
use crate::context::{Gather, ProjectContext, tokens};
use crate::engine::{Engine, EngineConfig, EngineEvent, Session, SessionServices};
use crate::hooks::{HookConfig, HookConfigError, Hooks};
use crate::permissions::Mode;
use crate::permissions::config::{self as permission_config, CliPermissions, PermissionConfigError};
use crate::provider::ProviderError;
use crate::provider::catalog::Catalog;
use crate::sandbox::{SandboxConfig, SandboxMode};
use crate::tools::registry::{RegistryError, ToolRegistry};
use crate::tools::{builtin_tools, builtin_tools_with};
use crate::transcript::{Transcript, TranscriptError};

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
    /// The model as the user named it (`ollama/qwen3-coder`).
    pub model_spec: String,
    /// Builds providers for `/model` switches (`None` with the script provider).
    pub catalog: Option<Arc<Catalog>>,
    /// The fallback model, kept across `/model` switches.
    pub fallback_model: Option<String>,
}

/// Setup for a run that asks no trust question: headless runs apply project settings as they
/// are; an interactive one without a recorded answer treats the folder as untrusted.
pub fn prepare(cli: &Options) -> Result<Prepared, SetupError> {
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

pub fn prepare_with(cli: &Options, trust: ProjectTrust) -> Result<Prepared, SetupError> {
    let base = locate()?;
    let (mut settings, mut warnings) = load_settings(cli, &base, trust)?;
    log_provenance(cli, &settings);
    let (authorizer, permission_mode, extensions) = permissions(cli, &base, &mut settings, trust, &mut warnings)?;
    // Checked before the model is chosen, so a bad setting is named before a bad endpoint.
    let shell = ShellSettings::from(cli, &settings, extensions.handed_to_commands())?;
    let (context_window, compact) = context_settings(&settings)?;
    let choice = super::model::choose(cli, &settings, context_window.is_some())?;
    warnings.extend(choice.warnings.iter().cloned());
    let place = session_place(cli, &base, &mut warnings)?;
    // Checked where it always was: after the session is found, before the tools are.
    let schema = output_schema(cli)?;
    let registry = Arc::new(tool_registry(cli, &settings, &choice, &extensions, &authorizer)?);
    let info = models::info(&choice.model);
    let mut project = project_context(cli, &base, &choice.model, &authorizer, &mut warnings)?;
    extensions.decorate(&mut project, &registry, context_window.unwrap_or(info.context_window));
    let window = tokens::Window::new(info.context_window, context_window, info.max_output);
    let inputs = Inputs {
        cli,
        base: &base,
        settings: &settings,
        authorizer: &authorizer,
    };
    let mcp = mcp_servers(&inputs, &place, &extensions, trust, window.total)?;
    warnings.extend(mcp.notices.iter().cloned());
    mcp.hub.attach(&registry);
    let lsp = crate::tools::lsp::config_from(
        settings.scalar("languageServers").map(|(v, _)| v),
        trust != ProjectTrust::Untrusted,
    )
    .map_err(SetupError::Invalid)?;
    let lsp = Arc::new(crate::tools::lsp::Lsp::new(lsp, &base.cwd).with_working_dirs(&authorizer.working_dirs()));
    let (services, service_warnings) =
        session_services(&inputs, shell, &place, &project, (&mcp.hub, lsp), permission_mode)?;
    warnings.extend(service_warnings);
    let (session, resumed) = open_session(cli, place, services, &choice.model, &mut warnings)?;
    let config = engine_config(cli, &project, &choice.model, context_window, compact)?;
    let hooks = session_hooks(&settings, &extensions, &base, &session, &config, &mut warnings)?;
    let (mut engine, events) = Engine::new(config, choice.provider.clone(), registry, authorizer, hooks, session);
    engine.set_project(project);
    engine.watch_settings(Settings::files(base.user_home.as_deref(), &base.home, &base.cwd));
    extensions.install(&mut engine)?;
    if let Some(providers) = &choice.catalog {
        engine.route_subagent_models(providers.clone());
    }
    if let Some(schema) = schema {
        engine
            .require_structured_output(schema)
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
        model_spec: choice.spec,
        catalog: choice.catalog,
        fallback_model: choice.fallback,
    })
}

/// Which source set each value that decides the session, recorded in the debug log (`keel
/// doctor` lists the same).
fn log_provenance(cli: &Options, settings: &Settings) {
    for s in super::provenance::in_force(cli, settings) {
        tracing::info!(key = s.key, value = %s.value, from = %s.origin.describe(), "setting in force");
    }
}

/// `--json-schema`: the schema the final answer must match.
fn output_schema(cli: &Options) -> Result<Option<serde_json::Value>, SetupError> {
    cli.programs
        .json_schema
        .as_deref()
        .map(|raw| {
            serde_json::from_str::<serde_json::Value>(raw)
                .map_err(|e| SetupError::Invalid(format!("--json-schema is not valid JSON: {e}")))
        })
        .transpose()
}

/// Where a session runs: the working directory, keel's home and the user's home.
struct Base {
    cwd: PathBuf,
    home: PathBuf,
    user_home: Option<PathBuf>,
}

fn locate() -> Result<Base, SetupError> {
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| SetupError::Invalid(format!("cannot determine the working directory: {e}")))?;
    let home =
        paths::keel_home().ok_or_else(|| SetupError::Invalid("cannot find a home directory; set KEEL_HOME".into()))?;
    crate::checkpoint::check_env().map_err(SetupError::Invalid)?;
    crate::fsutil::stale::start(&home);
    Ok(Base {
        cwd,
        home,
        user_home: dirs::home_dir(),
    })
}

/// The settings layers that count (`--setting-sources`), restricted in an untrusted folder.
fn load_settings(cli: &Options, base: &Base, trust: ProjectTrust) -> Result<(Settings, Vec<String>), SetupError> {
    let mut settings = Settings::load(
        base.user_home.as_deref(),
        &base.home,
        &base.cwd,
        cli.settings.as_deref(),
    )?;
    if let Some(list) = &cli.programs.setting_sources {
        let scopes = setting_sources(list)?;
        settings
            .layers
            .retain(|l| matches!(l.scope, Scope::Cli | Scope::Managed) || scopes.contains(&l.scope));
    }
    crate::config::precedence::check_managed(&settings)?;
    let mut warnings = settings.unknown_keys();
    if cli.safe_mode {
        warnings.insert(0, super::options::SAFE_MODE_NOTICE.to_string());
        // The operator's managed hooks are policy, not customisation: they stay.
        for layer in settings.layers.iter_mut().filter(|l| l.scope != Scope::Managed) {
            if let Some(m) = layer.value.as_object_mut() {
                m.remove("hooks");
            }
        }
    }
    let ignored = if trust == ProjectTrust::Untrusted {
        trust::restrict(&mut settings, &base.cwd)
    } else {
        Vec::new()
    };
    let lower_only = crate::sandbox::limits::Limits::lower_only();
    let weigh = Weigh {
        project_trusted: trust == ProjectTrust::Trusted || trust == ProjectTrust::Headless && cli.trust_project,
        lower_only: &lower_only,
    };
    warnings.extend(precedence::enforce(&mut settings, weigh));
    if !ignored.is_empty() {
        warnings.push(format!(
            "this folder is not trusted, so keel ignores what its settings would run or allow: {}. Trust it \
             when keel asks at the next start to use them.",
            ignored.join("; ")
        ));
    }
    Ok((settings, warnings))
}

/// The permission rules and mode, and the extensions (plugins, skills, agents, memory) whose
/// rules join them.
fn permissions(
    cli: &Options,
    base: &Base,
    settings: &mut Settings,
    trust: ProjectTrust,
    warnings: &mut Vec<String>,
) -> Result<(Arc<crate::permissions::Authorizer>, Mode, super::extensions::Extensions), SetupError> {
    let mut permissions = permission_config::build(
        settings,
        &CliPermissions {
            allowed_tools: cli.allowed_tools.clone(),
            disallowed_tools: cli.disallowed_tools.clone(),
            add_dirs: cli.add_dir.clone(),
            mode: permission_mode(cli)?,
        },
        &base.cwd,
        base.user_home.as_deref(),
        &builtin_tools().iter().map(|t| t.name()).collect::<Vec<_>>(),
    )?;
    warnings.extend(permissions.warnings.iter().cloned());
    let places = super::extensions::Where {
        cwd: &base.cwd,
        user_home: base.user_home.as_deref(),
        keel_home: &base.home,
        project_trusted: trust.allows_project_commands(),
    };
    let extensions = super::extensions::load(cli, settings, &places, &permissions.authorizer.working_dirs()[1..])?;
    extensions.grant_memory(&mut permissions.authorizer)?;
    warnings.extend(extensions.warnings.iter().cloned());
    let mut authorizer = permissions.authorizer;
    authorizer.set_jail_probe(|| crate::sandbox::capabilities().jail);
    Ok((Arc::new(authorizer), permissions.mode, extensions))
}

fn session_place(cli: &Options, base: &Base, warnings: &mut Vec<String>) -> Result<Place, SetupError> {
    let place = super::place::session_place(cli, &base.home, &base.cwd, warnings)?;
    if let Some(log) = crate::debug::attach_session(&place.session_dir) {
        tracing::info!(id = %place.id, log = %log.display(), resumed = place.history.is_some(), "session");
    }
    Ok(place)
}

/// The built-in tools and the extensions', narrowed by `--tools` and whole-tool deny rules.
fn tool_registry(
    cli: &Options,
    settings: &Settings,
    choice: &super::model::Choice,
    extensions: &super::extensions::Extensions,
    authorizer: &crate::permissions::Authorizer,
) -> Result<ToolRegistry, SetupError> {
    let web = crate::tools::web::Web::new(super::web::web_config(settings, authorizer, choice)?);
    let mut registry = extensions.add_tools(ToolRegistry::new(builtin_tools_with(&web))?)?;
    if let Some(list) = &cli.tools
        && list.trim() != "default"
    {
        let wanted: Vec<&str> = list
            .split([',', ' '])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if let Some(w) = wanted.iter().find(|w| registry.get(w).is_none()) {
            return Err(SetupError::Invalid(format!(
                "--tools names `{w}`, which is not a built-in tool (available: {})",
                registry.names().join(", ")
            )));
        }
        registry.retain(|n| wanted.contains(&n));
    }
    registry.retain(|n| !authorizer.denies_whole_tool(n));
    Ok(registry)
}

/// The project layer: environment facts, instruction files, the system prompt's own texts.
fn project_context(
    cli: &Options,
    base: &Base,
    model: &str,
    authorizer: &crate::permissions::Authorizer,
    warnings: &mut Vec<String>,
) -> Result<ProjectContext, SetupError> {
    let (replace, append) = system_prompt_texts(cli)?;
    let mut project = ProjectContext::gather(&Gather {
        cwd: &base.cwd,
        model,
        home: base.user_home.as_deref(),
        replace: replace.as_deref(),
        append: append.as_deref(),
    });
    if cli.safe_mode {
        project.instructions = crate::context::instructions::Instructions::none(&base.cwd);
    }
    project.instructions.include_dirs(&authorizer.working_dirs()[1..]);
    warnings.extend(project.instructions.skipped_notices());
    Ok(project)
}

/// What the later steps of setup all read.
struct Inputs<'a> {
    cli: &'a Options,
    base: &'a Base,
    settings: &'a Settings,
    authorizer: &'a Arc<crate::permissions::Authorizer>,
}

/// The session's MCP servers, planned (front ends start them).
fn mcp_servers(
    inputs: &Inputs<'_>,
    place: &Place,
    extensions: &super::extensions::Extensions,
    trust: ProjectTrust,
    window: u64,
) -> Result<crate::mcp::setup::McpSetup, SetupError> {
    let Inputs {
        cli,
        base,
        settings,
        authorizer,
    } = *inputs;
    let denies = authorizer.clone();
    // Safe mode: strict with no configuration given is no server at all.
    let none: &[String] = &[];
    crate::mcp::setup::build(&crate::mcp::setup::McpInputs {
        cli_configs: if cli.safe_mode { none } else { &cli.mcp_config },
        strict: cli.strict_mcp_config || cli.safe_mode,
        settings,
        cwd: &base.cwd,
        home: base.user_home.as_deref(),
        keel_home: &base.home,
        session_dir: &place.session_dir,
        context_window: window,
        interactive: !cli.print,
        hidden: Arc::new(move |name| denies.denies_whole_tool(name)),
        project_trusted: trust.allows_project_commands(),
        plugin_servers: extensions.plugins.mcp_servers(),
    })
    .map_err(SetupError::Invalid)
}

/// The session's services, built once: confinement, read guard, working directories, the
/// evidence ledger (with the declared test commands of the instruction files), MCP servers.
/// How the session's shell commands run, and whether its ledger is kept on disk.
struct ShellSettings {
    sandbox: SandboxConfig,
    output_cap: u64,
    limits: crate::sandbox::Limits,
    persist: bool,
    /// Folders of keel's state the session's commands may read (memory, skills).
    handed: Vec<PathBuf>,
}

impl ShellSettings {
    fn from(cli: &Options, settings: &Settings, handed: Vec<PathBuf>) -> Result<Self, SetupError> {
        Ok(ShellSettings {
            sandbox: SandboxConfig::from_settings(settings, cli.sandbox)?,
            output_cap: crate::sandbox::contain::output_cap(settings)?,
            limits: crate::sandbox::Limits::from_settings(settings)?,
            persist: !cli.no_session_persistence,
            handed,
        })
    }
}

fn session_services(
    inputs: &Inputs<'_>,
    shell: ShellSettings,
    place: &Place,
    project: &ProjectContext,
    (mcp, lsp): (&Arc<crate::mcp::McpHub>, Arc<crate::tools::lsp::Lsp>),
    mode: Mode,
) -> Result<(Arc<SessionServices>, Vec<String>), SetupError> {
    let Inputs {
        base,
        settings,
        authorizer,
        ..
    } = *inputs;
    let (sandbox, sandbox_warning) = SandboxMode::decide(
        &shell.sandbox,
        &authorizer.working_dirs(),
        &place.session_dir.join("tmp"),
    );
    let (verification, verification_warnings) =
        crate::evidence::Config::from_settings(settings, project.instructions.all().map(|f| f.content.as_str()))?;
    let rules = authorizer.clone();
    let handed = crate::sandbox::reads::Handed {
        session_dir: Some(place.session_dir.clone()),
        paths: shell.handed,
    };
    let reads = crate::sandbox::reads::ReadScope::new(
        base.user_home.as_deref(),
        Some(&base.home),
        shell.sandbox.reads.clone(),
        handed,
    );
    let confiner = crate::sandbox::Confiner::new(
        authorizer.working_dirs().to_vec(),
        base.user_home.clone(),
        place.session_dir.join("tmp"),
        move |p| rules.read_denied_by_rule(p),
    )
    .with_reads(reads);
    let guard = authorizer.clone();
    let evidence = crate::evidence::Evidence::new(&base.cwd, &place.session_dir, verification, shell.persist);
    let services = SessionServices::builder(base.cwd.clone(), place.session_dir.clone())
        .mode(mode)
        .read_guard(crate::tools::ReadGuard::new(move |p, regular| {
            guard.read_denied(p, regular)
        }))
        .confiner(Some(Arc::new(confiner)))
        .sandbox(sandbox)
        .output_cap(shell.output_cap)
        .limits(shell.limits)
        .extra_dirs(authorizer.working_dirs().into_iter().skip(1).collect())
        .evidence(Arc::new(evidence))
        .mcp(Some(mcp.clone()))
        .lsp(Some(lsp))
        .build();
    Ok((
        services,
        sandbox_warning.into_iter().chain(verification_warnings).collect(),
    ))
}

/// The session itself: its transcript and, when it continues an earlier one, that history
/// and task list (a fork's own file starts with the conversation it continues).
fn open_session(
    cli: &Options,
    place: Place,
    services: Arc<SessionServices>,
    model: &str,
    warnings: &mut Vec<String>,
) -> Result<(Session, bool), SetupError> {
    let transcript = if cli.no_session_persistence {
        Transcript::disabled(place.transcript.clone())
    } else {
        Transcript::create(&place.transcript)?
    };
    let mut session = Session::with_services(place.id, transcript, services);
    if let Some(lock) = place.lock {
        session.hold(lock);
    }
    session.tool_log = if cli.no_session_persistence {
        ToolLog::in_memory()
    } else {
        ToolLog::open(place.session_dir.join("tool-log.jsonl"))
    };
    let Some((mut history, mut todos, unsaved)) = place.history else {
        session.write_meta(model);
        return Ok((session, false));
    };
    if !place.forked {
        // A rewind a crash interrupted is completed or rolled back before the session goes on.
        match crate::engine::rewind::recover(&mut session) {
            Ok(None) => {}
            Ok(Some(recovered)) => {
                warnings.push(recovered.notice);
                if recovered.conversation {
                    let loaded = crate::transcript::load(&place.transcript)?;
                    (history, todos) = (loaded.history, loaded.todos);
                }
            }
            Err(e) => warnings.push(format!(
                "an interrupted rewind of this session could not be completed or rolled back: {e}"
            )),
        }
    }
    if place.forked {
        session.write_meta(model);
        for m in &history {
            if let Err(e) = session.transcript.message(m) {
                warnings.push(e.to_string());
                break;
            }
        }
    }
    session.set_history(history);
    session.restore_todos(todos);
    session.log_event(
        if place.forked { "forked" } else { "resumed" },
        serde_json::json!({"model": model}),
    );
    session.log_loss(unsaved.as_ref());
    Ok((session, true))
}

/// The engine's configuration: model, limits, budget, reasoning, whether anyone answers.
fn engine_config(
    cli: &Options,
    project: &ProjectContext,
    model: &str,
    context_window: Option<u64>,
    compact: CompactSettings,
) -> Result<EngineConfig, SetupError> {
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
    if cli.programs.task_budget == Some(0) {
        return Err(SetupError::Invalid(
            "--task-budget must be a positive number of tokens".into(),
        ));
    }
    let mut reasoning = reasoning(cli, models::info(model).max_output)?;
    reasoning.task_budget = cli.programs.task_budget.map(|total| crate::provider::TaskBudget {
        total,
        remaining: total,
    });
    let info = models::info(model);
    Ok(EngineConfig {
        system: project.system_blocks(),
        model: model.to_string(),
        max_tokens: info.max_output,
        max_turns: cli.max_turns,
        interactive: !headless || program_answers,
        context_window,
        compact,
        max_budget_usd: cli.programs.max_budget_usd,
        reasoning,
    })
}

/// The hooks of every settings layer and plugin, bound to the session.
fn session_hooks(
    settings: &Settings,
    extensions: &super::extensions::Extensions,
    base: &Base,
    session: &Session,
    config: &EngineConfig,
    warnings: &mut Vec<String>,
) -> Result<Arc<Hooks>, SetupError> {
    let mut hook_config = HookConfig::from_settings(settings)?;
    extensions.plugins.tag_hooks(&mut hook_config);
    warnings.extend(hook_config.warnings.iter().cloned());
    let mut hooks = Hooks::new(
        hook_config,
        base.cwd.clone(),
        session.id.clone(),
        session.transcript.clone(),
    );
    hooks.set_env_file(session.services.hook_env_file());
    hooks.set_effort(config.reasoning.effort.as_deref());
    Ok(Arc::new(hooks))
}
