//! `--task-budget`: a token budget for one run (a user turn and everything it sets off). The
//! Anthropic API takes it as `output_config.task_budget` on the models that support it (the
//! model sees the countdown and winds down); keel counts the run's tokens itself for every
//! provider and stops the run once the budget is spent.
//!
//! keel's count, after each model call: every output token of the run (its sub-agents'
//! included, once they reported back) plus how far the run grew the context since its first
//! request (tool results, the model's own turns), summed over the requests: each request's
//! growth over the one before counts, a shrink (a compaction mid-run) gives nothing back.
//! Input re-read from the prompt cache on each request is not spent again.

use crate::types::message::Usage;

/// What one run spent so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskSpend {
    /// The session's output tokens when the run began.
    output_at_start: u64,
    /// The last request's input (`None` before the first: what the run started with is not
    /// its own).
    last_input: Option<u64>,
    /// The sum of each request's growth of the input over the one before.
    grown: u64,
}

fn input_of(u: &Usage) -> u64 {
    u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens
}

impl TaskSpend {
    pub fn start(session_output: u64) -> TaskSpend {
        TaskSpend {
            output_at_start: session_output,
            ..TaskSpend::default()
        }
    }

    /// Notes one model call of the run itself.
    pub fn observe(&mut self, usage: &Usage) {
        let input = input_of(usage);
        if let Some(last) = self.last_input {
            self.grown = self.grown.saturating_add(input.saturating_sub(last));
        }
        self.last_input = Some(input);
    }

    /// Tokens spent: `session_output` is the session's output count now.
    pub fn spent(&self, session_output: u64) -> u64 {
        session_output
            .saturating_sub(self.output_at_start)
            .saturating_add(self.grown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_pays_for_its_output_and_what_it_added_to_the_context() {
        let usage = |input, output| Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        };
        let mut s = TaskSpend::start(1000);
        s.observe(&usage(5000, 200));
        assert_eq!(s.spent(1200), 200, "the prompt it started with is not the run's");
        s.observe(&usage(5900, 100));
        assert_eq!(s.spent(1300), 300 + 900);
    }

    #[test]
    fn a_shrinking_context_gives_no_spend_back() {
        let usage = |input| Usage {
            input_tokens: input,
            ..Usage::default()
        };
        let mut s = TaskSpend::start(0);
        s.observe(&usage(5000));
        s.observe(&usage(9000));
        // Compacted mid-run: the context is smaller than at the start.
        s.observe(&usage(2000));
        assert_eq!(s.spent(0), 4000, "what was spent stays spent");
        s.observe(&usage(3500));
        assert_eq!(s.spent(0), 4000 + 1500, "growth after the shrink counts again");
    }
}
