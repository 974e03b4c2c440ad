//! One shell command line as keel reads it, once per call: the strict judgement (what the
//! permission layer may approve) and the tolerant split (what the ledger and shell undo need
//! to see inside `$(…)`, subshells and loops). The pipeline makes it once and hands the same
//! value to the permission check, the evidence ledger and shell undo.

use std::sync::Arc;

use super::parse::{self, SimpleCommand};
use super::split::{self, Segment};

#[derive(Debug)]
pub struct CommandPlan {
    /// The command line as given.
    pub line: String,
    /// Its simple commands as the permission layer judges them, or why it cannot.
    pub strict: Result<Vec<SimpleCommand>, String>,
    /// Its simple commands split through every construct, with what joins them.
    pub segments: Vec<Segment>,
}

impl CommandPlan {
    pub fn new(line: &str) -> Arc<CommandPlan> {
        Arc::new(CommandPlan {
            line: line.to_string(),
            strict: parse::parse(line),
            segments: split::split(line),
        })
    }

    /// Whether every part only reads (so shell undo need keep no copies before it).
    pub fn only_reads(&self) -> bool {
        self.strict.as_ref().is_ok_and(|parts| {
            !parts.is_empty()
                && parts.iter().all(|p| {
                    super::commands::analyze(p, true).observes && p.writes.iter().all(|w| w.text == "/dev/null")
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::split::Connector;

    /// The strict judgement and the tolerant split read the same tokens: where the strict one
    /// accepts a line they see the same commands and words.
    #[test]
    fn both_readings_agree_where_the_strict_one_accepts() {
        for line in [
            "pytest -q && echo ok",
            "cargo test 2>&1 | tail -n 5; echo done",
            "FOO='a b' make test > out.log",
            "grep -c \"x y\" a.txt || true",
        ] {
            let plan = CommandPlan::new(line);
            let strict = plan.strict.as_ref().expect(line);
            let strict_words: Vec<Vec<String>> = strict
                .iter()
                .map(|p| p.env.iter().chain(&p.words).map(|w| w.text.clone()).collect())
                .collect();
            let split_words: Vec<Vec<String>> = plan.segments.iter().map(|s| s.words.clone()).collect();
            assert_eq!(strict_words, split_words, "{line}");
        }
    }

    #[test]
    fn the_tolerant_reading_sees_through_what_the_strict_one_refuses() {
        let plan = CommandPlan::new("echo $(pytest -q) | tail -1; (cd sub && make test)");
        assert_eq!(plan.strict.as_ref().unwrap_err(), "command substitution");
        let segments: Vec<(String, Connector)> = plan.segments.iter().map(|s| (s.words.join(" "), s.next)).collect();
        assert_eq!(
            segments,
            vec![
                ("echo $(pytest -q)".to_string(), Connector::Pipe),
                ("tail -1".to_string(), Connector::Seq),
                ("cd sub".to_string(), Connector::And),
                ("make test".to_string(), Connector::Seq),
            ]
        );
        assert!(
            !plan.only_reads(),
            "a line the strict reader refuses is never read-only"
        );
    }

    proptest::proptest! {
        /// A hostile model's command line of any shape is read without a panic or a hang:
        /// the strict reading judges or refuses it, the tolerant one always splits it.
        #[test]
        fn any_line_is_read(line in "[a-z $()`'\"\\|&;<>{}#=*\n-]{0,40}") {
            let plan = CommandPlan::new(&line);
            let _ = plan.only_reads();
            proptest::prop_assert!(plan.segments.iter().all(|s| !s.words.is_empty()));
        }
    }
}
