//! The precheck step with the real Read and Edit tools: a call that cannot succeed is never put
//! to the user, a call that can is asked and then checked again when it runs, and a precheck
//! tells the model nothing about a file it could not read without approval.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::pipeline::{CallRecord, Pipeline, ToolCall};
use super::{EventSink, SessionServices};
use crate::hooks::Hooks;
use crate::permissions::{Authorizer, PermissionReply};
use crate::tools::registry::ToolRegistry;
use crate::types::events::EngineEvent;

struct World {
    dir: tempfile::TempDir,
    ws: PathBuf,
    services: Arc<SessionServices>,
    registry: ToolRegistry,
    authorizer: Authorizer,
    hooks: Hooks,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let services = SessionServices::builder(ws.clone(), dir.path().join("session")).build();
    let transcript = crate::transcript::Transcript::disabled(dir.path().join("t.jsonl"));
    World {
        registry: ToolRegistry::new(vec![
            Arc::new(crate::tools::read::ReadTool),
            Arc::new(crate::tools::edit::EditTool),
        ])
        .unwrap(),
        authorizer: Authorizer::new(Vec::new(), vec![ws.clone()], None, None),
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

/// The questions the front end was asked (tool call ids), and a hook run on each question
/// before it is answered "allow once".
type Asked = Arc<Mutex<Vec<String>>>;

impl World {
    /// Runs `calls` in an interactive session whose front end answers every question with
    /// "allow once" after running `on_ask`.
    async fn run(&self, calls: Vec<ToolCall>, on_ask: impl Fn() + Send + 'static) -> (Vec<CallRecord>, Vec<String>) {
        let (events, mut rx) = EventSink::channel();
        let asked: Asked = Arc::default();
        let seen = asked.clone();
        let front_end = tokio::spawn(async move {
            while let Some(ev) = rx.recv().await {
                if let EngineEvent::PermissionRequest(p) = ev {
                    seen.lock().unwrap().push(p.tool_use_id.clone());
                    on_ask();
                    let _ = p.reply.send(PermissionReply::AllowOnce);
                }
            }
        });
        let pipeline = Pipeline {
            registry: &self.registry,
            services: &self.services,
            grants: self.services.grants(),
            events: &events,
            authorizer: &self.authorizer,
            hooks: &self.hooks,
            interactive: true,
            agent: None,
        };
        let records = pipeline.run_all(calls, &[], &Default::default()).await;
        drop(pipeline);
        drop(events);
        front_end.await.unwrap();
        let asked = asked.lock().unwrap().clone();
        (records, asked)
    }
}

fn read(id: &str, path: &Path) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "Read".into(),
        input: json!({"file_path": path}),
    }
}

fn edit(id: &str, path: &Path, old: &str, new: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "Edit".into(),
        input: json!({"file_path": path, "old_string": old, "new_string": new}),
    }
}

#[tokio::test]
async fn an_edit_that_cannot_succeed_is_refused_before_anyone_is_asked() {
    let w = world();
    let file = w.ws.join("notes.txt");
    std::fs::write(&file, "milk\neggs\n").unwrap();
    // Never read: refused at once, nobody asked, nothing written.
    let (records, asked) = w.run(vec![edit("e1", &file, "milk", "bread")], || {}).await;
    let text = records[0].output.content.as_text();
    assert!(
        records[0].output.is_error && text.contains("has not been read"),
        "{text}"
    );
    assert!(!records[0].denied, "a failed check is no permission denial");
    assert!(asked.is_empty(), "asked about a call that could not succeed: {asked:?}");
    // Read, then an anchor that is not in the file, and one that is twice: refused unasked.
    std::fs::write(&file, "milk\neggs\nmilk\n").unwrap();
    let (records, asked) = w
        .run(
            vec![
                read("r1", &file),
                edit("e2", &file, "butter", "bread"),
                edit("e3", &file, "milk", "bread"),
                edit("e4", &file, "same", "same"),
            ],
            || {},
        )
        .await;
    assert!(!records[0].output.is_error);
    for (i, says) in [(1, "was not found"), (2, "occurs 2 times"), (3, "identical")] {
        let text = records[i].output.content.as_text();
        assert!(records[i].output.is_error && text.contains(says), "{text}");
    }
    assert!(asked.is_empty(), "{asked:?}");
    // Changed on disk since the read: refused unasked, with what changed.
    std::fs::write(&file, "milk\nEGGS\nmilk\n").unwrap();
    let (records, asked) = w.run(vec![edit("e5", &file, "EGGS", "ham")], || {}).await;
    let text = records[0].output.content.as_text();
    assert!(
        text.contains("changed on disk since you read it") && text.contains("+EGGS"),
        "{text}"
    );
    assert!(asked.is_empty(), "{asked:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "milk\nEGGS\nmilk\n");
}

/// A call that passes its precheck is asked about; what happens to the file while the question
/// is open is checked again when the call runs.
#[tokio::test]
async fn a_file_changed_while_the_question_is_open_is_refused_when_the_call_runs() {
    let w = world();
    let file = w.ws.join("notes.txt");
    std::fs::write(&file, "milk\neggs\n").unwrap();
    let (records, _) = w.run(vec![read("r1", &file)], || {}).await;
    assert!(!records[0].output.is_error);
    let changed = file.clone();
    let (records, asked) = w
        .run(vec![edit("e1", &file, "eggs", "ham")], move || {
            std::fs::write(&changed, "milk\neggs\ntea\n").unwrap();
        })
        .await;
    assert_eq!(asked, vec!["e1".to_string()], "a call that can succeed is asked");
    let text = records[0].output.content.as_text();
    assert!(
        records[0].output.is_error && text.contains("changed on disk since you read it") && text.contains("+tea"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "milk\neggs\ntea\n");
    // Unchanged: asked, approved, written.
    let (records, _) = w.run(vec![read("r2", &file)], || {}).await;
    assert!(!records[0].output.is_error);
    let (records, asked) = w.run(vec![edit("e2", &file, "eggs", "ham")], || {}).await;
    assert_eq!(asked, vec!["e2".to_string()]);
    assert!(!records[0].output.is_error, "{}", records[0].output.content.as_text());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "milk\nham\ntea\n");
}

/// Outside the working directories a Read needs approval, so the precheck opens nothing there:
/// the model learns neither whether a file exists nor what changed in it.
#[tokio::test]
async fn a_precheck_tells_nothing_about_files_the_model_may_not_read() {
    let w = world();
    let outside = w.dir.path().canonicalize().unwrap().join("outside.txt");
    std::fs::write(&outside, "far\n").unwrap();
    let missing = outside.with_file_name("missing.txt");
    let (records, asked) = w
        .run(
            vec![edit("e1", &outside, "far", "near"), edit("e2", &missing, "far", "near")],
            || {},
        )
        .await;
    let (a, b) = (records[0].output.content.as_text(), records[1].output.content.as_text());
    assert!(a.contains("has not been read"), "{a}");
    assert_eq!(
        a.replace("outside.txt", "X"),
        b.replace("missing.txt", "X"),
        "an existing and a missing file must look alike"
    );
    assert!(asked.is_empty(), "{asked:?}");
    // Read once with approval, then changed: the precheck cannot see the change, so the user
    // is asked, and the call itself finds the conflict.
    let (records, asked) = w.run(vec![read("r1", &outside)], || {}).await;
    assert!(!records[0].output.is_error);
    assert_eq!(asked, vec!["r1".to_string()]);
    std::fs::write(&outside, "far away\n").unwrap();
    let (records, asked) = w.run(vec![edit("e3", &outside, "far", "near")], || {}).await;
    assert_eq!(asked, vec!["e3".to_string()]);
    let text = records[0].output.content.as_text();
    assert!(text.contains("changed on disk since you read it"), "{text}");
}
