//! Asks a server how large a model's context window is, for models the table does not know:
//! vLLM and OpenRouter list it in `/models` (`max_model_len`, `context_length`), llama.cpp's
//! `llama-server` in `/props` (`n_ctx`), Ollama in `/api/ps` (a loaded model's
//! `context_length`) or in `/api/show` (`num_ctx` when the model sets one). The questions go out
//! together, each bounded, and an unreachable server only means "no answer". llama.cpp's
//! `/props` also says whether the chat template it applies supports tools
//! (`chat_template_caps.supports_tools`): one without them drops every tool from the prompt.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use super::catalog::Endpoint;

/// Longest time spent asking.
pub const PROBE_TIME: Duration = Duration::from_secs(3);
/// Largest answer read (OpenRouter's model list is about a megabyte).
const PROBE_BODY_CAP: usize = 8 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The window the server uses for the model.
    pub window: Option<u64>,
    /// Which question answered (`vLLM /v1/models`, `llama.cpp /props`, …).
    pub answered_by: Option<String>,
    /// Something the user should know (Ollama's default context is smaller than the model's).
    pub note: Option<String>,
    /// Whether the server passes tools to the model (`None`: it did not say).
    pub tools: Option<bool>,
}

impl Probe {
    fn none() -> Probe {
        Probe {
            window: None,
            answered_by: None,
            note: None,
            tools: None,
        }
    }

    /// The warning for a server that leaves the tools out of the prompt.
    pub fn tools_note(&self, model: &str) -> Option<String> {
        (self.tools == Some(false)).then(|| {
            format!(
                "the server's chat template for {model} does not support tools (llama.cpp /props: supports_tools \
                 false), so it leaves keel's tools out of the prompt and the model can only answer: start \
                 llama-server with --jinja and a template that supports tools (--chat-template-file)"
            )
        })
    }
}

/// Asks every known question at once and takes the most specific answer.
pub async fn context_window(endpoint: &Endpoint, model: &str) -> Probe {
    let base = endpoint.base_url.as_str().to_string();
    let root = endpoint.base_url.root();
    let client = match endpoint.client() {
        Ok(c) => c,
        // The session's first request will fail with the same reason, and say it.
        Err(why) => {
            tracing::debug!(%why, "no probe of the server's context window");
            return Probe::none();
        }
    };
    let get = |url: String| fetch(&client, &endpoint.headers, url, None);
    let (models, props, ps, show) = tokio::join!(
        get(format!("{base}/models")),
        get(format!("{root}/props")),
        get(format!("{root}/api/ps")),
        fetch(
            &client,
            &endpoint.headers,
            format!("{root}/api/show"),
            Some(json!({ "model": model })),
        ),
    );
    interpret(model, models.as_ref(), props.as_ref(), ps.as_ref(), show.as_ref())
}

/// The same from synchronous start-up code: a short-lived runtime on its own thread.
pub fn context_window_blocking(endpoint: &Endpoint, model: &str) -> Probe {
    let endpoint = endpoint.clone();
    let model = model.to_string();
    let none = Probe::none();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        Some(rt.block_on(context_window(&endpoint, &model)))
    })
    .join()
    .ok()
    .flatten()
    .unwrap_or(none)
}

async fn fetch(client: &reqwest::Client, headers: &HeaderMap, url: String, body: Option<Value>) -> Option<Value> {
    let request = match body {
        Some(b) => client.post(url).json(&b),
        None => client.get(url),
    };
    let send = request.headers(headers.clone()).timeout(PROBE_TIME).send();
    let mut resp = tokio::time::timeout(PROBE_TIME, send).await.ok()?.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let deadline = tokio::time::Instant::now() + PROBE_TIME;
    let mut bytes = Vec::new();
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(deadline, resp.chunk()).await {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > PROBE_BODY_CAP {
            return None;
        }
    }
    serde_json::from_slice(&bytes).ok()
}

fn same_model(id: &str, model: &str) -> bool {
    let strip = |s: &str| s.strip_suffix(":latest").unwrap_or(s).to_ascii_lowercase();
    strip(id) == strip(model)
}

/// Reads the answers (pure, so each server's shape is tested from a sample).
pub fn interpret(
    model: &str,
    models: Option<&Value>,
    props: Option<&Value>,
    ps: Option<&Value>,
    show: Option<&Value>,
) -> Probe {
    let tools = props.and_then(|p| {
        p["chat_template_caps"]["supports_tools"]
            .as_bool()
            .or(p["supports_tools"].as_bool())
    });
    Probe {
        tools,
        ..window(model, models, props, ps, show)
    }
}

fn window(
    model: &str,
    models: Option<&Value>,
    props: Option<&Value>,
    ps: Option<&Value>,
    show: Option<&Value>,
) -> Probe {
    let found = |window: u64, by: &str| Probe {
        window: Some(window),
        answered_by: Some(by.to_string()),
        note: None,
        tools: None,
    };
    // Ollama: a loaded model's real context, or the num_ctx its Modelfile sets.
    if let Some(list) = ps.and_then(|v| v["models"].as_array())
        && let Some(m) = list.iter().find(|m| {
            m["name"]
                .as_str()
                .or(m["model"].as_str())
                .is_some_and(|n| same_model(n, model))
        })
        && let Some(n) = m["context_length"].as_u64().filter(|n| *n > 0)
    {
        return found(n, "Ollama /api/ps");
    }
    if let Some(show) = show {
        let num_ctx = show["parameters"].as_str().and_then(|p| {
            p.lines().find_map(|l| {
                let mut words = l.split_whitespace();
                (words.next() == Some("num_ctx")).then(|| words.next()?.parse::<u64>().ok())?
            })
        });
        if let Some(n) = num_ctx.filter(|n| *n > 0) {
            return found(n, "Ollama /api/show (num_ctx)");
        }
        let trained = show["model_info"].as_object().and_then(|info| {
            info.iter()
                .find(|(k, _)| k.ends_with(".context_length"))
                .and_then(|(_, v)| v.as_u64())
        });
        if show["model_info"].is_object() || show["parameters"].is_string() {
            return Probe {
                window: None,
                answered_by: Some("Ollama /api/show".into()),
                tools: None,
                note: Some(format!(
                    "Ollama serves {model} with its default context length (OLLAMA_CONTEXT_LENGTH, often only 4096 \
                     tokens){} and cuts longer prompts without an error: start it with OLLAMA_CONTEXT_LENGTH=32768 \
                     (or more), and tell keel the same number in the models setting (contextWindow)",
                    trained
                        .map(|t| format!(" although the model supports {t}"))
                        .unwrap_or_default()
                )),
            };
        }
    }
    if let Some(list) = models.and_then(|v| v["data"].as_array())
        && let Some(m) = list
            .iter()
            .find(|m| m["id"].as_str().is_some_and(|id| same_model(id, model)))
    {
        if let Some(n) = m["max_model_len"].as_u64().filter(|n| *n > 0) {
            return found(n, "/models (max_model_len)");
        }
        if let Some(n) = m["context_length"]
            .as_u64()
            .or(m["top_provider"]["context_length"].as_u64())
            .filter(|n| *n > 0)
        {
            return found(n, "/models (context_length)");
        }
    }
    if let Some(p) = props {
        let n = p["default_generation_settings"]["n_ctx"]
            .as_u64()
            .or(p["n_ctx"].as_u64())
            .filter(|n| *n > 0);
        if let Some(n) = n {
            return found(n, "llama.cpp /props (n_ctx)");
        }
    }
    Probe::none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_server_shape_is_read() {
        let vllm =
            json!({"object": "list", "data": [{"id": "Qwen/Qwen3-8B", "object": "model", "max_model_len": 40960}]});
        assert_eq!(
            interpret("Qwen/Qwen3-8B", Some(&vllm), None, None, None).window,
            Some(40960)
        );
        let openrouter = json!({"data": [{"id": "z-ai/glm-4.6", "context_length": 202752, "top_provider": {"context_length": 202752}}]});
        assert_eq!(
            interpret("z-ai/glm-4.6", Some(&openrouter), None, None, None).window,
            Some(202752)
        );
        let llama = json!({"default_generation_settings": {"n_ctx": 16384}, "total_slots": 1});
        let p = interpret("anything.gguf", None, Some(&llama), None, None);
        assert_eq!(
            (p.window, p.answered_by.as_deref()),
            (Some(16384), Some("llama.cpp /props (n_ctx)"))
        );
        let ps = json!({"models": [{"name": "qwen3-coder:30b", "model": "qwen3-coder:30b", "context_length": 32768}]});
        assert_eq!(
            interpret("qwen3-coder:30b", None, None, Some(&ps), None).window,
            Some(32768)
        );
        let show =
            json!({"parameters": "temperature 0.7\nnum_ctx 65536", "model_info": {"qwen3moe.context_length": 262144}});
        assert_eq!(interpret("m", None, None, None, Some(&show)).window, Some(65536));
    }

    #[test]
    fn ollama_without_num_ctx_gets_a_note_not_the_trained_length() {
        let show = json!({"parameters": "temperature 0.7", "model_info": {"llama.context_length": 131072}});
        let p = interpret("llama3.1:8b", None, None, None, Some(&show));
        assert_eq!(p.window, None);
        let note = p.note.unwrap();
        assert!(
            note.contains("OLLAMA_CONTEXT_LENGTH") && note.contains("131072"),
            "{note}"
        );
    }

    #[test]
    fn a_template_without_tools_is_noticed() {
        let props = json!({"default_generation_settings": {"n_ctx": 8192},
            "chat_template_caps": {"supports_tools": false, "supports_tool_calls": false}});
        let p = interpret("m.gguf", None, Some(&props), None, None);
        assert_eq!((p.window, p.tools), (Some(8192), Some(false)));
        assert!(p.tools_note("m.gguf").unwrap().contains("--jinja"));
        let with = json!({"chat_template_caps": {"supports_tools": true}});
        assert_eq!(interpret("m", None, Some(&with), None, None).tools_note("m"), None);
        assert_eq!(interpret("m", None, None, None, None).tools, None);
    }

    #[test]
    fn unrelated_answers_tell_nothing() {
        let other = json!({"data": [{"id": "another-model", "max_model_len": 4096}]});
        assert_eq!(
            interpret("mine", Some(&other), Some(&json!({})), None, None).window,
            None
        );
    }
}
