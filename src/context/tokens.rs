//! Token accounting: a fast estimate of what a request occupies in the context window, corrected
//! by the provider's reported usage where it is known, and the window itself.
//!
//! The estimate is deliberately simple (about four bytes per token plus a little framing per
//! block): it runs before every request, so it must cost microseconds, and the provider's count
//! replaces it for every part of the conversation the provider has already seen.

use crate::provider::{SystemBlock, ToolDefinition};
use crate::types::message::{ContentBlock, Message, ToolResultContent, Usage};

/// Bytes per token assumed by the estimate.
pub const BYTES_PER_TOKEN: u64 = 4;
/// What one image costs, roughly, whatever its encoded size.
pub const IMAGE_TOKENS: u64 = 1_600;
/// JSON framing of one content block (type tag, ids, flags).
const BLOCK_OVERHEAD: u64 = 8;
/// Framing of one message (role, content array).
const MESSAGE_OVERHEAD: u64 = 4;

pub fn text(s: &str) -> u64 {
    (s.len() as u64).div_ceil(BYTES_PER_TOKEN)
}

/// Counts the bytes of a value's JSON without building the string.
fn json_len(value: &serde_json::Value) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    match serde_json::to_writer(&mut c, value) {
        Ok(()) => c.0,
        Err(_) => 0,
    }
}

pub fn block(b: &ContentBlock) -> u64 {
    BLOCK_OVERHEAD
        + match b {
            ContentBlock::Text { text: t, .. } => text(t),
            ContentBlock::Image { .. } => IMAGE_TOKENS,
            ContentBlock::ToolUse { id, name, input } => {
                text(id) + text(name) + json_len(input).div_ceil(BYTES_PER_TOKEN)
            }
            ContentBlock::ToolResult {
                tool_use_id, content, ..
            } => text(tool_use_id) + result(content),
            ContentBlock::Thinking { thinking, signature } => text(thinking) + text(signature),
            ContentBlock::RedactedThinking { data } => text(data),
            ContentBlock::ServerToolUse { id, name, input } => {
                text(id) + text(name) + json_len(input).div_ceil(BYTES_PER_TOKEN)
            }
            ContentBlock::WebSearchToolResult { tool_use_id, content } => {
                text(tool_use_id) + json_len(content).div_ceil(BYTES_PER_TOKEN)
            }
        }
}

pub fn result(content: &ToolResultContent) -> u64 {
    match content {
        ToolResultContent::Text(t) => text(t),
        ToolResultContent::Blocks(blocks) => blocks
            .iter()
            .map(|b| match b {
                crate::types::message::ToolResultBlock::Text { text: t } => BLOCK_OVERHEAD + text(t),
                crate::types::message::ToolResultBlock::Image { .. } => BLOCK_OVERHEAD + IMAGE_TOKENS,
            })
            .sum(),
    }
}

pub fn message(m: &Message) -> u64 {
    MESSAGE_OVERHEAD + m.content.iter().map(block).sum::<u64>()
}

pub fn messages(ms: &[Message]) -> u64 {
    ms.iter().map(message).sum()
}

pub fn system(blocks: &[SystemBlock]) -> u64 {
    blocks.iter().map(|b| BLOCK_OVERHEAD + text(&b.text)).sum()
}

/// The tool definitions exactly as they are sent (they are encoded once per session).
pub fn tool_set(set: &crate::provider::ToolSet) -> u64 {
    (set.encoded().get().len() as u64).div_ceil(BYTES_PER_TOKEN)
}

pub fn tools(defs: &[ToolDefinition]) -> u64 {
    defs.iter()
        .map(|d| BLOCK_OVERHEAD + text(&d.name) + text(&d.description) + json_len(&d.input_schema).div_ceil(4))
        .sum()
}

/// The context window in effect and what it leaves for input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Total tokens the model accepts (input and output).
    pub total: u64,
    /// Tokens kept free for the model's answer.
    pub output_reserve: u64,
}

impl Window {
    /// The window of `model` from the model table unless `override_tokens` says otherwise; the
    /// reserve for the answer is the smaller of the output limit, 20,000 and a quarter window.
    pub fn new(model_window: u64, override_tokens: Option<u64>, max_output: u32) -> Window {
        let total = override_tokens.unwrap_or(model_window).max(1);
        let output_reserve = (max_output as u64).min(20_000).min(total / 4);
        Window { total, output_reserve }
    }

    /// What the input of one request may occupy.
    pub fn input_budget(&self) -> u64 {
        self.total - self.output_reserve
    }

    /// The estimate at which autocompaction starts: `pct` percent of the input budget.
    pub fn threshold(&self, pct: u8) -> u64 {
        self.input_budget() * pct.clamp(1, 100) as u64 / 100
    }
}

/// Parses a token count from the environment (`KEEL_CONTEXT_WINDOW`), with a clear error.
pub fn parse_window(name: &str, raw: &str) -> Result<u64, String> {
    let cleaned: String = raw.trim().chars().filter(|c| *c != '_' && *c != ',').collect();
    match cleaned.parse::<u64>() {
        Ok(n) if n >= 1_000 => Ok(n),
        Ok(n) => Err(format!(
            "{name} is {n} tokens; a context window needs at least 1000 tokens"
        )),
        Err(_) => Err(format!("{name} must be a number of tokens, got `{raw}`")),
    }
}

/// What the provider said about the last request, to count the conversation it has seen
/// exactly and estimate only what came after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Observed {
    /// Identifies the request view the usage belongs to; a different generation means the
    /// earlier part of the view changed and the usage no longer describes a prefix.
    generation: u64,
    /// How many view messages that request carried.
    messages: usize,
    /// Input (cached and uncached) plus output tokens.
    tokens: u64,
}

/// What the last count was made of, so the usage of the request it was sent as can say how
/// far the estimate was off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counted {
    generation: u64,
    messages: usize,
    /// Tokens the provider counted before (an earlier request's usage).
    known: u64,
    /// Tokens estimated, before scaling.
    estimated: u64,
}

/// The estimated part must be at least this large for its error to be measured.
const MIN_SAMPLE: u64 = 256;
/// Larger ratios of counted to estimated tokens are not a tokenizer's difference but something
/// the estimate does not see (a provider's own hidden prompt): not learned.
const MAX_SCALE: f64 = 1.6;

/// Counts the tokens of the next request: provider usage for the part already sent, the
/// estimate for the rest; the pure estimate when no usage applies. It also learns how far the
/// estimate fell short of the provider's count before (llama.cpp counts up to a fifth more
/// than four bytes per token for code): [`TokenCounter::with_margin`] is the count with the
/// estimated part scaled by that, never below the plain estimate, which is what decides
/// whether a request fits the window at all.
#[derive(Debug, Default, Clone)]
pub struct TokenCounter {
    pending: Option<(u64, usize, Option<Counted>)>,
    last: Option<Observed>,
    /// Provider tokens per estimated token, once measured (`None`: 1).
    scale: Option<f64>,
    last_count: std::cell::Cell<Option<Counted>>,
}

impl TokenCounter {
    /// Notes the view about to be sent.
    pub fn sent(&mut self, generation: u64, messages: usize) {
        let counted = self
            .last_count
            .get()
            .filter(|c| c.generation == generation && c.messages == messages);
        self.pending = Some((generation, messages, counted));
    }

    /// Records the provider's usage for the request last sent (zero usage is ignored), and
    /// learns from it how far the estimate was off.
    pub fn observed(&mut self, usage: &Usage) {
        let tokens = usage.context_tokens() + usage.output_tokens;
        if let Some((generation, messages, counted)) = self.pending.take()
            && tokens > 0
        {
            if let Some(c) = counted
                && c.estimated >= MIN_SAMPLE
                && usage.context_tokens() > c.known
            {
                let ratio = (usage.context_tokens() - c.known) as f64 / c.estimated as f64;
                if ratio <= MAX_SCALE {
                    self.scale = Some(ratio.max(1.0));
                }
            }
            self.last = Some(Observed {
                generation,
                messages,
                tokens,
            });
        }
    }

    /// Forgets what the provider said (the view was rebuilt from scratch); how far the
    /// estimate tends to be off stays known.
    pub fn reset(&mut self) {
        self.pending = None;
        self.last = None;
    }

    /// Provider tokens per estimated token, as last measured (1 until then).
    pub fn scale(&self) -> f64 {
        self.scale.unwrap_or(1.0)
    }

    /// Tokens of a request made of `fixed` (system and tools, estimated) and `view`.
    pub fn count(&self, generation: u64, fixed: u64, view: &[Message]) -> u64 {
        self.count_after(generation, fixed, view, (0, 0))
    }

    /// [`TokenCounter::count`] for a view whose first `prefix.0` messages are estimated at
    /// `prefix.1` tokens already (the compactor's cold part), so a new view is not estimated
    /// whole again.
    pub fn count_after(&self, generation: u64, fixed: u64, view: &[Message], prefix: (usize, u64)) -> u64 {
        let (known, estimated) = match self.last {
            // The provider counted the request it saw (system, tools, the first `messages`
            // view messages) and its answer, which is the next view message.
            Some(o) if o.generation == generation && o.messages < view.len() => {
                (o.tokens.max(fixed), messages(&view[o.messages + 1..]))
            }
            _ => match view.get(prefix.0..) {
                Some(rest) => (0, fixed + prefix.1 + messages(rest)),
                None => (0, fixed + messages(view)),
            },
        };
        self.last_count.set(Some(Counted {
            generation,
            messages: view.len(),
            known,
            estimated,
        }));
        known + estimated
    }

    /// The last count with its estimated part scaled by how far estimates fell short before.
    pub fn with_margin(&self) -> u64 {
        self.last_count
            .get()
            .map(|c| c.known + (c.estimated as f64 * self.scale()).ceil() as u64)
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn estimate_grows_with_content_and_counts_images_flat() {
        let small = Message::user_text("hello");
        let big = Message::user_text("x".repeat(4_000));
        assert!(message(&big) >= 1_000);
        assert!(message(&small) < 20);
        let img = ContentBlock::Image {
            source: crate::types::message::ImageSource {
                kind: "base64".into(),
                media_type: "image/png".into(),
                data: "A".repeat(1_000_000),
            },
        };
        assert_eq!(block(&img), BLOCK_OVERHEAD + IMAGE_TOKENS);
        let call = ContentBlock::ToolUse {
            id: "t".into(),
            name: "Read".into(),
            input: json!({"file_path": "/a/b.rs"}),
        };
        assert!(block(&call) > BLOCK_OVERHEAD);
    }

    #[test]
    fn window_override_and_threshold() {
        let w = Window::new(200_000, None, 32_000);
        assert_eq!(w.total, 200_000);
        assert_eq!(w.output_reserve, 20_000);
        assert_eq!(w.threshold(90), 162_000);
        let small = Window::new(200_000, Some(20_000), 32_000);
        assert_eq!(small.output_reserve, 5_000);
        assert_eq!(small.input_budget(), 15_000);
        assert_eq!(parse_window("KEEL_CONTEXT_WINDOW", "30_000"), Ok(30_000));
        assert!(
            parse_window("KEEL_CONTEXT_WINDOW", "big")
                .unwrap_err()
                .contains("`big`")
        );
        assert!(parse_window("KEEL_CONTEXT_WINDOW", "10").is_err());
    }

    #[test]
    fn counter_uses_provider_usage_for_the_prefix_it_saw() {
        let mut c = TokenCounter::default();
        let view = vec![Message::user_text("a".repeat(400))];
        let estimate = c.count(1, 50, &view);
        assert_eq!(estimate, 50 + message(&view[0]));
        c.sent(1, 1);
        c.observed(&Usage {
            input_tokens: 10,
            cache_read_input_tokens: 5_000,
            output_tokens: 20,
            ..Usage::default()
        });
        let mut grown = view.clone();
        grown.push(Message::assistant(vec![ContentBlock::text("ok")]));
        grown.push(Message::user_text("b".repeat(40)));
        let counted = c.count(1, 50, &grown);
        // The provider's 5,030 tokens stand for the prefix and the answer; only the newest
        // message is estimated.
        assert_eq!(counted, 5_030 + message(&grown[2]));
        // Another generation (a rebuilt view) falls back to the estimate.
        assert_eq!(c.count(2, 50, &grown), 50 + messages(&grown));
        // Zero usage (a provider that reports none) is not trusted.
        c.sent(3, 3);
        c.observed(&Usage::default());
        assert_eq!(c.count(3, 50, &grown), 50 + messages(&grown));
    }

    #[test]
    fn an_estimate_that_fell_short_of_the_providers_count_is_scaled_up_from_then_on() {
        let mut c = TokenCounter::default();
        let view = vec![Message::user_text("a".repeat(4_000))];
        let estimate = c.count(1, 200, &view);
        c.sent(1, 1);
        // The server counted 17% more than keel estimated.
        let counted = estimate + estimate * 17 / 100;
        c.observed(&Usage {
            input_tokens: counted,
            output_tokens: 10,
            ..Usage::default()
        });
        assert!((c.scale() - 1.17).abs() < 0.01, "{}", c.scale());
        let mut grown = view.clone();
        grown.push(Message::assistant(vec![ContentBlock::text("ok")]));
        grown.push(Message::user_text("b".repeat(8_000)));
        let tail = message(&grown[2]);
        assert_eq!(
            c.count(1, 200, &grown),
            counted + 10 + tail,
            "the plain count is unchanged"
        );
        let margin = c.with_margin();
        assert_eq!(margin, counted + 10 + (tail as f64 * c.scale()).ceil() as u64);
        assert!(margin > counted + 10 + tail, "the new part is counted with the margin");
        // A count below the estimate never lowers it; an implausible one is not learned.
        c.sent(1, 3);
        c.observed(&Usage {
            input_tokens: counted + 10 + tail / 2,
            output_tokens: 5,
            ..Usage::default()
        });
        assert_eq!(c.scale(), 1.0);
        let mut huge = TokenCounter::default();
        huge.count(1, 200, &view);
        huge.sent(1, 1);
        huge.observed(&Usage {
            input_tokens: estimate * 30,
            ..Usage::default()
        });
        assert_eq!(huge.scale(), 1.0);
    }
}
