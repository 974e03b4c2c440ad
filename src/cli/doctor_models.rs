//! `keel doctor`'s model section: every configured endpoint parsed, asked one cheap question
//! (its model list; `--offline` skips it), and the session model's context window.

use std::time::Duration;

use super::args::ProviderKind;
use crate::config::models::{self, Source};
use crate::config::settings::Settings;
use crate::console::out_line;
use crate::provider::catalog::{Catalog, Endpoint, Kind};
use crate::provider::http::{Timeouts, describe_body, describe_send_error};
use crate::provider::retry::RetryPolicy;
use crate::provider::{endpoint, probe};

/// Longest wait for one endpoint's answer.
const CHECK_TIME: Duration = Duration::from_secs(10);

/// Prints the section; returns the number of problems found.
pub async fn report(provider: Option<ProviderKind>, model: Option<String>, settings: &Settings, offline: bool) -> u32 {
    let mut problems = 0;
    let kind = match provider {
        Some(ProviderKind::OpenAi) => Kind::OpenAi,
        Some(ProviderKind::OpenAiResponses) => Kind::OpenAiResponses,
        _ => Kind::Anthropic,
    };
    let timeouts = Timeouts::from_env().unwrap_or_default();
    let catalog = match Catalog::new(settings, kind, RetryPolicy::default(), timeouts, false) {
        Ok(c) => c,
        Err(e) => {
            out_line!("  FAIL {e}");
            return 1;
        }
    };
    let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.trim().is_empty());
    // (label, named provider, protocol, configured: a failure is a problem, not a note)
    let mut endpoints: Vec<(String, Option<&str>, Kind, bool)> = Vec::new();
    let anthropic_env = set("ANTHROPIC_API_KEY") || set("ANTHROPIC_AUTH_TOKEN") || set("ANTHROPIC_BASE_URL");
    if anthropic_env || kind == Kind::Anthropic {
        endpoints.push(("anthropic".into(), None, Kind::Anthropic, anthropic_env));
    }
    let openai_env = set("OPENAI_API_KEY") || set("OPENAI_BASE_URL");
    if openai_env || kind != Kind::Anthropic {
        endpoints.push(("openai".into(), None, kind.max_openai(), openai_env));
    }
    for name in catalog.named().keys() {
        endpoints.push((name.clone(), Some(name.as_str()), catalog.named()[name].kind, true));
    }
    for (label, name, k, configured) in endpoints {
        // A catalog per built-in protocol resolves that protocol's environment.
        let resolved = match name {
            Some(n) => catalog.resolve(Some(&format!("{n}/probe"))),
            None => Catalog::new(settings, k, RetryPolicy::default(), timeouts, false).and_then(|c| c.resolve(None)),
        };
        let endpoint = match resolved {
            Ok(r) => r.endpoint,
            Err(e) => {
                out_line!("  {} {label}: {e}", if configured { "FAIL" } else { "--  " });
                problems += u32::from(configured);
                continue;
            }
        };
        let base = endpoint.base_url.as_str().to_string();
        if offline {
            out_line!("  ok   {label}: {base} (not contacted: --offline)");
            continue;
        }
        match check(&endpoint, k).await {
            Ok(what) => out_line!("  ok   {label}: {base} answers ({what})"),
            Err(why) => {
                problems += 1;
                out_line!("  FAIL {label}: {why}");
            }
        }
    }

    // The model a session here would use, and its window.
    let spec = model.or_else(|| {
        settings
            .scalar("model")
            .and_then(|(v, _)| v.as_str().map(str::to_string))
            .filter(|_| provider.is_none() || kind == Kind::Anthropic)
    });
    match catalog.resolve(spec.as_deref()) {
        Ok(r) => {
            let mut info = models::info(&r.model);
            let mut asked = None;
            if !offline && crate::launch::model::should_ask(&r.model, &r.endpoint, r.kind, false) {
                let p = probe::context_window(&r.endpoint, &r.model).await;
                if let Some(w) = p.window {
                    models::learn_window(&r.model, w);
                }
                info = models::info(&r.model);
                asked = Some(p);
            }
            out_line!(
                "  ok   model {} on {}: context window {} tokens (from {}), output up to {} tokens, {}",
                r.model,
                r.endpoint.label,
                info.context_window,
                asked
                    .as_ref()
                    .and_then(|p| p.answered_by.clone())
                    .filter(|_| info.source == Source::Server)
                    .unwrap_or_else(|| info.source.as_str().to_string()),
                info.max_output,
                if info.pricing.is_some() {
                    "priced"
                } else {
                    "no price (cost shown as unknown)"
                }
            );
            if let Some(p) = &asked {
                if let Some(note) = &p.note {
                    out_line!("  note {note}");
                }
                if let Some(warning) = p.tools_note(&r.model) {
                    out_line!("  WARN {warning}");
                }
            }
            if info.source == Source::Default {
                out_line!(
                    "  note {}",
                    crate::launch::model::unknown_window_note(&r.model, !offline)
                );
            }
        }
        Err(e) => {
            // No provider to ask (no key): the table still knows the window.
            let id = match spec.as_deref() {
                Some(s) => models::resolve_alias(catalog.split(s).1),
                None => kind.default_model(),
            };
            let info = models::info(&id);
            out_line!(
                "  --   model {id}: context window {} tokens (from {}); cannot reach its provider: {e}",
                info.context_window,
                info.source.as_str()
            );
        }
    }
    problems
}

impl Kind {
    /// The OpenAI protocol to check the `openai` endpoint with.
    fn max_openai(self) -> Kind {
        if self == Kind::OpenAiResponses {
            self
        } else {
            Kind::OpenAi
        }
    }
}

/// One cheap request: the endpoint's model list.
async fn check(endpoint: &Endpoint, kind: Kind) -> Result<String, String> {
    let url = match kind {
        Kind::Anthropic => endpoint.base_url.join("/v1/models"),
        _ => endpoint.base_url.join("/models"),
    };
    let send = endpoint
        .client()?
        .get(&url)
        .headers(endpoint.headers.clone())
        .timeout(CHECK_TIME)
        .send();
    let mut resp = match tokio::time::timeout(CHECK_TIME, send).await {
        Err(_) => return Err(format!("no answer from {url} within {} s", CHECK_TIME.as_secs())),
        Ok(Err(e)) => return Err(describe_send_error(&e, &url, &endpoint.base_url)),
        Ok(Ok(r)) => r,
    };
    let status = resp.status().as_u16();
    let mut body = Vec::new();
    let deadline = tokio::time::Instant::now() + CHECK_TIME;
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(deadline, resp.chunk()).await {
        body.extend_from_slice(&chunk);
        if body.len() > 8 * 1024 * 1024 {
            break;
        }
    }
    match status {
        200..=299 => {
            let v: serde_json::Value = serde_json::from_slice(&body)
                .map_err(|_| format!("GET {url} answered {}, not a model list", describe_body(&body)))?;
            let n = v["data"].as_array().map(Vec::len).unwrap_or(0);
            Ok(format!("{n} models listed"))
        }
        401 | 403 => Err(format!(
            "the server refused the key (HTTP {status}): {}",
            describe_body(&body)
        )),
        404 => Err(format!(
            "GET {url} was not found: {}; {}",
            describe_body(&body),
            endpoint::not_found_hint(&url, &endpoint.base_url, kind == Kind::Anthropic)
        )),
        _ => Err(format!("GET {url} answered HTTP {status}: {}", describe_body(&body))),
    }
}
