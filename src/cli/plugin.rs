//! `keel plugin init NAME`: a new plugin folder in the project's `.claude/skills/`, where keel
//! loads it without any marketplace: its manifest, a sample skill and a README. Nothing that
//! exists is overwritten (each file is created only where none is; the others are named).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::console::out_line;

#[derive(Debug, clap::Subcommand)]
pub enum PluginCommand {
    /// Scaffold a plugin folder (manifest, a sample skill, README) in .claude/skills/NAME
    Init {
        /// The plugin's name: letters, digits, `-`, `_`, `.` (its skills are NAME:<skill>)
        name: String,
        /// The folder to create it in (default: .claude/skills of the working directory)
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

pub fn run(command: &PluginCommand) -> anyhow::Result<ExitCode> {
    match command {
        PluginCommand::Init { name, dir } => {
            let cwd = std::env::current_dir()?;
            let parent = dir.clone().unwrap_or_else(|| cwd.join(".claude/skills"));
            let report = init(&parent, name)?;
            for (path, created) in &report.files {
                if *created {
                    out_line!("created  {}", path.display());
                } else {
                    out_line!("kept     {} (it exists; not overwritten)", path.display());
                }
            }
            out_line!(
                "The plugin `{name}` is in {}; keel loads it from there (its skills as /{name}:<skill>).",
                report.root.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// What `init` did: the plugin's folder and each file, created or kept as it was.
pub struct Scaffold {
    pub root: PathBuf,
    pub files: Vec<(PathBuf, bool)>,
}

/// Creates the plugin `name` in `parent/name`, writing only files that do not exist.
pub fn init(parent: &Path, name: &str) -> anyhow::Result<Scaffold> {
    let valid = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !valid {
        anyhow::bail!("`{name}` is not a valid plugin name (letters, digits, `-`, `_`, `.`; not starting with `.`)");
    }
    let root = parent.join(name);
    let manifest = serde_json::json!({
        "name": name,
        "version": "0.1.0",
        "description": format!("The {name} plugin: describe what it brings."),
    });
    let files = [
        (
            ".claude-plugin/plugin.json",
            format!("{}\n", serde_json::to_string_pretty(&manifest)?),
        ),
        (
            "skills/hello/SKILL.md",
            format!(
                "---\nname: hello\ndescription: A sample skill of the {name} plugin. Replace this with when the \
                 model should load it.\n---\n\nSay hello, and name the plugin `{name}` the greeting came from.\n"
            ),
        ),
        (
            "README.md",
            format!(
                "# {name}\n\nA keel plugin. keel loads it from this folder (no marketplace needed):\n\n\
                 - `.claude-plugin/plugin.json`: name, version, description; `skills` may name more skill folders\n\
                 - `skills/<skill>/SKILL.md`: skills, offered as `{name}:<skill>`\n\
                 - `commands/*.md`, `agents/*.md`: commands and sub-agent types (optional)\n\
                 - `hooks/hooks.json`, `.mcp.json`: hooks and MCP servers (optional; \
                 `${{CLAUDE_PLUGIN_ROOT}}` is this folder)\n"
            ),
        ),
    ];
    let mut out = Vec::new();
    for (rel, text) in files {
        let path = root.join(rel);
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", d.display()))?;
        }
        // `create_new`: never replaces a file, nor writes through a link in its place.
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut f) => {
                f.write_all(text.as_bytes())
                    .and_then(|()| f.sync_all())
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
                out.push((path, true));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => out.push((path, false)),
            Err(e) => anyhow::bail!("cannot create {}: {e}", path.display()),
        }
    }
    Ok(Scaffold { root, files: out })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaffolds_a_loadable_plugin_and_keeps_what_exists() {
        let t = tempfile::tempdir().unwrap();
        let parent = t.path().canonicalize().unwrap().join(".claude/skills");
        std::fs::create_dir_all(parent.join("tools")).unwrap();
        std::fs::write(parent.join("tools/README.md"), "mine").unwrap();
        let s = init(&parent, "tools").unwrap();
        let created: Vec<bool> = s.files.iter().map(|(_, c)| *c).collect();
        assert_eq!(created, vec![true, true, false]);
        assert_eq!(std::fs::read_to_string(parent.join("tools/README.md")).unwrap(), "mine");
        let p = crate::plugins::load_one(&s.root, crate::config::settings::Scope::Project).unwrap();
        assert_eq!(p.name, "tools");
        assert!(init(&parent, "../x").is_err() && init(&parent, ".hidden").is_err());
        let again = init(&parent, "tools").unwrap();
        assert!(again.files.iter().all(|(_, c)| !c));
    }
}
