//! The Chat Completions request: the system prompt as a `system` (or `developer`) message,
//! tool calls as `tool_calls` with JSON-string arguments, each tool result as a `role: tool`
//! message, tools as `type: function` with JSON-schema `parameters`, usage requested in the
//! stream. Reasoning from earlier answers is sent back only where the model table says the
//! server wants it.

use serde::Serialize;

use crate::config::models::{self, Capabilities, SystemRole};
use crate::provider::openai::{data_url, image_marker, result_images, result_text};
use crate::provider::prefix::{PrefixCache, close_array};
use crate::provider::{ModelRequest, ToolSet};
use crate::types::message::{ContentBlock, Message, Role};

#[derive(Serialize)]
struct Head<'a> {
    model: &'a str,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The whole body; `tools` is the converted tool list (see [`tools`]).
pub fn body(request: &ModelRequest, tools: &[u8], cache: &PrefixCache) -> Result<Vec<u8>, String> {
    let caps = models::info(&request.model).caps;
    let head = Head {
        model: &request.model,
        stream: true,
        stream_options: StreamOptions { include_usage: true },
        max_tokens: (!caps.max_completion_tokens).then_some(request.max_tokens),
        max_completion_tokens: caps.max_completion_tokens.then_some(request.max_tokens),
        // OpenAI's reasoning models only: other servers reject or misread the field.
        reasoning_effort: request
            .reasoning
            .effort
            .as_deref()
            .filter(|_| caps.thinking && caps.max_completion_tokens)
            .map(crate::provider::openai::openai_effort),
    };
    let mut out = serde_json::to_vec(&head).map_err(|e| e.to_string())?;
    out.pop();
    if caps.tools && !request.tools.is_empty() {
        out.extend_from_slice(b",\"tools\":");
        out.extend_from_slice(tools);
        out.extend_from_slice(b",\"tool_choice\":\"auto\"");
    }
    out.extend_from_slice(b",\"messages\":[");
    let system: Vec<&str> = request.system.iter().map(|b| b.text.as_str()).collect();
    if !system.is_empty() {
        let role = match caps.system_role {
            SystemRole::System => "system",
            SystemRole::Developer => "developer",
        };
        serde_json::to_writer(
            &mut out,
            &Plain {
                role,
                content: &system.join("\n\n"),
            },
        )
        .map_err(|e| e.to_string())?;
        out.push(b',');
    }
    let flavor = format!("chat:{}:{}:{}", caps.images, caps.send_reasoning, caps.tools);
    cache.write(
        &flavor,
        &request.messages,
        request.unchanged,
        &[],
        &mut out,
        &mut |m, _, buf| encode(m, &caps, buf),
    )?;
    close_array(&mut out);
    out.push(b'}');
    Ok(out)
}

/// `[{"type":"function","function":{"name","description","parameters"}}, …]`
pub fn tools(set: &ToolSet) -> Result<Vec<u8>, String> {
    #[derive(Serialize)]
    struct Tool<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        function: Function<'a>,
    }
    #[derive(Serialize)]
    struct Function<'a> {
        name: &'a str,
        description: &'a str,
        parameters: &'a serde_json::Value,
    }
    let list: Vec<Tool> = set
        .as_slice()
        .iter()
        .map(|t| Tool {
            kind: "function",
            function: Function {
                name: &t.name,
                description: &t.description,
                parameters: &t.input_schema,
            },
        })
        .collect();
    serde_json::to_vec(&list).map_err(|e| e.to_string())
}

#[derive(Serialize)]
struct Plain<'a> {
    role: &'a str,
    content: &'a str,
}

#[derive(Serialize)]
struct ToolMessage<'a> {
    role: &'static str,
    tool_call_id: &'a str,
    content: String,
}

#[derive(Serialize)]
struct UserParts<'a> {
    role: &'static str,
    content: Vec<Part<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: std::borrow::Cow<'a, str> },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Serialize)]
struct Assistant<'a> {
    role: &'static str,
    content: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<Call<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<String>,
}

#[derive(Serialize)]
struct Call<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
}

#[derive(Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    arguments: String,
}

/// One neutral message as Chat items, each followed by a comma.
pub fn encode(m: &Message, caps: &Capabilities, out: &mut Vec<u8>) -> Result<(), String> {
    let mut write = |v: &dyn erased::Item| -> Result<(), String> {
        v.write(out)?;
        out.push(b',');
        Ok(())
    };
    match m.role {
        Role::User => {
            // Tool results first: they must follow the assistant message that called them.
            let mut images = Vec::new();
            for b in &m.content {
                if let ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    ..
                } = b
                {
                    write(&ToolMessage {
                        role: "tool",
                        tool_call_id: tool_use_id,
                        content: result_text(content, *is_error),
                    })?;
                    images.extend(result_images(content).into_iter().map(|s| (tool_use_id.as_str(), s)));
                }
            }
            let mut parts: Vec<Part> = Vec::new();
            for (id, source) in images {
                parts.push(Part::Text {
                    text: format!("Image from the result of tool call {id}:").into(),
                });
                parts.push(image_part(source, caps));
            }
            for b in &m.content {
                match b {
                    ContentBlock::Text { text, .. } => parts.push(Part::Text { text: text.into() }),
                    ContentBlock::Image { source } => parts.push(image_part(source, caps)),
                    _ => {}
                }
            }
            if parts.is_empty() {
                return Ok(());
            }
            if parts.iter().all(|p| matches!(p, Part::Text { .. })) {
                let text: Vec<&str> = parts
                    .iter()
                    .map(|p| match p {
                        Part::Text { text } => text.as_ref(),
                        Part::ImageUrl { .. } => "",
                    })
                    .collect();
                write(&Plain {
                    role: "user",
                    content: &text.join("\n\n"),
                })
            } else {
                write(&UserParts {
                    role: "user",
                    content: parts,
                })
            }
        }
        Role::Assistant => {
            let mut text = String::new();
            let mut reasoning = String::new();
            let mut calls = Vec::new();
            for b in &m.content {
                match b {
                    ContentBlock::Text { text: t, .. } => {
                        if !text.is_empty() && !t.is_empty() {
                            text.push_str("\n\n");
                        }
                        text.push_str(t);
                    }
                    ContentBlock::ToolUse { id, name, input } => calls.push(Call {
                        id,
                        kind: "function",
                        function: CallFunction {
                            name,
                            arguments: serde_json::to_string(input).map_err(|e| e.to_string())?,
                        },
                    }),
                    // Only this protocol's own reasoning (no signature) ever goes back.
                    ContentBlock::Thinking { thinking, signature } if signature.is_empty() => {
                        reasoning.push_str(thinking)
                    }
                    _ => {}
                }
            }
            let content = if text.is_empty() && !calls.is_empty() {
                None
            } else {
                Some(text)
            };
            write(&Assistant {
                role: "assistant",
                content,
                tool_calls: calls,
                reasoning_content: (caps.send_reasoning && !reasoning.is_empty()).then_some(reasoning),
            })
        }
    }
}

fn image_part<'a>(source: &crate::types::message::ImageSource, caps: &Capabilities) -> Part<'a> {
    if caps.images {
        Part::ImageUrl {
            image_url: ImageUrl { url: data_url(source) },
        }
    } else {
        Part::Text {
            text: image_marker(source).into(),
        }
    }
}

/// Lets one writer closure take any of the item shapes.
mod erased {
    pub trait Item {
        fn write(&self, out: &mut Vec<u8>) -> Result<(), String>;
    }

    impl<T: serde::Serialize> Item for T {
        fn write(&self, out: &mut Vec<u8>) -> Result<(), String> {
            serde_json::to_writer(out, self).map_err(|e| e.to_string())
        }
    }
}
