//! Custom slash commands: markdown files in `.claude/commands/` and `.keel/commands/` (project
//! and user), in the reference's format. A file `review.md` is `/review`; `git/log.md` is
//! `/git:log`. Front matter may give `description` and `argument-hint`.

use std::path::{Path, PathBuf};

use regex::Regex;

/// Largest command file read.
const MAX_FILE: u64 = 256 * 1024;
const MAX_DEPTH: usize = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    pub body: String,
    pub path: PathBuf,
    /// `user` or `project`.
    pub source: &'static str,
}

#[derive(Debug, Clone, Default)]
pub struct CustomCommands {
    list: Vec<CustomCommand>,
}

impl CustomCommands {
    /// Loads user commands, then project commands; on a name clash the first one wins (the
    /// reference lets personal commands shadow project ones). Problems come back as warnings.
    pub fn load(cwd: &Path, user_home: Option<&Path>, keel_home: Option<&Path>) -> (Self, Vec<String>) {
        let mut dirs: Vec<(PathBuf, &'static str)> = Vec::new();
        if let Some(h) = user_home {
            dirs.push((h.join(".claude/commands"), "user"));
        }
        if let Some(k) = keel_home {
            dirs.push((k.join("commands"), "user"));
        }
        dirs.push((cwd.join(".claude/commands"), "project"));
        dirs.push((cwd.join(".keel/commands"), "project"));
        let mut out = CustomCommands::default();
        let mut warnings = Vec::new();
        for (dir, source) in dirs {
            let mut files = Vec::new();
            collect(&dir, &dir, 0, &mut files);
            files.sort();
            for (name, path) in files {
                if super::BUILTINS.iter().any(|b| b.name == name) {
                    warnings.push(format!(
                        "{}: /{name} is a built-in command; the file is ignored",
                        path.display()
                    ));
                    continue;
                }
                if out.get(&name).is_some() {
                    continue;
                }
                match read_command(&name, &path, source) {
                    Ok(c) => out.list.push(c),
                    Err(e) => warnings.push(e),
                }
            }
        }
        out.list.sort_by(|a, b| a.name.cmp(&b.name));
        (out, warnings)
    }

    pub fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.list.iter().find(|c| c.name == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &CustomCommand> {
        self.list.iter()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

fn collect(root: &Path, dir: &Path, depth: usize, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            if depth < MAX_DEPTH {
                collect(root, &path, depth + 1, out);
            }
            continue;
        }
        if path.extension().is_none_or(|x| x != "md") {
            continue;
        }
        let Ok(rel) = path.with_extension("").strip_prefix(root).map(Path::to_path_buf) else {
            continue;
        };
        let name = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(":");
        out.push((name, path));
    }
}

fn read_command(name: &str, path: &Path, source: &'static str) -> Result<CustomCommand, String> {
    let bytes = crate::fsutil::open::read_file_capped(path, MAX_FILE)
        .map_err(|e| format!("{}: {e}; not loaded", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text; not loaded", path.display()))?;
    let (front, body) = split_front_matter(&text);
    let field = |key: &str| front.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let description = field("description").filter(|d| !d.is_empty()).unwrap_or_else(|| {
        let first = body.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        let first = first.trim_start_matches('#').trim();
        first.chars().take(80).collect()
    });
    Ok(CustomCommand {
        name: name.to_string(),
        description,
        argument_hint: field("argument-hint"),
        body: body.to_string(),
        path: path.to_path_buf(),
        source,
    })
}

/// Splits `---` front matter into `key: value` pairs (scalars and `|`/`>` blocks) and the body.
fn split_front_matter(text: &str) -> (Vec<(String, String)>, &str) {
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return (Vec::new(), text);
    };
    let Some(end) = rest.find("\n---").filter(|&i| {
        let after = &rest[i + 4..];
        after.is_empty() || after.starts_with('\n') || after.starts_with("\r\n")
    }) else {
        return (Vec::new(), text);
    };
    let body = rest[end + 4..].trim_start_matches(['\r', '\n']);
    let mut fields: Vec<(String, String)> = Vec::new();
    let mut block: Option<(String, Vec<String>)> = None;
    for line in rest[..end].lines() {
        if let Some((key, lines)) = &mut block {
            if line.starts_with(' ') || line.starts_with('\t') || line.trim().is_empty() {
                lines.push(line.trim().to_string());
                continue;
            }
            fields.push((key.clone(), lines.join(" ").trim().to_string()));
            block = None;
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        if k.starts_with(' ') {
            continue;
        }
        let v = v.trim();
        if v == "|" || v == ">" || v == "|-" || v == ">-" {
            block = Some((k.trim().to_string(), Vec::new()));
        } else {
            fields.push((k.trim().to_string(), unquote(v)));
        }
    }
    if let Some((key, lines)) = block {
        fields.push((key, lines.join(" ").trim().to_string()));
    }
    (fields, body)
}

fn unquote(v: &str) -> String {
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return v[1..v.len() - 1].to_string();
        }
    }
    v.to_string()
}

/// Splits arguments like a shell: whitespace separates, quotes group.
pub fn split_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in args.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Values for `${CLAUDE_SESSION_ID}` and `${CLAUDE_PROJECT_DIR}`.
pub struct ExpandContext<'a> {
    pub session_id: &'a str,
    pub project_dir: &'a Path,
}

impl CustomCommand {
    /// The prompt this command sends for `args`.
    pub fn expand(&self, args: &str, ctx: &ExpandContext<'_>) -> Result<String, String> {
        if self.body.contains("!`") {
            return Err(format!(
                "/{} contains shell snippets (!`…`); keel does not run those in custom commands yet",
                self.name
            ));
        }
        let parts = split_args(args);
        let placeholder = Regex::new(r"\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS|\$(\d+)").map_err(|e| e.to_string())?;
        let mut used = false;
        let body = placeholder.replace_all(&self.body, |c: &regex::Captures<'_>| {
            used = true;
            match c.get(1).or_else(|| c.get(2)) {
                Some(n) => n
                    .as_str()
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| parts.get(i).cloned())
                    .unwrap_or_default(),
                None => args.to_string(),
            }
        });
        let mut text = body
            .replace("${CLAUDE_SESSION_ID}", ctx.session_id)
            .replace("${CLAUDE_PROJECT_DIR}", &ctx.project_dir.display().to_string());
        if !used && !args.trim().is_empty() {
            text.push_str(&format!("\n\nARGUMENTS: {}", args.trim()));
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ExpandContext<'static> {
        ExpandContext {
            session_id: "sid",
            project_dir: Path::new("/proj"),
        }
    }

    #[test]
    fn loads_project_and_user_commands_with_front_matter() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let write = |p: PathBuf, s: &str| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, s).unwrap();
        };
        write(
            cwd.path().join(".claude/commands/review.md"),
            "---\ndescription: \"Review the diff\"\nargument-hint: [focus]\n---\nReview $ARGUMENTS carefully.\n",
        );
        write(
            cwd.path().join(".keel/commands/git/log.md"),
            "# Show the log\nSummarise git log.\n",
        );
        write(cwd.path().join(".claude/commands/help.md"), "shadow\n");
        write(home.path().join(".claude/commands/review.md"), "user review wins\n");
        let (cmds, warnings) = CustomCommands::load(cwd.path(), Some(home.path()), None);
        let names: Vec<&str> = cmds.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec!["git:log", "review"]);
        assert_eq!(cmds.get("review").unwrap().source, "user");
        assert_eq!(cmds.get("git:log").unwrap().description, "Show the log");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("built-in"));
    }

    #[test]
    fn front_matter_fields() {
        let (f, body) = split_front_matter("---\ndescription: >\n  two\n  lines\nargument-hint: '[x]'\n---\nbody\n");
        assert_eq!(f[0], ("description".to_string(), "two lines".to_string()));
        assert_eq!(f[1], ("argument-hint".to_string(), "[x]".to_string()));
        assert_eq!(body, "body\n");
    }

    #[test]
    fn expansion_substitutes_arguments() {
        let c = CustomCommand {
            name: "fix".into(),
            description: String::new(),
            argument_hint: None,
            body: "Fix issue $0 in $1 (all: $ARGUMENTS; second: $ARGUMENTS[1]) in ${CLAUDE_PROJECT_DIR}".into(),
            path: PathBuf::new(),
            source: "project",
        };
        assert_eq!(
            c.expand("42 \"src/a b.rs\"", &ctx()).unwrap(),
            "Fix issue 42 in src/a b.rs (all: 42 \"src/a b.rs\"; second: src/a b.rs) in /proj"
        );
        let plain = CustomCommand {
            body: "Do it.".into(),
            ..c.clone()
        };
        assert_eq!(plain.expand("now", &ctx()).unwrap(), "Do it.\n\nARGUMENTS: now");
        assert_eq!(plain.expand("", &ctx()).unwrap(), "Do it.");
        let shell = CustomCommand {
            body: "Status: !`git status`".into(),
            ..c
        };
        assert!(shell.expand("", &ctx()).unwrap_err().contains("shell snippets"));
    }
}
