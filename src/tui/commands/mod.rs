//! Slash commands: the built-in table, parsing, and custom commands from markdown files.

pub mod custom;

pub use custom::{CustomCommand, CustomCommands};

/// A built-in command as listed by `/help` and the completion menu.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    pub name: &'static str,
    pub args: &'static str,
    pub help: &'static str,
}

pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "help",
        args: "",
        help: "keys and commands",
    },
    Builtin {
        name: "clear",
        args: "",
        help: "start a new, empty conversation",
    },
    Builtin {
        name: "compact",
        args: "[instructions]",
        help: "summarise the conversation now to free context",
    },
    Builtin {
        name: "context",
        args: "",
        help: "what fills the context window",
    },
    Builtin {
        name: "cost",
        args: "",
        help: "tokens, cost and time of this session",
    },
    Builtin {
        name: "model",
        args: "[name]",
        help: "show or switch the model",
    },
    Builtin {
        name: "permissions",
        args: "",
        help: "permission mode and rules in force",
    },
    Builtin {
        name: "hooks",
        args: "",
        help: "configured hooks by event",
    },
    Builtin {
        name: "resume",
        args: "[session-id]",
        help: "continue an earlier session of this directory",
    },
    Builtin {
        name: "todos",
        args: "",
        help: "the session's task list",
    },
    Builtin {
        name: "evidence",
        args: "",
        help: "the verification ledger: test runs, changes, weakened tests",
    },
    Builtin {
        name: "exit",
        args: "",
        help: "leave keel",
    },
];

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
    Resume(Option<String>),
    Todos,
    Evidence,
    Exit,
    Custom { name: String, args: String },
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
                | Command::Resume(_)
                | Command::Custom { .. }
        )
    }
}

/// Whether `input` is a slash command at all (`/usr/bin is ...` is a prompt, not a command).
pub fn is_command(input: &str) -> bool {
    let Some(rest) = input.trim_start().strip_prefix('/') else {
        return false;
    };
    let name = rest.split_whitespace().next().unwrap_or("");
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_:.".contains(c))
}

/// Parses a slash command. `None` when the input is not one.
pub fn parse(input: &str, custom: &CustomCommands) -> Option<Result<Command, String>> {
    if !is_command(input) {
        return None;
    }
    let rest = input.trim_start().strip_prefix('/').unwrap_or("");
    let (name, args) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    let arg = (!args.is_empty()).then(|| args.to_string());
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
        "permissions" | "allowed-tools" => no_args(Command::Permissions),
        "hooks" => no_args(Command::Hooks),
        "resume" | "continue" => Ok(Command::Resume(arg)),
        "todos" => no_args(Command::Todos),
        "evidence" => no_args(Command::Evidence),
        "exit" | "quit" => no_args(Command::Exit),
        other => match custom.get(other) {
            Some(_) => Ok(Command::Custom {
                name: other.to_string(),
                args: args.to_string(),
            }),
            None => Err(format!("unknown command /{other}; /help lists the commands")),
        },
    })
}

/// One entry of the completion menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    pub name: String,
    pub args: String,
    pub help: String,
}

pub fn all(custom: &CustomCommands) -> Vec<CommandInfo> {
    let mut out: Vec<CommandInfo> = BUILTINS
        .iter()
        .map(|b| CommandInfo {
            name: b.name.to_string(),
            args: b.args.to_string(),
            help: b.help.to_string(),
        })
        .collect();
    for c in custom.iter() {
        out.push(CommandInfo {
            name: c.name.clone(),
            args: c.argument_hint.clone().unwrap_or_default(),
            help: format!("{} ({})", c.description, c.source),
        });
    }
    out
}

/// The `/help` text (markdown).
pub fn help(custom: &CustomCommands) -> String {
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
         `@path` attaches a file or a directory listing.\n\n**Commands**\n\n",
    );
    for c in all(custom) {
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
        let none = CustomCommands::default();
        assert_eq!(parse("/help", &none), Some(Ok(Command::Help)));
        assert_eq!(
            parse("/compact keep the test list", &none),
            Some(Ok(Command::Compact(Some("keep the test list".into()))))
        );
        assert_eq!(parse("/model", &none), Some(Ok(Command::Model(None))));
        assert!(matches!(parse("/clear now", &none), Some(Err(e)) if e.contains("takes no arguments")));
        assert!(matches!(parse("/frobnicate", &none), Some(Err(e)) if e.contains("unknown command")));
        assert_eq!(parse("/usr/bin/env is odd", &none), None);
        assert_eq!(parse("plain prompt", &none), None);
    }
}
