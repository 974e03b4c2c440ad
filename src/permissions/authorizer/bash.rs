//! The shell part of the permission decision: every simple command of a line must pass, with
//! paths resolved as the shell will resolve them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Ctx, Verdict, plan_mode_message};
use crate::permissions::Mode;
use crate::permissions::protected;
use crate::permissions::rules::{Behavior, Rule, Spec};
use crate::sandbox::Confinement;
use crate::shell::commands;
use crate::shell::loose;
use crate::shell::parse::{self as shell, Resolved, SimpleCommand};
use crate::shell::plan::CommandPlan;

impl Ctx<'_> {
    pub(super) fn bash(&self, plan: &CommandPlan, shell_cwd: &Path, workspace: &Path, input: &Value) -> Verdict {
        if let Some(r) = self.find(Behavior::Deny, "Bash", |r| r.matches_param(input)) {
            return Verdict::Deny(format!("denied by the rule `{}` ({})", r.text, r.source));
        }
        if let Some(r) = self.find(Behavior::Deny, "Bash", Rule::is_whole_tool) {
            return Verdict::Deny(format!("denied by the rule `{}` ({})", r.text, r.source));
        }
        // The call's one reading of its line (made by the pipeline, shared with the ledger).
        let parts = match &plan.strict {
            Ok(p) => p,
            Err(why) => return self.unsplittable(plan.line.trim(), why, shell_cwd, workspace),
        };
        // Without the read-only jail, only the allow-list of programs and options runs unasked.
        let strict = !self.jail;
        let deny_rules = self
            .rules
            .iter()
            .any(|r| r.behavior == Behavior::Deny && r.names_tool("Bash"));
        let denied_programs = self.denied_programs();
        let mut hard_reasons = Vec::new();
        let mut unapproved: Vec<&SimpleCommand> = Vec::new();
        let mut soft_reasons = Vec::new();
        // How the line was approved where no rule or mode approved it.
        let (mut needs_jail, mut needs_workspace) = (false, false);
        // Whether a workspace write names a new entry at the top of a working directory.
        let mut creates_at_top = false;
        // The shell's directory as the line runs: `cd` moves it for the parts after it.
        let mut cwd: Option<PathBuf> = Some(shell_cwd.to_path_buf());
        for part in parts {
            let text = part.text();
            let texts = part.rule_texts();
            if let Some(r) = self.find(Behavior::Deny, "Bash", |r| texts.iter().any(|t| r.matches_command(t))) {
                return Verdict::Deny(format!("`{text}` is denied by the rule `{}` ({})", r.text, r.source));
            }
            let analysis = commands::analyze(part, strict);
            let observes = analysis.observes;
            // What the part reads and writes, resolved as the shell will see it.
            let mut reads_known = !analysis.reads_unknown;
            if analysis.reads_unknown && observes {
                soft_reasons.push(format!("keel cannot tell which files `{text}` reads"));
            }
            for w in &analysis.reads {
                match cwd.as_deref().map(|c| shell::resolve_word(w, c, self.home)) {
                    Some(Resolved::Paths(paths)) => {
                        for p in paths {
                            match self.read("Read", &p) {
                                Verdict::Deny(why) => {
                                    return Verdict::Deny(format!("`{text}` reads {}: {why}", p.display()));
                                }
                                Verdict::Ask { info, .. } if observes => {
                                    reads_known = false;
                                    soft_reasons.push(format!("`{text}` reads {}", info.reason));
                                }
                                _ => {}
                            }
                        }
                    }
                    _ => {
                        reads_known = false;
                        if observes {
                            soft_reasons.push(format!("keel cannot tell which files `{text}` reads"));
                        }
                    }
                }
            }
            for w in commands::copy_sources(part) {
                if let Some(Resolved::Paths(paths)) = cwd.as_deref().map(|c| shell::resolve_word(&w, c, self.home)) {
                    for p in paths {
                        if let Verdict::Deny(why) = self.read("Read", &p) {
                            return Verdict::Deny(format!("`{text}` reads {}: {why}", p.display()));
                        }
                    }
                }
            }
            for w in part.writes.iter().filter(|w| w.text != "/dev/null") {
                match cwd.as_deref().map(|c| shell::resolve_word(w, c, self.home)) {
                    Some(Resolved::Paths(paths)) => {
                        for target in paths {
                            creates_at_top |= self.creates_at_top(&target);
                            match self.edit("Edit", &target) {
                                Verdict::Deny(why) => {
                                    return Verdict::Deny(format!("`{text}` writes {}: {why}", target.display()));
                                }
                                Verdict::Ask { hard: true, info } => {
                                    hard_reasons.push(format!("`{text}` writes {}", info.reason))
                                }
                                Verdict::Ask { info, .. } => {
                                    soft_reasons.push(format!("`{text}` writes {}", info.reason))
                                }
                                _ => {}
                            }
                        }
                    }
                    _ => soft_reasons.push(format!("keel cannot tell which file `{text}` writes to")),
                }
            }
            if part.program_name() == "cd" {
                cwd = self.cd_target(part, cwd.as_deref());
            }
            if let Some(r) = self.find(Behavior::Ask, "Bash", |r| texts.iter().any(|t| r.matches_command(t))) {
                hard_reasons.push(format!("the rule `{}` asks for confirmation of `{text}`", r.text));
            }
            if deny_rules
                && let Some(why) = commands::hidden_program(part)
                    .or_else(|| commands::may_start_denied(part, &denied_programs, strict))
                    .or_else(|| commands::unseen_program(part, cwd.as_deref(), &denied_programs))
            {
                hard_reasons.push(format!(
                    "{why}, so the Bash deny rules cannot be checked against it; such commands always need confirmation"
                ));
            }
            // A rule allows the command, not the environment it would run with.
            let env_change = commands::unsafe_assignment(part);
            let explicitly_allowed = env_change.is_none()
                && self
                    .find(Behavior::Allow, "Bash", |r| {
                        !r.is_whole_tool() && r.matches_command(&text)
                    })
                    .is_some();
            if let Some(why) = protected::destructive(part, cwd.as_deref(), workspace, self.home)
                .or_else(|| protected::config_command(part))
                && !explicitly_allowed
            {
                hard_reasons.push(format!("{why}; destructive commands always need confirmation"));
                continue;
            }
            if self.mode == Mode::Plan && !observes {
                return Verdict::Deny(plan_mode_message("Bash"));
            }
            // Every path judged where it leads (links followed, a dangling one to the file it
            // would create); entries a copy names only by their source's contents must not
            // land at the top of a working directory, where configuration lives.
            let fs_inside = || {
                let resolve = |w: &shell::Word| match cwd.as_deref().map(|c| shell::resolve_word(w, c, self.home)) {
                    Some(Resolved::Paths(ps)) => Some(ps),
                    _ => None,
                };
                let clean = |p: &PathBuf| {
                    let real = super::real_path(p);
                    self.inside(p)
                        && self.inside(&real)
                        && protected::config_reason(p, self.home).is_none()
                        && protected::config_reason(&real, self.home).is_none()
                };
                let named = commands::fs_paths(part)
                    .is_some_and(|paths| paths.iter().all(|w| resolve(w).is_some_and(|ps| ps.iter().all(clean))));
                let into_top = commands::unnamed_destination(part).is_some_and(|dest| {
                    resolve(&dest).is_none_or(|ps| {
                        ps.iter()
                            .any(|p| self.is_working_dir(p) || self.is_working_dir(&super::real_path(p)))
                    })
                });
                named && !into_top
            };
            let approved = explicitly_allowed
                || self.find(Behavior::Allow, "Bash", Rule::is_whole_tool).is_some()
                || self.mode == Mode::BypassPermissions;
            if approved {
                continue;
            }
            if observes && reads_known {
                // Redirections into files were approved above (acceptEdits, inside the
                // workspace): such a line may write the workspace, nothing else.
                if part.writes.iter().any(|w| w.text != "/dev/null") {
                    needs_workspace = true;
                } else {
                    needs_jail = true;
                }
            } else if self.mode == Mode::AcceptEdits && fs_inside() {
                needs_workspace = true;
                let named = commands::fs_paths(part).unwrap_or_default();
                creates_at_top |=
                    named
                        .iter()
                        .any(|w| match cwd.as_deref().map(|c| shell::resolve_word(w, c, self.home)) {
                            Some(Resolved::Paths(ps)) => ps.iter().any(|p| self.creates_at_top(p)),
                            _ => true,
                        });
            } else {
                if let Some(var) = env_change {
                    soft_reasons.push(format!("`{text}` runs with `{var}` set"));
                }
                unapproved.push(part);
            }
        }
        if !hard_reasons.is_empty() {
            return self.hard_ask(hard_reasons.join("; "));
        }
        let bypass = self.mode == Mode::BypassPermissions;
        if unapproved.is_empty() && (soft_reasons.is_empty() || bypass) {
            return if needs_workspace {
                Verdict::AllowConfined(Confinement::WorkspaceWrite { creates_at_top })
            } else if needs_jail {
                Verdict::AllowConfined(Confinement::ReadOnly)
            } else {
                Verdict::Allow
            };
        }
        let mut reasons: Vec<String> = unapproved
            .iter()
            .filter(|p| !commands::analyze(p, strict).observes)
            .map(|p| format!("`{}` is not allowed by any rule", p.text()))
            .collect();
        reasons.extend(soft_reasons);
        let rules_to_save: Vec<String> = unapproved.iter().take(5).map(|p| suggest_bash_rule(p)).collect();
        self.ask(reasons.join("; "), rules_to_save, Vec::new())
    }

    /// Whether writing `path` makes a new entry at the top of a working directory (or names
    /// the top itself, as the destination of `cp`/`mv`): the first missing directory on its
    /// way, or the file itself, would be created there.
    fn creates_at_top(&self, path: &Path) -> bool {
        let real = super::real_path(path);
        if self.is_working_dir(path) || self.is_working_dir(&real) {
            return true;
        }
        let mut first_missing = None;
        let mut at = Some(real.as_path());
        while let Some(p) = at {
            if p.symlink_metadata().is_ok() {
                break;
            }
            first_missing = Some(p);
            at = p.parent();
        }
        first_missing
            .and_then(Path::parent)
            .is_some_and(|parent| self.is_working_dir(parent))
    }

    /// The program names Bash deny rules start with (`Bash(rm:*)`, `Bash(git push:*)`,
    /// `Bash(rm *)` → `rm`, `git`).
    fn denied_programs(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .rules
            .iter()
            .filter(|r| r.behavior == Behavior::Deny && r.names_tool("Bash"))
            .filter_map(|r| {
                let inner = r.text.split_once('(')?.1.strip_suffix(')')?;
                let first = inner.split_whitespace().next()?.trim_end_matches(":*");
                let name = first.rsplit('/').next().unwrap_or(first);
                (!name.is_empty() && !name.contains(['*', '?'])).then(|| name.to_string())
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Where `cd` takes the shell, as far as keel can tell: `None` when unknown (`cd -`, an
    /// expanded word, an option keel does not know).
    fn cd_target(&self, part: &SimpleCommand, cwd: Option<&Path>) -> Option<PathBuf> {
        let mut physical = false;
        let mut target = None;
        let mut options_done = false;
        for w in part.args() {
            match w.text.as_str() {
                "--" if !options_done => options_done = true,
                "-P" if !options_done => physical = true,
                "-L" | "-e" | "-@" if !options_done => {}
                t if t.starts_with('-') && !options_done => return None,
                _ if target.is_some() => return None,
                _ => target = Some(w),
            }
        }
        let Some(w) = target else {
            return self.home.map(Path::to_path_buf);
        };
        let resolved = if physical {
            shell::resolve_word(w, cwd?, self.home)
        } else {
            shell::resolve_word_logical(w, cwd?, self.home)
        };
        match resolved {
            Resolved::Paths(p) if p.len() == 1 => {
                let p = p.into_iter().next()?;
                Some(if physical { super::real_path(&p) } else { p })
            }
            _ => None,
        }
    }

    /// A line keel cannot split into parts: deny rules still catch their commands inside it;
    /// with any Bash deny rule in force it always asks (what it runs cannot be checked against
    /// them); otherwise only an exact rule or bypass mode runs it without asking.
    fn unsplittable(&self, raw: &str, why: &str, shell_cwd: &Path, workspace: &Path) -> Verdict {
        if let Some(r) = self.find(Behavior::Deny, "Bash", |r| {
            r.matches_command(raw) || raw_mentions(r, raw)
        }) {
            return Verdict::Deny(format!("denied by the rule `{}` ({})", r.text, r.source));
        }
        if self.mode == Mode::Plan {
            return Verdict::Deny(plan_mode_message("Bash"));
        }
        // A prefix rule must never authorize `safe $(other)`.
        let exact = self.find(
            Behavior::Allow,
            "Bash",
            |r| matches!(&r.spec, Spec::Exact(e) if e == raw),
        );
        if exact.is_none()
            && let Some(why) = self.destructive_inside(raw, shell_cwd, workspace)
        {
            return self.hard_ask(format!("{why}; destructive commands always need confirmation"));
        }
        let deny_rules = self
            .rules
            .iter()
            .any(|r| r.behavior == Behavior::Deny && r.names_tool("Bash"));
        if deny_rules && exact.is_none() {
            return self.hard_ask(format!(
                "the command cannot be checked part by part ({why}), so the Bash deny rules cannot be checked against it"
            ));
        }
        if self.mode == Mode::BypassPermissions || exact.is_some() {
            return Verdict::Allow;
        }
        self.ask(
            format!("the command cannot be checked part by part ({why})"),
            Vec::new(),
            vec![format!("Bash({raw})")],
        )
    }

    /// A destructive command anywhere in a line the strict reader refuses (in a subshell, a
    /// substitution, a loop): such a line still needs its explicit rule, whatever the mode.
    /// After a `cd` the directory is unknown, as it is for a dynamic `cd` in a split line.
    fn destructive_inside(&self, raw: &str, shell_cwd: &Path, workspace: &Path) -> Option<String> {
        let loose = loose::every_command(raw);
        if !loose.complete {
            return Some(
                "the command nests too deeply or runs too many commands to be checked for destructive ones".into(),
            );
        }
        let moves = loose
            .commands
            .iter()
            .any(|c| matches!(c.program_name(), "cd" | "pushd" | "popd"));
        let cwd = (!moves).then_some(shell_cwd);
        loose
            .commands
            .iter()
            .find_map(|c| protected::destructive(c, cwd, workspace, self.home).or_else(|| protected::config_command(c)))
    }
}

/// A deny prefix rule also catches its command inside a construct keel cannot split
/// (e.g. `Bash(rm:*)` against `(cd x && rm -rf y)`).
fn raw_mentions(rule: &Rule, raw: &str) -> bool {
    match &rule.spec {
        Spec::Prefix(p) | Spec::Exact(p) => raw.split(['(', ')', ';', '&', '|', '`', '\n', '$']).any(|seg| {
            let seg = seg.trim();
            seg == p || seg.strip_prefix(p.as_str()).is_some_and(|r| r.starts_with(' '))
        }),
        _ => false,
    }
}

/// A word as the shell reads it back: bare when it has nothing special, else single-quoted.
fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The rule "allow always" saves for a command: its program, plus the subcommand for tools
/// that have them (`git commit`, `npm run`, `cargo test`).
fn suggest_bash_rule(cmd: &SimpleCommand) -> String {
    const MULTI: &[&str] = &[
        "git", "npm", "pnpm", "yarn", "cargo", "go", "docker", "kubectl", "make", "pip", "pip3", "poetry", "uv",
        "bundle", "rails", "dotnet", "mvn", "gradle",
    ];
    // Interpreters run whatever their arguments say: a prefix rule for them would allow
    // everything, so only the exact command is suggested.
    const INTERPRETERS: &[&str] = &[
        "python", "python3", "node", "deno", "bun", "npx", "perl", "ruby", "php", "bash", "sh", "zsh", "env", "xargs",
        "sudo", "doas", "ssh", "awk", "sed",
    ];
    let w: Vec<&str> = cmd.words.iter().map(|w| w.text.as_str()).collect();
    let program = cmd.program_name();
    if INTERPRETERS.contains(&program) || cmd.words.iter().any(|w| w.dynamic) {
        // With its quoting: the rule reads back as exactly these words.
        let words: Vec<String> = cmd.words.iter().map(|w| shell_quote(&w.text)).collect();
        return format!("Bash({})", words.join(" "));
    }
    let mut prefix = vec![w[0]];
    if MULTI.contains(&program)
        && let Some(second) = w.get(1)
        && !second.starts_with('-')
        && !second.contains('/')
    {
        prefix.push(second);
        if matches!(program, "npm" | "pnpm" | "yarn")
            && *second == "run"
            && let Some(script) = w.get(2)
        {
            prefix.push(script);
        }
    }
    format!("Bash({}:*)", prefix.join(" "))
}
