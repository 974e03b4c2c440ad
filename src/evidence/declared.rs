//! Project-declared verification commands: settings `verification.commands`, and the commands
//! a "Build and Test Commands" section of CLAUDE.md / AGENTS.md lists (in code spans or code
//! blocks). Pure functions over the texts; declaring a command only makes keel recognise it as
//! a test run, it never runs anything.

/// Commands listed in the build/test section(s) of an instruction file.
pub fn from_instructions(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut section: Option<usize> = None;
    let mut fence: Option<String> = None;
    for line in markdown.lines() {
        let t = line.trim_start();
        if let Some(marker) = &fence {
            if t.starts_with(marker.as_str()) {
                fence = None;
            } else if section.is_some() {
                push_command(&mut out, t);
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = Some(t[..3].to_string());
            continue;
        }
        if let Some(level) = heading_level(t) {
            let title = t[level..].trim().to_ascii_lowercase();
            match section {
                Some(open) if level > open => {}
                _ => section = is_build_test_heading(&title).then_some(level),
            }
            continue;
        }
        if section.is_some() {
            for span in code_spans(t) {
                push_command(&mut out, span);
            }
        }
    }
    out
}

fn heading_level(line: &str) -> Option<usize> {
    let n = line.chars().take_while(|c| *c == '#').count();
    (n > 0 && n <= 6 && line[n..].starts_with(' ')).then_some(n)
}

/// "Build and Test Commands", "Testing commands", "Build & test", "Commands"…
fn is_build_test_heading(title: &str) -> bool {
    let about_checks = ["test", "build", "check", "lint", "verif"]
        .iter()
        .any(|w| title.contains(w));
    about_checks && (title.contains("command") || title.contains(" and ") || title.contains('&'))
        || title == "testing"
        || title == "tests"
}

fn code_spans(line: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('`') else { break };
        spans.push(&after[..end]);
        rest = &after[end + 1..];
    }
    spans
}

fn push_command(out: &mut Vec<String>, raw: &str) {
    let line = raw.trim().trim_start_matches("$ ").trim();
    if line.is_empty() || line.starts_with('#') || line.starts_with("//") {
        return;
    }
    // A trailing comment explains the command; it is not part of it.
    let line = match line.find(" # ") {
        Some(i) => line[..i].trim_end(),
        None => line,
    };
    if !out.iter().any(|c| c == line) {
        out.push(line.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_come_from_the_build_and_test_section_only() {
        let md = "# Project\n\nRun `make deploy` to ship.\n\n## Build and Test Commands\n\n- Unit tests: `./scripts/unit.sh --fast`\n- Lint: `./lint-all`\n\n```sh\n$ ./run-integration   # slow\n# a comment\n```\n\n### Details\nUse `tox -e py311` for one version.\n\n## Style\n`black .` formats.\n";
        assert_eq!(
            from_instructions(md),
            vec![
                "./scripts/unit.sh --fast",
                "./lint-all",
                "./run-integration",
                "tox -e py311"
            ]
        );
        assert!(from_instructions("## Usage\n`./unit.sh`\n").is_empty());
        assert_eq!(
            from_instructions("## Testing\n```\nbin/check\n```\n"),
            vec!["bin/check"]
        );
    }
}
