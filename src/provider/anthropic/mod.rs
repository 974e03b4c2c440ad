//! Anthropic Messages API over HTTP with SSE streaming and retries.

pub mod assembler;

use std::sync::Arc;

use reqwest::header::{HeaderMap, HeaderValue};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::assembler::Assembler;
use super::endpoint::BaseUrl;
use super::http::{Target, Timeouts, Transport, Tx};
use super::prefix::{PrefixCache, close_array};
use super::retry::RetryPolicy;
use super::{ModelRequest, ModelResponse, Provider, ProviderError, ProviderEvent, ProviderStream, channel_stream};
use crate::types::message::{ContentBlock, Message};

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    /// `x-api-key` header (ANTHROPIC_API_KEY).
    ApiKey(String),
    /// `Authorization: Bearer` (ANTHROPIC_AUTH_TOKEN).
    Bearer(String),
}

#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    pub base_url: BaseUrl,
    pub auth: Auth,
    pub beta: Option<String>,
    /// Where the key came from, named when the server refuses it.
    pub key_hint: String,
}

impl AnthropicConfig {
    /// Reads the reference's environment variables.
    pub fn from_env() -> Result<Self, ProviderError> {
        let nonempty = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let auth = if let Some(key) = nonempty("ANTHROPIC_API_KEY") {
            Auth::ApiKey(key)
        } else if let Some(token) = nonempty("ANTHROPIC_AUTH_TOKEN") {
            Auth::Bearer(token)
        } else {
            return Err(ProviderError::Config(
                "no API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), choose another provider \
                 (--provider openai, --model NAME/MODEL for a provider in the settings), or run offline with \
                 --provider script --script FILE"
                    .into(),
            ));
        };
        let base_url = match nonempty("ANTHROPIC_BASE_URL") {
            Some(raw) => BaseUrl::parse(&raw, "ANTHROPIC_BASE_URL")?,
            None => BaseUrl::parse(DEFAULT_BASE_URL, "the default Anthropic URL")?,
        };
        Ok(AnthropicConfig {
            base_url,
            auth,
            beta: nonempty("ANTHROPIC_BETA"),
            key_hint: "ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN".into(),
        })
    }
}

/// A warning for a base URL that will not work as the user probably meant.
pub fn base_url_warning(base: &BaseUrl) -> Option<String> {
    base.ends_in_v1().then(|| {
        format!(
            "{} ends in /v1, and keel adds /v1/messages itself: requests will go to {}; \
             set it without the trailing /v1",
            base.source,
            base.join("/v1/messages")
        )
    })
}

#[derive(Clone)]
pub struct AnthropicProvider {
    transport: Transport,
    config: AnthropicConfig,
    headers: HeaderMap,
    cache: Arc<PrefixCache>,
}

impl AnthropicProvider {
    pub fn new(config: AnthropicConfig, transport: Transport) -> Result<Self, ProviderError> {
        let headers = headers(&config)?;
        Ok(AnthropicProvider {
            transport,
            config,
            headers,
            cache: Arc::default(),
        })
    }

    /// `RetryPolicy` and timeouts from the environment (`KEEL_MAX_RETRIES`, `API_TIMEOUT_MS`).
    pub fn from_env(retry: RetryPolicy, include_raw: bool) -> Result<Self, ProviderError> {
        let transport = Transport::new(Timeouts::from_env()?, retry, include_raw)?;
        AnthropicProvider::new(AnthropicConfig::from_env()?, transport)
    }

    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }

    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The headers every request carries (authentication included), for probes and doctor.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }
}

fn headers(config: &AnthropicConfig) -> Result<HeaderMap, ProviderError> {
    let mut h = HeaderMap::new();
    let bad = |what: &str| ProviderError::Config(format!("{what} contains characters not allowed in an HTTP header"));
    match &config.auth {
        Auth::ApiKey(k) => {
            h.insert(
                "x-api-key",
                HeaderValue::from_str(k).map_err(|_| bad("ANTHROPIC_API_KEY"))?,
            );
        }
        Auth::Bearer(t) => {
            h.insert(
                "authorization",
                HeaderValue::from_str(&format!("Bearer {t}")).map_err(|_| bad("ANTHROPIC_AUTH_TOKEN"))?,
            );
        }
    }
    h.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
    h.insert("content-type", HeaderValue::from_static("application/json"));
    if let Some(beta) = &config.beta {
        h.insert(
            "anthropic-beta",
            HeaderValue::from_str(beta).map_err(|_| bad("ANTHROPIC_BETA"))?,
        );
    }
    Ok(h)
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ProviderStream {
        let (tx, rx) = mpsc::channel(256);
        let this = self.clone();
        tokio::spawn(async move {
            let result = this.run(request, &cancel, &tx).await;
            let _ = tx.send(result.map(ProviderEvent::Completed)).await;
        });
        channel_stream(rx)
    }
}

impl AnthropicProvider {
    #[tracing::instrument(name = "provider_request", level = "info", skip_all, fields(provider = "anthropic"))]
    async fn run(
        &self,
        request: ModelRequest,
        cancel: &CancellationToken,
        tx: &Tx,
    ) -> Result<ModelResponse, ProviderError> {
        let body = cached_wire_body(&request, &self.cache)?;
        let budgeted = request.reasoning.task_budget.is_some() && takes_task_budget(&request.model);
        tracing::debug!(bytes = body.len(), messages = request.messages.len(), "request body");
        // Release our handle on the history at once so the engine can append without a copy.
        drop(request);
        let mut headers = self.headers.clone();
        if budgeted {
            add_beta(&mut headers, TASK_BUDGET_BETA);
        }
        let target = Target {
            url: self.config.base_url.join("/v1/messages"),
            headers,
            body: body.into(),
            base: self.config.base_url.clone(),
            key_hint: self.config.key_hint.clone(),
            protocol_adds_v1: true,
        };
        self.transport.run(&target, Assembler::new, cancel, tx).await
    }
}

#[derive(serde::Serialize)]
struct Head<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    system: &'a [super::SystemBlock],
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a serde_json::value::RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<serde_json::Value>,
    stream: bool,
}

/// The beta header that opts a request into `output_config.task_budget`.
pub const TASK_BUDGET_BETA: &str = "task-budgets-2026-03-13";

/// Models whose API takes a task budget (the beta's list); others get keel's accounting only.
pub fn takes_task_budget(model: &str) -> bool {
    [
        "opus-4-7",
        "opus-4-8",
        "opus-5",
        "sonnet-5-5",
        "haiku-5-5",
        "fable-5",
        "mythos-5",
    ]
    .iter()
    .any(|family| model.contains(family))
}

fn output_config(request: &ModelRequest) -> Option<serde_json::Value> {
    let mut config = serde_json::Map::new();
    if let Some(e) = &request.reasoning.effort {
        config.insert("effort".into(), serde_json::json!(e));
    }
    if let Some(b) = request
        .reasoning
        .task_budget
        .filter(|_| takes_task_budget(&request.model))
    {
        config.insert(
            "task_budget".into(),
            serde_json::json!({"type": "tokens", "total": b.total, "remaining": b.remaining}),
        );
    }
    (!config.is_empty()).then_some(serde_json::Value::Object(config))
}

/// Adds `beta` to the request's `anthropic-beta` header (a comma-separated list).
fn add_beta(headers: &mut HeaderMap, beta: &str) {
    let joined = match headers.get("anthropic-beta").and_then(|v| v.to_str().ok()) {
        Some(have) if have.split(',').any(|b| b.trim() == beta) => return,
        Some(have) => format!("{have},{beta}"),
        None => beta.to_string(),
    };
    if let Ok(v) = HeaderValue::from_str(&joined) {
        headers.insert("anthropic-beta", v);
    }
}

/// The request body, with the messages' encodings reused from earlier requests.
pub fn cached_wire_body(request: &ModelRequest, cache: &PrefixCache) -> Result<Vec<u8>, ProviderError> {
    let thinking = request.reasoning.thinking.map(|t| match t {
        super::Thinking::Enabled { budget_tokens } => {
            serde_json::json!({"type": "enabled", "budget_tokens": budget_tokens})
        }
        super::Thinking::Adaptive => serde_json::json!({"type": "adaptive"}),
        super::Thinking::Disabled => serde_json::json!({"type": "disabled"}),
    });
    let head = Head {
        model: &request.model,
        max_tokens: request.max_tokens,
        system: &request.system,
        tools: (!request.tools.is_empty()).then(|| request.tools.encoded()),
        thinking,
        output_config: output_config(request),
        stream: true,
    };
    let mut out =
        serde_json::to_vec(&head).map_err(|e| ProviderError::Config(format!("cannot encode request: {e}")))?;
    out.pop();
    out.extend_from_slice(b",\"messages\":[");
    cache
        .write(
            "anthropic",
            &request.messages,
            request.unchanged,
            &request.cache_breakpoints,
            &mut out,
            &mut |m, mark, buf| encode_message(m, mark, buf),
        )
        .map_err(|e| ProviderError::Config(format!("cannot encode request: {e}")))?;
    close_array(&mut out);
    out.push(b'}');
    Ok(out)
}

/// One message and a comma; reasoning from other protocols is left out (the API would reject
/// its signature), and a breakpoint goes on the last block that can carry one.
fn encode_message(m: &Message, mark: bool, out: &mut Vec<u8>) -> Result<(), String> {
    let foreign = m.content.iter().any(|b| match b {
        ContentBlock::Thinking { signature, .. } => !super::reasoning::is_anthropic(signature),
        _ => false,
    });
    let result = if mark || foreign {
        let mut copy = if mark { with_breakpoint(m) } else { m.clone() };
        if foreign {
            copy.content.retain(|b| match b {
                ContentBlock::Thinking { signature, .. } => super::reasoning::is_anthropic(signature),
                _ => true,
            });
            if copy.content.is_empty() {
                copy.content.push(ContentBlock::text("(no output)"));
            }
        }
        serde_json::to_writer(&mut *out, &copy)
    } else {
        serde_json::to_writer(&mut *out, m)
    };
    result.map_err(|e| e.to_string())?;
    out.push(b',');
    Ok(())
}

/// The request body: the neutral request plus `stream: true`; no empty `tools` array. Encodes
/// everything (the provider itself reuses earlier encodings, see [`cached_wire_body`]).
pub fn wire_body(request: &ModelRequest) -> Result<Vec<u8>, ProviderError> {
    cached_wire_body(request, &PrefixCache::default())
}

/// A copy of `m` with a cache breakpoint on its last block that can carry one.
fn with_breakpoint(m: &crate::types::message::Message) -> crate::types::message::Message {
    use crate::types::message::{CacheControl, ContentBlock};
    let mut m = m.clone();
    for block in m.content.iter_mut().rev() {
        match block {
            ContentBlock::Text { cache_control, .. } | ContentBlock::ToolResult { cache_control, .. } => {
                *cache_control = Some(CacheControl::ephemeral());
                break;
            }
            _ => {}
        }
    }
    m
}
