//! Pickers: sessions to resume, rewind points, models.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent};

use super::keys::{jobs, key, typed};
use crate::tui::app::test_support::{app, app_in};
use crate::tui::worker::{Job, Reply};

#[test]
fn resume_opens_a_searchable_picker_of_earlier_sessions() {
    use crate::tui::sessions::{self, SessionPlace};
    use crate::types::message::ContentBlock;
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
        let mut s = sessions::fresh(&place, "m", None).unwrap();
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
    assert!(matches!(&jobs(&mut a)[..], [Job::SetModel { model }] if model == "claude-opus-5-5"));
    a.on_reply(Reply::Failed("x".into()));
    a.submit_text("/model");
    typed(&mut a, "my-local-model");
    assert!(a.picker.as_ref().unwrap().shown.is_empty());
    key(&mut a, KeyCode::Enter);
    assert!(matches!(&jobs(&mut a)[..], [Job::SetModel { model }] if model == "my-local-model"));
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
