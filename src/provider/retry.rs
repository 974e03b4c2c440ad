//! Retry policy for model requests: exponential backoff with jitter, `retry-after` wins, but
//! the total time spent waiting is capped.

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base: Duration,
    pub cap: Duration,
    /// Longest total wait between attempts of one request (`maxRetryWaitSeconds`): a server
    /// asking for more is answered with an error that says so.
    pub max_total_wait: Duration,
    /// Attempts that could not reach the server at all (refused, unknown host) before giving up.
    pub max_unreachable: u32,
    /// Overload errors in a row after which the request gives up so the fallback model can take
    /// over; `None` without a fallback model.
    pub overloads_before_fallback: Option<u32>,
}

/// Default cap on the total wait of one request.
pub const DEFAULT_MAX_TOTAL_WAIT: Duration = Duration::from_secs(300);

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 10,
            base: Duration::from_millis(500),
            cap: Duration::from_secs(32),
            max_total_wait: DEFAULT_MAX_TOTAL_WAIT,
            max_unreachable: 3,
            overloads_before_fallback: None,
        }
    }
}

impl RetryPolicy {
    /// Reads `KEEL_MAX_RETRIES` (or the reference's `CLAUDE_CODE_MAX_RETRIES`) and
    /// `KEEL_MAX_RETRY_WAIT_SECS`.
    pub fn from_env() -> Result<Self, String> {
        let mut policy = RetryPolicy::default();
        for var in ["KEEL_MAX_RETRIES", "CLAUDE_CODE_MAX_RETRIES"] {
            if let Ok(raw) = std::env::var(var) {
                policy.max_retries = raw
                    .trim()
                    .parse()
                    .map_err(|_| format!("{var} must be a whole number, got `{raw}`"))?;
                break;
            }
        }
        if let Ok(raw) = std::env::var("KEEL_MAX_RETRY_WAIT_SECS") {
            policy.max_total_wait = parse_wait("KEEL_MAX_RETRY_WAIT_SECS", &raw)?;
        }
        Ok(policy)
    }

    /// Delay before retry number `attempt` (1-based). A server-provided delay is used as is.
    pub fn delay(&self, attempt: u32, server_hint: Option<Duration>) -> Duration {
        if let Some(hint) = server_hint {
            return hint.min(Duration::from_secs(600));
        }
        let exp = self
            .base
            .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)))
            .min(self.cap);
        // 0–25% jitter spreads out clients that failed together.
        let jitter = exp.mul_f64(fastrand::f64() * 0.25);
        exp + jitter
    }
}

/// Seconds (fractions allowed) of a wait cap, from a setting or the environment.
pub fn parse_wait(what: &str, raw: &str) -> Result<Duration, String> {
    raw.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s.min(86_400.0)).ok())
        .ok_or_else(|| format!("{what} must be a number of seconds, got `{raw}`"))
}

/// Whether an HTTP status is worth retrying.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 529) || (500..600).contains(&status)
}

/// Parses `retry-after-ms` or `retry-after` (seconds; HTTP dates are ignored). Values that are
/// not finite non-negative numbers are ignored; huge ones are capped (the caller caps again).
pub fn server_delay(retry_after_ms: Option<&str>, retry_after: Option<&str>) -> Option<Duration> {
    let secs = |v: f64| Duration::try_from_secs_f64(v.min(31_536_000.0)).ok();
    if let Some(ms) = retry_after_ms.and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return secs(ms / 1000.0);
    }
    retry_after
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .and_then(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let p = RetryPolicy::default();
        let d1 = p.delay(1, None);
        assert!(d1 >= Duration::from_millis(500) && d1 <= Duration::from_millis(625));
        let d3 = p.delay(3, None);
        assert!(d3 >= Duration::from_millis(2000) && d3 <= Duration::from_millis(2500));
        let d20 = p.delay(20, None);
        assert!(d20 >= Duration::from_secs(32) && d20 <= Duration::from_secs(40));
    }

    #[test]
    fn server_hint_wins() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(5, Some(Duration::from_secs(2))), Duration::from_secs(2));
        assert_eq!(server_delay(Some("150"), Some("9")), Some(Duration::from_millis(150)));
        assert_eq!(server_delay(None, Some("3")), Some(Duration::from_secs(3)));
        assert_eq!(server_delay(None, Some("Wed, 21 Oct 2015 07:28:00 GMT")), None);
        // Hostile or broken values never panic.
        assert_eq!(server_delay(None, Some("1e30")), Some(Duration::from_secs(31_536_000)));
        assert_eq!(server_delay(Some("NaN"), Some("inf")), None);
        assert_eq!(server_delay(None, Some("-3")), None);
    }

    #[test]
    fn wait_caps_parse_strictly() {
        assert_eq!(parse_wait("x", "90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_wait("x", " 0.5 "), Ok(Duration::from_millis(500)));
        assert!(parse_wait("x", "-1").is_err());
        assert!(parse_wait("x", "soon").unwrap_err().contains("`soon`"));
    }

    #[test]
    fn retryable_statuses() {
        for s in [408, 409, 429, 500, 502, 503, 529] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [400, 401, 403, 404, 413] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }
}
