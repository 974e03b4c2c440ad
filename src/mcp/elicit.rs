//! Elicitation: a server asking the user for input in the middle of a request
//! (`elicitation/create`, a form described by a flat JSON schema, or a URL to visit). keel
//! declares the capability; who answers depends on the front end, which installs an
//! [`Elicitor`] in the session's [`Route`]: the TUI asks field by field, a program driving
//! keel over `--input-format stream-json` gets an `elicitation` control request. With nobody to
//! ask (a headless run), the request is declined with a notice, unless
//! `KEEL_MCP_ELICITATION=defaults` says to accept the form with the defaults its schema gives
//! (for unattended runs; a form with a required field without a default is still declined).
//! Hooks come first and last: an `Elicitation` hook may answer before anyone is asked, an
//! `ElicitationResult` hook may change the answer before it goes to the server
//! ([`ElicitationHooks`], installed by the engine).

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};

use crate::console::err_line;

/// The environment variable that chooses what happens when nobody can answer.
pub const UNATTENDED_ENV: &str = "KEEL_MCP_ELICITATION";

/// One request, as front ends see it.
#[derive(Debug, Clone)]
pub struct Request {
    /// The configured name of the server asking.
    pub server: String,
    pub message: String,
    /// `form` or `url`.
    pub mode: String,
    /// The form's schema (`form` mode): an object schema with flat properties.
    pub schema: Option<Value>,
    /// The address to visit (`url` mode).
    pub url: Option<String>,
    pub elicitation_id: Option<String>,
}

impl Request {
    /// Reads the request's parameters as the server sent them.
    pub fn from_params(server: &str, params: &Value) -> Request {
        let text = |k: &str| params.get(k).and_then(Value::as_str).map(str::to_string);
        let schema = params.get("requestedSchema").cloned().filter(|s| !s.is_null());
        Request {
            server: server.to_string(),
            message: text("message").unwrap_or_default(),
            mode: text("mode").unwrap_or_else(|| if schema.is_some() { "form" } else { "url" }.to_string()),
            schema,
            url: text("url"),
            elicitation_id: text("elicitationId"),
        }
    }

    /// The form's fields in the server's order: (name, schema of the field, required).
    pub fn fields(&self) -> Vec<(String, Value, bool)> {
        let Some(schema) = &self.schema else {
            return Vec::new();
        };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone(), required.contains(&k.as_str())))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// What the user (or program) answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

impl Answer {
    /// The `elicitation/create` result.
    pub fn to_json(&self) -> Value {
        match self {
            Answer::Accept(content) => json!({"action": "accept", "content": content}),
            Answer::Decline => json!({"action": "decline"}),
            Answer::Cancel => json!({"action": "cancel"}),
        }
    }

    /// Reads an answer given as `{"action": …, "content": {…}}` (a program's reply).
    pub fn from_json(v: &Value) -> Result<Answer, String> {
        match v.get("action").and_then(Value::as_str) {
            Some("accept") => Ok(Answer::Accept(
                v.get("content").and_then(Value::as_object).cloned().unwrap_or_default(),
            )),
            Some("decline") => Ok(Answer::Decline),
            Some("cancel") => Ok(Answer::Cancel),
            Some(other) => Err(format!("unknown action `{other}` (expected accept, decline or cancel)")),
            None => Err("the answer has no `action`".into()),
        }
    }
}

/// Who answers elicitation requests.
pub trait Elicitor: Send + Sync {
    fn elicit(&self, request: Request) -> BoxFuture<'static, Answer>;
}

/// The session's hooks around a request: `Elicitation` before anyone is asked,
/// `ElicitationResult` before the answer goes to the server.
pub trait ElicitationHooks: Send + Sync {
    /// A hook's answer, when one gave it (nobody else is then asked).
    fn before(&self, request: &Request) -> BoxFuture<'static, Option<Answer>>;
    /// The answer as it goes to the server: the one given, or what a hook made of it.
    fn after(&self, request: &Request, answer: Answer) -> BoxFuture<'static, Answer>;
}

/// The session's way to whoever answers; front ends install theirs with [`Route::set`].
#[derive(Default)]
pub struct Route {
    handler: Mutex<Option<Arc<dyn Elicitor>>>,
    hooks: Mutex<Option<Arc<dyn ElicitationHooks>>>,
}

impl Route {
    pub fn set(&self, handler: Arc<dyn Elicitor>) {
        *self.handler.lock().unwrap_or_else(|p| p.into_inner()) = Some(handler);
    }

    pub fn set_hooks(&self, hooks: Arc<dyn ElicitationHooks>) {
        *self.hooks.lock().unwrap_or_else(|p| p.into_inner()) = Some(hooks);
    }

    pub async fn ask(&self, request: Request) -> Answer {
        let hooks = self.hooks.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let early = match &hooks {
            Some(h) => h.before(&request).await,
            None => None,
        };
        let answer = match early {
            Some(a) => a,
            None => {
                let handler = self.handler.lock().unwrap_or_else(|p| p.into_inner()).clone();
                match handler {
                    Some(h) => h.elicit(request.clone()).await,
                    None => unattended(&request),
                }
            }
        };
        match &hooks {
            Some(h) => h.after(&request, answer).await,
            None => answer,
        }
    }
}

/// The answer when nobody can be asked, with a notice saying what happened.
pub fn unattended(request: &Request) -> Answer {
    let message = crate::console::terminal_safe(&request.message).into_owned();
    let use_defaults = std::env::var(UNATTENDED_ENV).is_ok_and(|v| v.trim() == "defaults");
    if use_defaults && request.mode == "form" {
        if let Some(content) = defaults(request) {
            err_line!(
                "keel: MCP server `{}` asked for input (\"{message}\"); answered with the form's defaults ({UNATTENDED_ENV}=defaults)",
                request.server
            );
            return Answer::Accept(content);
        }
        err_line!(
            "keel: MCP server `{}` asked for input (\"{message}\"); declined: a required field has no default",
            request.server
        );
        return Answer::Decline;
    }
    err_line!(
        "keel: MCP server `{}` asked for input (\"{message}\"); declined: nobody can answer in this run (set {UNATTENDED_ENV}=defaults to accept forms with their defaults)",
        request.server
    );
    Answer::Decline
}

/// The form filled with its schema's defaults; `None` when a required field has none.
pub fn defaults(request: &Request) -> Option<Map<String, Value>> {
    let mut content = Map::new();
    for (name, field, required) in request.fields() {
        match field.get("default") {
            Some(d) if !d.is_null() => {
                content.insert(name, d.clone());
            }
            _ if required => return None,
            _ => {}
        }
    }
    Some(content)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Request {
        Request::from_params(
            "srv",
            &json!({"message": "Who?", "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "default": "Ann"},
                "age": {"type": "integer", "default": 30},
                "ok": {"type": "boolean"},
                "tier": {"type": "string", "enum": ["a", "b"], "default": "b"}
            }, "required": ["name"]}}),
        )
    }

    #[test]
    fn defaults_fill_what_the_schema_gives() {
        let r = form();
        assert_eq!(r.mode, "form");
        let d = defaults(&r).unwrap();
        assert_eq!(Value::Object(d), json!({"name": "Ann", "age": 30, "tier": "b"}));
        let mut strict = r.clone();
        strict.schema.as_mut().unwrap()["required"] = json!(["ok"]);
        assert!(defaults(&strict).is_none());
    }

    #[test]
    fn answers_round_trip() {
        let a = Answer::from_json(&json!({"action": "accept", "content": {"x": 1}})).unwrap();
        assert_eq!(a.to_json(), json!({"action": "accept", "content": {"x": 1}}));
        assert_eq!(
            Answer::from_json(&json!({"action": "decline"})).unwrap(),
            Answer::Decline
        );
        assert!(Answer::from_json(&json!({"action": "maybe"})).is_err());
    }
}
