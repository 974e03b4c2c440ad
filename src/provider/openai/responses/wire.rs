//! The Responses request: the system prompt as `instructions`, the conversation as `input`
//! items (`message`, `function_call`, `function_call_output`, `reasoning`), tools as flat
//! `type: function` entries. Nothing is stored on the server, so reasoning items travel back
//! with their encrypted content and without ids (ids would refer to stored items).

use serde::Serialize;

use crate::config::models::{self, Capabilities};
use crate::provider::openai::{data_url, image_marker, result_images, result_text};
use crate::provider::prefix::{PrefixCache, close_array};
use crate::provider::reasoning;
use crate::provider::{ModelRequest, ToolSet};
use crate::types::message::{ContentBlock, Message, Role};

#[derive(Serialize)]
struct Head<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    instructions: &'a str,
    stream: bool,
    store: bool,
    max_output_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningOptions>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
}

#[derive(Serialize)]
struct ReasoningOptions {
    summary: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
}

pub fn body(request: &ModelRequest, tools: &[u8], cache: &PrefixCache) -> Result<Vec<u8>, String> {
    let caps = models::info(&request.model).caps;
    let instructions: Vec<&str> = request.system.iter().map(|b| b.text.as_str()).collect();
    let instructions = instructions.join("\n\n");
    let head = Head {
        model: &request.model,
        instructions: &instructions,
        stream: true,
        store: false,
        max_output_tokens: request.max_tokens,
        reasoning: caps.thinking.then(|| ReasoningOptions {
            summary: "auto",
            effort: request
                .reasoning
                .effort
                .as_deref()
                .map(crate::provider::openai::openai_effort),
        }),
        include: if caps.thinking {
            vec!["reasoning.encrypted_content"]
        } else {
            Vec::new()
        },
    };
    let mut out = serde_json::to_vec(&head).map_err(|e| e.to_string())?;
    out.pop();
    if caps.tools && !request.tools.is_empty() {
        out.extend_from_slice(b",\"tools\":");
        out.extend_from_slice(tools);
        out.extend_from_slice(b",\"tool_choice\":\"auto\",\"parallel_tool_calls\":true");
    }
    out.extend_from_slice(b",\"input\":[");
    let flavor = format!("responses:{}:{}", caps.images, caps.thinking);
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

/// `[{"type":"function","name","description","parameters"}, …]`
pub fn tools(set: &ToolSet) -> Result<Vec<u8>, String> {
    #[derive(Serialize)]
    struct Tool<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'a str,
        description: &'a str,
        parameters: &'a serde_json::Value,
    }
    let list: Vec<Tool> = set
        .as_slice()
        .iter()
        .map(|t| Tool {
            kind: "function",
            name: &t.name,
            description: &t.description,
            parameters: &t.input_schema,
        })
        .collect();
    if set.server_tools().is_empty() {
        return serde_json::to_vec(&list).map_err(|e| e.to_string());
    }
    // The provider's own tools (its web search) go as they were given, after the functions.
    let mut all = serde_json::to_value(&list).map_err(|e| e.to_string())?;
    if let serde_json::Value::Array(items) = &mut all {
        items.extend(set.server_tools().iter().cloned());
    }
    serde_json::to_vec(&all).map_err(|e| e.to_string())
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item<'a> {
    Message {
        role: &'static str,
        content: Vec<Part<'a>>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: String,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: Output<'a>,
    },
    Reasoning {
        summary: Vec<Summary<'a>>,
        encrypted_content: &'a str,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum Output<'a> {
    Text(String),
    Parts(Vec<Part<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    InputText { text: std::borrow::Cow<'a, str> },
    InputImage { image_url: String },
    OutputText { text: &'a str },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Summary<'a> {
    SummaryText { text: &'a str },
}

fn write(item: &Item, out: &mut Vec<u8>) -> Result<(), String> {
    serde_json::to_writer(&mut *out, item).map_err(|e| e.to_string())?;
    out.push(b',');
    Ok(())
}

/// One neutral message as input items, each followed by a comma.
pub fn encode(m: &Message, caps: &Capabilities, out: &mut Vec<u8>) -> Result<(), String> {
    match m.role {
        Role::User => {
            for b in &m.content {
                if let ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    ..
                } = b
                {
                    let images = result_images(content);
                    let text = result_text(content, *is_error);
                    let output = if images.is_empty() || !caps.images {
                        let mut text = text;
                        for source in images {
                            text.push('\n');
                            text.push_str(&image_marker(source));
                        }
                        Output::Text(text)
                    } else {
                        let mut parts = vec![Part::InputText { text: text.into() }];
                        parts.extend(images.into_iter().map(|s| Part::InputImage { image_url: data_url(s) }));
                        Output::Parts(parts)
                    };
                    write(
                        &Item::FunctionCallOutput {
                            call_id: tool_use_id,
                            output,
                        },
                        out,
                    )?;
                }
            }
            let mut parts = Vec::new();
            for b in &m.content {
                match b {
                    ContentBlock::Text { text, .. } => parts.push(Part::InputText { text: text.into() }),
                    ContentBlock::Image { source } if caps.images => parts.push(Part::InputImage {
                        image_url: data_url(source),
                    }),
                    ContentBlock::Image { source } => parts.push(Part::InputText {
                        text: image_marker(source).into(),
                    }),
                    _ => {}
                }
            }
            if !parts.is_empty() {
                write(
                    &Item::Message {
                        role: "user",
                        content: parts,
                    },
                    out,
                )?;
            }
        }
        Role::Assistant => {
            // Items in the order the model produced them: reasoning before the call it led to.
            let mut texts: Vec<Part> = Vec::new();
            let flush = |texts: &mut Vec<Part>, out: &mut Vec<u8>| -> Result<(), String> {
                if texts.is_empty() {
                    return Ok(());
                }
                write(
                    &Item::Message {
                        role: "assistant",
                        content: std::mem::take(texts),
                    },
                    out,
                )
            };
            for b in &m.content {
                match b {
                    ContentBlock::Text { text, .. } if !text.is_empty() => texts.push(Part::OutputText { text }),
                    ContentBlock::ToolUse { id, name, input } => {
                        flush(&mut texts, out)?;
                        write(
                            &Item::FunctionCall {
                                call_id: id,
                                name,
                                arguments: serde_json::to_string(input).map_err(|e| e.to_string())?,
                            },
                            out,
                        )?;
                    }
                    ContentBlock::Thinking { thinking, signature } => {
                        // Only this protocol's reasoning, and only with the content that makes
                        // it usable without server-side storage.
                        if let Some(encrypted) = reasoning::responses_encrypted(signature).filter(|e| !e.is_empty()) {
                            flush(&mut texts, out)?;
                            let summary = if thinking.is_empty() {
                                Vec::new()
                            } else {
                                vec![Summary::SummaryText { text: thinking }]
                            };
                            write(
                                &Item::Reasoning {
                                    summary,
                                    encrypted_content: encrypted,
                                },
                                out,
                            )?;
                        }
                    }
                    _ => {}
                }
            }
            flush(&mut texts, out)?;
        }
    }
    Ok(())
}
