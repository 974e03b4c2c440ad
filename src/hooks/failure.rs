//! When a hook fails to decide: it could not start, timed out, was killed by a signal or exited
//! with a status other than 0 and 2. Its `onFailure` says what that means: a warning and the
//! action goes on (the default), or a block.

use serde_json::Value;

use super::config::Event;
use super::runner::RunResult;

/// What a handler's failure means (its `onFailure`): a warning and the action goes on (the
/// default), or the action is blocked as the event's exit 2 would block it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OnFailure {
    #[default]
    Warn,
    Block,
}

impl OnFailure {
    /// Reads a handler's `onFailure`; absent means `"warn"`.
    pub fn parse(v: Option<&Value>) -> Result<OnFailure, String> {
        match v {
            None | Some(Value::Null) => Ok(OnFailure::Warn),
            Some(Value::String(s)) if s == "warn" => Ok(OnFailure::Warn),
            Some(Value::String(s)) if s == "block" => Ok(OnFailure::Block),
            Some(other) => Err(format!("`onFailure` must be \"warn\" or \"block\", found {other}")),
        }
    }

    /// How a listing shows it (nothing for the default).
    pub fn describe(self) -> Option<String> {
        (self == OnFailure::Block).then(|| "blocks on failure".into())
    }
}

/// Why a handler gave no decision.
pub(super) enum Failure<'a> {
    Start(&'a str),
    Timeout(&'a str),
    Signal(i32),
    Exit(Option<i32>, &'a str),
}

impl Failure<'_> {
    pub(super) fn of(r: &RunResult) -> Option<Failure<'_>> {
        if let Some(e) = &r.start_error {
            return Some(Failure::Start(e));
        }
        if r.timed_out {
            return Some(Failure::Timeout(&r.stderr));
        }
        if let Some(s) = r.signal {
            return Some(Failure::Signal(s));
        }
        let first = r.stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("(no stderr)");
        match r.exit_code {
            Some(0) => None,
            // A PermissionRequest hook's exit 2 is no decision (warned about below), not a failure.
            Some(2) => None,
            code => Some(Failure::Exit(code, first)),
        }
    }

    pub(super) fn outcome(&self) -> &'static str {
        match self {
            Failure::Start(_) => "failed_to_start",
            Failure::Timeout(_) => "timeout",
            Failure::Signal(_) | Failure::Exit(..) => "error",
        }
    }

    /// The warning when the action goes on.
    pub(super) fn warning(&self, event: Event, label: &str) -> String {
        let event = event.as_str();
        match self {
            Failure::Start(e) => format!("{event} hook `{label}` could not run: {e}"),
            Failure::Timeout(what) => format!("{event} hook `{label}` {what}"),
            Failure::Signal(s) => format!("{event} hook `{label}` was killed by signal {s}{}", signal_name(*s)),
            Failure::Exit(code, first) => format!(
                "{event} hook `{label}` failed with exit status {}: {first}",
                code.map(|c| c.to_string()).unwrap_or_else(|| "unknown".into())
            ),
        }
    }

    /// The reason when `onFailure: "block"` stops the action.
    pub(super) fn block_reason(&self, event: Event, label: &str) -> String {
        let what = match self {
            Failure::Start(e) => format!("could not start ({e})"),
            Failure::Timeout(what) => what.to_string(),
            Failure::Signal(s) => format!("was killed by signal {s}{}", signal_name(*s)),
            Failure::Exit(code, first) => format!(
                "failed with exit status {} ({first})",
                code.map(|c| c.to_string()).unwrap_or_else(|| "unknown".into())
            ),
        };
        format!(
            "the {} hook `{label}` {what}, and it is set to block when it fails (`onFailure: \"block\"`)",
            event.as_str()
        )
    }
}

fn signal_name(s: i32) -> String {
    nix::sys::signal::Signal::try_from(s).map_or_else(|_| String::new(), |sig| format!(" ({})", sig.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_failure_values() {
        use serde_json::json;
        assert_eq!(OnFailure::parse(None), Ok(OnFailure::Warn));
        assert_eq!(OnFailure::parse(Some(&json!("warn"))), Ok(OnFailure::Warn));
        assert_eq!(OnFailure::parse(Some(&json!("block"))), Ok(OnFailure::Block));
        for bad in [json!("deny"), json!(true), json!("Block")] {
            let e = OnFailure::parse(Some(&bad)).unwrap_err();
            assert!(e.contains("onFailure") && e.contains(&bad.to_string()), "{e}");
        }
    }
}
