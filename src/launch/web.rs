//! The web tools' settings, lowered once: `webFetch.allowPrivateNetwork` (only the user's own
//! layers may set it; `config::precedence` removes it from a project's), the metadata hosts an
//! allow rule of the user's names exactly, the proxies of the environment, and the search
//! backend: the provider's own search where it has one (Anthropic's API, OpenAI's Responses
//! API; `webSearch.provider` says yes or no for other endpoints of those protocols), else
//! `webSearch.searxngUrl`.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use super::setup::SetupError;
use crate::config::settings::{Settings, SettingsError};
use crate::permissions::Authorizer;
use crate::permissions::rules::Behavior;
use crate::provider::catalog::Kind;
use crate::tools::web::address::{Policy, is_metadata_name};
use crate::tools::web::provider_search::{AnthropicSearch, SearchTool};
use crate::tools::web::proxy::ProxyEnv;
use crate::tools::web::search::Backend;
use crate::tools::web::{Limits, WebConfig};

pub fn web_config(
    settings: &Settings,
    authorizer: &Authorizer,
    choice: &super::model::Choice,
) -> Result<WebConfig, SetupError> {
    let allow_private = settings.flag(&["webFetch", "allowPrivateNetwork"])?.unwrap_or(false);
    Ok(WebConfig {
        policy: Policy::new(allow_private, metadata_rules(settings, authorizer)),
        proxies: ProxyEnv::from_env(),
        limits: Limits::default(),
        search: search_backend(settings, choice)?,
    })
}

/// Metadata hosts named exactly by a `WebFetch(domain:…)` allow rule that is not a project's
/// (a cloned repository cannot open the way to credentials).
fn metadata_rules(settings: &Settings, authorizer: &Authorizer) -> BTreeSet<String> {
    let project_files: Vec<String> = settings
        .layers
        .iter()
        .filter(|l| l.scope.is_project())
        .map(|l| l.label())
        .collect();
    authorizer
        .rules()
        .iter()
        .filter(|r| r.behavior == Behavior::Allow && r.names_tool("WebFetch"))
        .filter(|r| !project_files.contains(&r.source))
        .filter_map(|r| r.exact_host())
        .filter(|h| {
            is_metadata_name(h)
                || h.parse()
                    .is_ok_and(|ip| crate::tools::web::address::classify(ip).is_some())
        })
        .map(str::to_string)
        .collect()
}

/// The provider's search where the provider has one, else the configured SearXNG, else none.
fn search_backend(settings: &Settings, choice: &super::model::Choice) -> Result<Backend, SetupError> {
    let wanted = settings.flag(&["webSearch", "provider"])?;
    if let Some((Kind::Anthropic, base)) = &choice.protocol {
        let first_party = base.as_str().trim_end_matches('/') == crate::provider::anthropic::DEFAULT_BASE_URL;
        if wanted.unwrap_or(first_party) {
            return Ok(Backend::Provider(Arc::new(AnthropicSearch::new(
                choice.provider.clone(),
                choice.model.clone(),
            ))));
        }
    }
    if let Some((Kind::OpenAiResponses, base)) = &choice.protocol {
        let first_party = base.as_str().trim_end_matches('/') == crate::provider::openai::DEFAULT_BASE_URL;
        if wanted.unwrap_or(first_party) {
            return Ok(Backend::Provider(Arc::new(AnthropicSearch::with_tool(
                choice.provider.clone(),
                choice.model.clone(),
                SearchTool::OpenAiResponses,
            ))));
        }
    }
    let Some((value, layer)) = settings.nested(&["webSearch", "searxngUrl"]) else {
        return Ok(Backend::None);
    };
    let invalid = |problem: String| {
        SetupError::Settings(SettingsError::Invalid {
            path: layer.label(),
            key: "webSearch.searxngUrl".into(),
            problem,
        })
    };
    match value {
        Value::String(s) => Backend::searxng(s).map_err(invalid),
        other => Err(invalid(format!("must be a URL string, found {other}"))),
    }
}
