//! Tokens and cost as the status line and `/cost` show them: a resumed session's earlier runs
//! (from its transcript), the engine's totals (sent after every job, so compaction requests and
//! sub-agents count), the request streaming now (input from its `message_start`, output
//! estimated from the streamed text until the real figure arrives), and requests cut off by an
//! interruption or a retry (estimated, and said so).

use serde_json::Value;

use super::App;
use crate::config::models;
use crate::engine::session::Totals;
use crate::types::message::Usage;

/// The request being streamed.
#[derive(Debug, Clone, Default)]
pub struct InFlight {
    pub model: String,
    pub usage: Usage,
    /// Characters of text and thinking streamed so far (about 4 per token).
    pub streamed_chars: usize,
    /// `message_start` arrived: the provider counts (and bills) this request.
    pub started: bool,
}

impl InFlight {
    /// Usage so far: the provider's figures, or an estimate of the output from the text.
    pub fn usage(&self) -> Usage {
        let mut u = self.usage;
        u.output_tokens = u.output_tokens.max(self.streamed_chars.div_ceil(4) as u64);
        u
    }
}

/// Adds every model's figures of `b` to `a`.
pub fn merged(a: &Totals, b: &Totals) -> Totals {
    let mut out = a.clone();
    out.usage.add(&b.usage);
    out.cost_usd += b.cost_usd;
    out.api_ms += b.api_ms;
    out.requests += b.requests;
    for (model, m) in &b.by_model {
        let e = out.by_model.entry(model.clone()).or_default();
        e.usage.add(&m.usage);
        e.cost_usd += m.cost_usd;
    }
    out
}

impl App {
    /// A raw provider event: usage from `message_start` and `message_delta`.
    pub(super) fn on_raw_stream(&mut self, v: &Value) {
        let f = self.status.in_flight.get_or_insert_with(InFlight::default);
        let num = |u: &Value, k: &str| u.get(k).and_then(Value::as_u64);
        match v.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                let m = &v["message"];
                f.started = true;
                f.model = m.get("model").and_then(Value::as_str).unwrap_or("").to_string();
                let u = &m["usage"];
                f.usage.input_tokens = num(u, "input_tokens").unwrap_or(0);
                f.usage.cache_creation_input_tokens = num(u, "cache_creation_input_tokens").unwrap_or(0);
                f.usage.cache_read_input_tokens = num(u, "cache_read_input_tokens").unwrap_or(0);
                f.usage.output_tokens = num(u, "output_tokens").unwrap_or(0);
            }
            Some("message_delta") => {
                if let Some(o) = num(&v["usage"], "output_tokens") {
                    f.usage.output_tokens = o;
                }
            }
            _ => {}
        }
    }

    pub(super) fn on_streamed_chars(&mut self, n: usize) {
        self.status
            .in_flight
            .get_or_insert_with(InFlight::default)
            .streamed_chars += n;
    }

    /// The request was answered: its real usage arrives with the message.
    pub(super) fn request_answered(&mut self) {
        self.status.in_flight = None;
    }

    /// The request ended without an answer (interrupted, or retried after it had started):
    /// what it used so far counts, as an estimate.
    pub(super) fn request_cut(&mut self) {
        let Some(f) = self.status.in_flight.take() else {
            return;
        };
        if !f.started && f.streamed_chars == 0 {
            return;
        }
        let model = if f.model.is_empty() {
            self.status.model.clone()
        } else {
            f.model.clone()
        };
        self.status.cut.record(&model, &f.usage());
    }

    /// A resumed session's figures from its transcript: shown before its first request.
    pub fn restore_figures(&mut self, figures: crate::tui::transcript::resumed::Figures) {
        self.status.earlier = figures.totals;
        self.status.context_tokens = figures.context_tokens;
        self.dirty = true;
    }

    /// The figures shown: earlier runs of the session, the engine's, requests cut off, and the
    /// one streaming now.
    pub fn shown_totals(&self) -> Totals {
        let mut t = merged(&merged(&self.status.earlier, &self.status.totals), &self.status.cut);
        if let Some(f) = &self.status.in_flight {
            let model = if f.model.is_empty() {
                self.status.model.clone()
            } else {
                f.model.clone()
            };
            let mut now = Totals::default();
            now.record(&model, &f.usage());
            now.requests = 0;
            t = merged(&t, &now);
        }
        t
    }
}

impl App {
    pub(super) fn cost_report(&self) -> String {
        let totals = self.shown_totals();
        let t = &totals;
        let requests = match self.status.cut.requests {
            0 => t.requests.to_string(),
            n => format!(
                "{} ({n} cut off by an interruption or a retry; their tokens are estimated from what streamed)",
                t.requests
            ),
        };
        let total = if t.cost_known() {
            format!("${:.4}", t.cost_usd)
        } else {
            "unknown".to_string()
        };
        let mut s = format!(
            "- Total cost: {total}\n- API time: {}\n- Session time: {}\n- Requests: {}\n- Tokens: {} input, {} output, {} cache write, {} cache read\n",
            crate::tui::transcript::cells::format_duration(t.api_ms),
            crate::tui::transcript::cells::format_duration(self.status.started.elapsed().as_millis() as u64),
            requests,
            t.usage.input_tokens,
            t.usage.output_tokens,
            t.usage.cache_creation_input_tokens,
            t.usage.cache_read_input_tokens,
        );
        for (model, m) in &t.by_model {
            let cost = if m.unpriced {
                "cost unknown".to_string()
            } else {
                format!("${:.4}", m.cost_usd)
            };
            s.push_str(&format!(
                "- {model}: {cost} ({} in, {} out)\n",
                m.usage.input_tokens + m.usage.cache_creation_input_tokens + m.usage.cache_read_input_tokens,
                m.usage.output_tokens
            ));
        }
        let unpriced = t.unpriced_models();
        if !unpriced.is_empty() || models::info(&self.status.model).pricing.is_none() {
            let names = if unpriced.is_empty() {
                format!("`{}`", self.status.model)
            } else {
                unpriced.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
            };
            s.push_str(&format!(
                "\nkeel has no price for {names}, so the cost is unknown; give prices with \
                 \"models\": {{\"NAME\": {{\"inputPrice\": …, \"outputPrice\": …}}}} (USD per million tokens).\n"
            ));
        }
        s
    }

    /// Context use in percent of the window (last request).
    pub fn context_percent(&self) -> Option<u64> {
        if self.status.context_tokens == 0 || self.status.context_window == 0 {
            return None;
        }
        Some((self.status.context_tokens * 100 / self.status.context_window).min(100))
    }
}

#[cfg(test)]
mod tests {
    use crate::tui::app::test_support::app;
    use serde_json::json;

    #[test]
    fn streaming_and_cut_requests_count() {
        let mut a = app();
        a.on_raw_stream(
            &json!({"type": "message_start", "message": {"model": "claude-sonnet-4-5",
            "usage": {"input_tokens": 1000, "cache_read_input_tokens": 500, "output_tokens": 1}}}),
        );
        a.on_streamed_chars(400);
        let t = a.shown_totals();
        assert_eq!(
            (
                t.usage.input_tokens,
                t.usage.cache_read_input_tokens,
                t.usage.output_tokens
            ),
            (1000, 500, 100)
        );
        assert_eq!(t.requests, 0, "a request counts once it has ended");
        a.request_cut();
        let t = a.shown_totals();
        assert_eq!((t.requests, t.usage.output_tokens), (1, 100));
        assert!(t.cost_usd > 0.0);
        // A request that never started streaming used nothing.
        a.on_streamed_chars(0);
        a.status.in_flight.as_mut().unwrap().started = false;
        a.request_cut();
        assert_eq!(a.shown_totals().requests, 1);
    }
}
