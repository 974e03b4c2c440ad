//! The summary request of tier 5 and the parsing of its answer.
//!
//! The model is asked only for what it alone knows — decisions, open items, current work, next
//! step. The user's requests, the failed checks and the changed files come from keel's record.

use crate::context::tokens;
use crate::types::message::{ContentBlock, Message, Role};

pub const DECISIONS: &str = "Decisions";
pub const OPEN_ITEMS: &str = "Open verification items";
pub const CURRENT_WORK: &str = "Current work";
pub const NEXT_STEP: &str = "Next step";

/// Marks the summary request's instruction (the scripted test server recognises it by this).
pub const INSTRUCTION_LEAD: &str = "[keel: compaction] The conversation above has to be condensed";

/// The instruction appended to the conversation for the summary request.
pub fn instruction(custom: Option<&str>) -> String {
    let mut s = format!(
        "{INSTRUCTION_LEAD} so the work can continue in a fresh context. Write a hand-off note for yourself as \
         plain text. Do not call any tools. Use exactly these four headings:\n\n\
         ## {DECISIONS}\nChoices made and why: approaches taken or rejected, constraints and facts learned.\n\n\
         ## {OPEN_ITEMS}\nChecks still to run or to run again, and anything assumed but not yet verified. A \
         check only counts as passed if it ran after the last change and was seen passing; say so when that \
         is not the case.\n\n\
         ## {CURRENT_WORK}\nWhat was being done right before this point, with file paths and names.\n\n\
         ## {NEXT_STEP}\nThe one next action, in line with the user's latest request.\n\n\
         Do not copy tool outputs or list changed files: keel adds the user's messages, the failed checks \
         with their logs and the changed files to the hand-off itself."
    );
    if let Some(c) = custom.map(str::trim).filter(|c| !c.is_empty()) {
        s.push_str("\n\nAdditional instructions from the user for this summary:\n");
        s.push_str(c);
    }
    s
}

/// The model's part of the hand-off.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelSummary {
    pub decisions: Option<String>,
    pub open_items: Option<String>,
    pub current_work: Option<String>,
    pub next_step: Option<String>,
    /// Text outside the four headings.
    pub other: Option<String>,
}

impl ModelSummary {
    pub fn is_empty(&self) -> bool {
        self.decisions.is_none()
            && self.open_items.is_none()
            && self.current_work.is_none()
            && self.next_step.is_none()
            && self.other.is_none()
    }
}

/// Splits the answer at the four headings (any heading level, optional numbering or bold);
/// an `<analysis>` scratchpad is dropped and a `<summary>` wrapper unwrapped.
pub fn parse(text: &str) -> ModelSummary {
    let text = strip_tag(text, "analysis");
    let text = match (text.find("<summary>"), text.rfind("</summary>")) {
        (Some(a), Some(b)) if a < b => text[a + "<summary>".len()..b].to_string(),
        _ => text,
    };
    let mut out = ModelSummary::default();
    let mut current: Option<usize> = None;
    let mut parts: [String; 5] = Default::default();
    for line in text.lines() {
        if let Some(k) = heading(line) {
            current = Some(k);
            continue;
        }
        let slot = current.unwrap_or(4);
        parts[slot].push_str(line);
        parts[slot].push('\n');
    }
    let take = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    out.decisions = take(&parts[0]);
    out.open_items = take(&parts[1]);
    out.current_work = take(&parts[2]);
    out.next_step = take(&parts[3]);
    out.other = take(&parts[4]);
    out
}

fn strip_tag(text: &str, tag: &str) -> String {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    match (text.find(&open), text.find(&close)) {
        (Some(a), Some(b)) if a < b => format!("{}{}", &text[..a], &text[b + close.len()..]),
        _ => text.to_string(),
    }
}

fn heading(line: &str) -> Option<usize> {
    let t = line.trim();
    let is_heading = t.starts_with('#') || (t.starts_with("**") && t.ends_with("**"));
    if !is_heading {
        return None;
    }
    let name = t
        .trim_start_matches('#')
        .trim()
        .trim_matches('*')
        .trim()
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ')')
        .trim()
        .trim_end_matches(':')
        .to_ascii_lowercase();
    [DECISIONS, OPEN_ITEMS, CURRENT_WORK, NEXT_STEP]
        .iter()
        .position(|h| name.starts_with(&h.to_ascii_lowercase()))
}

/// The messages of the summary request: the view with the instruction added to its end; when
/// the whole view does not fit `budget` tokens, the oldest exchanges after the first message
/// are left out (and a note says so). Returns the messages and how many exchanges were left
/// out, or an error when even the shortest form does not fit.
pub fn request_messages(
    view: &[Message],
    instruction: &str,
    fixed: u64,
    budget: u64,
) -> Result<(Vec<Message>, usize), String> {
    let mut messages: Vec<Message> = view.to_vec();
    let mut omitted = 0;
    let extra = tokens::text(instruction) + 64;
    // Remove (assistant, user) pairs right after the first message; keep the last exchange.
    while fixed + tokens::messages(&messages) + extra > budget {
        if messages.len() < 5 || messages[1].role != Role::Assistant {
            return Err(format!(
                "the conversation does not fit a summary request even without its older part (about {} tokens, \
                 {budget} allowed)",
                fixed + tokens::messages(&messages) + extra
            ));
        }
        messages.drain(1..3);
        omitted += 1;
    }
    if omitted > 0
        && let Some(first) = messages.first_mut()
    {
        first.content.push(ContentBlock::text(format!(
            "[{omitted} earlier exchanges are left out of this summary request to fit the context window; the \
             transcript keeps them.]"
        )));
    }
    match messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.push(ContentBlock::text(instruction)),
        _ => messages.push(Message::user_text(instruction)),
    }
    Ok((messages, omitted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sections_in_any_heading_style() {
        let text = "<analysis>scratch</analysis>\n<summary>\nIntro line.\n## 1. Decisions\nUse the slow path.\n\
                    ### Open verification items:\n- cargo test not re-run\n**Current work**\nEditing src/a.rs\n\
                    # Next step\nRun cargo test\n</summary>";
        let s = parse(text);
        assert_eq!(s.decisions.as_deref(), Some("Use the slow path."));
        assert_eq!(s.open_items.as_deref(), Some("- cargo test not re-run"));
        assert_eq!(s.current_work.as_deref(), Some("Editing src/a.rs"));
        assert_eq!(s.next_step.as_deref(), Some("Run cargo test"));
        assert_eq!(s.other.as_deref(), Some("Intro line."));
        let plain = parse("Just prose without headings.");
        assert_eq!(plain.other.as_deref(), Some("Just prose without headings."));
        assert!(plain.decisions.is_none());
        assert!(parse("  \n").is_empty());
    }

    #[test]
    fn instruction_carries_custom_text() {
        let i = instruction(Some("focus on the parser"));
        assert!(i.starts_with(INSTRUCTION_LEAD));
        assert!(i.ends_with("focus on the parser"));
        assert!(!instruction(Some("  ")).contains("Additional"));
    }

    #[test]
    fn request_drops_oldest_exchanges_to_fit() {
        let mut view = vec![Message::user_text("task")];
        for i in 0..6 {
            view.push(Message::assistant(vec![ContentBlock::text(format!(
                "step {i} {}",
                "x".repeat(400)
            ))]));
            view.push(Message::user_text(format!("result {i} {}", "y".repeat(400))));
        }
        let (all, omitted) = request_messages(&view, "SUMMARISE", 0, 100_000).unwrap();
        assert_eq!((all.len(), omitted), (13, 0));
        assert!(matches!(&all[12].content[1], ContentBlock::Text { text, .. } if text == "SUMMARISE"));
        let (some, omitted) = request_messages(&view, "SUMMARISE", 0, 800).unwrap();
        assert!(omitted > 0);
        assert_eq!(some.len(), 13 - 2 * omitted);
        assert_eq!(some[0].text().split('[').next(), Some("task"));
        assert!(some[0].text().contains(&format!("{omitted} earlier exchanges")));
        assert!(some.last().unwrap().text().contains("result 5"));
        assert!(request_messages(&view, "SUMMARISE", 0, 50).is_err());
        // After a final answer the instruction is a new user message.
        let answered = vec![
            Message::user_text("q"),
            Message::assistant(vec![ContentBlock::text("a")]),
        ];
        let (m, _) = request_messages(&answered, "SUMMARISE", 0, 10_000).unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[2].role, Role::User);
    }
}
