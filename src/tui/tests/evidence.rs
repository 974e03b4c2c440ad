//! The ledger in the TUI: the status line's label and `/evidence`.

use std::time::Instant;

use serde_json::json;

use crate::tools::ToolOutput;
use crate::tui::app::test_support::app_in;
use crate::tui::render::status;
use crate::tui::transcript::CellKind;

fn line_text(app: &crate::tui::app::App) -> String {
    status::line(app, Instant::now(), 140)
        .spans
        .iter()
        .map(|s| s.content.to_string())
        .collect()
}

#[tokio::test]
async fn status_line_shows_the_verification_state_and_evidence_lists_the_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::write(cwd.join("app.py"), "x = 1\n").unwrap();
    let mut a = app_in(cwd.clone());
    assert!(
        !line_text(&a).contains("tests:"),
        "nothing to say before anything happened"
    );
    let ev = a.shared.evidence.clone();
    let watch = ev
        .before(
            "Edit",
            crate::types::tool::Effects::EDITS,
            &json!({"file_path": cwd.join("app.py")}),
            None,
            &cwd,
        )
        .await;
    std::fs::write(cwd.join("app.py"), "x = 2\n").unwrap();
    ev.after(watch, &mut ToolOutput::text("updated"), &|_| None).await;
    assert!(line_text(&a).contains("tests: unverified"), "{}", line_text(&a));
    let watch = ev
        .before(
            "Bash",
            crate::types::tool::Effects::RUNS,
            &json!({"command": "pytest -q"}),
            None,
            &cwd,
        )
        .await;
    let mut out = ToolOutput::text("2 passed in 0.01s")
        .with_structured(json!({"stdout": "2 passed in 0.01s\n", "interrupted": false, "exitCode": 0}));
    ev.after(watch, &mut out, &|_| None).await;
    assert!(line_text(&a).contains("tests: passed"), "{}", line_text(&a));
    let watch = ev
        .before(
            "Write",
            crate::types::tool::Effects::EDITS,
            &json!({"file_path": cwd.join("app.py")}),
            None,
            &cwd,
        )
        .await;
    std::fs::write(cwd.join("app.py"), "x = 3\n").unwrap();
    ev.after(watch, &mut ToolOutput::text("written"), &|_| None).await;
    assert!(line_text(&a).contains("tests: stale"), "{}", line_text(&a));

    a.submit_text("/evidence");
    let listing = a
        .transcript
        .cells()
        .find_map(|c| match c {
            CellKind::Info { title, markdown } if title == "Evidence" => Some(markdown.clone()),
            _ => None,
        })
        .expect("an Evidence cell");
    assert!(listing.contains("Verification: stale"), "{listing}");
    assert!(
        listing.contains("stale    `pytest -q`: 2 passed, 0 failed (exit 0)"),
        "{listing}"
    );
    assert!(listing.contains("v2 app.py — Write"), "{listing}");
}
