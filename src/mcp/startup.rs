//! What the front ends do with the MCP servers when a session starts: ask about project
//! servers (interactive), start everything in parallel, report problems in one line each.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use super::setup::PendingApproval;
use super::{McpHub, State};
use crate::console::{err_line, terminal_safe};

/// Headless start: every approved server at once, a one-line warning per server that did not
/// come up, then `/mcp__server__prompt args` expanded (an unknown prompt is an error).
pub async fn headless(hub: &McpHub, prompt: String) -> Result<String, String> {
    hub.start_all().await;
    for line in problems(hub) {
        err_line!("keel: warning: {line}");
    }
    match hub.expand_prompt(&prompt).await {
        None => Ok(prompt),
        Some(result) => result,
    }
}

/// One line per server that failed or needs authentication.
pub fn problems(hub: &McpHub) -> Vec<String> {
    hub.statuses()
        .into_iter()
        .filter(|s| matches!(s.state, State::Failed | State::NeedsAuth))
        .map(|s| {
            let detail = s.detail.unwrap_or_default();
            let first = detail.lines().next().unwrap_or("").to_string();
            format!(
                "MCP server `{}` {}: {first}",
                s.name,
                if s.state == State::NeedsAuth {
                    "needs authentication"
                } else {
                    "failed"
                }
            )
        })
        .collect()
}

/// The servers that need a sign-in keel can do (`keel mcp login NAME`, `/mcp login NAME`):
/// HTTP servers that refused keel for want of one.
pub fn needing_sign_in(hub: &McpHub) -> Vec<String> {
    hub.servers()
        .into_iter()
        .filter(|s| s.state() == State::NeedsAuth && s.remote_spec().is_some())
        .map(|s| s.name.clone())
        .collect()
}

/// Asks on the terminal, before the interface starts, whether each of the project's new
/// servers may run; the answer is remembered for this project. No terminal: nothing starts.
pub fn ask_approvals(hub: &McpHub, pending: &[PendingApproval], keel_home: &Path, cwd: &Path) -> Vec<String> {
    let mut notes = Vec::new();
    if pending.is_empty() {
        return notes;
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return notes;
    }
    err_line!(
        "This project's configuration wants to start MCP servers. They run as programs on this machine (or reach the network) with your permissions."
    );
    for p in pending {
        let reads = if p.variables.is_empty() {
            String::new()
        } else {
            format!("; it is given the values of {}", p.variables.join(", "))
        };
        // The name and the command come from the project's files: shown, not obeyed.
        let question = format!(
            "  Allow MCP server `{}` ({}{reads}) from {}? [y/N] ",
            p.name,
            if p.target.is_empty() {
                "invalid configuration"
            } else {
                &p.target
            },
            p.source
        );
        let mut out = std::io::stderr().lock();
        let _ = out.write_all(terminal_safe(&question).as_bytes());
        let _ = out.flush();
        drop(out);
        let mut line = String::new();
        if stdin.lock().read_line(&mut line).is_err() {
            break;
        }
        let yes = matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes");
        if let Err(e) = super::sources::remember_approval(keel_home, cwd, &p.name, yes) {
            notes.push(format!(
                "could not remember the decision about MCP server `{}`: {e}",
                p.name
            ));
        }
        if yes {
            if let Some(s) = hub.server(&p.name) {
                s.approve();
            }
        } else {
            if let Some(s) = hub.server(&p.name) {
                s.reject("not approved for this project".into());
            }
            notes.push(format!(
                "MCP server `{}` was not approved; remove it from disabledMcpjsonServers in {} to be asked again",
                p.name,
                super::sources::keel_json(keel_home).display()
            ));
        }
    }
    notes
}
