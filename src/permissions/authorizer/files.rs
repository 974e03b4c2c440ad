//! The file checks of one decision: reading and editing a path (rules on the path as written
//! and where it leads, credential and configuration protections, the working directories
//! and the mode). Separate from `ctx.rs` as the largest group of checks.

use std::path::Path;

use super::links::{Access, Links};
use super::{Ctx, Verdict, plan_mode_message, real_path};
use crate::permissions::Mode;
use crate::permissions::protected;
use crate::permissions::rules::{Behavior, Rule, Spec};

impl Ctx<'_> {
    pub(super) fn read(&self, tool: &str, path: &Path) -> Verdict {
        self.read_resolved(tool, path, &real_path(path), Links::Plain)
    }

    pub(super) fn read_resolved(&self, tool: &str, path: &Path, real: &Path, links: Links) -> Verdict {
        if let Some(denied) = self.read_deny(tool, path, real) {
            return denied;
        }
        if let Some(r) = self.find(Behavior::Ask, tool, |r| r.matches_path(path) || r.matches_path(real)) {
            return self.hard_ask(format!("the rule `{}` asks for confirmation", r.text));
        }
        let allow_rule = |p: &Path| {
            self.rules
                .iter()
                .any(|r| r.behavior == Behavior::Allow && (r.names_tool(tool) || r.tool == "Edit") && r.matches_path(p))
        };
        // Through a link out of the workspace, only a rule naming where it leads allows it.
        if links == Links::Judged
            && let Some(escape) = self.escape(path, real, Access::Read)
            && !self.rules.iter().any(|r| {
                r.behavior == Behavior::Allow
                    && (r.names_tool(tool) || r.tool == "Edit")
                    && !r.is_whole_tool()
                    && r.matches_path(real)
            })
        {
            return escape;
        }
        let reachable = |p: &Path| self.in_dirs(p) || self.in_session_dir(p);
        let allowed = (reachable(path) && reachable(real))
            || allow_rule(path)
            || allow_rule(real)
            || self.mode == Mode::BypassPermissions;
        if allowed {
            Verdict::Allow
        } else {
            self.ask(
                format!("{} is outside the working directories", self.shown(path, real)),
                Vec::new(),
                vec![format!("Read(/{})", path.display())],
            )
        }
    }

    /// The deny part of a read check: Read deny rules, then credential files without an
    /// explicit allow rule. `real` is the path with symlinks resolved.
    pub(super) fn read_deny(&self, tool: &str, path: &Path, real: &Path) -> Option<Verdict> {
        if let Some(r) = self.find(Behavior::Deny, tool, |r| r.matches_path(path) || r.matches_path(real)) {
            return Some(Verdict::Deny(format!("denied by the rule `{}` ({})", r.text, r.source)));
        }
        let explicit_allow = |p: &Path| {
            self.rules.iter().any(|r| {
                r.behavior == Behavior::Allow
                    && (r.names_tool(tool) || r.tool == "Edit")
                    && matches!(r.spec, Spec::Path(..))
                    && r.matches_path(p)
            })
        };
        // The path as given only differs from the real one through a link (a search asks this
        // for every file it visits, so the second comparison is skipped when they are equal).
        let why = protected::credential_reason(real, self.home).or_else(|| {
            (real != path)
                .then(|| protected::credential_reason(path, self.home))
                .flatten()
        })?;
        if explicit_allow(path) {
            return None;
        }
        Some(Verdict::Deny(format!(
            "{why}; credential files are not read unless a `Read(...)` allow rule names them"
        )))
    }

    pub(super) fn edit(&self, tool: &str, path: &Path) -> Verdict {
        self.edit_resolved(tool, path, &real_path(path), Links::Plain)
    }

    pub(super) fn edit_resolved(&self, tool: &str, path: &Path, real: &Path, links: Links) -> Verdict {
        let hits = |r: &Rule| r.matches_path(path) || r.matches_path(real);
        if let Some(r) = self
            .find(Behavior::Deny, tool, hits)
            .or_else(|| self.find(Behavior::Deny, "Read", |r| !r.is_whole_tool() && hits(r)))
        {
            return Verdict::Deny(format!("denied by the rule `{}` ({})", r.text, r.source));
        }
        if self.mode == Mode::Plan {
            return Verdict::Deny(plan_mode_message(tool));
        }
        if let Some(r) = self.find(Behavior::Ask, tool, hits) {
            return self.hard_ask(format!("the rule `{}` asks for confirmation", r.text));
        }
        // Through a link out of the workspace, only a rule naming where it leads allows it.
        let escape = match links {
            Links::Judged => self.escape(path, real, Access::Write),
            Links::Plain => None,
        };
        let allowed_by_rule = |r: &Rule| {
            !r.is_whole_tool()
                && match escape {
                    Some(_) => r.matches_path(real),
                    None => hits(r),
                }
        };
        if self.find(Behavior::Allow, tool, allowed_by_rule).is_some() {
            return Verdict::Allow;
        }
        // Configuration that makes something run later (git hooks, agent settings, shell rc
        // files) needs the user even in acceptEdits and bypass; only a rule naming it allows it.
        if let Some(why) =
            protected::config_reason(real, self.home).or_else(|| protected::config_reason(path, self.home))
        {
            return self.hard_ask(format!("{why}; changing it always needs confirmation"));
        }
        if let Some(escape) = escape {
            return escape;
        }
        let inside = self.inside_resolved(path, real);
        if inside && self.find(Behavior::Allow, tool, Rule::is_whole_tool).is_some() {
            return Verdict::Allow;
        }
        match self.mode {
            Mode::BypassPermissions => Verdict::Allow,
            Mode::AcceptEdits if inside => Verdict::Allow,
            _ if !inside => self.ask(
                format!("{} is outside the working directories", self.shown(path, real)),
                Vec::new(),
                Vec::new(),
            ),
            _ => self.ask(
                format!("{tool} changes {}", path.display()),
                Vec::new(),
                self.dirs.iter().map(|d| format!("Edit(/{}/**)", d.display())).collect(),
            ),
        }
    }
}
