//! The circuit breaker of autocompaction: repeated failures, or compactions that come right
//! after one another because the context does not shrink enough (thrashing), stop automatic
//! compaction for the session — and keel says so instead of looping on summary requests.

/// Consecutive failed or thrashing autocompactions that open the breaker.
pub const MAX_FAILURES: u32 = 3;
/// A compaction needed again within fewer model requests than this counts as thrashing.
pub const MIN_REQUESTS_BETWEEN: u32 = 2;

#[derive(Debug, Clone, Default)]
pub struct Breaker {
    failures: u32,
    last_at: Option<u32>,
    thrashing: bool,
    open: Option<String>,
}

impl Breaker {
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// Why automatic compaction stopped.
    pub fn open_reason(&self) -> Option<&str> {
        self.open.as_deref()
    }

    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// An automatic compaction starts at session request number `request`.
    pub fn begin(&mut self, request: u32) {
        self.thrashing = self
            .last_at
            .is_some_and(|r| request.saturating_sub(r) < MIN_REQUESTS_BETWEEN);
    }

    /// The automatic compaction begun at `request` ended. Returns the message to show when this
    /// opened the breaker.
    pub fn finish(&mut self, request: u32, result: Result<(), String>) -> Option<String> {
        self.last_at = Some(request);
        let why = match result {
            Ok(()) if !self.thrashing => {
                self.failures = 0;
                return None;
            }
            Ok(()) => "the context filled up again right after the previous compaction".to_string(),
            Err(e) => e,
        };
        self.failures += 1;
        if self.failures < MAX_FAILURES {
            return None;
        }
        let message = format!(
            "automatic compaction is off for the rest of this session after {} failed or thrashing attempts \
             (last: {why}). Use /compact with instructions, or start a new session.",
            self.failures
        );
        self.open = Some(message.clone());
        Some(message)
    }

    /// A manual compaction succeeded: the user stepped in, automatic compaction may try again.
    pub fn reset(&mut self) {
        *self = Breaker::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_three_failures_and_says_why() {
        let mut b = Breaker::default();
        for r in [10, 20] {
            b.begin(r);
            assert_eq!(b.finish(r, Err("summary empty".into())), None);
        }
        b.begin(30);
        let msg = b.finish(30, Err("summary empty".into())).unwrap();
        assert!(b.is_open());
        assert!(
            msg.contains("3 failed or thrashing attempts") && msg.contains("summary empty"),
            "{msg}"
        );
        b.reset();
        assert!(!b.is_open());
    }

    #[test]
    fn success_resets_but_thrashing_counts_as_failure() {
        let mut b = Breaker::default();
        b.begin(5);
        b.finish(5, Err("x".into()));
        b.begin(9);
        assert_eq!(b.finish(9, Ok(())), None);
        assert_eq!(b.failures(), 0);
        // Each compaction needed again one request after the last one: thrashing.
        for r in [10, 11] {
            b.begin(r);
            assert_eq!(b.finish(r, Ok(())), None);
        }
        b.begin(12);
        let msg = b.finish(12, Ok(())).unwrap();
        assert!(msg.contains("filled up again"), "{msg}");
    }
}
