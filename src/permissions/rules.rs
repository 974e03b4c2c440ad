//! Permission rules in the reference syntax: `Tool`, `Tool(specifier)`, `Bash(prefix:*)`,
//! `Bash(glob *)`, `Read(path-glob)` / `Edit(path-glob)` with path anchors,
//! `WebFetch(domain:host)`, MCP names and tool-name globs.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

pub use crate::frontmatter::split_cli_rules;
pub use crate::types::permission::Behavior;
use crate::types::tool::RuleGrammar;

#[derive(Debug, Clone)]
pub enum Spec {
    /// The whole tool (`Tool`, `Tool(*)`).
    Any,
    /// Bash: the command equals this text.
    Exact(String),
    /// Bash: the command starts with this prefix at a word boundary (`prefix:*`).
    Prefix(String),
    /// Bash: glob over the command (`*` matches anything).
    CommandGlob(regex::Regex),
    /// Read/Edit family: a path glob, resolved to an absolute pattern.
    Path(GlobMatcher, String),
    /// `Tool(param:value)`: a scalar top-level input parameter, `*` in the value a wildcard.
    Param(String, ValuePattern),
    /// `WebFetch(domain:example.com)`: that host; `domain:*.example.com`: its subdomains.
    Domain { host: String, subdomains: bool },
    /// Other tools: glob over the call's key argument.
    Key(GlobMatcher),
}

/// The value of a `Tool(param:value)` rule: literal text where each `*` stands for any run of
/// characters (none included, line breaks included); the whole value must match. Compiled to
/// a `regex` automaton, whose matching time is linear in the value (no backtracking), so a
/// hostile pattern or input cannot make a decision slow.
#[derive(Debug, Clone)]
pub struct ValuePattern {
    /// As written.
    pub text: String,
    /// `None` when the value has no `*` (compared as text).
    glob: Option<regex::Regex>,
}

impl ValuePattern {
    pub fn new(text: &str) -> Result<ValuePattern, String> {
        if !text.contains('*') {
            return Ok(ValuePattern {
                text: text.to_string(),
                glob: None,
            });
        }
        let mut re = String::from("(?s)^");
        for (i, part) in text.split('*').enumerate() {
            if i > 0 {
                re.push_str(".*");
            }
            re.push_str(&regex::escape(part));
        }
        re.push('$');
        let glob = regex::RegexBuilder::new(&re)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| format!("invalid wildcard value: {e}"))?;
        Ok(ValuePattern {
            text: text.to_string(),
            glob: Some(glob),
        })
    }

    pub fn matches(&self, value: &str) -> bool {
        match &self.glob {
            Some(re) => re.is_match(value),
            None => value == self.text,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Rule {
    /// As written, for messages and saving.
    pub text: String,
    /// Tool name or tool-name glob (`mcp__*`, `*`).
    pub tool: String,
    pub spec: Spec,
    pub behavior: Behavior,
    /// Where the rule came from (settings file or `--allowedTools`).
    pub source: String,
    /// For a tool keel does not know by name when the rule is read (a tool registered later):
    /// the specifier read as a path too, used when the tool declares a path grammar.
    pub path_reading: Option<(GlobMatcher, String)>,
}

#[derive(Debug, thiserror::Error)]
#[error("{source_label}: invalid permission rule `{rule}`: {problem}")]
pub struct RuleError {
    pub rule: String,
    pub source_label: String,
    pub problem: String,
}

/// What a rule needs to resolve relative paths.
#[derive(Debug, Clone)]
pub struct Anchors {
    pub cwd: PathBuf,
    /// The settings file's directory, for `/`-anchored paths.
    pub base_dir: PathBuf,
    pub home: Option<PathBuf>,
}

/// Bash parameters a `Bash(param:value)` rule may name (anything else is a command prefix).
const BASH_PARAMS: &[&str] = &["run_in_background", "timeout", "dangerouslyDisableSandbox"];

impl Rule {
    pub fn parse(text: &str, behavior: Behavior, source: &str, anchors: &Anchors) -> Result<Rule, RuleError> {
        let err = |problem: &str| RuleError {
            rule: text.to_string(),
            source_label: source.to_string(),
            problem: problem.to_string(),
        };
        let trimmed = text.trim();
        let (tool, spec_text) = match trimmed.find('(') {
            Some(open) => {
                if !trimmed.ends_with(')') {
                    return Err(err("a specifier must end with `)`"));
                }
                (&trimmed[..open], Some(&trimmed[open + 1..trimmed.len() - 1]))
            }
            None => (trimmed, None),
        };
        if tool.is_empty()
            || !tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*'))
        {
            return Err(err("the tool name may contain letters, digits, `_`, `-` and `*` only"));
        }
        // The specifier reads as the named tool declares (`tools::kinds`); a name keel does not
        // know yet keeps a path reading too, for a tool registered later that reads paths.
        let grammar = crate::tools::kinds::declared(tool).grammar;
        let path_reading = match spec_text.map(str::trim) {
            Some(s) if !s.is_empty() && s != "*" && !crate::tools::kinds::is_known(tool) => {
                let pattern = resolve_path_pattern(s, anchors);
                compile_glob(&pattern).ok().map(|m| (m, pattern))
            }
            _ => None,
        };
        let spec = match spec_text.map(str::trim) {
            None | Some("*") | Some("") => Spec::Any,
            Some(s) if grammar == RuleGrammar::Command => match param_spec(s) {
                Some((k, v)) if BASH_PARAMS.contains(&k.as_str()) => {
                    Spec::Param(k, ValuePattern::new(&v).map_err(|p| err(&p))?)
                }
                _ => bash_spec(s).map_err(|p| err(&p))?,
            },
            Some(s) if grammar == RuleGrammar::Domain => domain_spec(s).map_err(|p| err(&p))?,
            Some(s) if grammar == RuleGrammar::Path => {
                let pattern = resolve_path_pattern(s, anchors);
                Spec::Path(compile_glob(&pattern).map_err(|p| err(&p))?, pattern)
            }
            Some(s) => match param_spec(s) {
                Some((k, v)) => Spec::Param(k, ValuePattern::new(&v).map_err(|p| err(&p))?),
                None => Spec::Key(compile_glob(s).map_err(|p| err(&p))?),
            },
        };
        Ok(Rule {
            text: trimmed.to_string(),
            tool: tool.to_string(),
            spec,
            behavior,
            source: source.to_string(),
            path_reading,
        })
    }

    /// Whether the rule names this tool (directly, through the rule names its declaration
    /// says cover it, or by glob), as `tools::kinds` knows the name.
    pub fn names_tool(&self, tool: &str) -> bool {
        self.names_call(tool, crate::tools::kinds::declared(tool).covered_by)
    }

    /// Whether the rule names a tool that `covered_by` rule names also cover.
    pub fn names_call(&self, tool: &str, covered_by: &[&str]) -> bool {
        if self.tool == tool || glob_name(&self.tool, tool) {
            return true;
        }
        // `mcp__server` covers every tool of that server.
        if self.tool.starts_with("mcp__") && self.tool.matches("__").count() == 1 {
            return tool.starts_with(&format!("{}__", self.tool));
        }
        // `Edit(...)` rules cover Write, `Read(...)` rules Grep and Glob, `Task` Agent.
        covered_by.contains(&self.tool.as_str())
    }

    /// A bare-name deny that removes the tool from what the model is offered.
    pub fn is_whole_tool(&self) -> bool {
        matches!(self.spec, Spec::Any)
    }

    /// The same rule about the copy under `to` of what it says about paths under `from` (a
    /// git worktree of the repository `from`); `None` when it names no path there.
    pub fn rebased(&self, from: &Path, to: &Path) -> Option<Rule> {
        let Spec::Path(_, pattern) = &self.spec else {
            return None;
        };
        let rest = pattern
            .strip_prefix(from.to_str()?)
            .filter(|r| r.is_empty() || r.starts_with('/'))?;
        let moved = format!("{}{rest}", to.display());
        let matcher = compile_glob(&moved).ok()?;
        Some(Rule {
            spec: Spec::Path(matcher, moved),
            ..self.clone()
        })
    }

    /// Matches a Bash simple command.
    pub fn matches_command(&self, command: &str) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Exact(e) => command == e,
            Spec::Prefix(p) => command == p || command.strip_prefix(p.as_str()).is_some_and(|r| r.starts_with(' ')),
            Spec::CommandGlob(re) => re.is_match(command),
            _ => false,
        }
    }

    /// Matches an absolute path.
    pub fn matches_path(&self, path: &Path) -> bool {
        match (&self.spec, &self.path_reading) {
            (Spec::Any, _) => true,
            (Spec::Path(m, _), _) => m.is_match(path),
            (_, Some((m, _))) => m.is_match(path),
            _ => false,
        }
    }

    /// Matches a call's input by a `param:value` rule: a string parameter by its text, any
    /// other scalar by its JSON form (`true`, `30000`). A `model` parameter also matches by the
    /// model an alias stands for (`Agent(model:opus)` refuses `claude-opus-5-5` too).
    pub fn matches_param(&self, input: &serde_json::Value) -> bool {
        let Spec::Param(k, v) = &self.spec else {
            return false;
        };
        let text = match input.get(k) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Object(_) | serde_json::Value::Array(_)) | None => return false,
            Some(other) => other.to_string(),
        };
        if v.matches(&text) {
            return true;
        }
        k == "model" && {
            let resolved = crate::config::models::resolve_alias(&text);
            v.matches(&resolved) || crate::config::models::resolve_alias(&v.text) == resolved
        }
    }

    /// Matches a qualified name `prefix:rest` (a plugin's skill) by a `prefix:value` rule.
    pub fn matches_qualified(&self, name: &str) -> bool {
        match (&self.spec, name.split_once(':')) {
            (Spec::Param(k, v), Some((prefix, rest))) => k == prefix && v.matches(rest),
            _ => false,
        }
    }

    /// Matches the host of a URL (lower case, without brackets or a final dot).
    pub fn matches_host(&self, host: &str) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Domain {
                host: h,
                subdomains: false,
            } => host == h,
            Spec::Domain {
                host: h,
                subdomains: true,
            } => host.strip_suffix(h.as_str()).is_some_and(|p| p.ends_with('.')),
            _ => false,
        }
    }

    /// The host a `domain:` rule names exactly (not a wildcard, not the whole tool).
    pub fn exact_host(&self) -> Option<&str> {
        match &self.spec {
            Spec::Domain {
                host,
                subdomains: false,
            } => Some(host),
            _ => None,
        }
    }

    pub fn matches_key(&self, key: &str) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Key(m) => m.is_match(key),
            _ => false,
        }
    }
}

fn glob_name(pattern: &str, name: &str) -> bool {
    pattern.contains('*')
        && GlobBuilder::new(pattern)
            .build()
            .map(|g| g.compile_matcher().is_match(name))
            .unwrap_or(false)
}

/// A rule's command with its quoting read as the shell reads it (`python3 -c 'print(42)'` →
/// the words `python3`, `-c`, `print(42)`), in the form commands are matched in: words joined
/// by single spaces. Text without quotes, or that is not one plain command, stays as written.
fn unquoted(s: &str) -> String {
    if !s.contains(['\'', '"', '\\']) {
        return s.to_string();
    }
    match crate::shell::parse::parse(s) {
        Ok(cmds) if cmds.len() == 1 && cmds[0].words.iter().all(|w| !w.dynamic) => cmds[0].text(),
        _ => s.to_string(),
    }
}

fn bash_spec(s: &str) -> Result<Spec, String> {
    if let Some(prefix) = s.strip_suffix(":*") {
        if prefix.contains('*') {
            return Err("`:*` may only end a rule, after a literal prefix".into());
        }
        return Ok(Spec::Prefix(unquoted(prefix.trim())));
    }
    if !s.contains('*') {
        return Ok(Spec::Exact(unquoted(s)));
    }
    // `*` matches anything; a trailing ` *` also matches the bare command (`ls *` ⊇ `ls`).
    let mut re = String::from("^");
    let (body, optional_tail) = match s.strip_suffix(" *") {
        Some(b) => (b, true),
        None => (s, false),
    };
    for (i, part) in body.split('*').enumerate() {
        if i > 0 {
            re.push_str(".*");
        }
        re.push_str(&regex::escape(part));
    }
    if optional_tail {
        re.push_str("( .*)?");
    }
    re.push('$');
    regex::Regex::new(&re).map(Spec::CommandGlob).map_err(|e| e.to_string())
}

/// `domain:example.com` or `domain:*.example.com`, the only specifiers a domain rule has.
fn domain_spec(s: &str) -> Result<Spec, String> {
    let usage = "a web rule names a domain: `WebFetch(domain:example.com)`, or `WebFetch(domain:*.example.com)` for its subdomains";
    let name = s
        .strip_prefix("domain:")
        .map(str::trim)
        .ok_or_else(|| usage.to_string())?;
    let (subdomains, host) = match name.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, name),
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let valid = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
    if !valid {
        return Err(format!("`{name}` is not a host name; {usage}"));
    }
    Ok(Spec::Domain { host, subdomains })
}

fn param_spec(s: &str) -> Option<(String, String)> {
    let (k, v) = s.split_once(':')?;
    (!k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then(|| (k.to_string(), v.to_string()))
}

/// Resolves the reference's path anchors to an absolute glob: `//abs`, `~/home`,
/// `/relative-to-settings-dir`, `path` or `./path` relative to the working directory. A
/// pattern without a slash matches at any depth (gitignore semantics).
pub fn resolve_path_pattern(spec: &str, a: &Anchors) -> String {
    if let Some(abs) = spec.strip_prefix("//") {
        format!("/{abs}")
    } else if let Some(rest) = spec.strip_prefix("~/") {
        match &a.home {
            Some(h) => format!("{}/{rest}", h.display()),
            None => spec.to_string(),
        }
    } else if let Some(rest) = spec.strip_prefix('/') {
        format!("{}/{rest}", a.base_dir.display())
    } else {
        let rel = spec.strip_prefix("./").unwrap_or(spec);
        let rel_trimmed = rel.trim_end_matches('/');
        if !spec.starts_with("./") && !rel_trimmed.contains('/') {
            format!("{}/**/{rel}", a.cwd.display())
        } else {
            format!("{}/{rel}", a.cwd.display())
        }
    }
}

/// A pattern also matches everything below a matching directory.
fn compile_glob(pattern: &str) -> Result<GlobMatcher, String> {
    let base = pattern.trim_end_matches('/');
    let full = if base.ends_with("/**") {
        base.to_string()
    } else {
        format!("{{{base},{base}/**}}")
    };
    GlobBuilder::new(&full)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("invalid glob: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchors() -> Anchors {
        Anchors {
            cwd: "/proj".into(),
            base_dir: "/proj".into(),
            home: Some("/home/u".into()),
        }
    }

    fn rule(t: &str) -> Rule {
        Rule::parse(t, Behavior::Allow, "test", &anchors()).unwrap()
    }

    #[test]
    fn bash_forms() {
        assert!(rule("Bash(npm run test:*)").matches_command("npm run test"));
        assert!(rule("Bash(npm run test:*)").matches_command("npm run test --watch"));
        assert!(!rule("Bash(git:*)").matches_command("gitk"));
        assert!(rule("Bash(npm run build)").matches_command("npm run build"));
        assert!(!rule("Bash(npm run build)").matches_command("npm run build --prod"));
        assert!(rule("Bash(git * main)").matches_command("git push origin main"));
        assert!(rule("Bash(ls *)").matches_command("ls -la"));
        assert!(rule("Bash(ls *)").matches_command("ls"));
        assert!(!rule("Bash(ls *)").matches_command("lsof"));
        assert!(rule("Bash(ls*)").matches_command("lsof"));
        assert!(rule("Bash").matches_command("anything at all"));
    }

    #[test]
    fn task_rules_name_the_agent_tool() {
        assert!(rule("Task(Explore)").names_tool("Agent"));
        assert!(rule("Task").names_tool("Agent"));
        assert!(rule("Agent(Explore)").names_tool("Agent"));
        assert!(rule("Task(Explore)").matches_key("Explore"));
        assert!(!rule("Task").names_tool("TaskOutput"));
        assert!(!rule("Agent").names_tool("Task"));
    }

    #[test]
    fn path_anchors() {
        assert!(rule("Read(//etc/**)").matches_path(Path::new("/etc/passwd")));
        assert!(rule("Read(~/.ssh/**)").matches_path(Path::new("/home/u/.ssh/id_rsa")));
        assert!(rule("Edit(/src/**/*.rs)").matches_path(Path::new("/proj/src/a/b.rs")));
        assert!(!rule("Edit(/src/*.rs)").matches_path(Path::new("/proj/src/a/b.rs")));
        assert!(rule("Read(.env)").matches_path(Path::new("/proj/sub/.env")));
        assert!(rule("Read(*.pem)").matches_path(Path::new("/proj/certs/server.pem")));
        assert!(rule("Edit(./docs)").matches_path(Path::new("/proj/docs/x.md")));
        assert!(!rule("Edit(./docs)").matches_path(Path::new("/proj/src/docs.rs")));
    }

    #[test]
    fn tool_names_families_and_mcp() {
        assert!(rule("Edit").names_tool("Write"));
        assert!(rule("Read").names_tool("Grep"));
        assert!(!rule("Read").names_tool("Edit"));
        assert!(rule("mcp__github").names_tool("mcp__github__create_issue"));
        assert!(rule("mcp__github__*").names_tool("mcp__github__create_issue"));
        assert!(!rule("mcp__github__create_issue").names_tool("mcp__github__delete_repo"));
        assert!(rule("mcp__*").names_tool("mcp__x__y"));
        assert!(rule("Bash(run_in_background:true)").matches_param(&serde_json::json!({"run_in_background": true})));
    }

    #[test]
    fn domain_rules() {
        let exact = rule("WebFetch(domain:Example.com)");
        assert!(exact.matches_host("example.com"));
        assert!(!exact.matches_host("www.example.com"));
        assert!(!exact.matches_host("badexample.com"));
        assert_eq!(exact.exact_host(), Some("example.com"));
        let subs = rule("WebFetch(domain:*.example.com)");
        assert!(subs.matches_host("docs.example.com"));
        assert!(subs.matches_host("a.b.example.com"));
        assert!(!subs.matches_host("example.com"));
        assert!(!subs.matches_host("badexample.com"));
        assert_eq!(subs.exact_host(), None);
        assert!(rule("WebFetch").matches_host("anything.org"));
        assert!(rule("WebFetch(domain:[::1])").matches_host("::1"));
        for bad in [
            "WebFetch(example.com)",
            "WebFetch(domain:)",
            "WebFetch(domain:a b)",
            "WebFetch(url:x)",
        ] {
            assert!(Rule::parse(bad, Behavior::Allow, "x", &anchors()).is_err(), "{bad}");
        }
    }

    #[test]
    fn parameter_values_take_wildcards() {
        let input = |v: serde_json::Value| serde_json::json!({ "model": v, "timeout": 30000 });
        let opus = rule("Agent(model:opus)");
        assert!(opus.names_tool("Agent"));
        assert!(opus.matches_param(&input("opus".into())));
        // An alias and the id it stands for are one model, either way round.
        assert!(opus.matches_param(&input("claude-opus-5-5".into())));
        assert!(rule("Agent(model:claude-opus-5-5)").matches_param(&input("opus".into())));
        assert!(!opus.matches_param(&input("sonnet".into())));
        assert!(!opus.matches_param(&serde_json::json!({})));
        let family = rule("Agent(model:*opus*)");
        assert!(family.matches_param(&input("claude-opus-4-1".into())));
        assert!(family.matches_param(&input("opus".into())));
        assert!(!family.matches_param(&input("claude-sonnet-5-5".into())));
        // The whole value must match; `*` spans anything, nothing included.
        let pre = rule("mcp__db__query(sql:SELECT *)");
        assert!(pre.matches_param(&serde_json::json!({"sql": "SELECT * FROM t"})));
        assert!(pre.matches_param(&serde_json::json!({"sql": "SELECT "})));
        assert!(pre.matches_param(&serde_json::json!({"sql": "SELECT a\nFROM t"})));
        assert!(!pre.matches_param(&serde_json::json!({"sql": "DELETE FROM t; SELECT 1"})));
        // Other characters are literal, regex syntax included.
        let dots = rule("Agent(model:a.c)");
        assert!(!dots.matches_param(&input("abc".into())));
        assert!(dots.matches_param(&input("a.c".into())));
        // Scalars other than strings match by their JSON text.
        assert!(rule("Bash(timeout:3*)").matches_param(&input("x".into())));
        assert!(rule("Bash(run_in_background:*)").matches_param(&serde_json::json!({"run_in_background": false})));
        assert!(!rule("Agent(model:*)").matches_param(&serde_json::json!({"model": {"a": 1}})));
        // A plugin's skills by their qualified names.
        assert!(rule("Skill(ops:*)").matches_qualified("ops:deploy"));
        assert!(rule("Skill(ops:dep*)").matches_qualified("ops:deploy"));
        assert!(!rule("Skill(ops:*)").matches_qualified("dev:deploy"));
        assert!(!rule("Skill(ops:x)").matches_qualified("ops:deploy"));
    }

    #[test]
    fn hostile_wildcards_match_in_linear_time() {
        // A backtracking matcher takes exponential time on this pair; the automaton does not
        // (the test would not finish otherwise).
        let pattern = format!("Agent(model:{}b)", "*a".repeat(200));
        let r = rule(&pattern);
        let value = "a".repeat(100_000);
        assert!(!r.matches_param(&serde_json::json!({ "model": value })));
        assert!(r.matches_param(&serde_json::json!({ "model": format!("{}b", "a".repeat(300)) })));
    }

    #[test]
    fn cli_splitting_keeps_parentheses_together() {
        let v = vec!["Bash(git log:*) Read,Edit(src/**)".to_string(), "Glob".to_string()];
        assert_eq!(
            split_cli_rules(&v),
            vec!["Bash(git log:*)", "Read", "Edit(src/**)", "Glob"]
        );
    }

    #[test]
    fn invalid_rules_are_errors() {
        assert!(Rule::parse("Bash(ls", Behavior::Allow, "x", &anchors()).is_err());
        assert!(Rule::parse("Ba sh", Behavior::Allow, "x", &anchors()).is_err());
        assert!(Rule::parse("Bash(*x:*)", Behavior::Allow, "x", &anchors()).is_err());
    }
}
