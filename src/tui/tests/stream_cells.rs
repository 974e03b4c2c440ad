//! Engine events drawn as cells while a turn runs: frozen stream blocks, live command output,
//! checklists, compaction notices, commands typed during a stream.

use std::time::{Duration, Instant};

use crossterm::event::KeyCode;
use serde_json::json;

use super::keys::{jobs, key, typed};
use crate::engine::EngineEvent;
use crate::tui::app::App;
use crate::tui::app::test_support::app;
use crate::tui::transcript::CellKind;
use crate::tui::worker::{Job, Reply};

#[test]
fn long_streams_freeze_finished_blocks_into_cells() {
    use crate::tui::app::stable_split;
    assert_eq!(stable_split("para one\n\npara two"), Some(10));
    assert_eq!(
        stable_split("```\ncode\n\nmore code\n```\n"),
        None,
        "never inside a fence"
    );
    assert_eq!(
        stable_split("- item\n\n  continued item"),
        None,
        "not before a continuation"
    );
    assert_eq!(stable_split("no blank line yet"), None);

    let mut a = app();
    a.submit_text("go");
    a.on_engine_event(EngineEvent::RequestStarted { request: 1 });
    let text: String = (0..60)
        .map(|i| format!("Paragraph {i} with some words in it.\n\n"))
        .collect();
    for piece in text.as_bytes().chunks(7) {
        a.on_engine_event(EngineEvent::TextDelta(String::from_utf8(piece.to_vec()).unwrap()));
    }
    let cells: Vec<String> = a
        .transcript
        .cells()
        .filter_map(|c| match c {
            CellKind::Assistant { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(cells.len() > 1, "the answer was split");
    assert_eq!(cells.concat(), text, "nothing lost or doubled");
    let streaming = a
        .transcript
        .cells()
        .filter(|c| matches!(c, CellKind::Assistant { streaming: true, .. }))
        .count();
    assert_eq!(streaming, 1, "only the last cell still grows");
    // Split or whole, the answer looks the same.
    let mut whole = app();
    whole.transcript.push(CellKind::User { text: "go".into() });
    whole.transcript.push(CellKind::Assistant {
        text: text.clone(),
        streaming: false,
    });
    let split_screen = super::text(&mut a, 60, 200);
    let whole_screen = super::text(&mut whole, 60, 200);
    let body = |s: &str| s.lines().take(150).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(body(&split_screen), body(&whole_screen));
    // A retry voids every cell of the request.
    a.on_engine_event(EngineEvent::Retry {
        attempt: 1,
        max_retries: 3,
        delay_ms: 10,
        status: Some(529),
        error: "overloaded".into(),
        waited_ms: 0,
    });
    assert!(
        a.transcript
            .cells()
            .all(|c| !matches!(c, CellKind::Assistant { text, .. } if !text.is_empty()))
    );
}

#[test]
fn running_commands_show_their_live_output() {
    let mut a = app();
    a.submit_text("run");
    a.on_engine_event(EngineEvent::ToolStarted {
        id: "b1".into(),
        name: "Bash".into(),
        input: json!({"command": "make"}),
    });
    let sources = a.live_sources();
    assert_eq!(sources.len(), 1);
    assert!(
        sources[0].path.ends_with("shell-output/b1.log"),
        "{:?}",
        sources[0].path
    );
    let later = Instant::now() + Duration::from_millis(1500);
    a.on_live_output("b1", "compiling a\ncompiling b\n", 24, later);
    assert_eq!(a.live_sources()[0].offset, 24);
    let screen = super::text(&mut a, 80, 20);
    assert!(
        screen.contains("└ compiling a") && screen.contains("2 lines so far · 1.5 s"),
        "{screen}"
    );
}

#[test]
fn todo_write_is_drawn_as_a_checklist() {
    let mut a = app();
    a.submit_text("plan");
    let input = json!({"todos": [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"}
    ]});
    a.on_engine_event(EngineEvent::ToolStarted {
        id: "t1".into(),
        name: "TodoWrite".into(),
        input,
    });
    a.on_engine_event(EngineEvent::ToolFinished {
        id: "t1".into(),
        name: "TodoWrite".into(),
        content: crate::types::message::ToolResultContent::Text("Task list updated: 2 items".into()),
        is_error: false,
        structured: json!({}),
        duration_ms: 1,
    });
    let screen = super::text(&mut a, 80, 20);
    assert!(screen.contains("✓ TodoWrite(2 items, 1 done)"), "{screen}");
    assert!(
        screen.contains("└ ✓ Read the code") && screen.contains("▶ Fixing the bug"),
        "{screen}"
    );
    assert!(
        !screen.contains("\"todos\"") && !screen.contains("Task list updated"),
        "{screen}"
    );
}

#[test]
fn compact_gives_one_notice_and_moves_the_gauge() {
    let mut a = app();
    a.status.context_tokens = 150_000;
    assert_eq!(a.context_percent(), Some(75));
    a.submit_text("/compact");
    assert!(matches!(&jobs(&mut a)[..], [Job::Compact { .. }]));
    a.on_engine_event(EngineEvent::Compacted {
        trigger: crate::compact::autocompact::Trigger::Manual,
        pre_tokens: 150_000,
        post_tokens: 12_000,
    });
    a.on_reply(Reply::Totals(Default::default()));
    a.on_reply(Reply::Compacted(Ok(crate::tui::integration::CompactReport {
        tokens_before: Some(150_000),
        tokens_after: Some(12_000),
        note: "The conversation now starts from a hand-off.".into(),
    })));
    assert_eq!(a.context_percent(), Some(6));
    let notices: Vec<String> = a
        .transcript
        .cells()
        .filter_map(|c| match c {
            CellKind::Notice { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].contains("150000 → 12000") && notices[0].contains("starts from a hand-off"));
    assert!(a.busy.is_none());
}

#[test]
fn a_command_typed_during_a_stream_prints_after_the_answer_block() {
    let mut a = app();
    a.submit_text("explain");
    a.on_engine_event(EngineEvent::RequestStarted { request: 1 });
    a.on_engine_event(EngineEvent::TextDelta("The first half ".into()));
    typed(&mut a, "/cost");
    key(&mut a, KeyCode::Enter);
    typed(&mut a, "/nosuchcommand");
    key(&mut a, KeyCode::Enter);
    a.on_engine_event(EngineEvent::TextDelta("and the second half.".into()));
    let kinds = |a: &App| -> Vec<String> {
        a.transcript
            .cells()
            .map(|c| match c {
                CellKind::User { .. } => "user".to_string(),
                CellKind::Assistant { text, .. } => format!("answer:{text}"),
                CellKind::Info { title, .. } => format!("info:{title}"),
                CellKind::Notice { .. } => "notice".to_string(),
                other => format!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(kinds(&a), vec!["user", "answer:The first half and the second half."]);
    a.on_engine_event(EngineEvent::Assistant {
        id: "m".into(),
        model: "claude-sonnet-4-5".into(),
        message: crate::types::message::Message::assistant(vec![crate::types::message::ContentBlock::text(
            "The first half and the second half.",
        )]),
        stop_reason: "end_turn".into(),
        usage: Default::default(),
    });
    assert_eq!(
        kinds(&a),
        vec![
            "user",
            "answer:The first half and the second half.",
            "info:Cost",
            "notice"
        ]
    );
    // When nothing streams, a command prints at once.
    typed(&mut a, "/help");
    key(&mut a, KeyCode::Enter);
    assert_eq!(kinds(&a).last().unwrap(), "info:Help");
}
