//! One language server over stdio: started, initialised in the background, told about each
//! edited file's full text, and its published diagnostics kept per file. Requests the server
//! makes of keel get empty answers (keel offers no configuration or workspace edits).

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::BufReader;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{Mutex, Notify};

use super::wire::{read_message, write_message};

/// Most of a server's stderr kept to explain why it stopped.
const STDERR_TAIL: usize = 2_000;

/// Diagnostics a server published for one file.
#[derive(Debug, Clone, Default)]
pub struct Published {
    /// Bumped on every publication keel receives (of any file).
    pub seq: u64,
    pub version: Option<i64>,
    pub items: Vec<Value>,
}

#[derive(Default)]
struct State {
    published: HashMap<String, Published>,
    seq: u64,
    /// Why the server is gone (it exited, its output broke).
    ended: Option<String>,
    stderr: String,
}

pub struct Server {
    pub program: String,
    stdin: Mutex<ChildStdin>,
    child: Mutex<Child>,
    state: Arc<std::sync::Mutex<State>>,
    changed: Arc<Notify>,
    ready: Arc<AtomicBool>,
    next_id: AtomicI64,
    /// Each open file's version.
    versions: Mutex<HashMap<String, i64>>,
    /// The server's settings: its `initializationOptions`, and its answer when it asks for the
    /// configuration section named here.
    settings: Option<(String, Value)>,
    _group: crate::shutdown::GroupGuard,
}

fn lock(state: &std::sync::Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn uri_of(path: &Path) -> String {
    url::Url::from_file_path(path).map_or_else(|_| format!("file://{}", path.display()), |u| u.to_string())
}

impl Server {
    /// Starts `command` (program and arguments) in `root` and begins the handshake, telling
    /// the server `settings`. The server gets keel's environment without the variables that
    /// look like secrets.
    pub fn start(command: &[String], root: &Path, settings: Option<(String, Value)>) -> std::io::Result<Arc<Server>> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command"))?;
        let secrets = crate::sandbox::confiner::secret_env_names();
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env_clear()
            .envs(super::launch::server_env(std::env::vars_os(), &secrets))
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let mut child = cmd.spawn()?;
        let group = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .map_or_else(crate::shutdown::GroupGuard::none, crate::shutdown::GroupGuard::register);
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(std::io::Error::other("the server's pipes could not be opened"));
        };
        let server = Arc::new(Server {
            program: Path::new(program)
                .file_name()
                .map_or_else(|| program.clone(), |n| n.to_string_lossy().into_owned()),
            stdin: Mutex::new(stdin),
            child: Mutex::new(child),
            state: Arc::default(),
            changed: Arc::default(),
            ready: Arc::default(),
            next_id: AtomicI64::new(1),
            versions: Mutex::default(),
            settings,
            _group: group,
        });
        let weak = Arc::downgrade(&server);
        let (state, changed) = (server.state.clone(), server.changed.clone());
        tokio::spawn(read_loop(BufReader::new(stdout), weak, state.clone(), changed.clone()));
        tokio::spawn(stderr_tail(stderr, state));
        let init = server.clone();
        let root = root.to_path_buf();
        tokio::spawn(async move { init.initialize(&root).await });
        Ok(server)
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Why the server stopped, with the end of what it wrote on stderr.
    pub fn ended(&self) -> Option<String> {
        let s = lock(&self.state);
        s.ended.as_ref().map(|why| {
            let tail = s.stderr.trim();
            if tail.is_empty() {
                why.clone()
            } else {
                format!("{why}; it said: {}", super::clip(tail, 400))
            }
        })
    }

    async fn initialize(&self, root: &Path) {
        let params = json!({
            "processId": std::process::id(),
            "rootUri": uri_of(root),
            "rootPath": root.display().to_string(),
            "workspaceFolders": [{"uri": uri_of(root), "name": root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()}],
            "capabilities": {
                "textDocument": {
                    "synchronization": {"didSave": true},
                    "publishDiagnostics": {"versionSupport": true}
                },
                "workspace": {"configuration": true, "workspaceFolders": true}
            },
            "clientInfo": {"name": "keel"}
        });
        let mut params = params;
        if let Some((_, options)) = &self.settings {
            params["initializationOptions"] = options.clone();
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if self
            .send(json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": params}))
            .await
            .is_err()
        {
            return;
        }
        // The answer is noticed by the read loop (it sets `ready` on the first response).
        let _ = id;
    }

    async fn send(&self, message: Value) -> Result<(), super::wire::WireError> {
        let mut stdin = self.stdin.lock().await;
        let sent = write_message(&mut *stdin, &message).await;
        if let Err(e) = &sent {
            let mut s = lock(&self.state);
            s.ended.get_or_insert_with(|| format!("writing to it failed ({e})"));
        }
        sent
    }

    /// The current publication counter (to wait for a newer one).
    pub fn seq(&self) -> u64 {
        lock(&self.state).seq
    }

    /// Tells the server the file's whole new text (open on first sight, then change and save);
    /// returns the version sent.
    pub async fn sync(&self, path: &Path, language_id: &str, text: &str) -> i64 {
        let uri = uri_of(path);
        let mut versions = self.versions.lock().await;
        let version = versions.get(&uri).map_or(1, |v| v + 1);
        let first = !versions.contains_key(&uri);
        versions.insert(uri.clone(), version);
        drop(versions);
        let message = if first {
            json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                "textDocument": {"uri": uri, "languageId": language_id, "version": version, "text": text}}})
        } else {
            json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}})
        };
        let _ = self.send(message).await;
        let _ = self
            .send(json!({"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {"textDocument": {"uri": uri}}}))
            .await;
        version
    }

    /// Waits until the server publishes diagnostics for `path` newer than `after` (and not for
    /// an older version than `version`), or the time is up.
    pub async fn wait_published(&self, path: &Path, after: u64, version: i64, within: Duration) -> Option<Published> {
        let uri = uri_of(path);
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let notified = self.changed.notified();
            {
                let s = lock(&self.state);
                if let Some(p) = s.published.get(&uri)
                    && p.seq > after
                    && p.version.is_none_or(|v| v >= version)
                {
                    return Some(p.clone());
                }
                if s.ended.is_some() {
                    return None;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return None;
            }
        }
    }

    /// Waits until the handshake is done or the time is up; whether it is done.
    pub async fn wait_ready(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let notified = self.changed.notified();
            if self.is_ready() {
                return true;
            }
            if lock(&self.state).ended.is_some() {
                return false;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.is_ready();
            }
        }
    }

    /// Asks the server to exit, then kills its process group.
    pub async fn stop(&self) {
        let _ = tokio::time::timeout(Duration::from_millis(300), async {
            let _ = self
                .send(json!({"jsonrpc": "2.0", "id": 0, "method": "shutdown"}))
                .await;
            let _ = self.send(json!({"jsonrpc": "2.0", "method": "exit"})).await;
        })
        .await;
        let mut child = self.child.lock().await;
        if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
        let _ = child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(1), child.wait()).await;
    }
}

async fn read_loop(
    mut out: BufReader<tokio::process::ChildStdout>,
    server: std::sync::Weak<Server>,
    state: Arc<std::sync::Mutex<State>>,
    changed: Arc<Notify>,
) {
    loop {
        let message = match read_message(&mut out).await {
            Ok(m) => m,
            Err(e) => {
                lock(&state).ended.get_or_insert_with(|| format!("it stopped ({e})"));
                changed.notify_waiters();
                return;
            }
        };
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").filter(|v| !v.is_null()).cloned();
        match (method, id) {
            (Some("textDocument/publishDiagnostics"), None) => {
                let params = &message["params"];
                if let Some(uri) = params.get("uri").and_then(Value::as_str) {
                    let mut s = lock(&state);
                    s.seq += 1;
                    let seq = s.seq;
                    let items = params
                        .get("diagnostics")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    let version = params.get("version").and_then(Value::as_i64);
                    s.published.insert(uri.to_string(), Published { seq, version, items });
                }
                changed.notify_waiters();
            }
            // A request of the server: answered, emptily.
            (Some(method), Some(id)) => {
                let Some(server) = server.upgrade() else { return };
                let result = if method == "workspace/configuration" {
                    let items = message["params"]["items"].as_array().cloned().unwrap_or_default();
                    super::launch::configuration_answer(server.settings.as_ref(), &items)
                } else {
                    Value::Null
                };
                let _ = server.send(json!({"jsonrpc": "2.0", "id": id, "result": result})).await;
            }
            // A response: the only request keel waits on is `initialize`.
            (None, Some(_)) => {
                let Some(server) = server.upgrade() else { return };
                if !server.ready.load(Ordering::Acquire) {
                    if message.get("error").is_some() {
                        lock(&state).ended = Some(format!("it refused to start: {}", message["error"]));
                    } else {
                        let _ = server
                            .send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
                            .await;
                        server.ready.store(true, Ordering::Release);
                    }
                    changed.notify_waiters();
                }
            }
            _ => {}
        }
    }
}

async fn stderr_tail(mut err: tokio::process::ChildStderr, state: Arc<std::sync::Mutex<State>>) {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 4096];
    while let Ok(n) = err.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut s = lock(&state);
        s.stderr.push_str(&String::from_utf8_lossy(&buf[..n]));
        if s.stderr.len() > STDERR_TAIL {
            let cut = s.stderr.len() - STDERR_TAIL;
            let cut = (cut..s.stderr.len())
                .find(|i| s.stderr.is_char_boundary(*i))
                .unwrap_or(0);
            s.stderr.drain(..cut);
        }
    }
}
