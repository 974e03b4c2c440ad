//! Completion of slash commands and `@path` mentions.

use std::path::Path;
use std::sync::Arc;

use crate::tui::commands::CommandInfo;

/// Most files indexed for `@` completion.
const MAX_FILES: usize = 50_000;
/// Items offered at once.
pub const MAX_ITEMS: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Command,
    Path,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub label: String,
    pub detail: String,
    /// The text that replaces the completed token.
    pub replacement: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub kind: Kind,
    pub items: Vec<Item>,
    pub selected: usize,
    /// Byte range of the editor text the selected item replaces.
    pub range: std::ops::Range<usize>,
}

impl Completion {
    pub fn selected_item(&self) -> Option<&Item> {
        self.items.get(self.selected)
    }

    pub fn next(&mut self) {
        if !self.items.is_empty() {
            self.selected = (self.selected + 1) % self.items.len();
        }
    }

    pub fn prev(&mut self) {
        if !self.items.is_empty() {
            self.selected = (self.selected + self.items.len() - 1) % self.items.len();
        }
    }
}

/// What the token at the cursor asks to complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    Command {
        query: String,
        range: std::ops::Range<usize>,
    },
    Path {
        query: String,
        range: std::ops::Range<usize>,
    },
}

pub fn query_at(text: &str, cursor: usize) -> Option<Query> {
    let before = text.get(..cursor)?;
    if let Some(rest) = before.strip_prefix('/')
        && !rest.contains(char::is_whitespace)
    {
        let end = text[cursor..]
            .find(char::is_whitespace)
            .map_or(text.len(), |i| cursor + i);
        return Some(Query::Command {
            query: rest.to_string(),
            range: 0..end,
        });
    }
    let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    let token = &before[start..];
    let query = token.strip_prefix('@')?;
    let end = text[cursor..]
        .find(char::is_whitespace)
        .map_or(text.len(), |i| cursor + i);
    Some(Query::Path {
        query: query.to_string(),
        range: start..end,
    })
}

pub fn commands(query: &str, all: &[CommandInfo], range: std::ops::Range<usize>) -> Option<Completion> {
    let q = query.to_ascii_lowercase();
    let mut matches: Vec<(u8, &CommandInfo)> = all
        .iter()
        .filter_map(|c| {
            let name = c.name.to_ascii_lowercase();
            if name.starts_with(&q) {
                Some((0, c))
            } else if name.contains(&q) {
                Some((1, c))
            } else {
                None
            }
        })
        .collect();
    matches.sort_by_key(|(rank, _)| *rank);
    // Nothing to offer once the command is typed out exactly and is the only match.
    if matches.is_empty() || (matches.len() == 1 && matches[0].1.name == query) {
        return None;
    }
    let items = matches
        .into_iter()
        .take(MAX_ITEMS)
        .map(|(_, c)| Item {
            label: format!("/{}", c.name),
            detail: if c.args.is_empty() {
                c.help.clone()
            } else {
                format!("{} — {}", c.args, c.help)
            },
            replacement: format!("/{} ", c.name),
        })
        .collect();
    Some(Completion {
        kind: Kind::Command,
        items,
        selected: 0,
        range,
    })
}

/// The files and directories of the workspace (relative paths, directories end in `/`),
/// honouring `.gitignore`.
pub fn index_files(root: &Path) -> Arc<Vec<String>> {
    let mut out = Vec::new();
    // An unsafe ignore file at the root (a link to /dev/zero) leaves the index empty.
    let Ok(walk) = crate::fsutil::walk::safe_walk(root, |e| e.file_name() != ".git") else {
        return Arc::new(out);
    };
    let walker = walk.builder.build();
    for entry in walker.flatten() {
        if out.len() >= MAX_FILES {
            break;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        if rel.as_os_str().is_empty() {
            continue;
        }
        let mut s = rel.to_string_lossy().into_owned();
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            s.push('/');
        }
        out.push(s);
    }
    Arc::new(out)
}

pub fn paths(query: &str, files: &[String], range: std::ops::Range<usize>) -> Option<Completion> {
    let q = query.to_lowercase();
    let mut scored: Vec<(u8, usize, &String)> = files
        .iter()
        .filter_map(|f| {
            let lower = f.to_lowercase();
            let name = lower.trim_end_matches('/').rsplit('/').next().unwrap_or("");
            let rank = if q.is_empty() {
                // With no query, offer the top level first.
                if lower.trim_end_matches('/').contains('/') {
                    4
                } else {
                    0
                }
            } else if name.starts_with(&q) {
                0
            } else if lower.starts_with(&q) {
                1
            } else if name.contains(&q) {
                2
            } else if lower.contains(&q) {
                3
            } else if is_subsequence(&q, &lower) {
                4
            } else {
                return None;
            };
            Some((rank, f.len(), f))
        })
        .collect();
    if scored.is_empty() {
        return None;
    }
    scored.sort();
    let items = scored
        .into_iter()
        .take(MAX_ITEMS)
        .map(|(_, _, f)| Item {
            label: format!("@{f}"),
            detail: String::new(),
            replacement: if f.ends_with('/') {
                format!("@{f}")
            } else {
                format!("@{f} ")
            },
        })
        .collect();
    Some(Completion {
        kind: Kind::Path,
        items,
        selected: 0,
        range,
    })
}

fn is_subsequence(needle: &str, hay: &str) -> bool {
    let mut h = hay.chars();
    needle.chars().all(|n| h.any(|c| c == n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str) -> CommandInfo {
        CommandInfo {
            name: name.into(),
            args: String::new(),
            help: format!("{name} help"),
        }
    }

    #[test]
    fn finds_the_token_at_the_cursor() {
        assert_eq!(
            query_at("/co", 3),
            Some(Query::Command {
                query: "co".into(),
                range: 0..3
            })
        );
        assert_eq!(query_at("/compact now", 12), None);
        assert_eq!(
            query_at("look at @src/ma please", 15),
            Some(Query::Path {
                query: "src/ma".into(),
                range: 8..15
            })
        );
        assert_eq!(query_at("mail me@x", 9).map(|_| ()), None);
        assert_eq!(query_at("plain", 5), None);
    }

    #[test]
    fn command_completion_prefers_prefixes() {
        let all = vec![
            info("clear"),
            info("compact"),
            info("context"),
            info("cost"),
            info("todos"),
        ];
        let c = commands("co", &all, 0..3).unwrap();
        let labels: Vec<&str> = c.items.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(labels, vec!["/compact", "/context", "/cost"]);
        assert_eq!(c.items[0].replacement, "/compact ");
        assert!(commands("todos", &all, 0..6).is_none());
        assert!(commands("zzz", &all, 0..4).is_none());
    }

    #[test]
    fn path_completion_ranks_file_names_first() {
        let files: Vec<String> = vec![
            "docs/".into(),
            "docs/main.md".into(),
            "src/".into(),
            "src/main.rs".into(),
            "src/domain.rs".into(),
        ];
        let c = paths("main", &files, 0..5).unwrap();
        let labels: Vec<&str> = c.items.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(labels, vec!["@src/main.rs", "@docs/main.md", "@src/domain.rs"]);
        let c = paths("", &files, 0..1).unwrap();
        assert_eq!(c.items[0].label, "@src/");
        assert_eq!(c.items[0].replacement, "@src/");
    }

    #[test]
    fn index_honours_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir_all(dir.path().join("target")).unwrap();
        std::fs::write(dir.path().join("target/x"), "").unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "").unwrap();
        let files = index_files(dir.path());
        assert!(files.contains(&"src/a.rs".to_string()), "{files:?}");
        assert!(files.contains(&"src/".to_string()));
        assert!(!files.iter().any(|f| f.starts_with("target")), "{files:?}");
        assert!(!files.iter().any(|f| f.starts_with(".git/")), "{files:?}");
    }
}
