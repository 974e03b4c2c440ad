//! Key handling: submission, queueing, interruption, exit, modes, editing, approvals.

use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use tokio::sync::oneshot;

use crate::engine::EngineEvent;
use crate::permissions::{Mode, PermissionPrompt, PermissionReply};
use crate::tui::app::test_support::{app, app_in};
use crate::tui::app::{App, Effect, ExitReason, GRACE};
use crate::tui::transcript::CellKind;
use crate::tui::worker::{Job, Reply};

fn key(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::from(code), Instant::now());
}

fn ctrl(app: &mut App, c: char) {
    app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL), Instant::now());
}

fn typed(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

/// The jobs the app asked for, in order.
fn jobs(app: &mut App) -> Vec<Job> {
    app.take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::Job(j) => Some(j),
            _ => None,
        })
        .collect()
}

fn turn_text(job: &Job) -> &str {
    match job {
        Job::Turn { text, .. } => text,
        other => panic!("expected a turn, got {other:?}"),
    }
}

#[test]
fn enter_submits_a_turn_and_shows_the_prompt() {
    let mut a = app();
    typed(&mut a, "explain main.rs");
    key(&mut a, KeyCode::Enter);
    let j = jobs(&mut a);
    assert_eq!(j.len(), 1);
    assert_eq!(turn_text(&j[0]), "explain main.rs");
    assert!(a.editor.is_empty());
    assert!(a.busy.is_some());
    assert!(matches!(a.transcript.get(0), Some(CellKind::User { text }) if text == "explain main.rs"));
    // An empty prompt sends nothing.
    a.on_reply(Reply::TurnDone);
    key(&mut a, KeyCode::Enter);
    assert!(jobs(&mut a).is_empty());
}

#[test]
fn prompts_typed_while_busy_are_queued_and_run_in_order() {
    let mut a = app();
    a.submit_text("first");
    jobs(&mut a);
    typed(&mut a, "second");
    key(&mut a, KeyCode::Enter);
    typed(&mut a, "third");
    key(&mut a, KeyCode::Enter);
    assert!(jobs(&mut a).is_empty(), "nothing starts while a turn runs");
    assert_eq!(a.queue.len(), 2);
    a.on_reply(Reply::TurnDone);
    let j = jobs(&mut a);
    assert_eq!(turn_text(&j[0]), "second");
    assert_eq!(a.queue.len(), 1);
    a.on_reply(Reply::TurnDone);
    assert_eq!(turn_text(&jobs(&mut a)[0]), "third");
    a.on_reply(Reply::TurnDone);
    assert!(a.busy.is_none());
}

#[test]
fn esc_cancels_the_turn_and_returns_queued_prompts_to_the_editor() {
    let mut a = app();
    a.submit_text("long task");
    let cancel = match &jobs(&mut a)[0] {
        Job::Turn { cancel, .. } => cancel.clone(),
        _ => unreachable!(),
    };
    a.submit_text("queued one");
    typed(&mut a, "draft");
    key(&mut a, KeyCode::Esc);
    assert!(cancel.is_cancelled());
    assert!(a.queue.is_empty());
    assert_eq!(a.editor.text(), "draft\nqueued one");
    // Esc when idle does nothing to the editor.
    a.on_reply(Reply::TurnDone);
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.editor.text(), "draft\nqueued one");
}

#[test]
fn ctrl_c_clears_then_interrupts_then_exits_when_pressed_twice() {
    let mut a = app();
    typed(&mut a, "some text");
    ctrl(&mut a, 'c');
    assert!(a.editor.is_empty());
    assert!(a.exit.is_none());
    a.submit_text("work");
    let cancel = match &jobs(&mut a)[0] {
        Job::Turn { cancel, .. } => cancel.clone(),
        _ => unreachable!(),
    };
    ctrl(&mut a, 'c');
    assert!(cancel.is_cancelled());
    a.on_reply(Reply::TurnDone);
    // A key in between disarms; then two presses exit.
    key(&mut a, KeyCode::Left);
    let t0 = Instant::now();
    a.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL), t0);
    assert!(a.exit.is_none());
    assert!(a.exit_armed.is_some());
    a.on_key(
        KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
        t0 + Duration::from_millis(500),
    );
    assert_eq!(a.exit, Some(ExitReason::User));
}

#[test]
fn second_ctrl_c_after_the_timeout_only_arms_again() {
    let mut a = app();
    let t0 = Instant::now();
    a.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL), t0);
    a.tick(t0 + Duration::from_secs(3));
    assert!(a.exit_armed.is_none());
    a.on_key(
        KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
        t0 + Duration::from_secs(3),
    );
    assert!(a.exit.is_none());
}

#[test]
fn ctrl_d_exits_only_on_an_empty_prompt() {
    let mut a = app();
    typed(&mut a, "ab");
    key(&mut a, KeyCode::Home);
    ctrl(&mut a, 'd');
    assert_eq!(a.editor.text(), "b");
    assert!(a.exit.is_none());
    ctrl(&mut a, 'u');
    key(&mut a, KeyCode::End);
    ctrl(&mut a, 'k');
    ctrl(&mut a, 'a');
    ctrl(&mut a, 'k');
    assert!(a.editor.is_empty());
    ctrl(&mut a, 'd');
    assert_eq!(a.exit, Some(ExitReason::User));
}

#[test]
fn shift_tab_cycles_the_session_mode() {
    let mut a = app();
    assert_eq!(a.mode(), Mode::Default);
    key(&mut a, KeyCode::BackTab);
    assert_eq!(a.shared.mode(), Mode::AcceptEdits);
    key(&mut a, KeyCode::BackTab);
    assert_eq!(a.shared.mode(), Mode::Plan);
    key(&mut a, KeyCode::BackTab);
    assert_eq!(a.shared.mode(), Mode::Default, "bypass only when enabled at launch");
    a.bypass_available = true;
    a.shared.set_mode(Mode::Plan);
    key(&mut a, KeyCode::BackTab);
    assert_eq!(a.shared.mode(), Mode::BypassPermissions);
}

#[test]
fn newline_keys_and_history() {
    let mut a = app();
    typed(&mut a, "one");
    a.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT), Instant::now());
    typed(&mut a, "two");
    a.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT), Instant::now());
    typed(&mut a, "three");
    ctrl(&mut a, 'j');
    typed(&mut a, "four\\");
    key(&mut a, KeyCode::Enter);
    typed(&mut a, "five");
    assert_eq!(a.editor.text(), "one\ntwo\nthree\nfour\nfive");
    key(&mut a, KeyCode::Enter);
    assert_eq!(turn_text(&jobs(&mut a)[0]), "one\ntwo\nthree\nfour\nfive");
    a.on_reply(Reply::TurnDone);
    a.submit_text("last");
    a.on_reply(Reply::TurnDone);
    // Up recalls; in a multi-line entry Up first moves between its lines.
    key(&mut a, KeyCode::Up);
    assert_eq!(a.editor.text(), "last");
    key(&mut a, KeyCode::Up);
    assert_eq!(a.editor.text(), "one\ntwo\nthree\nfour\nfive");
    key(&mut a, KeyCode::Up);
    assert_eq!(
        a.editor.text(),
        "one\ntwo\nthree\nfour\nfive",
        "moved up a line, not in history"
    );
    key(&mut a, KeyCode::Down);
    assert_eq!(a.editor.text(), "one\ntwo\nthree\nfour\nfive", "moved down a line");
    key(&mut a, KeyCode::Down);
    assert_eq!(a.editor.text(), "last");
    key(&mut a, KeyCode::Down);
    assert_eq!(a.editor.text(), "");
}

#[test]
fn large_paste_is_collapsed_and_sent_whole() {
    let mut a = app();
    typed(&mut a, "summarise ");
    let log: String = (0..100).map(|i| format!("log line {i}\n")).collect();
    a.on_terminal_event(Event::Paste(log.clone()), Instant::now());
    assert_eq!(a.editor.text(), "summarise [Pasted text #1, 100 lines]");
    key(&mut a, KeyCode::Enter);
    assert_eq!(turn_text(&jobs(&mut a)[0]), format!("summarise {}", log.trim_end()));
    assert!(matches!(a.transcript.get(0), Some(CellKind::User { text }) if text.contains("[Pasted text #1")));
}

#[test]
fn slash_completion_and_commands() {
    let mut a = app();
    typed(&mut a, "/he");
    assert_eq!(a.completion.as_ref().unwrap().items[0].label, "/help");
    key(&mut a, KeyCode::Enter);
    // Enter on a command completion runs it; /help needs no engine.
    assert!(jobs(&mut a).is_empty());
    assert!(matches!(a.transcript.get(0), Some(CellKind::Info { title, .. }) if title == "Help"));
    // Engine commands are jobs; while busy they wait their turn.
    a.submit_text("work");
    jobs(&mut a);
    a.submit_text("/clear");
    a.submit_text("/cost");
    assert!(jobs(&mut a).is_empty());
    assert!(matches!(a.transcript.cells().last(), Some(CellKind::Info { title, .. }) if title == "Cost"));
    a.on_reply(Reply::TurnDone);
    assert!(matches!(jobs(&mut a)[..], [Job::Clear]));
    // Unknown commands and bad arguments say so and send nothing.
    a.on_reply(Reply::Failed("x".into()));
    a.submit_text("/nope");
    a.submit_text("/todos please");
    assert!(jobs(&mut a).is_empty());
    let errors: Vec<String> = a
        .transcript
        .cells()
        .filter_map(|c| match c {
            CellKind::Notice { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(errors.iter().any(|e| e.contains("unknown command /nope")), "{errors:?}");
    assert!(errors.iter().any(|e| e.contains("takes no arguments")), "{errors:?}");
    a.submit_text("/exit");
    assert_eq!(a.exit, Some(ExitReason::User));
}

#[test]
fn model_lists_the_configured_models_and_switching_is_a_job() {
    let mut a = app();
    a.status.model_choices = vec!["claude-sonnet-4-5".into(), "ollama/qwen3-coder".into()];
    a.submit_text("/model");
    assert!(jobs(&mut a).is_empty());
    let p = a.picker.take().expect("model picker");
    assert_eq!(p.items[0].label, "claude-sonnet-4-5");
    assert!(p.items[0].detail.starts_with("current"), "{:?}", p.items[0]);
    assert_eq!(p.items[1].label, "ollama/qwen3-coder");
    a.submit_text("/model ollama/qwen3-coder");
    assert!(matches!(&jobs(&mut a)[..], [Job::SetModel { model }] if model == "ollama/qwen3-coder"));
    a.on_reply(Reply::ModelSet {
        model: "ollama/qwen3-coder".into(),
        notes: vec!["Saved as the default model in /x/settings.json.".into()],
    });
    assert_eq!(a.status.model, "ollama/qwen3-coder");
    assert_eq!(a.status.context_window, 262_144);
}

#[test]
fn custom_commands_and_skills_complete_and_go_to_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(cwd.join(".claude/commands")).unwrap();
    std::fs::write(
        cwd.join(".claude/commands/review.md"),
        "---\ndescription: Review a file\n---\nReview $ARGUMENTS for bugs.\n",
    )
    .unwrap();
    let catalog = crate::skills::Catalog::discover(&crate::skills::Places {
        cwd: &cwd,
        user_home: None,
        keel_home: None,
        add_dirs: &[],
        plugins: &[],
        reserved: &crate::commands::reserved_names(),
    });
    let a = app_in(cwd.clone());
    let mut a = crate::tui::app::App::new(crate::tui::app::AppInit {
        cwd: cwd.clone(),
        model: "claude-sonnet-4-5".into(),
        session_id: "s".into(),
        shared: a.shared.clone(),
        bypass_available: false,
        harness: crate::engine::harness::Harness {
            skills: std::sync::Arc::new(catalog),
            ..Default::default()
        },
        project_dir: cwd.join("p"),
    });
    typed(&mut a, "/rev");
    assert_eq!(a.completion.as_ref().unwrap().items[0].label, "/review");
    key(&mut a, KeyCode::Tab);
    typed(&mut a, "src/a.rs");
    key(&mut a, KeyCode::Enter);
    // The engine task expands it (its shell snippets need the permission check).
    assert!(matches!(&jobs(&mut a)[..], [Job::Slash { name, args, .. }] if name == "review" && args == "src/a.rs"));
    assert!(matches!(a.transcript.get(0), Some(CellKind::User { text }) if text == "/review src/a.rs"));
    // `# note` goes to memory, after the running turn; `/tasks` and `/agents` answer at once.
    a.submit_text("# prefer small commits");
    assert!(jobs(&mut a).is_empty(), "queued while the turn runs");
    a.on_reply(Reply::TurnDone);
    assert!(matches!(&jobs(&mut a)[..], [Job::Remember { note }] if note == "prefer small commits"));
    a.on_reply(Reply::Notice(crate::engine::NoticeLevel::Info, "Saved".into()));
    assert!(a.busy.is_none());
    a.submit_text("/tasks");
    a.submit_text("/agents");
    let infos: Vec<String> = a
        .transcript
        .cells()
        .filter_map(|c| match c {
            CellKind::Info { title, markdown } => Some(format!("{title}: {markdown}")),
            _ => None,
        })
        .collect();
    assert!(
        infos.iter().any(|i| i.starts_with("Tasks: No background tasks")),
        "{infos:?}"
    );
    assert!(
        infos
            .iter()
            .any(|i| i.starts_with("Agents:") && i.contains("`verifier`")),
        "{infos:?}"
    );
}

#[test]
fn shell_lines_become_shell_jobs() {
    let mut a = app();
    typed(&mut a, "!git status");
    key(&mut a, KeyCode::Enter);
    assert!(matches!(&jobs(&mut a)[..], [Job::Shell { command, .. }] if command == "git status"));
    assert!(matches!(a.transcript.get(0), Some(CellKind::Shell(s)) if s.running));
}

#[test]
fn scrolling_and_toggles() {
    let mut a = app();
    for i in 0..200 {
        a.notice(crate::engine::NoticeLevel::Info, format!("line {i}"));
    }
    let before = super::text(&mut a, 60, 20);
    assert!(before.contains("line 199"));
    key(&mut a, KeyCode::PageUp);
    let up = super::text(&mut a, 60, 20);
    assert!(!up.contains("line 199"), "{up}");
    assert!(up.contains("more below"));
    key(&mut a, KeyCode::PageDown);
    assert!(super::text(&mut a, 60, 20).contains("line 199"));
    a.on_terminal_event(
        Event::Mouse(crossterm::event::MouseEvent {
            kind: crossterm::event::MouseEventKind::ScrollUp,
            column: 0,
            row: 0,
            modifiers: KeyModifiers::NONE,
        }),
        Instant::now(),
    );
    assert!(!a.transcript.is_following());
    ctrl(&mut a, 't');
    assert!(a.show_todos);
    ctrl(&mut a, 'o');
    assert!(a.transcript.expand_all);
}

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
        content: crate::message::ToolResultContent::Text("built".into()),
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
    });
    assert!(
        a.transcript
            .cells()
            .all(|c| !matches!(c, CellKind::Assistant { text, .. } if !text.is_empty()))
    );
}

#[test]
fn resume_opens_a_searchable_picker_of_earlier_sessions() {
    use crate::message::ContentBlock;
    use crate::tui::sessions::{self, SessionPlace};
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let mut a = app_in(cwd.clone());
    let place = SessionPlace {
        cwd: cwd.clone(),
        project_dir: cwd.join(".keel-projects"),
        persist: true,
    };
    // The list is read by the engine task.
    a.submit_text("/resume");
    let (project_dir, exclude) = match &jobs(&mut a)[..] {
        [Job::ListSessions { project_dir, exclude }] => (project_dir.clone(), exclude.clone()),
        other => panic!("{other:?}"),
    };
    a.on_reply(Reply::Sessions(sessions::list(&project_dir, &exclude)));
    assert!(a.picker.is_none(), "no sessions yet");
    let mut ids = Vec::new();
    for prompt in ["older question about dates", "newer question about parsing"] {
        let mut s = sessions::fresh(&place, "m").unwrap();
        s.push_user(vec![ContentBlock::text(prompt)]);
        ids.push(s.id.clone());
        std::thread::sleep(Duration::from_millis(20));
    }
    a.submit_text("/resume");
    jobs(&mut a);
    a.on_reply(Reply::Sessions(sessions::list(&project_dir, &exclude)));
    let p = a.picker.as_ref().expect("picker open");
    assert_eq!(p.items[0].label, "newer question about parsing");
    assert!(p.items[0].detail.contains("1 messages"), "{:?}", p.items[0]);
    let screen = super::text(&mut a, 90, 20);
    assert!(
        screen.contains("Resume a session") && screen.contains("Search:"),
        "{screen}"
    );
    // Typing searches: only the older session matches.
    typed(&mut a, "dates");
    assert_eq!(a.picker.as_ref().unwrap().shown, vec![1]);
    key(&mut a, KeyCode::Enter);
    match &jobs(&mut a)[..] {
        [Job::Resume { path }] => assert!(path.ends_with(format!("{}.jsonl", ids[0]))),
        other => panic!("{other:?}"),
    }
    // By id, without the picker.
    a.on_reply(Reply::Failed("x".into()));
    a.submit_text(&format!("/resume {}", ids[1]));
    assert!(matches!(&jobs(&mut a)[..], [Job::Resume { path }] if path.ends_with(format!("{}.jsonl", ids[1]))));
    a.on_reply(Reply::Failed("x".into()));
    a.submit_text("/resume no-such-id");
    assert!(jobs(&mut a).is_empty());
}

#[test]
fn esc_esc_opens_rewind_and_the_prompt_comes_back_to_the_editor() {
    use crate::checkpoint::{Point, PointKind};
    use crate::tui::integration::Rewound;
    let mut a = app();
    let t0 = Instant::now();
    a.on_key(KeyEvent::from(KeyCode::Esc), t0);
    assert!(jobs(&mut a).is_empty(), "one Esc does nothing");
    a.on_key(KeyEvent::from(KeyCode::Esc), t0 + Duration::from_millis(300));
    assert!(matches!(&jobs(&mut a)[..], [Job::Rewind { arg: None }]));
    let point = |n: u32, text: &str| Point {
        point: n,
        kind: PointKind::Prompt,
        text: text.into(),
        at: String::new(),
        files_changed: 1,
        not_restorable: 0,
    };
    a.on_reply(Reply::Rewound(Ok(Rewound {
        text: String::new(),
        history: None,
        points: Some(vec![point(1, "add a flag"), point(2, "write the tests")]),
        prompt: None,
    })));
    let p = a.picker.as_ref().expect("points picker");
    assert_eq!(p.items[0].label, "write the tests", "newest first");
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Enter);
    let p = a.picker.as_ref().expect("what to restore");
    assert_eq!(
        p.kind,
        crate::tui::app::PickerKind::RewindWhat {
            point: 1,
            prompt: "add a flag".into()
        }
    );
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Enter);
    assert!(matches!(&jobs(&mut a)[..], [Job::Rewind { arg: Some(arg) }] if arg == "1 conversation"));
    a.on_reply(Reply::Rewound(Ok(Rewound {
        text: "Rewound to before point 1.".into(),
        history: Some(Vec::new()),
        points: None,
        prompt: Some("add a flag".into()),
    })));
    assert_eq!(a.editor.text(), "add a flag");
}

#[test]
fn model_picker_switches_to_a_listed_or_typed_model() {
    let mut a = app();
    // What the catalog lists for an Anthropic session (set by the front end at start).
    a.status.model_choices = ["sonnet", "opus", "haiku"]
        .map(crate::config::models::resolve_alias)
        .to_vec();
    a.submit_text("/model");
    let p = a.picker.as_ref().expect("model picker");
    assert_eq!(p.items[0].label, "claude-sonnet-4-5");
    assert!(p.items[0].detail.starts_with("current"));
    typed(&mut a, "opus");
    key(&mut a, KeyCode::Enter);
    assert!(matches!(&jobs(&mut a)[..], [Job::SetModel { model }] if model == "claude-opus-4-5"));
    a.on_reply(Reply::Failed("x".into()));
    a.submit_text("/model");
    typed(&mut a, "my-local-model");
    assert!(a.picker.as_ref().unwrap().shown.is_empty());
    key(&mut a, KeyCode::Enter);
    assert!(matches!(&jobs(&mut a)[..], [Job::SetModel { model }] if model == "my-local-model"));
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
        content: crate::message::ToolResultContent::Text("Task list updated: 2 items".into()),
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
        message: crate::message::Message::assistant(vec![crate::message::ContentBlock::text(
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

#[test]
fn ctrl_r_searches_the_history_and_up_recalls_queued_prompts() {
    let mut a = app();
    a.editor.set_history(vec![
        "cargo build".into(),
        "git status".into(),
        "cargo test --all".into(),
    ]);
    typed(&mut a, "draft");
    ctrl(&mut a, 'r');
    typed(&mut a, "cargo");
    assert_eq!(a.search_preview(), Some(("cargo", "cargo test --all")));
    let screen = super::text(&mut a, 60, 16);
    assert!(
        screen.contains("search history: cargo") && screen.contains("cargo test --all"),
        "{screen}"
    );
    ctrl(&mut a, 'r');
    assert_eq!(a.search_preview(), Some(("cargo", "cargo build")));
    // Esc gives the draft back; Enter takes the match into the prompt (it is not sent).
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.editor.text(), "draft");
    ctrl(&mut a, 'r');
    typed(&mut a, "stat");
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.editor.text(), "git status");
    assert!(jobs(&mut a).is_empty());
    // Submitted prompts go to the history file.
    key(&mut a, KeyCode::Enter);
    let effects = a.take_effects();
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::RememberPrompt(t) if t == "git status")),
        "{effects:?}"
    );
    // Up on an empty prompt takes back the last queued prompt.
    a.submit_text("second");
    a.submit_text("third");
    assert_eq!(a.queue.len(), 2);
    key(&mut a, KeyCode::Up);
    assert_eq!(a.editor.text(), "third");
    assert_eq!(a.queue.len(), 1);
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.queue.len(), 2);
    // Ctrl+G hands the prompt to the editor.
    typed(&mut a, "long prompt");
    ctrl(&mut a, 'g');
    assert!(
        a.take_effects()
            .iter()
            .any(|e| matches!(e, Effect::EditPrompt(t) if t == "long prompt"))
    );
    a.set_prompt("edited\nin vi");
    assert_eq!(a.editor.text(), "edited\nin vi");
}

#[test]
fn esc_esc_on_an_empty_idle_prompt_lists_the_rewind_points() {
    let mut a = app();
    key(&mut a, KeyCode::Esc);
    assert!(jobs(&mut a).is_empty(), "one Esc does nothing");
    key(&mut a, KeyCode::Esc);
    assert!(matches!(jobs(&mut a)[..], [Job::Rewind { arg: None }]));
    // Not with text in the editor, and not when another key came in between.
    typed(&mut a, "x");
    key(&mut a, KeyCode::Esc);
    key(&mut a, KeyCode::Esc);
    assert!(jobs(&mut a).is_empty());
    key(&mut a, KeyCode::Backspace);
    key(&mut a, KeyCode::Esc);
    key(&mut a, KeyCode::Left);
    key(&mut a, KeyCode::Esc);
    assert!(jobs(&mut a).is_empty());
    // Too slow: the first press has expired.
    let t0 = Instant::now();
    a.on_key(KeyEvent::from(KeyCode::Esc), t0);
    a.on_key(KeyEvent::from(KeyCode::Esc), t0 + Duration::from_secs(5));
    assert!(jobs(&mut a).is_empty());
}

#[test]
fn model_picker_lists_only_what_the_session_can_serve() {
    let mut a = app();
    // An OpenAI session's catalog: no Claude model may be offered to an OpenAI endpoint.
    a.status.model = "gpt-4.1".into();
    a.status.model_choices = vec!["gpt-4.1".into(), "local/qwen3-coder".into()];
    a.submit_text("/model");
    let labels: Vec<String> = a
        .picker
        .as_ref()
        .expect("model picker")
        .items
        .iter()
        .map(|i| i.label.clone())
        .collect();
    assert_eq!(labels, ["gpt-4.1", "local/qwen3-coder"]);
}
