//! Lowers `--provider`, `--model`, `--fallback-model` and the `model`, `fallbackModel`,
//! `providers`, `models` and `maxRetryWaitSeconds` settings into a ready provider and model,
//! once, with the warnings the user must see at start (an unknown context window, a base URL
//! that will not work as meant, a model without tools).

use std::collections::HashMap;
use std::sync::Arc;

use super::options::{Options, ProviderKind};
use super::setup::SetupError;
use crate::config::models::{self, Source};
use crate::config::settings::Settings;
use crate::provider::catalog::{Catalog, Endpoint, Kind};
use crate::provider::http::Timeouts;
use crate::provider::retry::{RetryPolicy, parse_wait};
use crate::provider::script::ScriptProvider;
use crate::provider::{Provider, probe};

/// The model a session runs on.
pub struct Choice {
    pub provider: Arc<dyn Provider>,
    /// The id sent to the server.
    pub model: String,
    /// The name as written (`ollama/qwen3-coder`): what `/model` shows and saves.
    pub spec: String,
    /// Serves `/model` switches; `None` for the script provider.
    pub catalog: Option<Arc<Catalog>>,
    /// The fallback model's name, kept across `/model` switches.
    pub fallback: Option<String>,
    pub warnings: Vec<String>,
    /// The protocol and base URL the model is reached with (`None` for the script provider).
    pub protocol: Option<(Kind, crate::provider::endpoint::BaseUrl)>,
}

/// Chooses the provider and model. `explicit_window`: the user set the context window
/// (`KEEL_CONTEXT_WINDOW` or `contextWindow`), so an unknown model needs no probe or warning.
pub fn choose(cli: &Options, settings: &Settings, explicit_window: bool) -> Result<Choice, SetupError> {
    install_overrides(settings)?;
    let retry = retry_policy(settings)?;
    if cli.provider == Some(ProviderKind::Script) {
        let path = cli
            .script
            .as_ref()
            .ok_or_else(|| SetupError::Invalid("--provider script needs --script FILE".into()))?;
        let p = ScriptProvider::load(path)?;
        let model = cli
            .model
            .clone()
            .map(|m| models::resolve_alias(&m))
            .unwrap_or_else(|| p.model().to_string());
        if let Some(why) = crate::config::precedence::model_allowlist(settings).and_then(|l| l.refuses(&model)) {
            return Err(SetupError::Invalid(why));
        }
        return Ok(Choice {
            provider: Arc::new(p),
            spec: model.clone(),
            model,
            catalog: None,
            fallback: None,
            warnings: Vec::new(),
            protocol: None,
        });
    }
    if cli.script.is_some() {
        return Err(SetupError::Invalid("--script needs --provider script".into()));
    }
    let kind = match cli.provider {
        Some(ProviderKind::OpenAi) => Kind::OpenAi,
        Some(ProviderKind::OpenAiResponses) => Kind::OpenAiResponses,
        _ => Kind::Anthropic,
    };
    let catalog = Catalog::new(
        settings,
        kind,
        retry,
        Timeouts::from_env()?,
        cli.include_partial_messages,
    )?;
    let setting = |key: &str| -> Result<Option<String>, SetupError> {
        match settings.scalar(key) {
            None => Ok(None),
            Some((serde_json::Value::String(s), _)) if !s.trim().is_empty() => Ok(Some(s.clone())),
            Some((v, layer)) => Err(SetupError::Invalid(format!(
                "{}: {key} must be a model name, found {v}",
                layer.label()
            ))),
        }
    };
    let env_model = std::env::var("ANTHROPIC_MODEL").ok().filter(|m| !m.trim().is_empty());
    // The `model` setting belongs to the default provider choice; `--provider openai` without
    // `--model` means that provider's default.
    let spec = match &cli.model {
        Some(m) => Some(m.clone()),
        None if kind == Kind::Anthropic && env_model.is_some() => env_model,
        None if cli.provider.is_none() || kind == Kind::Anthropic => setting("model")?,
        None => None,
    };
    let fallback = match &cli.fallback_model {
        Some(f) => Some(f.clone()),
        None => fallback_setting(settings)?,
    };
    let resolved = match &fallback {
        Some(f) => catalog.resolve_with_fallback(spec.as_deref(), f)?,
        None => catalog.resolve(spec.as_deref())?,
    };
    let mut warnings = Vec::new();
    if resolved.kind == Kind::Anthropic {
        warnings.extend(crate::provider::anthropic::base_url_warning(
            &resolved.endpoint.base_url,
        ));
    }
    warnings.extend(window_notes(
        &resolved.model,
        &resolved.endpoint,
        resolved.kind,
        explicit_window,
        true,
    ));
    if !models::info(&resolved.model).caps.tools {
        warnings.push(format!(
            "{} cannot call tools (keel's model table; override with \"models\": {{\"{}\": {{\"tools\": true}}}}): \
             it runs without them and can only answer",
            resolved.model, resolved.model
        ));
    }
    Ok(Choice {
        provider: resolved.provider,
        model: resolved.model,
        spec: resolved.spec,
        catalog: Some(Arc::new(catalog)),
        fallback,
        warnings,
        protocol: Some((resolved.kind, resolved.endpoint.base_url.clone())),
    })
}

/// The `fallbackModel` setting: a model name, a comma-separated list, or an array of names
/// (at most three, tried in order), as one comma-separated chain.
fn fallback_setting(settings: &Settings) -> Result<Option<String>, SetupError> {
    use serde_json::Value;
    let Some((value, layer)) = settings.scalar("fallbackModel") else {
        return Ok(None);
    };
    let bad = || {
        SetupError::Invalid(format!(
            "{}: fallbackModel must be a model name or a list of up to {} model names, found {value}",
            layer.label(),
            crate::provider::fallback::MAX_FALLBACKS
        ))
    };
    let names: Vec<String> = match value {
        Value::String(s) => crate::provider::fallback::chain(s),
        Value::Array(items) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::trim)
                    .filter(|s| !s.is_empty() && !s.contains(','))
                    .map(str::to_string)
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(bad)?,
        _ => return Err(bad()),
    };
    if names.is_empty() {
        return Ok(None);
    }
    Ok(Some(names.join(",")))
}

/// Whether to ask the server about `model` before the session starts: always a local server
/// (it serves the model with the context it was started with, whatever keel's table says, and
/// its chat template decides whether tools reach the model), and any other non-Anthropic
/// server for a model nobody knows the window of. The public OpenAI endpoint answers none of
/// the questions.
pub fn should_ask(model: &str, endpoint: &Endpoint, kind: Kind, explicit_window: bool) -> bool {
    if kind == Kind::Anthropic || endpoint.base_url.as_str() == crate::provider::openai::DEFAULT_BASE_URL {
        return false;
    }
    endpoint.base_url.is_local() || (!explicit_window && models::info(model).source == Source::Default)
}

/// What the server says about the model (its window, learned for the session; whether its
/// template takes tools), and what window keel assumes for a model nobody knows.
/// `blocking`: called from synchronous start-up code (otherwise nothing is asked here).
pub fn window_notes(
    model: &str,
    endpoint: &Endpoint,
    kind: Kind,
    explicit_window: bool,
    blocking: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    let probed = (blocking && should_ask(model, endpoint, kind, explicit_window))
        .then(|| probe::context_window_blocking(endpoint, model));
    if let Some(p) = &probed {
        learn(model, p, &mut notes);
    }
    if !explicit_window && kind != Kind::Anthropic && models::info(model).source == Source::Default {
        notes.push(unknown_window_note(model, probed.is_some()));
    }
    notes
}

/// Records what a probe found: the window (which a `models` setting still overrides), and the
/// notes the user must see.
pub fn learn(model: &str, p: &probe::Probe, notes: &mut Vec<String>) {
    if let Some(w) = p.window {
        models::learn_window(model, w);
    }
    if let Some(n) = &p.note {
        notes.push(n.clone());
    }
    notes.extend(p.tools_note(model));
}

pub fn unknown_window_note(model: &str, asked: bool) -> String {
    format!(
        "keel does not know the context window of {model}{}; it assumes {} tokens. Set the real size with \
         \"models\": {{\"{model}\": {{\"contextWindow\": N}}}} in the settings",
        if asked { " and the server did not say" } else { "" },
        models::UNKNOWN_WINDOW
    )
}

/// The `models` setting, merged over the layers field by field.
fn install_overrides(settings: &Settings) -> Result<(), SetupError> {
    let mut merged: HashMap<String, models::Override> = HashMap::new();
    for layer in &settings.layers {
        let Some(map) = layer.value.get("models").filter(|v| !v.is_null()) else {
            continue;
        };
        let map = map.as_object().ok_or_else(|| {
            SetupError::Invalid(format!(
                "{}: `models` must be an object keyed by model name",
                layer.label()
            ))
        })?;
        let trusted = layer.scope.is_users();
        for (name, v) in map {
            let what = format!("{}: models.{name}", layer.label());
            let o = models::Override::parse(&what, v).map_err(SetupError::Invalid)?;
            if !trusted && o.has_prices() {
                return Err(SetupError::Invalid(format!(
                    "{what}: prices are only accepted in your own settings (~/.keel/settings.json or --settings), \
                     not in a repository's: they decide what the session is said to cost"
                )));
            }
            merged.entry(name.clone()).or_default().merge(o);
        }
    }
    models::install_overrides(merged);
    Ok(())
}

/// `KEEL_MAX_RETRIES`, and the total wait cap from `KEEL_MAX_RETRY_WAIT_SECS` or the
/// `maxRetryWaitSeconds` setting.
fn retry_policy(settings: &Settings) -> Result<RetryPolicy, SetupError> {
    let mut retry = RetryPolicy::from_env().map_err(SetupError::Invalid)?;
    if std::env::var_os("KEEL_MAX_RETRY_WAIT_SECS").is_none()
        && let Some((v, layer)) = settings.scalar("maxRetryWaitSeconds")
    {
        retry.max_total_wait = parse_wait(&format!("{}: maxRetryWaitSeconds", layer.label()), &v.to_string())
            .map_err(SetupError::Invalid)?;
    }
    Ok(retry)
}
