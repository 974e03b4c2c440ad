//! Requests from the client that change the session: `initialize` (hook callbacks, system
//! prompt options, a JSON schema for the answer), `set_model`. They are applied to the engine
//! between turns; the answers are built here.

use std::sync::Arc;

use serde_json::{Value, json};

use super::client::ClientLink;
use super::codec::Initialize;
use super::offer;
use crate::config::models;
use crate::context::{Gather, ProjectContext};
use crate::engine::Engine;
use crate::hooks::config::Handler;
use crate::hooks::{Event, HookConfig};

/// Applies `initialize`; returns the answer, or why the request cannot be honoured. Nothing is
/// applied when it fails.
pub fn initialize(
    engine: &mut Engine,
    init: &Initialize,
    link: &Arc<ClientLink>,
    view: &ModelView,
) -> Result<(Value, Vec<String>), String> {
    let (hooks, mut warnings) = hook_config(init)?;
    warnings.extend(
        init.unknown_fields
            .iter()
            .map(|f| format!("initialize: keel does not know the field `{f}`; it has no effect")),
    );
    if let Some(agents) = init.agents.as_ref().filter(|a| !a.is_empty()) {
        let json = Value::Object(agents.clone()).to_string();
        warnings.extend(engine.register_agents(&json).map_err(|e| format!("agents: {e}"))?);
    }
    if let Some(schema) = &init.json_schema {
        engine.require_structured_output(schema.clone())?;
    }
    if init.system_prompt.is_some() || init.append_system_prompt.is_some() {
        let home = dirs::home_dir();
        let cwd = engine.cwd().to_path_buf();
        let project = ProjectContext::gather(&Gather {
            cwd: &cwd,
            model: engine.model(),
            home: home.as_deref(),
            replace: init.system_prompt.as_deref(),
            append: init.append_system_prompt.as_deref(),
        });
        engine.set_project(project);
    }
    if let Some(names) = &init.skills {
        warnings.extend(engine.keep_only_skills(names)?);
    }
    if init.exclude_dynamic_sections == Some(true) {
        // The stream loop puts them in front of the next user message.
        engine.move_dynamic_sections_to_messages();
    }
    if !hooks.is_empty()
        && let Err(refused) = engine.set_client_hooks(hooks, link.clone())
    {
        warnings.push(refused);
    }
    // Last: the prompt recorded is the one the options above produced.
    if init.system_prompt_snapshot == Some(true) {
        let persist = engine.records_transcript();
        warnings.extend(super::snapshot::keep(engine, persist));
    }
    Ok((answer(engine, view), warnings))
}

/// The client's hook registrations as handlers keel calls back. Events keel does not have are
/// reported, not silently dropped.
fn hook_config(init: &Initialize) -> Result<(HookConfig, Vec<String>), String> {
    let mut config = HookConfig::default();
    let mut warnings = Vec::new();
    for reg in &init.hooks {
        let Some(event) = Event::parse(&reg.event) else {
            warnings.push(format!(
                "the client's {} hook(s) will not run: keel has no such event",
                reg.event
            ));
            continue;
        };
        let handlers = reg
            .callback_ids
            .iter()
            .map(|id| Handler::Callback {
                id: id.clone(),
                timeout_secs: reg.timeout_secs,
            })
            .collect();
        config
            .add_group(event, reg.matcher.as_deref(), handlers, "SDK initialize")
            .map_err(|e| format!("hooks.{}: {e}", reg.event))?;
    }
    Ok((config, warnings))
}

/// How `set_model` reaches other models: the session's providers and its fallback model.
pub struct ModelRoutes {
    pub catalog: Arc<crate::provider::catalog::Catalog>,
    /// Kept behind every model the client switches to.
    pub fallback: Option<String>,
    /// The model the session started with (`set_model` with `default` or no model).
    pub default_spec: String,
}

/// The session's models as `initialize` describes them.
pub struct ModelView<'a> {
    pub routes: Option<&'a ModelRoutes>,
    /// The model the session started with, as the user named it.
    pub default_spec: &'a str,
    /// The model in use now (after any `set_model`), as the user names it.
    pub current: &'a str,
}

/// A model change, checked when the request arrives and applied between turns.
pub enum ModelChange {
    /// The script provider: only the id changes (`None`: back to the session's default).
    Id(Option<String>),
    /// Another model, possibly on another provider, with the fallback behind it.
    Routed {
        provider: Arc<dyn crate::provider::Provider>,
        model: String,
        /// The model as the user names it (`ollama/qwen3-coder`).
        spec: String,
    },
}

impl ModelChange {
    /// The model in use once the change is applied, as the user names it.
    pub fn spec(&self, default_spec: &str) -> String {
        match self {
            ModelChange::Id(Some(model)) => models::resolve_alias(model),
            ModelChange::Id(None) => default_spec.to_string(),
            ModelChange::Routed { spec, .. } => spec.clone(),
        }
    }
}

/// Resolves `set_model`: the change to apply and the model to name in the answer, or why the
/// model cannot be used (an unknown provider name, a missing key), answered at once.
pub fn route_model(routes: Option<&ModelRoutes>, wanted: Option<&str>) -> Result<(ModelChange, String), String> {
    let Some(routes) = routes else {
        let name = wanted.map(models::resolve_alias).unwrap_or_else(|| "default".into());
        return Ok((ModelChange::Id(wanted.map(str::to_string)), name));
    };
    let spec = wanted.unwrap_or(&routes.default_spec);
    let resolved = match &routes.fallback {
        Some(f) if *f != spec && models::resolve_alias(f) != models::resolve_alias(spec) => {
            routes.catalog.resolve_with_fallback(Some(spec), f)
        }
        _ => routes.catalog.resolve(Some(spec)),
    }
    .map_err(|e| e.to_string())?;
    let name = resolved.spec.clone();
    Ok((
        ModelChange::Routed {
            provider: resolved.provider,
            model: resolved.model,
            spec: name.clone(),
        },
        name,
    ))
}

/// Applies a checked `set_model` (`default`: the session's first model id).
pub fn set_model(engine: &mut Engine, change: ModelChange, default: &str) {
    match change {
        ModelChange::Id(model) => {
            let model = model
                .as_deref()
                .map(models::resolve_alias)
                .unwrap_or_else(|| default.to_string());
            engine.switch_model(engine.provider(), model);
        }
        ModelChange::Routed { provider, model, .. } => engine.switch_model(provider, model),
    }
}

/// What `initialize` answers: what this keel offers.
fn answer(engine: &Engine, view: &ModelView) -> Value {
    let inventory = engine.inventory();
    let agents: Vec<Value> = inventory
        .agents
        .iter()
        .map(|name| {
            let description = engine
                .harness
                .agents
                .get(name)
                .map(|d| d.description.clone())
                .unwrap_or_default();
            json!({"name": name, "description": description})
        })
        .collect();
    json!({
        "commands": crate::commands::headless_offer(&engine.skills()),
        "agents": agents,
        "output_style": "default",
        "available_output_styles": ["default"],
        "models": offer::models(view.routes, view.default_spec, view.current),
        "account": offer::account(view.routes.map(|r| &*r.catalog), view.current),
        "pid": std::process::id(),
        "claude_code_version": env!("CARGO_PKG_VERSION"),
        "keel_version": env!("CARGO_PKG_VERSION"),
        "current_permission_mode": engine.mode().as_str(),
        "model": view.current,
    })
}
