//! `--task-budget`: a token budget for one run (a user turn and everything it sets off). The
//! Anthropic API takes it as `output_config.task_budget` on the models that support it (the
//! model sees the countdown and winds down); keel counts the run's tokens itself for every
//! provider and stops the run once the budget is spent.
//!
//! keel's count, after each model call: every output token of the run (its sub-agents'
//! included, once they reported back) plus how far the run grew the context since its first
//! request (tool results, the model's own turns). Input re-read from the prompt cache on each
//! request is not spent again.

use crate::types::message::Usage;

/// What one run spent so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskSpend {
    /// The session's output tokens when the run began.
    output_at_start: u64,
    /// The first request's input (everything the run started with).
    first_input: Option<u64>,
    last_input: u64,
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
        self.first_input.get_or_insert(input);
        self.last_input = input;
    }

    /// Tokens spent: `session_output` is the session's output count now.
    pub fn spent(&self, session_output: u64) -> u64 {
        let grown = self
            .last_input
            .saturating_sub(self.first_input.unwrap_or(self.last_input));
        session_output.saturating_sub(self.output_at_start) + grown
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
}
