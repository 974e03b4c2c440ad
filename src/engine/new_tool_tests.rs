//! A tool keel has never heard of, registered the way a plugin or a new built-in would be: its
//! declaration alone gives it permission checks, a place in compaction and an approval preview.
//! Nothing outside this file names it.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::pipeline::{Pipeline, ToolCall};
use super::{EventSink, SessionServices};
use crate::compact::compactor::cold_view;
use crate::hooks::Hooks;
use crate::permissions::rules::Behavior;
use crate::permissions::rules::{Anchors, Rule};
use crate::permissions::{Authorizer, Mode, PermissionReply};
use crate::tools::kinds::KindTable;
use crate::tools::registry::ToolRegistry;
use crate::tools::{Body, Declared, Effects, RuleGrammar, Subject, Tool, ToolContext, ToolError, ToolOutput};
use crate::types::events::EngineEvent;
use crate::types::message::{ContentBlock, Message};

/// Shows the size of a file: it only reads, its rules read paths, and `Read(...)` rules cover it.
struct Peek;

#[async_trait]
impl Tool for Peek {
    fn name(&self) -> &'static str {
        "Peek"
    }
    fn description(&self) -> &'static str {
        "Shows how big a file is"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]})
    }
    fn is_read_only(&self, _: &Value) -> bool {
        true
    }
    fn declared(&self) -> Declared {
        Declared {
            effects: Effects::READS,
            grammar: RuleGrammar::Path,
            covered_by: &["Read"],
        }
    }
    fn subject(&self, input: &Value, cwd: &Path) -> Subject {
        let p = input["file_path"].as_str().unwrap_or("");
        Subject::Path(crate::fsutil::paths::resolve(cwd, p))
    }
    fn preview(&self, input: &Value, _cwd: &Path) -> Body {
        Body::Plan(format!("peek at {}", input["file_path"].as_str().unwrap_or("?")))
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = ctx.resolved_path(Path::new(input["file_path"].as_str().unwrap_or("")));
        let len = std::fs::metadata(&path).map_err(|e| ToolError::io("peek", e))?.len();
        Ok(ToolOutput::text(format!("{len} bytes")))
    }
}

struct World {
    dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    services: Arc<SessionServices>,
    registry: ToolRegistry,
    authorizer: Authorizer,
    hooks: Hooks,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(ws.join("private")).unwrap();
    std::fs::write(ws.join("notes.txt"), "hello").unwrap();
    std::fs::write(ws.join("own.txt"), "mine").unwrap();
    std::fs::write(ws.join("private/key.txt"), "k").unwrap();
    std::fs::write(ws.join(".env"), "TOKEN=1").unwrap();
    std::fs::write(dir.path().join("outside.txt"), "far").unwrap();
    let anchors = Anchors {
        cwd: ws.clone(),
        base_dir: ws.clone(),
        home: None,
    };
    let deny = Rule::parse("Read(./private/**)", Behavior::Deny, "test", &anchors).unwrap();
    // A rule of its own, read before the tool exists: its path grammar decides at the call.
    let own = Rule::parse("Peek(./own.txt)", Behavior::Deny, "test", &anchors).unwrap();
    let services = SessionServices::builder(ws.clone(), dir.path().join("session")).build();
    let transcript = crate::transcript::Transcript::disabled(dir.path().join("t.jsonl"));
    World {
        registry: ToolRegistry::new(vec![Arc::new(Peek)]).unwrap(),
        authorizer: Authorizer::new(vec![deny, own], vec![ws.clone()], None, None),
        hooks: Hooks::none(
            ws.clone(),
            "s".into(),
            crate::transcript::SharedTranscript::new(transcript),
        ),
        services,
        ws,
        dir,
    }
}

impl World {
    fn pipeline<'a>(&'a self, events: &'a EventSink, interactive: bool) -> Pipeline<'a> {
        Pipeline {
            registry: &self.registry,
            services: &self.services,
            grants: self.services.grants(),
            events,
            authorizer: &self.authorizer,
            hooks: &self.hooks,
            interactive,
            agent: None,
        }
    }
}

fn peek(id: &str, path: &Path) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "Peek".into(),
        input: json!({"file_path": path}),
    }
}

#[tokio::test]
async fn a_new_tools_declaration_gives_it_the_read_checks() {
    let w = world();
    let (events, _rx) = EventSink::channel();
    let calls = vec![
        peek("inside", &w.ws.join("notes.txt")),
        peek("ruled", &w.ws.join("private/key.txt")),
        peek("secret", &w.ws.join(".env")),
        peek("outside", &w.dir.path().join("outside.txt")),
        peek("own", &w.ws.join("own.txt")),
    ];
    let records = w
        .pipeline(&events, false)
        .run_all(calls, &[], &Default::default())
        .await;
    let text = |i: usize| records[i].output.content.as_text();
    assert!(!records[0].output.is_error && text(0) == "5 bytes", "{}", text(0));
    // A `Read(...)` deny rule covers it, as its declaration says.
    assert!(
        records[1].denied && text(1).contains("Read(./private/**)"),
        "{}",
        text(1)
    );
    // Credential files stay unread, as for Read.
    assert!(records[2].denied && text(2).contains("credentials"), "{}", text(2));
    // Outside the working directories it needs a human, and headless nobody can answer.
    assert!(
        records[3].denied && text(3).contains("outside the working directories"),
        "{}",
        text(3)
    );
    // Its own path rule holds, though no module knew the name when the rule was read.
    assert!(records[4].denied && text(4).contains("Peek(./own.txt)"), "{}", text(4));
}

#[tokio::test]
async fn the_approval_dialog_shows_the_new_tools_own_preview() {
    let w = world();
    let (events, mut rx) = EventSink::channel();
    let outside = w.dir.path().join("outside.txt");
    let answer = tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            if let EngineEvent::PermissionRequest(p) = ev {
                let body = p.preview.body.clone();
                let _ = p.reply.send(PermissionReply::AllowOnce);
                return Some(body);
            }
        }
        None
    });
    let records = w
        .pipeline(&events, true)
        .run_all(vec![peek("o", &outside)], &[], &Default::default())
        .await;
    drop(events);
    let body = answer.await.unwrap();
    assert_eq!(body, Some(Body::Plan(format!("peek at {}", outside.display()))));
    assert_eq!(records[0].output.content.as_text(), "3 bytes");
    assert_eq!(w.services.mode(), Mode::Default);
}

#[test]
fn compaction_folds_the_new_tools_old_results_because_it_only_reads() {
    let w = world();
    let mut store = vec![Message::user_text("look around")];
    for i in 0..3 {
        let id = format!("p{i}");
        store.push(Message::assistant(vec![ContentBlock::ToolUse {
            id: id.clone(),
            name: "Peek".into(),
            input: json!({"file_path": format!("/ws/f{i}.txt")}),
        }]));
        store.push(Message {
            role: crate::types::message::Role::User,
            content: vec![ContentBlock::tool_result(
                &id,
                crate::types::message::ToolResultContent::Text("5 bytes".into()),
                false,
            )],
        });
    }
    store.push(Message::assistant(vec![ContentBlock::text("done")]));
    store.push(Message::user_text("next"));
    let upto = store.len() - 1;
    let session = w.dir.path().join("session");
    let declared = KindTable::of(&w.registry);
    assert!(declared.observes("Peek"));
    let folded = cold_view(&store, 0..upto, &session, &Default::default(), &declared);
    // Without its declaration the same history is a record of unknown actions, kept whole.
    let unknown = cold_view(&store, 0..upto, &session, &Default::default(), &KindTable::default());
    assert_eq!(
        unknown.messages.len(),
        store.len() - 1,
        "nothing folded for an undeclared tool"
    );
    assert!(
        folded.messages.len() < unknown.messages.len(),
        "the observation run is folded: {} messages vs {}",
        folded.messages.len(),
        unknown.messages.len()
    );
}
