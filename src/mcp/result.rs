//! MCP results as the model sees them: pure functions over the JSON of `tools/call`,
//! `resources/read` and `prompts/get` results (kept independent of the client library's types).

use serde_json::{Value, json};

use crate::tools::ToolOutput;
use crate::types::message::{ImageSource, ToolResultBlock, ToolResultContent};

/// Image types the model APIs accept inline.
const INLINE_IMAGES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// A `tools/call` result → a tool result: text, images, resource links and embedded resources
/// become content blocks; `isError` becomes `is_error`. A result with `structuredContent`
/// gives the model that JSON as a text block of its own (unless a text block already holds the
/// same JSON); the JSON is also kept for hooks and `tool_use_result`.
pub fn tool_output(result: &Value) -> ToolOutput {
    let content = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
    let mut blocks = blocks_of(&content);
    if let Some(s) = structured {
        blocks.retain(|b| !matches!(b, ToolResultBlock::Text { text } if text.is_empty()));
        let already = blocks.iter().any(|b| {
            matches!(b, ToolResultBlock::Text { text } if serde_json::from_str::<Value>(text).ok().as_ref() == Some(s))
        });
        if !already {
            blocks.push(ToolResultBlock::Text { text: s.to_string() });
        }
    }
    if blocks.is_empty() {
        blocks.push(ToolResultBlock::Text {
            text: if is_error {
                "The MCP tool reported an error without a message.".into()
            } else {
                "(the MCP tool returned no content)".into()
            },
        });
    }
    let mut tool_response = Value::Array(content);
    if let Some(s) = structured {
        tool_response = json!({"content": tool_response, "structuredContent": s});
    }
    // A list of blocks, as the server sent them (a program driving keel reads them so too);
    // text over the result budget is still spilled (`tool::cap_mixed`).
    ToolOutput {
        content: ToolResultContent::Blocks(blocks),
        is_error,
        structured: tool_response,
    }
}

/// Plain text when there are no images (so the result budget can spill it), blocks otherwise.
pub fn collapse(blocks: Vec<ToolResultBlock>) -> ToolResultContent {
    if blocks.iter().all(|b| matches!(b, ToolResultBlock::Text { .. })) {
        let text = blocks
            .into_iter()
            .filter_map(|b| match b {
                ToolResultBlock::Text { text } => Some(text),
                ToolResultBlock::Image { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        ToolResultContent::Text(text)
    } else {
        ToolResultContent::Blocks(blocks)
    }
}

/// MCP content blocks → tool result blocks. Consecutive texts are kept as separate blocks;
/// what cannot be shown inline (audio, binary resources, unknown types) is described.
pub fn blocks_of(content: &[Value]) -> Vec<ToolResultBlock> {
    content.iter().map(block_of).collect()
}

fn block_of(item: &Value) -> ToolResultBlock {
    let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
    let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
    let text = match kind {
        "text" => s("text").to_string(),
        "image" => {
            let mime = s("mimeType");
            if INLINE_IMAGES.contains(&mime) && !s("data").is_empty() {
                return ToolResultBlock::Image {
                    source: ImageSource {
                        kind: "base64".into(),
                        media_type: mime.to_string(),
                        data: s("data").to_string(),
                    },
                };
            }
            format!(
                "[image of type {mime} ({} base64 characters) not shown]",
                s("data").len()
            )
        }
        "audio" => format!(
            "[audio of type {} ({} base64 characters) not shown]",
            s("mimeType"),
            s("data").len()
        ),
        "resource_link" => {
            let mut line = format!("Resource link: {} <{}>", s("name"), s("uri"));
            if !s("mimeType").is_empty() {
                line.push_str(&format!(" ({})", s("mimeType")));
            }
            if !s("description").is_empty() {
                line.push_str(&format!(" — {}", s("description")));
            }
            line
        }
        "resource" => item.get("resource").map(resource_text).unwrap_or_default(),
        other => format!(
            "[content of unsupported type `{other}`: {}]",
            excerpt(&item.to_string(), 200)
        ),
    };
    ToolResultBlock::Text { text }
}

/// One resource's contents (`{uri, mimeType, text | blob}`) as text.
pub fn resource_text(r: &Value) -> String {
    let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
    let mime = r.get("mimeType").and_then(Value::as_str).unwrap_or("");
    if let Some(text) = r.get("text").and_then(Value::as_str) {
        let mut out = format!("Resource {uri}");
        if !mime.is_empty() {
            out.push_str(&format!(" ({mime})"));
        }
        out.push_str(":\n");
        out.push_str(text);
        out
    } else if let Some(blob) = r.get("blob").and_then(Value::as_str) {
        format!(
            "Resource {uri} ({}): binary content of about {} bytes, not shown",
            if mime.is_empty() { "unknown type" } else { mime },
            blob.len() / 4 * 3
        )
    } else {
        format!("Resource {uri}: no content")
    }
}

/// A `resources/read` result → one text per content entry.
pub fn read_resource_output(result: &Value) -> ToolOutput {
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut blocks = Vec::new();
    for c in &contents {
        let mime = c.get("mimeType").and_then(Value::as_str).unwrap_or("");
        match c.get("blob").and_then(Value::as_str) {
            Some(data) if INLINE_IMAGES.contains(&mime) => blocks.push(ToolResultBlock::Image {
                source: ImageSource {
                    kind: "base64".into(),
                    media_type: mime.to_string(),
                    data: data.to_string(),
                },
            }),
            _ => blocks.push(ToolResultBlock::Text { text: resource_text(c) }),
        }
    }
    if blocks.is_empty() {
        blocks.push(ToolResultBlock::Text {
            text: "(the resource has no contents)".into(),
        });
    }
    ToolOutput {
        content: collapse(blocks),
        is_error: false,
        structured: json!({"contents": contents}),
    }
}

/// A `prompts/get` result → the text to submit as the user's message.
pub fn prompt_text(result: &Value) -> String {
    let messages = result
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut parts = Vec::new();
    for m in &messages {
        let content = m.get("content").cloned().unwrap_or(Value::Null);
        let items = match content {
            Value::Array(a) => a,
            other => vec![other],
        };
        for b in blocks_of(&items) {
            if let ToolResultBlock::Text { text } = b {
                parts.push(text);
            } else {
                parts.push("[image]".into());
            }
        }
    }
    parts.join("\n\n")
}

fn excerpt(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_image_links_and_errors() {
        let out = tool_output(&json!({"content": [{"type": "text", "text": "Echo: hi"}]}));
        assert_eq!(
            out.content,
            ToolResultContent::Blocks(vec![ToolResultBlock::Text {
                text: "Echo: hi".into()
            }]),
            "a list of blocks, as the server sent them"
        );
        assert!(!out.is_error);

        let out = tool_output(&json!({"content": [
            {"type": "text", "text": "a tiny image:"},
            {"type": "image", "data": "iVBORw0K", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "test://static/1", "name": "one", "mimeType": "text/plain"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"}},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
        ]}));
        let ToolResultContent::Blocks(blocks) = &out.content else {
            panic!("{:?}", out.content)
        };
        assert!(matches!(&blocks[1], ToolResultBlock::Image { source } if source.media_type == "image/png"));
        let text = out.content.as_text();
        assert!(
            text.contains("Resource link: one <test://static/1> (text/plain)"),
            "{text}"
        );
        assert!(text.contains("Resource file:///a.txt (text/plain):\nhello"), "{text}");
        assert!(text.contains("[audio of type audio/wav"), "{text}");

        let err = tool_output(&json!({"content": [{"type": "text", "text": "Unknown tool: x"}], "isError": true}));
        assert!(err.is_error);
        assert_eq!(err.content.as_text(), "Unknown tool: x");

        let structured = tool_output(&json!({"content": [], "structuredContent": {"temperature": 22.5}}));
        assert_eq!(
            structured.content,
            ToolResultContent::Blocks(vec![ToolResultBlock::Text {
                text: r#"{"temperature":22.5}"#.into()
            }])
        );
        // Text beside it stays, as its own block; the same JSON is not given twice.
        let both = tool_output(&json!({"content": [{"type": "text", "text": "22.5 degrees"}],
                                       "structuredContent": {"temperature": 22.5}}));
        let ToolResultContent::Blocks(b) = &both.content else {
            panic!("blocks")
        };
        assert_eq!(b.len(), 2);
        let twice = tool_output(
            &json!({"content": [{"type": "text", "text": "{\"temperature\": 22.5}"}],
                                        "structuredContent": {"temperature": 22.5}}),
        );
        let ToolResultContent::Blocks(b) = &twice.content else {
            panic!("blocks")
        };
        assert_eq!(b.len(), 1);
        assert_eq!(structured.structured["structuredContent"]["temperature"], 22.5);

        let empty = tool_output(&json!({}));
        assert!(empty.content.as_text().contains("no content"));
        let svg = tool_output(&json!({"content": [{"type": "image", "data": "PHN2", "mimeType": "image/svg+xml"}]}));
        assert!(svg.content.as_text().contains("not shown"));
    }

    #[test]
    fn resources_and_prompts() {
        let out = read_resource_output(&json!({"contents": [
            {"uri": "test://1", "mimeType": "text/plain", "text": "one"},
            {"uri": "test://2", "mimeType": "application/octet-stream", "blob": "AAAAAAAA"}
        ]}));
        let text = out.content.as_text();
        assert!(text.contains("Resource test://1 (text/plain):\none"), "{text}");
        assert!(text.contains("about 6 bytes"), "{text}");
        let prompt = prompt_text(&json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "Review this"}},
            {"role": "user", "content": {"type": "resource", "resource": {"uri": "r://x", "text": "body"}}}
        ]}));
        assert_eq!(prompt, "Review this\n\nResource r://x:\nbody");
    }
}
