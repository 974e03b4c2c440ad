//! `/mcp`: the servers as markdown for the TUI.

use super::server::{ServerStatus, State};

pub fn markdown(statuses: &[ServerStatus]) -> String {
    if statuses.is_empty() {
        return "No MCP servers are configured. Add one with `keel mcp add NAME -- COMMAND [ARGS…]`, \
                in `.mcp.json`, or with `--mcp-config`."
            .to_string();
    }
    let mut md = String::from("| server | status | transport | scope | tools |\n|---|---|---|---|---|\n");
    for s in statuses {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            s.name,
            s.state.as_str(),
            s.transport,
            s.scope.as_str(),
            s.tools.len()
        ));
    }
    for s in statuses {
        md.push_str(&format!("\n**{}** — `{}`", s.name, s.target.replace('`', "'")));
        if let Some(info) = &s.server_info {
            md.push_str(&format!(" ({info})"));
        }
        md.push('\n');
        if let Some(d) = &s.detail
            && s.state != State::Connected
        {
            md.push_str(&format!("\n{}\n", d.lines().next().unwrap_or("")));
        }
        if s.restarts > 0 {
            md.push_str(&format!("\nrestarted {} time(s)\n", s.restarts));
        }
        if !s.tools.is_empty() {
            md.push_str(&format!("\ntools: {}\n", s.tools.join(", ")));
        }
        if let Some(log) = &s.log {
            md.push_str(&format!("\nlog: `{}`\n", log.display()));
        }
    }
    md
}
