//! The engine task with a real engine (script provider, real tools, real files).

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::engine::{EngineConfig, EngineEvent, Session};
use crate::provider::script::ScriptProvider;
use crate::tools::builtin_tools;
use crate::tools::registry::ToolRegistry;
use crate::transcript::Transcript;
use crate::tui::sessions::SessionPlace;
use crate::tui::worker::{self, Job, Reply, WorkerConfig};
use crate::types::message::ContentBlock;

struct Harness {
    jobs: mpsc::UnboundedSender<Job>,
    replies: mpsc::UnboundedReceiver<Reply>,
    events: mpsc::UnboundedReceiver<EngineEvent>,
    _dir: tempfile::TempDir,
    cwd: std::path::PathBuf,
}

fn start(script: &str) -> Harness {
    start_in_mode(script, crate::permissions::Mode::Default)
}

fn start_in_mode(script: &str, mode: crate::permissions::Mode) -> Harness {
    start_with(script, mode, None, |_| {})
}

/// [`start_in_mode`] with a model switch and the engine prepared by `prepare` before the task
/// takes it.
fn start_with(
    script: &str,
    mode: crate::permissions::Mode,
    models: Option<worker::ModelSwitch>,
    prepare: impl FnOnce(&mut crate::engine::Engine),
) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::write(cwd.join("notes.txt"), "remember the milk\n").unwrap();
    let provider = Arc::new(ScriptProvider::parse(script).unwrap());
    let registry = Arc::new(ToolRegistry::new(builtin_tools()).unwrap());
    let project = cwd.join(".home/projects/p");
    let session = Session::new(
        "first".into(),
        cwd.clone(),
        project.join("first"),
        Transcript::create(&project.join("first.jsonl")).unwrap(),
    );
    session.services.set_mode(mode);
    let config = EngineConfig {
        model: "claude-sonnet-4-5".into(),
        max_tokens: 1000,
        max_turns: None,
        system: Vec::new(),
        interactive: true,
        context_window: None,
        compact: Default::default(),
        ..Default::default()
    };
    let (mut engine, events) = crate::engine::Engine::basic(config, provider, registry, session);
    prepare(&mut engine);
    let (jobs, job_rx) = mpsc::unbounded_channel();
    let (reply_tx, replies) = mpsc::unbounded_channel();
    tokio::spawn(worker::run(
        engine,
        job_rx,
        reply_tx,
        WorkerConfig {
            place: SessionPlace {
                cwd: cwd.clone(),
                project_dir: project,
                persist: true,
            },
            system_prompt: None,
            append_system_prompt: None,
            resumed: false,
            models,
        },
    ));
    Harness {
        jobs,
        replies,
        events,
        _dir: dir,
        cwd,
    }
}

impl Harness {
    /// The next reply that ends a job (the totals sent before each are checked and skipped).
    async fn reply(&mut self) -> Reply {
        match self.replies.recv().await.unwrap() {
            Reply::Totals(_) => self.replies.recv().await.unwrap(),
            other => panic!("the engine's totals come before each reply, got {other:?}"),
        }
    }
}

fn drain(events: &mut mpsc::UnboundedReceiver<EngineEvent>) -> Vec<EngineEvent> {
    let mut out = Vec::new();
    while let Ok(e) = events.try_recv() {
        out.push(e);
    }
    out
}

#[tokio::test]
async fn turns_attach_mentions_and_shell_output_joins_the_next_prompt() {
    let mut h = start(r#"{"turns": [{"text": "Noted."}, {"text": "Done."}]}"#);
    h.jobs
        .send(Job::Shell {
            command: "echo from-the-shell".into(),
            cancel: CancellationToken::new(),
        })
        .unwrap();
    match h.reply().await {
        Reply::ShellDone(r) => assert_eq!(r.output, "from-the-shell\n"),
        other => panic!("{other:?}"),
    }
    h.jobs
        .send(Job::Turn {
            text: "read @notes.txt".into(),
            cancel: CancellationToken::new(),
        })
        .unwrap();
    assert!(matches!(h.reply().await, Reply::TurnDone));
    let evs = drain(&mut h.events);
    assert!(
        evs.iter()
            .any(|e| matches!(e, EngineEvent::TurnFinished(o) if !o.is_error))
    );
    // The transcript holds one user message: shell context, prompt, attachment.
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(h.cwd.join(".home/projects/p/first.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let user_texts: Vec<String> = lines
        .iter()
        .filter(|l| l["type"] == "user")
        .flat_map(|l| l["message"]["content"].as_array().unwrap().clone())
        .filter_map(|b| b["text"].as_str().map(str::to_string))
        .collect();
    assert!(
        user_texts[0].contains("<bash-stdout>from-the-shell</bash-stdout>"),
        "{user_texts:?}"
    );
    assert_eq!(user_texts[1], "read @notes.txt");
    assert!(user_texts[2].contains("remember the milk"), "{user_texts:?}");
}

#[tokio::test]
async fn clear_starts_a_new_session_and_keeps_the_mode() {
    let mut h = start(r#"{"turns": [{"text": "Hi."}]}"#);
    h.jobs
        .send(Job::Turn {
            text: "hello".into(),
            cancel: CancellationToken::new(),
        })
        .unwrap();
    h.reply().await;
    h.jobs.send(Job::SetModel { model: "opus".into() }).unwrap();
    assert!(matches!(h.reply().await, Reply::ModelSet { model, .. } if model == "claude-opus-5-5"));
    h.jobs.send(Job::Clear).unwrap();
    let s = match h.reply().await {
        Reply::Session(s) => s,
        other => panic!("{other:?}"),
    };
    assert_ne!(s.id, "first");
    assert!(s.history.is_empty());
    assert!(h.cwd.join(format!(".home/projects/p/{}.jsonl", s.id)).is_file());
    // Resume the first session by path.
    h.jobs
        .send(Job::Resume {
            path: h.cwd.join(".home/projects/p/first.jsonl"),
        })
        .unwrap();
    match h.reply().await {
        Reply::Session(r) => {
            assert_eq!(r.id, "first");
            assert_eq!(r.history.len(), 2);
            assert!(matches!(&r.history[0].content[0], ContentBlock::Text { text, .. } if text == "hello"));
        }
        other => panic!("{other:?}"),
    }
}

/// `agents.maxTotal` counts per session: `/clear` starts a new one with a fresh budget.
#[tokio::test]
async fn clear_gives_the_new_session_its_own_spawn_budget() {
    let agent = r#"{"tool_calls": [{"name": "Agent", "input": {"description": "look", "prompt": "Look"}}]}"#;
    let script = format!(
        r#"{{"turns": [{agent}, {{"text": "child one"}}, {{"text": "done one"}}, {agent}, {{"text": "child two"}}, {{"text": "done two"}}]}}"#
    );
    let mut h = start_with(&script, crate::permissions::Mode::Default, None, |engine| {
        engine.harness.limits.max_total = 1;
        engine.install_subagents().unwrap();
    });
    let turn = |text: &str| Job::Turn {
        text: text.into(),
        cancel: CancellationToken::new(),
    };
    h.jobs.send(turn("first")).unwrap();
    assert!(matches!(h.reply().await, Reply::TurnDone));
    h.jobs.send(Job::Clear).unwrap();
    let s = match h.reply().await {
        Reply::Session(s) => s,
        other => panic!("{other:?}"),
    };
    h.jobs.send(turn("second")).unwrap();
    assert!(matches!(h.reply().await, Reply::TurnDone));
    let transcript = std::fs::read_to_string(h.cwd.join(format!(".home/projects/p/{}.jsonl", s.id))).unwrap();
    assert!(transcript.contains("done two"), "{transcript}");
    assert!(!transcript.contains("agents.maxTotal"), "{transcript}");
}

#[tokio::test]
async fn permission_and_hook_commands_report_the_engine_state() {
    let mut h = start(r#"{"turns": [{"text": "x"}]}"#);
    h.jobs.send(Job::Hooks).unwrap();
    assert!(matches!(h.reply().await, Reply::Hooks(Ok(v)) if v.is_empty()));
    h.jobs.send(Job::Permissions).unwrap();
    match h.reply().await {
        Reply::Permissions(Ok(r)) => {
            assert!(r.rule_sets.is_empty());
            assert!(r.additional_directories.is_empty());
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn model_switches_provider_and_saves_the_choice() {
    use crate::config::settings::{Layer, Scope, Settings};
    use crate::provider::catalog::{Catalog, Kind};
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 9 of loopback: a request that reaches this provider is refused.
    let settings = Settings {
        layers: vec![Layer {
            scope: Scope::User,
            path: None,
            base_dir: dir.path().to_path_buf(),
            value: serde_json::json!({"providers": {
                "local": {"type": "openai", "baseUrl": "http://127.0.0.1:9/v1"},
                "keyless": {"type": "openai", "baseUrl": "http://127.0.0.1:9/v1", "apiKeyEnv": "KEEL_TEST_NEVER_SET_7"}
            }}),
        }],
    };
    let catalog = Catalog::new(
        &settings,
        Kind::Anthropic,
        crate::provider::retry::RetryPolicy::default(),
        crate::provider::http::Timeouts::default(),
        false,
    )
    .unwrap();
    let settings_path = dir.path().join("keel/settings.json");
    let mut h = start_with(
        r#"{"turns": [{"text": "from the script"}]}"#,
        crate::permissions::Mode::Default,
        Some(worker::ModelSwitch {
            catalog: Arc::new(catalog),
            fallback: None,
            settings_path: settings_path.clone(),
        }),
        |_| {},
    );
    h.jobs
        .send(Job::SetModel {
            model: "local/gpt-4o".into(),
        })
        .unwrap();
    match h.reply().await {
        Reply::ModelSet { model, notes } => {
            assert_eq!(model, "local/gpt-4o");
            assert!(notes.iter().any(|n| n.contains("Saved as the default")), "{notes:?}");
        }
        other => panic!("{other:?}"),
    }
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&settings_path).unwrap()).unwrap();
    assert_eq!(saved["model"], "local/gpt-4o");
    // The next turn goes to the new provider (refused there), not to the script.
    h.jobs
        .send(Job::Turn {
            text: "hello".into(),
            cancel: CancellationToken::new(),
        })
        .unwrap();
    assert!(matches!(h.reply().await, Reply::TurnDone));
    let outcome = drain(&mut h.events)
        .into_iter()
        .find_map(|e| match e {
            EngineEvent::TurnFinished(o) => Some(o),
            _ => None,
        })
        .unwrap();
    assert!(
        outcome.is_error && outcome.result.contains("connection refused"),
        "{}",
        outcome.result
    );
    // A provider that cannot be built leaves everything as it was.
    h.jobs
        .send(Job::SetModel {
            model: "keyless/m".into(),
        })
        .unwrap();
    match h.reply().await {
        Reply::Failed(e) => assert!(e.contains("KEEL_TEST_NEVER_SET_7"), "{e}"),
        other => panic!("{other:?}"),
    }
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&settings_path).unwrap()).unwrap();
    assert_eq!(saved["model"], "local/gpt-4o");
}

#[tokio::test]
async fn rewind_lists_points_and_restores_files_and_conversation() {
    // The engine is interactive with no front end answering, so the Write runs in bypass mode.
    let mut h = start_in_mode(
        r#"{"turns": [{"text": "One."},
                      {"tool_calls": [{"name": "Write", "input": {"file_path": "made.txt", "content": "new\n"}}]},
                      {"text": "Two."}]}"#,
        crate::permissions::Mode::BypassPermissions,
    );
    h.jobs.send(Job::Rewind { arg: None }).unwrap();
    match h.reply().await {
        Reply::Rewound(Ok(r)) => assert!(r.text.contains("Nothing to rewind yet"), "{}", r.text),
        other => panic!("{other:?}"),
    }
    for text in ["first", "second"] {
        h.jobs
            .send(Job::Turn {
                text: text.into(),
                cancel: CancellationToken::new(),
            })
            .unwrap();
        assert!(matches!(h.reply().await, Reply::TurnDone));
    }
    drain(&mut h.events);
    assert!(h.cwd.join("made.txt").is_file(), "the second prompt wrote the file");
    h.jobs.send(Job::Rewind { arg: None }).unwrap();
    match h.reply().await {
        Reply::Rewound(Ok(r)) => {
            assert!(
                r.text.contains("1  prompt  1 file(s) changed since  first"),
                "{}",
                r.text
            );
            assert!(
                r.text.contains("2  prompt  1 file(s) changed since  second"),
                "{}",
                r.text
            );
        }
        other => panic!("{other:?}"),
    }
    h.jobs
        .send(Job::Rewind {
            arg: Some("2 preview".into()),
        })
        .unwrap();
    match h.reply().await {
        Reply::Rewound(Ok(r)) => {
            assert!(r.text.contains("restore ") && r.text.contains("made.txt"), "{}", r.text);
            assert!(r.history.is_none());
        }
        other => panic!("{other:?}"),
    }
    assert!(h.cwd.join("made.txt").is_file(), "a preview changes nothing");
    h.jobs.send(Job::Rewind { arg: Some("2".into()) }).unwrap();
    match h.reply().await {
        Reply::Rewound(Ok(r)) => {
            assert!(r.text.contains("1 file(s) restored"), "{}", r.text);
            let history = r.history.expect("the conversation was rewound");
            assert_eq!(history.len(), 2, "first prompt and its answer: {history:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(!h.cwd.join("made.txt").exists());
    h.jobs
        .send(Job::Rewind {
            arg: Some("9 code".into()),
        })
        .unwrap();
    match h.reply().await {
        Reply::Rewound(Err(e)) => assert!(e.contains("no point 9"), "{e}"),
        other => panic!("{other:?}"),
    }
}
