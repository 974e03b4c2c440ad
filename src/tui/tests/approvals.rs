//! Approval dialogs: keys that answer, type-ahead that never does, the waiting state.

use std::time::{Duration, Instant};

use crossterm::event::KeyCode;
use serde_json::json;
use tokio::sync::oneshot;

use super::keys::{jobs, key, typed};
use crate::engine::EngineEvent;
use crate::permissions::{PermissionPrompt, PermissionReply};
use crate::tui::app::test_support::app;
use crate::tui::app::{App, GRACE};
use crate::tui::transcript::CellKind;

fn permission(a: &mut App) -> oneshot::Receiver<PermissionReply> {
    let (tx, rx) = oneshot::channel();
    a.on_engine_event(EngineEvent::PermissionRequest(PermissionPrompt {
        tool_use_id: "b1".into(),
        tool_name: "Bash".into(),
        input: json!({"command": "make"}),
        detail: "make".into(),
        suggested_rule: Some("Bash(make:*)".into()),
        preview: Default::default(),
        reason: String::new(),
        suggestions: Vec::new(),
        reply: tx,
    }));
    rx
}

/// The dialog arms once nothing was typed for the grace period (the loop's timer does this).
fn pause(a: &mut App) {
    a.tick(Instant::now() + GRACE + Duration::from_millis(10));
}

#[test]
fn approval_keys_answer_the_engine() {
    let mut a = app();
    a.submit_text("build");
    let mut rx = permission(&mut a);
    pause(&mut a);
    key(&mut a, KeyCode::Char('1'));
    assert_eq!(rx.try_recv().unwrap(), PermissionReply::AllowOnce);
    assert!(a.approval.is_none());

    let mut rx = permission(&mut a);
    pause(&mut a);
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Enter);
    assert_eq!(rx.try_recv().unwrap(), PermissionReply::AllowAlways);

    let mut rx = permission(&mut a);
    pause(&mut a);
    key(&mut a, KeyCode::Tab);
    typed(&mut a, "use ninja");
    key(&mut a, KeyCode::Backspace);
    key(&mut a, KeyCode::Enter);
    assert_eq!(
        rx.try_recv().unwrap(),
        PermissionReply::Deny {
            feedback: Some("use ninj".into())
        }
    );

    // Two requests at once are asked one after the other, each with its own grace; Esc denies.
    let mut first = permission(&mut a);
    let mut second = permission(&mut a);
    pause(&mut a);
    key(&mut a, KeyCode::Esc);
    assert_eq!(first.try_recv().unwrap(), PermissionReply::Deny { feedback: None });
    assert!(a.approval.is_some());
    key(&mut a, KeyCode::Char('1'));
    assert!(second.try_recv().is_err(), "the second dialog was not armed yet");
    pause(&mut a);
    key(&mut a, KeyCode::Enter);
    assert_eq!(second.try_recv().unwrap(), PermissionReply::AllowOnce);
    // The `1` typed too early stayed in the prompt box.
    assert_eq!(a.editor.text(), "1");
}

#[test]
fn type_ahead_never_answers_a_dialog() {
    let mut a = app();
    a.submit_text("build");
    jobs(&mut a);
    // Typing was under way when the dialog opened: every key, answers included, is text.
    typed(&mut a, "add a t");
    let mut rx = permission(&mut a);
    typed(&mut a, "est 2 3 y");
    key(&mut a, KeyCode::Char('a'));
    assert!(rx.try_recv().is_err());
    assert_eq!(a.editor.text(), "add a test 2 3 ya");
    // A pause arms it; typing text again goes to the prompt and disarms it at once.
    pause(&mut a);
    assert!(a.approval.as_ref().unwrap().is_armed());
    key(&mut a, KeyCode::Char('!'));
    assert!(!a.approval.as_ref().unwrap().is_armed());
    key(&mut a, KeyCode::Char('2'));
    assert!(rx.try_recv().is_err());
    assert_eq!(a.editor.text(), "add a test 2 3 ya!2");
    // Enter during the grace period submits the prompt (queued behind the turn), not the dialog.
    key(&mut a, KeyCode::Enter);
    assert!(rx.try_recv().is_err());
    assert_eq!(a.queue.len(), 1);
    assert_eq!(a.queue[0].submission.text, "add a test 2 3 ya!2");
    // A paste counts as typing too.
    pause(&mut a);
    a.on_paste("/exit", Instant::now());
    assert!(!a.approval.as_ref().unwrap().is_armed());
    assert_eq!(a.editor.text(), "/exit");
    // Scroll keys move the preview and never answer.
    key(&mut a, KeyCode::PageDown);
    key(&mut a, KeyCode::PageUp);
    assert!(rx.try_recv().is_err());
    pause(&mut a);
    key(&mut a, KeyCode::Char('3'));
    assert_eq!(rx.try_recv().unwrap(), PermissionReply::Deny { feedback: None });
    assert_eq!(a.editor.text(), "/exit");
    assert!(a.exit.is_none());
}

#[test]
fn waiting_for_approval_is_shown_and_left_out_of_the_duration() {
    let mut a = app();
    a.submit_text("build");
    a.on_engine_event(EngineEvent::ToolStarted {
        id: "b1".into(),
        name: "Bash".into(),
        input: json!({"command": "make"}),
    });
    let _rx = permission(&mut a);
    let screen = super::text(&mut a, 80, 30);
    assert!(screen.contains("Bash(make) · waiting for approval"), "{screen}");
    std::thread::sleep(Duration::from_millis(60));
    pause(&mut a);
    key(&mut a, KeyCode::Char('1'));
    let waited = match a.transcript.get(a.transcript.tool_index("b1").unwrap()) {
        Some(CellKind::Tool(t)) => {
            assert_eq!(t.status, crate::tui::transcript::ToolStatus::Running);
            t.wait_ms
        }
        other => panic!("{other:?}"),
    };
    assert!(waited >= 60, "{waited}");
    a.on_engine_event(EngineEvent::ToolFinished {
        id: "b1".into(),
        name: "Bash".into(),
        content: crate::types::message::ToolResultContent::Text("built".into()),
        is_error: false,
        structured: json!({}),
        duration_ms: waited + 25,
    });
    let screen = super::text(&mut a, 80, 30);
    assert!(screen.contains("Bash(make) · approved once · 25 ms"), "{screen}");
}

#[test]
fn an_open_request_is_dropped_when_the_turn_ends() {
    let mut a = app();
    a.submit_text("build");
    let mut rx = permission(&mut a);
    a.on_engine_event(EngineEvent::TurnFinished(crate::engine::TurnOutcome {
        subtype: crate::engine::ResultSubtype::ErrorDuringExecution,
        is_error: true,
        result: "interrupted".into(),
        errors: vec![],
        stop_reason: None,
        num_turns: 1,
        duration_ms: 1,
        duration_api_ms: 1,
        interrupted: true,
        api_error_status: None,
        ..Default::default()
    }));
    assert!(a.approval.is_none());
    assert!(matches!(rx.try_recv(), Err(oneshot::error::TryRecvError::Closed)));
}

/// The status line's timer stands still while a dialog waits for the user: 27 s of waiting and
/// 2.6 s of work show as 2 s, as the tool's cell counts it.
#[test]
fn the_status_timer_leaves_out_the_wait_for_approval() {
    let mut a = app();
    a.submit_text("build");
    let since = a.busy.as_ref().unwrap().since;
    a.on_engine_event(EngineEvent::ToolStarted {
        id: "b1".into(),
        name: "Bash".into(),
        input: json!({"command": "make"}),
    });
    let mut rx = permission(&mut a);
    let answered = since + Duration::from_secs(27);
    a.tick(answered);
    a.on_key(crossterm::event::KeyEvent::from(KeyCode::Char('1')), answered);
    assert_eq!(rx.try_recv().unwrap(), PermissionReply::AllowOnce);
    let later = answered + Duration::from_millis(2_600);
    let status = crate::tui::render::status::line(&a, later, 100).to_string();
    assert!(status.contains("Running Bash · 2s"), "{status}");
}
