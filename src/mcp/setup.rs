//! Lowering the MCP front doors (`--mcp-config`, `--strict-mcp-config`, configuration files,
//! settings, environment) into a planned [`McpHub`], once, before the session starts.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::config::Scope;
use super::search;
use super::server::Timeouts;
use super::sources::{self, Approval, Sources};
use super::{HubOptions, McpHub, Planned};
use crate::config::settings::{Scope as SettingsScope, Settings};

/// Default start-up limit (`MCP_TIMEOUT`).
pub const DEFAULT_STARTUP: Duration = Duration::from_secs(30);
/// Default limit of one tool call (`MCP_TOOL_TIMEOUT`).
pub const DEFAULT_TOOL: Duration = Duration::from_secs(600);
/// Default cap of one tool result in tokens (`MAX_MCP_OUTPUT_TOKENS`).
pub const DEFAULT_OUTPUT_TOKENS: usize = 25_000;

pub struct McpInputs<'a> {
    pub cli_configs: &'a [String],
    pub strict: bool,
    pub settings: &'a Settings,
    pub cwd: &'a Path,
    pub home: Option<&'a Path>,
    pub keel_home: &'a Path,
    pub session_dir: &'a Path,
    pub context_window: u64,
    /// Whether a person can approve project servers now.
    pub interactive: bool,
    pub hidden: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    /// Whether the folder's own configuration may run programs at all (workspace trust); when
    /// not, project servers stay off without a question.
    pub project_trusted: bool,
    /// Plugins' servers: `plugin:server`, its entry, and where the plugin was configured.
    pub plugin_servers: Vec<(String, serde_json::Value, SettingsScope)>,
}

pub struct McpSetup {
    pub hub: Arc<McpHub>,
    /// One line each: skipped files, servers not started.
    pub notices: Vec<String>,
    /// Project servers waiting for a person's approval (interactive mode).
    pub pending: Vec<PendingApproval>,
}

#[derive(Debug, Clone)]
pub struct PendingApproval {
    pub name: String,
    pub source: String,
    /// The command line or URL it would run or reach, as written (variables not expanded).
    pub target: String,
    /// Environment variables its configuration reads (their values would reach the server).
    pub variables: Vec<String>,
}

pub fn build(inputs: &McpInputs<'_>) -> Result<McpSetup, String> {
    let env = |k: &str| std::env::var(k).ok();
    let src = Sources {
        cwd: inputs.cwd,
        home: inputs.home,
        keel_home: inputs.keel_home,
        settings: inputs.settings,
        cli_configs: inputs.cli_configs,
        strict: inputs.strict,
    };
    let mut loaded = sources::load(&src, &env)?;
    let mut notices = Vec::new();
    if !inputs.strict {
        // A plugin's servers' names (and the tool names and rules made of them) are the
        // plugin's: `.mcp.json` naming a server `ops:db` or `ops_db` must not pass for the
        // `ops` plugin's `db` and inherit the user's `mcp__ops_db` rules.
        loaded
            .entries
            .retain(|e| match plugin_claim(&e.name, &inputs.plugin_servers) {
                Some(owner) => {
                    notices.push(format!(
                        "MCP server `{}` from {} was not started: its name belongs to the plugin server `{owner}`",
                        e.name, e.source
                    ));
                    false
                }
                None => true,
            });
        // A plugin configured by the repository is the repository's: its servers need approval.
        for (name, raw, scope) in &inputs.plugin_servers {
            let scope = match scope {
                SettingsScope::User | SettingsScope::Managed => Scope::User,
                SettingsScope::Cli => Scope::Cli,
                SettingsScope::Project | SettingsScope::Local => Scope::Project,
            };
            loaded.entries.push(sources::Entry {
                name: name.clone(),
                scope,
                source: format!("plugin {}", name.split(':').next().unwrap_or(name)),
                raw: raw.clone(),
                spec: super::config::resolve_entry(name, raw, &env),
                shadows: Vec::new(),
            });
        }
    }
    notices.splice(0..0, loaded.warnings);
    let mut pending = Vec::new();
    let mut planned = Vec::new();
    for entry in loaded.entries {
        let disabled = if entry.scope == Scope::Project && !inputs.project_trusted {
            Some("this folder is not trusted, so its MCP servers do not run".to_string())
        } else if entry.scope == Scope::Project {
            match sources::project_approval(&entry.name, &src) {
                Approval::Approved => None,
                Approval::Rejected => Some("rejected for this project (disabledMcpjsonServers)".to_string()),
                Approval::Pending => {
                    if inputs.interactive {
                        // Shown as written, so `${SECRET}` in a URL or header reads as what it is.
                        pending.push(PendingApproval {
                            name: entry.name.clone(),
                            source: entry.source.clone(),
                            target: super::config::parse_entry(&entry.name, &entry.raw)
                                .map(|s| s.target())
                                .unwrap_or_default(),
                            variables: super::config::variables(&entry.raw),
                        });
                    } else {
                        notices.push(format!(
                            "MCP server `{}` from {} was not started: project servers run only once approved (approve it in an interactive session, or list it in enabledMcpjsonServers in your user settings)",
                            entry.name, entry.source
                        ));
                    }
                    Some("waiting for approval of this project's server".to_string())
                }
            }
        } else {
            None
        };
        if let Err(e) = &entry.spec {
            notices.push(format!("MCP server `{}` ({}): {e}", entry.name, entry.source));
        }
        planned.push(Planned {
            name: entry.name,
            scope: entry.scope,
            source: entry.source,
            spec: entry.spec,
            disabled,
        });
    }
    let hub = McpHub::new(HubOptions {
        timeouts: Timeouts {
            startup: env_millis("MCP_TIMEOUT")?.unwrap_or(DEFAULT_STARTUP),
            tool: env_millis("MCP_TOOL_TIMEOUT")?.unwrap_or(DEFAULT_TOOL),
        },
        output_budget: output_tokens()?.saturating_mul(crate::context::tokens::BYTES_PER_TOKEN as usize),
        tool_search: tool_search_mode(inputs.settings)?,
        context_window: inputs.context_window,
        project_dir: inputs.cwd.to_path_buf(),
        log_dir: inputs.session_dir.join("mcp-logs"),
        hidden: inputs.hidden.clone(),
        keel_home: Some(inputs.keel_home.to_path_buf()),
        elicitation: Arc::new(super::elicit::Route::default()),
    });
    hub.plan(planned);
    Ok(McpSetup { hub, notices, pending })
}

/// The plugin server whose name `name` would take: one in a loaded plugin's namespace, or one
/// whose tool names it would share (`ops_db` and `ops:db` both make `mcp__ops_db__`).
fn plugin_claim(name: &str, plugin_servers: &[(String, serde_json::Value, SettingsScope)]) -> Option<String> {
    let prefix = super::names::server_prefix(name);
    plugin_servers
        .iter()
        .find(|(owned, _, _)| {
            let ns = owned.split(':').next().unwrap_or(owned);
            name.strip_prefix(ns).is_some_and(|rest| rest.starts_with(':'))
                || super::names::server_prefix(owned) == prefix
        })
        .map(|(owned, _, _)| owned.clone())
}

/// A duration in milliseconds from the environment, as the reference reads `MCP_TIMEOUT` and
/// `MCP_TOOL_TIMEOUT`.
fn env_millis(key: &str) -> Result<Option<Duration>, String> {
    match std::env::var(key).ok().filter(|v| !v.trim().is_empty()) {
        None => Ok(None),
        Some(raw) => match raw.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Ok(Some(Duration::from_millis(ms))),
            _ => Err(format!("{key} must be a positive number of milliseconds, got `{raw}`")),
        },
    }
}

fn output_tokens() -> Result<usize, String> {
    match std::env::var("MAX_MCP_OUTPUT_TOKENS")
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        None => Ok(DEFAULT_OUTPUT_TOKENS),
        Some(raw) => match raw.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!(
                "MAX_MCP_OUTPUT_TOKENS must be a positive number of tokens, got `{raw}`"
            )),
        },
    }
}

/// `ENABLE_TOOL_SEARCH` wins over the `toolSearch` setting; the default defers above 10% of
/// the context window.
fn tool_search_mode(settings: &Settings) -> Result<search::Mode, String> {
    if let Some(raw) = std::env::var("ENABLE_TOOL_SEARCH")
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        return search::Mode::parse(&raw).map_err(|e| format!("ENABLE_TOOL_SEARCH: {e}"));
    }
    match settings.scalar("toolSearch") {
        Some((v, layer)) => search::Mode::from_value(v).map_err(|e| format!("{}: {e}", layer.label())),
        None => Ok(search::Mode::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A repository's `.mcp.json` names servers after a loaded plugin's (`ops:db`, `ops_db`,
    /// `ops:other`): none of them is planned, so none takes the plugin's tool names or the
    /// rules the user wrote for them; other servers are untouched.
    #[test]
    fn a_projects_server_cannot_take_a_plugin_servers_name() {
        let t = tempfile::tempdir().unwrap();
        let cwd = t.path().join("repo");
        std::fs::create_dir_all(&cwd).unwrap();
        let server = json!({"command": "true"});
        std::fs::write(
            cwd.join(".mcp.json"),
            json!({"mcpServers": {"ops:db": server, "ops_db": server, "ops:other": server, "opsdb": server, "docs": server}})
                .to_string(),
        )
        .unwrap();
        let settings = Settings::default();
        let setup = build(&McpInputs {
            cli_configs: &[],
            strict: false,
            settings: &settings,
            cwd: &cwd,
            home: None,
            keel_home: &t.path().join("keel"),
            session_dir: &t.path().join("session"),
            context_window: 200_000,
            interactive: false,
            hidden: Arc::new(|_| false),
            project_trusted: true,
            plugin_servers: vec![("ops:db".into(), server.clone(), SettingsScope::Cli)],
        })
        .unwrap();
        let mut planned: Vec<(String, String)> = setup
            .hub
            .servers()
            .iter()
            .map(|s| (s.name.clone(), s.source.clone()))
            .collect();
        planned.sort();
        assert_eq!(
            planned.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            vec!["docs", "ops:db", "opsdb"]
        );
        assert!(
            planned.iter().any(|(n, src)| n == "ops:db" && src == "plugin ops"),
            "{planned:?}"
        );
        for name in ["ops:db", "ops_db", "ops:other"] {
            assert!(
                setup
                    .notices
                    .iter()
                    .any(|n| n.contains(&format!("`{name}`")) && n.contains("belongs to the plugin server `ops:db`")),
                "{name}: {:?}",
                setup.notices
            );
        }
    }
}
