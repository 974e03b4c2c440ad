//! The model table: context windows, output limits, prices and capabilities of the common
//! Anthropic, OpenAI, DeepSeek, Qwen, Llama, Gemma and Mistral models; the `models` setting
//! overrides any of them; windows learned from a local server fill in for models the table does
//! not know; anything else gets a conservative default that the caller says out loud.
//!
//! The overrides and learned windows are process-wide (installed once at start), so every
//! reader of [`info`] — the compactor, the cost totals, the TUI — sees the same answer.

use std::collections::HashMap;
use std::sync::{LazyLock, RwLock};

use serde_json::Value;

mod table;

use table::table;

/// Used when neither `--model` nor a setting names one (Anthropic).
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// The default for `--provider openai` (Chat Completions).
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1";
/// The default for `--provider openai-responses`.
pub const DEFAULT_RESPONSES_MODEL: &str = "gpt-5";
/// Context window assumed for a model nobody knows.
pub const UNKNOWN_WINDOW: u64 = 32_768;
const UNKNOWN_MAX_OUTPUT: u32 = 8_192;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    /// USD per million tokens.
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
}

/// USD per search of a provider's web search tool (Anthropic's and OpenAI's list price: $10
/// per 1,000 searches).
pub const WEB_SEARCH_USD: f64 = 0.01;

impl Pricing {
    pub fn cost(&self, usage: &crate::types::message::Usage) -> f64 {
        (usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_creation_input_tokens as f64 * self.cache_write
            + usage.cache_read_input_tokens as f64 * self.cache_read)
            / 1_000_000.0
            + usage.web_search_requests as f64 * WEB_SEARCH_USD
    }
}

/// How the system prompt is sent on Chat Completions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemRole {
    System,
    /// OpenAI's reasoning models take instructions as a `developer` message.
    Developer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The model can call tools (without, keel runs it as a plain chat and says so).
    pub tools: bool,
    pub images: bool,
    /// The model reasons before answering (Responses: ask for reasoning summaries).
    pub thinking: bool,
    pub system_role: SystemRole,
    /// Chat Completions: the server wants the model's `reasoning_content` back in the history
    /// (DeepSeek's thinking mode while calling tools); others reject or ignore it.
    pub send_reasoning: bool,
    /// Chat Completions: the output limit is `max_completion_tokens` (OpenAI's current models)
    /// rather than `max_tokens` (what most compatible servers read).
    pub max_completion_tokens: bool,
}

const BASIC: Capabilities = Capabilities {
    tools: true,
    images: false,
    thinking: false,
    system_role: SystemRole::System,
    send_reasoning: false,
    max_completion_tokens: false,
};

/// Where a model's facts came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Table,
    /// The `models` setting.
    Settings,
    /// Asked of the server (Ollama, llama.cpp, vLLM, OpenRouter).
    Server,
    /// Nobody knows this model: conservative defaults.
    Default,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Table => "keel's model table",
            Source::Settings => "the models setting",
            Source::Server => "the server",
            Source::Default => "keel's default for unknown models",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelInfo {
    pub context_window: u64,
    pub max_output: u32,
    pub pricing: Option<Pricing>,
    pub caps: Capabilities,
    /// Where the context window came from.
    pub source: Source,
}

/// Resolves the reference's aliases to full model ids: the current models the reference
/// names with them (`--model`, `/model`, a sub-agent's `model:`).
pub fn resolve_alias(name: &str) -> String {
    match name {
        "sonnet" => "claude-sonnet-5-5".into(),
        "opus" => "claude-opus-5-5".into(),
        "haiku" => "claude-haiku-5-5".into(),
        other => other.to_string(),
    }
}

/// What keel knows about a model.
pub fn info(model: &str) -> ModelInfo {
    let mut info = table(&base_name(model)).unwrap_or(ModelInfo {
        context_window: UNKNOWN_WINDOW,
        max_output: UNKNOWN_MAX_OUTPUT,
        pricing: None,
        caps: BASIC,
        source: Source::Default,
    });
    let known = KNOWN.read().unwrap_or_else(|p| p.into_inner());
    let names = candidates(model);
    if let Some(window) = names.iter().find_map(|n| known.learned.get(n)) {
        info.context_window = *window;
        info.source = Source::Server;
    }
    if let Some(o) = names.iter().find_map(|n| known.overrides.get(n)) {
        o.apply(&mut info);
    }
    info
}

/// Names a setting may use for `model`: the id as given, without a provider prefix
/// (`qwen/qwen3-coder`), and without a tag (`qwen3-coder:30b`); lower case.
fn candidates(model: &str) -> Vec<String> {
    let full = model.to_ascii_lowercase();
    let base = full.rsplit('/').next().unwrap_or(&full).to_string();
    let untagged = base.split(':').next().unwrap_or(&base).to_string();
    let mut out = vec![full];
    for n in [base, untagged] {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

fn base_name(model: &str) -> String {
    let m = model.to_ascii_lowercase();
    m.rsplit('/').next().unwrap_or(&m).to_string()
}

/// Settings overrides and windows learned from servers.
#[derive(Default)]
struct Known {
    overrides: HashMap<String, Override>,
    learned: HashMap<String, u64>,
}

static KNOWN: LazyLock<RwLock<Known>> = LazyLock::new(Default::default);

/// Remembers a window a server reported for `model`.
pub fn learn_window(model: &str, window: u64) {
    let mut known = KNOWN.write().unwrap_or_else(|p| p.into_inner());
    known.learned.insert(model.to_ascii_lowercase(), window);
}

/// Installs the `models` setting (entries replace earlier ones of the same name).
pub fn install_overrides(overrides: HashMap<String, Override>) {
    let mut known = KNOWN.write().unwrap_or_else(|p| p.into_inner());
    for (k, v) in overrides {
        known.overrides.insert(k.to_ascii_lowercase(), v);
    }
}

/// Model names the `models` setting configures (for `/model`).
pub fn configured_names() -> Vec<String> {
    let known = KNOWN.read().unwrap_or_else(|p| p.into_inner());
    let mut names: Vec<String> = known.overrides.keys().cloned().collect();
    names.sort();
    names
}

/// Saves `spec` as the default model (`model`) in a settings file, keeping everything else in it.
pub fn save_default(path: &std::path::Path, spec: &str) -> Result<(), String> {
    let mut value = match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str::<Value>(&text)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| {
                format!(
                    "{} is not a JSON object; fix it to save the model there",
                    path.display()
                )
            })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Default::default()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    value["model"] = Value::String(spec.to_string());
    let mut text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
    text.push('\n');
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    crate::fsutil::write_atomic(path, text.as_bytes()).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// One entry of the `models` setting; unset fields keep the table's value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Override {
    pub context_window: Option<u64>,
    pub max_output: Option<u32>,
    pub input_price: Option<f64>,
    pub output_price: Option<f64>,
    pub cache_read_price: Option<f64>,
    pub cache_write_price: Option<f64>,
    pub tools: Option<bool>,
    pub images: Option<bool>,
    pub thinking: Option<bool>,
    pub system_role: Option<SystemRole>,
    pub send_reasoning: Option<bool>,
    pub max_completion_tokens: Option<bool>,
}

impl Override {
    fn apply(&self, info: &mut ModelInfo) {
        if let Some(w) = self.context_window {
            info.context_window = w;
            info.source = Source::Settings;
        }
        if let Some(m) = self.max_output {
            info.max_output = m;
        }
        if let (Some(input), Some(output)) = (self.input_price, self.output_price) {
            info.pricing = Some(Pricing {
                input,
                output,
                cache_write: self.cache_write_price.unwrap_or(input),
                cache_read: self.cache_read_price.unwrap_or(input * 0.1),
            });
        } else if let Some(p) = info.pricing.as_mut() {
            if let Some(r) = self.cache_read_price {
                p.cache_read = r;
            }
            if let Some(w) = self.cache_write_price {
                p.cache_write = w;
            }
        }
        let c = &mut info.caps;
        for (field, value) in [
            (&mut c.tools, self.tools),
            (&mut c.images, self.images),
            (&mut c.thinking, self.thinking),
            (&mut c.send_reasoning, self.send_reasoning),
            (&mut c.max_completion_tokens, self.max_completion_tokens),
        ] {
            if let Some(v) = value {
                *field = v;
            }
        }
        if let Some(r) = self.system_role {
            c.system_role = r;
        }
    }

    /// Parses one entry; `what` names it in errors (`models.qwen3-coder`).
    pub fn parse(what: &str, v: &Value) -> Result<Override, String> {
        let obj = v
            .as_object()
            .ok_or_else(|| format!("{what} must be an object, found {v}"))?;
        let mut o = Override::default();
        for (key, val) in obj {
            let bad = |expected: &str| format!("{what}.{key} must be {expected}, found {val}");
            let positive = || {
                val.as_u64()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| bad("a positive whole number"))
            };
            let price = || {
                val.as_f64()
                    .filter(|p| p.is_finite() && *p >= 0.0)
                    .ok_or_else(|| bad("a price in USD per million tokens"))
            };
            let flag = || val.as_bool().ok_or_else(|| bad("true or false"));
            match key.as_str() {
                "contextWindow" => o.context_window = Some(positive()?),
                "maxOutputTokens" => {
                    o.max_output = Some(u32::try_from(positive()?).map_err(|_| bad("a smaller number"))?)
                }
                "inputPrice" => o.input_price = Some(price()?),
                "outputPrice" => o.output_price = Some(price()?),
                "cacheReadPrice" => o.cache_read_price = Some(price()?),
                "cacheWritePrice" => o.cache_write_price = Some(price()?),
                "tools" => o.tools = Some(flag()?),
                "images" => o.images = Some(flag()?),
                "thinking" => o.thinking = Some(flag()?),
                "sendReasoning" => o.send_reasoning = Some(flag()?),
                "maxCompletionTokens" => o.max_completion_tokens = Some(flag()?),
                "systemRole" => {
                    o.system_role = Some(match val.as_str() {
                        Some("system") => SystemRole::System,
                        Some("developer") => SystemRole::Developer,
                        _ => return Err(bad("\"system\" or \"developer\"")),
                    })
                }
                other => {
                    return Err(format!(
                        "{what}: unknown field `{other}` (known: contextWindow, maxOutputTokens, inputPrice, \
                         outputPrice, cacheReadPrice, cacheWritePrice, tools, images, thinking, systemRole, \
                         sendReasoning, maxCompletionTokens)"
                    ));
                }
            }
        }
        if o.input_price.is_some() != o.output_price.is_some() {
            return Err(format!(
                "{what}: give both inputPrice and outputPrice (USD per million tokens)"
            ));
        }
        Ok(o)
    }

    /// Whether the entry sets any price.
    pub fn has_prices(&self) -> bool {
        self.input_price.is_some()
            || self.output_price.is_some()
            || self.cache_read_price.is_some()
            || self.cache_write_price.is_some()
    }

    /// Later fields win, field by field (settings layers merge this way).
    pub fn merge(&mut self, later: Override) {
        macro_rules! take {
            ($($f:ident),*) => { $( if later.$f.is_some() { self.$f = later.$f; } )* };
        }
        take!(
            context_window,
            max_output,
            input_price,
            output_price,
            cache_read_price,
            cache_write_price,
            tools,
            images,
            thinking,
            system_role,
            send_reasoning,
            max_completion_tokens
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::message::Usage;
    use serde_json::json;

    #[test]
    fn aliases_and_costs() {
        assert_eq!(resolve_alias("sonnet"), "claude-sonnet-5-5");
        assert_eq!(resolve_alias("opus"), "claude-opus-5-5");
        assert_eq!(resolve_alias("haiku"), "claude-haiku-5-5");
        for alias in ["sonnet", "opus", "haiku"] {
            let i = info(&resolve_alias(alias));
            assert!(i.pricing.is_some(), "{alias} has a price");
            assert_eq!((i.context_window, i.max_output), (1_000_000, 128_000), "{alias}");
        }
        let p = info("claude-sonnet-4-5").pricing.unwrap();
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            ..Usage::default()
        };
        assert!((p.cost(&u) - 18.0).abs() < 1e-9);
        assert!(info("some-local-model").pricing.is_none());
    }

    #[test]
    fn the_families_are_known() {
        let i = info("gpt-4o-2024-08-06");
        assert_eq!((i.context_window, i.source), (128_000, Source::Table));
        assert!(i.caps.images && i.caps.max_completion_tokens);
        assert_eq!(info("gpt-5-codex").caps.system_role, SystemRole::Developer);
        assert_eq!(info("o3").caps.system_role, SystemRole::Developer);
        assert_eq!(info("qwen/qwen3-coder").context_window, 262_144);
        assert_eq!(info("qwen3-coder:30b").context_window, 262_144);
        assert_eq!(info("llama3.1:8b").context_window, 131_072);
        assert!(!info("gemma3:4b").caps.tools);
        assert!(info("deepseek-reasoner").caps.send_reasoning);
        assert!(!info("deepseek-chat").caps.send_reasoning);
        assert_eq!(info("mistral-small3.1").context_window, 131_072);
        assert_eq!(
            info("anthropic/claude-haiku-4.5").pricing,
            table::anthropic_price(1.0, 5.0)
        );
    }

    #[test]
    fn unknown_models_get_a_conservative_window_and_no_price() {
        let i = info("my-finetune-7b");
        assert_eq!(i.context_window, UNKNOWN_WINDOW);
        assert_eq!(i.source, Source::Default);
        assert!(i.pricing.is_none());
    }

    #[test]
    fn settings_override_and_servers_teach() {
        // Names unique to this test: the table is process-wide.
        let mut map = HashMap::new();
        map.insert(
            "override-test-coder".to_string(),
            Override::parse(
                "models.override-test-coder",
                &json!({"contextWindow": 65536, "inputPrice": 0, "outputPrice": 0, "images": true}),
            )
            .unwrap(),
        );
        install_overrides(map);
        let i = info("ollama/override-test-coder:7b");
        assert_eq!((i.context_window, i.source), (65_536, Source::Settings));
        assert_eq!(
            i.pricing.unwrap().cost(&Usage {
                input_tokens: 5,
                ..Usage::default()
            }),
            0.0
        );
        assert!(i.caps.images);
        assert!(configured_names().contains(&"override-test-coder".to_string()));
        learn_window("learned-test-model", 12_288);
        let l = info("learned-test-model");
        assert_eq!((l.context_window, l.source), (12_288, Source::Server));
    }

    #[test]
    fn the_default_is_saved_without_losing_other_settings() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("k/settings.json");
        save_default(&p, "ollama/qwen3-coder").unwrap();
        std::fs::write(&p, r#"{"permissions": {"allow": ["Read"]}, "model": "opus"}"#).unwrap();
        save_default(&p, "gpt-4.1").unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(v, json!({"permissions": {"allow": ["Read"]}, "model": "gpt-4.1"}));
        std::fs::write(&p, "[1, 2]").unwrap();
        assert!(save_default(&p, "x").unwrap_err().contains("not a JSON object"));
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "[1, 2]",
            "a file keel cannot read stays as it was"
        );
    }

    #[test]
    fn bad_overrides_are_explained() {
        let e = |v: Value| Override::parse("models.x", &v).unwrap_err();
        assert!(e(json!({"contextWindow": 0})).contains("models.x.contextWindow"));
        assert!(e(json!({"inputPrice": 1})).contains("both inputPrice and outputPrice"));
        assert!(e(json!({"systemRole": "root"})).contains("\"developer\""));
        assert!(e(json!({"window": 5})).contains("unknown field `window`"));
        assert!(e(json!(5)).contains("must be an object"));
        let mut a = Override::parse("a", &json!({"contextWindow": 1000, "tools": false})).unwrap();
        a.merge(Override::parse("b", &json!({"contextWindow": 2000})).unwrap());
        assert_eq!((a.context_window, a.tools), (Some(2000), Some(false)));
    }
}
