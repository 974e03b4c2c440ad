//! Flag and setting values read into typed ones, each with the message that names what was
//! wrong: reasoning, setting sources, system prompt texts, context window and compaction, the
//! permission mode; and the `keel context` listing built from them.

use super::options::Options;
use super::setup::SetupError;
use crate::compact::CompactSettings;
use crate::config::models;
use crate::config::settings::{Scope, Settings};
use crate::context::{Gather, ProjectContext, tokens};
use crate::permissions::Mode;
use crate::tools::builtin_tools;
use crate::tools::registry::ToolRegistry;

/// `--max-thinking-tokens`, `--thinking` and `--effort` as request parameters.
pub(super) fn reasoning(cli: &Options, max_tokens: u32) -> Result<crate::provider::Reasoning, SetupError> {
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
    Ok(crate::provider::Reasoning {
        thinking,
        effort,
        task_budget: None,
    })
}

/// `--setting-sources user,project,local`: which settings files count.
pub(super) fn setting_sources(list: &str) -> Result<Vec<Scope>, SetupError> {
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
pub fn system_prompt_texts(cli: &Options) -> Result<(Option<String>, Option<String>), SetupError> {
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
pub(super) fn context_settings(settings: &Settings) -> Result<(Option<u64>, CompactSettings), SetupError> {
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

/// The `keel context` listing for the current directory: the model and window a session here
/// would use (the settings' model, asked of its server as a session asks it), no session.
pub fn context_report(cli: &Options) -> Result<String, SetupError> {
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| SetupError::Invalid(format!("cannot determine the working directory: {e}")))?;
    let keel_home = crate::config::paths::keel_home()
        .ok_or_else(|| SetupError::Invalid("cannot find a home directory; set KEEL_HOME".into()))?;
    let mut settings = Settings::load(dirs::home_dir().as_deref(), &keel_home, &cwd, cli.settings.as_deref())?;
    crate::config::precedence::check_managed(&settings)?;
    let lower_only = crate::sandbox::limits::Limits::lower_only();
    let weigh = crate::config::precedence::Weigh {
        project_trusted: crate::config::trust::is_trusted(&keel_home, &cwd),
        lower_only: &lower_only,
    };
    let _ = crate::config::precedence::enforce(&mut settings, weigh);
    let (context_window, compact) = context_settings(&settings)?;
    let (model, notes) = match super::model::choose(cli, &settings, context_window.is_some()) {
        Ok(choice) => (choice.model, choice.warnings),
        // No provider to ask (no key, say): the model the settings name, as the table knows it.
        Err(_) => {
            let named = cli
                .model
                .clone()
                .or_else(|| std::env::var("ANTHROPIC_MODEL").ok().filter(|m| !m.trim().is_empty()))
                .or_else(|| {
                    settings
                        .scalar("model")
                        .and_then(|(v, _)| v.as_str().map(str::to_string))
                });
            let model = named
                .map(|m| models::resolve_alias(&m))
                .unwrap_or_else(|| models::DEFAULT_MODEL.to_string());
            (model, Vec::new())
        }
    };
    let info = models::info(&model);
    let window = tokens::Window::new(info.context_window, context_window, info.max_output);
    let home_dir = dirs::home_dir();
    let mut project = ProjectContext::gather(&Gather {
        cwd: &cwd,
        model: &model,
        home: home_dir.as_deref(),
        replace: cli.system_prompt.as_deref(),
        append: cli.append_system_prompt.as_deref(),
    });
    if cli.safe_mode {
        project.instructions = crate::context::instructions::Instructions::none(&cwd);
    } else if crate::memory::enabled(settings.flag(&["autoMemoryEnabled"])?) {
        project.memory = Some(crate::memory::Memory::load(&keel_home, home_dir.as_deref(), &cwd));
    }
    let registry = ToolRegistry::new(builtin_tools())?;
    let mut report = crate::context::report::render(&crate::context::report::Report {
        model: &model,
        window,
        threshold: window.threshold(compact.threshold_pct),
        auto: compact.auto,
        project: &project,
        tools: registry.tool_set().as_slice(),
    });
    if cli.safe_mode {
        report.push_str(&format!("note: {}\n", super::options::SAFE_MODE_NOTICE));
    }
    for note in notes {
        report.push_str(&format!("note: {note}\n"));
    }
    Ok(report)
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

pub(super) fn permission_mode(cli: &Options) -> Result<Option<Mode>, SetupError> {
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
