//! The permission decision for one tool call: deny > ask > allow, regardless of source.
//!
//! Order (as the reference evaluates): deny rules (and built-in protections) → ask rules (and
//! destructive commands) → allow rules, mode approvals and read-only classification →
//! otherwise ask, which headless mode and `dontAsk` turn into a denial.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};

use serde_json::Value;

use super::Mode;
use super::rules::{Anchors, Behavior, Rule, Spec};
use crate::shell::plan::CommandPlan;
use crate::tools::kinds;
use crate::types::tool::Subject;

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
    /// `regular`: the caller knows `path` is no symbolic link (a walk entry of that type).
    pub fn read_denied(&self, path: &Path, regular: bool) -> bool {
        let session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        let all = self.active(&session);
        // Grep and Glob ask this for every file they visit: the directories are borrowed, not
        // copied.
        let dirs = self.dirs.read().unwrap_or_else(|p| p.into_inner());
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
        let is_link = !regular && path.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink());
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
mod call;
mod ctx;
mod files;
mod links;
mod rebase;
mod web;

pub use call::Call;
use ctx::Ctx;
use links::Links;

#[cfg(test)]
mod tests;
