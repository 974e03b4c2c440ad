//! Rendered screens for every cell type, the status line, the approval modal and diffs.

use std::time::{Duration, Instant};

use insta::assert_snapshot;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::screen;
use crate::engine::{EngineEvent, NoticeLevel, ResultSubtype, TurnOutcome};
use crate::permissions::{Mode, PermissionPrompt, PermissionReply};
use crate::tools::{Todo, TodoStatus};
use crate::tui::app::App;
use crate::tui::app::test_support::app;
use crate::types::message::{ContentBlock, Message, ToolResultContent, Usage};
use crate::types::permission::{Body, Preview};

const W: u16 = 72;

fn events(app: &mut App, evs: Vec<EngineEvent>) {
    for e in evs {
        app.on_engine_event(e);
    }
}

fn assistant(blocks: Vec<ContentBlock>, input: u64, output: u64) -> EngineEvent {
    EngineEvent::Assistant {
        id: "msg_1".into(),
        model: "claude-sonnet-4-5".into(),
        message: Message::assistant(blocks),
        stop_reason: "end_turn".into(),
        usage: Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        },
    }
}

fn finished(interrupted: bool, error: Option<&str>) -> EngineEvent {
    EngineEvent::TurnFinished(TurnOutcome {
        subtype: if error.is_some() || interrupted {
            ResultSubtype::ErrorDuringExecution
        } else {
            ResultSubtype::Success
        },
        is_error: error.is_some() || interrupted,
        result: error.unwrap_or("").to_string(),
        errors: Vec::new(),
        stop_reason: None,
        num_turns: 1,
        duration_ms: 10,
        duration_api_ms: 8,
        interrupted,
        api_error_status: None,
        ..Default::default()
    })
}

fn tool_started(id: &str, name: &str, input: Value) -> EngineEvent {
    EngineEvent::ToolStarted {
        id: id.into(),
        name: name.into(),
        input,
    }
}

fn tool_finished(id: &str, name: &str, text: &str, is_error: bool, structured: Value, ms: u64) -> EngineEvent {
    EngineEvent::ToolFinished {
        id: id.into(),
        name: name.into(),
        content: ToolResultContent::Text(text.into()),
        is_error,
        structured,
        duration_ms: ms,
    }
}

const MARKDOWN: &str = "## Plan\n\nThe bug is in `order_total`: it **adds** the discount.\n\n1. Fix the sign\n2. Run the tests\n   - `pytest -q`\n\n```python\ndef order_total(lines, discount=0.0):\n    return round(subtotal * (1 - discount), 2)\n```\n\n> Checked against the test.\n\n| file | change |\n|---|---|\n| pricing.py | sign |\n";

#[test]
fn user_prompt_and_streamed_markdown() {
    let mut a = app();
    a.submit_text("why is the total wrong?");
    let now = a.busy.as_ref().unwrap().since + Duration::from_millis(2300);
    events(&mut a, vec![EngineEvent::RequestStarted { request: 1 }]);
    // Half the answer has streamed, ending inside the code block.
    let cut = MARKDOWN.find("    return").unwrap();
    for piece in MARKDOWN[..cut].split_inclusive(' ') {
        a.on_engine_event(EngineEvent::TextDelta(piece.into()));
    }
    assert_snapshot!("streaming_markdown", screen(&mut a, W, 24, now));
    a.on_engine_event(EngineEvent::TextDelta(MARKDOWN[cut..].into()));
    events(
        &mut a,
        vec![
            assistant(vec![ContentBlock::text(MARKDOWN)], 1200, 80),
            finished(false, None),
        ],
    );
    a.on_reply(crate::tui::worker::Reply::TurnDone);
    assert_snapshot!("finished_markdown", screen(&mut a, W, 32, Instant::now()));
}

#[test]
fn thinking_streams_then_collapses() {
    let mut a = app();
    a.submit_text("think first");
    let now = a.busy.as_ref().unwrap().since;
    events(
        &mut a,
        vec![
            EngineEvent::RequestStarted { request: 1 },
            EngineEvent::ThinkingDelta("The user wants the total. ".into()),
            EngineEvent::ThinkingDelta("Check the discount sign first, then the rounding.".into()),
        ],
    );
    assert_snapshot!("thinking_streaming", screen(&mut a, W, 12, now));
    events(&mut a, vec![EngineEvent::TextDelta("It is the sign.".into())]);
    assert_snapshot!("thinking_done", screen(&mut a, W, 12, now));
}

#[test]
fn tool_cells_in_every_state() {
    let mut a = app();
    a.submit_text("look around");
    let now = a.busy.as_ref().unwrap().since + Duration::from_secs(4);
    events(
        &mut a,
        vec![
            EngineEvent::RequestStarted { request: 1 },
            EngineEvent::ToolCallStreaming {
                id: "t1".into(),
                name: "Glob".into(),
            },
            EngineEvent::ToolCallStreaming {
                id: "t2".into(),
                name: "Read".into(),
            },
            EngineEvent::ToolCallStreaming {
                id: "t3".into(),
                name: "Grep".into(),
            },
            EngineEvent::ToolCallStreaming {
                id: "t4".into(),
                name: "Bash".into(),
            },
            EngineEvent::ToolCallStreaming {
                id: "t5".into(),
                name: "Bash".into(),
            },
            tool_started("t1", "Glob", json!({"pattern": "**/*.py"})),
            tool_finished("t1", "Glob", "a.py\nb.py\nc.py\nd.py\ne.py", false, Value::Null, 12),
            tool_started("t2", "Read", json!({"file_path": "/work/proj/src/app.py"})),
            tool_finished(
                "t2",
                "Read",
                "     1\timport os\n     2\t\n     3\tprint(1)\n",
                false,
                Value::Null,
                3,
            ),
            tool_started("t3", "Grep", json!({"pattern": "discount(", "output_mode": "content"})),
            tool_finished(
                "t3",
                "Grep",
                "<tool_use_error>Grep was not run: the pattern is not a valid regular expression (unclosed group). Escape the parenthesis.</tool_use_error>",
                true,
                Value::Null,
                1,
            ),
            EngineEvent::PermissionDenied {
                tool_name: "Bash".into(),
                tool_use_id: "t4".into(),
                tool_input: json!({"command": "rm -rf build"}),
                message: "denied".into(),
            },
            tool_started("t5", "Bash", json!({"command": "pytest -q"})),
        ],
    );
    if let Some(t) = a.transcript.tool_mut("t4") {
        t.set_input(json!({"command": "rm -rf build"}), std::path::Path::new("/work/proj"));
        t.output = "The user denied this call.".into();
    }
    assert_snapshot!("tool_cells", screen(&mut a, W, 26, now));
    // Ctrl+O expands every output.
    a.transcript.expand_all = true;
    let text = super::text(&mut a, W, 40);
    assert!(text.contains("e.py"), "{text}");
    assert!(text.contains("print(1)"), "{text}");
}

#[test]
fn edits_show_coloured_diffs() {
    let mut a = app();
    a.submit_text("fix it");
    events(
        &mut a,
        vec![
            tool_started(
                "e1",
                "Edit",
                json!({"file_path": "/work/proj/inventory/pricing.py",
                       "old_string": "    subtotal = sum(lines)\n    return round(subtotal * (1 + discount), 2)\n",
                       "new_string": "    subtotal = sum(lines)\n    return round(subtotal * (1 - discount), 2)\n"}),
            ),
            tool_finished("e1", "Edit", "Edited inventory/pricing.py", false, Value::Null, 5),
            tool_started(
                "e2",
                "Edit",
                json!({"file_path": "/work/proj/README.md", "old_string": "x", "new_string": "y"}),
            ),
            tool_finished(
                "e2",
                "Edit",
                "Edited README.md",
                false,
                json!({"structuredPatch": [{"oldStart": 41, "oldLines": 3, "newStart": 41, "newLines": 4,
                    "lines": [" ## Usage", "-Run it.", "+Run it with:", "+    keel -p", " "]}]}),
                4,
            ),
        ],
    );
    let s = screen(&mut a, W, 22, Instant::now());
    assert_snapshot!("edit_diffs", s);
    // The removed line is red and the added line green, whatever else changes.
    let lines: Vec<&str> = s.lines().collect();
    let removed = lines
        .iter()
        .position(|l| l.contains("-    return round(subtotal * (1 + discount)"))
        .unwrap();
    let styles = s.split("--- styles ---\n").nth(1).unwrap();
    assert!(
        styles
            .lines()
            .any(|l| l.starts_with(&format!("{removed:>2}:")) && l.contains("Red")),
        "{styles}"
    );
    assert!(
        styles
            .lines()
            .any(|l| l.starts_with(&format!("{:>2}:", removed + 1)) && l.contains("Green")),
        "{styles}"
    );
}

#[test]
fn shell_cell_and_notices() {
    let mut a = app();
    a.submit_text("!cargo test");
    a.on_reply(crate::tui::worker::Reply::ShellDone(crate::tui::shell::ShellResult {
        output: "running 3 tests\ntest a ... ok\ntest b ... FAILED\nerror: 1 failed".into(),
        exit_code: Some(101),
        duration_ms: 2300,
        interrupted: false,
        dropped: 0,
        spawn_error: None,
    }));
    a.submit_text("again");
    events(
        &mut a,
        vec![
            EngineEvent::RequestStarted { request: 1 },
            EngineEvent::TextDelta("Partial text that the retry voids".into()),
            EngineEvent::Retry {
                attempt: 1,
                max_retries: 10,
                delay_ms: 1500,
                status: Some(529),
                error: "overloaded".into(),
                waited_ms: 0,
            },
            EngineEvent::Notice {
                level: NoticeLevel::Warning,
                message: "@notes.txt: no such file or directory; sent as plain text".into(),
            },
            finished(true, None),
        ],
    );
    a.on_reply(crate::tui::worker::Reply::TurnDone);
    assert_snapshot!("shell_and_notices", screen(&mut a, W, 20, Instant::now()));
}

#[test]
fn status_line_idle_busy_and_modes() {
    let mut a = app();
    events(&mut a, vec![assistant(vec![ContentBlock::text("hi")], 150_000, 2_000)]);
    let idle = screen(&mut a, W, 10, Instant::now());
    assert_snapshot!("status_idle", idle.lines().nth(9).unwrap());
    a.submit_text("work");
    a.submit_text("then this");
    let now = a.busy.as_ref().unwrap().since + Duration::from_millis(75_400);
    a.shared.set_mode(Mode::AcceptEdits);
    let busy = screen(&mut a, W, 12, now);
    assert_snapshot!("status_busy_with_queue", busy);
    a.shared.set_mode(Mode::Plan);
    let narrow = screen(&mut a, 44, 10, now);
    assert_snapshot!("status_narrow", narrow.lines().nth(9).unwrap());
}

fn prompt(
    tool: &str,
    input: Value,
    rule: Option<&str>,
    body: Body,
) -> (PermissionPrompt, oneshot::Receiver<PermissionReply>) {
    let (tx, rx) = oneshot::channel();
    (
        PermissionPrompt {
            tool_use_id: "b1".into(),
            tool_name: tool.into(),
            input,
            detail: String::new(),
            suggested_rule: rule.map(str::to_string),
            preview: Preview {
                reason: "no allow rule matches it".into(),
                body,
            },
            reason: String::new(),
            suggestions: Vec::new(),
            reply: tx,
        },
        rx,
    )
}

fn arm(a: &mut App) {
    a.tick(Instant::now() + crate::tui::app::GRACE + Duration::from_millis(1));
}

#[test]
fn approval_modal_for_a_command() {
    let mut a = app();
    a.submit_text("run the tests");
    let command = "npm test -- --watch=false --reporter=verbose --coverage --testPathPattern='src/(billing|orders)/.*\\.test\\.ts$'";
    let (p, _rx) = prompt(
        "Bash",
        json!({"command": command}),
        Some("Bash(npm test:*)"),
        Body::Command {
            command: command.into(),
            description: Some("Run the billing and order tests with coverage".into()),
        },
    );
    events(
        &mut a,
        vec![
            tool_started("b1", "Bash", json!({"command": command})),
            EngineEvent::PermissionRequest(p),
        ],
    );
    let now = a.busy.as_ref().unwrap().since;
    // Typed while the dialog opened: it stays in the prompt box, the choices are not active yet.
    for c in "and then".chars() {
        a.on_key(
            crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char(c)),
            Instant::now(),
        );
    }
    assert_snapshot!("approval_command_unarmed", screen(&mut a, W, 22, now));
    arm(&mut a);
    assert_snapshot!("approval_command", screen(&mut a, W, 22, now));
    a.on_key(
        crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Tab),
        Instant::now(),
    );
    for c in "use pnpm".chars() {
        a.on_key(
            crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char(c)),
            Instant::now(),
        );
    }
    assert_snapshot!("approval_feedback", screen(&mut a, W, 22, now));
}

#[test]
fn approval_modal_shows_the_diff_with_file_line_numbers() {
    let mut a = app();
    a.submit_text("edit");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lib.rs");
    let text: String = (1..=30).map(|i| format!("    let v{i} = {i};\n")).collect();
    std::fs::write(&file, &text).unwrap();
    let input = json!({"file_path": file, "old_string": "    let v12 = 12;\n", "new_string": "    let v12 = 12 * 2;\n    check(v12);\n"});
    let mut preview =
        crate::tools::preview::build(&crate::tools::edit::EditTool, &input, dir.path(), "edits need approval");
    // The snapshot shows the path as it would be inside the workspace.
    if let Body::Diff { path, .. } = &mut preview.body {
        *path = "/work/proj/src/lib.rs".into();
    }
    let (p, _rx) = prompt("Edit", input, None, preview.body);
    events(&mut a, vec![EngineEvent::PermissionRequest(p)]);
    arm(&mut a);
    let now = a.busy.as_ref().unwrap().since;
    assert_snapshot!("approval_diff", screen(&mut a, W, 24, now));
    let s = super::text(&mut a, W, 24);
    assert!(
        s.contains("12 -    let v12 = 12;") && s.contains("12 +    let v12 = 12 * 2;"),
        "{s}"
    );
    assert!(
        s.contains("13 +    check(v12);") && s.contains("16      let v15 = 15;"),
        "{s}"
    );
    assert!(
        !s.contains("---") && !s.contains("+++") && !s.contains("No newline"),
        "{s}"
    );
}

#[test]
fn approval_modal_scrolls_a_long_new_file() {
    let mut a = app();
    a.submit_text("write it");
    let content: String = (1..=120).map(|i| format!("print({i})\n")).collect();
    let (p, _rx) = prompt(
        "Write",
        json!({"file_path": "/work/proj/gen.py", "content": content}),
        None,
        Body::NewFile {
            path: "/work/proj/gen.py".into(),
            content: content.clone(),
        },
    );
    events(&mut a, vec![EngineEvent::PermissionRequest(p)]);
    arm(&mut a);
    let now = a.busy.as_ref().unwrap().since;
    let s = super::text(&mut a, W, 24);
    assert!(
        s.contains("Write gen.py · new file · 120 lines") && s.contains("1 │ print(1)"),
        "{s}"
    );
    assert!(s.contains("lines 1–"), "{s}");
    // The prompt box is still there below the dialog.
    assert!(s.contains("Ask keel"), "{s}");
    a.on_key(
        crossterm::event::KeyEvent::from(crossterm::event::KeyCode::End),
        Instant::now(),
    );
    assert_snapshot!("approval_write_scrolled_to_the_end", screen(&mut a, W, 24, now));
    let s = super::text(&mut a, W, 24);
    assert!(s.contains("120 │ print(120)") && s.contains("of 120"), "{s}");
    assert!(a.approval.is_some(), "scrolling answers nothing");
}

#[test]
fn approval_modal_for_a_plan_offers_the_next_mode() {
    let mut a = app();
    a.submit_text("plan the change");
    let plan = "1. Add a --verbose flag in src/cli.rs\n2. Log each request\n3. Run cargo test";
    let (mut p, _rx) = prompt("ExitPlanMode", json!({"plan": plan}), None, Body::Plan(plan.into()));
    p.preview.reason = "approve the plan to leave plan mode".into();
    events(&mut a, vec![EngineEvent::PermissionRequest(p)]);
    arm(&mut a);
    let now = a.busy.as_ref().unwrap().since;
    let s = screen(&mut a, W, 22, now);
    assert_snapshot!("approval_plan", s);
    assert!(
        s.contains("accept edits automatically") && s.contains("keep planning"),
        "{s}"
    );
}

#[test]
fn todo_panel_shows_what_a_blocked_entry_waits_for() {
    let mut a = app();
    a.shared.task_list.replace(vec![
        Todo {
            id: Some("fix".into()),
            content: "Fix the sign".into(),
            status: TodoStatus::InProgress,
            active_form: "Fixing the sign".into(),
            ..Default::default()
        },
        Todo {
            id: Some("test".into()),
            content: "Run the tests".into(),
            status: TodoStatus::Pending,
            active_form: "Running the tests".into(),
            blocked_by: vec!["fix".into()],
            ..Default::default()
        },
    ]);
    a.on_key(
        crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char('t'),
            crossterm::event::KeyModifiers::CONTROL,
        ),
        Instant::now(),
    );
    let s = screen(&mut a, W, 14, Instant::now());
    assert!(s.contains("◌ Run the tests · blocked by fix"), "{s}");
    assert!(a.todos_report().contains("- [ ] Run the tests (blocked by fix)"));
}

#[test]
fn todo_panel_and_completion_menu() {
    let mut a = app();
    a.shared.task_list.replace(vec![
        Todo {
            content: "Find the bug".into(),
            status: TodoStatus::Completed,
            active_form: "Finding the bug".into(),
            ..Default::default()
        },
        Todo {
            content: "Fix the sign".into(),
            status: TodoStatus::InProgress,
            active_form: "Fixing the sign".into(),
            ..Default::default()
        },
        Todo {
            content: "Run the tests".into(),
            status: TodoStatus::Pending,
            active_form: "Running the tests".into(),
            ..Default::default()
        },
    ]);
    a.on_key(
        crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char('t'),
            crossterm::event::KeyModifiers::CONTROL,
        ),
        Instant::now(),
    );
    assert_snapshot!("todo_panel", screen(&mut a, W, 14, Instant::now()));
    for c in "/co".chars() {
        a.on_key(
            crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char(c)),
            Instant::now(),
        );
    }
    assert_snapshot!("completion_menu", screen(&mut a, W, 14, Instant::now()));
}

#[test]
fn too_small_terminal_says_so() {
    let mut a = app();
    let s = screen(&mut a, 30, 6, Instant::now());
    assert_snapshot!("too_small", s);
}

#[test]
fn context_grid_draws_categories() {
    use crate::tui::integration::{ContextCategory, ContextReport};
    let report = ContextReport {
        window: 200_000,
        categories: vec![
            ContextCategory {
                name: "System prompt".into(),
                tokens: 3_000,
            },
            ContextCategory {
                name: "Messages".into(),
                tokens: 50_000,
            },
            ContextCategory {
                name: "Free".into(),
                tokens: 147_000,
            },
        ],
        files: vec![("/work/proj/CLAUDE.md".into(), 800)],
    };
    let mut a = app();
    a.transcript.push(crate::tui::transcript::CellKind::Lines {
        title: "Context".into(),
        lines: crate::tui::app::context_grid(&report),
    });
    assert_snapshot!("context_grid", screen(&mut a, 80, 12, Instant::now()));
}

#[test]
fn permissions_and_hooks_reports() {
    use crate::tui::integration::{HookEntry, PermissionsReport, RuleSet};
    use crate::tui::worker::{Job, Reply};
    let mut a = app();
    a.submit_text("/permissions");
    assert!(
        a.take_effects()
            .iter()
            .any(|e| matches!(e, crate::tui::app::Effect::Job(Job::Permissions)))
    );
    a.on_reply(Reply::Permissions(Ok(PermissionsReport {
        rule_sets: vec![RuleSet {
            source: ".claude/settings.json".into(),
            allow: vec!["Bash(npm test:*)".into()],
            ask: vec![],
            deny: vec!["Read(./.env)".into()],
        }],
        additional_directories: vec!["/work/shared".into()],
    })));
    a.submit_text("/hooks");
    a.on_reply(Reply::Hooks(Ok(vec![HookEntry {
        event: "PreToolUse".into(),
        matcher: Some("Bash".into()),
        command: "./scripts/guard.sh".into(),
        source: ".claude/settings.json".into(),
    }])));
    assert_snapshot!("permissions_and_hooks", screen(&mut a, W, 24, Instant::now()));
}

#[test]
fn live_output_checklists_tracebacks_and_narrow_tables() {
    let mut a = app();
    a.submit_text("work");
    let todos = json!({"todos": [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
        {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"}
    ]});
    let traceback = "Traceback (most recent call last):\n  File \"/srv/app/billing/orders.py\", line 12, in <module>\n    main()\nValueError: negative total\n\nExit code 1";
    events(
        &mut a,
        vec![
            tool_started("t1", "TodoWrite", todos),
            tool_finished("t1", "TodoWrite", "Task list updated.", false, Value::Null, 1),
            tool_started("b1", "Bash", json!({"command": "python orders.py"})),
            tool_finished("b1", "Bash", traceback, true, Value::Null, 40),
            EngineEvent::TextDelta(
                "| step | detail |\n|---|---|\n| parse | reads the configuration file and validates every key |\n"
                    .into(),
            ),
            tool_started("b2", "Bash", json!({"command": "cargo build"})),
        ],
    );
    a.on_live_output(
        "b2",
        "   Compiling serde v1.0\n   Compiling tokio v1.4\n   Compiling keel v0.1\n",
        80,
        Instant::now() + Duration::from_millis(12_500),
    );
    let now = a.busy.as_ref().unwrap().since;
    assert_snapshot!("new_cells", screen(&mut a, 56, 34, now));
}
