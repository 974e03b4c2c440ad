//! The permission decision for one tool call: deny > ask > allow, regardless of source.
//!
//! Order (as the reference evaluates): deny rules (and built-in protections) → ask rules (and
//! destructive commands) → allow rules, mode approvals and read-only classification →
//! otherwise ask, which headless mode and `dontAsk` turn into a denial.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;

use super::Mode;
use super::protected;
use super::rules::{Anchors, Behavior, Rule, Spec};
use crate::shell::plan::CommandPlan;
use crate::tools::{Tool, kinds};
use crate::types::tool::{Declared, Subject};

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Approved by a rule, a mode or a hook: the command runs as the session's sandbox says.
    Allow,
    /// Approved by keel itself (a read-only command, an acceptEdits file command): it runs
    /// confined accordingly.
    AllowConfined(crate::sandbox::Confinement),
    /// `hard`: required by an ask rule or a protection; a hook's allow cannot skip it.
    Ask {
        hard: bool,
        info: AskInfo,
    },
    Deny(String),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct AskInfo {
    pub reason: String,
    /// Rules "allow always" saves to the local settings file.
    pub rules_to_save: Vec<String>,
    /// Rule texts granted for the rest of the session on "allow always".
    pub session_grants: Vec<String>,
}

/// A decision and the path it was made for. The path is resolved once (symbolic links
/// followed) and the file tools open exactly it, without looking the name up again
/// (`fsutil::open`), so what runs is what was checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub verdict: Verdict,
    pub resolved: Option<PathBuf>,
}

/// A PreToolUse hook's decision, composed with the rules as the reference does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookDecision {
    Allow,
    Ask,
}

pub struct Authorizer {
    rules: Vec<Rule>,
    session: Mutex<Vec<Rule>>,
    /// Rules of `rules` a program removed during the session: (behaviour, text, source).
    masked: Mutex<Vec<(Behavior, String, String)>>,
    /// The working directories; the first is the session's. A program may add more.
    dirs: RwLock<Vec<PathBuf>>,
    home: Option<PathBuf>,
    anchors: Anchors,
    /// Where "allow always" rules are saved (`.keel/settings.local.json`).
    save_path: Option<PathBuf>,
    /// The highest mode the session may enter (managed `permissions.modeCeiling`,
    /// `disableBypassPermissionsMode`), and why.
    pub ceiling: Option<crate::config::precedence::Ceiling>,
    /// Managed settings allow only their own allow rules (`allowManagedPermissionRulesOnly`):
    /// a skill's `allowed-tools` grants nothing.
    pub managed_rules_only: bool,
    /// Managed settings fix the extra working directories: none can be added.
    pub managed_dirs: bool,
    /// Managed settings' model allowlist, for the model changes a session makes (a sub-agent's
    /// or a skill's `model:`, `set_model`).
    pub model_allowlist: Option<crate::config::precedence::ModelAllowlist>,
    /// Whether the read-only jail is in force (asked at the first shell command); without it
    /// keel approves only its allow-list of programs and options.
    jail: Option<JailProbe>,
}

type JailProbe = std::sync::Arc<dyn Fn() -> bool + Send + Sync>;

impl Authorizer {
    pub fn new(rules: Vec<Rule>, dirs: Vec<PathBuf>, home: Option<PathBuf>, save_path: Option<PathBuf>) -> Self {
        let cwd = dirs.first().cloned().unwrap_or_else(|| PathBuf::from("/"));
        Authorizer {
            rules,
            session: Mutex::new(Vec::new()),
            masked: Mutex::default(),
            anchors: Anchors {
                base_dir: cwd.clone(),
                cwd,
                home: home.clone(),
            },
            dirs: RwLock::new(dirs),
            home,
            save_path,
            ceiling: None,
            managed_rules_only: false,
            managed_dirs: false,
            model_allowlist: None,
            jail: None,
        }
    }

    /// Tells the authorizer how to learn whether the read-only jail is in force.
    pub fn set_jail_probe(&mut self, probe: impl Fn() -> bool + Send + Sync + 'static) {
        self.jail = Some(std::sync::Arc::new(probe));
    }

    fn jail(&self) -> bool {
        self.jail.as_ref().is_some_and(|p| p())
    }

    /// Adds rules keel sets up itself (e.g. access to the memory folder), before the session
    /// starts.
    pub fn add_rules(&mut self, rules: impl IntoIterator<Item = Rule>) {
        self.rules.extend(rules);
    }

    /// Anchors for rules keel adds (relative to the first working directory).
    pub fn anchors(&self) -> &Anchors {
        &self.anchors
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn working_dirs(&self) -> Vec<PathBuf> {
        self.dirs.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The startup rules still in force and the session's rules, for one decision.
    fn active<'a>(&'a self, session: &'a [Rule]) -> Vec<&'a Rule> {
        let masked = self.masked.lock().unwrap_or_else(|p| p.into_inner());
        self.rules
            .iter()
            .filter(|r| {
                !masked
                    .iter()
                    .any(|(b, text, source)| *b == r.behavior && *text == r.text && *source == r.source)
            })
            .chain(session.iter())
            .collect()
    }

    /// A listing of the rules by behaviour and source, the session grants and the working
    /// directories (`/permissions`).
    pub fn describe(&self, mode: Mode) -> String {
        let mut out = format!("Permission mode: {}\n", mode.as_str());
        let session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        for b in [Behavior::Deny, Behavior::Ask, Behavior::Allow] {
            let rules: Vec<&Rule> = self.active(&session).into_iter().filter(|r| r.behavior == b).collect();
            out.push_str(&format!("\n{} rules:\n", b.as_str()));
            if rules.is_empty() {
                out.push_str("  (none)\n");
            }
            for r in rules {
                out.push_str(&format!("  {}  ({})\n", r.text, r.source));
            }
        }
        out.push_str("\nWorking directories:\n");
        for d in &self.working_dirs() {
            out.push_str(&format!("  {}\n", d.display()));
        }
        out
    }

    /// Whether the content of `path` must not be shown by Read-like tools (Read deny rules,
    /// credential files without an explicit allow rule). Grep and Glob skip such files.
    pub fn read_denied(&self, path: &Path) -> bool {
        let session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        let all = self.active(&session);
        let dirs = self.working_dirs();
        let ctx = Ctx {
            rules: &all,
            mode: Mode::Default,
            dirs: &dirs,
            home: self.home.as_deref(),
            jail: false,
            covered_by: &[],
            session_dir: None,
        };
        // Search walks do not follow symlinked directories, so only the file itself can be a
        // link; resolving every path would cost a readlink per directory level per file.
        let is_link = path.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink());
        let real = if is_link { real_path(path) } else { path.to_path_buf() };
        ctx.read_deny("Read", path, &real).is_some()
    }

    /// Whether a Read deny rule names `path` (judged on the path as given, without touching
    /// the file system: the jail's credential scan asks this for every file it sees).
    pub fn read_denied_by_rule(&self, path: &Path) -> bool {
        let covered_by = kinds::declared("Read").covered_by;
        self.rules.iter().any(|r| {
            r.behavior == Behavior::Deny
                && r.names_call("Read", covered_by)
                && !r.is_whole_tool()
                && r.matches_path(path)
        })
    }

    /// Tools removed from the model's view by a bare-name deny rule.
    pub fn denies_whole_tool(&self, tool: &str) -> bool {
        self.rules
            .iter()
            .any(|r| r.behavior == Behavior::Deny && r.is_whole_tool() && r.names_tool(tool))
    }

    pub fn check(
        &self,
        tool: &str,
        input: &Value,
        read_only: bool,
        mode: Mode,
        shell_cwd: &Path,
        hook: Option<HookDecision>,
    ) -> Verdict {
        self.check_with_grants(tool, input, read_only, mode, shell_cwd, hook, &[])
    }

    /// [`Authorizer::check`] with temporary allow rules (a loaded skill's `allowed-tools`): they
    /// count like allow rules, so deny and ask rules still win over them.
    #[allow(clippy::too_many_arguments)]
    pub fn check_with_grants(
        &self,
        tool: &str,
        input: &Value,
        read_only: bool,
        mode: Mode,
        shell_cwd: &Path,
        hook: Option<HookDecision>,
        grants: &[Rule],
    ) -> Verdict {
        self.decide(tool, input, read_only, mode, shell_cwd, hook, grants)
            .verdict
    }

    /// [`Authorizer::check_with_grants`], with the resolved path of a file tool's call.
    #[allow(clippy::too_many_arguments)]
    pub fn decide(
        &self,
        tool: &str,
        input: &Value,
        read_only: bool,
        mode: Mode,
        shell_cwd: &Path,
        hook: Option<HookDecision>,
        grants: &[Rule],
    ) -> Decision {
        let call = Call::named(tool, input, read_only, shell_cwd);
        self.decide_call(&call, mode, shell_cwd, hook, grants)
    }

    /// The decision on one call, from what its tool declares: its effects, its rule grammar,
    /// the rule names that cover it and what it acts on. No tool name is special here.
    pub fn decide_call(
        &self,
        call: &Call<'_>,
        mode: Mode,
        shell_cwd: &Path,
        hook: Option<HookDecision>,
        grants: &[Rule],
    ) -> Decision {
        let (tool, input, effects) = (call.tool, call.input, call.declared.effects);
        let mut resolved = None;
        let session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = self.active(&session);
        if !self.managed_rules_only {
            all.extend(grants.iter());
        }
        let dirs = self.working_dirs();
        let ctx = Ctx {
            rules: &all,
            mode,
            dirs: &dirs,
            home: self.home.as_deref(),
            jail: effects.runs_commands && self.jail(),
            covered_by: call.declared.covered_by,
            session_dir: call.session_dir.as_deref(),
        };
        let verdict = match (&call.subject, effects) {
            (Subject::Command(line), e) if e.runs_commands => ctx.bash(
                &call.plan.clone().unwrap_or_else(|| CommandPlan::new(line)),
                shell_cwd,
                dirs.first().map(PathBuf::as_path).unwrap_or(shell_cwd),
                input,
            ),
            (Subject::Path(p), e) if e.edits_files => {
                let real = real_path(p);
                let v = ctx.edit_resolved(tool, p, &real, Links::Judged);
                resolved = Some(real);
                v
            }
            (_, e) if e.edits_files => ctx.generic(tool, input, false),
            // Reaching the network from keel's own process: rules by domain, else a question.
            (subject, e) if e.network && e.read_only => {
                let url = match subject {
                    Subject::Url(u) => Some(u.as_str()),
                    _ => None,
                };
                ctx.web(tool, input, url)
            }
            (Subject::Path(p), e) if e.read_only => {
                let real = real_path(p);
                let v = ctx.read_resolved(tool, p, &real, Links::Judged);
                resolved = Some(real);
                v
            }
            // Launching a sub-agent needs no approval (each of its own calls is checked), unless
            // a rule names its type or its input (`Agent(model:opus)`).
            (Subject::Key(kind), e) if e.spawns_agent => {
                let hits = |r: &Rule| r.matches_key(kind) || r.matches_param(input);
                match ctx.deny_rule(tool, |r| r.is_whole_tool() || hits(r)) {
                    Some(reason) => Verdict::Deny(reason),
                    None => match ctx.find(Behavior::Ask, tool, hits) {
                        Some(r) => ctx.hard_ask(format!("the rule `{}` asks for confirmation", r.text)),
                        None => Verdict::Allow,
                    },
                }
            }
            (Subject::Key(name), e) if e.loads_skill => ctx.skill(tool, name, call.read_only),
            (_, e) if e.leaves_plan => match ctx.deny_rule(tool, |r| r.is_whole_tool()) {
                Some(reason) => Verdict::Deny(reason),
                None if mode == Mode::Plan => Verdict::Ask {
                    hard: true,
                    info: AskInfo {
                        reason: "approve the plan to leave plan mode".into(),
                        ..AskInfo::default()
                    },
                },
                None => Verdict::Allow,
            },
            (_, e) if e.session_only => match ctx.deny_rule(tool, |r| r.is_whole_tool()) {
                Some(reason) => Verdict::Deny(reason),
                None => Verdict::Allow,
            },
            _ => ctx.generic(tool, input, call.read_only),
        };
        let verdict = match (verdict, hook) {
            (Verdict::Ask { hard: false, .. }, Some(HookDecision::Allow)) => Verdict::Allow,
            (Verdict::Allow | Verdict::AllowConfined(_), Some(HookDecision::Ask)) => Verdict::Ask {
                hard: true,
                info: AskInfo {
                    reason: "a PreToolUse hook asked for confirmation".into(),
                    ..AskInfo::default()
                },
            },
            (v, _) => v,
        };
        Decision { verdict, resolved }
    }

    /// "Allow always": grant for the session and save the suggested rules to the local
    /// settings file. Returns a warning when saving failed (the session grant still holds).
    /// Where "always allow" saves rules (none in sessions that must not write settings).
    pub fn save_path(&self) -> Option<&Path> {
        self.save_path.as_deref()
    }

    /// Why the session may not enter `mode`, when a ceiling forbids it.
    pub fn mode_refused(&self, mode: Mode) -> Option<String> {
        self.ceiling.as_ref().and_then(|c| c.refuses(mode))
    }

    /// Why the session may not use `model`, when managed settings enforce a model allowlist.
    pub fn model_refused(&self, model: &str) -> Option<String> {
        self.model_allowlist.as_ref().and_then(|l| l.refuses(model))
    }

    /// Why a sub-agent may not run on `model` by a deny rule on the Agent tool's `model`
    /// input (`Agent(model:opus)`): asked of the model it will really use, so an agent type
    /// whose definition names the model is refused as a call naming it would be.
    pub fn agent_model_denied(&self, model: &str) -> Option<String> {
        let session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        let input = serde_json::json!({ "model": model });
        let covered_by = kinds::declared("Agent").covered_by;
        self.active(&session)
            .into_iter()
            .find(|r| {
                r.behavior == Behavior::Deny
                    && r.names_call("Agent", covered_by)
                    && matches!(r.spec, Spec::Param(..))
                    && r.matches_param(&input)
            })
            .map(|r| format!("denied by the rule `{}` ({})", r.text, r.source))
    }

    pub fn grant(&self, info: &AskInfo) -> Option<String> {
        // Only managed allow rules count: the answer approved this call, and nothing more.
        if self.managed_rules_only && !(info.session_grants.is_empty() && info.rules_to_save.is_empty()) {
            return Some(
                "the answer approved this call only: managed settings allow only their own allow rules \
                 (allowManagedPermissionRulesOnly), so nothing is remembered"
                    .into(),
            );
        }
        {
            let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
            for text in info.session_grants.iter().chain(info.rules_to_save.iter()) {
                if let Ok(r) = Rule::parse(text, Behavior::Allow, "session", &self.anchors) {
                    session.push(r);
                }
            }
        }
        let path = self.save_path.as_ref()?;
        if info.rules_to_save.is_empty() {
            return None;
        }
        save_rules(path, &info.rules_to_save)
            .err()
            .map(|e| format!("could not save the rule(s) to {}: {e}", path.display()))
    }
}

/// A call as the permission check sees it.
pub struct Call<'a> {
    pub tool: &'a str,
    pub input: &'a Value,
    /// The tool says this call only observes.
    pub read_only: bool,
    pub declared: Declared,
    pub subject: Subject,
    /// A command line read once (strict and tolerant), when the call runs one.
    pub plan: Option<Arc<CommandPlan>>,
    /// The session's own folder: its spilled results and shell output are read without asking.
    pub session_dir: Option<PathBuf>,
}

impl<'a> Call<'a> {
    /// A call of a registered tool: its own declaration and reading of the input.
    pub fn of(tool: &'a dyn Tool, name: &'a str, input: &'a Value, cwd: &Path) -> Self {
        Call {
            tool: name,
            input,
            read_only: tool.is_read_only(input),
            declared: tool.declared(),
            subject: tool.subject(input, cwd),
            plan: None,
            session_dir: None,
        }
        .planned()
    }

    /// A call known only by its tool's name (as `tools::kinds` knows that name).
    pub fn named(tool: &'a str, input: &'a Value, read_only: bool, cwd: &Path) -> Self {
        Call {
            tool,
            input,
            read_only,
            declared: kinds::declared(tool),
            subject: kinds::subject(tool, input, cwd),
            plan: None,
            session_dir: None,
        }
        .planned()
    }

    /// The call made in a session whose own folder is `dir` (its model output is read unasked).
    pub fn in_session(mut self, dir: &Path) -> Self {
        self.session_dir = Some(dir.to_path_buf());
        self
    }

    /// Reads the command line of a call that runs one, once.
    fn planned(mut self) -> Self {
        if let (Subject::Command(line), true) = (&self.subject, self.declared.effects.runs_commands) {
            self.plan = Some(CommandPlan::new(line));
        }
        self
    }
}

struct Ctx<'a> {
    rules: &'a [&'a Rule],
    mode: Mode,
    dirs: &'a [PathBuf],
    home: Option<&'a Path>,
    /// The read-only jail is in force (shell checks may leave unknown options to it).
    jail: bool,
    /// The rule names that cover the call's tool besides its own.
    covered_by: &'a [&'a str],
    /// The session's own folder (its model output is read without asking).
    session_dir: Option<&'a Path>,
}

impl Ctx<'_> {
    fn find(&self, behavior: Behavior, tool: &str, pred: impl Fn(&Rule) -> bool) -> Option<&Rule> {
        self.rules
            .iter()
            .copied()
            .find(|r| r.behavior == behavior && r.names_call(tool, self.covered_by) && pred(r))
    }

    fn deny_rule(&self, tool: &str, pred: impl Fn(&Rule) -> bool) -> Option<String> {
        self.find(Behavior::Deny, tool, pred)
            .map(|r| format!("denied by the rule `{}` ({})", r.text, r.source))
    }

    /// The working directories are canonical (resolved at startup); the path is resolved here
    /// so a symlink out of the workspace does not count as inside.
    fn inside(&self, path: &Path) -> bool {
        self.inside_resolved(path, &real_path(path))
    }

    /// Inside the working directories both as written and where it leads (a link from one
    /// working directory into another stays inside).
    fn inside_resolved(&self, path: &Path, real: &Path) -> bool {
        self.in_dirs(path) && self.in_dirs(real)
    }

    /// The top of a working directory itself, where configuration lives.
    fn is_working_dir(&self, path: &Path) -> bool {
        self.dirs.iter().any(|d| d == path)
    }

    fn ask(&self, reason: String, rules_to_save: Vec<String>, session_grants: Vec<String>) -> Verdict {
        Verdict::Ask {
            hard: false,
            info: AskInfo {
                reason,
                rules_to_save,
                session_grants,
            },
        }
    }

    fn hard_ask(&self, reason: String) -> Verdict {
        Verdict::Ask {
            hard: true,
            info: AskInfo {
                reason,
                ..AskInfo::default()
            },
        }
    }

    fn read(&self, tool: &str, path: &Path) -> Verdict {
        self.read_resolved(tool, path, &real_path(path), Links::Plain)
    }

    fn read_resolved(&self, tool: &str, path: &Path, real: &Path, links: Links) -> Verdict {
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
    fn read_deny(&self, tool: &str, path: &Path, real: &Path) -> Option<Verdict> {
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
        let why =
            protected::credential_reason(real, self.home).or_else(|| protected::credential_reason(path, self.home))?;
        if explicit_allow(path) {
            return None;
        }
        Some(Verdict::Deny(format!(
            "{why}; credential files are not read unless a `Read(...)` allow rule names them"
        )))
    }

    fn edit(&self, tool: &str, path: &Path) -> Verdict {
        self.edit_resolved(tool, path, &real_path(path), Links::Plain)
    }

    fn edit_resolved(&self, tool: &str, path: &Path, real: &Path, links: Links) -> Verdict {
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

    /// Loading a skill: `Skill(name)` rules; a skill that grants tools (not `read_only`) asks
    /// in every mode but bypass, since a repository's skill must not grant itself commands.
    fn skill(&self, tool: &str, name: &str, read_only: bool) -> Verdict {
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

    fn generic(&self, tool: &str, input: &Value, read_only: bool) -> Verdict {
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

pub(super) fn plan_mode_message(tool: &str) -> String {
    format!(
        "plan mode is on: {tool} would change something, and only read-only tools run until the plan is approved. \
         Finish exploring, then present the plan with ExitPlanMode."
    )
}

/// The path with symlinks resolved as far as it exists (a new file's parent is resolved).
pub(super) fn real_path(p: &Path) -> PathBuf {
    crate::fsutil::paths::real_path(p)
}

fn save_rules(path: &Path, rules: &[String]) -> std::io::Result<()> {
    let mut value: Value = match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Default::default()),
        Err(e) => return Err(e),
    };
    let obj = value
        .as_object_mut()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "settings file is not a JSON object"))?;
    let perms = obj
        .entry("permissions")
        .or_insert_with(|| Value::Object(Default::default()));
    let perms = perms
        .as_object_mut()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "`permissions` is not an object"))?;
    let allow = perms.entry("allow").or_insert_with(|| Value::Array(Vec::new()));
    let allow = allow
        .as_array_mut()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "`permissions.allow` is not an array"))?;
    for r in rules {
        if !allow.iter().any(|v| v.as_str() == Some(r)) {
            allow.push(Value::String(r.clone()));
        }
    }
    let mut text = serde_json::to_string_pretty(&value).map_err(std::io::Error::other)?;
    text.push('\n');
    crate::fsutil::write_atomic(path, text.as_bytes())
}

mod apply;
mod bash;
mod links;
mod rebase;
mod web;

use links::{Access, Links};

#[cfg(test)]
mod tests;
