//! Slash commands shared by the TUI and headless mode: the built-in table and the parsing of
//! `/name args` into a built-in or a skill (custom commands are skills). Each front end decides
//! what a built-in does there; headless mode runs those that make sense without a screen.

use crate::skills::Catalog;

/// A built-in command as listed by `/help` and the completion menu.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    pub name: &'static str,
    pub args: &'static str,
    pub help: &'static str,
    /// Runs in `keel -p` too.
    pub headless: bool,
}

const fn b(name: &'static str, args: &'static str, help: &'static str, headless: bool) -> Builtin {
    Builtin {
        name,
        args,
        help,
        headless,
    }
}

pub const BUILTINS: &[Builtin] = &[
    b("help", "", "keys and commands", true),
    b("clear", "", "start a new, empty conversation", false),
    b(
        "compact",
        "[instructions]",
        "summarise the conversation now to free context",
        true,
    ),
    b("context", "", "what fills the context window", true),
    b("cost", "", "tokens, cost and time of this session", true),
    b("model", "[name]", "show or switch the model", false),
    b("permissions", "", "permission mode and rules in force", true),
    b("hooks", "", "configured hooks by event", false),
    b(
        "mcp",
        "[login NAME]",
        "MCP servers, their status and tools; `login NAME` signs in to an HTTP server",
        true,
    ),
    b(
        "resume",
        "[session-id]",
        "continue an earlier session of this directory",
        false,
    ),
    b(
        "rewind",
        "[N [code|conversation|preview]]",
        "take back changes: list the points (Esc Esc), preview or restore to before prompt N",
        false,
    ),
    b("todos", "", "the session's task list", false),
    b("tasks", "", "background sub-agents and their status", false),
    b("skills", "", "skills and custom commands available here", true),
    b("agents", "", "sub-agent types available here", true),
    b("memory", "", "open the project's memory file in $EDITOR", false),
    b(
        "init",
        "",
        "write AGENTS.md (or improve CLAUDE.md) from a study of the repository",
        false,
    ),
    b(
        "evidence",
        "",
        "the verification ledger: test runs, changes, weakened tests",
        false,
    ),
    b("exit", "", "leave keel", false),
];

/// Other spellings of built-ins.
const ALIASES: &[(&str, &str)] = &[
    ("allowed-tools", "permissions"),
    ("continue", "resume"),
    ("quit", "exit"),
    ("bashes", "tasks"),
];

/// The names a skill or command file cannot take.
pub fn reserved_names() -> Vec<&'static str> {
    BUILTINS
        .iter()
        .map(|b| b.name)
        .chain(ALIASES.iter().map(|(a, _)| *a))
        .collect()
}

/// What a `/name args` line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    Builtin { name: &'static str, args: String },
    Skill { name: String, args: String },
}

/// Whether `input` is a slash command at all (`/usr/bin is ...` is a prompt, not a command).
pub fn is_command(input: &str) -> bool {
    let Some(rest) = input.trim_start().strip_prefix('/') else {
        return false;
    };
    let name = rest.split_whitespace().next().unwrap_or("");
    !name.is_empty() && !name.contains('/') && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_:.".contains(c))
}

/// Splits `/name args`.
fn split(input: &str) -> (&str, &str) {
    let rest = input.trim_start().strip_prefix('/').unwrap_or("");
    match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    }
}

/// Parses a slash command against the built-ins and the skills the user may invoke. `None`:
/// the input is not a command; `Err`: it names nothing, or a skill the user may not run.
pub fn parse(input: &str, skills: &Catalog) -> Option<Result<Slash, String>> {
    if !is_command(input) {
        return None;
    }
    let (name, args) = split(input);
    let canonical = ALIASES
        .iter()
        .find(|(a, _)| *a == name)
        .map(|(_, c)| *c)
        .unwrap_or(name);
    if let Some(b) = BUILTINS.iter().find(|b| b.name == canonical) {
        return Some(Ok(Slash::Builtin {
            name: b.name,
            args: args.to_string(),
        }));
    }
    Some(match skills.get(name) {
        Some(s) if !s.user_invocable => Err(format!(
            "/{name} is a skill the model loads when relevant (user-invocable: false); it cannot be run as a command"
        )),
        Some(s) => Ok(Slash::Skill {
            name: s.name.clone(),
            args: args.to_string(),
        }),
        None => Err(unknown(name, skills)),
    })
}

/// The error for an unknown `/name`.
pub fn unknown(name: &str, skills: &Catalog) -> String {
    let custom: Vec<&str> = skills.for_user().map(|s| s.name.as_str()).collect();
    let mut msg = format!(
        "unknown command /{name}. Built-in commands: {}",
        builtin_names().join(", ")
    );
    if custom.is_empty() {
        msg.push_str("; no skills or custom commands are defined here");
    } else {
        msg.push_str(&format!("; skills and custom commands: {}", custom.join(", ")));
    }
    msg
}

fn builtin_names() -> Vec<String> {
    BUILTINS.iter().map(|b| format!("/{}", b.name)).collect()
}

/// One entry of a command listing (completion menu, `/help`, `system/init`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    pub name: String,
    pub args: String,
    pub help: String,
}

/// Built-ins, then the user-invocable skills and commands.
pub fn all(skills: &Catalog) -> Vec<CommandInfo> {
    let mut out: Vec<CommandInfo> = BUILTINS
        .iter()
        .map(|b| CommandInfo {
            name: b.name.to_string(),
            args: b.args.to_string(),
            help: b.help.to_string(),
        })
        .collect();
    for s in skills.for_user() {
        out.push(CommandInfo {
            name: s.name.clone(),
            args: s.argument_hint.clone().unwrap_or_default(),
            help: format!("{} ({})", s.description, s.source.label()),
        });
    }
    out
}

/// The command names headless mode can run (for `system/init`'s `slash_commands`).
/// The commands a headless session offers, as the SDK's `supportedCommands()` lists them:
/// `{"name", "description", "argumentHint"}`, built-ins first, then custom commands and skills.
pub fn headless_offer(skills: &Catalog) -> Vec<serde_json::Value> {
    BUILTINS
        .iter()
        .filter(|b| b.headless)
        .map(|b| serde_json::json!({"name": b.name, "description": b.help, "argumentHint": b.args}))
        .chain(skills.for_user().map(|s| {
            serde_json::json!({
                "name": s.name,
                "description": s.description,
                "argumentHint": s.argument_hint.clone().unwrap_or_default(),
            })
        }))
        .collect()
}

pub fn headless_names(skills: &Catalog) -> Vec<String> {
    BUILTINS
        .iter()
        .filter(|b| b.headless)
        .map(|b| b.name.to_string())
        .chain(skills.for_user().map(|s| s.name.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::{Kind, Skill, Source};
    use std::path::Path;

    fn catalog() -> Catalog {
        let mk = |name: &str, text: &str| -> Skill {
            crate::skills::parse(text, Path::new("/x/SKILL.md"), name, Kind::Skill, Source::Project).unwrap()
        };
        Catalog::from_skills(vec![
            mk("review", "---\ndescription: review\n---\nR"),
            mk("hidden", "---\ndescription: h\nuser-invocable: false\n---\nH"),
        ])
    }

    #[test]
    fn parses_builtins_aliases_skills_and_rejects_the_unknown() {
        let c = catalog();
        assert_eq!(
            parse("/compact keep the tests", &c),
            Some(Ok(Slash::Builtin {
                name: "compact",
                args: "keep the tests".into()
            }))
        );
        assert_eq!(
            parse("/quit", &c),
            Some(Ok(Slash::Builtin {
                name: "exit",
                args: String::new()
            }))
        );
        assert_eq!(
            parse("/review main", &c),
            Some(Ok(Slash::Skill {
                name: "review".into(),
                args: "main".into()
            }))
        );
        let err = parse("/frobnicate", &c).unwrap().unwrap_err();
        assert!(err.contains("unknown command /frobnicate") && err.contains("review") && err.contains("/compact"));
        assert!(parse("/hidden", &c).unwrap().unwrap_err().contains("user-invocable"));
        assert_eq!(parse("/usr/bin/env is odd", &c), None);
        assert_eq!(parse("plain prompt", &c), None);
        assert!(reserved_names().contains(&"quit"));
        assert_eq!(
            headless_names(&c),
            vec![
                "help",
                "compact",
                "context",
                "cost",
                "permissions",
                "mcp",
                "skills",
                "agents",
                "review"
            ]
        );
    }
}
