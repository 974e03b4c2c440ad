//! What the evidence ledger costs per Bash call (scripts/evidence_bench.sh, docs/PERFORMANCE.md):
//!
//! 1. the workspace fingerprint of a generated repository of 10,000 files (plus an ignored
//!    build directory of 20,000 files that must cost nothing), median and p95 of repeated
//!    snapshots, and the diff of two snapshots;
//! 2. the gate's own work per Bash call without the fingerprint: reading the command line,
//!    parsing the runner's output, classifying, recording the run, saving the ledger, the
//!    status and the report; for a short and a 150 KB output;
//! 3. a whole watched Bash call (`Evidence::before` + `after`: one fingerprint) on the 10k-file
//!    repository.
//!
//! With `--detection [SIZES]` (default `1000,30000,100000`) instead: the change detection of one
//! shell command at each size, before (a walk of the whole tree, diffed with the last one) and
//! after (the watcher: its start, its first walk, then a command that changes nothing, one
//! file, a new directory of ten files, a thousand files), and a whole watched `true` call.

// Benchmark code: a failed unwrap is a failed run, reported with its panic message.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A benchmark prints its own measurements.
#![allow(clippy::disallowed_macros)]

use std::path::Path;
use std::time::{Duration, Instant};

use keel::evidence::{Config, Evidence, classify, runners};
use keel::tools::ToolOutput;
use keel::workspace::{Detection, Fingerprinter, Limits, Snapshot, Watcher};
use serde_json::json;

const FILES: usize = 10_000;
const IGNORED: usize = 20_000;

fn generate(root: &Path) {
    generate_n(root, FILES, IGNORED);
}

/// `files` tracked files, ten per directory, and `ignored` files under an ignored `target/`.
fn generate_n(root: &Path, files: usize, ignored: usize) {
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    for i in 0..files {
        let dir = root.join(format!("src/mod{:03}/sub{}", i / 50, i % 5));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("file{i}.rs")), format!("pub fn f{i}() {{}}\n")).unwrap();
    }
    for i in 0..ignored {
        let dir = root.join(format!("target/debug/deps/d{}", i / 500));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("o{i}.o")), "x").unwrap();
    }
}

/// CPU time (user + system) of the whole process, all threads, in ms.
fn cpu_ms() -> f64 {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    let u = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr());
        u.assume_init()
    };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(u.ru_utime) + ms(u.ru_stime)
}

fn stats(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (ms(samples[samples.len() / 2]), ms(samples[samples.len() * 95 / 100]))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--detection") {
        let sizes = args.get(1).map_or("1000,30000,100000", String::as_str);
        for n in sizes.split(',') {
            detection(n.parse().expect("--detection takes sizes like 1000,30000"));
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    println!("generating {FILES} files (+ {IGNORED} ignored) in {}", root.display());
    generate(&root);
    let fp = Fingerprinter::new(&root);
    let warm = fp.snapshot();
    assert_eq!(
        warm.len(),
        FILES + 1,
        "every tracked file and .gitignore, nothing ignored"
    );
    let runs = 30;
    let mut times = Vec::new();
    let cpu = cpu_ms();
    for _ in 0..runs {
        let t = Instant::now();
        let s = fp.snapshot();
        times.push(t.elapsed());
        assert_eq!(s.len(), warm.len());
    }
    let cpu_per = (cpu_ms() - cpu) / runs as f64;
    let (median, p95) = stats(times);
    // The floor: `find` reading the same attributes of the same files (one lstat each).
    let child_cpu = || {
        let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage fills the struct it is given.
        let u = unsafe {
            libc::getrusage(libc::RUSAGE_CHILDREN, u.as_mut_ptr());
            u.assume_init()
        };
        let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
        ms(u.ru_utime) + ms(u.ru_stime)
    };
    let before_find = child_cpu();
    for _ in 0..runs {
        let out = std::process::Command::new("find")
            .arg(root.join("src"))
            .args(["-type", "f", "-printf", "%s %T@ %C@ %i\n"])
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    let find_cpu = (child_cpu() - before_find) / runs as f64;
    println!("reference: find with -printf of size, times and inode over the same {FILES} files: CPU {find_cpu:.2} ms");
    let a = fp.snapshot();
    std::fs::write(root.join("src/mod000/sub0/file0.rs"), "changed\n").unwrap();
    let b = fp.snapshot();
    let t = Instant::now();
    let changes = a.diff(&b);
    let diff_ms = t.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(changes.modified.len(), 1);
    println!(
        "fingerprint, {FILES} files: wall median {median:.2} ms, p95 {p95:.2} ms; CPU {cpu_per:.2} ms per snapshot ({runs} runs); diff {diff_ms:.2} ms"
    );

    // The gate's own work per call, without the fingerprint.
    let short = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/evidence/pytest/9.2.0-fail.txt"
    ))
    .unwrap();
    let long = format!(
        "{}{}",
        "test some::module::case ... ok\n".repeat(5_000),
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/evidence/cargo/1.95.0-pass.txt"
        ))
        .unwrap()
    );
    let declared = runners::Declared::default();
    for (label, command, output) in [
        (
            "pytest, 2 KB output",
            "cd app && python -m pytest -q 2>&1 | tail -n 40",
            short.as_str(),
        ),
        ("cargo test, 150 KB output", "cargo test --workspace", long.as_str()),
        ("not a test (ls)", "ls -la src", "a\nb\nc\n"),
    ] {
        let n = 2_000;
        let cpu = cpu_ms();
        let t = Instant::now();
        for _ in 0..n {
            let reading = runners::recognise(command, &declared);
            let drafts = classify::drafts(command, &reading, output, Some(0));
            std::hint::black_box(drafts);
        }
        let per = t.elapsed().as_secs_f64() * 1000.0 / n as f64;
        let cpu_per = (cpu_ms() - cpu) / n as f64;
        println!("read + parse + classify, {label}: wall {per:.3} ms, CPU {cpu_per:.3} ms per call");
    }

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // A whole watched call on a tiny workspace: the ledger's cost with a negligible walk.
        let tiny = tempfile::tempdir().unwrap();
        let tiny_root = tiny.path().canonicalize().unwrap();
        std::fs::write(tiny_root.join("a.py"), "x = 1\n").unwrap();
        let session = tempfile::tempdir().unwrap();
        let ev = Evidence::new(&tiny_root, session.path(), Config::default(), true);
        let calls = 300;
        let mut times = Vec::new();
        let cpu = cpu_ms();
        for _ in 0..calls {
            let t = Instant::now();
            let w = ev.before("Bash", keel::types::tool::Effects::RUNS, &json!({"command": "pytest -q | tail -n 40"}), None, &tiny_root).await;
            let mut out = ToolOutput::text(short.clone())
                .with_structured(json!({"stdout": short, "interrupted": false, "exitCode": 0}));
            ev.after(w, &mut out, &|_| None).await;
            ev.flush();
            times.push(t.elapsed());
        }
        let cpu_per = (cpu_ms() - cpu) / calls as f64;
        let (m, p) = stats(times);
        println!(
            "whole watched call, 1-file workspace (ledger of up to {calls} runs, saved each call): wall median {m:.3} ms, p95 {p:.3} ms; CPU {cpu_per:.3} ms"
        );
        let t = Instant::now();
        for _ in 0..1_000 {
            std::hint::black_box(ev.report_json());
        }
        println!(
            "status + report of a {calls}-run ledger: {:.3} ms",
            t.elapsed().as_secs_f64() * 1000.0 / 1_000.0
        );

        let session = tempfile::tempdir().unwrap();
        let ev = Evidence::new(&root, session.path(), Config::default(), true);
        let mut times = Vec::new();
        let cpu = cpu_ms();
        for _ in 0..runs {
            let t = Instant::now();
            let w = ev.before("Bash", keel::types::tool::Effects::RUNS, &json!({"command": "pytest -q"}), None, &root).await;
            let mut out = ToolOutput::text(short.clone())
                .with_structured(json!({"stdout": short, "interrupted": false, "exitCode": 1}));
            ev.after(w, &mut out, &|_| None).await;
            ev.flush();
            times.push(t.elapsed());
        }
        let cpu_per = (cpu_ms() - cpu) / runs as f64;
        let (m, p) = stats(times);
        println!(
            "whole watched call, {FILES}-file workspace (one fingerprint): wall median {m:.2} ms, p95 {p:.2} ms; CPU {cpu_per:.2} ms"
        );
    });
}

/// Resident memory of this process, in MiB.
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

/// The detection a command pays: a snapshot of the tree after it, its diff with the one
/// before, its digest (what `Evidence::after` does with it).
fn per_command(
    take: &dyn Fn() -> Snapshot,
    last: &mut Snapshot,
    runs: usize,
    effect: &mut dyn FnMut(usize),
    expect: usize,
) -> (f64, f64, Detection) {
    let mut times = Vec::new();
    let mut how = Detection::Walk;
    for i in 0..runs {
        effect(i);
        let t = Instant::now();
        let now = take();
        let changes = last.diff(&now);
        std::hint::black_box(now.digest());
        times.push(t.elapsed());
        assert_eq!(changes.paths().count(), expect, "{changes:?}");
        how = now.detection();
        *last = now;
    }
    let (m, p) = stats(times);
    (m, p, how)
}

fn detection(files: usize) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    generate_n(&root, files, 2_000);
    let fp = Fingerprinter::new(&root);
    let runs = if files > 50_000 { 10 } else { 30 };
    println!("\n{files} tracked files (+ 2,000 ignored), {runs} commands each:");

    // Before: a walk of the whole tree after every command.
    let mut last = fp.snapshot();
    let walk = || fp.snapshot();
    let (m, p, _) = per_command(&walk, &mut last, runs, &mut |_| {}, 0);
    println!("  before, walk + diff per command (no change): median {m:.2} ms, p95 {p:.2} ms");

    // After: the watcher.
    let rss = rss_mib();
    let t = Instant::now();
    let w = Watcher::start(fp.clone(), Limits::default());
    let started = t.elapsed().as_secs_f64() * 1000.0;
    w.wait_ready();
    let ready = t.elapsed().as_secs_f64() * 1000.0;
    println!(
        "  after, watcher start returns in {started:.3} ms; first walk and watches ready in {ready:.0} ms (in the background); memory +{:.1} MiB",
        rss_mib() - rss
    );
    let mut last = w.snapshot();
    let watched = || w.snapshot();
    let (m, p, how) = per_command(&watched, &mut last, runs, &mut |_| {}, 0);
    println!("  after, no change (`true`): median {m:.3} ms, p95 {p:.3} ms ({how:?})");
    let (m, p, how) = per_command(
        &watched,
        &mut last,
        runs,
        &mut |i| {
            let f = i % 50;
            std::fs::write(
                root.join(format!("src/mod000/sub{}/file{f}.rs", f % 5)),
                format!("changed {i}\n"),
            )
            .unwrap()
        },
        1,
    );
    println!("  after, one file rewritten: median {m:.3} ms, p95 {p:.3} ms ({how:?})");
    let (m, p, how) = per_command(
        &watched,
        &mut last,
        runs,
        &mut |i| {
            let d = root.join(format!("src/new{i}"));
            std::fs::create_dir_all(&d).unwrap();
            for j in 0..10 {
                std::fs::write(d.join(format!("n{j}.rs")), "new\n").unwrap();
            }
        },
        10,
    );
    println!("  after, a new directory of ten files: median {m:.3} ms, p95 {p:.3} ms ({how:?})");
    let (m, p, how) = per_command(
        &watched,
        &mut last,
        runs.min(10),
        &mut |i| {
            for k in 0..1_000 {
                let f = k % files;
                std::fs::write(
                    root.join(format!("src/mod{:03}/sub{}/file{f}.rs", f / 50, f % 5)),
                    format!("v{i}\n"),
                )
                .unwrap();
            }
        },
        1_000.min(files),
    );
    println!("  after, 1,000 files rewritten: median {m:.2} ms, p95 {p:.2} ms ({how:?})");

    // A whole watched `true` call.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let session = tempfile::tempdir().unwrap();
    let ev = Evidence::new(&root, session.path(), Config::default(), false);
    let call = || async {
        let w = ev
            .before(
                "Bash",
                keel::types::tool::Effects::RUNS,
                &json!({"command": "true"}),
                None,
                &root,
            )
            .await;
        let mut out =
            ToolOutput::text(String::new()).with_structured(json!({"stdout": "", "interrupted": false, "exitCode": 0}));
        ev.after(w, &mut out, &|_| None).await;
    };
    rt.block_on(call());
    let mut times = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        rt.block_on(call());
        times.push(t.elapsed());
    }
    let (m, p) = stats(times);
    println!("  after, a whole watched `true` call (Evidence::before + after): median {m:.3} ms, p95 {p:.3} ms");
}
