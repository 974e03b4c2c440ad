//! Test support: a scripted model server and a runner for the real `keel` binary.

pub mod harbor;
pub mod host;
pub mod openai;
pub mod procs;
pub mod runners;
pub mod sdk;
pub mod server;
pub mod skip;
pub mod sse;
pub mod tmux;
pub mod ts_sdk;
pub mod web;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;

pub use server::{ModelServer, Recorded, Reply};

/// Longest any single keel run may take in a test before it counts as a hang.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// A sandbox for one test: a private HOME (so no real settings leak in) and a work directory.
pub struct Env {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub work: PathBuf,
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let work = dir.path().join("work");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        let work = work.canonicalize().unwrap();
        Env { _dir: dir, home, work }
    }

    pub fn write(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.work.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(&p, content).unwrap();
        p
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.work.join(rel)
    }

    /// Records that the user trusts the work directory (as answering keel's question does), so
    /// interactive runs take its project settings without asking.
    pub fn trust_work(&self) {
        let file = self.home.join(".keel/trusted-folders.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let record =
            serde_json::json!({"folders": {self.work.to_str().unwrap(): {"trustedAt": "2025-01-01T00:00:00Z"}}});
        std::fs::write(file, record.to_string()).unwrap();
    }

    /// Copies a folder of `tests/fixtures/ecosystem` into the work directory, unchanged
    /// (executable bits kept).
    pub fn install_fixture(&self, from: &str, to: &str) -> PathBuf {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/ecosystem")
            .join(from);
        let dest = self.work.join(to);
        copy_tree(&src, &dest);
        dest
    }

    /// Makes the work directory a git repository with one commit of everything in it.
    pub fn git_init(&self) {
        for args in [
            &["init", "-q"][..],
            &["config", "user.email", "test@example.com"],
            &["config", "user.name", "Test"],
            &["add", "-A"],
            &["commit", "-qm", "initial import"],
        ] {
            self.git(args);
        }
    }

    /// Runs git in the work directory; panics when it fails.
    pub fn git(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(&self.work)
            .args(args)
            .env("HOME", &self.home)
            .output()
            .expect("run git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// keel's per-project directory for the work directory (transcripts, memory).
    pub fn project_dir(&self) -> PathBuf {
        let encoded: String = self
            .work
            .to_string_lossy()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        self.home.join(".keel/projects").join(encoded)
    }

    /// keel pointed at `server`, in the work directory, with a private home.
    pub fn keel(&self, server: &ModelServer) -> Keel {
        let mut k = self.keel_offline();
        k.env("ANTHROPIC_BASE_URL", server.url())
            .env("ANTHROPIC_API_KEY", "test-key");
        k
    }

    /// keel speaking an OpenAI protocol (`openai` or `openai-responses`) to `server`.
    pub fn keel_openai(&self, server: &ModelServer, provider: &str) -> Keel {
        let mut k = self.keel_offline();
        k.env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
            .env("OPENAI_API_KEY", "test-openai-key")
            .args(["--provider", provider]);
        k
    }

    /// keel with no model server configured.
    pub fn keel_offline(&self) -> Keel {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"));
        cmd.current_dir(&self.work)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("KEEL_HOME", self.home.join(".keel"))
            .env("LANG", "C.UTF-8")
            // The stop gate would send every scripted edit back for a test run; the evidence
            // tests turn it on again.
            .env("KEEL_VERIFICATION_GATE", "off")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        Keel { cmd, stdin: None }
    }

    /// The transcript files of this work directory's project.
    pub fn transcripts(&self) -> Vec<PathBuf> {
        let encoded: String = self
            .work
            .to_string_lossy()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let dir = self.home.join(".keel/projects").join(encoded);
        let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }
}

pub struct Keel {
    cmd: tokio::process::Command,
    stdin: Option<String>,
}

#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// stdout as one JSON document.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}\nstderr:\n{}", self.stdout, self.stderr))
    }

    /// stdout as NDJSON lines.
    pub fn lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("line is not JSON ({e}): {l}")))
            .collect()
    }
}

impl Keel {
    pub fn arg(&mut self, a: impl AsRef<std::ffi::OsStr>) -> &mut Self {
        self.cmd.arg(a);
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.cmd.args(args);
        self
    }

    pub fn env(&mut self, k: &str, v: impl AsRef<std::ffi::OsStr>) -> &mut Self {
        self.cmd.env(k, v);
        self
    }

    /// Runs keel in `dir` instead of the work directory.
    pub fn current_dir(&mut self, dir: &Path) -> &mut Self {
        self.cmd.current_dir(dir);
        self
    }

    pub fn env_remove(&mut self, k: &str) -> &mut Self {
        self.cmd.env_remove(k);
        self
    }

    pub fn stdin(&mut self, s: &str) -> &mut Self {
        self.stdin = Some(s.to_string());
        self
    }

    pub fn spawn(&mut self) -> tokio::process::Child {
        let mut child = self.cmd.spawn().expect("spawn keel");
        let input = self.stdin.take();
        let stdin = child.stdin.take();
        tokio::spawn(async move {
            if let (Some(mut pipe), Some(text)) = (stdin, input) {
                let _ = pipe.write_all(text.as_bytes()).await;
            }
            // Dropping the pipe closes stdin.
        });
        child
    }

    /// Starts keel with its stdout on `stdout` (a terminal, say) instead of a pipe.
    pub fn spawn_with_stdout(&mut self, stdout: Stdio) -> tokio::process::Child {
        self.cmd.stdout(stdout);
        self.spawn()
    }

    /// Starts keel with its stdin left open for the test to write to (a program driving it).
    pub fn spawn_driven(&mut self) -> tokio::process::Child {
        self.cmd.spawn().expect("spawn keel")
    }

    pub async fn run(&mut self) -> Out {
        let child = self.spawn();
        finish(child).await
    }
}

pub async fn finish(child: tokio::process::Child) -> Out {
    let out = tokio::time::timeout(RUN_TIMEOUT, child.wait_with_output())
        .await
        .expect("keel did not finish within the test timeout")
        .expect("wait for keel");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn copy_tree(src: &Path, dest: &Path) {
    std::fs::create_dir_all(dest).unwrap();
    for e in std::fs::read_dir(src).unwrap_or_else(|e| panic!("fixture {}: {e}", src.display())) {
        let e = e.unwrap();
        let to = dest.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// Reads a JSONL file into values, skipping nothing.
pub fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs keel through scripted tool-call steps (one model turn each) and a final answer; returns
/// the run and the last request, which carries every tool result of the session.
pub async fn run_steps(env: &Env, steps: Vec<Vec<sse::Block>>) -> (Out, Recorded) {
    let server = ModelServer::start().await;
    for step in steps {
        server.push(sse::calls(step));
    }
    server.push(sse::answer("done"));
    // These runs test the tools' own guards, not the permission layer, which lets them through.
    let out = env
        .keel(&server)
        .args(["-p", "go", "--permission-mode", "bypassPermissions"])
        .run()
        .await;
    let last = server.requests().pop().expect("at least one request");
    (out, last)
}
