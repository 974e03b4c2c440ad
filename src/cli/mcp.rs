//! `keel mcp …`: the subcommands' flags, lowered and handed to `mcp::manage`.

use std::process::ExitCode;

use clap::Subcommand;

use crate::console::{err_line, out_line};
use crate::mcp::config::Scope;
use crate::mcp::manage;
use crate::mcp::sources::Sources;

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// List the configured MCP servers with their scope and whether they may start
    List,
    /// Show one server's configuration
    Get { name: String },
    /// Add a server: `keel mcp add NAME -- COMMAND [ARGS…]` or `keel mcp add -t http NAME URL`
    Add {
        /// Where to keep it: local (this project, outside the repository), project (.mcp.json), user
        #[arg(short = 's', long, default_value = "local")]
        scope: String,
        /// stdio, http (streamable HTTP) or sse
        #[arg(short = 't', long, default_value = "stdio")]
        transport: String,
        /// Environment variable for a stdio server (KEY=VALUE, repeatable)
        #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// HTTP header for an http/sse server ("Name: value", repeatable)
        #[arg(short = 'H', long = "header", value_name = "HEADER")]
        header: Vec<String>,
        name: String,
        /// The command (stdio) or the URL (http, sse)
        target: String,
        /// Arguments of the command
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Add a server from its JSON entry, e.g. '{"command": "node", "args": ["srv.js"]}'
    AddJson {
        #[arg(short = 's', long, default_value = "local")]
        scope: String,
        name: String,
        json: String,
    },
    /// Remove a server (give --scope when it is defined in several)
    Remove {
        #[arg(short = 's', long)]
        scope: Option<String>,
        name: String,
    },
    /// Sign in to an HTTP server in a browser (OAuth); the sign-in is kept under KEEL_HOME
    Login {
        name: String,
        /// Seconds to wait for the browser to come back
        #[arg(long, default_value_t = 300)]
        timeout: u64,
        /// Print the address only; do not try to open a browser
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget the sign-in to an HTTP server
    Logout { name: String },
}

pub async fn run(command: McpCommand) -> ExitCode {
    match execute(command).await {
        Ok(text) => {
            crate::console::write_out(&text);
            if !text.ends_with('\n') {
                out_line!();
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            err_line!("Error: {e}");
            ExitCode::from(1)
        }
    }
}

fn scope(raw: &str) -> Result<Scope, String> {
    Scope::parse(raw).ok_or_else(|| format!("unknown scope `{raw}`; use local, project or user"))
}

async fn execute(command: McpCommand) -> Result<String, String> {
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| format!("cannot determine the working directory: {e}"))?;
    let keel_home = crate::config::paths::keel_home().ok_or("cannot find a home directory; set KEEL_HOME")?;
    let home = dirs::home_dir();
    let settings =
        crate::config::settings::Settings::load(home.as_deref(), &keel_home, &cwd, None).map_err(|e| e.to_string())?;
    let src = Sources {
        cwd: &cwd,
        home: home.as_deref(),
        keel_home: &keel_home,
        settings: &settings,
        cli_configs: &[],
        strict: false,
    };
    match command {
        McpCommand::List => manage::list(&src),
        McpCommand::Get { name } => manage::get(&src, &name),
        McpCommand::Add {
            scope: s,
            transport,
            env,
            header,
            name,
            target,
            args,
        } => {
            let entry = manage::entry_from_args(&transport, &target, &args, &env, &header)?;
            manage::add(&src, scope(&s)?, &name, entry)
        }
        McpCommand::AddJson { scope: s, name, json } => {
            let entry: serde_json::Value = serde_json::from_str(&json).map_err(|e| format!("invalid JSON: {e}"))?;
            manage::add(&src, scope(&s)?, &name, entry)
        }
        McpCommand::Remove { scope: s, name } => manage::remove(&src, &name, s.as_deref().map(scope).transpose()?),
        McpCommand::Login {
            name,
            timeout,
            no_browser,
        } => {
            let say = |line: &str| err_line!("{line}");
            crate::mcp::signin::login(
                &src,
                &name,
                std::time::Duration::from_secs(timeout.max(1)),
                !no_browser,
                &say,
            )
            .await
        }
        McpCommand::Logout { name } => crate::mcp::signin::logout(&src, &name),
    }
}
