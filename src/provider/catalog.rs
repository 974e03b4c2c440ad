//! Which provider serves which model: the built-in ones (`--provider anthropic|openai|
//! openai-responses`, configured from the environment) and the named providers of the
//! `providers` setting, addressed as `--model NAME/MODEL` (`ollama/qwen3-coder`).
//!
//! A repository's own settings (project and local scope) are not trusted with credentials or
//! with sending the conversation off the machine: their providers may only point at loopback
//! servers and carry no key or headers.

use std::collections::BTreeMap;
use std::sync::Arc;

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::anthropic::{AnthropicConfig, AnthropicProvider, Auth};
use super::endpoint::BaseUrl;
use super::fallback::{FallbackProvider, MAX_FALLBACKS, Route, chain};
use super::http::{Timeouts, Transport};
use super::openai::{OpenAiConfig, OpenAiProvider, Protocol};
use super::retry::RetryPolicy;
use super::{Provider, ProviderError};
use crate::config::models;
use crate::config::settings::Settings;

/// The wire protocol of a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Anthropic,
    OpenAi,
    OpenAiResponses,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Anthropic => "anthropic",
            Kind::OpenAi => "openai",
            Kind::OpenAiResponses => "openai-responses",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        match s {
            "anthropic" => Some(Kind::Anthropic),
            "openai" => Some(Kind::OpenAi),
            "openai-responses" => Some(Kind::OpenAiResponses),
            _ => None,
        }
    }

    /// The model used when nothing names one.
    pub fn default_model(self) -> String {
        match self {
            Kind::Anthropic => std::env::var("ANTHROPIC_MODEL")
                .ok()
                .filter(|m| !m.trim().is_empty())
                .map(|m| models::resolve_alias(&m))
                .unwrap_or_else(|| models::DEFAULT_MODEL.to_string()),
            Kind::OpenAi => models::DEFAULT_OPENAI_MODEL.to_string(),
            Kind::OpenAiResponses => models::DEFAULT_RESPONSES_MODEL.to_string(),
        }
    }
}

/// How a named provider finds its key.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    None,
    Literal(String),
    Env(String),
}

/// One entry of the `providers` setting.
#[derive(Debug, Clone)]
pub struct Named {
    pub kind: Kind,
    pub base_url: BaseUrl,
    key: Key,
    headers: Vec<(String, String)>,
    /// Models offered in `/model`.
    pub models: Vec<String>,
}

/// A model ready to use: the provider that serves it and the id to send.
#[derive(Clone)]
pub struct Resolved {
    pub provider: Arc<dyn Provider>,
    /// The id sent to the server (without the provider's name).
    pub model: String,
    /// The name as the user wrote it (`ollama/qwen3-coder`), for settings and `/model`.
    pub spec: String,
    pub kind: Kind,
    /// Where the server is and how to authenticate, for probes and `keel doctor`.
    pub endpoint: Endpoint,
}

#[derive(Clone)]
pub struct Endpoint {
    pub label: String,
    pub base_url: BaseUrl,
    pub headers: HeaderMap,
    /// The provider's own transport: the probes share its client.
    pub transport: Transport,
}

impl Endpoint {
    /// The client for the base URL, built on first use.
    pub fn client(&self) -> Result<reqwest::Client, String> {
        self.transport
            .client_for(self.base_url.as_str())
            .map_err(|e| e.to_string())
    }
}

pub struct Catalog {
    named: BTreeMap<String, Named>,
    default_kind: Kind,
    retry: RetryPolicy,
    timeouts: Timeouts,
    include_raw: bool,
    /// Managed settings' model allowlist: every model resolved must be on it.
    allowlist: Option<crate::config::precedence::ModelAllowlist>,
}

impl Catalog {
    /// The `providers` setting, checked; `default_kind` serves models without a provider name.
    pub fn new(
        settings: &Settings,
        default_kind: Kind,
        retry: RetryPolicy,
        timeouts: Timeouts,
        include_raw: bool,
    ) -> Result<Catalog, ProviderError> {
        let mut named = BTreeMap::new();
        for layer in &settings.layers {
            let Some(map) = layer.value.get("providers").filter(|v| !v.is_null()) else {
                continue;
            };
            let map = map.as_object().ok_or_else(|| {
                ProviderError::Config(format!(
                    "{}: `providers` must be an object of named providers",
                    layer.label()
                ))
            })?;
            let trusted = layer.scope.is_users();
            for (name, entry) in map {
                let what = format!("{}: providers.{name}", layer.label());
                named.insert(name.clone(), parse_named(&what, name, entry, trusted)?);
            }
        }
        Ok(Catalog {
            named,
            default_kind,
            retry,
            timeouts,
            include_raw,
            allowlist: crate::config::precedence::model_allowlist(settings),
        })
    }

    pub fn default_kind(&self) -> Kind {
        self.default_kind
    }

    pub fn named(&self) -> &BTreeMap<String, Named> {
        &self.named
    }

    /// `NAME/MODEL` when NAME is a configured provider; anything else is a model id for the
    /// default provider (OpenRouter ids such as `qwen/qwen3-coder` stay whole).
    pub fn split<'a>(&self, spec: &'a str) -> (Option<&'a str>, &'a str) {
        match spec.split_once('/') {
            Some((name, model)) if self.named.contains_key(name) && !model.is_empty() => (Some(name), model),
            _ => (None, spec),
        }
    }

    /// The provider and model for `spec` (`None`: the default provider's default model).
    pub fn resolve(&self, spec: Option<&str>) -> Result<Resolved, ProviderError> {
        self.resolve_with(spec, self.retry)
    }

    fn resolve_with(&self, spec: Option<&str>, retry: RetryPolicy) -> Result<Resolved, ProviderError> {
        let transport = Transport::new(self.timeouts, retry, self.include_raw)?;
        // The allowlist fixes the default too: its first model, unless the provider's own
        // default is on it.
        let listed_default = match &self.allowlist {
            Some(list) if !list.allows(&self.default_kind.default_model()) => list.names.first().cloned(),
            _ => None,
        };
        let spec = spec
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .or(listed_default.as_deref());
        let (name, model) = match spec {
            Some(s) => {
                let (name, model) = self.split(s);
                (name, models::resolve_alias(model))
            }
            None => (None, self.default_kind.default_model()),
        };
        if let Some(why) = self.allowlist.as_ref().and_then(|l| l.refuses(spec.unwrap_or(&model))) {
            return Err(ProviderError::Config(why));
        }
        let spec = match name {
            Some(n) => format!("{n}/{model}"),
            None => model.clone(),
        };
        let Some(name) = name else {
            return build(
                self.default_kind,
                self.default_kind.name(),
                None,
                transport,
                model,
                spec,
            );
        };
        let named = &self.named[name];
        build(named.kind, name, Some(named), transport, model, spec)
    }

    /// `spec` with a chain of fallback models behind it (`fallback`: a comma-separated list
    /// of at most [`MAX_FALLBACKS`]): after three overloads in a row the next one takes over.
    pub fn resolve_with_fallback(&self, spec: Option<&str>, fallback: &str) -> Result<Resolved, ProviderError> {
        let names = chain(fallback);
        if names.is_empty() {
            return Err(ProviderError::Config("the fallback model list is empty".into()));
        }
        if names.len() > MAX_FALLBACKS {
            return Err(ProviderError::Config(format!(
                "{} fallback models given ({fallback}); at most {MAX_FALLBACKS} are tried",
                names.len()
            )));
        }
        let gives_up = RetryPolicy {
            overloads_before_fallback: Some(3),
            ..self.retry
        };
        let mut primary = self.resolve_with(spec, gives_up)?;
        let mut routes: Vec<Route> = Vec::new();
        let mut seen = vec![primary.spec.clone()];
        for (i, name) in names.iter().enumerate() {
            // Every model but the last gives way to the next after repeated overloads.
            let backup = if i + 1 < names.len() {
                self.resolve_with(Some(name), gives_up)?
            } else {
                self.resolve(Some(name))?
            };
            if backup.spec == primary.spec {
                return Err(ProviderError::Config(format!(
                    "the fallback model `{name}` is the main model; choose another one"
                )));
            }
            if seen.contains(&backup.spec) {
                return Err(ProviderError::Config(format!(
                    "the fallback model `{name}` is listed twice"
                )));
            }
            seen.push(backup.spec.clone());
            routes.push(Route {
                max_output: models::info(&backup.model).max_output,
                provider: backup.provider,
                model: backup.model,
            });
        }
        primary.provider = Arc::new(FallbackProvider::new(primary.provider, routes));
        Ok(primary)
    }

    /// The provider serving `spec`: its name (`anthropic`, `openai`, `ollama`) and protocol.
    pub fn provider_of<'a>(&self, spec: &'a str) -> (&'a str, Kind) {
        match self.split(spec.trim()).0 {
            Some(name) => (name, self.named[name].kind),
            None => (self.default_kind.name(), self.default_kind),
        }
    }

    /// Where the key of the provider serving `spec` comes from, in the reference's words: the
    /// variable that holds it (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, a named provider's
    /// `apiKeyEnv`), `providers.NAME.apiKey` for a key written in the settings, or `none`.
    pub fn key_source(&self, spec: &str) -> String {
        let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.trim().is_empty());
        let named = self.split(spec.trim()).0.map(|n| (n, &self.named[n]));
        match named {
            Some((name, n)) => match &n.key {
                Key::None => "none".into(),
                Key::Literal(_) => format!("providers.{name}.apiKey"),
                Key::Env(var) if set(var) => var.clone(),
                Key::Env(_) => "none".into(),
            },
            None => match self.default_kind {
                Kind::Anthropic if set("ANTHROPIC_API_KEY") => "ANTHROPIC_API_KEY".into(),
                Kind::Anthropic if set("ANTHROPIC_AUTH_TOKEN") => "ANTHROPIC_AUTH_TOKEN".into(),
                Kind::OpenAi | Kind::OpenAiResponses if set("OPENAI_API_KEY") => "OPENAI_API_KEY".into(),
                _ => "none".into(),
            },
        }
    }

    /// Models to offer in `/model`: the current one, the configured ones, the providers' lists.
    pub fn choices(&self, current: &str, settings_models: &[String]) -> Vec<String> {
        let mut out = vec![current.to_string()];
        let mut push = |s: String| {
            if !s.is_empty() && !out.contains(&s) {
                out.push(s);
            }
        };
        for s in settings_models {
            push(s.clone());
        }
        if self.default_kind == Kind::Anthropic {
            for a in ["sonnet", "opus", "haiku"] {
                push(models::resolve_alias(a));
            }
        } else {
            push(self.default_kind.default_model());
        }
        for name in models::configured_names() {
            push(name);
        }
        for (name, n) in &self.named {
            for m in &n.models {
                push(format!("{name}/{m}"));
            }
        }
        out
    }
}

fn build(
    kind: Kind,
    label: &str,
    named: Option<&Named>,
    transport: Transport,
    model: String,
    spec: String,
) -> Result<Resolved, ProviderError> {
    let shared = transport.clone();
    match kind {
        Kind::Anthropic => {
            let config = match named {
                None => AnthropicConfig::from_env()?,
                Some(n) => {
                    let key = n.key.value()?.ok_or_else(|| {
                        ProviderError::Config(format!(
                            "provider `{label}` (type anthropic) needs a key: set apiKey or apiKeyEnv in its settings"
                        ))
                    })?;
                    AnthropicConfig {
                        base_url: n.base_url.clone(),
                        auth: Auth::ApiKey(key),
                        beta: None,
                        key_hint: n.key.hint(label),
                    }
                }
            };
            let provider = AnthropicProvider::new(config, transport)?;
            let endpoint = Endpoint {
                label: label.to_string(),
                base_url: provider.config().base_url.clone(),
                headers: provider.headers().clone(),
                transport: shared,
            };
            Ok(Resolved {
                provider: Arc::new(provider),
                model,
                spec,
                kind,
                endpoint,
            })
        }
        Kind::OpenAi | Kind::OpenAiResponses => {
            let protocol = if kind == Kind::OpenAi {
                Protocol::Chat
            } else {
                Protocol::Responses
            };
            let config = match named {
                None => OpenAiConfig::from_env()?,
                Some(n) => OpenAiConfig {
                    base_url: n.base_url.clone(),
                    api_key: n.key.value()?,
                    key_hint: n.key.hint(label),
                    headers: n.headers.clone(),
                },
            };
            let provider = OpenAiProvider::new(protocol, label, config, transport)?;
            let endpoint = Endpoint {
                label: label.to_string(),
                base_url: provider.config().base_url.clone(),
                headers: provider.headers().clone(),
                transport: shared,
            };
            Ok(Resolved {
                provider: Arc::new(provider),
                model,
                spec,
                kind,
                endpoint,
            })
        }
    }
}

impl Key {
    fn value(&self) -> Result<Option<String>, ProviderError> {
        match self {
            Key::None => Ok(None),
            Key::Literal(k) => Ok(Some(k.clone())),
            Key::Env(var) => match std::env::var(var) {
                Ok(v) if !v.trim().is_empty() => Ok(Some(v)),
                _ => Err(ProviderError::Config(format!(
                    "the environment variable {var} (apiKeyEnv) is not set"
                ))),
            },
        }
    }

    fn hint(&self, name: &str) -> String {
        match self {
            Key::None => format!("whether provider `{name}` needs an apiKey or apiKeyEnv"),
            Key::Literal(_) => format!("providers.{name}.apiKey"),
            Key::Env(var) => var.clone(),
        }
    }
}

fn parse_named(what: &str, name: &str, v: &Value, trusted: bool) -> Result<Named, ProviderError> {
    let bad = |msg: String| ProviderError::Config(format!("{what}: {msg}"));
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        return Err(bad(
            "a provider name may hold letters, digits, `-`, `_` and `.` only".into()
        ));
    }
    let obj = v
        .as_object()
        .ok_or_else(|| bad(format!("must be an object, found {v}")))?;
    let mut kind = None;
    let mut base = None;
    let mut key = Key::None;
    let mut headers = Vec::new();
    let mut list = Vec::new();
    for (k, val) in obj {
        let string = || {
            val.as_str()
                .map(str::to_string)
                .ok_or_else(|| bad(format!("`{k}` must be a string, found {val}")))
        };
        match k.as_str() {
            "type" => {
                let t = string()?;
                kind =
                    Some(Kind::parse(&t).ok_or_else(|| {
                        bad(format!("unknown type `{t}`; use openai, openai-responses or anthropic"))
                    })?);
            }
            "baseUrl" => base = Some(string()?),
            "apiKey" | "apiKeyEnv" | "headers" if !trusted => {
                return Err(bad(format!(
                    "`{k}` is only accepted in your own settings (~/.keel/settings.json, ~/.claude/settings.json or \
                     --settings), not in a repository's: a cloned repository must not decide where your keys go"
                )));
            }
            "apiKey" => {
                if key != Key::None {
                    return Err(bad("give either apiKey or apiKeyEnv, not both".into()));
                }
                key = Key::Literal(string()?);
            }
            "apiKeyEnv" => {
                if key != Key::None {
                    return Err(bad("give either apiKey or apiKeyEnv, not both".into()));
                }
                key = Key::Env(string()?);
            }
            "headers" => {
                let map = val
                    .as_object()
                    .ok_or_else(|| bad(format!("`headers` must be an object of strings, found {val}")))?;
                for (h, hv) in map {
                    let hv = hv
                        .as_str()
                        .ok_or_else(|| bad(format!("header `{h}` must be a string, found {hv}")))?;
                    headers.push((h.clone(), hv.to_string()));
                }
            }
            "models" => {
                let arr = val
                    .as_array()
                    .ok_or_else(|| bad(format!("`models` must be an array of model ids, found {val}")))?;
                for m in arr {
                    list.push(
                        m.as_str()
                            .ok_or_else(|| bad(format!("`models` must hold strings, found {m}")))?
                            .to_string(),
                    );
                }
            }
            other => {
                return Err(bad(format!(
                    "unknown field `{other}` (known: type, baseUrl, apiKey, apiKeyEnv, headers, models)"
                )));
            }
        }
    }
    let kind = kind.ok_or_else(|| bad("`type` is missing (openai, openai-responses or anthropic)".into()))?;
    let raw = base.ok_or_else(|| bad("`baseUrl` is missing".into()))?;
    let base_url = BaseUrl::parse(&raw, &format!("providers.{name}.baseUrl"))?;
    if !trusted && !base_url.is_loopback() {
        return Err(bad(format!(
            "baseUrl `{}` is not on this machine; a repository's settings may only name local servers \
             (localhost). Put remote providers in ~/.keel/settings.json",
            base_url.as_str()
        )));
    }
    Ok(Named {
        kind,
        base_url,
        key,
        headers,
        models: list,
    })
}

#[cfg(test)]
mod tests;
