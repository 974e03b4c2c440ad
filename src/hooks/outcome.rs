//! What hook results mean: exit 0 (JSON or plain text), exit 2 (block), failures (a warning,
//! or a block under `onFailure: "block"`: see [`super::failure`]), and the JSON fields;
//! several hooks combine deterministically.

use serde_json::Value;

use super::config::Event;
use super::failure::{Failure, OnFailure};
use super::runner::RunResult;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    Allow,
    Ask,
    Deny,
}

impl Permission {
    fn parse(s: &str) -> Option<Permission> {
        match s {
            "allow" | "approve" => Some(Permission::Allow),
            "ask" => Some(Permission::Ask),
            "deny" | "block" => Some(Permission::Deny),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Allow => "allow",
            Permission::Ask => "ask",
            Permission::Deny => "deny",
        }
    }
}

/// The combined effect of every hook that ran for one event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Aggregate {
    /// Blocking reasons (exit 2 stderr, `decision: "block"` reasons), in configuration order.
    pub blocks: Vec<String>,
    /// PreToolUse / PermissionRequest decision: deny > ask > allow.
    pub permission: Option<Permission>,
    pub permission_reasons: Vec<String>,
    /// The first hook's `updatedInput` (configuration order decides).
    pub updated_input: Option<Value>,
    /// PermissionRequest allow: the `updatedPermissions` of the hooks that allowed, in order.
    pub updated_permissions: Vec<Value>,
    /// `additionalContext` and, where the event allows it, plain stdout.
    pub context: Vec<String>,
    /// `continue: false`: stop the agent, with this reason for the user.
    pub stop: Option<String>,
    pub system_messages: Vec<String>,
    /// Non-blocking failures, shown to the user.
    pub warnings: Vec<String>,
    /// Elicitation / ElicitationResult: the last hook's `{"action", "content"}` answer.
    pub elicitation: Option<Value>,
    /// Every foreground handler's run, in configuration order: for events whose hooks answer
    /// with their output (WorktreeCreate's path) or whose success decides (WorktreeRemove).
    pub ran: Vec<Ran>,
}

/// One handler's run as the caller of an event sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ran {
    /// The handler's command (or URL, …), as hook messages name it.
    pub label: String,
    /// It exited 0 (or answered) with output keel could read.
    pub succeeded: bool,
    pub stdout: String,
    /// What went wrong, for a handler that did not succeed: its first line of output.
    pub problem: Option<String>,
}

impl Ran {
    pub(super) fn of(label: &str, r: &RunResult, outcome: &str) -> Ran {
        let first = |t: &str| t.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_string);
        let succeeded = outcome == "success";
        let problem = (!succeeded).then(|| {
            let output = r
                .start_error
                .clone()
                .or_else(|| first(&r.stderr))
                .or_else(|| first(&r.stdout))
                .unwrap_or_else(|| "(no output)".into());
            match (r.timed_out, r.signal, r.exit_code) {
                (true, ..) => format!("timed out: {output}"),
                (_, Some(s), _) => format!("killed by signal {s}: {output}"),
                (_, _, Some(c)) if r.start_error.is_none() => format!("exit status {c}: {output}"),
                _ => output,
            }
        });
        Ran {
            label: label.to_string(),
            succeeded,
            stdout: r.stdout.clone(),
            problem,
        }
    }
}

impl Aggregate {
    pub fn blocked(&self) -> bool {
        !self.blocks.is_empty()
    }

    pub fn block_reason(&self) -> String {
        self.blocks.join("\n")
    }
}

/// One handler's interpreted result, for observability.
#[derive(Debug, Clone, PartialEq)]
pub struct Interpreted {
    pub outcome: &'static str,
    pub decision: Option<String>,
}

/// Folds one handler's result into the aggregate; returns its summary.
pub fn interpret(event: Event, label: &str, r: &RunResult, on_failure: OnFailure, agg: &mut Aggregate) -> Interpreted {
    if let Some(failure) = Failure::of(r) {
        let decision = match on_failure {
            OnFailure::Warn => {
                agg.warnings.push(failure.warning(event, label));
                None
            }
            OnFailure::Block => Some(block(event, agg, failure.block_reason(event, label))),
        };
        return Interpreted {
            outcome: failure.outcome(),
            decision,
        };
    }
    for (stream, dropped) in [("stdout", r.stdout_dropped), ("stderr", r.stderr_dropped)] {
        if dropped > 0 {
            agg.warnings.push(format!(
                "{} hook `{label}` wrote more than {} MiB to {stream}; the last {dropped} bytes were dropped",
                event.as_str(),
                super::process::MAX_CAPTURE >> 20
            ));
        }
    }
    let json = match parse_json(&r.stdout) {
        Ok(j) => j,
        Err(e) => {
            // Output meant as JSON that does not parse must not pass for "no decision" silently:
            // a hook's deny would vanish without anyone noticing.
            agg.warnings.push(format!(
                "{} hook `{label}` printed invalid JSON ({e}); its output was ignored",
                event.as_str()
            ));
            if r.exit_code == Some(2) && event != Event::PermissionRequest {
                agg.blocks.push(if r.stderr.trim().is_empty() {
                    format!("blocked by the {} hook `{label}`", event.as_str())
                } else {
                    r.stderr.trim().to_string()
                });
                return Interpreted {
                    outcome: "blocked",
                    decision: Some("block".into()),
                };
            }
            return Interpreted {
                outcome: "error",
                decision: None,
            };
        }
    };
    match r.exit_code {
        Some(0) => {}
        Some(2) if event != Event::PermissionRequest => {
            let reason = if r.stderr.trim().is_empty() {
                format!("blocked by the {} hook `{label}`", event.as_str())
            } else {
                r.stderr.trim().to_string()
            };
            agg.blocks.push(reason);
            if let Some(j) = &json {
                apply_json(event, j, agg);
            }
            return Interpreted {
                outcome: "blocked",
                decision: Some("block".into()),
            };
        }
        code => {
            // Left here: a PermissionRequest hook's exit 2, which the reference ignores. The
            // action proceeds and the user is told; JSON on stdout does not decide.
            let first = r.stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("(no stderr)");
            agg.warnings.push(format!(
                "{} hook `{label}` failed with exit status {}: {first}",
                event.as_str(),
                code.map(|c| c.to_string()).unwrap_or_else(|| "unknown".into())
            ));
            return Interpreted {
                outcome: "error",
                decision: None,
            };
        }
    }
    match json {
        Some(j) => {
            let decision = apply_json(event, &j, agg);
            Interpreted {
                outcome: "success",
                decision,
            }
        }
        None => {
            let text = r.stdout.trim();
            if !text.is_empty()
                && matches!(
                    event,
                    Event::UserPromptSubmit | Event::UserPromptExpansion | Event::SessionStart
                )
            {
                agg.context.push(text.to_string());
            }
            Interpreted {
                outcome: "success",
                decision: None,
            }
        }
    }
}

/// stdout starting with `{` must be a JSON object; anything else is plain text (`Ok(None)`).
fn parse_json(stdout: &str) -> Result<Option<Value>, String> {
    let mut t = stdout.trim_start();
    // A first line `{"async": true}` (the reference's background-hook marker, which keel
    // waits out) is no output of its own: what follows it is.
    if let Some((first, rest)) = t.split_once('\n').or(Some((t, "")))
        && serde_json::from_str::<Value>(first.trim()).is_ok_and(|v| v.get("async") == Some(&Value::Bool(true)))
    {
        t = rest.trim_start();
    }
    if !t.starts_with('{') {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(t) {
        Ok(v) if v.is_object() => Ok(Some(v)),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Applies the reference's JSON output fields; returns the decision it expressed.
fn apply_json(event: Event, j: &Value, agg: &mut Aggregate) -> Option<String> {
    let mut decision = None;
    if j.get("continue") == Some(&Value::Bool(false)) {
        let reason = j
            .get("stopReason")
            .and_then(Value::as_str)
            .unwrap_or("a hook stopped the session")
            .to_string();
        agg.stop.get_or_insert(reason);
        decision = Some("stop".into());
    }
    if let Some(m) = j.get("systemMessage").and_then(Value::as_str) {
        agg.system_messages.push(m.to_string());
    }
    let reason = j.get("reason").and_then(Value::as_str).map(str::to_string);
    match (event, j.get("decision").and_then(Value::as_str)) {
        (Event::PreToolUse, Some(d)) => {
            if let Some(p) = Permission::parse(d) {
                set_permission(agg, p, reason.clone());
                decision = Some(p.as_str().into());
            }
        }
        (_, Some("block")) => {
            agg.blocks.push(
                reason
                    .clone()
                    .unwrap_or_else(|| format!("blocked by a {} hook", event.as_str())),
            );
            decision = Some("block".into());
        }
        _ => {}
    }
    let specific = j.get("hookSpecificOutput");
    if let Some(s) = specific {
        if let Some(d) = s
            .get("permissionDecision")
            .and_then(Value::as_str)
            .and_then(Permission::parse)
        {
            let r = s
                .get("permissionDecisionReason")
                .and_then(Value::as_str)
                .map(str::to_string);
            set_permission(agg, d, r);
            decision = Some(d.as_str().into());
        }
        if let Some(u) = s.get("updatedInput").filter(|u| u.is_object())
            && agg.updated_input.is_none()
        {
            agg.updated_input = Some(u.clone());
        }
        if let Some(c) = s.get("additionalContext").and_then(Value::as_str)
            && !c.trim().is_empty()
        {
            agg.context.push(c.to_string());
        }
        if matches!(event, Event::Elicitation | Event::ElicitationResult)
            && let Some(action) = s.get("action").and_then(Value::as_str)
        {
            let mut answer = serde_json::Map::new();
            answer.insert("action".into(), action.into());
            if let Some(content) = s.get("content") {
                answer.insert("content".into(), content.clone());
            }
            agg.elicitation = Some(Value::Object(answer));
            decision = Some(action.to_string());
        }
        // PermissionRequest: decision.behavior allow|deny (+ message, updatedInput).
        if event == Event::PermissionRequest
            && let Some(d) = s.get("decision")
            && let Some(p) = d.get("behavior").and_then(Value::as_str).and_then(Permission::parse)
        {
            set_permission(agg, p, d.get("message").and_then(Value::as_str).map(str::to_string));
            if let Some(u) = d.get("updatedInput").filter(|u| u.is_object())
                && agg.updated_input.is_none()
            {
                agg.updated_input = Some(u.clone());
            }
            if p == Permission::Allow
                && let Some(list) = d.get("updatedPermissions").and_then(Value::as_array)
            {
                agg.updated_permissions.extend(list.iter().cloned());
            }
            decision = Some(p.as_str().into());
        }
    }
    decision
}

/// Blocks the event's action as an exit 2 does; a PermissionRequest, whose exit 2 decides
/// nothing, is denied instead. Returns the decision recorded for the run.
fn block(event: Event, agg: &mut Aggregate, reason: String) -> String {
    if event == Event::PermissionRequest {
        set_permission(agg, Permission::Deny, Some(reason));
        Permission::Deny.as_str().into()
    } else {
        agg.blocks.push(reason);
        "block".into()
    }
}

fn set_permission(agg: &mut Aggregate, p: Permission, reason: Option<String>) {
    agg.permission = Some(agg.permission.map_or(p, |old| old.max(p)));
    if let Some(r) = reason.filter(|r| !r.trim().is_empty()) {
        agg.permission_reasons.push(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(code: i32, stdout: &str, stderr: &str) -> RunResult {
        RunResult {
            exit_code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            ..RunResult::default()
        }
    }

    #[test]
    fn exit_codes() {
        let mut a = Aggregate::default();
        interpret(
            Event::PreToolUse,
            "h",
            &run(2, "", "no rm please\n"),
            OnFailure::Warn,
            &mut a,
        );
        assert_eq!(a.block_reason(), "no rm please");
        let mut b = Aggregate::default();
        let i = interpret(
            Event::PreToolUse,
            "h",
            &run(1, "", "oops\nmore"),
            OnFailure::Warn,
            &mut b,
        );
        assert_eq!(i.outcome, "error");
        assert!(!b.blocked() && b.warnings[0].contains("oops"));
        let mut c = Aggregate::default();
        interpret(
            Event::UserPromptSubmit,
            "h",
            &run(0, "remember: tabs\n", ""),
            OnFailure::Warn,
            &mut c,
        );
        assert_eq!(c.context, vec!["remember: tabs"]);
        let mut d = Aggregate::default();
        interpret(
            Event::PreToolUse,
            "h",
            &run(0, "plain words", ""),
            OnFailure::Warn,
            &mut d,
        );
        assert!(
            d.context.is_empty(),
            "plain stdout is context only for prompt and session start"
        );
    }

    #[test]
    fn deny_beats_ask_beats_allow_whatever_the_order() {
        let allow = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}"#;
        let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"policy"}}"#;
        let ask = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}"#;
        for order in [[allow, deny, ask], [deny, ask, allow], [ask, allow, deny]] {
            let mut a = Aggregate::default();
            for o in order {
                interpret(Event::PreToolUse, "h", &run(0, o, ""), OnFailure::Warn, &mut a);
            }
            assert_eq!(a.permission, Some(Permission::Deny));
            assert_eq!(a.permission_reasons, vec!["policy"]);
        }
    }

    #[test]
    fn json_fields() {
        let mut a = Aggregate::default();
        let j = r#"{"continue": false, "stopReason": "done here", "systemMessage": "careful",
                   "hookSpecificOutput": {"updatedInput": {"command": "ls"}, "additionalContext": "ctx"}}"#;
        interpret(Event::PreToolUse, "h", &run(0, j, ""), OnFailure::Warn, &mut a);
        assert_eq!(a.stop.as_deref(), Some("done here"));
        assert_eq!(a.system_messages, vec!["careful"]);
        assert_eq!(a.updated_input, Some(serde_json::json!({"command": "ls"})));
        assert_eq!(a.context, vec!["ctx"]);
        let mut b = Aggregate::default();
        interpret(
            Event::Stop,
            "h",
            &run(0, r#"{"decision":"block","reason":"run the tests"}"#, ""),
            OnFailure::Warn,
            &mut b,
        );
        assert_eq!(b.block_reason(), "run the tests");
    }

    #[test]
    fn invalid_json_is_a_loud_error_and_other_exit_codes_do_not_decide() {
        let mut a = Aggregate::default();
        let bad = r#"{"hookSpecificOutput": {"permissionDecision": "deny",}}"#;
        assert_eq!(
            interpret(Event::PreToolUse, "h", &run(0, bad, ""), OnFailure::Warn, &mut a).outcome,
            "error"
        );
        assert!(a.permission.is_none());
        assert!(a.warnings[0].contains("invalid JSON"), "{:?}", a.warnings);
        let mut b = Aggregate::default();
        let deny = r#"{"hookSpecificOutput": {"permissionDecision": "deny"}}"#;
        assert_eq!(
            interpret(Event::PreToolUse, "h", &run(1, deny, "oops"), OnFailure::Warn, &mut b).outcome,
            "error"
        );
        assert!(b.permission.is_none() && b.warnings[0].contains("exit status 1"));
    }

    #[test]
    fn an_async_marker_first_is_not_invalid_json() {
        assert_eq!(parse_json("{\"async\": true}\n"), Ok(None));
        assert_eq!(parse_json("{\"async\": true}"), Ok(None));
        assert_eq!(parse_json("{\"async\":true,\"asyncTimeout\":30}\nstarted\n"), Ok(None));
        let later = parse_json("{\"async\": true}\n{\"systemMessage\": \"done\"}\n")
            .unwrap()
            .unwrap();
        assert_eq!(later["systemMessage"], "done");
        assert!(
            parse_json("{\"async\": true}\n{broken").is_err(),
            "what follows is still checked"
        );
    }

    #[test]
    fn failures_to_start_and_timeouts_are_loud_but_not_blocking() {
        let mut a = Aggregate::default();
        let r = RunResult {
            start_error: Some("command not found: ./hook.sh".into()),
            ..RunResult::default()
        };
        assert_eq!(
            interpret(Event::PreToolUse, "./hook.sh", &r, OnFailure::Warn, &mut a).outcome,
            "failed_to_start"
        );
        assert!(!a.blocked() && a.warnings[0].contains("could not run"));
    }

    fn failures() -> Vec<(&'static str, RunResult)> {
        vec![
            (
                "could not start (cannot start /p/guard.sh: No such file or directory",
                RunResult {
                    start_error: Some("cannot start /p/guard.sh: No such file or directory".into()),
                    ..RunResult::default()
                },
            ),
            (
                "timed out after 5s",
                RunResult {
                    timed_out: true,
                    stderr: "timed out after 5s and was killed".into(),
                    ..RunResult::default()
                },
            ),
            (
                "was killed by signal 9 (SIGKILL)",
                RunResult {
                    signal: Some(9),
                    ..RunResult::default()
                },
            ),
            (
                "failed with exit status 1 (policy file missing)",
                run(1, "", "policy file missing\n"),
            ),
            ("failed with exit status 3", run(3, "", "")),
        ]
    }

    #[test]
    fn on_failure_block_turns_every_failure_into_a_block_that_says_what_happened() {
        for (what, r) in failures() {
            let mut a = Aggregate::default();
            let i = interpret(Event::PreToolUse, "./guard.sh", &r, OnFailure::Block, &mut a);
            assert_eq!(i.decision.as_deref(), Some("block"), "{what}");
            let reason = a.block_reason();
            assert!(reason.contains(what), "{what}: {reason}");
            assert!(
                reason.contains("`./guard.sh`") && reason.contains("onFailure"),
                "{reason}"
            );
            assert!(a.warnings.is_empty(), "{:?}", a.warnings);

            let mut w = Aggregate::default();
            let i = interpret(Event::PreToolUse, "./guard.sh", &r, OnFailure::Warn, &mut w);
            assert_eq!(i.decision, None, "{what}");
            assert!(!w.blocked() && w.warnings.len() == 1, "{what}: {w:?}");
        }
    }

    #[test]
    fn on_failure_block_denies_a_permission_request_and_leaves_successes_alone() {
        let mut a = Aggregate::default();
        interpret(
            Event::PermissionRequest,
            "h",
            &run(1, "", "down"),
            OnFailure::Block,
            &mut a,
        );
        assert_eq!(a.permission, Some(Permission::Deny));
        assert!(a.permission_reasons[0].contains("exit status 1"), "{a:?}");
        // A PermissionRequest hook's exit 2 is no decision, not a failure.
        let mut b = Aggregate::default();
        interpret(
            Event::PermissionRequest,
            "h",
            &run(2, "", "no"),
            OnFailure::Block,
            &mut b,
        );
        assert_eq!(b.permission, None);
        let mut c = Aggregate::default();
        let allow = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}"#;
        interpret(Event::PreToolUse, "h", &run(0, allow, ""), OnFailure::Block, &mut c);
        assert_eq!((c.blocked(), c.permission), (false, Some(Permission::Allow)));
    }

    #[test]
    fn dropped_output_is_reported() {
        let mut a = Aggregate::default();
        let r = RunResult {
            stdout_dropped: 12,
            ..run(0, "", "")
        };
        interpret(Event::PreToolUse, "h", &r, OnFailure::Warn, &mut a);
        assert!(
            a.warnings[0].contains("stdout") && a.warnings[0].contains("12 bytes"),
            "{a:?}"
        );
    }
}
