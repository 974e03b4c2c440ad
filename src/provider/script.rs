//! The script provider: replays scripted assistant turns through the real engine and tools.
//!
//! Format (JSON; see docs/SCRIPT_PROVIDER.md): an object `{"model": "...", "turns": [...]}` or a
//! bare array of turns. Each turn is one model response:
//! `{"text": "...", "thinking": "...", "tool_calls": [{"name": "Read", "input": {...}}],
//!   "stop_reason": "end_turn", "usage": {...}, "delay_ms": 20}`.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{ModelRequest, ModelResponse, Provider, ProviderError, ProviderEvent, ProviderStream, channel_stream};
use crate::types::message::{ContentBlock, StopReason, Usage};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub thinking: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ScriptToolCall>,
    #[serde(default)]
    pub stop_reason: Option<String>,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Pause between streamed chunks, to make streaming and interruption visible.
    #[serde(default)]
    pub delay_ms: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    #[serde(default = "empty_object")]
    pub input: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

pub struct ScriptProvider {
    model: String,
    turns: Vec<ScriptTurn>,
    next: Mutex<usize>,
    /// Characters of each message of the last request, by its lineage: a request that vouches
    /// for the messages it repeats is only measured from there (measuring the whole history
    /// for every request grew with the session).
    sizes: Mutex<Option<MessageSizes>>,
}

/// A request's lineage and the characters of each of its messages.
type MessageSizes = ((u64, u64), Vec<usize>);

impl ScriptProvider {
    pub fn load(path: &Path) -> Result<Self, ProviderError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ProviderError::Script(format!("cannot read {}: {e}", path.display())))?;
        Self::parse(&text).map_err(|e| ProviderError::Script(format!("{}: {e}", path.display())))
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| format!("invalid JSON (line {}, column {}): {e}", e.line(), e.column()))?;
        let (model, raw_turns) = match value {
            Value::Array(turns) => (None, turns),
            Value::Object(mut map) => {
                let model = match map.remove("model") {
                    None => None,
                    Some(Value::String(m)) => Some(m),
                    Some(_) => return Err("`model` must be a string".into()),
                };
                match map.remove("turns") {
                    Some(Value::Array(turns)) => (model, turns),
                    _ => return Err("expected a `turns` array".into()),
                }
            }
            _ => return Err("expected an object with `turns` or an array of turns".into()),
        };
        let turns = raw_turns
            .into_iter()
            .enumerate()
            .map(|(i, t)| serde_json::from_value::<ScriptTurn>(t).map_err(|e| format!("turn {}: {e}", i + 1)))
            .collect::<Result<Vec<_>, _>>()?;
        for (i, turn) in turns.iter().enumerate() {
            if turn.text.is_none() && turn.tool_calls.is_empty() && turn.thinking.is_none() {
                return Err(format!("turn {} has neither text, thinking nor tool_calls", i + 1));
            }
        }
        Ok(ScriptProvider {
            model: model.unwrap_or_else(|| "script".into()),
            turns,
            next: Mutex::new(0),
            sizes: Mutex::new(None),
        })
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    fn take_turn(&self) -> Result<(usize, ScriptTurn), ProviderError> {
        let mut next = self
            .next
            .lock()
            .map_err(|_| ProviderError::Script("internal state poisoned".into()))?;
        let i = *next;
        let turn = self.turns.get(i).cloned().ok_or_else(|| {
            ProviderError::Script(format!(
                "the script has {} turns and the engine asked for turn {}; add a final turn without tool_calls",
                self.turns.len(),
                i + 1
            ))
        })?;
        *next += 1;
        Ok((i, turn))
    }
}

impl Provider for ScriptProvider {
    fn name(&self) -> &str {
        "script"
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ProviderStream {
        let (tx, rx) = mpsc::channel(64);
        let taken = self.take_turn();
        let model = request.model.clone();
        let scripted_usage = taken.as_ref().is_ok_and(|(_, t)| t.usage.is_some());
        let estimate = if scripted_usage {
            0
        } else {
            self.estimate_request_tokens(&request)
        };
        drop(request);
        tokio::spawn(async move {
            let result = match taken {
                Ok((i, turn)) => play(i, turn, model, estimate, &cancel, &tx).await,
                Err(e) => Err(e),
            };
            let _ = tx.send(result.map(ProviderEvent::Completed)).await;
        });
        channel_stream(rx)
    }
}

type Tx = mpsc::Sender<Result<ProviderEvent, ProviderError>>;

async fn pause(delay: Duration, cancel: &CancellationToken) -> Result<(), ProviderError> {
    if delay.is_zero() {
        return if cancel.is_cancelled() {
            Err(ProviderError::Cancelled)
        } else {
            Ok(())
        };
    }
    tokio::select! {
        _ = cancel.cancelled() => Err(ProviderError::Cancelled),
        _ = tokio::time::sleep(delay) => Ok(()),
    }
}

async fn play(
    index: usize,
    turn: ScriptTurn,
    model: String,
    estimate: u64,
    cancel: &CancellationToken,
    tx: &Tx,
) -> Result<ModelResponse, ProviderError> {
    let delay = Duration::from_millis(turn.delay_ms);
    let mut content = Vec::new();
    let mut output_chars = 0usize;
    if let Some(thinking) = turn.thinking {
        for piece in chunks(&thinking) {
            pause(delay, cancel).await?;
            let _ = tx
                .send(Ok(ProviderEvent::ThinkingDelta {
                    text: piece.to_string(),
                }))
                .await;
        }
        output_chars += thinking.len();
        content.push(ContentBlock::Thinking {
            thinking,
            signature: "script".into(),
        });
    }
    if let Some(text) = turn.text {
        for piece in chunks(&text) {
            pause(delay, cancel).await?;
            let _ = tx
                .send(Ok(ProviderEvent::TextDelta {
                    text: piece.to_string(),
                }))
                .await;
        }
        output_chars += text.len();
        content.push(ContentBlock::text(text));
    }
    for (n, call) in turn.tool_calls.iter().enumerate() {
        pause(delay, cancel).await?;
        let id = call
            .id
            .clone()
            .unwrap_or_else(|| format!("toolu_script_{:02}_{:02}", index + 1, n + 1));
        let _ = tx
            .send(Ok(ProviderEvent::ToolUseStarted {
                id: id.clone(),
                name: call.name.clone(),
            }))
            .await;
        output_chars += call.input.to_string().len();
        content.push(ContentBlock::ToolUse {
            id,
            name: call.name.clone(),
            input: call.input.clone(),
        });
    }
    let stop_reason = match turn.stop_reason {
        Some(s) => StopReason::parse(&s),
        None if turn.tool_calls.is_empty() => StopReason::EndTurn,
        None => StopReason::ToolUse,
    };
    // Without scripted usage, estimate so context accounting still has numbers to work with.
    let usage = turn.usage.unwrap_or_else(|| Usage {
        input_tokens: estimate,
        output_tokens: (output_chars / 4).max(1) as u64,
        ..Usage::default()
    });
    Ok(ModelResponse {
        id: format!("msg_script_{:04}", index + 1),
        model,
        content,
        stop_reason,
        usage,
        broken_tool_calls: Vec::new(),
    })
}

impl ScriptProvider {
    /// About four characters per token over the text the request carries.
    fn estimate_request_tokens(&self, request: &ModelRequest) -> u64 {
        let system: usize = request.system.iter().map(|b| b.text.len()).sum();
        let mut cache = self.sizes.lock().unwrap_or_else(|p| p.into_inner());
        let mut sizes = match (cache.take(), request.unchanged) {
            (Some((lineage, mut sizes)), Some(u)) if lineage == u.after && u.len <= sizes.len() => {
                sizes.truncate(u.len.min(request.messages.len()));
                sizes
            }
            _ => Vec::new(),
        };
        let known = sizes.len();
        sizes.extend(
            request.messages[known.min(request.messages.len())..]
                .iter()
                .map(message_chars),
        );
        let messages: usize = sizes.iter().sum();
        if let Some(u) = request.unchanged {
            *cache = Some((u.lineage, sizes));
        }
        ((system + messages) / 4) as u64
    }
}

fn message_chars(m: &crate::types::message::Message) -> usize {
    m.content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text, .. } => text.len(),
            ContentBlock::ToolResult { content, .. } => content.text_len(),
            ContentBlock::ToolUse { input, .. } => input.to_string().len(),
            ContentBlock::Thinking { thinking, .. } => thinking.len(),
            ContentBlock::RedactedThinking { data } => data.len(),
            ContentBlock::Image { .. } => 6_000,
            ContentBlock::ServerToolUse { input, .. } => input.to_string().len(),
            ContentBlock::WebSearchToolResult { content, .. } => content.to_string().len(),
        })
        .sum()
}

/// Splits text into word-ish pieces, keeping whitespace, so streaming looks natural.
fn chunks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut words = 0;
    for (i, c) in text.char_indices() {
        if c == ' ' || c == '\n' {
            words += 1;
            if words == 3 {
                out.push(&text[start..=i]);
                start = i + 1;
                words = 0;
            }
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_text() {
        let t = "one two three four five six seven";
        assert_eq!(chunks(t).concat(), t);
        assert!(chunks(t).len() > 1);
        assert!(chunks("").is_empty());
    }

    #[test]
    fn parse_errors_name_the_position() {
        let err = ScriptProvider::parse("{\"turns\": [ {\"text\": 1} ]}").err().unwrap();
        assert!(err.contains("turn 1"), "{err}");
        let err = ScriptProvider::parse("[{}]").err().unwrap();
        assert!(err.contains("turn 1"), "{err}");
    }

    #[test]
    fn the_estimate_of_a_request_that_repeats_the_last_one_equals_a_fresh_estimate() {
        use crate::provider::prefix::Unchanged;
        use crate::types::message::Message;
        let p = ScriptProvider::parse(r#"[{"text":"hi"}]"#).unwrap();
        let history: Vec<Message> = (0..20).map(|i| Message::user_text("x".repeat(40 * (i + 1)))).collect();
        let request = |n: usize, unchanged: Option<Unchanged>| ModelRequest {
            model: "script".into(),
            max_tokens: 100,
            system: Vec::new(),
            messages: std::sync::Arc::new(history[..n].to_vec()),
            tools: Default::default(),
            cache_breakpoints: Vec::new(),
            reasoning: Default::default(),
            unchanged,
        };
        let voucher = |len| {
            Some(Unchanged {
                lineage: (1, 1),
                after: (1, 1),
                len,
            })
        };
        let first = p.estimate_request_tokens(&request(10, voucher(0)));
        assert_eq!(first, (40 * 55) / 4);
        // Vouching for the first 9: the measured sizes of those are reused, the rest measured.
        let grown = p.estimate_request_tokens(&request(20, voucher(9)));
        let fresh = ScriptProvider::parse(r#"[{"text":"hi"}]"#)
            .unwrap()
            .estimate_request_tokens(&request(20, None));
        assert_eq!(grown, fresh);
        assert_eq!(fresh, (40 * 210) / 4);
        // Another conversation's voucher reuses nothing.
        let other = p.estimate_request_tokens(&request(
            5,
            Some(Unchanged {
                lineage: (2, 1),
                after: (2, 1),
                len: 5,
            }),
        ));
        assert_eq!(other, (40 * 15) / 4);
    }

    #[test]
    fn bare_array_is_accepted() {
        let p = ScriptProvider::parse(r#"[{"text":"hi"}]"#).unwrap();
        assert_eq!(p.turns.len(), 1);
        assert_eq!(p.model(), "script");
    }
}
