//! The wire format of stream-json input and the control protocol: pure functions from lines to
//! typed messages and from typed messages to JSON values. No I/O here.
//!
//! Client → keel: `{"type":"user","message":{"role":"user","content":…}}`,
//! `{"type":"control_request","request_id":…,"request":{"subtype":…}}`,
//! `{"type":"control_response","response":{"subtype":"success"|"error","request_id":…,…}}`,
//! `{"type":"control_cancel_request","request_id":…}`.
//! keel → client: the same envelopes, plus the output lines of `--output-format stream-json`.

use serde_json::{Map, Value, json};

use crate::permissions::{PermissionPrompt, PermissionReply, updates};
use crate::types::message::ContentBlock;

/// One line from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// A user message: one turn.
    User {
        content: Vec<ContentBlock>,
        raw: Value,
    },
    Request {
        id: String,
        request: ClientRequest,
    },
    /// The answer to a request keel sent; `Err` carries the client's error text.
    Response {
        id: String,
        result: Result<Value, String>,
    },
    /// The client gives up on a request it sent (keel answers nothing more for it).
    Cancel {
        id: String,
    },
    /// `keep_alive` and other lines that need no action.
    Nothing,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ClientRequest {
    Initialize(Box<Initialize>),
    Interrupt,
    SetPermissionMode(String),
    /// `None` returns to the session's default model.
    SetModel(Option<String>),
    McpStatus,
    /// A subtype keel does not implement; answered with an error, never left hanging.
    Unsupported(String),
}

/// What `initialize` asks for.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Initialize {
    pub hooks: Vec<HookRegistration>,
    /// Agent definitions by name (`agents`), as sent.
    pub agents: Option<Map<String, Value>>,
    /// Names of SDK-hosted MCP servers (`sdkMcpServers`).
    pub sdk_mcp_servers: Vec<String>,
    /// Replaces keel's system prompt (`systemPrompt`).
    pub system_prompt: Option<String>,
    /// Appended to the system prompt (`appendSystemPrompt`).
    pub append_system_prompt: Option<String>,
    /// A JSON schema the final answer must match (`jsonSchema`).
    pub json_schema: Option<Value>,
    /// `excludeDynamicSections`, `systemPromptSnapshot`, `forwardSubagentText` and `skills`
    /// (only the listed skills for the main session).
    pub exclude_dynamic_sections: Option<bool>,
    pub system_prompt_snapshot: Option<bool>,
    pub forward_subagent_text: Option<bool>,
    pub skills: Option<Vec<String>>,
    /// Fields keel does not know (reported, not acted on).
    pub unknown_fields: Vec<String>,
}

/// The `initialize` fields keel reads.
const INITIALIZE_FIELDS: &[&str] = &[
    "subtype",
    "hooks",
    "agents",
    "sdkMcpServers",
    "systemPrompt",
    "appendSystemPrompt",
    "jsonSchema",
    "excludeDynamicSections",
    "systemPromptSnapshot",
    "forwardSubagentText",
    "skills",
];

fn optional_bool(r: &Value, key: &str) -> Result<Option<bool>, String> {
    match r.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(format!("`{key}` must be true or false, got {other}")),
    }
}

/// One matcher group of `initialize.hooks`: `{"matcher":…,"hookCallbackIds":[…],"timeout":…}`.
#[derive(Debug, Clone, PartialEq)]
pub struct HookRegistration {
    pub event: String,
    pub matcher: Option<String>,
    pub callback_ids: Vec<String>,
    pub timeout_secs: Option<u64>,
}

/// A line that could not be understood; `request_id` is set when it was a control request, so
/// the client still gets an error response.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError {
    pub message: String,
    pub request_id: Option<String>,
}

impl DecodeError {
    fn new(message: impl Into<String>) -> Self {
        DecodeError {
            message: message.into(),
            request_id: None,
        }
    }
}

pub fn decode(line: &str) -> Result<Inbound, DecodeError> {
    let v: Value = serde_json::from_str(line).map_err(|e| DecodeError::new(format!("not JSON: {e}")))?;
    let kind = v
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| DecodeError::new("a message needs a string `type`"))?;
    match kind {
        "user" => decode_user(v),
        "control_request" => {
            let id =
                string_field(&v, "request_id").ok_or_else(|| DecodeError::new("control_request needs `request_id`"))?;
            decode_request(&v["request"])
                .map(|request| Inbound::Request {
                    id: id.clone(),
                    request,
                })
                .map_err(|message| DecodeError {
                    message,
                    request_id: Some(id),
                })
        }
        "control_response" => {
            let r = &v["response"];
            let id = string_field(r, "request_id")
                .ok_or_else(|| DecodeError::new("control_response needs `response.request_id`"))?;
            let result = match r.get("subtype").and_then(Value::as_str) {
                Some("success") => Ok(r.get("response").cloned().unwrap_or(Value::Null)),
                Some("error") => Err(r
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("the client reported an error without a message")
                    .to_string()),
                other => {
                    return Err(DecodeError::new(format!(
                        "control_response subtype must be success or error, got {}",
                        other.unwrap_or("nothing")
                    )));
                }
            };
            Ok(Inbound::Response { id, result })
        }
        "control_cancel_request" => Ok(Inbound::Cancel {
            id: string_field(&v, "request_id").unwrap_or_default(),
        }),
        "keep_alive" => Ok(Inbound::Nothing),
        other => Err(DecodeError::new(format!(
            "unknown message type `{other}` (expected user, control_request, control_response)"
        ))),
    }
}

fn string_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn decode_user(v: Value) -> Result<Inbound, DecodeError> {
    let message = v
        .get("message")
        .ok_or_else(|| DecodeError::new("a user message needs `message`"))?;
    if let Some(role) = message.get("role").and_then(Value::as_str)
        && role != "user"
    {
        return Err(DecodeError::new(format!(
            "a user message must have role `user`, got `{role}`"
        )));
    }
    let content = match message.get("content") {
        Some(Value::String(s)) => vec![ContentBlock::text(s.clone())],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .enumerate()
            .map(|(i, b)| {
                serde_json::from_value::<ContentBlock>(b.clone())
                    .map_err(|e| DecodeError::new(format!("content block {i} of the user message: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => {
            return Err(DecodeError::new(
                "`message.content` must be a string or an array of content blocks",
            ));
        }
    };
    if content.is_empty() {
        return Err(DecodeError::new("the user message has no content"));
    }
    Ok(Inbound::User { content, raw: v })
}

fn decode_request(r: &Value) -> Result<ClientRequest, String> {
    let subtype = r
        .get("subtype")
        .and_then(Value::as_str)
        .ok_or("a control request needs `request.subtype`")?;
    Ok(match subtype {
        "initialize" => ClientRequest::Initialize(Box::new(decode_initialize(r)?)),
        "interrupt" => ClientRequest::Interrupt,
        "set_permission_mode" => ClientRequest::SetPermissionMode(
            string_field(r, "mode").ok_or("set_permission_mode needs a string `mode`")?,
        ),
        "set_model" => ClientRequest::SetModel(string_field(r, "model").filter(|m| m != "default")),
        "mcp_status" => ClientRequest::McpStatus,
        other => ClientRequest::Unsupported(other.to_string()),
    })
}

fn decode_initialize(r: &Value) -> Result<Initialize, String> {
    let mut init = Initialize::default();
    match r.get("hooks") {
        None | Some(Value::Null) => {}
        Some(Value::Object(events)) => {
            for (event, groups) in events {
                let groups = groups
                    .as_array()
                    .ok_or_else(|| format!("hooks.{event} must be an array of matcher groups"))?;
                for g in groups {
                    let callback_ids = g
                        .get("hookCallbackIds")
                        .and_then(Value::as_array)
                        .ok_or_else(|| format!("each hooks.{event} group needs `hookCallbackIds`"))?
                        .iter()
                        .map(|id| id.as_str().map(str::to_string))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| format!("hooks.{event}: callback ids must be strings"))?;
                    init.hooks.push(HookRegistration {
                        event: event.clone(),
                        matcher: string_field(g, "matcher"),
                        callback_ids,
                        timeout_secs: g.get("timeout").and_then(Value::as_u64).filter(|t| *t > 0),
                    });
                }
            }
        }
        Some(_) => return Err("`hooks` must be an object keyed by event name".into()),
    }
    init.agents = match r.get("agents") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m.clone()),
        Some(_) => return Err("`agents` must be an object keyed by agent name".into()),
    };
    init.sdk_mcp_servers = r
        .get("sdkMcpServers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    init.system_prompt = string_field(r, "systemPrompt");
    init.append_system_prompt = string_field(r, "appendSystemPrompt");
    init.json_schema = r.get("jsonSchema").filter(|s| !s.is_null()).cloned();
    init.exclude_dynamic_sections = optional_bool(r, "excludeDynamicSections")?;
    init.system_prompt_snapshot = optional_bool(r, "systemPromptSnapshot")?;
    init.forward_subagent_text = optional_bool(r, "forwardSubagentText")?;
    init.skills = match r.get("skills") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .map(|s| s.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or("`skills` must be a list of skill names")?,
        ),
        Some(_) => return Err("`skills` must be a list of skill names".into()),
    };
    init.unknown_fields = r
        .as_object()
        .map(|m| {
            m.keys()
                .filter(|k| !INITIALIZE_FIELDS.contains(&k.as_str()))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    Ok(init)
}

pub fn control_request(id: &str, request: Value) -> Value {
    json!({"type": "control_request", "request_id": id, "request": request})
}

pub fn control_cancel(id: &str) -> Value {
    json!({"type": "control_cancel_request", "request_id": id})
}

pub fn success(id: &str, response: Value) -> Value {
    json!({"type": "control_response", "response": {"subtype": "success", "request_id": id, "response": response}})
}

pub fn error(id: &str, message: &str) -> Value {
    json!({"type": "control_response", "response": {"subtype": "error", "request_id": id, "error": message}})
}

/// The `can_use_tool` request for a permission question.
pub fn can_use_tool(p: &PermissionPrompt) -> Value {
    let mut r = json!({
        "subtype": "can_use_tool",
        "tool_name": p.tool_name,
        "display_name": p.tool_name,
        "input": p.input,
        "permission_suggestions": p.suggestions,
        "tool_use_id": p.tool_use_id,
        "decision_reason": p.reason,
    });
    if let (Some(d), Value::Object(m)) = (p.input.get("description").and_then(Value::as_str), &mut r) {
        m.insert("description".into(), d.into());
    }
    if let (Some(path), Value::Object(m)) = (
        ["file_path", "notebook_path", "path"]
            .iter()
            .find_map(|k| p.input.get(*k).and_then(Value::as_str)),
        &mut r,
    ) {
        m.insert("blocked_path".into(), path.into());
    }
    r
}

/// The `hook_callback` request for one client-registered hook.
pub fn hook_callback(callback_id: &str, input: Value, tool_use_id: Option<String>) -> Value {
    json!({"subtype": "hook_callback", "callback_id": callback_id, "input": input, "tool_use_id": tool_use_id})
}

/// Turns the client's answer to `can_use_tool` into the engine's reply, and names permission
/// updates keel does not apply. Anything that is not a clear approval denies, with a message
/// that says why.
pub fn permission_reply(answer: Result<Value, String>) -> (PermissionReply, Vec<String>) {
    let v = match answer {
        Ok(v) => v,
        Err(e) => {
            let reply = PermissionReply::Reject {
                message: format!("The program approving tool calls failed to answer ({e}); the call was not run."),
                interrupt: false,
            };
            return (reply, Vec::new());
        }
    };
    let mut ignored = Vec::new();
    let reply = match v.get("behavior").and_then(Value::as_str) {
        Some("allow") => {
            let (updates, unsupported) = updates::parse(
                v.get("updatedPermissions")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or(&[]),
            );
            ignored = unsupported;
            PermissionReply::Allow {
                updated_input: v.get("updatedInput").filter(|i| i.is_object()).cloned(),
                updates,
            }
        }
        Some("deny") => PermissionReply::Reject {
            message: v.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
            interrupt: v.get("interrupt").and_then(Value::as_bool).unwrap_or(false),
        },
        other => PermissionReply::Reject {
            message: format!(
                "The program approving tool calls gave no decision (behavior {}); the call was not run.",
                other.map(|b| format!("`{b}`")).unwrap_or_else(|| "missing".into())
            ),
            interrupt: false,
        },
    };
    (reply, ignored)
}

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
