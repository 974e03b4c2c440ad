//! The rules in force for one decision (`Ctx`) and the checks every kind of call shares:
//! finding a rule, the working directories, building questions, and the skill and generic
//! checks. The file, shell and web checks are further `impl Ctx` blocks in sibling modules.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{AskInfo, Verdict, plan_mode_message, real_path};
use crate::permissions::Mode;
use crate::permissions::rules::{Behavior, Rule};

pub(super) struct Ctx<'a> {
    pub(super) rules: &'a [&'a Rule],
    pub(super) mode: Mode,
    pub(super) dirs: &'a [PathBuf],
    pub(super) home: Option<&'a Path>,
    /// The read-only jail is in force (shell checks may leave unknown options to it).
    pub(super) jail: bool,
    /// The rule names that cover the call's tool besides its own.
    pub(super) covered_by: &'a [&'a str],
    /// The session's own folder (its model output is read without asking).
    pub(super) session_dir: Option<&'a Path>,
}

impl Ctx<'_> {
    pub(super) fn find(&self, behavior: Behavior, tool: &str, pred: impl Fn(&Rule) -> bool) -> Option<&Rule> {
        self.rules
            .iter()
            .copied()
            .find(|r| r.behavior == behavior && r.names_call(tool, self.covered_by) && pred(r))
    }

    pub(super) fn deny_rule(&self, tool: &str, pred: impl Fn(&Rule) -> bool) -> Option<String> {
        self.find(Behavior::Deny, tool, pred)
            .map(|r| format!("denied by the rule `{}` ({})", r.text, r.source))
    }

    /// The working directories are canonical (resolved at startup); the path is resolved here
    /// so a symlink out of the workspace does not count as inside.
    pub(super) fn inside(&self, path: &Path) -> bool {
        self.inside_resolved(path, &real_path(path))
    }

    /// Inside the working directories both as written and where it leads (a link from one
    /// working directory into another stays inside).
    pub(super) fn inside_resolved(&self, path: &Path, real: &Path) -> bool {
        self.in_dirs(path) && self.in_dirs(real)
    }

    /// The top of a working directory itself, where configuration lives.
    pub(super) fn is_working_dir(&self, path: &Path) -> bool {
        self.dirs.iter().any(|d| d == path)
    }

    pub(super) fn ask(&self, reason: String, rules_to_save: Vec<String>, session_grants: Vec<String>) -> Verdict {
        Verdict::Ask {
            hard: false,
            info: AskInfo {
                reason,
                rules_to_save,
                session_grants,
            },
        }
    }

    pub(super) fn hard_ask(&self, reason: String) -> Verdict {
        Verdict::Ask {
            hard: true,
            info: AskInfo {
                reason,
                ..AskInfo::default()
            },
        }
    }

    /// Loading a skill: `Skill(name)` rules; a skill that grants tools (not `read_only`) asks
    /// in every mode but bypass, since a repository's skill must not grant itself commands.
    pub(super) fn skill(&self, tool: &str, name: &str, read_only: bool) -> Verdict {
        // `Skill(plugin:name)` parses as a parameter rule; for skills it is the qualified name.
        let hits = |r: &Rule| r.matches_key(name) || r.matches_qualified(name);
        if let Some(r) = self.find(Behavior::Deny, tool, hits) {
            return Verdict::Deny(format!("denied by the rule `{}` ({})", r.text, r.source));
        }
        if let Some(r) = self.find(Behavior::Ask, tool, hits) {
            return self.hard_ask(format!("the rule `{}` asks for confirmation", r.text));
        }
        if self.find(Behavior::Allow, tool, hits).is_some() || read_only || self.mode == Mode::BypassPermissions {
            return Verdict::Allow;
        }
        self.ask(
            format!("the skill `{name}` grants tools (allowed-tools) while its task runs"),
            vec![format!("{tool}({name})")],
            Vec::new(),
        )
    }

    pub(super) fn generic(&self, tool: &str, input: &Value, read_only: bool) -> Verdict {
        let key = crate::tools::summarize_input(input);
        let hits = |r: &Rule| r.matches_key(&key) || r.matches_param(input);
        if let Some(r) = self.find(Behavior::Deny, tool, hits) {
            return Verdict::Deny(format!("denied by the rule `{}` ({})", r.text, r.source));
        }
        if let Some(r) = self.find(Behavior::Ask, tool, hits) {
            return self.hard_ask(format!("the rule `{}` asks for confirmation", r.text));
        }
        if self.find(Behavior::Allow, tool, hits).is_some() || read_only {
            return Verdict::Allow;
        }
        match self.mode {
            Mode::Plan => Verdict::Deny(plan_mode_message(tool)),
            Mode::BypassPermissions => Verdict::Allow,
            _ => self.ask(format!("{tool} needs approval"), vec![tool.to_string()], Vec::new()),
        }
    }
}
