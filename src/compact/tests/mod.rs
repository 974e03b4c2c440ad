//! Tests of the view tiers, each alone, with snapshots of the model-visible layout before and
//! after each tier; `together` runs them as the compactor does.

mod together;

use serde_json::{Value, json};
use std::path::Path;

use super::calls::CallIndex;
use super::view::{OriginKind, View};
use super::{TierContext, budget, collapse, layout, microcompact, snip};
use crate::context::tokens;
use crate::types::message::{ContentBlock, Message, Role, ToolResultContent};

/// A scripted history: a prompt, then exchanges of calls and their results.
struct History {
    messages: Vec<Message>,
    next: usize,
}

struct Call<'a> {
    name: &'a str,
    input: Value,
    result: String,
    error: bool,
}

fn call(name: &str, input: Value, result: impl Into<String>) -> Call<'_> {
    Call {
        name,
        input,
        result: result.into(),
        error: false,
    }
}

fn failed(name: &str, input: Value, result: impl Into<String>) -> Call<'_> {
    Call {
        name,
        input,
        result: result.into(),
        error: true,
    }
}

impl History {
    fn new(prompt: &str) -> Self {
        History {
            messages: vec![Message::user_text(prompt)],
            next: 1,
        }
    }

    fn exchange(&mut self, text: &str, calls: Vec<Call<'_>>) -> &mut Self {
        let mut uses = Vec::new();
        if !text.is_empty() {
            uses.push(ContentBlock::text(text));
        }
        let mut results = Vec::new();
        for c in calls {
            let id = format!("t{}", self.next);
            self.next += 1;
            uses.push(ContentBlock::ToolUse {
                id: id.clone(),
                name: c.name.to_string(),
                input: c.input,
            });
            let content = if c.error {
                format!("<tool_use_error>{}</tool_use_error>", c.result)
            } else {
                c.result
            };
            results.push(ContentBlock::tool_result(id, ToolResultContent::Text(content), c.error));
        }
        self.messages.push(Message::assistant(uses));
        self.messages.push(Message {
            role: Role::User,
            content: results,
        });
        self
    }
}

/// Numbered lines as Read shows them.
fn numbered(lines: std::ops::RangeInclusive<usize>, prefix: &str) -> String {
    lines.map(|i| format!("{i:>6}\t{prefix} line {i}\n")).collect()
}

fn big(tag: &str, n: usize) -> String {
    (0..n).map(|i| format!("{tag} output line {i}\n")).collect()
}

fn render(messages: &[Message], dir: &Path) -> String {
    layout::messages(messages, &[(&dir.display().to_string(), "<session>")])
}

fn ctx<'a>(store: &'a [Message], index: &'a CallIndex, upto: usize, dir: &'a Path) -> TierContext<'a> {
    TierContext {
        store,
        index,
        from: 0,
        upto,
        session_dir: dir,
        memo: Box::leak(Box::default()),
        kinds: Box::leak(Box::default()),
    }
}

/// Every tool_use in the view has exactly one result in the next message, and back.
fn assert_pairs_valid(messages: &[Message]) {
    for (i, m) in messages.iter().enumerate() {
        let uses: Vec<&str> = m.tool_uses().map(|u| u.id).collect();
        if uses.is_empty() {
            continue;
        }
        let next = &messages[i + 1];
        let results: Vec<&str> = next
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(uses, results, "message {i}");
    }
    for w in messages.windows(2) {
        assert_ne!(w[0].role, w[1].role, "roles must alternate");
        assert!(w.iter().all(|m| !m.content.is_empty()), "no empty messages");
    }
}

#[test]
fn tier1_budget_keeps_head_tail_size_and_path() {
    let dir = tempfile::tempdir().unwrap();
    let log: String = (0..3_000)
        .map(|i| format!("test case_{i:04} ... ok\n"))
        .collect::<String>()
        + "test parse::dates ... FAILED\ntest result: FAILED. 3000 passed; 1 failed\n";
    let mut h = History::new("Run the tests.");
    h.exchange("", vec![call("Bash", json!({"command": "cargo test"}), log.clone())]);
    insta::assert_snapshot!("tier1_before", render(&h.messages, dir.path()));
    let out = budget::apply(
        crate::types::tool::ToolOutput::text(log.clone()),
        20_000,
        dir.path(),
        "t1",
    );
    let mut after = h.messages.clone();
    after[2].content[0] = ContentBlock::tool_result("t1", out.content.clone(), false);
    insta::assert_snapshot!("tier1_after", render(&after, dir.path()));
    let shown = out.content.as_text();
    assert!(shown.len() < 7_000, "{}", shown.len());
    assert!(
        shown.contains("test result: FAILED. 3000 passed; 1 failed"),
        "the tail stays"
    );
    assert!(shown.contains("test case_0000 ... ok"), "the head stays");
    assert_eq!(
        std::fs::read_to_string(budget::spill_path(dir.path(), "t1")).unwrap(),
        log
    );
}

/// Each snip as (call, superseding call, reason).
fn snipped(snips: &[snip::Snip]) -> Vec<(&str, &str, snip::Reason)> {
    snips.iter().map(|s| (s.id.as_str(), s.by.as_str(), s.reason)).collect()
}

fn snip_history() -> History {
    let mut h = History::new("Fix the date parser and make the tests pass.");
    h.exchange(
        "Start of the file.",
        vec![call(
            "Read",
            json!({"file_path": "/r/src/parse.rs", "offset": 1, "limit": 2}),
            format!(
                "{}\n[Partial view: lines 1-2 of 5. Continue with offset 3. Edit works on this view; Write needs a complete read.]\n",
                numbered(1..=2, "parse")
            ),
        )],
    )
    .exchange(
        "",
        vec![call("Grep", json!({"pattern": "fn parse"}), "/r/src/parse.rs:3:fn parse() {}")],
    )
    .exchange(
        "",
        vec![call("Read", json!({"file_path": "/r/src/parse.rs"}), numbered(1..=5, "parse"))],
    )
    .exchange(
        "",
        vec![failed(
            "Bash",
            json!({"command": "cargo test"}),
            "test parse::dates ... FAILED\ntest result: FAILED. 3 passed; 1 failed\nExit code 101",
        )],
    )
    .exchange(
        "",
        vec![failed(
            "Edit",
            json!({"file_path": 7}),
            "Edit was not run: its input does not match the tool's schema.",
        )],
    )
    .exchange(
        "",
        vec![call(
            "Edit",
            json!({"file_path": "/r/src/parse.rs", "old_string": "a", "new_string": "b"}),
            "The file /r/src/parse.rs has been updated.",
        )],
    )
    .exchange(
        "",
        vec![call(
            "Bash",
            json!({"command": "cargo test"}),
            "test result: ok. 4 passed; 0 failed",
        )],
    )
    .exchange(
        "",
        vec![call("Grep", json!({"pattern": "fn parse"}), "/r/src/parse.rs:3:fn parse() {}")],
    )
    .exchange(
        "",
        vec![failed("Read", json!({"file_path": "/r/missing.rs"}), "/r/missing.rs does not exist.")],
    );
    h
}

#[test]
fn tier2_snip_drops_superseded_exchanges_with_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let h = snip_history();
    let store = &h.messages;
    let index = CallIndex::build(store);
    let upto = store.len() - 2;
    let c = ctx(store, &index, upto, dir.path());
    let snips = snip::superseded(&c);
    let got = snipped(&snips);
    assert_eq!(
        got,
        vec![
            ("t1", "t3", snip::Reason::CoveredByFullRead),
            ("t2", "t8", snip::Reason::Repeated),
            ("t4", "t7", snip::Reason::FixedLater),
            ("t5", "t6", snip::Reason::RetriedAfterInvalidCall),
        ]
    );
    let mut view = View::identity(&store[..upto], 0);
    insta::assert_snapshot!("tier2_before", render(&view.messages, dir.path()));
    snip::apply(&mut view, &c, &snips);
    insta::assert_snapshot!("tier2_after", render(&view.messages, dir.path()));
    view.check(0, upto).unwrap();
    assert_pairs_valid(&view.messages);
    assert!(tokens::messages(&view.messages) < tokens::messages(&store[..upto]));
    // The failing run was fixed later, so its trace says so; the missing-file read after the
    // frontier is not touched.
    assert!(
        render(&view.messages, dir.path())
            .contains("[Snipped Bash(cargo test): failed, then succeeded when run again]")
    );
}

#[test]
fn tier2_names_the_first_later_call_that_supersedes_whatever_lies_between() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = History::new("go");
    h.exchange("", vec![call("Read", json!({"file_path": "/r/a.rs"}), "A")])
        .exchange("", vec![call("Grep", json!({"pattern": "x"}), "/r/a.rs:1:x")])
        .exchange("", vec![call("Read", json!({"file_path": "/r/b.rs"}), "B")])
        .exchange("", vec![call("Read", json!({"file_path": "/r/a.rs"}), "A")])
        .exchange("", vec![call("Read", json!({"file_path": "/r/a.rs"}), "A")])
        .exchange(
            "",
            vec![failed("Edit", json!({"file_path": 7}), "Edit was not run: bad input.")],
        )
        .exchange("", vec![call("Read", json!({"file_path": "/r/b.rs"}), "changed")])
        .exchange(
            "",
            vec![call(
                "Edit",
                json!({"file_path": "/r/c.rs", "old_string": "a", "new_string": "b"}),
                "updated",
            )],
        )
        .exchange("", vec![call("Glob", json!({"pattern": "*"}), "a")]);
    let store = &h.messages;
    let index = CallIndex::build(store);
    let snips = snip::superseded(&ctx(store, &index, store.len() - 2, dir.path()));
    let got = snipped(&snips);
    // t1 is repeated by t4 (not t5, the later repeat); t3's file changed (t7 reads other text);
    // an invalid call is closed by the next successful call of its tool, whatever its target.
    assert_eq!(
        got,
        vec![
            ("t1", "t4", snip::Reason::Repeated),
            ("t4", "t5", snip::Reason::Repeated),
            ("t6", "t8", snip::Reason::RetriedAfterInvalidCall),
        ]
    );
}

#[test]
fn tier2_finds_a_repeat_whose_input_names_no_target_in_another_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = History::new("go");
    h.exchange("", vec![call("Lookup", json!({"a": 1, "b": [2]}), "same")])
        .exchange("", vec![call("Lookup", json!({"b": [2], "a": 1}), "same")])
        .exchange("", vec![call("Glob", json!({"pattern": "*"}), "a")]);
    let store = &h.messages;
    let index = CallIndex::build(store);
    let snips = snip::superseded(&ctx(store, &index, store.len() - 2, dir.path()));
    let got = snipped(&snips);
    assert_eq!(got, vec![("t1", "t2", snip::Reason::Repeated)]);
}

#[test]
fn tier2_keeps_a_failure_that_was_never_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = History::new("go");
    h.exchange(
        "",
        vec![failed(
            "Bash",
            json!({"command": "cargo test"}),
            "test result: FAILED. 1 failed",
        )],
    )
    .exchange("", vec![call("Bash", json!({"command": "cargo test -- other"}), "ok")])
    .exchange(
        "",
        vec![call(
            "Bash",
            json!({"command": "cargo test"}),
            "test result: FAILED. 1 failed",
        )],
    )
    .exchange("", vec![call("Glob", json!({"pattern": "*"}), "a")]);
    let store = &h.messages;
    let index = CallIndex::build(store);
    let snips = snip::superseded(&ctx(store, &index, store.len() - 2, dir.path()));
    // A different command, or a later run that still fails, does not close the failure.
    assert!(snips.is_empty(), "{snips:?}");
}

fn microcompact_history() -> History {
    let mut h = History::new("Find why the build is slow.");
    h.exchange("", vec![call("Grep", json!({"pattern": "build"}), big("grep", 60))])
        .exchange(
            "",
            vec![call("Glob", json!({"pattern": "**/*.rs"}), "/r/a.rs\n/r/b.rs")],
        )
        .exchange(
            "",
            vec![failed(
                "Bash",
                json!({"command": "cargo build"}),
                format!(
                    "{}error[E0425]: cannot find value `x`\nerror: could not compile `app`\nExit code 101",
                    big("compile", 40)
                ),
            )],
        )
        .exchange(
            "",
            vec![call("Read", json!({"file_path": "/r/a.rs"}), numbered(1..=80, "a"))],
        )
        .exchange(
            "",
            vec![call("Read", json!({"file_path": "/r/b.rs"}), numbered(1..=80, "b"))],
        );
    h
}

#[test]
fn tier3_microcompact_replaces_old_results_with_pointers() {
    let dir = tempfile::tempdir().unwrap();
    let h = microcompact_history();
    let store = &h.messages;
    let index = CallIndex::build(store);
    // The frontier leaves the newest exchange (Read b.rs) verbatim.
    let upto = store.len() - 2;
    let c = ctx(store, &index, upto, dir.path());
    let mut view = View::identity(&store[..upto], 0);
    insta::assert_snapshot!("tier3_before", render(&view.messages, dir.path()));
    let replaced = microcompact::apply(&mut view, &c);
    insta::assert_snapshot!("tier3_after", render(&view.messages, dir.path()));
    // Grep, Bash and Read a.rs were large; Glob was small and stays.
    assert_eq!(replaced, 3);
    view.check(0, upto).unwrap();
    assert_pairs_valid(&view.messages);
    for (id, m) in [("t1", 2), ("t3", 6), ("t4", 8)] {
        let spilled = std::fs::read_to_string(budget::spill_path(dir.path(), id)).unwrap();
        assert_eq!(spilled, store[m].content_text_of(id), "full output of {id} on disk");
    }
    let rendered = render(&view.messages, dir.path());
    assert!(
        rendered.contains("error[E0425]: cannot find value `x`"),
        "failed results keep decisive lines"
    );
    // They are the tool's output: inside the envelope, not in keel's own words.
    let shown = view.messages[6].content_text_of("t3");
    let decisive = shown.split("Decisive lines:\n").nth(1).unwrap_or_default();
    assert!(
        decisive.starts_with("<untrusted-content source=\"Bash\">\n")
            && decisive.contains("error[E0425]: cannot find value `x`\n")
            && decisive.contains("Exit code 101\n</untrusted-content>]"),
        "decisive lines in their envelope: {decisive}"
    );
    assert!(tokens::messages(&view.messages) * 3 < tokens::messages(&store[..upto]));
}

#[test]
fn tier3_never_touches_unanswered_or_recent_results() {
    let dir = tempfile::tempdir().unwrap();
    let h = microcompact_history();
    let store = &h.messages;
    let index = CallIndex::build(store);
    // Even asked to cover everything, the results after the last assistant message stay.
    let c = ctx(store, &index, store.len(), dir.path());
    let mut view = View::identity(store, 0);
    microcompact::apply(&mut view, &c);
    assert_eq!(view.messages.last(), store.last());
    // With no frontier nothing changes at all.
    let c = ctx(store, &index, 0, dir.path());
    let mut view = View::identity(store, 0);
    assert_eq!(microcompact::apply(&mut view, &c), 0);
    assert_eq!(view.messages, *store);
}

fn collapse_history() -> History {
    let mut h = History::new("Add a --verbose flag.");
    h.exchange(
        "Looking around.",
        vec![call(
            "Glob",
            json!({"pattern": "src/**/*.rs"}),
            "/r/src/main.rs\n/r/src/cli.rs",
        )],
    )
    .exchange(
        "",
        vec![call(
            "Grep",
            json!({"pattern": "struct Args"}),
            "/r/src/cli.rs:4:pub struct Args {",
        )],
    )
    .exchange(
        "",
        vec![call(
            "Read",
            json!({"file_path": "/r/src/cli.rs"}),
            numbered(1..=30, "cli"),
        )],
    )
    .exchange(
        "Adding the flag.",
        vec![call(
            "Edit",
            json!({"file_path": "/r/src/cli.rs", "old_string": "{", "new_string": "{ verbose: bool,"}),
            "The file /r/src/cli.rs has been updated.",
        )],
    )
    .exchange(
        "",
        vec![call(
            "Grep",
            json!({"pattern": "Args"}),
            "/r/src/main.rs:9:let a = Args::parse();",
        )],
    )
    .exchange(
        "",
        vec![call(
            "Read",
            json!({"file_path": "/r/src/main.rs"}),
            numbered(1..=20, "main"),
        )],
    )
    .exchange(
        "",
        vec![failed(
            "Read",
            json!({"file_path": "/r/src/log.rs"}),
            "/r/src/log.rs does not exist.",
        )],
    )
    .exchange("", vec![call("Glob", json!({"pattern": "src/log*"}), "No files found")])
    .exchange(
        "",
        vec![call(
            "Read",
            json!({"file_path": "/r/src/lib.rs"}),
            numbered(1..=5, "lib"),
        )],
    );
    h
}

#[test]
fn tier4_collapse_folds_exploration_runs_with_an_explicit_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let h = collapse_history();
    let store = &h.messages;
    let index = CallIndex::build(store);
    let upto = store.len() - 2;
    let c = ctx(store, &index, upto, dir.path());
    let mut view = View::identity(&store[..upto], 0);
    insta::assert_snapshot!("tier4_before", render(&view.messages, dir.path()));
    let folded = collapse::apply(&mut view, &c);
    insta::assert_snapshot!("tier4_after", render(&view.messages, dir.path()));
    // Exchanges 1-3 fold into the prompt, 5-6 into the Edit's result; the failed read (7) is
    // kept, the lone Glob (8) after it is too short a run.
    assert_eq!(folded, 5);
    view.check(0, upto).unwrap();
    assert_pairs_valid(&view.messages);
    assert_eq!(view.store_range(0), Some(0..7));
    assert_eq!(view.origins[0].kind, OriginKind::Folded);
    assert_eq!(view.store_range(1), Some(7..8));
    assert_eq!(view.store_range(2), Some(8..13));
    assert_eq!(view.origins[2].kind, OriginKind::Folded);
    for s in 0..7 {
        assert_eq!(view.view_index(s), Some(0), "store message {s}");
    }
    assert_eq!(view.view_index(13), Some(3));
    // The folded results are on disk (or quoted, when tiny), so the trace loses nothing.
    let read = std::fs::read_to_string(budget::spill_path(dir.path(), "t3")).unwrap();
    assert_eq!(read, numbered(1..=30, "cli"));
    assert!(
        view.messages[0]
            .text()
            .contains("Grep(struct Args) → \"/r/src/cli.rs:4:pub struct Args {\"")
    );
}

trait ResultText {
    fn content_text_of(&self, id: &str) -> String;
}

impl ResultText for Message {
    fn content_text_of(&self, id: &str) -> String {
        self.content
            .iter()
            .find_map(|b| match b {
                ContentBlock::ToolResult {
                    tool_use_id, content, ..
                } if tool_use_id == id => Some(content.as_text()),
                _ => None,
            })
            .unwrap_or_default()
    }
}
