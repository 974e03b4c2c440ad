//! The model a sub-agent runs on: the Agent call's `model` input (an alias or a model id the
//! session offers) over the definition's `model`, over the session's own model. A requested
//! model keel does not know, one outside managed settings' allowlist, or one a deny rule on the
//! Agent tool's `model` input names is refused with a reason the model can act on; a
//! definition's model that managed settings refuse gives way to the session's (with a notice).
//!
//! A model on a named provider of the `providers` setting (`lab/qwen3-coder`, as `--model`
//! takes it) is offered whatever its id, and the child runs on that provider ([`route`]), not
//! on its parent's.

use std::sync::Arc;

use crate::config::models::{self, Source};
use crate::permissions::Authorizer;
use crate::provider::Provider;
use crate::provider::catalog::Catalog;

/// What the model choice came to.
#[derive(Debug, PartialEq)]
pub(super) enum Choice {
    /// Run on this model.
    Model(String),
    /// The definition's model is outside the allowlist: the session's model, with this reason.
    Fallback { model: String, why: String },
}

/// Whether `model` is one this session offers: the session's own model, one keel knows (its
/// model table, the `models` setting, a window a server reported), or one on a named provider.
fn offered(model: &str, session_model: &str, routes: Option<&Catalog>) -> bool {
    model == session_model
        || models::info(model).source != Source::Default
        || models::configured_names().iter().any(|n| n == model)
        || routes.is_some_and(|c| c.split(model).0.is_some())
}

/// `spec` with its alias resolved: `lab/sonnet` keeps the provider's name.
fn resolve(spec: &str, routes: Option<&Catalog>) -> String {
    match routes.map(|c| c.split(spec)) {
        Some((Some(name), model)) => format!("{name}/{}", models::resolve_alias(model)),
        _ => models::resolve_alias(spec),
    }
}

/// A child's own provider, and the model id sent to it (`qwen3-coder` of `lab/qwen3-coder`).
pub(crate) type Routed = (Arc<dyn Provider>, String);

/// The provider and model id for `spec` when it names a provider of the `providers` setting
/// (`None`: it runs on the parent's provider). `Err` is the call's error result.
pub(super) fn route(spec: &str, routes: Option<&Catalog>) -> Result<Option<Routed>, String> {
    let Some(catalog) = routes.filter(|c| c.split(spec).0.is_some()) else {
        return Ok(None);
    };
    let resolved = catalog.resolve(Some(spec)).map_err(|e| {
        format!("the model `{spec}` cannot be reached: {e}. Call Agent again with another model, or without `model`.")
    })?;
    Ok(Some((resolved.provider, resolved.model)))
}

/// The model for a sub-agent: `requested` (the call's `model` input), else `defined` (its
/// type's `model:`), else `session_model`. `routes`: the session's providers. `Err` is the
/// call's error result.
pub(super) fn choose(
    requested: Option<&str>,
    defined: Option<&str>,
    session_model: &str,
    authorizer: &Authorizer,
    routes: Option<&Catalog>,
) -> Result<Choice, String> {
    let denied = |model: &str| authorizer.agent_model_denied(model);
    if let Some(wanted) = requested.map(str::trim) {
        let model = match wanted {
            "" | "inherit" => session_model.to_string(),
            other => resolve(other, routes),
        };
        if !offered(&model, session_model, routes) {
            return Err(format!(
                "the model `{wanted}` is not one this session offers. Use an alias (sonnet, opus, haiku), a \
                 model id keel knows (its model table or the `models` setting), or leave `model` out to run \
                 on the agent type's model (else {session_model})."
            ));
        }
        if let Some(why) = authorizer.model_refused(&model) {
            return Err(format!(
                "{why}. Call Agent again with an allowed model, or without `model`."
            ));
        }
        if let Some(why) = denied(&model) {
            return Err(format!(
                "a sub-agent on `{model}` is {why}. Call Agent again with another model, or without `model`."
            ));
        }
        return Ok(Choice::Model(model));
    }
    let choice = match defined.map(|d| resolve(d, routes)) {
        Some(m) if let Some(why) = authorizer.model_refused(&m) => Choice::Fallback {
            model: session_model.to_string(),
            why,
        },
        Some(m) => Choice::Model(m),
        None => Choice::Model(session_model.to_string()),
    };
    let effective = match &choice {
        Choice::Model(m) | Choice::Fallback { model: m, .. } => m,
    };
    // A type whose definition names a denied model is refused as a call naming it would be.
    if let Some(why) = denied(effective) {
        return Err(format!(
            "this agent type runs on `{effective}`, and a sub-agent on it is {why}. Pass `model` with another \
             model, or use another agent type."
        ));
    }
    Ok(choice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::precedence::ModelAllowlist;
    use crate::permissions::rules::{Anchors, Behavior, Rule};

    fn authorizer(deny: &[&str], allowlist: Option<&[&str]>) -> Authorizer {
        let anchors = Anchors {
            cwd: "/p".into(),
            base_dir: "/p".into(),
            home: None,
        };
        let rules = deny
            .iter()
            .map(|t| Rule::parse(t, Behavior::Deny, "test", &anchors).unwrap())
            .collect();
        let mut a = Authorizer::new(rules, vec!["/p".into()], None, None);
        a.model_allowlist = allowlist.map(|names| ModelAllowlist {
            names: names.iter().map(|n| n.to_string()).collect(),
            file: "/etc/keel/managed-settings.json".into(),
        });
        a
    }

    #[test]
    fn a_requested_alias_resolves_and_beats_the_definition() {
        let a = authorizer(&[], None);
        assert_eq!(
            choose(Some("haiku"), Some("sonnet"), "claude-sonnet-5-5", &a, None),
            Ok(Choice::Model("claude-haiku-5-5".into()))
        );
        assert_eq!(
            choose(None, Some("opus"), "claude-sonnet-5-5", &a, None),
            Ok(Choice::Model("claude-opus-5-5".into()))
        );
        assert_eq!(
            choose(Some("inherit"), Some("opus"), "my-local", &a, None),
            Ok(Choice::Model("my-local".into()))
        );
        assert_eq!(
            choose(None, None, "my-local", &a, None),
            Ok(Choice::Model("my-local".into()))
        );
    }

    #[test]
    fn an_unknown_model_is_refused_with_what_to_do() {
        let a = authorizer(&[], None);
        let err = choose(Some("gpt-17-ultra"), None, "claude-sonnet-5-5", &a, None).unwrap_err();
        assert!(err.contains("`gpt-17-ultra` is not one this session offers"), "{err}");
        assert!(err.contains("leave `model` out"), "{err}");
    }

    #[test]
    fn the_allowlist_refuses_a_request_and_overrides_a_definition() {
        let a = authorizer(&[], Some(&["claude-sonnet-5-5"]));
        let err = choose(Some("opus"), None, "claude-sonnet-5-5", &a, None).unwrap_err();
        assert!(err.contains("not allowed"), "{err}");
        assert!(err.contains("/etc/keel/managed-settings.json"), "{err}");
        match choose(None, Some("opus"), "claude-sonnet-5-5", &a, None).unwrap() {
            Choice::Fallback { model, why } => {
                assert_eq!(model, "claude-sonnet-5-5");
                assert!(why.contains("claude-opus-5-5"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn deny_rules_on_the_model_input_hold_for_requests_and_definitions() {
        let a = authorizer(&["Agent(model:opus)"], None);
        let err = choose(Some("claude-opus-5-5"), None, "claude-sonnet-5-5", &a, None).unwrap_err();
        assert!(err.contains("denied by the rule `Agent(model:opus)`"), "{err}");
        let err = choose(None, Some("opus"), "claude-sonnet-5-5", &a, None).unwrap_err();
        assert!(err.contains("this agent type runs on `claude-opus-5-5`"), "{err}");
        assert!(choose(Some("haiku"), Some("opus"), "claude-sonnet-5-5", &a, None).is_ok());
        let wild = authorizer(&["Task(model:*opus*)"], None);
        assert!(choose(Some("opus"), None, "claude-sonnet-5-5", &wild, None).is_err());
        assert!(choose(Some("sonnet"), None, "claude-sonnet-5-5", &wild, None).is_ok());
    }

    #[test]
    fn a_named_providers_model_is_offered_and_routed_there() {
        use crate::config::settings::{Layer, Scope, Settings};
        use crate::provider::catalog::Kind;
        let settings = Settings {
            layers: vec![Layer {
                scope: Scope::User,
                path: None,
                base_dir: std::env::temp_dir(),
                value: serde_json::json!({"providers": {"lab": {"type": "openai", "baseUrl": "http://127.0.0.1:9/v1"}}}),
            }],
        };
        let providers = Catalog::new(
            &settings,
            Kind::Anthropic,
            Default::default(),
            Default::default(),
            false,
        )
        .unwrap();
        let a = authorizer(&[], None);
        let routes = Some(&providers);
        assert_eq!(
            choose(Some("lab/qwen3-coder"), None, "claude-sonnet-5-5", &a, routes),
            Ok(Choice::Model("lab/qwen3-coder".into()))
        );
        // The alias after the provider's name resolves; the name stays.
        assert_eq!(
            choose(None, Some("lab/haiku"), "claude-sonnet-5-5", &a, routes),
            Ok(Choice::Model("lab/claude-haiku-5-5".into()))
        );
        // Without the session's providers, or with a provider it does not have, it is unknown.
        // A model id keel does not know is offered on a named provider only.
        assert!(choose(Some("lab/my-finetune"), None, "claude-sonnet-5-5", &a, routes).is_ok());
        assert!(choose(Some("lab/my-finetune"), None, "claude-sonnet-5-5", &a, None).is_err());
        assert!(choose(Some("elsewhere/my-finetune"), None, "claude-sonnet-5-5", &a, routes).is_err());

        let (_, id) = route("lab/qwen3-coder", routes).unwrap().expect("routed to the lab");
        assert_eq!(id, "qwen3-coder");
        assert!(
            route("claude-haiku-5-5", routes).unwrap().is_none(),
            "the parent's provider"
        );
        assert!(route("lab/qwen3-coder", None).unwrap().is_none());
        // A denied model on a named provider is refused like any other.
        let deny = authorizer(&["Agent(model:lab/*)"], None);
        assert!(choose(Some("lab/qwen3-coder"), None, "claude-sonnet-5-5", &deny, routes).is_err());
    }
}
