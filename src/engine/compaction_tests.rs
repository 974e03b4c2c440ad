//! The engine's compaction paths end to end in process: real tools on a real directory, a
//! model that answers from a script and recognises summary requests.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::compact::autocompact::summary::INSTRUCTION_LEAD;
use crate::context::{Gather, ProjectContext};
use crate::engine::{Engine, EngineConfig, Session};
use crate::provider::{Provider, ProviderStream};
use crate::tools::registry::ToolRegistry;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use crate::transcript::Transcript;
use crate::types::message::{Message, StopReason, Usage};

/// A scripted model: tool-calling turns in order; summary requests get `summary`; `refuse`
/// errors are returned (once each) to the next non-summary requests.
struct Model {
    turns: Mutex<VecDeque<Vec<ContentBlock>>>,
    summary: String,
    requests: Mutex<Vec<ModelRequest>>,
    refuse: Mutex<Vec<ProviderError>>,
}

impl Model {
    fn new(turns: Vec<Vec<ContentBlock>>, summary: &str) -> Arc<Self> {
        Arc::new(Model {
            turns: Mutex::new(turns.into()),
            summary: summary.to_string(),
            requests: Mutex::new(Vec::new()),
            refuse: Mutex::new(Vec::new()),
        })
    }

    fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }
}

fn is_summary(r: &ModelRequest) -> bool {
    r.messages.last().is_some_and(|m| m.text().contains(INSTRUCTION_LEAD))
}

/// The size the "API" reports: four bytes of request body per token.
fn body_tokens(r: &ModelRequest) -> u64 {
    crate::provider::anthropic::wire_body(r).unwrap().len() as u64 / 4
}

impl Provider for Model {
    fn name(&self) -> &str {
        "test-model"
    }

    fn stream(&self, request: ModelRequest, _cancel: CancellationToken) -> ProviderStream {
        let input_tokens = body_tokens(&request);
        if !is_summary(&request)
            && let Some(e) = self.refuse.lock().unwrap().pop()
        {
            self.requests.lock().unwrap().push(request);
            return Box::pin(futures_util::stream::iter(vec![Err(e)]));
        }
        let content = if is_summary(&request) {
            vec![ContentBlock::text(self.summary.clone())]
        } else {
            self.turns
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| vec![ContentBlock::text("done")])
        };
        self.requests.lock().unwrap().push(request);
        let stop_reason = if content.iter().any(|b| matches!(b, ContentBlock::ToolUse { .. })) {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        };
        let response = ModelResponse {
            id: "msg".into(),
            model: "claude-sonnet-4-5".into(),
            content,
            stop_reason,
            usage: Usage {
                input_tokens,
                output_tokens: 10,
                ..Usage::default()
            },
            broken_tool_calls: Vec::new(),
        };
        Box::pin(futures_util::stream::iter(vec![Ok(ProviderEvent::Completed(response))]))
    }
}

/// A minimal file edit for these tests (the real Edit tool lives in `tools/`).
struct Replace;

#[async_trait]
impl Tool for Replace {
    fn name(&self) -> &'static str {
        "Edit"
    }
    /// It edits the file its input names, as the real Edit declares.
    fn declared(&self) -> crate::tools::Declared {
        crate::tools::kinds::builtin("Edit")
            .map(|t| t.declared())
            .unwrap_or_default()
    }
    fn description(&self) -> &'static str {
        "test edit"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"file_path": {"type": "string"}, "old_string": {"type": "string"}, "new_string": {"type": "string"}}, "required": ["file_path", "old_string", "new_string"]})
    }
    async fn call(&self, input: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = input["file_path"].as_str().unwrap_or_default();
        let text = std::fs::read_to_string(path).map_err(|e| ToolError::io("read", e))?;
        let old = input["old_string"].as_str().unwrap_or_default();
        if !text.contains(old) {
            return Err(ToolError::invalid(format!("old_string was not found in {path}")));
        }
        let new = text.replacen(old, input["new_string"].as_str().unwrap_or_default(), 1);
        std::fs::write(path, new).map_err(|e| ToolError::io("write", e))?;
        Ok(ToolOutput::text(format!("The file {path} has been updated.")))
    }
}

fn tool(id: &str, name: &str, input: Value) -> ContentBlock {
    ContentBlock::ToolUse {
        id: id.into(),
        name: name.into(),
        input,
    }
}

struct Setup {
    engine: Engine,
    events: tokio::sync::mpsc::UnboundedReceiver<EngineEvent>,
    _dir: tempfile::TempDir,
    cwd: std::path::PathBuf,
    transcript: std::path::PathBuf,
}

fn setup(model: Arc<Model>, window: Option<u64>, files: &[(&str, &str)]) -> Setup {
    setup_with(model, window, files, crate::compact::CompactSettings::default())
}

/// `settings.view_tiers = false` isolates tier 5 (tiers 2-4 would otherwise keep these small
/// sessions under the threshold on their own).
fn setup_with(
    model: Arc<Model>,
    window: Option<u64>,
    files: &[(&str, &str)],
    settings: crate::compact::CompactSettings,
) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("work");
    for (rel, text) in files {
        let p = cwd.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::create_dir_all(&cwd).unwrap();
    let cwd = cwd.canonicalize().unwrap();
    let session_dir = dir.path().join("session");
    let transcript = dir.path().join("session.jsonl");
    let session = Session::new(
        "s".into(),
        cwd.clone(),
        session_dir,
        Transcript::create(&transcript).unwrap(),
    );
    // The test's own `Edit` (no read-before-edit guard) stands in for the real one.
    let mut tools: Vec<Arc<dyn Tool>> = crate::tools::builtin_tools()
        .into_iter()
        .filter(|t| t.name() != "Edit")
        .collect();
    tools.push(Arc::new(Replace));
    let registry = Arc::new(ToolRegistry::new(tools).unwrap());
    let config = EngineConfig {
        model: "claude-sonnet-4-5".into(),
        max_tokens: 32_000,
        max_turns: None,
        system: Vec::new(),
        context_window: window,
        compact: settings,
        interactive: false,
        ..Default::default()
    };
    // The test's own edit tool is not read-only; these tests are about compaction, not approval.
    session.services.set_mode(crate::permissions::Mode::BypassPermissions);
    let (mut engine, events) = crate::engine::Engine::basic(config, model, registry, session);
    engine.set_project(ProjectContext::gather(&Gather {
        cwd: &cwd,
        model: "claude-sonnet-4-5",
        home: None,
        replace: None,
        append: None,
    }));
    Setup {
        engine,
        events,
        _dir: dir,
        cwd,
        transcript,
    }
}

fn drain(rx: &mut tokio::sync::mpsc::UnboundedReceiver<EngineEvent>) -> Vec<EngineEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

const LOG: &str = "running 3 tests\ntest parse::dates ... FAILED\ntest parse::ints ... ok\n\nthread 'parse::dates' panicked at src/parse.rs:9:5\ntest result: FAILED. 2 passed; 1 failed\n";

#[tokio::test]
async fn manual_compaction_writes_a_handoff_from_keels_record_and_remounts_hot_state() {
    let files = [
        ("src/parse.rs", "fn parse() -> u32 {\n    1\n}\n"),
        ("logs/test.log", LOG),
        ("CLAUDE.md", "Always run the tests."),
    ];
    let model = Model::new(Vec::new(), "");
    let mut s = setup(model.clone(), None, &files);
    let parse = s.cwd.join("src/parse.rs").display().to_string();
    let log = s.cwd.join("logs/test.log").display().to_string();
    let model = Arc::new(Model {
        turns: Mutex::new(
            vec![
                vec![
                    tool("g1", "Grep", json!({"pattern": "FAILED|panicked", "path": log, "output_mode": "content"})),
                    tool("r1", "Read", json!({"file_path": parse})),
                ],
                vec![tool("e1", "Edit", json!({"file_path": parse, "old_string": "    1", "new_string": "    2"}))],
                vec![ContentBlock::text("Changed parse to return 2.")],
            ]
            .into(),
        ),
        summary: "<analysis>thinking</analysis>\n## Decisions\nReturn 2 from parse.\n## Open verification items\nRe-run the tests.\n## Current work\nParser fix.\n## Next step\nRun cargo test.".into(),
        requests: Mutex::new(Vec::new()),
        refuse: Mutex::new(Vec::new()),
    });
    s.engine.provider = model.clone();
    let cancel = CancellationToken::new();
    let out = s
        .engine
        .run_turn(
            vec![ContentBlock::text("Fix parse so the dates test passes.")],
            cancel.clone(),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    let root = s._dir.path().canonicalize().unwrap().display().to_string();
    let replace = [(root.as_str(), "<tmp>")];
    let before = s.engine.session.history().to_vec();
    insta::assert_snapshot!("tier5_before", crate::compact::layout::messages(&before, &replace));
    let report = s
        .engine
        .compact(Some("keep the parser notes"), Trigger::Manual, &cancel)
        .await
        .unwrap();
    let after = s.engine.session.history().to_vec();
    let tokens = regex::Regex::new(r"about \d+ tokens").unwrap();
    let stable = |t: &str| {
        tokens
            .replace_all(&t.replace(&root, "<tmp>"), "about N tokens")
            .into_owned()
    };
    let mut shown = after.clone();
    for b in shown.iter_mut().flat_map(|m| m.content.iter_mut()) {
        if let ContentBlock::Text { text, .. } = b {
            *text = stable(text);
        }
    }
    insta::assert_snapshot!("tier5_after", crate::compact::layout::messages(&shown, &[]));
    let blocks: Vec<String> = after[0]
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(stable(text)),
            _ => None,
        })
        .collect();
    insta::assert_snapshot!("tier5_handoff", blocks.join("\n\n--- next block ---\n\n"));

    // The summary request: the conversation plus the instruction with the user's addition.
    let reqs = model.requests();
    let summary_req = reqs.last().unwrap();
    assert!(is_summary(summary_req));
    let instruction = summary_req.messages.last().unwrap().text();
    assert!(instruction.ends_with("keep the parser notes"), "{instruction}");
    assert_eq!(summary_req.system, reqs[0].system, "same stable prefix as the turns");

    // The new history: one user message with the hand-off and the hot state.
    let history = s.engine.session.history().to_vec();
    assert_eq!(history.len(), 1);
    let handoff = &report.handoff;
    assert_eq!(history[0].content.len(), 2);
    assert_eq!(
        history[0].text().split("## Hot state").next().unwrap(),
        handoff.as_str()
    );
    for needle in [
        "<user-request>\nFix parse so the dates test passes.\n</user-request>",
        "## Decisions\nReturn 2 from parse.",
        &format!("- {parse} — 1 change (Edit), last at step 2"),
        "## Open verification items and failed checks",
        "output shows failures",
        "output shows failures\n<untrusted-content source=\"Grep\">\n",
        "test parse::dates ... FAILED",
        "test result: FAILED. 2 passed; 1 failed",
        &format!("log: {log}"),
        "Open items from the summary:\nRe-run the tests.",
        "## Next step\nRun cargo test.",
    ] {
        assert!(handoff.contains(needle), "missing {needle:?} in:\n{handoff}");
    }
    assert!(!handoff.contains("thinking"), "the analysis scratchpad is dropped");
    let order: Vec<usize> = [
        "## User requests",
        "## Decisions",
        "## Files changed",
        "## Open verification items",
        "## Current work",
        "## Next step",
    ]
    .iter()
    .map(|h| handoff.find(h).unwrap())
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "sections in order: {order:?}");
    let hot = history[0].text();
    assert!(
        hot.contains("     2\t    2"),
        "the edited file, fresh from disk:\n{hot}"
    );

    // Read-file state: the re-mounted file is known in full, the rest only partially.
    let files = s.engine.session.services.files();
    assert!(files.get(Path::new(&parse)).unwrap().is_complete());
    drop(files);

    // The transcript records the boundary; resuming it yields the compacted history.
    let loaded = crate::transcript::load(&s.transcript).unwrap();
    assert_eq!(loaded.history, history);
    let events = drain(&mut s.events);
    assert!(events.iter().any(|e| matches!(e, EngineEvent::CompactStarted { trigger: Trigger::Manual, custom_instructions: Some(c) } if c == "keep the parser notes")));
    assert!(events.iter().any(|e| matches!(
        e,
        EngineEvent::Compacted {
            trigger: Trigger::Manual,
            ..
        }
    )));
    assert_eq!(s.engine.session.tool_log.entries().len(), 3);
}

#[tokio::test]
async fn autocompaction_keeps_requests_under_the_window_and_unanswered_results_verbatim() {
    let mut files: Vec<(String, String)> = Vec::new();
    for i in 0..12 {
        let body: String = (0..150)
            .map(|n| format!("file {i} line {n}: some content here\n"))
            .collect();
        files.push((format!("data/f{i}.txt"), body));
    }
    let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let window = 12_000;
    let placeholder = Model::new(Vec::new(), "");
    let only_tier5 = crate::compact::CompactSettings {
        view_tiers: false,
        ..Default::default()
    };
    let mut s = setup_with(placeholder, Some(window), &refs, only_tier5);
    let turns: Vec<Vec<ContentBlock>> = (0..12)
        .map(|i| {
            vec![tool(
                &format!("r{i}"),
                "Read",
                json!({"file_path": s.cwd.join(format!("data/f{i}.txt"))}),
            )]
        })
        .chain([vec![ContentBlock::text("Read them all.")]])
        .collect();
    let model = Model::new(
        turns,
        "## Decisions\nNone.\n## Open verification items\nNone.\n## Current work\nReading data files.\n## Next step\nRead the next file.",
    );
    s.engine.provider = model.clone();
    let out = s
        .engine
        .run_turn(
            vec![ContentBlock::text("Read every data file.")],
            CancellationToken::new(),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    let reqs = model.requests();
    let summaries: Vec<usize> = reqs
        .iter()
        .enumerate()
        .filter(|(_, r)| is_summary(r))
        .map(|(i, _)| i)
        .collect();
    assert!(!summaries.is_empty(), "the window forced at least one compaction");
    for (i, r) in reqs.iter().enumerate() {
        assert!(body_tokens(r) <= window, "request {i}: {} tokens", body_tokens(r));
    }
    // The request after a compaction opens with the hand-off, followed by the last call and its
    // result exactly as the tool returned it (the model had not seen it yet).
    let after = &reqs[summaries[0] + 1];
    assert!(
        after.messages[0]
            .text()
            .starts_with(crate::compact::autocompact::handoff::LEAD)
    );
    let mut pending = reqs[summaries[0]].messages.last().unwrap().clone();
    let instruction = pending.content.pop().unwrap();
    assert_eq!(
        instruction,
        ContentBlock::text(crate::compact::autocompact::summary::instruction(None))
    );
    assert_eq!(after.messages[2], pending);
    assert_eq!(after.messages[1].role, crate::types::message::Role::Assistant);
    let events = drain(&mut s.events);
    assert!(events.iter().any(|e| matches!(
        e,
        EngineEvent::Compacted {
            trigger: Trigger::Auto,
            ..
        }
    )));
}

#[tokio::test]
async fn breaker_stops_autocompaction_after_repeated_failures_and_says_so() {
    let mut files: Vec<(String, String)> = Vec::new();
    for i in 0..10 {
        let body: String = (0..150)
            .map(|n| format!("file {i} line {n}: some content here\n"))
            .collect();
        files.push((format!("f{i}.txt"), body));
    }
    let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let only_tier5 = crate::compact::CompactSettings {
        view_tiers: false,
        ..Default::default()
    };
    let mut s = setup_with(Model::new(Vec::new(), ""), Some(8_600), &refs, only_tier5);
    let turns: Vec<Vec<ContentBlock>> = (0..10)
        .map(|i| {
            vec![tool(
                &format!("r{i}"),
                "Read",
                json!({"file_path": s.cwd.join(format!("f{i}.txt"))}),
            )]
        })
        .chain([vec![ContentBlock::text("done")]])
        .collect();
    // The summariser answers with nothing: every compaction fails.
    let model = Model::new(turns, "   ");
    s.engine.provider = model.clone();
    s.engine
        .run_turn(vec![ContentBlock::text("read all")], CancellationToken::new())
        .await;
    let attempts = model.requests().iter().filter(|r| is_summary(r)).count();
    assert_eq!(attempts, crate::compact::breaker::MAX_FAILURES as usize);
    let events = drain(&mut s.events);
    let notices: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Notice { message, .. } => Some(message),
            _ => None,
        })
        .collect();
    assert!(
        notices.iter().any(|n| n.contains("automatic compaction is off")),
        "{notices:?}"
    );
    assert!(s.engine.compactor.breaker.is_open());
    // Manual compaction is still possible and reports the failure plainly.
    let err = s
        .engine
        .compact(None, Trigger::Manual, &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err, CompactError::EmptySummary);
}

#[tokio::test]
async fn nested_instruction_files_arrive_with_the_tool_results() {
    let files = [
        ("CLAUDE.md", "Root rules."),
        ("crates/core/CLAUDE.md", "Core crate: never use unsafe."),
        ("crates/core/src/lib.rs", "pub fn f() {}\n"),
    ];
    let mut s = setup(Model::new(Vec::new(), ""), None, &files);
    let lib = s.cwd.join("crates/core/src/lib.rs");
    let model = Model::new(
        vec![
            vec![tool("r1", "Read", json!({"file_path": lib}))],
            vec![tool("r2", "Read", json!({"file_path": lib}))],
            vec![ContentBlock::text("ok")],
        ],
        "",
    );
    s.engine.provider = model.clone();
    s.engine
        .run_turn(vec![ContentBlock::text("look")], CancellationToken::new())
        .await;
    let reqs = model.requests();
    assert!(reqs[0].system[1].text.contains("Root rules."));
    assert!(!reqs[0].system[1].text.contains("never use unsafe"));
    let first = reqs[1].messages.last().unwrap();
    assert!(matches!(&first.content[0], ContentBlock::ToolResult { .. }));
    let reminder = first.text();
    assert!(
        reminder.contains("<system-reminder>") && reminder.contains("Core crate: never use unsafe."),
        "{reminder}"
    );
    // Loaded once: the second read of the same directory brings nothing new.
    assert!(!reqs[2].messages.last().unwrap().text().contains("never use unsafe"));
    // The stable prefix did not change.
    assert_eq!(reqs[0].system, reqs[2].system);
}

#[tokio::test]
async fn a_message_history_of_one_user_message_compacts_without_a_tail() {
    let mut s = setup(Model::new(Vec::new(), "## Current work\nNothing yet."), None, &[]);
    s.engine.session.push_user(vec![ContentBlock::text("hello")]);
    s.engine
        .session
        .push_assistant(Message::assistant(vec![ContentBlock::text("hi")]));
    let r = s
        .engine
        .compact(None, Trigger::Manual, &CancellationToken::new())
        .await
        .unwrap();
    assert!(r.handoff.contains("<user-request>\nhello\n</user-request>"));
    assert!(r.handoff.contains("## Decisions\n(the summary did not state this)"));
    assert!(r.handoff.contains("Failed checks recorded by keel: none open."));
    let empty = setup(Model::new(Vec::new(), "x"), None, &[]);
    let mut e = empty.engine;
    assert_eq!(
        e.compact(None, Trigger::Manual, &CancellationToken::new())
            .await
            .unwrap_err(),
        CompactError::Empty
    );
}

#[tokio::test]
async fn a_prompt_too_long_error_compacts_once_and_retries() {
    let model = Model::new(
        vec![vec![ContentBlock::text("answered after compaction")]],
        "## Current work\nA question.",
    );
    model.refuse.lock().unwrap().push(ProviderError::Rejected {
        status: 400,
        message: "invalid_request_error: prompt is too long: 210000 tokens > 200000 maximum".into(),
    });
    let mut s = setup(model.clone(), None, &[]);
    let out = s
        .engine
        .run_turn(vec![ContentBlock::text("a question")], CancellationToken::new())
        .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.result, "answered after compaction");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 3, "refused request, summary request, retried request");
    assert!(is_summary(&reqs[1]) && !is_summary(&reqs[2]));
    assert!(
        reqs[2].messages[0]
            .text()
            .contains("<user-request>\na question\n</user-request>")
    );
    // A second refusal in the same turn is reported, not looped on.
    let model = Model::new(Vec::new(), "## Current work\nx");
    for _ in 0..2 {
        model.refuse.lock().unwrap().push(ProviderError::Rejected {
            status: 400,
            message: "prompt is too long".into(),
        });
    }
    let mut s = setup(model.clone(), None, &[]);
    let out = s
        .engine
        .run_turn(vec![ContentBlock::text("q")], CancellationToken::new())
        .await;
    assert!(out.is_error && out.result.contains("prompt is too long"), "{out:?}");
}

/// Front ends may run a turn or a compaction on a spawned task.
#[allow(dead_code)]
fn turn_and_compaction_futures_are_send(e: &mut Engine, cancel: &CancellationToken) {
    fn is_send<T: Send>(_: T) {}
    is_send(e.run_turn(Vec::new(), cancel.clone()));
    is_send(e.compact(None, Trigger::Manual, cancel));
}
