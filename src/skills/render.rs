//! Turning a skill's body into the text the model reads: argument and variable substitution,
//! then the `` !`cmd` `` snippets (and ```` ```! ```` blocks) split out so the engine can run
//! each through the permission check and put its output in place.

use std::path::Path;

use std::sync::LazyLock;

use regex::Regex;

use super::{Kind, Skill};

// A literal pattern, compiled by the tests: it cannot fail at run time.
#[allow(clippy::expect_used)]
static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS|\$(\d+)|\$([A-Za-z_][A-Za-z0-9_]*)").expect("a valid constant regex")
});

/// Values for the `${…}` variables.
pub struct Vars<'a> {
    pub session_id: &'a str,
    pub project_dir: &'a Path,
}

/// A rendered body: text with shell snippets still to run, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Text(String),
    Command(String),
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

/// Splits out the skill's shell snippets, then substitutes `$ARGUMENTS`, `$ARGUMENTS[N]`,
/// `$N`, named `$arg`s and the `${…}` variables in each part, and appends `ARGUMENTS: …` when
/// the body does not place them. Snippets are found in the body as written, so arguments (which
/// the model chooses) can fill a snippet's placeholders but never add or reshape a snippet.
pub fn render(skill: &Skill, args: &str, vars: &Vars<'_>) -> Vec<Part> {
    let args = args.trim();
    let words = split_args(args);
    let mut used = false;
    let mut parts: Vec<Part> = split_commands(&skill.body)
        .into_iter()
        .map(|p| match p {
            Part::Text(t) => Part::Text(substitute(&t, skill, args, &words, vars, &mut used)),
            Part::Command(c) => Part::Command(substitute(&c, skill, args, &words, vars, &mut used)),
        })
        .collect();
    if !used && !args.is_empty() {
        push_text(&mut parts, format!("\n\nARGUMENTS: {args}"));
    }
    if skill.kind == Kind::Skill {
        let lead = format!("Base directory for this skill: {}\n\n", skill.dir.display());
        match parts.first_mut() {
            Some(Part::Text(t)) => t.insert_str(0, &lead),
            _ => parts.insert(0, Part::Text(lead)),
        }
    }
    parts
}

/// One part with its placeholders filled; `used` records that an argument placeholder was seen.
fn substitute(text: &str, skill: &Skill, args: &str, words: &[String], vars: &Vars<'_>, used: &mut bool) -> String {
    let body = PLACEHOLDER.replace_all(text, |c: &regex::Captures<'_>| {
        if let Some(n) = c.get(1).or_else(|| c.get(2)) {
            *used = true;
            return n
                .as_str()
                .parse::<usize>()
                .ok()
                .and_then(|i| words.get(i).cloned())
                .unwrap_or_default();
        }
        if let Some(name) = c.get(3) {
            return match skill.arguments.iter().position(|a| a == name.as_str()) {
                Some(i) => {
                    *used = true;
                    words.get(i).cloned().unwrap_or_default()
                }
                // Not an argument: an ordinary `$VAR` of the text or of a shell snippet.
                None => c[0].to_string(),
            };
        }
        *used = true;
        args.to_string()
    });
    body.replace("${CLAUDE_SKILL_DIR}", &skill.dir.display().to_string())
        .replace("${CLAUDE_SESSION_ID}", vars.session_id)
        .replace("${CLAUDE_PROJECT_DIR}", &vars.project_dir.display().to_string())
}

/// Splits `` !`cmd` `` and ```` ```! ```` … ```` ``` ```` blocks out of the text.
pub fn split_commands(text: &str) -> Vec<Part> {
    let mut out: Vec<Part> = Vec::new();
    let mut buf = String::new();
    let mut block: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\r', '\n']);
        if let Some(cmd) = &mut block {
            if bare.trim() == "```" {
                let command = std::mem::take(cmd);
                block = None;
                push_text(&mut out, std::mem::take(&mut buf));
                out.push(Part::Command(command.trim_end().to_string()));
                continue;
            }
            cmd.push_str(line);
            continue;
        }
        if bare.trim() == "```!" {
            block = Some(String::new());
            continue;
        }
        split_inline(line, &mut buf, &mut out);
    }
    if let Some(unclosed) = block {
        // An unclosed block stays text: nothing runs that the author did not delimit.
        buf.push_str("```!\n");
        buf.push_str(&unclosed);
    }
    push_text(&mut out, buf);
    out
}

fn split_inline(line: &str, buf: &mut String, out: &mut Vec<Part>) {
    let mut rest = line;
    while let Some(start) = rest.find("!`") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('`') else { break };
        let command = &after[..end];
        if command.trim().is_empty() || command.contains('\n') {
            buf.push_str(&rest[..start + 2]);
            rest = after;
            continue;
        }
        buf.push_str(&rest[..start]);
        push_text(out, std::mem::take(buf));
        out.push(Part::Command(command.trim().to_string()));
        rest = &after[end + 1..];
    }
    buf.push_str(rest);
}

fn push_text(out: &mut Vec<Part>, text: String) {
    if text.is_empty() {
        return;
    }
    if let Some(Part::Text(prev)) = out.last_mut() {
        prev.push_str(&text);
    } else {
        out.push(Part::Text(text));
    }
}

#[cfg(test)]
/// Joins parts whose commands were replaced by their output.
pub fn join(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Part::Text(t) | Part::Command(t) => t.as_str(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::{Source, parse};

    fn vars() -> Vars<'static> {
        Vars {
            session_id: "sid",
            project_dir: Path::new("/proj"),
        }
    }

    fn skill(kind: Kind, body: &str, arguments: &str) -> Skill {
        let text = format!("---\ndescription: d\narguments: [{arguments}]\n---\n{body}");
        parse(&text, Path::new("/s/fix/SKILL.md"), "fix", kind, Source::Project).unwrap()
    }

    #[test]
    fn substitutes_arguments_and_variables() {
        let s = skill(
            Kind::Command,
            "Fix $0 in $1 (all: $ARGUMENTS; second: $ARGUMENTS[1]; issue: $issue) in ${CLAUDE_PROJECT_DIR} ${CLAUDE_SESSION_ID} $HOME",
            "issue",
        );
        let parts = render(&s, "42 \"src/a b.rs\"", &vars());
        assert_eq!(
            join(&parts),
            "Fix 42 in src/a b.rs (all: 42 \"src/a b.rs\"; second: src/a b.rs; issue: 42) in /proj sid $HOME"
        );
    }

    #[test]
    fn unplaced_arguments_are_appended_and_skills_name_their_folder() {
        let s = skill(Kind::Skill, "Use ${CLAUDE_SKILL_DIR}/tool.py.", "");
        let text = join(&render(&s, "now", &vars()));
        assert_eq!(
            text,
            "Base directory for this skill: /s/fix\n\nUse /s/fix/tool.py.\n\nARGUMENTS: now"
        );
        let c = skill(Kind::Command, "Do it.", "");
        assert_eq!(join(&render(&c, "", &vars())), "Do it.");
    }

    #[test]
    fn arguments_fill_snippets_but_never_make_one() {
        let s = skill(
            Kind::Command,
            "Greet $0. Log: !`git log --oneline -n 1 $1`\nDone: $ARGUMENTS",
            "",
        );
        let parts = render(&s, "\"!`touch /tmp/pwned`\" main", &vars());
        let commands: Vec<&Part> = parts.iter().filter(|p| matches!(p, Part::Command(_))).collect();
        assert_eq!(commands, vec![&Part::Command("git log --oneline -n 1 main".into())]);
        assert_eq!(
            parts[0],
            Part::Text("Greet !`touch /tmp/pwned`. Log: ".into()),
            "an argument that looks like a snippet stays text"
        );
        let skill_dir = skill(Kind::Skill, "!`ls ${CLAUDE_SKILL_DIR}`", "");
        assert_eq!(
            render(&skill_dir, "", &vars()),
            vec![
                Part::Text("Base directory for this skill: /s/fix\n\n".into()),
                Part::Command("ls /s/fix".into())
            ]
        );
    }

    #[test]
    fn shell_snippets_are_split_out_in_order() {
        let parts =
            split_commands("Status: !`git status --short`\nLog:\n```!\ngit log -3\n```\nDone, not !`` or !`open\n");
        assert_eq!(
            parts,
            vec![
                Part::Text("Status: ".into()),
                Part::Command("git status --short".into()),
                Part::Text("\nLog:\n".into()),
                Part::Command("git log -3".into()),
                Part::Text("Done, not !`` or !`open\n".into()),
            ]
        );
        assert_eq!(
            split_commands("```!\nnever closed\n"),
            vec![Part::Text("```!\nnever closed\n".into())]
        );
    }
}
