//! Bash: shell commands in the session's working directory, each in its own process group.
//!
//! `spawn.rs` builds every child process (the single place for process policy), `run.rs` runs
//! one in the foreground with timeout and cancellation, `background.rs` keeps the session's
//! background shells, `manage.rs` holds BashOutput and KillShell, `output.rs` reads output files.

pub mod background;
pub mod gate;
pub mod manage;
pub mod output;
pub mod process;
pub mod run;
pub mod spawn;

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Body, Capability, Declared, Effects, RuleGrammar, ShellEnv, Subject, Tool, ToolContext, ToolError, ToolOutput,
    Workspace, parse_input,
};
use crate::sandbox::{Confinement, SandboxMode};
use run::{Ending, run_foreground};
use spawn::Confine;

pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Characters of output kept in context; more is spilled whole to a file.
pub const OUTPUT_BUDGET: usize = 30_000;

pub struct BashTool;

#[derive(Deserialize)]
struct Input {
    command: String,
    timeout: Option<u64>,
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    run_in_background: bool,
    /// Run outside the OS sandbox; the permission layer asks a human first.
    #[serde(default, rename = "dangerouslyDisableSandbox")]
    disable_sandbox: bool,
}

#[async_trait]
impl Tool for BashTool {
    fn name(&self) -> &'static str {
        "Bash"
    }

    fn declared(&self) -> Declared {
        Declared {
            effects: Effects::RUNS,
            grammar: RuleGrammar::Command,
            covered_by: &[],
        }
    }

    fn subject(&self, input: &Value, _cwd: &std::path::Path) -> Subject {
        Subject::Command(input.get("command").and_then(Value::as_str).unwrap_or("").to_string())
    }

    fn preview(&self, input: &Value, _cwd: &std::path::Path) -> Body {
        let str_of = |k: &str| input.get(k).and_then(Value::as_str);
        Body::Command {
            command: str_of("command").unwrap_or("").to_string(),
            description: str_of("description")
                .filter(|d| !d.trim().is_empty())
                .map(str::to_string),
        }
    }

    fn detail(&self, input: &Value) -> Option<String> {
        Some(input["command"].as_str().unwrap_or("").to_string())
    }

    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Shell]
    }

    fn description(&self) -> &'static str {
        "Runs a shell command (bash) in the session's working directory and returns its exit code and its \
         combined stdout and stderr. A non-zero exit is reported as an error. `cd` carries over to later \
         calls as long as you stay inside the workspace; environment variables do not. stdin is closed, so \
         interactive programs fail instead of waiting: pass flags such as `--yes` or `-m \"message\"`. The \
         timeout is 2 minutes unless you set `timeout` (milliseconds, at most 10 minutes); on timeout the \
         command and everything it started are killed. Processes a command leaves running are stopped when it \
         ends: start servers and watchers with `run_in_background: true` and follow them with BashOutput and \
         KillShell. Long output is kept whole in a file and you see its start and end. Quote paths that \
         contain spaces. Prefer Read, Glob, Grep, Edit and Write over cat, find, grep, sed and echo for \
         files. Give a short `description` (5-10 words) of what the command does."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "minLength": 1, "description": "The command to run"},
                "timeout": {"type": "integer", "minimum": 1, "description": "Timeout in milliseconds (default 120000, at most 600000)"},
                "description": {"type": "string", "description": "What the command does, in 5-10 words"},
                                "run_in_background": {"type": "boolean", "description": "Start it in the background and return an id at once"},
                "dangerouslyDisableSandbox": {"type": "boolean", "description": "Run outside the OS sandbox (needs the user's approval); only when the sandbox blocks something the task really needs"}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn result_budget(&self) -> usize {
        OUTPUT_BUDGET
    }

    fn handles_cancellation(&self) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(input)?;
        if input.command.trim().is_empty() {
            return Err(ToolError::invalid("`command` is empty; give the shell command to run."));
        }
        // The permission layer asked the user before an unsandboxed run.
        let shell = ctx.shell()?;
        let sandbox = match (&shell.sandbox, input.disable_sandbox) {
            (SandboxMode::Enforced(_) | SandboxMode::Refuse(_), true) => SandboxMode::Off,
            (mode, _) => mode.clone(),
        };
        let env_file = ctx.workspace.hook_env_file();
        let session_id = shell.session_id();
        let quarantine = ctx.workspace.session_dir.join("quarantine");
        let confine = Confine {
            env_file: Some(&env_file),
            session_id: session_id.as_deref(),
            how: if input.disable_sandbox {
                Confinement::Approved
            } else {
                ctx.confinement
            },
            output_cap: shell.output_cap,
            limits: Some(&shell.limits),
            sandbox: &sandbox,
            confiner: shell.confiner.as_deref(),
            gate: &shell.gate,
            quarantine: Some(&quarantine),
        };
        // Background shells that ended give their places back.
        let _ = shell.shells.running();
        let mut notes = Vec::new();
        let cwd = shell_cwd(&ctx.workspace, shell, &mut notes);
        // `foreground_log` names the same file.
        let out_dir = ctx.workspace.session_dir.join(super::services::SHELL_OUTPUT_DIR);
        if input.run_in_background {
            let lease = match confine.unconfined() {
                true => tokio::select! {
                    lease = shell.gate.unconfined() => Some(lease),
                    _ = ctx.cancel.cancelled() => {
                        return Err(ToolError::invalid("interrupted by the user before the command started"));
                    }
                },
                false => None,
            };
            let (id, log) = shell.shells.start(&input.command, &cwd, &out_dir, &confine, lease)?;
            let mut text = format!(
                "Started in the background as {id}. Its output goes to {}. Check it with BashOutput (bash_id \
                 \"{id}\") and stop it with KillShell (shell_id \"{id}\"); it is stopped when the session ends.",
                log.display()
            );
            push_notes(&mut text, &notes);
            return Ok(ToolOutput::text(text).with_structured(json!({
                "stdout": "", "stderr": "", "interrupted": false, "isImage": false,
                "noOutputExpected": false, "backgroundTaskId": id,
            })));
        }
        let requested = input.timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
        if requested > MAX_TIMEOUT_MS {
            notes.push(format!(
                "The requested timeout of {requested} ms was lowered to the maximum of {MAX_TIMEOUT_MS} ms."
            ));
        }
        let timeout = Duration::from_millis(requested.min(MAX_TIMEOUT_MS));
        let finished = run_foreground(
            &input.command,
            &cwd,
            &out_dir,
            &file_name(&ctx.tool_use_id),
            timeout,
            &ctx.cancel,
            &confine,
        )
        .await?;
        if let Some(c) = confine.confiner {
            c.after_command(finished.policy.as_ref());
        }
        if let Some(dir) = &finished.final_cwd {
            update_shell_cwd(&ctx.workspace, shell, dir, &mut notes);
        }
        notes.extend(run::capture_note(&out_dir));
        notes.extend(crate::sandbox::quarantine::note(&finished.swept));
        notes.extend(crate::sandbox::notes::limit_notes(
            &finished.usage,
            &finished.output.text,
            Some(&shell.limits),
        ));
        let failed = !matches!(&finished.ending, Ending::Exited(s) if s.success());
        if failed
            && let Some(policy) = &finished.policy
            && let Some(note) = crate::sandbox::explain_failure(&finished.output.text, policy)
        {
            notes.push(note);
            if finished.top_closed {
                notes.push(
                    "(The top of the workspace was closed for this command because a command outside the sandbox \
                     was running at the same time; once it is done, new entries can be created there again.)"
                        .into(),
                );
            }
        }
        Ok(render(finished, &notes, output::prints_nothing(&input.command)))
    }
}

/// The directory the next command starts in; falls back to the workspace root (with a note)
/// when the remembered one has disappeared.
fn shell_cwd(ws: &Workspace, shell: &ShellEnv, notes: &mut Vec<String>) -> PathBuf {
    let mut cwd = shell.cwd.lock().unwrap_or_else(|p| p.into_inner());
    if !cwd.is_dir() {
        notes.push(format!(
            "The previous working directory {} no longer exists; the command ran in {}.",
            cwd.display(),
            ws.cwd.display()
        ));
        *cwd = ws.cwd.clone();
    }
    cwd.clone()
}

/// Keeps a `cd` inside the workspace; a `cd` out of it is undone for the next command.
fn update_shell_cwd(ws: &Workspace, shell: &ShellEnv, dir: &Path, notes: &mut Vec<String>) {
    if dir.as_os_str().is_empty() || !dir.is_absolute() {
        return;
    }
    let mut cwd = shell.cwd.lock().unwrap_or_else(|p| p.into_inner());
    // The report is written by the command's own shell, so it is checked where it really
    // leads (`ws/../home` or a link out of the workspace are not inside it).
    let real = dir.canonicalize().ok().filter(|r| ws.is_in_workspace(r));
    if let Some(real) = real {
        *cwd = real;
    } else {
        notes.push(format!(
            "The shell's working directory was reset to {} because {} is outside the workspace.",
            ws.cwd.display(),
            dir.display()
        ));
        *cwd = ws.cwd.clone();
    }
}

fn render(finished: run::Finished, notes: &[String], no_output_expected: bool) -> ToolOutput {
    let output = finished.output.text.trim_end_matches('\n');
    let (mut text, is_error, interrupted, code) = match finished.ending {
        Ending::Exited(status) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(0), _) => (output.to_string(), false, false, Some(0)),
                (Some(code), _) => (format!("Exit code {code}\n{output}"), true, false, Some(code)),
                (None, Some(sig)) => (format!("Killed by signal {sig}\n{output}"), true, false, None),
                (None, None) => (format!("The command ended abnormally\n{output}"), true, false, None),
            }
        }
        Ending::TimedOut(after) => (
            format!(
                "Timed out after {}: the command and every process it started were killed. Raise `timeout` \
                 (at most 10 minutes) or use run_in_background for long-running work. Output until then:\n{output}",
                human_duration(after)
            ),
            true,
            true,
            None,
        ),
        Ending::Cancelled => (
            format!(
                "Interrupted by the user: the command and every process it started were killed. Output until \
                 then:\n{output}"
            ),
            true,
            true,
            None,
        ),
    };
    if text.is_empty() {
        text = "(the command succeeded and printed nothing)".to_string();
    }
    push_notes(&mut text, notes);
    ToolOutput {
        content: crate::types::message::ToolResultContent::Text(text),
        is_error,
        structured: json!({
            "stdout": finished.output.text,
            "stderr": "",
            "interrupted": interrupted,
            "isImage": false,
            "noOutputExpected": no_output_expected,
            "exitCode": code,
        }),
    }
}

fn push_notes(text: &mut String, notes: &[String]) {
    for n in notes {
        text.push_str("\n\n");
        text.push_str(n);
    }
}

fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(60_000) {
        format!("{} min", ms / 60_000)
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

/// Where a foreground call writes its output while it runs (front ends show it live).
pub fn foreground_log(session_dir: &Path, tool_use_id: &str) -> PathBuf {
    session_dir
        .join(super::services::SHELL_OUTPUT_DIR)
        .join(format!("{}.log", file_name(tool_use_id)))
}

/// A tool-use id made safe as a file name.
fn file_name(id: &str) -> String {
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() { "command".into() } else { safe }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_duration(Duration::from_millis(500)), "500 ms");
        assert_eq!(human_duration(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(human_duration(Duration::from_secs(120)), "2 min");
        assert_eq!(human_duration(Duration::from_secs(125)), "2 min 5 s");
    }

    /// The working-directory report is written by the command's own shell, which may write
    /// anything there: a path that only looks inside the workspace does not move the shell.
    #[test]
    fn a_reported_directory_counts_where_it_really_leads() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        let ws = base.join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::create_dir_all(base.join("home")).unwrap();
        std::os::unix::fs::symlink(base.join("home"), ws.join("out")).unwrap();
        let workspace = Workspace::new(ws.clone(), base.join("session"), Vec::new());
        let shell = ShellEnv::new(SandboxMode::Off, None, 1 << 20, ws.clone());
        let mut notes = Vec::new();
        update_shell_cwd(&workspace, &shell, &ws.join("sub"), &mut notes);
        assert_eq!(shell.cwd(), ws.join("sub"));
        for sneaky in [ws.join("../home"), ws.join("out")] {
            update_shell_cwd(&workspace, &shell, &sneaky, &mut notes);
            assert_eq!(shell.cwd(), ws, "{}", sneaky.display());
        }
    }
}
