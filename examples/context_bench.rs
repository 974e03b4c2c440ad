//! Context benchmark: input tokens per turn over a long scripted session without compaction,
//! with tier 1 only and with tiers 1-4 (tier 5 is kept out: no request reaches the window),
//! the compactor's own CPU time per turn, and a check that nothing the tiers took out of the
//! view is lost (every tool result stays in the view or in a file the view names).
//!
//! Run: `cargo run --release --example context_bench -- [--turns 200]` (or
//! `scripts/context-bench.sh`). Tokens are counted as the API-facing size of each request
//! body: four bytes per token.

// Benchmark code: a failed unwrap is a failed run, reported with its panic message.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A benchmark prints its own measurements.
#![allow(clippy::disallowed_macros)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use keel::compact::{CompactSettings, budget};
use keel::context::{Gather, ProjectContext};
use keel::engine::{Engine, EngineConfig, Session};
use keel::provider::script::ScriptProvider;
use keel::provider::{ModelRequest, Provider, ProviderStream};
use keel::tools::registry::ToolRegistry;
use keel::tools::{Tool, ToolContext, ToolError, ToolOutput, builtin_tools};
use keel::transcript::Transcript;
use keel::types::message::{ContentBlock, Message, ToolResultContent};

/// Records the size of every request, then lets the script answer it.
struct Recording {
    inner: ScriptProvider,
    sizes: Mutex<Vec<u64>>,
}

impl Provider for Recording {
    fn name(&self) -> &str {
        "recording"
    }
    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ProviderStream {
        let bytes = keel::provider::anthropic::wire_body(&request)
            .map(|b| b.len())
            .unwrap_or(0);
        self.sizes.lock().unwrap().push(bytes as u64 / 4);
        self.inner.stream(request, cancel)
    }
}

/// A tool with the result budget (tier 1) switched off.
struct Unbudgeted(Arc<dyn Tool>);

#[async_trait]
impl Tool for Unbudgeted {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn description(&self) -> &str {
        self.0.description()
    }
    fn input_schema(&self) -> Value {
        self.0.input_schema()
    }
    fn is_read_only(&self, input: &Value) -> bool {
        self.0.is_read_only(input)
    }
    fn result_budget(&self) -> usize {
        usize::MAX
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.call(input, ctx).await
    }
}

fn make_repo(root: &Path) {
    for i in 0..40 {
        let dir = root.join(format!("src/mod{}", i % 5));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = String::new();
        for n in 0..150 {
            if n % 25 == 0 {
                text.push_str(&format!(
                    "pub fn handler_{i}_{n}(input: &str) -> Result<u32, Error> {{\n"
                ));
            } else if n % 25 == 24 {
                text.push_str("}\n");
            } else {
                text.push_str(&format!("    let value_{n} = compute(input, {n}); // TODO check {i}\n"));
            }
        }
        std::fs::write(dir.join(format!("file{i}.rs")), text).unwrap();
    }
    std::fs::create_dir_all(root.join("logs")).unwrap();
    let mut log = String::new();
    for n in 0..700 {
        log.push_str(&format!("[build] compiling unit {n:04} of the workspace ... ok\n"));
    }
    log.push_str("error[E0308]: mismatched types\n  --> src/mod1/file6.rs:12:5\nerror: could not compile `app`\n");
    std::fs::write(root.join("logs/build.log"), log).unwrap();
}

/// A survey-and-fix session: globbing, searching, reading (also the same file again), big
/// searches and a 40 KB build log, with a longer note now and then.
fn script(turns: usize) -> String {
    let mut out = Vec::new();
    for t in 0..turns - 1 {
        let i = t % 40;
        let file = format!("src/mod{}/file{i}.rs", i % 5);
        let call = match t % 10 {
            0 => json!({"name": "Glob", "input": {"pattern": "src/**/*.rs"}}),
            1 => json!({"name": "Grep", "input": {"pattern": format!("handler_{i}_"), "output_mode": "content"}}),
            2 => json!({"name": "Read", "input": {"file_path": file}}),
            3 => {
                json!({"name": "Grep", "input": {"pattern": format!("TODO check {}", i % 4), "output_mode": "content", "head_limit": 0}})
            }
            4 => json!({"name": "Read", "input": {"file_path": file, "offset": 20, "limit": 40}}),
            5 => json!({"name": "Grep", "input": {"pattern": "Result<u32", "output_mode": "count"}}),
            6 => json!({"name": "Read", "input": {"file_path": file}}),
            7 => json!({"name": "Read", "input": {"file_path": "logs/build.log"}}),
            8 => {
                json!({"name": "Grep", "input": {"pattern": "error", "path": "logs", "output_mode": "content", "-n": true}})
            }
            _ => json!({"name": "Glob", "input": {"pattern": format!("src/mod{}/*.rs", i % 5)}}),
        };
        let text = if t % 10 == 9 {
            format!(
                "Step {t}: so far the handlers follow one pattern; the build fails on a type mismatch in \
                 src/mod1/file6.rs line 12. I keep surveying the modules before changing anything, and I will \
                 check the remaining files of module {} next, then come back to the failing build.",
                i % 5
            )
        } else {
            format!("Step {t}.")
        };
        out.push(json!({"text": text, "tool_calls": [call]}));
    }
    out.push(json!({"text": "Survey finished."}));
    json!({"model": "claude-sonnet-4-5", "turns": out}).to_string()
}

struct Run {
    sizes: Vec<u64>,
    compactor_ms: f64,
    compactor_wall_ms: f64,
    rebuild_ms: f64,
    views: u64,
    rebuilds: u64,
    check: Check,
}

#[derive(Default, Debug)]
struct Check {
    results: usize,
    verbatim: usize,
    by_file: usize,
    snipped: usize,
    missing: Vec<String>,
}

/// `budget`: tier 1 on; `view`: tiers 2-4 on.
async fn run(turns: usize, budget: bool, view: bool) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    make_repo(&repo);
    let repo = repo.canonicalize().unwrap();
    let session_dir = tmp.path().join("session");
    let provider = Arc::new(Recording {
        inner: ScriptProvider::parse(&script(turns)).unwrap(),
        sizes: Mutex::new(Vec::new()),
    });
    let tools: Vec<Arc<dyn Tool>> = if budget {
        builtin_tools()
    } else {
        builtin_tools()
            .into_iter()
            .map(|t| Arc::new(Unbudgeted(t)) as Arc<dyn Tool>)
            .collect()
    };
    let registry = Arc::new(ToolRegistry::new(tools).unwrap());
    let session = Session::new(
        "bench".into(),
        repo.clone(),
        session_dir.clone(),
        Transcript::disabled(tmp.path().join("t.jsonl")),
    );
    let config = EngineConfig {
        model: "claude-sonnet-4-5".into(),
        max_tokens: 32_000,
        max_turns: None,
        system: Vec::new(),
        interactive: false,
        // Tier 5 stays out of this comparison: a window no request reaches, autocompact off.
        context_window: Some(100_000_000),
        compact: CompactSettings {
            view_tiers: view,
            auto: false,
            ..CompactSettings::default()
        },
        ..Default::default()
    };
    let (mut engine, _events) = Engine::basic(config, provider.clone(), registry, session);
    engine.set_project(ProjectContext::gather(&Gather {
        cwd: &repo,
        model: "claude-sonnet-4-5",
        home: None,
        replace: None,
        append: None,
    }));
    let outcome = engine
        .run_turn(
            vec![ContentBlock::text("Survey the repository and the failing build.")],
            CancellationToken::new(),
        )
        .await;
    assert!(!outcome.is_error, "{outcome:?}");
    let last_view = engine.current_view();
    let check = information_check(engine.history(), &last_view.messages, &session_dir);
    let stats = engine.compactor_stats();
    let sizes = provider.sizes.lock().unwrap().clone();
    Run {
        compactor_ms: stats.cpu.as_secs_f64() * 1000.0,
        compactor_wall_ms: stats.time.as_secs_f64() * 1000.0,
        rebuild_ms: stats.rebuild_cpu.as_secs_f64() * 1000.0,
        views: stats.views,
        rebuilds: stats.rebuilds,
        sizes,
        check,
    }
}

/// Each tool result of the store is in the view verbatim, or its full output is in a file the
/// view names, or the view says a later call superseded it.
fn information_check(store: &[Message], view: &[Message], session_dir: &Path) -> Check {
    let mut check = Check::default();
    let mut view_text = String::new();
    for b in view.iter().flat_map(|m| &m.content) {
        match b {
            ContentBlock::Text { text, .. } => view_text.push_str(text),
            ContentBlock::ToolResult { content, .. } => view_text.push_str(&content.as_text()),
            _ => {}
        }
        view_text.push('\n');
    }
    let mut view_results: HashMap<&str, &ToolResultContent> = HashMap::new();
    for m in view {
        for b in &m.content {
            if let ContentBlock::ToolResult {
                tool_use_id, content, ..
            } = b
            {
                view_results.insert(tool_use_id, content);
            }
        }
    }
    let labels: HashMap<&str, String> = store
        .iter()
        .flat_map(|m| m.tool_uses())
        .map(|u| (u.id, keel::compact::calls::label(u.name, u.input)))
        .collect();
    for m in store {
        for b in &m.content {
            let ContentBlock::ToolResult {
                tool_use_id, content, ..
            } = b
            else {
                continue;
            };
            check.results += 1;
            let stored = content.as_text();
            let spill = budget::spill_path(session_dir, tool_use_id);
            let full: String = if budget::is_preview(&stored) {
                std::fs::read_to_string(&spill).unwrap_or_default()
            } else {
                stored.clone()
            };
            let file_name = format!("{tool_use_id}.txt");
            let on_disk = || std::fs::read_to_string(&spill).is_ok_and(|f| f == full);
            if view_results.get(tool_use_id.as_str()).is_some_and(|c| **c == *content)
                && (!budget::is_preview(&stored) || on_disk())
            {
                check.verbatim += 1;
            } else if view_text.contains(&file_name) && on_disk() {
                check.by_file += 1;
            } else if labels
                .get(tool_use_id.as_str())
                .is_some_and(|l| view_text.contains(&format!("[Snipped {l}")))
            {
                check.snipped += 1;
            } else {
                check.missing.push(tool_use_id.clone());
            }
        }
    }
    check
}

fn at(sizes: &[u64], turn: usize) -> String {
    sizes.get(turn - 1).map(|s| s.to_string()).unwrap_or_else(|| "-".into())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut turns = 200;
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--turns")
        && let Some(n) = args.get(i + 1).and_then(|n| n.parse().ok())
    {
        turns = n;
    }
    if args.iter().any(|a| a == "--only-tiers") {
        // For profiling the compactor alone.
        let r = run(turns, true, true).await;
        println!(
            "compactor CPU {:.3} ms per turn",
            r.compactor_ms / r.sizes.len().max(1) as f64
        );
        return;
    }
    let started = Instant::now();
    let without = run(turns, false, false).await;
    let budget_only = run(turns, true, false).await;
    let with = run(turns, true, true).await;
    let total = |r: &Run| r.sizes.iter().sum::<u64>();
    println!("context benchmark: {turns}-turn scripted session, input tokens per request (request body / 4)");
    println!();
    println!("| tiers | turn 25 | turn 50 | turn 100 | turn 150 | turn {turns} | mean per turn | total |");
    println!("|---|---|---|---|---|---|---|---|");
    for (name, r) in [("none", &without), ("1 only", &budget_only), ("1-4", &with)] {
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} |",
            at(&r.sizes, 25),
            at(&r.sizes, 50),
            at(&r.sizes, 100),
            at(&r.sizes, 150),
            at(&r.sizes, r.sizes.len()),
            total(r) / r.sizes.len().max(1) as u64,
            total(r)
        );
    }
    println!();
    println!(
        "ratio of totals: none / 1-4 = {:.1}x; 1 only / 1-4 = {:.1}x",
        total(&without) as f64 / total(&with).max(1) as f64,
        total(&budget_only) as f64 / total(&with).max(1) as f64
    );
    println!(
        "compactor CPU with tiers 1-4: {:.3} ms total, {:.3} ms per turn ({} views, {} cold rebuilds; wall time \
         including spill-file writes {:.3} ms per turn)",
        with.compactor_ms,
        with.compactor_ms / with.sizes.len().max(1) as f64,
        with.views,
        with.rebuilds,
        with.compactor_wall_ms / with.sizes.len().max(1) as f64
    );
    println!(
        "  of which {} cold rebuilds: {:.3} ms each; the other turns: {:.3} ms each",
        with.rebuilds,
        with.rebuild_ms / with.rebuilds.max(1) as f64,
        (with.compactor_ms - with.rebuild_ms) / (with.sizes.len() as u64).saturating_sub(with.rebuilds).max(1) as f64
    );
    println!(
        "compactor CPU without tiers: {:.3} ms per turn (token counting and the tool record only)",
        without.compactor_ms / without.sizes.len().max(1) as f64
    );
    for (name, r) in [("none", &without), ("1 only", &budget_only), ("1-4", &with)] {
        let c = &r.check;
        println!(
            "information check ({name}): {} results: {} verbatim, {} by a file named in the view, {} snipped as \
             superseded, {} missing",
            c.results,
            c.verbatim,
            c.by_file,
            c.snipped,
            c.missing.len()
        );
    }
    println!("(ran in {:.1} s)", started.elapsed().as_secs_f64());
    let missing: Vec<&String> = [&without, &budget_only, &with]
        .iter()
        .flat_map(|r| &r.check.missing)
        .collect();
    if !missing.is_empty() {
        eprintln!("information lost for: {missing:?}");
        std::process::exit(1);
    }
}
