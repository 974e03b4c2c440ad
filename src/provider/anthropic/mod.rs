//! Anthropic Messages API over HTTP with SSE streaming and retries.

pub mod assembler;

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::assembler::Assembler;
use super::retry::{RetryPolicy, is_retryable_status, server_delay};
use super::{ModelRequest, ModelResponse, Provider, ProviderError, ProviderEvent, ProviderStream, channel_stream};

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
    pub base_url: String,
    pub auth: Auth,
    pub beta: Option<String>,
    /// Longest silence tolerated on an open stream before the attempt counts as dropped.
    pub idle_timeout: Duration,
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
                "no API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), or run offline with \
                 --provider script --script FILE"
                    .into(),
            ));
        };
        let base_url = nonempty("ANTHROPIC_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        let idle_ms = match nonempty("API_TIMEOUT_MS") {
            Some(raw) => raw
                .trim()
                .parse::<u64>()
                .map_err(|_| ProviderError::Config(format!("API_TIMEOUT_MS must be milliseconds, got `{raw}`")))?,
            None => 600_000,
        };
        Ok(AnthropicConfig {
            base_url: base_url.trim_end_matches('/').to_string(),
            auth,
            beta: nonempty("ANTHROPIC_BETA"),
            idle_timeout: Duration::from_millis(idle_ms),
        })
    }
}

#[derive(Clone)]
pub struct AnthropicProvider {
    client: reqwest::Client,
    config: AnthropicConfig,
    retry: RetryPolicy,
    include_raw: bool,
}

impl AnthropicProvider {
    pub fn new(config: AnthropicConfig, retry: RetryPolicy, include_raw: bool) -> Result<Self, ProviderError> {
        // reqwest is built without a bundled crypto provider; ring is ours. A second install
        // (e.g. in tests) is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| ProviderError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(AnthropicProvider {
            client,
            config,
            retry,
            include_raw,
        })
    }

    fn headers(&self) -> Result<HeaderMap, ProviderError> {
        let mut h = HeaderMap::new();
        let bad =
            |what: &str| ProviderError::Config(format!("{what} contains characters not allowed in an HTTP header"));
        match &self.config.auth {
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
        if let Some(beta) = &self.config.beta {
            h.insert(
                "anthropic-beta",
                HeaderValue::from_str(beta).map_err(|_| bad("ANTHROPIC_BETA"))?,
            );
        }
        Ok(h)
    }
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

/// Why one attempt failed.
enum AttemptError {
    Fatal(ProviderError),
    Retryable {
        status: Option<u16>,
        message: String,
        hint: Option<Duration>,
    },
}

type Tx = mpsc::Sender<Result<ProviderEvent, ProviderError>>;

impl AnthropicProvider {
    #[tracing::instrument(name = "provider_request", level = "info", skip_all, fields(provider = "anthropic"))]
    async fn run(
        &self,
        request: ModelRequest,
        cancel: &CancellationToken,
        tx: &Tx,
    ) -> Result<ModelResponse, ProviderError> {
        let body = wire_body(&request)?;
        tracing::debug!(bytes = body.len(), messages = request.messages.len(), "request body");
        // Release our handle on the history at once so the engine can append without a copy.
        drop(request);
        let headers = self.headers()?;
        let url = format!("{}/v1/messages", self.config.base_url);
        let mut attempt = 0u32;
        loop {
            let outcome = tokio::select! {
                _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
                r = self.attempt(&url, &headers, &body, tx) => r,
            };
            let (status, message, hint) = match outcome {
                Ok(resp) => return Ok(resp),
                Err(AttemptError::Fatal(e)) => return Err(e),
                Err(AttemptError::Retryable { status, message, hint }) => (status, message, hint),
            };
            attempt += 1;
            if attempt > self.retry.max_retries {
                return Err(ProviderError::RetriesExhausted {
                    attempts: attempt,
                    last: message,
                });
            }
            let delay = self.retry.delay(attempt, hint);
            tracing::info!(attempt, status, error = %message, delay_ms = delay.as_millis() as u64, "retrying");
            let _ = tx
                .send(Ok(ProviderEvent::Retry {
                    attempt,
                    max_retries: self.retry.max_retries,
                    delay_ms: delay.as_millis() as u64,
                    status,
                    error: message,
                }))
                .await;
            tokio::select! {
                _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    #[tracing::instrument(name = "attempt", level = "debug", skip_all)]
    async fn attempt(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &[u8],
        tx: &Tx,
    ) -> Result<ModelResponse, AttemptError> {
        let resp = self
            .client
            .post(url)
            .headers(headers.clone())
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| AttemptError::Retryable {
                status: None,
                message: format!("connection failed: {}", error_chain(&e)),
                hint: None,
            })?;
        let status = resp.status().as_u16();
        tracing::debug!(status, "response headers");
        if !resp.status().is_success() {
            let header = |k: &str| resp.headers().get(k).and_then(|v| v.to_str().ok()).map(str::to_owned);
            let hint = server_delay(header("retry-after-ms").as_deref(), header("retry-after").as_deref());
            let should_retry = header("x-should-retry");
            let text = resp.text().await.unwrap_or_default();
            let message = api_error_message(&text);
            let retry = match should_retry.as_deref() {
                Some("true") => true,
                Some("false") => false,
                _ => is_retryable_status(status),
            };
            if retry {
                return Err(AttemptError::Retryable {
                    status: Some(status),
                    message: format!("HTTP {status}: {message}"),
                    hint,
                });
            }
            return Err(AttemptError::Fatal(match status {
                401 | 403 => ProviderError::Auth {
                    status,
                    message: format!("{message} (check ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN)"),
                },
                _ => ProviderError::Rejected { status, message },
            }));
        }

        let mut events = resp.bytes_stream().eventsource();
        let mut asm = Assembler::new();
        loop {
            let next = match tokio::time::timeout(self.config.idle_timeout, events.next()).await {
                Ok(n) => n,
                Err(_) => {
                    return Err(AttemptError::Retryable {
                        status: None,
                        message: format!("no data from the API for {}s", self.config.idle_timeout.as_secs()),
                        hint: None,
                    });
                }
            };
            let Some(event) = next else { break };
            let event = event.map_err(|e| AttemptError::Retryable {
                status: None,
                message: format!("the response stream broke: {e}"),
                hint: None,
            })?;
            if self.include_raw
                && let Ok(raw) = serde_json::from_str::<Value>(&event.data)
            {
                let _ = tx.send(Ok(ProviderEvent::Raw(raw))).await;
            }
            match asm.handle(&event.event, &event.data) {
                Ok(out) => {
                    for e in out {
                        let _ = tx.send(Ok(e)).await;
                    }
                }
                Err(f) if f.retryable => {
                    return Err(AttemptError::Retryable {
                        status: None,
                        message: f.message,
                        hint: None,
                    });
                }
                Err(f) => return Err(AttemptError::Fatal(ProviderError::Stream(f.message))),
            }
            if asm.is_done() {
                break;
            }
        }
        asm.finish().map_err(|f| AttemptError::Retryable {
            status: None,
            message: f.message,
            hint: None,
        })
    }
}

/// The request body: the neutral request plus `stream: true`; no empty `tools` array.
pub fn wire_body(request: &ModelRequest) -> Result<Vec<u8>, ProviderError> {
    #[derive(serde::Serialize)]
    struct Wire<'a> {
        model: &'a str,
        max_tokens: u32,
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        system: &'a [super::SystemBlock],
        messages: WireMessages<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tools: Option<&'a serde_json::value::RawValue>,
        #[serde(skip_serializing_if = "Option::is_none")]
        thinking: Option<serde_json::Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        output_config: Option<serde_json::Value>,
        stream: bool,
    }
    let thinking = request.reasoning.thinking.map(|t| match t {
        super::Thinking::Enabled { budget_tokens } => {
            serde_json::json!({"type": "enabled", "budget_tokens": budget_tokens})
        }
        super::Thinking::Adaptive => serde_json::json!({"type": "adaptive"}),
        super::Thinking::Disabled => serde_json::json!({"type": "disabled"}),
    });
    let wire = Wire {
        model: &request.model,
        max_tokens: request.max_tokens,
        system: &request.system,
        messages: WireMessages {
            messages: &request.messages,
            breakpoints: &request.cache_breakpoints,
        },
        tools: (!request.tools.is_empty()).then(|| request.tools.encoded()),
        thinking,
        output_config: request
            .reasoning
            .effort
            .as_ref()
            .map(|e| serde_json::json!({"effort": e})),
        stream: true,
    };
    serde_json::to_vec(&wire).map_err(|e| ProviderError::Config(format!("cannot encode request: {e}")))
}

/// The messages, borrowed; only the few carrying a cache breakpoint are copied to mark them.
struct WireMessages<'a> {
    messages: &'a [crate::message::Message],
    breakpoints: &'a [usize],
}

impl serde::Serialize for WireMessages<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.messages.len()))?;
        for (i, m) in self.messages.iter().enumerate() {
            if self.breakpoints.contains(&i) {
                seq.serialize_element(&with_breakpoint(m))?;
            } else {
                seq.serialize_element(m)?;
            }
        }
        seq.end()
    }
}

/// A copy of `m` with a cache breakpoint on its last block that can carry one.
fn with_breakpoint(m: &crate::message::Message) -> crate::message::Message {
    use crate::message::{CacheControl, ContentBlock};
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

/// Extracts `error.message` from an API error body, or a short excerpt of the raw body.
fn api_error_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let kind = v["error"]["type"].as_str();
        if let Some(msg) = v["error"]["message"].as_str() {
            return match kind {
                Some(k) => format!("{k}: {msg}"),
                None => msg.to_string(),
            };
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        "no error details in the response".into()
    } else {
        trimmed.chars().take(300).collect()
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        out.push_str(": ");
        out.push_str(&s.to_string());
        src = s.source();
    }
    out
}
