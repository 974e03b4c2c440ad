//! The file tools against a hostile workspace, through the real binary: symbolic links that flip
//! between the permission check and the open, special files (FIFOs, `/dev/zero`), huge files,
//! costly patterns, names that are not UTF-8, listings outside the workspace, a `kill -9` in
//! the middle of a write, and a repository whose git configuration names programs.

use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::sse::{self, Block, tool};
use crate::support::{Env, ModelServer, Out, Recorded, run_steps};

/// Runs keel through scripted tool-call steps in a permission mode; returns the run and the
/// last request (which carries every tool result).
async fn run_in_mode(env: &Env, mode: &str, steps: Vec<Vec<Block>>) -> (Out, Vec<Recorded>) {
    let server = ModelServer::start().await;
    for step in steps {
        server.push(sse::calls(step));
    }
    server.push(sse::answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "go", "--permission-mode", mode])
        .run()
        .await;
    let requests = server.requests();
    assert!(!requests.is_empty(), "at least one request");
    (out, requests)
}

/// Every tool result of the session as (id, text, is_error), each from the first request that
/// carried it (later requests may show older results compacted).
fn all_results(requests: &[Recorded]) -> Vec<(String, String, bool)> {
    let mut out: Vec<(String, String, bool)> = Vec::new();
    for r in requests {
        for m in r.messages() {
            for b in m["content"].as_array().into_iter().flatten() {
                if b["type"] == "tool_result" {
                    let id = b["tool_use_id"].as_str().unwrap_or_default().to_string();
                    if out.iter().any(|(seen, _, _)| *seen == id) {
                        continue;
                    }
                    let (text, err) = r.tool_result_text(&id);
                    out.push((id, text, err));
                }
            }
        }
    }
    out
}

/// Flips `link` between `a` and `b` (atomically, by renaming a fresh link over it) until stopped.
fn flipper(
    link: std::path::PathBuf,
    a: std::path::PathBuf,
    b: std::path::PathBuf,
) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::spawn(move || {
        let tmp = link.with_extension("flip");
        let mut i = 0u64;
        while !flag.load(Ordering::Relaxed) {
            let target = if i.is_multiple_of(2) { &a } else { &b };
            let _ = std::fs::remove_file(&tmp);
            if symlink(target, &tmp).is_ok() {
                let _ = std::fs::rename(&tmp, &link);
            }
            i += 1;
        }
    });
    (stop, handle)
}

/// A fake HOME holding a shell rc file keel must never show or change.
fn bashrc(env: &Env, content: &str) -> std::path::PathBuf {
    let p = env.home.join(".bashrc");
    std::fs::write(&p, content).unwrap();
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipping_link_never_lets_read_show_a_file_outside() {
    let env = Env::new();
    let secret = bashrc(&env, "export TOKEN=SECRET-FROM-BASHRC\n");
    let inside = env.write("inside.txt", "harmless\n");
    let link = env.path("notes.txt");
    symlink(&inside, &link).unwrap();
    let (stop, flips) = flipper(link.clone(), inside.clone(), secret.clone());
    let steps: Vec<Vec<Block>> = (0..15)
        .map(|s| {
            (0..20)
                .map(|i| tool(&format!("r{s}-{i}"), "Read", json!({"file_path": link})))
                .collect()
        })
        .collect();
    // Default mode: a read outside the workspace would need a human, which -p has not.
    let (out, requests) = run_in_mode(&env, "default", steps).await;
    stop.store(true, Ordering::Relaxed);
    flips.join().unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = all_results(&requests);
    assert_eq!(results.len(), 300);
    let shown = results.iter().filter(|(_, t, e)| !e && t.contains("harmless")).count();
    for (id, text, _) in &results {
        assert!(
            !text.contains("SECRET-FROM-BASHRC"),
            "{id} showed the outside file: {text}"
        );
    }
    assert!(shown > 0, "the workspace file must still be readable through the link");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipping_link_never_lets_write_or_edit_change_a_file_outside() {
    let env = Env::new();
    // Both files hold the same text, so a read of either satisfies the read-before-write guard.
    let secret = bashrc(&env, "same line\n");
    let inside = env.write("inside.txt", "same line\n");
    let link = env.path("notes.txt");
    symlink(&inside, &link).unwrap();
    let before = std::fs::metadata(&secret).unwrap();
    let (stop, flips) = flipper(link.clone(), inside.clone(), secret.clone());
    let mut steps: Vec<Vec<Block>> = Vec::new();
    for s in 0..40 {
        steps.push(vec![tool(&format!("r{s}"), "Read", json!({"file_path": link}))]);
        steps.push(vec![tool(
            &format!("w{s}"),
            "Write",
            json!({"file_path": link, "content": "same line\n"}),
        )]);
        // An edit that changes nothing in effect: "line" for "line" in a wider anchor.
        steps.push(vec![tool(
            &format!("e{s}"),
            "Edit",
            json!({"file_path": link, "old_string": "same line\n", "new_string": "same line\n\n"}),
        )]);
        steps.push(vec![tool(&format!("r{s}b"), "Read", json!({"file_path": link}))]);
        steps.push(vec![tool(
            &format!("e{s}b"),
            "Edit",
            json!({"file_path": link, "old_string": "same line\n\n", "new_string": "same line\n"}),
        )]);
    }
    // acceptEdits: writes inside the workspace are approved; outside they need a human.
    let (out, requests) = run_in_mode(&env, "acceptEdits", steps).await;
    stop.store(true, Ordering::Relaxed);
    flips.join().unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let meta = std::fs::symlink_metadata(&secret).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "same line\n");
    // Not even rewritten with the same bytes: an atomic write would give it a new inode.
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        (meta.ino(), meta.mtime_nsec()),
        (before.ino(), before.mtime_nsec()),
        "the outside file was rewritten"
    );

    let edited = all_results(&requests)
        .iter()
        .filter(|(id, t, e)| id.starts_with('e') && !e && t.contains("Edited"))
        .count();
    assert!(edited > 0, "the workspace file must still be editable through the link");
    assert!(
        !std::fs::read_dir(&env.home)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(".keel-write-")),
        "no temporary file was even created next to the outside file"
    );
}

#[tokio::test]
async fn special_files_are_refused_at_once_by_every_file_tool() {
    let env = Env::new();
    let fifo = env.path("pipe");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let zero = env.path("zero.txt");
    symlink("/dev/zero", &zero).unwrap();
    let mut steps = Vec::new();
    for (name, p) in [("fifo", &fifo), ("zero", &zero)] {
        steps.push(vec![
            tool(&format!("read-{name}"), "Read", json!({"file_path": p})),
            tool(&format!("grep-{name}"), "Grep", json!({"pattern": "x", "path": p})),
        ]);
        steps.push(vec![tool(
            &format!("write-{name}"),
            "Write",
            json!({"file_path": p, "content": "x"}),
        )]);
        steps.push(vec![tool(
            &format!("edit-{name}"),
            "Edit",
            json!({"file_path": p, "old_string": "a", "new_string": "b"}),
        )]);
    }
    let started = Instant::now();
    let (out, last) = run_steps(&env, steps).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "a special file blocked a tool"
    );
    for tool in ["read", "grep", "write", "edit"] {
        let (text, err) = last.tool_result_text(&format!("{tool}-fifo"));
        assert!(err && text.contains("FIFO"), "{tool} on a FIFO: {text}");
        let (text, err) = last.tool_result_text(&format!("{tool}-zero"));
        assert!(err && text.contains("character device"), "{tool} on /dev/zero: {text}");
    }
    // The link still points where it did; nothing was written through it.
    assert_eq!(std::fs::read_link(&zero).unwrap(), std::path::Path::new("/dev/zero"));
}

/// Peak resident memory of a process so far, in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_five_lines_of_a_huge_file_stays_cheap() {
    let env = Env::new();
    let big = env.path("empty-lines.txt");
    std::fs::write(&big, vec![b'\n'; 60 << 20]).unwrap();
    let server = ModelServer::start().await;
    server.push(sse::calls(vec![tool(
        "r1",
        "Read",
        json!({"file_path": big, "offset": 1000, "limit": 5}),
    )]));
    // The answer comes slowly, so keel is still alive to be measured after the read.
    server.push(crate::support::server::Reply::Sse {
        chunks: sse::frames(&[sse::text("done")], "end_turn", 10, 10),
        pace: Duration::from_millis(300),
    });
    let mut keel = env.keel(&server);
    keel.args(["-p", "go", "--permission-mode", "bypassPermissions"]);
    let child = keel.spawn();
    let pid = child.id().unwrap();
    let watcher = tokio::spawn(async move {
        let mut peak = 0;
        while let Some(kib) = peak_rss_kib(pid) {
            peak = peak.max(kib);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        peak
    });
    let out = crate::support::finish(child).await;
    let peak = watcher.await.unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let last = server.requests().pop().unwrap();
    let (text, err) = last.tool_result_text("r1");
    assert!(!err, "{text}");
    assert!(text.contains("  1004\t") && !text.contains("  1005\t"), "{text}");
    assert!(text.contains("of 62914560"), "the total is still counted: {text}");
    assert!(peak > 0, "keel's memory was measured");
    assert!(peak < 150 * 1024, "reading 5 lines took {} MiB of memory", peak / 1024);
}

#[tokio::test]
async fn a_pathological_pattern_gets_a_clear_error_within_its_budget() {
    let env = Env::new();
    // Long runs of `a`: the cost of this pattern grows with the length of a line.
    env.write("a.txt", &format!("{}\n", "a".repeat(200_000)).repeat(2));
    let server = ModelServer::start().await;
    server.push(sse::calls(vec![tool(
        "g1",
        "Grep",
        json!({"pattern": "(a{1000}){100}"}),
    )]));
    server.push(sse::answer("done"));
    let started = Instant::now();
    let out = env
        .keel(&server)
        .env("KEEL_GREP_TIMEOUT_MS", "1500")
        .args(["-p", "go"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the search was not stopped"
    );
    let last = server.requests().pop().unwrap();
    let (text, err) = last.tool_result_text("g1");
    assert!(err, "{text}");
    assert!(
        text.contains("time budget") && text.contains("Simplify the pattern"),
        "{text}"
    );
}

#[tokio::test]
async fn names_that_are_not_utf8_are_explained_by_glob_and_read() {
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    let raw = env.work.join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt"));
    std::fs::write(&raw, "bytes\n").unwrap();
    let (out, last) = run_steps(
        &env,
        vec![vec![
            tool("g1", "Glob", json!({"pattern": "*.txt"})),
            tool("r1", "Read", json!({"file_path": env.path("caf\u{fffd}.txt")})),
        ]],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("g1");
    assert!(!err, "{text}");
    assert!(
        text.contains("not valid UTF-8") && text.contains("caf\\xe9.txt'"),
        "{text}"
    );
    let (text, err) = last.tool_result_text("r1");
    assert!(err, "{text}");
    assert!(
        text.contains("not valid UTF-8") && !text.contains("does not exist"),
        "{text}"
    );
    assert!(text.contains("caf\\xe9.txt'"), "{text}");
}

#[tokio::test]
async fn glob_outside_the_workspace_asks_and_did_you_mean_hides_denied_files() {
    let env = Env::new();
    let outside = env.home.join("private");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("diary-2024.txt"), "x").unwrap();
    env.write(".env", "API_KEY=SECRET\n");
    let (out, requests) = run_in_mode(
        &env,
        "default",
        vec![vec![
            tool("g1", "Glob", json!({"pattern": format!("{}/*.txt", outside.display())})),
            tool("g2", "Glob", json!({"pattern": "../home/private/*.txt"})),
            tool("r1", "Read", json!({"file_path": env.path(".ENV")})),
        ]],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let last = requests.last().unwrap();
    for id in ["g1", "g2"] {
        let (text, err) = last.tool_result_text(id);
        assert!(err && text.contains("outside the working directories"), "{id}: {text}");
        assert!(!text.contains("diary-2024"), "{id} listed a name outside: {text}");
    }
    let (text, err) = last.tool_result_text("r1");
    assert!(err && text.contains("does not exist"), "{text}");
    assert!(!text.contains("Did you mean"), "a denied file was suggested: {text}");
}

#[tokio::test]
async fn temporary_files_of_a_killed_write_are_swept_at_the_next_start() {
    let env = Env::new();
    let big = env.path("data.txt");
    let filler = "filler line of some length to make the file big\n".repeat(1 << 20);
    std::fs::write(&big, format!("UNIQUE\n{filler}")).unwrap();
    let temps = |env: &Env| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&env.work)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".keel-write-"))
            .map(|e| e.path())
            .collect()
    };
    let mut caught = false;
    for attempt in 0..6 {
        let server = ModelServer::start().await;
        server
            .push(sse::calls(vec![tool(
                "r",
                "Read",
                json!({"file_path": big, "limit": 1}),
            )]))
            .push(sse::calls(vec![tool(
                "e",
                "Edit",
                json!({"file_path": big, "old_string": "UNIQUE", "new_string": format!("UNIQUE{attempt}")}),
            )]))
            .push(sse::answer("done"));
        let mut keel = env.keel(&server);
        keel.args(["-p", "go", "--permission-mode", "acceptEdits"]);
        let mut child = keel.spawn();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if !temps(&env).is_empty() {
                child.start_kill().unwrap();
                caught = true;
                break;
            }
            if child.try_wait().unwrap().is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        let _ = child.wait().await;
        if caught {
            break;
        }
    }
    assert!(caught, "never caught keel in the middle of a write");
    assert!(!temps(&env).is_empty(), "the killed write left its temporary file");
    // The next start removes it; the file itself is whole (old or new content).
    let server = ModelServer::start().await;
    server.push(sse::answer("hello"));
    let out = env.keel(&server).args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(temps(&env).is_empty(), "left over: {:?}", temps(&env));
    let text = std::fs::read_to_string(&big).unwrap();
    assert!(
        text.starts_with("UNIQUE") && text.ends_with(&filler),
        "the file is whole"
    );
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

#[tokio::test]
async fn keels_git_snapshot_runs_no_filter_driver_of_the_repository() {
    let env = Env::new();
    let marker = env.home.join("filter-ran");
    git(&env.work, &["init", "-q"]);
    env.write(".gitattributes", "*.txt filter=x\n");
    env.write("a.txt", "a\n");
    git(&env.work, &["add", "."]);
    git(&env.work, &["commit", "-q", "-m", "init"]);
    let driver = format!("sh -c 'echo ran >> \"{}\"; cat'", marker.display());
    git(&env.work, &["config", "filter.x.clean", &driver]);
    git(&env.work, &["config", "filter.x.required", "true"]);
    // Same content, another mtime than the index records: a status has to run the file
    // through its clean filter.
    let a = env.write("a.txt", "a\n");
    let written = std::fs::metadata(&a).unwrap().modified().unwrap();
    std::fs::File::options()
        .write(true)
        .open(&a)
        .unwrap()
        .set_modified(written - Duration::from_secs(10))
        .unwrap();
    let server = ModelServer::start().await;
    server.push(sse::answer("ok"));
    let out = env.keel(&server).args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!marker.exists(), "keel ran the repository's filter driver");
    // The snapshot was still taken (the driver was switched off, not the snapshot).
    let first = &server.requests()[0].body;
    let system: String = first["system"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert!(system.contains("Recent commits"), "no git snapshot in the prompt");
    // And the fixture is live: a plain git status does run it.
    git(&env.work, &["status", "--short"]);
    assert!(
        marker.exists(),
        "the fixture's filter should run under a plain git status"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mentions_of_special_files_are_refused_and_the_session_stays_responsive() {
    use crate::support::tmux::Tmux;
    let env = Env::new();
    symlink("/dev/zero", env.path("zero.txt")).unwrap();
    nix::unistd::mkfifo(&env.path("pipe"), nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    env.write("ok.txt", "plain text\n");
    let server = ModelServer::start().await;
    server
        .push(sse::answer("Looked at them."))
        .push(sse::answer("Still here."));
    let t = Tmux::start(&env, &server, &[], 110, 30);
    t.wait_for_text("Ask keel").await;
    t.type_text("see @zero.txt and @pipe and @ok.txt please");
    t.press(&["Enter"]);
    let s = t.wait_for_text("Looked at them.").await;
    assert!(s.contains("character device"), "{s}");
    assert!(s.contains("FIFO"), "{s}");
    let first = &server.requests()[0];
    let prompt = first.messages().last().unwrap().to_string();
    assert!(prompt.contains("plain text"), "the regular file is attached: {prompt}");
    assert!(!prompt.contains("\\u0000"), "nothing of /dev/zero was attached");
    // The session goes on.
    t.type_text("more");
    t.press(&["Enter"]);
    t.wait_for_text("Still here.").await;
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}

/// Instruction files are keel's own reads of repository files: a FIFO or a link to a device
/// among them must not stall or flood the start.
#[tokio::test]
async fn instruction_files_that_are_special_files_do_not_stall_the_start() {
    let env = Env::new();
    nix::unistd::mkfifo(&env.path("CLAUDE.md"), nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    symlink("/dev/zero", env.path("AGENTS.md")).unwrap();
    let server = ModelServer::start().await;
    server.push(sse::answer("started"));
    let out = env.keel(&server).args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("started"), "{}", out.stdout);
}

/// Ignore files are read by the walk itself: one that is a FIFO (or a link to `/dev/zero`)
/// would stall Glob and Grep or exhaust memory. (FIFOs here: a regression blocks, it does not
/// eat the machine's memory.)
#[tokio::test]
async fn hostile_ignore_files_do_not_stall_glob_or_grep() {
    let env = Env::new();
    let mode = nix::sys::stat::Mode::from_bits_truncate(0o644);
    env.write("src/main.rs", "fn main() {}\n");
    env.write("vendor/lib.rs", "fn lib() {}\n");
    nix::unistd::mkfifo(&env.path("vendor/.gitignore"), mode).unwrap();
    env.write("locked/x.rs", "fn x() {}\n");
    nix::unistd::mkfifo(&env.path("locked/.gitignore"), mode).unwrap();
    let (out, last) = run_steps(
        &env,
        vec![vec![
            tool("g1", "Glob", json!({"pattern": "**/*.rs"})),
            tool("s1", "Grep", json!({"pattern": "fn "})),
            tool("g2", "Glob", json!({"pattern": "*.rs", "path": env.path("locked")})),
        ]],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, err) = last.tool_result_text("g1");
    assert!(
        !err && text.contains("src/main.rs") && !text.contains("lib.rs"),
        "{text}"
    );
    assert!(text.contains("2 directories not searched"), "{text}");
    let (text, err) = last.tool_result_text("s1");
    assert!(!err && text.contains("src/main.rs"), "{text}");
    assert!(text.contains("2 directories not searched"), "{text}");
    let (text, err) = last.tool_result_text("g2");
    assert!(err && text.contains("FIFO"), "{text}");
}

/// Settings, skills and agent definitions are repository files keel reads itself: special
/// files among them give a clear error or are skipped, never a hang.
#[tokio::test]
async fn special_files_among_settings_skills_and_agents_never_hang_the_start() {
    let mode = nix::sys::stat::Mode::from_bits_truncate(0o644);
    let env = Env::new();
    std::fs::create_dir_all(env.path(".claude/skills/x")).unwrap();
    std::fs::create_dir_all(env.path(".claude/agents")).unwrap();
    nix::unistd::mkfifo(&env.path(".claude/skills/x/SKILL.md"), mode).unwrap();
    symlink("/dev/zero", env.path(".claude/agents/helper.md")).unwrap();
    let server = ModelServer::start().await;
    server.push(sse::answer("started"));
    let out = env.keel(&server).args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("started"), "{}", out.stdout);

    let env = Env::new();
    std::fs::create_dir_all(env.path(".claude")).unwrap();
    nix::unistd::mkfifo(&env.path(".claude/settings.json"), mode).unwrap();
    let out = env.keel_offline().args(["-p", "hi"]).run().await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("FIFO"), "{}", out.stderr);
}
