//! Drives the real `keel` binary in a tmux pane: type, press keys, read the screen.
//! Each session has its own tmux server socket, so tests run in parallel without sharing.

use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::{Env, ModelServer};

/// Longest a screen may take to show what a test waits for.
pub const SCREEN_TIMEOUT: Duration = Duration::from_secs(40);

static NEXT: AtomicU32 = AtomicU32::new(0);

pub struct Tmux {
    socket: String,
    /// keel's exit status is written here by the pane's shell (tmux's own record of it is
    /// not reliable in every environment).
    status_file: std::path::PathBuf,
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

impl Tmux {
    /// Starts keel in a `width`×`height` pane in the env's work directory, pointed at `server`.
    pub fn start(env: &Env, server: &ModelServer, args: &[&str], width: u16, height: u16) -> Tmux {
        Tmux::start_with(env, server, args, width, height, &[])
    }

    /// [`Tmux::start`] with more environment variables for keel.
    pub fn start_with(
        env: &Env,
        server: &ModelServer,
        args: &[&str],
        width: u16,
        height: u16,
        extra: &[(&str, String)],
    ) -> Tmux {
        let socket = format!(
            "keel-e2e-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let conf = env.home.join("tmux.conf");
        // The pane stays after keel exits, so the test can read its exit status and screen.
        std::fs::write(&conf, "set -g remain-on-exit on\nset -g status off\n").unwrap();
        let vars = [
            ("PATH", std::env::var("PATH").unwrap_or_default()),
            ("HOME", env.home.display().to_string()),
            ("KEEL_HOME", env.home.join(".keel").display().to_string()),
            ("LANG", "C.UTF-8".to_string()),
            ("TERM", "tmux-256color".to_string()),
            ("ANTHROPIC_BASE_URL", server.url()),
            ("ANTHROPIC_API_KEY", "test-key".to_string()),
            ("KEEL_VERIFICATION_GATE", "off".to_string()),
        ];
        let status_file = env.home.join(format!("{socket}.status"));
        let mut cmd = String::from("env -i");
        for (k, v) in vars
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .chain(extra.iter().map(|(k, v)| (*k, v.as_str())))
        {
            cmd.push_str(&format!(" {k}={}", shell_quote(v)));
        }
        cmd.push(' ');
        cmd.push_str(&shell_quote(env!("CARGO_BIN_EXE_keel")));
        for a in args {
            cmd.push(' ');
            cmd.push_str(&shell_quote(a));
        }
        cmd.push_str(&format!("; echo $? > {}", shell_quote(status_file.to_str().unwrap())));
        let t = Tmux { socket, status_file };
        let out = t.tmux(&[
            "-f",
            conf.to_str().unwrap(),
            "new-session",
            "-d",
            "-s",
            "keel",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            "-c",
            env.work.to_str().unwrap(),
            &cmd,
        ]);
        assert!(
            out.status.success(),
            "tmux failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        t
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux")
    }

    /// Types text literally.
    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "keel", "-l", text]);
    }

    /// Presses keys by tmux name: `Enter`, `Escape`, `C-d`, `BTab`, `PageUp`…
    pub fn press(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "keel"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// The screen and the scrollback above it.
    pub fn screen_with_history(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-S", "-", "-t", "keel"]).stdout).into_owned()
    }

    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "keel"]).stdout).into_owned()
    }

    /// A tmux format value of the pane, e.g. `#{pane_dead_status}`.
    pub fn format(&self, f: &str) -> String {
        String::from_utf8_lossy(&self.tmux(&["display-message", "-p", "-t", "keel", f]).stdout)
            .trim()
            .to_string()
    }

    pub fn resize(&self, width: u16, height: u16) {
        self.tmux(&[
            "resize-window",
            "-t",
            "keel",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
        ]);
    }

    /// Waits until the screen satisfies `pred`; fails with the last screen otherwise.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + SCREEN_TIMEOUT;
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("timed out waiting for {what}; the screen was:\n{s}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn wait_for_text(&self, text: &str) -> String {
        self.wait_for(&format!("`{text}`"), |s| s.contains(text)).await
    }

    /// keel's process id (the pane runs a shell whose child keel is).
    pub fn keel_pid(&self) -> i32 {
        let shell = self.format("#{pane_pid}");
        let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap_or_default();
        children
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("keel is not running under the pane's shell {shell}"))
    }

    /// Waits for keel to exit and returns its exit status.
    pub async fn wait_exit(&self) -> i32 {
        let deadline = tokio::time::Instant::now() + SCREEN_TIMEOUT;
        loop {
            if let Ok(s) = std::fs::read_to_string(&self.status_file)
                && let Ok(status) = s.trim().parse()
            {
                return status;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("keel did not exit; the screen was:\n{}", self.screen());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}
