//! Skills: folders with a `SKILL.md` (YAML front matter and instructions) and the reference's
//! older single-file custom commands (`.claude/commands/*.md`), which behave as skills.
//!
//! Only names and descriptions sit in the model's context ([`listing`]); the body loads when the
//! model calls the Skill tool or the user types `/name args` ([`render`]). Discovery
//! ([`discover`]) reads every place a user keeps them; a malformed file is reported with its
//! line and skipped. The engine's side of invocation (permission check, `!`cmd`` through the
//! tool pipeline, temporary allow rules, injection) lives in `engine/skills.rs`.

pub mod discover;
pub mod listing;
pub mod nested;
pub mod render;

use std::path::{Path, PathBuf};

use crate::frontmatter;

pub use discover::{Catalog, Places};

/// Largest skill or command file read.
pub const MAX_FILE: u64 = 256 * 1024;
/// Longest name the reference accepts.
pub const MAX_NAME: usize = 64;

/// Where a skill was found (shown in listings; decides precedence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `~/.claude/skills`, `~/.keel/skills`, `~/.claude/commands`, `~/.keel/commands`.
    User,
    /// `.claude/…` / `.keel/…` in the working directory or a parent up to the repository root.
    Project,
    /// An `--add-dir` directory's `.claude/skills`.
    AddedDir,
    /// A plugin, by name.
    Plugin(String),
}

impl Source {
    pub fn label(&self) -> String {
        match self {
            Source::User => "user".into(),
            Source::Project => "project".into(),
            Source::AddedDir => "added directory".into(),
            Source::Plugin(p) => format!("plugin {p}"),
        }
    }
}

/// A folder skill or a single-file command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Skill,
    Command,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// What `/name` and the Skill tool use (`plugin:name`, `dir:name` when namespaced).
    pub name: String,
    pub description: String,
    pub when_to_use: Option<String>,
    /// Permission rules allowed while the skill's task runs (`allowed-tools`).
    pub allowed_tools: Vec<String>,
    /// Only the user may invoke it (`disable-model-invocation`).
    pub disable_model_invocation: bool,
    /// Shown in the `/` menu and invocable by the user (`user-invocable`, default true).
    pub user_invocable: bool,
    pub argument_hint: Option<String>,
    /// Names of positional arguments (`arguments`), substituted as `$name`.
    pub arguments: Vec<String>,
    /// Model for the rest of the turn (`model`; `inherit` means none).
    pub model: Option<String>,
    /// `context: fork`: run in a sub-agent of this type instead of the conversation.
    pub fork_agent: Option<String>,
    /// Front matter `hooks` (the settings' shape), in force while the skill is active.
    pub hooks: Option<serde_json::Value>,
    /// The skill's folder (`${CLAUDE_SKILL_DIR}`); a command's directory.
    pub dir: PathBuf,
    /// The folder of the plugin it comes from: its hooks get `CLAUDE_PLUGIN_ROOT`.
    pub plugin_root: Option<PathBuf>,
    pub path: PathBuf,
    pub body: String,
    pub source: Source,
    pub kind: Kind,
    /// The description came from the front matter (commands without one stay out of the
    /// model's listing, as in the reference).
    pub described: bool,
}

impl Skill {
    /// Whether the model may load it with the Skill tool.
    pub fn model_invocable(&self) -> bool {
        !self.disable_model_invocation && (self.kind == Kind::Skill || self.described)
    }

    /// Whether loading it grants something (its `allowed-tools`, or `hooks`, which run
    /// commands), which needs the user's consent when the model asks for it.
    pub fn grants(&self) -> bool {
        !self.allowed_tools.is_empty() || self.hooks.is_some()
    }
}

/// The skill a request names: `skill` of a Skill call, or a catalog lookup, as written or with
/// a leading `/` and surrounding spaces. The permission check, the read-only test and the
/// loading all go through this one function, so what is approved is what loads.
pub fn requested_name(raw: &str) -> &str {
    raw.trim().trim_start_matches('/').trim()
}

/// Whether `name` is usable as a skill name (and as `/name`).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Reads one skill or command file. `default_name` is the folder (or file) name, already
/// namespaced; an error message names the file and, for bad front matter, the line.
pub fn read_file(path: &Path, default_name: &str, kind: Kind, source: Source) -> Result<Skill, String> {
    // Never a FIFO or a link to a device (a repository can ship either), never more than the cap.
    let bytes = crate::fsutil::open::read_file_capped(path, MAX_FILE)
        .map_err(|e| format!("{}: {e}; not loaded", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text; not loaded", path.display()))?;
    parse(&text, path, default_name, kind, source)
}

/// Builds a skill from a file's text (pure; `path` is for messages and `${CLAUDE_SKILL_DIR}`).
pub fn parse(text: &str, path: &Path, default_name: &str, kind: Kind, source: Source) -> Result<Skill, String> {
    let at = |line: usize, msg: &str| format!("{}:{line}: {msg}; the skill is not loaded", path.display());
    let doc = frontmatter::parse(text).map_err(|e| at(e.line, &e.message))?;
    let meta = &doc.meta;
    let field_err = |msg: String| at(2, &msg);
    let own_name = frontmatter::string(meta, "name");
    // A plugin's or nested skill's namespace stays; the front matter names the last part.
    let name = match (&own_name, default_name.rsplit_once(':')) {
        (Some(n), Some((ns, _))) if kind == Kind::Skill => format!("{ns}:{n}"),
        (Some(n), None) if kind == Kind::Skill => n.clone(),
        _ => default_name.to_string(),
    };
    let last = name.rsplit(':').next().unwrap_or(&name);
    // The front matter names the skill itself; a namespace comes only from where it lives.
    if let Some(own) = own_name.as_deref().filter(|n| kind == Kind::Skill && !valid_name(n)) {
        return Err(field_err(format!(
            "`{own}` is not a valid skill name (letters, digits, `-`, `_` and `.`, at most {MAX_NAME} characters; \
             no `:`, which only a plugin's namespace adds)"
        )));
    }
    if !valid_name(last) {
        return Err(field_err(format!(
            "`{last}` is not a valid skill name (letters, digits, `-`, `_` and `.`, at most {MAX_NAME} characters)"
        )));
    }
    let described = frontmatter::string(meta, "description");
    let description = described.clone().unwrap_or_else(|| first_paragraph(doc.body));
    let context = frontmatter::string(meta, "context");
    let fork_agent = match context.as_deref() {
        None | Some("inline") => None,
        Some("fork") => Some(frontmatter::string(meta, "agent").unwrap_or_else(|| "general-purpose".into())),
        Some(other) => {
            return Err(field_err(format!(
                "`context` must be `fork` (or absent), found `{other}`"
            )));
        }
    };
    let model = frontmatter::string(meta, "model").filter(|m| m != "inherit");
    let dir = match kind {
        Kind::Skill => path.parent().unwrap_or(Path::new("/")).to_path_buf(),
        Kind::Command => path.parent().unwrap_or(Path::new("/")).to_path_buf(),
    };
    Ok(Skill {
        name,
        description,
        when_to_use: frontmatter::string(meta, "when_to_use").or_else(|| frontmatter::string(meta, "when-to-use")),
        allowed_tools: frontmatter::list(meta, "allowed-tools")
            .map_err(&field_err)?
            .unwrap_or_default(),
        disable_model_invocation: frontmatter::flag(meta, "disable-model-invocation")
            .map_err(&field_err)?
            .unwrap_or(false),
        user_invocable: frontmatter::flag(meta, "user-invocable")
            .map_err(&field_err)?
            .unwrap_or(true),
        argument_hint: argument_hint(meta),
        arguments: frontmatter::list(meta, "arguments")
            .map_err(&field_err)?
            .unwrap_or_default(),
        model,
        fork_agent,
        hooks: meta.get("hooks").filter(|h| !h.is_null()).cloned(),
        dir,
        plugin_root: None,
        path: path.to_path_buf(),
        body: doc.body.to_string(),
        source,
        kind,
        described: described.is_some(),
    })
}

/// `argument-hint`: a string, or a YAML list (`[message]` unquoted is one) shown as `[message]`.
fn argument_hint(meta: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    match meta.get("argument-hint") {
        Some(serde_json::Value::Array(items)) => Some(
            items
                .iter()
                .map(|i| format!("[{}]", i.as_str().map(str::to_string).unwrap_or_else(|| i.to_string())))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => frontmatter::string(meta, "argument-hint"),
    }
}

/// The first paragraph of the body (headings unmarked), as a fallback description.
fn first_paragraph(body: &str) -> String {
    let para: Vec<&str> = body
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.trim().trim_start_matches('#').trim())
        .collect();
    let text = para.join(" ");
    text.chars().take(250).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(text: &str) -> Result<Skill, String> {
        parse(
            text,
            Path::new("/r/.claude/skills/pdf/SKILL.md"),
            "pdf",
            Kind::Skill,
            Source::Project,
        )
    }

    #[test]
    fn reads_every_field() {
        let s = skill(
            "---\nname: pdf-tools\ndescription: Fill PDF forms\nwhen_to_use: When a PDF form must be filled\nallowed-tools: Bash(python3 scripts/fill.py:*), Read\ndisable-model-invocation: false\nuser-invocable: false\nargument-hint: \"[file]\"\narguments: [file, out]\nmodel: haiku\ncontext: fork\nagent: Explore\nlicense: MIT\n---\nRun ${CLAUDE_SKILL_DIR}/scripts/fill.py\n",
        )
        .unwrap();
        assert_eq!(s.name, "pdf-tools");
        assert_eq!(s.description, "Fill PDF forms");
        assert_eq!(s.when_to_use.as_deref(), Some("When a PDF form must be filled"));
        assert_eq!(s.allowed_tools, vec!["Bash(python3 scripts/fill.py:*)", "Read"]);
        assert!(!s.user_invocable && !s.disable_model_invocation);
        assert_eq!(s.argument_hint.as_deref(), Some("[file]"));
        assert_eq!(s.arguments, vec!["file", "out"]);
        assert_eq!(s.model.as_deref(), Some("haiku"));
        assert_eq!(s.fork_agent.as_deref(), Some("Explore"));
        assert_eq!(s.dir, Path::new("/r/.claude/skills/pdf"));
        assert!(s.model_invocable() && s.grants());
    }

    #[test]
    fn an_unquoted_bracket_hint_is_kept() {
        let s = skill("---\nargument-hint: [message]\n---\nCommit with $ARGUMENTS\n").unwrap();
        assert_eq!(s.argument_hint.as_deref(), Some("[message]"));
    }

    #[test]
    fn defaults_and_fallbacks() {
        let s = skill("# Extract tables\n\nFrom PDF files.\n\nMore.\n").unwrap();
        assert_eq!(s.name, "pdf");
        assert_eq!(s.description, "Extract tables");
        assert!(s.user_invocable && s.model_invocable() && !s.grants());
        assert_eq!(s.fork_agent, None);
        let cmd = parse(
            "Review the diff.\n",
            Path::new("/r/.claude/commands/review.md"),
            "review",
            Kind::Command,
            Source::Project,
        )
        .unwrap();
        assert!(
            !cmd.model_invocable(),
            "a command without a description is the user's only"
        );
    }

    #[test]
    fn bad_files_are_reported_with_file_and_line() {
        let err = skill("---\nname: pdf\ndescription: [unclosed\n---\nbody\n").unwrap_err();
        assert!(err.starts_with("/r/.claude/skills/pdf/SKILL.md:"), "{err}");
        assert!(err.contains("invalid YAML") && err.contains("not loaded"), "{err}");
        let err = skill("---\nname: Bad Name!\n---\n").unwrap_err();
        assert!(err.contains("not a valid skill name"), "{err}");
        let err = skill("---\nname: ops:deploy\n---\n").unwrap_err();
        assert!(err.contains("`ops:deploy` is not a valid skill name"), "{err}");
        let err = skill("---\ncontext: spawn\n---\n").unwrap_err();
        assert!(err.contains("`context`"), "{err}");
        let err = skill("---\nuser-invocable: sometimes\n---\n").unwrap_err();
        assert!(err.contains("user-invocable"), "{err}");
    }

    #[test]
    fn plugin_namespace_is_kept() {
        let s = parse(
            "---\nname: deploy\ndescription: d\n---\n",
            Path::new("/p/skills/deploy/SKILL.md"),
            "ops:deploy",
            Kind::Skill,
            Source::Plugin("ops".into()),
        )
        .unwrap();
        assert_eq!(s.name, "ops:deploy");
    }
}
