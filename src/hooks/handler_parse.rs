//! One hook handler's JSON (`type` command, http, prompt, agent or mcp_tool, with its
//! timeout, `onFailure` and `continueOnBlock`) read into a `Handler`, with a message naming
//! the field that is wrong.

use serde_json::Value;

use super::config::Handler;
use super::failure::OnFailure;

/// `Ok(None)` for a handler type keel does not know (the caller warns).
pub(super) fn parse_handler(h: &Value) -> Result<Option<Handler>, String> {
    let timeout_secs = match h.get("timeout") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .filter(|t| *t > 0)
                .ok_or_else(|| format!("`timeout` must be a positive number of seconds, found {v}"))?,
        ),
    };
    let on_failure = OnFailure::parse(h.get("onFailure"))?;
    let continue_on_block = match h.get("continueOnBlock") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => return Err(format!("`continueOnBlock` must be true or false, found {v}")),
    };
    let text = |key: &str, what: &str| -> Result<String, String> {
        h.get(key)
            .and_then(Value::as_str)
            .filter(|t| !t.trim().is_empty())
            .map(str::to_string)
            .ok_or_else(|| format!("a{what} hook needs `{key}`"))
    };
    let model = h.get("model").and_then(Value::as_str).map(str::to_string);
    match h.get("type").and_then(Value::as_str).unwrap_or("command") {
        "command" => {
            let command = h.get("command").and_then(Value::as_str).map(str::to_string);
            let args = match h.get("args") {
                None | Some(Value::Null) => None,
                Some(Value::Array(a)) => Some(
                    a.iter()
                        .map(|x| x.as_str().map(str::to_string).ok_or("`args` must be strings"))
                        .collect::<Result<Vec<_>, _>>()?,
                ),
                Some(_) => return Err("`args` must be an array of strings".into()),
            };
            if command.as_deref().is_none_or(|c| c.trim().is_empty()) && args.as_ref().is_none_or(Vec::is_empty) {
                return Err("a command hook needs `command` (or `args`)".into());
            }
            let run_async = h.get("async").and_then(Value::as_bool).unwrap_or(false);
            if run_async && on_failure == OnFailure::Block {
                return Err(
                    "`onFailure: \"block\"` cannot apply to an `async` hook: the action goes on while it runs".into(),
                );
            }
            Ok(Some(Handler::Command {
                command,
                args,
                shell: h.get("shell").and_then(Value::as_str).map(str::to_string),
                timeout_secs,
                run_async,
                plugin_root: None,
                on_failure,
                continue_on_block,
            }))
        }
        "http" => {
            let url = h
                .get("url")
                .and_then(Value::as_str)
                .ok_or("an http hook needs `url`")?
                .to_string();
            let headers = h
                .get("headers")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            let allowed_env_vars = h
                .get("allowedEnvVars")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default();
            Ok(Some(Handler::Http {
                url,
                headers,
                allowed_env_vars,
                timeout_secs,
                on_failure,
                continue_on_block,
            }))
        }
        "prompt" => Ok(Some(Handler::Prompt {
            prompt: text("prompt", " prompt")?,
            model,
            timeout_secs,
            on_failure,
            continue_on_block,
        })),
        "agent" => Ok(Some(Handler::Agent {
            prompt: text("prompt", "n agent")?,
            model,
            timeout_secs,
            on_failure,
            continue_on_block,
        })),
        "mcp_tool" => {
            let input = match h.get("input") {
                None | Some(Value::Null) => Value::Object(Default::default()),
                Some(v @ Value::Object(_)) => v.clone(),
                Some(_) => return Err("an mcp_tool hook's `input` must be an object".into()),
            };
            Ok(Some(Handler::McpTool {
                server: text("server", "n mcp_tool")?,
                tool: text("tool", "n mcp_tool")?,
                input: input.to_string(),
                timeout_secs,
                on_failure,
                continue_on_block,
            }))
        }
        _ => Ok(None),
    }
}
