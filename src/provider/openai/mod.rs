//! OpenAI's two protocols and every server that speaks one of them (OpenRouter, DeepSeek,
//! Ollama, vLLM, llama.cpp's `llama-server`, LM Studio): Chat Completions (`chat/`) and the
//! Responses API (`responses/`), each a wire encoder plus a pure stream assembler, over the
//! shared transport.

pub mod chat;
pub mod responses;

use std::sync::{Arc, Mutex};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::endpoint::BaseUrl;
use super::http::{Target, Transport, Tx};
use super::prefix::PrefixCache;
use super::{
    ModelRequest, ModelResponse, Provider, ProviderError, ProviderEvent, ProviderStream, ToolSet, channel_stream,
};
use crate::types::message::{ImageSource, ToolResultBlock, ToolResultContent};

/// The public endpoint, used when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `POST /chat/completions`
    Chat,
    /// `POST /responses`
    Responses,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Chat => "openai",
            Protocol::Responses => "openai-responses",
        }
    }
}

#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    pub base_url: BaseUrl,
    pub api_key: Option<String>,
    /// Where the key comes from, named when the server refuses it.
    pub key_hint: String,
    /// Extra headers (OpenRouter's `HTTP-Referer`/`X-Title`, a gateway's own).
    pub headers: Vec<(String, String)>,
}

impl OpenAiConfig {
    /// `OPENAI_BASE_URL` (default the public endpoint) and `OPENAI_API_KEY` (optional for other
    /// servers; local ones need none).
    pub fn from_env() -> Result<OpenAiConfig, ProviderError> {
        let nonempty = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let base_url = match nonempty("OPENAI_BASE_URL") {
            Some(raw) => BaseUrl::parse(&raw, "OPENAI_BASE_URL")?,
            None => BaseUrl::parse(DEFAULT_BASE_URL, "OPENAI_BASE_URL (default)")?,
        };
        let api_key = nonempty("OPENAI_API_KEY");
        if api_key.is_none() && base_url.as_str() == DEFAULT_BASE_URL {
            return Err(ProviderError::Config(format!(
                "no API key for {DEFAULT_BASE_URL}: set OPENAI_API_KEY, or point OPENAI_BASE_URL at another \
                 server (local servers need no key)"
            )));
        }
        Ok(OpenAiConfig {
            base_url,
            api_key,
            key_hint: "OPENAI_API_KEY".into(),
            headers: Vec::new(),
        })
    }

    fn header_map(&self) -> Result<HeaderMap, ProviderError> {
        let mut h = HeaderMap::new();
        h.insert("content-type", HeaderValue::from_static("application/json"));
        if let Some(key) = &self.api_key {
            let v = HeaderValue::from_str(&format!("Bearer {}", key.trim())).map_err(|_| {
                ProviderError::Config(format!(
                    "{} contains characters not allowed in an HTTP header",
                    self.key_hint
                ))
            })?;
            h.insert("authorization", v);
        }
        for (k, v) in &self.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| ProviderError::Config(format!("`{k}` is not a valid HTTP header name")))?;
            let value = HeaderValue::from_str(v)
                .map_err(|_| ProviderError::Config(format!("the value of header `{k}` is not allowed in HTTP")))?;
            h.insert(name, value);
        }
        Ok(h)
    }
}

/// One OpenAI-style provider: its protocol, endpoint and the caches that keep encoding cheap.
#[derive(Clone)]
pub struct OpenAiProvider {
    protocol: Protocol,
    /// Shown in `system/init` and diagnostics: the protocol or the settings' provider name.
    label: String,
    config: OpenAiConfig,
    transport: Transport,
    headers: HeaderMap,
    messages: Arc<PrefixCache>,
    tools: Arc<Mutex<Option<ConvertedTools>>>,
}

/// A tool set and its definitions in this protocol's shape.
type ConvertedTools = (ToolSet, Arc<[u8]>);

impl OpenAiProvider {
    pub fn new(
        protocol: Protocol,
        label: impl Into<String>,
        config: OpenAiConfig,
        transport: Transport,
    ) -> Result<OpenAiProvider, ProviderError> {
        let headers = config.header_map()?;
        Ok(OpenAiProvider {
            protocol,
            label: label.into(),
            config,
            transport,
            headers,
            messages: Arc::default(),
            tools: Arc::default(),
        })
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// The request body (messages reused from earlier requests where unchanged).
    pub fn body(&self, request: &ModelRequest) -> Result<Vec<u8>, ProviderError> {
        let tools = self.tools_json(&request.tools)?;
        let result = match self.protocol {
            Protocol::Chat => chat::wire::body(request, &tools, &self.messages),
            Protocol::Responses => responses::wire::body(request, &tools, &self.messages),
        };
        result.map_err(|e| ProviderError::Config(format!("cannot encode request: {e}")))
    }

    /// The tool definitions in this protocol's shape, converted once per tool set.
    fn tools_json(&self, set: &ToolSet) -> Result<Arc<[u8]>, ProviderError> {
        let mut cached = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((known, json)) = cached.as_ref()
            && known.same(set)
        {
            return Ok(json.clone());
        }
        let json: Arc<[u8]> = match self.protocol {
            Protocol::Chat => chat::wire::tools(set),
            Protocol::Responses => responses::wire::tools(set),
        }
        .map_err(|e| ProviderError::Config(format!("cannot encode the tool definitions: {e}")))?
        .into();
        *cached = Some((set.clone(), json.clone()));
        Ok(json)
    }

    #[tracing::instrument(name = "provider_request", level = "info", skip_all, fields(provider = self.protocol.name()))]
    async fn run(
        &self,
        request: ModelRequest,
        cancel: &CancellationToken,
        tx: &Tx,
    ) -> Result<ModelResponse, ProviderError> {
        let body = self.body(&request)?;
        tracing::debug!(bytes = body.len(), messages = request.messages.len(), "request body");
        let model = request.model.clone();
        // Release our handle on the history at once so the engine can append without a copy.
        drop(request);
        let path = match self.protocol {
            Protocol::Chat => "/chat/completions",
            Protocol::Responses => "/responses",
        };
        let target = Target {
            url: self.config.base_url.join(path),
            headers: self.headers.clone(),
            body: body.into(),
            base: self.config.base_url.clone(),
            key_hint: self.config.key_hint.clone(),
            protocol_adds_v1: false,
        };
        let mut response = match self.protocol {
            Protocol::Chat => self.transport.run(&target, chat::Assembler::new, cancel, tx).await?,
            Protocol::Responses => {
                self.transport
                    .run(&target, responses::Assembler::new, cancel, tx)
                    .await?
            }
        };
        if response.model.is_empty() {
            response.model = model;
        }
        Ok(response)
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        &self.label
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

/// The text of a tool result for protocols whose tool messages carry text only; images become a
/// marker and are sent separately where the model can see them. A failure says so up front
/// (neither protocol has an error flag).
pub(crate) fn result_text(content: &ToolResultContent, is_error: bool) -> String {
    let text = match content {
        ToolResultContent::Text(t) => t.clone(),
        ToolResultContent::Blocks(blocks) => {
            let mut out = String::new();
            for b in blocks {
                match b {
                    ToolResultBlock::Text { text } => out.push_str(text),
                    ToolResultBlock::Image { source } => {
                        out.push_str(&format!("[image {} attached below]", source.media_type))
                    }
                }
            }
            out
        }
    };
    if is_error && !text.trim_start().to_ascii_lowercase().starts_with("error") {
        format!("Error: {text}")
    } else {
        text
    }
}

/// Images inside a tool result.
pub(crate) fn result_images(content: &ToolResultContent) -> Vec<&ImageSource> {
    match content {
        ToolResultContent::Text(_) => Vec::new(),
        ToolResultContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                ToolResultBlock::Image { source } => Some(source),
                _ => None,
            })
            .collect(),
    }
}

/// A data URL for an image (both protocols take images this way).
pub(crate) fn data_url(source: &ImageSource) -> String {
    format!("data:{};base64,{}", source.media_type, source.data)
}

/// What a model that cannot see images gets instead of one.
pub(crate) fn image_marker(source: &ImageSource) -> String {
    format!(
        "[image {} omitted: this model does not accept images]",
        source.media_type
    )
}

/// `--effort` in OpenAI's words (`low`, `medium`, `high`; keel's higher levels are `high`).
pub(crate) fn openai_effort(effort: &str) -> &'static str {
    match effort {
        "minimal" => "minimal",
        "low" => "low",
        "medium" => "medium",
        _ => "high",
    }
}

/// A fresh tool call id for servers that send none (or the same one twice): nine letters and
/// digits, the one shape every server accepts (Mistral's insists on it).
pub(crate) fn fresh_call_id() -> String {
    (0..9).map(|_| fastrand::alphanumeric()).collect()
}

#[cfg(test)]
mod wire_tests;
