//! The hand-off document that replaces the conversation after tier 5. Its mandatory sections,
//! in order: the user's requests verbatim, decisions, files changed, open verification items and
//! failed checks (with log and spill paths), current work, next step. keel writes the user's
//! requests, the files changed and the failed checks from its own record; the model's summary
//! supplies the rest.

use std::fmt::Write;
use std::path::Path;

use super::summary::ModelSummary;
use crate::compact::record::{FileChange, ToolOutcome};
pub use crate::types::events::Trigger;
use crate::types::message::{ContentBlock, Message, Role};

/// The first words of every hand-off (recognised when compacting again).
pub const LEAD: &str = "This session continues from an earlier part that was compacted";
/// Most failed checks listed (the newest ones).
pub const MAX_FAILURES: usize = 12;
/// Most changed files listed.
pub const MAX_FILES: usize = 40;
/// A single request longer than this is shortened in the middle.
const MAX_REQUEST_CHARS: usize = 6_000;

/// keel's own texts in user messages, which are not requests of the user.
const KEEL_TEXTS: &[&str] = &[
    "<system-reminder>",
    "[Request interrupted",
    "Your response was cut off",
    "[Collapsed from this view",
    "[Snipped ",
    "[Results snipped]",
    "[keel: compaction]",
];

/// The user's requests in the order given: texts the user typed, and those a previous
/// hand-off carried over; keel's own notes and tool results are not requests.
pub fn user_requests(history: &[Message]) -> Vec<String> {
    let mut out = Vec::new();
    for m in history.iter().filter(|m| m.role == Role::User) {
        for b in &m.content {
            let ContentBlock::Text { text, .. } = b else { continue };
            if text.starts_with(LEAD) {
                out.extend(carried_requests(text));
            } else if !KEEL_TEXTS.iter().any(|k| text.starts_with(k)) && !text.trim().is_empty() {
                out.push(text.clone());
            }
        }
    }
    out
}

fn carried_requests(handoff: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = handoff;
    while let Some(start) = rest.find("<user-request>\n") {
        let body = &rest[start + "<user-request>\n".len()..];
        let Some(end) = body.find("\n</user-request>") else {
            break;
        };
        out.push(body[..end].to_string());
        rest = &body[end..];
    }
    out
}

fn shorten(request: &str) -> String {
    let n = request.chars().count();
    if n <= MAX_REQUEST_CHARS {
        return request.to_string();
    }
    let head: String = request.chars().take(MAX_REQUEST_CHARS * 2 / 3).collect();
    let tail: String = request.chars().skip(n - MAX_REQUEST_CHARS / 3).collect();
    format!(
        "{head}\n[… {} characters left out here; the transcript has the full text …]\n{tail}",
        n - MAX_REQUEST_CHARS
    )
}

/// Everything the hand-off is made of.
pub struct Handoff<'a> {
    pub trigger: Trigger,
    pub pre_tokens: u64,
    pub transcript: &'a Path,
    pub session_dir: &'a Path,
    pub requests: &'a [String],
    /// Bytes the requests section may take; the first request and the newest ones are kept.
    pub requests_budget: usize,
    pub summary: &'a ModelSummary,
    pub failures: &'a [&'a ToolOutcome],
    pub files: &'a [FileChange],
    /// Calls of tools that may change files without naming them (shell commands).
    pub other_changes: usize,
    /// The verification ledger's section (`evidence::report::handoff_section`).
    pub verification: &'a str,
}

pub fn render(h: &Handoff<'_>) -> String {
    let mut out = format!(
        "{LEAD} to fit the context window ({} compaction; about {} tokens before). The complete record is the \
         transcript {}; full outputs of earlier tool calls are in {}.\n\
         This is a hand-off, not evidence: a check counts as passed only when you run it again after your last \
         change and see it pass.",
        h.trigger.as_str(),
        h.pre_tokens,
        h.transcript.display(),
        h.session_dir.join("tool-results").display()
    );
    out.push_str("\n\n## User requests (verbatim, in order)");
    render_requests(&mut out, h.requests, h.requests_budget);
    section(&mut out, "Decisions", h.summary.decisions.as_deref());
    out.push_str("\n\n## Files changed (recorded by keel)");
    render_files(&mut out, h.files, h.other_changes);
    out.push_str("\n\n## Open verification items and failed checks");
    if !h.verification.is_empty() {
        out.push('\n');
        out.push_str(h.verification);
    }
    render_failures(&mut out, h.failures);
    if let Some(items) = &h.summary.open_items {
        out.push_str("\n\nOpen items from the summary:\n");
        out.push_str(items);
    }
    section(&mut out, "Current work", h.summary.current_work.as_deref());
    section(&mut out, "Next step", h.summary.next_step.as_deref());
    if let Some(other) = &h.summary.other {
        out.push_str("\n\n## Other notes from the summary\n");
        out.push_str(other);
    }
    out.push_str(match h.trigger {
        Trigger::Auto => "\n\nContinue the work from where it stopped; do not ask the user to repeat anything.",
        Trigger::Manual => "\n\nThe user compacted the conversation; continue with their next message.",
    });
    out
}

fn section(out: &mut String, title: &str, body: Option<&str>) {
    let _ = write!(
        out,
        "\n\n## {title}\n{}",
        body.unwrap_or("(the summary did not state this)")
    );
}

fn render_requests(out: &mut String, requests: &[String], budget: usize) {
    if requests.is_empty() {
        out.push_str("\n(none)");
        return;
    }
    let shortened: Vec<String> = requests.iter().map(|r| shorten(r)).collect();
    // Keep the first request and as many of the newest as fit.
    let mut keep = vec![false; shortened.len()];
    keep[0] = true;
    let mut used = shortened[0].len();
    for i in (1..shortened.len()).rev() {
        if used + shortened[i].len() > budget {
            break;
        }
        used += shortened[i].len();
        keep[i] = true;
    }
    let mut skipped = 0;
    for (i, r) in shortened.iter().enumerate() {
        if !keep[i] {
            skipped += 1;
            continue;
        }
        if skipped > 0 {
            let _ = write!(
                out,
                "\n[{skipped} earlier requests left out for space; the transcript has them]"
            );
            skipped = 0;
        }
        let _ = write!(out, "\n<user-request>\n{r}\n</user-request>");
    }
}

fn render_files(out: &mut String, files: &[FileChange], other_changes: usize) {
    if files.is_empty() {
        out.push_str("\n- none by Edit or Write");
    }
    for f in files.iter().take(MAX_FILES) {
        let _ = write!(
            out,
            "\n- {} — {} change{} ({}), last at step {}",
            f.path.display(),
            f.edits,
            if f.edits == 1 { "" } else { "s" },
            f.tools.join(", "),
            f.last_step
        );
    }
    if files.len() > MAX_FILES {
        let _ = write!(out, "\n- … and {} more files", files.len() - MAX_FILES);
    }
    if other_changes > 0 {
        let _ = write!(
            out,
            "\n- {other_changes} command(s) ran that may have changed other files; check `git status` before \
             relying on this list."
        );
    }
}

fn render_failures(out: &mut String, failures: &[&ToolOutcome]) {
    if failures.is_empty() {
        out.push_str("\nFailed checks recorded by keel: none open.");
        return;
    }
    out.push_str("\nFailed checks recorded by keel (no later successful run of the same check):");
    let skip = failures.len().saturating_sub(MAX_FAILURES);
    if skip > 0 {
        let _ = write!(out, "\n- {skip} older failures are in the tool log (tool-log.jsonl)");
    }
    for f in &failures[skip..] {
        let what = if f.is_error { "failed" } else { "output shows failures" };
        let _ = write!(out, "\n- step {}: {} — {what}", f.step, f.label);
        if let Some(code) = f.exit_code {
            let _ = write!(out, ", exit code {code}");
        }
        if !f.decisive.is_empty() {
            // Lines of the tool's output: data, in the envelope the result had.
            let _ = write!(
                out,
                "\n{}",
                crate::types::untrusted::wrap(&f.tool, &f.decisive.join("\n"))
            );
        }
        if let Some(src) = &f.source {
            let _ = write!(out, "\n  log: {}", src.display());
        }
        if let Some(spill) = &f.spill {
            let _ = write!(out, "\n  full output: {}", spill.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_skip_keel_texts_and_carry_over_from_an_earlier_handoff() {
        let earlier = format!(
            "{LEAD} ...\n\n## User requests (verbatim, in order)\n<user-request>\nfirst ask\nwith two lines\n</user-request>\n<user-request>\nsecond\n</user-request>\n\n## Decisions\n…"
        );
        let history = vec![
            Message::user_text(earlier),
            Message::assistant(vec![ContentBlock::text("ok")]),
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::tool_result("t", "result".to_string().into(), false),
                    ContentBlock::text("<system-reminder>\nrules\n</system-reminder>"),
                ],
            },
            Message::assistant(vec![ContentBlock::text("ok")]),
            Message::user_text("[Request interrupted by user]"),
            Message::user_text("third: now fix it"),
        ];
        assert_eq!(
            user_requests(&history),
            vec!["first ask\nwith two lines", "second", "third: now fix it"]
        );
    }

    #[test]
    fn long_and_many_requests_stay_bounded() {
        let long = "a".repeat(10_000);
        assert!(shorten(&long).len() < 6_200);
        assert!(shorten(&long).contains("4000 characters left out"));
        let requests: Vec<String> = (0..50).map(|i| format!("request number {i}")).collect();
        let mut out = String::new();
        render_requests(&mut out, &requests, 200);
        assert!(out.contains("request number 0\n"));
        assert!(out.contains("request number 49\n"));
        assert!(!out.contains("request number 10\n"));
        assert!(out.contains("earlier requests left out"));
    }
}
