//! Key handling: submission, queueing, interruption, exit, modes, editing (approvals and pickers
//! have their own files).

use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

use crate::permissions::Mode;
use crate::tui::app::test_support::{app, app_in};
use crate::tui::app::{App, Effect, ExitReason};
use crate::tui::transcript::CellKind;
use crate::tui::worker::{Job, Reply};

pub(super) fn key(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::from(code), Instant::now());
}

pub(super) fn ctrl(app: &mut App, c: char) {
    app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL), Instant::now());
}

pub(super) fn typed(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

/// The jobs the app asked for, in order.
pub(super) fn jobs(app: &mut App) -> Vec<Job> {
    app.take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::Job(j) => Some(j),
            _ => None,
        })
        .collect()
}

pub(super) fn turn_text(job: &Job) -> &str {
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
        plugin_skills: &[],
        reserved: &crate::commands::reserved_names(),
    });
    let a = app_in(cwd.clone());
    let mut a = crate::tui::app::App::new(crate::tui::app::AppInit {
        cwd: cwd.clone(),
        model: "claude-sonnet-4-5".into(),
        session_id: "s".into(),
        shared: a.shared.clone(),
        bypass_available: false,
        mode_ceiling: None,
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
