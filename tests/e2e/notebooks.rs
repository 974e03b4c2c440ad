//! NotebookEdit through the real binary: Read shows cell ids, replace/insert/delete change the
//! right cell and keep the notebook's layout and unknown fields, Edit's guards apply, and
//! `keel rewind` takes the change back byte for byte.

use serde_json::{Value, json};

use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer, read_jsonl, run_steps};

/// A notebook as nbformat writes it (indent 1, sorted keys, trailing newline), with fields keel
/// does not know.
const NOTEBOOK: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "intro",
   "metadata": {},
   "source": [
    "# Sums"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 1,
   "id": "sum",
   "metadata": {
    "tags": [
     "keep-me"
    ]
   },
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "3\n"
     ]
    }
   ],
   "source": [
    "print(1 + 2)"
   ]
  }
 ],
 "metadata": {
  "custom_tool": {
   "opaque": [
    1,
    2
   ]
  },
  "language_info": {
   "name": "python"
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

/// A call's result as the transcript keeps it (the model's view folds failed calls away).
fn result(env: &Env, id: &str) -> (String, bool) {
    for line in env.transcripts().iter().flat_map(|t| read_jsonl(t)) {
        for b in line["message"]["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" && b["tool_use_id"] == id {
                let text = match &b["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
                    other => other.to_string(),
                };
                return (text, b["is_error"].as_bool().unwrap_or(false));
            }
        }
    }
    panic!("no tool_result for {id} in the transcript");
}

fn nb_edit(id: &str, env: &Env, input: Value) -> crate::support::sse::Block {
    let mut input = input;
    input["notebook_path"] = json!(env.path("calc.ipynb"));
    tool(id, "NotebookEdit", input)
}

#[tokio::test]
async fn notebook_cells_are_replaced_inserted_and_deleted_by_id_under_edits_guards() {
    let env = Env::new();
    env.write("calc.ipynb", NOTEBOOK);
    let (out, _) = run_steps(
        &env,
        vec![
            vec![nb_edit("unread", &env, json!({"cell_id": "sum", "new_source": "x"}))],
            vec![tool("r1", "Read", json!({"file_path": env.path("calc.ipynb")}))],
            vec![tool(
                "edit",
                "Edit",
                json!({"file_path": env.path("calc.ipynb"), "old_string": "1 + 2", "new_string": "2 + 2"}),
            )],
            vec![nb_edit("unknown", &env, json!({"cell_id": "nope", "new_source": "x"}))],
            vec![nb_edit("replace", &env, json!({"cell_id": "sum", "new_source": "total = 2 + 2\nprint(total)"}))],
            vec![nb_edit(
                "insert",
                &env,
                json!({"cell_id": "intro", "new_source": "Adds numbers.", "cell_type": "markdown", "edit_mode": "insert"}),
            )],
            vec![nb_edit("delete", &env, json!({"cell_id": "intro", "new_source": "", "edit_mode": "delete"}))],
            // Changed behind keel's back: the next edit is refused until it is read again.
            vec![tool(
                "touch",
                "Bash",
                json!({"command": format!("sed -i 's/Adds numbers/Adds two numbers/' {}", env.path("calc.ipynb").display())}),
            )],
            vec![nb_edit("stale", &env, json!({"cell_id": "sum", "new_source": "x"}))],
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = result(&env, "unread");
    assert!(err && text.contains("has not been read"), "{text}");
    let (text, err) = result(&env, "r1");
    assert!(!err, "{text}");
    assert!(
        text.contains("<cell id=\"sum\" type=\"code\" execution_count=\"1\">\nprint(1 + 2)\n</cell>"),
        "{text}"
    );
    assert!(text.contains("<outputs>\n3\n</outputs>"), "{text}");
    let (text, err) = result(&env, "edit");
    assert!(err && text.contains("NotebookEdit"), "{text}");
    let (text, err) = result(&env, "unknown");
    assert!(err && text.contains("intro, sum"), "{text}");
    let (text, err) = result(&env, "replace");
    assert!(!err && text.contains("outputs were cleared"), "{text}");
    let (text, err) = result(&env, "insert");
    assert!(!err && text.contains("inserted markdown cell"), "{text}");
    let (text, err) = result(&env, "delete");
    assert!(!err && text.contains("deleted markdown cell intro"), "{text}");
    let (text, err) = result(&env, "stale");
    assert!(err && text.contains("changed on disk"), "{text}");

    let written = std::fs::read_to_string(env.path("calc.ipynb")).unwrap();
    let doc: Value = serde_json::from_str(&written).unwrap();
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{written}");
    assert_eq!(cells[0]["cell_type"], "markdown");
    assert_eq!(cells[0]["source"], json!(["Adds two numbers."]));
    assert_eq!(cells[0]["id"].as_str().unwrap().len(), 8, "{written}");
    assert_eq!(cells[1]["source"], json!(["total = 2 + 2\n", "print(total)"]));
    assert_eq!(cells[1]["outputs"], json!([]));
    assert_eq!(cells[1]["execution_count"], Value::Null);
    assert_eq!(cells[1]["metadata"]["tags"], json!(["keep-me"]));
    assert_eq!(doc["metadata"]["custom_tool"], json!({"opaque": [1, 2]}));
    // nbformat's layout: indent 1, a trailing newline, the untouched parts byte-identical.
    assert!(
        written.ends_with("}\n") && written.starts_with("{\n \"cells\": [\n  {\n"),
        "{written}"
    );
    assert!(NOTEBOOK.ends_with(&written[written.find(" \"metadata\": {\n  \"custom_tool\"").unwrap()..]));
}

#[tokio::test]
async fn a_notebook_edit_is_rewound_byte_for_byte() {
    let env = Env::new();
    env.write("calc.ipynb", NOTEBOOK);
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "r1",
            "Read",
            json!({"file_path": env.path("calc.ipynb")}),
        )]))
        .push(calls(vec![nb_edit(
            "e1",
            &env,
            json!({"cell_id": "sum", "new_source": "print(4)"}),
        )]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "change the sum", "--permission-mode", "acceptEdits"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        std::fs::read_to_string(env.path("calc.ipynb"))
            .unwrap()
            .contains("print(4)")
    );
    let out = env
        .keel_offline()
        .args(["rewind", "--to", "1", "--restore", "code"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(std::fs::read_to_string(env.path("calc.ipynb")).unwrap(), NOTEBOOK);
}
