//! Sub-agent definitions: keel's built-in types and custom ones from markdown files (YAML front
//! matter, the body being the system prompt) or `--agents` JSON, in the reference's format.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::frontmatter;
use crate::permissions::Mode;

/// Where a definition came from (decides precedence; shown in listings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSource {
    BuiltIn,
    /// `--agents` JSON.
    Cli,
    Project,
    User,
    Plugin(String),
}

impl AgentSource {
    pub fn label(&self) -> String {
        match self {
            AgentSource::BuiltIn => "built-in".into(),
            AgentSource::Cli => "--agents".into(),
            AgentSource::Project => "project".into(),
            AgentSource::User => "user".into(),
            AgentSource::Plugin(p) => format!("plugin {p}"),
        }
    }
}

/// Which built-in behaviour a definition has; custom definitions are `Custom`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    GeneralPurpose,
    /// Read-only research (Explore, Plan): no instruction files or git snapshot in its prompt.
    ReadOnly,
    /// Reviews the work from raw facts keel gathers, never the author's account.
    Verifier,
    Custom,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// A fresh git worktree on its own branch.
    Worktree,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentDef {
    pub name: String,
    pub description: String,
    /// Tool names offered (`None`: every tool the parent has).
    pub tools: Option<Vec<String>>,
    pub disallowed_tools: Vec<String>,
    /// Model id or alias; `None` inherits the parent's.
    pub model: Option<String>,
    pub permission_mode: Option<Mode>,
    pub max_turns: Option<u32>,
    /// Skills whose full text is preloaded into the sub-agent's prompt.
    pub skills: Vec<String>,
    pub isolation: Option<Isolation>,
    /// Runs in the background unless the call says otherwise.
    pub background: bool,
    /// The system prompt (a custom definition's body).
    pub prompt: String,
    pub source: AgentSource,
    pub path: Option<PathBuf>,
    pub role: Role,
}

const VERIFIER_PROMPT: &str = "\
You are keel's verifier: an independent reviewer of a change another agent made. You are given \
raw facts that keel gathered itself — the user's requests, the diff of the working tree, the \
files the session changed and the commands it ran — and never the author's own account of the \
work. Judge the change from the facts and from running checks yourself.

How to review:
- Read the changed files and what they touch; check the change does what the user asked and \
nothing harmful besides.
- Run the project's checks (tests, build, linters) yourself with Bash. A check counts only if \
you ran it now and saw its result; zero tests executed is not a pass. Do not change any file.
- Look for deleted or weakened tests and assertions, unhandled errors, and claims the facts do \
not support.
- End with one line `VERDICT: PASS`, `VERDICT: FAIL` or `VERDICT: UNVERIFIED` (when you could not \
run the checks), after a short list of findings with file paths and the commands you ran.";

impl AgentDef {
    fn builtin(name: &str, description: &str, tools: Option<&[&str]>, role: Role, prompt: &str) -> AgentDef {
        AgentDef {
            name: name.into(),
            description: description.into(),
            tools: tools.map(|t| t.iter().map(|s| s.to_string()).collect()),
            disallowed_tools: Vec::new(),
            model: None,
            permission_mode: None,
            max_turns: None,
            skills: Vec::new(),
            isolation: None,
            background: false,
            prompt: prompt.into(),
            source: AgentSource::BuiltIn,
            path: None,
            role,
        }
    }

    /// keel's built-in types.
    pub fn builtins() -> Vec<AgentDef> {
        vec![
            AgentDef::builtin(
                "general-purpose",
                "Any multi-step task: research, code changes, running commands. Has every tool the main agent has.",
                None,
                Role::GeneralPurpose,
                "",
            ),
            AgentDef::builtin(
                "Explore",
                "Fast read-only search of the codebase (Read, Glob, Grep). Say how thorough it should be.",
                Some(&["Read", "Glob", "Grep"]),
                Role::ReadOnly,
                "",
            ),
            AgentDef::builtin(
                "Plan",
                "Read-only research to prepare a plan (Read, Glob, Grep); it changes nothing.",
                Some(&["Read", "Glob", "Grep"]),
                Role::ReadOnly,
                "",
            ),
            AgentDef::builtin(
                "verifier",
                "Independent review of the work done so far. keel hands it the raw facts (the user's requests, the diff, \
                 the changed files, the commands run), not your summary; it runs the checks itself and ends with a \
                 verdict. Read-only tools plus Bash.",
                Some(&["Read", "Glob", "Grep", "Bash", "BashOutput", "KillShell"]),
                Role::Verifier,
                VERIFIER_PROMPT,
            ),
        ]
    }

    /// Parses a definition file; `namespace` prefixes a plugin's names. `Ok(None)`: the file
    /// has no front matter at all (a README beside the definitions), which is not an error.
    pub fn parse_file(
        text: &str,
        path: &Path,
        source: AgentSource,
        namespace: Option<&str>,
    ) -> Result<Option<AgentDef>, String> {
        let at = |line: usize, msg: &str| format!("{}:{line}: {msg}; the agent is not loaded", path.display());
        let doc = frontmatter::parse(text).map_err(|e| at(e.line, &e.message))?;
        if doc.meta.is_empty() {
            return Ok(None);
        }
        let mut def = from_fields(&doc.meta, None, doc.body.trim().to_string(), source).map_err(|m| at(2, &m))?;
        if let Some(ns) = namespace {
            def.name = format!("{ns}:{}", def.name);
        }
        def.path = Some(path.to_path_buf());
        Ok(Some(def))
    }

    /// Parses `--agents` JSON: `{"name": {"description": …, "prompt": …, "tools": […], …}}`.
    pub fn parse_cli(json: &str) -> Result<Vec<AgentDef>, String> {
        let value: Value = serde_json::from_str(json).map_err(|e| format!("--agents is not valid JSON: {e}"))?;
        let Value::Object(map) = value else {
            return Err("--agents must be a JSON object keyed by agent name".into());
        };
        let mut out = Vec::new();
        for (name, spec) in map {
            let Value::Object(fields) = spec else {
                return Err(format!("--agents: `{name}` must be an object"));
            };
            let prompt = fields
                .get("prompt")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("--agents: `{name}` needs a `prompt` string"))?
                .to_string();
            let def = from_fields(&fields, Some(&name), prompt, AgentSource::Cli)
                .map_err(|m| format!("--agents: `{name}`: {m}"))?;
            out.push(def);
        }
        Ok(out)
    }
}

fn from_fields(
    meta: &Map<String, Value>,
    name: Option<&str>,
    prompt: String,
    source: AgentSource,
) -> Result<AgentDef, String> {
    let name = match name {
        Some(n) => n.to_string(),
        None => frontmatter::string(meta, "name").ok_or("the front matter needs a `name`")?,
    };
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
    {
        return Err(format!(
            "`{name}` is not a valid agent name (letters, digits, `-` and `_`)"
        ));
    }
    let description =
        frontmatter::string(meta, "description").ok_or("a `description` saying when to use the agent is required")?;
    let tool_names = |key: &str| -> Result<Option<Vec<String>>, String> {
        Ok(frontmatter::list(meta, key)?.map(|l| l.iter().map(|t| tool_name(t)).collect()))
    };
    let permission_mode = match frontmatter::string(meta, "permissionMode") {
        None => None,
        Some(m) => Some(Mode::parse(&m).ok_or_else(|| {
            format!(
                "`permissionMode` must be one of {}, found `{m}`",
                Mode::ALL.map(Mode::as_str).join(", ")
            )
        })?),
    };
    let max_turns = match meta.get("maxTurns") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                .filter(|n| *n > 0 && *n <= u32::MAX as u64)
                .ok_or_else(|| format!("`maxTurns` must be a positive number, found {v}"))? as u32,
        ),
    };
    let isolation = match frontmatter::string(meta, "isolation").as_deref() {
        None | Some("none") => None,
        Some("worktree") => Some(Isolation::Worktree),
        Some(other) => return Err(format!("`isolation` must be `worktree`, found `{other}`")),
    };
    Ok(AgentDef {
        name,
        description,
        tools: tool_names("tools")?,
        disallowed_tools: tool_names("disallowedTools")?.unwrap_or_default(),
        model: frontmatter::string(meta, "model").filter(|m| m != "inherit"),
        permission_mode,
        max_turns,
        skills: frontmatter::list(meta, "skills")?.unwrap_or_default(),
        isolation,
        background: frontmatter::flag(meta, "background")?.unwrap_or(false),
        prompt,
        source,
        path: None,
        role: Role::Custom,
    })
}

/// The tool a `tools` entry names: `Bash(git diff:*)` offers Bash (the rules that limit it are
/// the session's permission rules).
fn tool_name(entry: &str) -> String {
    entry.split('(').next().unwrap_or(entry).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_definition_file_with_every_field() {
        let text = "---\nname: security-reviewer\ndescription: Reviews diffs for vulnerabilities. Use PROACTIVELY after edits.\ntools: Read, Grep, Glob, Bash(git diff:*)\ndisallowedTools: [Write]\nmodel: haiku\npermissionMode: plan\nmaxTurns: 12\nskills: [owasp]\nisolation: worktree\nbackground: true\ncolor: red\n---\nYou are a security reviewer.\n";
        let def = AgentDef::parse_file(text, Path::new("/r/.claude/agents/sec.md"), AgentSource::Project, None)
            .unwrap()
            .unwrap();
        assert_eq!(def.name, "security-reviewer");
        assert_eq!(def.tools.as_deref().unwrap(), ["Read", "Grep", "Glob", "Bash"]);
        assert_eq!(def.disallowed_tools, vec!["Write"]);
        assert_eq!(def.model.as_deref(), Some("haiku"));
        assert_eq!(def.permission_mode, Some(Mode::Plan));
        assert_eq!(def.max_turns, Some(12));
        assert_eq!(def.skills, vec!["owasp"]);
        assert_eq!(def.isolation, Some(Isolation::Worktree));
        assert!(def.background);
        assert_eq!(def.prompt, "You are a security reviewer.");
        assert_eq!(def.role, Role::Custom);
    }

    #[test]
    fn problems_are_reported_and_readmes_skipped() {
        let p = Path::new("/r/.claude/agents/x.md");
        assert_eq!(
            AgentDef::parse_file("# Agents\nnotes\n", p, AgentSource::Project, None),
            Ok(None)
        );
        let err = AgentDef::parse_file("---\nname: x\n---\n", p, AgentSource::Project, None).unwrap_err();
        assert!(err.contains("x.md:2:") && err.contains("description"), "{err}");
        let err = AgentDef::parse_file("---\nname: [x\n---\n", p, AgentSource::Project, None).unwrap_err();
        assert!(err.contains("invalid YAML"), "{err}");
        let err = AgentDef::parse_file(
            "---\nname: x\ndescription: d\npermissionMode: yolo\n---\n",
            p,
            AgentSource::Project,
            None,
        )
        .unwrap_err();
        assert!(err.contains("permissionMode"), "{err}");
        let inherit = AgentDef::parse_file(
            "---\nname: x\ndescription: d\nmodel: inherit\n---\nP",
            p,
            AgentSource::User,
            Some("plug"),
        )
        .unwrap()
        .unwrap();
        assert_eq!(inherit.model, None);
        assert_eq!(inherit.name, "plug:x");
    }

    #[test]
    fn parses_cli_json() {
        let defs = AgentDef::parse_cli(
            r#"{"reviewer": {"description": "Reviews code", "prompt": "You review.", "tools": ["Read", "Grep"], "model": "sonnet"}}"#,
        )
        .unwrap();
        assert_eq!(defs.len(), 1);
        assert_eq!(defs[0].name, "reviewer");
        assert_eq!(defs[0].source, AgentSource::Cli);
        assert!(
            AgentDef::parse_cli(r#"{"x": {"description": "d"}}"#)
                .unwrap_err()
                .contains("prompt")
        );
        assert!(AgentDef::parse_cli("[1]").is_err());
    }
}
