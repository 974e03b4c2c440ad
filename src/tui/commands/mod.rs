//! Slash commands in the TUI: the shared table and parsing (`crate::commands`) turned into the
//! TUI's commands; skills and custom commands expand in the engine task.

use crate::commands::{self as shared, Slash};
use crate::skills::Catalog;

pub mod init;

pub use crate::commands::{CommandInfo, all, is_command};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Help,
    Clear,
    Compact(Option<String>),
    Context,
    Cost,
    Model(Option<String>),
    Permissions,
    Hooks,
    Mcp,
    /// `/mcp login NAME [--no-browser]`: signs in to a remote server and connects it again;
    /// `--no-browser` only shows the address (for a session over SSH).
    McpLogin {
        name: String,
        open_browser: bool,
    },
    /// `/mcp__server__prompt args`: an MCP prompt, expanded by its server into the message.
    McpPrompt(String),
    Resume(Option<String>),
    Rewind(Option<String>),
    Todos,
    Tasks,
    Skills,
    Agents,
    Memory,
    Evidence,
    Exit,
    /// `/init`: the model writes the repository's instructions file.
    Init,
    /// A skill or custom command: `/name args`.
    Skill {
        name: String,
        args: String,
    },
}

impl Command {
    /// Commands that use the engine wait for the running turn (they are queued like prompts).
    pub fn needs_engine(&self) -> bool {
        matches!(
            self,
            Command::Clear
                | Command::Compact(_)
                | Command::Context
                | Command::Model(Some(_))
                | Command::Permissions
                | Command::Hooks
                | Command::Mcp
                | Command::McpLogin { .. }
                | Command::McpPrompt(_)
                | Command::Resume(_)
                | Command::Rewind(_)
                | Command::Init
                | Command::Skill { .. }
        )
    }
}

/// Parses a slash command. `None` when the input is not one.
pub fn parse(input: &str, skills: &Catalog) -> Option<Result<Command, String>> {
    // MCP prompts (`/mcp__server__prompt args`) are known only to their servers.
    if is_command(input) && input.trim_start().starts_with("/mcp__") {
        return Some(Ok(Command::McpPrompt(input.trim().to_string())));
    }
    let slash = match shared::parse(input, skills)? {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    let (name, args) = match slash {
        Slash::Skill { name, args } => return Some(Ok(Command::Skill { name, args })),
        Slash::Builtin { name, args } => (name, args),
    };
    let arg = (!args.is_empty()).then(|| args.clone());
    let no_args = |c: Command| {
        if args.is_empty() {
            Ok(c)
        } else {
            Err(format!("/{name} takes no arguments"))
        }
    };
    Some(match name {
        "help" => no_args(Command::Help),
        "clear" => no_args(Command::Clear),
        "compact" => Ok(Command::Compact(arg)),
        "context" => no_args(Command::Context),
        "cost" => no_args(Command::Cost),
        "model" => Ok(Command::Model(arg)),
        "permissions" => no_args(Command::Permissions),
        "hooks" => no_args(Command::Hooks),
        "mcp" => mcp(&args),
        "resume" => Ok(Command::Resume(arg)),
        "rewind" => Ok(Command::Rewind(arg)),
        "todos" => no_args(Command::Todos),
        "tasks" => no_args(Command::Tasks),
        "skills" => no_args(Command::Skills),
        "agents" => no_args(Command::Agents),
        "memory" => no_args(Command::Memory),
        "evidence" => no_args(Command::Evidence),
        "exit" => no_args(Command::Exit),
        "init" => no_args(Command::Init),
        other => Err(format!("/{other} is not available here")),
    })
}

/// `/mcp` (the servers) or `/mcp login NAME [--no-browser]`.
fn mcp(args: &str) -> Result<Command, String> {
    let words: Vec<&str> = args.split_whitespace().collect();
    let login = |name: &str, open_browser: bool| {
        Ok(Command::McpLogin {
            name: name.to_string(),
            open_browser,
        })
    };
    match words.as_slice() {
        [] => Ok(Command::Mcp),
        ["login", "--no-browser", name] | ["login", name, "--no-browser"] if !name.starts_with('-') => {
            login(name, false)
        }
        ["login", name] if !name.starts_with('-') => login(name, true),
        ["login", ..] => Err("/mcp login needs the name of a remote server: /mcp login NAME [--no-browser]".into()),
        _ => Err("/mcp takes no arguments, or `login NAME [--no-browser]` to sign in to a remote server".into()),
    }
}

/// The `/help` text (markdown).
pub fn help(skills: &Catalog) -> String {
    let mut s = String::from(
        "**Keys**\n\n\
         | key | action |\n|---|---|\n\
         | Enter | send (queued while keel works) |\n\
         | Shift+Enter, Ctrl+J, `\\` Enter | new line |\n\
         | Up / Down | move in the prompt; recall earlier prompts |\n\
         | Esc | interrupt the model or a running tool |\n\
         | Ctrl+C | clear the prompt; twice to exit |\n\
         | Ctrl+D | exit (on an empty prompt) |\n\
         | Shift+Tab | cycle permission mode |\n\
         | Ctrl+T | show or hide the todo list |\n\
         | Ctrl+O | expand or collapse tool output |\n\
         | PageUp / PageDown, wheel | scroll; Ctrl+End follows again |\n\
         | Tab | accept a completion |\n\n\
         `!command` runs a shell command and adds its output to the conversation. \
         `@path` attaches a file or a directory listing. `# note` saves a note to the project's memory.\n\n\
         **Commands**\n\n",
    );
    for c in all(skills) {
        let args = if c.args.is_empty() {
            String::new()
        } else {
            format!(" {}", c.args)
        };
        s.push_str(&format!("- `/{}{}` — {}\n", c.name, args, c.help));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_builtins_and_rejects_the_unknown() {
        let none = Catalog::default();
        assert_eq!(parse("/help", &none), Some(Ok(Command::Help)));
        assert_eq!(
            parse("/compact keep the test list", &none),
            Some(Ok(Command::Compact(Some("keep the test list".into()))))
        );
        assert_eq!(parse("/model", &none), Some(Ok(Command::Model(None))));
        assert_eq!(parse("/bashes", &none), Some(Ok(Command::Tasks)));
        assert_eq!(parse("/mcp", &none), Some(Ok(Command::Mcp)));
        assert_eq!(
            parse("/mcp login remote", &none),
            Some(Ok(Command::McpLogin {
                name: "remote".into(),
                open_browser: true
            }))
        );
        for line in ["/mcp login remote --no-browser", "/mcp login --no-browser remote"] {
            assert_eq!(
                parse(line, &none),
                Some(Ok(Command::McpLogin {
                    name: "remote".into(),
                    open_browser: false
                })),
                "{line}"
            );
        }
        assert!(matches!(parse("/mcp login", &none), Some(Err(e)) if e.contains("/mcp login NAME")));
        assert!(matches!(parse("/mcp login --no-browser", &none), Some(Err(e)) if e.contains("/mcp login NAME")));
        assert!(matches!(parse("/mcp login a b", &none), Some(Err(e)) if e.contains("/mcp login NAME")));
        assert!(matches!(parse("/mcp frob", &none), Some(Err(e)) if e.contains("login NAME")));
        assert!(matches!(parse("/clear now", &none), Some(Err(e)) if e.contains("takes no arguments")));
        assert!(matches!(parse("/frobnicate", &none), Some(Err(e)) if e.contains("unknown command")));
        assert_eq!(parse("/usr/bin/env is odd", &none), None);
        assert_eq!(parse("plain prompt", &none), None);
    }
}
