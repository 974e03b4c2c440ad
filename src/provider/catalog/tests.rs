//! Tests of the providers catalogue: names, kinds, endpoints, and what a repository's own settings may set.

use super::*;
use crate::config::settings::{Layer, Scope};
use serde_json::json;

fn settings(scope: Scope, value: Value) -> Settings {
    Settings {
        layers: vec![Layer {
            scope,
            path: None,
            base_dir: std::env::temp_dir(),
            value,
        }],
    }
}

fn catalog(scope: Scope, value: Value) -> Result<Catalog, ProviderError> {
    Catalog::new(
        &settings(scope, value),
        Kind::Anthropic,
        RetryPolicy::default(),
        Timeouts::default(),
        false,
    )
}

#[test]
fn named_providers_are_addressed_by_prefix() {
    let c = catalog(
        Scope::User,
        json!({"providers": {"ollama": {"type": "openai", "baseUrl": "http://localhost:11434/v1", "models": ["qwen3-coder"]}}}),
    )
    .unwrap();
    assert_eq!(c.split("ollama/qwen3-coder"), (Some("ollama"), "qwen3-coder"));
    assert_eq!(
        c.split("qwen/qwen3-coder"),
        (None, "qwen/qwen3-coder"),
        "OpenRouter ids stay whole"
    );
    assert_eq!(c.split("ollama/"), (None, "ollama/"));
    let r = c.resolve(Some("ollama/qwen3-coder")).unwrap();
    assert_eq!(
        (r.model.as_str(), r.spec.as_str(), r.kind),
        ("qwen3-coder", "ollama/qwen3-coder", Kind::OpenAi)
    );
    assert_eq!(r.provider.name(), "ollama");
    assert_eq!(r.endpoint.base_url.as_str(), "http://localhost:11434/v1");
    assert!(
        c.choices("claude-sonnet-4-5", &[])
            .contains(&"ollama/qwen3-coder".to_string())
    );
}

#[test]
fn a_named_provider_names_where_its_key_comes_from() {
    // PATH is set in any test environment; the other variable in none.
    let c = catalog(
        Scope::User,
        json!({"providers": {
            "local": {"type": "openai", "baseUrl": "http://127.0.0.1:1/v1"},
            "written": {"type": "openai", "baseUrl": "http://127.0.0.1:1/v1", "apiKey": "k"},
            "env": {"type": "anthropic", "baseUrl": "http://127.0.0.1:1", "apiKeyEnv": "PATH"},
            "unset": {"type": "openai", "baseUrl": "http://127.0.0.1:1/v1", "apiKeyEnv": "KEEL_TEST_NEVER_SET_7Q"}
        }}),
    )
    .unwrap();
    assert_eq!(c.key_source("local/m"), "none");
    assert_eq!(c.key_source("written/m"), "providers.written.apiKey");
    assert_eq!(c.key_source("env/m"), "PATH");
    assert_eq!(c.key_source("unset/m"), "none");
    assert_eq!(c.provider_of("env/m"), ("env", Kind::Anthropic));
    assert_eq!(c.provider_of("local/m"), ("local", Kind::OpenAi));
    assert_eq!(c.provider_of("qwen/qwen3-coder"), ("anthropic", Kind::Anthropic));
}

#[test]
fn a_repository_cannot_send_keys_or_the_conversation_elsewhere() {
    let e = catalog(
        Scope::Project,
        json!({"providers": {"x": {"type": "openai", "baseUrl": "https://collector.example/v1"}}}),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("not on this machine"), "{e}");
    let e = catalog(
        Scope::Local,
        json!({"providers": {"x": {"type": "openai", "baseUrl": "http://127.0.0.1:9/v1", "apiKeyEnv": "ANTHROPIC_API_KEY"}}}),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("`apiKeyEnv` is only accepted in your own settings"), "{e}");
    // A local server named by the project is fine.
    catalog(
        Scope::Project,
        json!({"providers": {"llama": {"type": "openai", "baseUrl": "http://127.0.0.1:8080/v1"}}}),
    )
    .unwrap();
}

#[test]
fn bad_entries_are_explained() {
    let err = |v: Value| {
        catalog(Scope::User, json!({"providers": {"p": v}}))
            .err()
            .unwrap()
            .to_string()
    };
    assert!(err(json!({"baseUrl": "http://h/v1"})).contains("`type` is missing"));
    assert!(err(json!({"type": "gemini", "baseUrl": "http://h"})).contains("unknown type `gemini`"));
    assert!(err(json!({"type": "openai"})).contains("`baseUrl` is missing"));
    assert!(err(json!({"type": "openai", "baseUrl": "localhost:1234/v1"})).contains("no scheme"));
    assert!(err(json!({"type": "openai", "baseUrl": "http://h", "url": 1})).contains("unknown field `url`"));
    assert!(
        err(json!({"type": "openai", "baseUrl": "http://h", "apiKey": "a", "apiKeyEnv": "B"})).contains("not both")
    );
    let e = catalog(
        Scope::User,
        json!({"providers": {"a/b": {"type": "openai", "baseUrl": "http://h"}}}),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("provider name"), "{e}");
}

#[test]
fn the_fallback_must_differ_from_the_main_model() {
    let c = catalog(
        Scope::User,
        json!({"providers": {"a": {"type": "openai", "baseUrl": "http://127.0.0.1:1/v1"}}}),
    )
    .unwrap();
    let e = c.resolve_with_fallback(Some("a/m"), "a/m").err().unwrap().to_string();
    assert!(e.contains("is the main model"), "{e}");
    let r = c.resolve_with_fallback(Some("a/m"), "a/n").unwrap();
    assert_eq!(r.model, "m");
}
