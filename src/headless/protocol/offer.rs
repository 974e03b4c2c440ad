//! What `initialize` tells a program about models and the account, in the reference's field
//! shapes but filled from the session's real providers: the models `set_model` can switch to
//! (the list the TUI's `/model` offers), and where the current provider's key comes from.

use serde_json::{Value, json};

use super::control::ModelRoutes;
use crate::config::models::{self, Source};
use crate::provider::catalog::{Catalog, Kind};

/// The reference's aliases, offered when models without a provider name go to Anthropic.
const ALIASES: [&str; 3] = ["sonnet", "opus", "haiku"];

/// The `models` list: `default` (the model the session started with) first, then every model
/// `set_model` accepts by the `value` given. `default_spec` and `current` are models as the
/// user names them (`ollama/qwen3-coder`).
pub fn models(routes: Option<&ModelRoutes>, default_spec: &str, current: &str) -> Vec<Value> {
    let Some(routes) = routes else {
        // The script provider answers to any name; it has no list of its own.
        let mut out = vec![entry_default(None, default_spec)];
        if current != default_spec {
            out.push(entry(None, current, current.to_string()));
        }
        return out;
    };
    let catalog = &*routes.catalog;
    let mut out = vec![entry_default(Some(catalog), &routes.default_spec)];
    let mut listed: Vec<String> = Vec::new();
    if catalog.default_kind() == Kind::Anthropic {
        for alias in ALIASES {
            out.push(entry(Some(catalog), alias, capitalized(alias)));
            listed.push(resolved(catalog, alias));
        }
    }
    let configured: Vec<String> = routes
        .fallback
        .iter()
        .flat_map(|f| crate::provider::fallback::chain(f))
        .collect();
    for spec in catalog.choices(current, &configured) {
        let full = resolved(catalog, &spec);
        if !listed.contains(&full) {
            out.push(entry(Some(catalog), &spec, spec.clone()));
            listed.push(full);
        }
    }
    out
}

/// The `account` object: where the current provider's key comes from, and which provider
/// that is (`provider`, `providerType`: keel's own fields).
pub fn account(catalog: Option<&Catalog>, current: &str) -> Value {
    let mut account = json!({"tokenSource": "none", "apiKeySource": key_source(catalog, current)});
    let (name, kind) = match catalog {
        Some(c) => {
            let (name, kind) = c.provider_of(current);
            (name, kind.name())
        }
        None => ("script", "script"),
    };
    if name == Kind::Anthropic.name() {
        // The reference's word for Anthropic's own API.
        account["apiProvider"] = json!("firstParty");
    }
    account["provider"] = json!(name);
    account["providerType"] = json!(kind);
    account
}

/// `apiKeySource` for the model `current` (`none` with the script provider).
pub fn key_source(catalog: Option<&Catalog>, current: &str) -> String {
    catalog.map_or_else(|| "none".to_string(), |c| c.key_source(current))
}

fn entry_default(catalog: Option<&Catalog>, default_spec: &str) -> Value {
    let mut e = entry(catalog, default_spec, "Default".into());
    e["value"] = json!("default");
    e["description"] = json!(format!(
        "The model this session started with ({}) · {}",
        e["resolvedModel"].as_str().unwrap_or(default_spec),
        e["description"].as_str().unwrap_or_default()
    ));
    e
}

/// One model: `value` is what `set_model` takes, `resolvedModel` the model it means.
fn entry(catalog: Option<&Catalog>, value: &str, display: String) -> Value {
    let full = catalog.map_or_else(|| models::resolve_alias(value), |c| resolved(c, value));
    let provider = catalog.map_or("script", |c| c.provider_of(value).0);
    json!({
        "value": value,
        "resolvedModel": full,
        "displayName": display,
        "description": describe(provider, &full),
        "provider": provider,
    })
}

/// `NAME/MODEL` with the model's alias resolved (`sonnet` → `claude-sonnet-5-5`).
fn resolved(catalog: &Catalog, spec: &str) -> String {
    match catalog.split(spec.trim()) {
        (Some(name), model) => format!("{name}/{}", models::resolve_alias(model)),
        (None, model) => models::resolve_alias(model),
    }
}

/// Provider, context window and prices, as far as keel knows them.
fn describe(provider: &str, model: &str) -> String {
    let info = models::info(model);
    let window = match info.source {
        Source::Default => "context window unknown".to_string(),
        _ => format!("{}-token context", info.context_window),
    };
    let price = match info.pricing {
        Some(p) => format!("${}/${} per Mtok", p.input, p.output),
        None => "price unknown".to_string(),
    };
    format!("{provider} · {window} · {price}")
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_provider_offers_its_models_and_names_no_key() {
        let list = models(None, "claude-sonnet-4-5", "my-model");
        let values: Vec<&str> = list.iter().filter_map(|m| m["value"].as_str()).collect();
        assert_eq!(values, ["default", "my-model"]);
        assert_eq!(list[0]["resolvedModel"], "claude-sonnet-4-5");
        let account = account(None, "my-model");
        assert_eq!(account["apiKeySource"], "none");
        assert_eq!(account["provider"], "script");
        assert!(account.get("apiProvider").is_none(), "{account}");
    }

    fn routes(kind: Kind, fallback: Option<&str>, default_spec: &str) -> ModelRoutes {
        use crate::config::settings::{Layer, Scope, Settings};
        let settings = Settings {
            layers: vec![Layer {
                scope: Scope::User,
                path: None,
                base_dir: std::env::temp_dir(),
                value: json!({"providers": {"ollama": {"type": "openai", "baseUrl": "http://127.0.0.1:1/v1",
                    "models": ["qwen3-coder", "llama3.3"]}}}),
            }],
        };
        let catalog = Catalog::new(&settings, kind, Default::default(), Default::default(), false).unwrap();
        ModelRoutes {
            catalog: std::sync::Arc::new(catalog),
            fallback: fallback.map(str::to_string),
            default_spec: default_spec.to_string(),
        }
    }

    fn values(list: &[Value]) -> Vec<&str> {
        list.iter().filter_map(|m| m["value"].as_str()).collect()
    }

    #[test]
    fn an_openai_session_offers_its_own_models_and_no_claude_aliases() {
        let r = routes(Kind::OpenAi, Some("ollama/qwen3-coder"), "gpt-4.1");
        let list = models(Some(&r), "gpt-4.1", "ollama/llama3.3");
        let v = values(&list);
        assert_eq!(
            v[..2],
            ["default", "ollama/llama3.3"],
            "default, then the current model"
        );
        for want in ["gpt-4.1", "ollama/qwen3-coder"] {
            assert!(v.contains(&want), "{want} missing from {v:?}");
        }
        assert!(!v.iter().any(|m| m.contains("sonnet") || m.contains("claude")), "{v:?}");
        assert_eq!(list[0]["resolvedModel"], "gpt-4.1");
        let qwen = list.iter().find(|m| m["value"] == "ollama/qwen3-coder").unwrap();
        assert_eq!(qwen["provider"], "ollama");
        let gpt = list.iter().find(|m| m["value"] == "gpt-4.1").unwrap();
        assert_eq!(gpt["provider"], "openai");
        let mut unique = v.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), v.len(), "no model twice: {v:?}");
        let account = account(Some(&r.catalog), "ollama/llama3.3");
        assert_eq!(
            (account["provider"].as_str(), account["providerType"].as_str()),
            (Some("ollama"), Some("openai"))
        );
        assert_eq!(account["apiKeySource"], "none", "the local server has no key");
        assert!(account.get("apiProvider").is_none(), "{account}");
    }

    #[test]
    fn an_anthropic_session_offers_the_aliases_once_and_its_other_providers() {
        let r = routes(Kind::Anthropic, None, "claude-opus-5-5");
        let list = models(Some(&r), "claude-opus-5-5", "claude-opus-5-5");
        let v = values(&list);
        assert_eq!(v[..4], ["default", "sonnet", "opus", "haiku"]);
        assert!(!v.contains(&"claude-opus-5-5"), "listed once, as its alias: {v:?}");
        assert!(v.contains(&"ollama/qwen3-coder"), "{v:?}");
        assert_eq!(list[2]["resolvedModel"], "claude-opus-5-5");
        assert_eq!(list[2]["displayName"], "Opus");
        let account = account(Some(&r.catalog), "claude-opus-5-5");
        assert_eq!(account["apiProvider"], "firstParty");
        assert_eq!(account["provider"], "anthropic");
    }

    #[test]
    fn descriptions_say_what_is_unknown() {
        assert_eq!(
            describe("ollama", "some-local-model-nobody-knows"),
            "ollama · context window unknown · price unknown"
        );
        let known = describe("anthropic", "claude-sonnet-4-5");
        assert!(
            known.starts_with("anthropic · ") && known.contains("-token context"),
            "{known}"
        );
        assert!(known.contains("per Mtok"), "{known}");
        assert_eq!(capitalized("sonnet"), "Sonnet");
    }
}
