//! The pipeline's authorization step: permission rules and modes, and asking a human.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::events::{EngineEvent, NoticeLevel};
use super::pipeline::{Pipeline, ToolCall};
use serde_json::json;

use crate::hooks::{Event, Permission, fields};
use crate::permissions::authorizer::Call;
use crate::permissions::updates::{self, Update};
use crate::permissions::{AskInfo, HookDecision, Mode, PermissionPrompt, PermissionReply, Verdict};
use crate::sandbox::Confinement;
use crate::shell::plan::CommandPlan;
use crate::tools::{Effects, Tool, ToolOutput};

/// A call allowed to run: where its path resolved (file tools), and the input an approving
/// program rewrote it into, if it did (checked again by the pipeline).
pub struct Approved {
    pub resolved: Option<PathBuf>,
    /// The call's command line as the check read it (for the ledger and shell undo).
    pub plan: Option<Arc<CommandPlan>>,
    pub updated_input: Option<serde_json::Value>,
    /// How the call was approved, which decides how a shell command is confined.
    pub confinement: Confinement,
}

impl Approved {
    fn plain(resolved: Option<PathBuf>, plan: Option<Arc<CommandPlan>>) -> Self {
        Approved {
            resolved,
            plan,
            updated_input: None,
            confinement: Confinement::Approved,
        }
    }
}

/// Why a call did not run; `denied` marks permission denials (for `permission_denials`).
pub struct Refusal {
    pub output: ToolOutput,
    pub denied: bool,
    /// The tool's own precheck failed before anyone was asked: the call failed, as it would
    /// have when run (its PostToolUseFailure hooks fire).
    pub failed_check: bool,
}

impl Pipeline<'_> {
    /// Decides whether `call` may run; asks the front end when a human must decide. An
    /// approving program may hand back a rewritten input (`Ok(Some(input))`).
    pub(super) async fn authorize(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
        hook: Option<HookDecision>,
        cancel: &CancellationToken,
    ) -> Result<Approved, Refusal> {
        let mode = self.services.mode();
        let grants = self.services.skills.grants();
        let facts = Call::of(tool, &call.name, &call.input, &self.services.cwd).in_session(&self.services.session_dir);
        let effects = facts.declared.effects;
        let decision = self
            .authorizer
            .decide_call(&facts, mode, &self.services.cwd, hook, &grants);
        // The tool opens exactly the path this decision was made for.
        let resolved = decision.resolved;
        let plan = facts.plan.clone();
        let verdict = decision.verdict;
        let verdict = match verdict {
            v @ (Verdict::Allow | Verdict::AllowConfined(_) | Verdict::Ask { .. })
                if effects.runs_commands && leaves_sandbox(call, &self.services.shell.sandbox, &v) =>
            {
                Verdict::Ask {
                    hard: true,
                    info: AskInfo {
                        reason: "the command asks to run outside the OS sandbox (dangerouslyDisableSandbox)".into(),
                        ..AskInfo::default()
                    },
                }
            }
            v => v,
        };
        let mut info = match verdict {
            Verdict::Allow => {
                let why = if hook == Some(HookDecision::Allow) {
                    ("hook", "hook")
                } else if mode == Mode::BypassPermissions
                    || (mode == Mode::AcceptEdits && effects.edits_files && !effects.runs_commands)
                {
                    ("config", "mode")
                } else if effects.read_only || effects.session_only {
                    ("config", "read_only")
                } else {
                    ("config", "rule")
                };
                self.decided(call, "accept", why.0, Some(why.1));
                return Ok(Approved::plain(resolved, plan.clone()));
            }
            Verdict::AllowConfined(confinement) => {
                self.decided(call, "accept", "config", Some("safe_command"));
                return Ok(Approved {
                    confinement,
                    ..Approved::plain(resolved, plan.clone())
                });
            }
            Verdict::Deny(reason) => {
                self.decided(call, "reject", "config", Some("rule"));
                return Err(denied(call, &format!("Permission denied: {reason}.")));
            }
            Verdict::Ask { info, .. } => info,
        };
        // Nobody is asked about a call that cannot succeed (when nobody can be asked, the
        // denial says what permission is missing, which comes first).
        if self.hooks.has(Event::PermissionRequest) || (self.interactive && mode != Mode::DontAsk) {
            self.precheck(call, tool, resolved.as_deref(), cancel).await?;
        }
        // Whoever decides on loading a skill sees what it would grant.
        if effects.loads_skill
            && let Some(runner) = &self.grants.skills
        {
            let grants = runner.grants(call.input.get("skill").and_then(|v| v.as_str()).unwrap_or(""));
            if !grants.is_empty() {
                info.reason.push_str(&format!(": {}", grants.join(", ")));
            }
        }
        if self.hooks.has(Event::PermissionRequest) {
            let mut f = self.tool_fields(call, &call.input);
            f.insert("permission_suggestions".into(), json!(updates::suggestions(&info)));
            let agg = self
                .hooks
                .fire(Event::PermissionRequest, Some(&call.name), mode, f, self.events)
                .await;
            match agg.permission {
                Some(Permission::Allow) => {
                    self.record_decision(call, "hook", "allow", json!({}));
                    self.decided(call, "accept", "hook", Some("hook"));
                    let (list, bad) = updates::parse(&agg.updated_permissions);
                    if !bad.is_empty() {
                        self.events.notice(
                            NoticeLevel::Warning,
                            format!(
                                "a PermissionRequest hook's permission updates cannot be read, so none was applied: {}",
                                bad.join("; ")
                            ),
                        );
                    }
                    self.apply_updates(list);
                    self.after_approval(effects, false);
                    return Ok(Approved {
                        resolved,
                        plan: plan.clone(),
                        updated_input: agg.updated_input,
                        confinement: Confinement::Approved,
                    });
                }
                Some(Permission::Deny) => {
                    let why = agg.permission_reasons.join("; ");
                    let why = if why.is_empty() {
                        "no reason given".to_string()
                    } else {
                        why
                    };
                    self.record_decision(call, "hook", "deny", json!({"reason": why}));
                    self.decided(call, "reject", "hook", Some("hook"));
                    return Err(denied(
                        call,
                        &format!("A PermissionRequest hook denied this {} call: {why}", call.name),
                    ));
                }
                _ => {}
            }
        }
        if !self.interactive || mode == Mode::DontAsk {
            self.decided(call, "reject", "config", None);
            return Err(denied(call, &unanswerable(call, effects, &info, mode)));
        }
        let reply = self.ask_human(call, tool, &info, cancel).await;
        match &reply {
            None => {}
            Some(PermissionReply::Reject { .. } | PermissionReply::Deny { .. }) => {
                self.decided(call, "reject", "user", None)
            }
            Some(_) => self.decided(call, "accept", "user", None),
        }
        match reply {
            None => Err(Refusal {
                output: ToolOutput::error(
                    "The call was interrupted while waiting for the user's approval; it did not run.",
                ),
                denied: false,
                failed_check: false,
            }),
            Some(PermissionReply::AllowOnce) => {
                self.record_decision(call, "user", "allow_once", json!({}));
                self.after_approval(effects, false);
                Ok(Approved::plain(resolved, plan.clone()))
            }
            Some(PermissionReply::Allow { updated_input, updates }) => {
                self.record_decision(call, "program", "allow", json!({"updates": updates.len()}));
                self.apply_updates(updates);
                self.after_approval(effects, false);
                Ok(Approved {
                    resolved,
                    plan: plan.clone(),
                    updated_input,
                    confinement: Confinement::Approved,
                })
            }
            Some(PermissionReply::Reject { message, interrupt }) => {
                self.record_decision(
                    call,
                    "program",
                    "deny",
                    json!({"message": message, "interrupt": interrupt}),
                );
                if interrupt {
                    cancel.cancel();
                }
                let message = if message.trim().is_empty() {
                    format!("The {} call was refused; it was not run.", call.name)
                } else {
                    message
                };
                Err(denied(call, &message))
            }
            Some(PermissionReply::AllowAlways) => {
                let failed = self.authorizer.grant(&info);
                let saved = self
                    .authorizer
                    .save_path()
                    .filter(|_| failed.is_none() && !info.rules_to_save.is_empty());
                self.record_decision(
                    call,
                    "user",
                    "allow_always",
                    json!({"session_rules": info.session_grants, "rules_saved": if saved.is_some() { info.rules_to_save.clone() } else { Vec::new() },
                           "saved_to": saved.map(|p| p.display().to_string()), "save_error": failed}),
                );
                match (failed, saved) {
                    (Some(warning), _) => self.events.notice(NoticeLevel::Warning, warning),
                    (None, Some(path)) => self.events.notice(
                        NoticeLevel::Info,
                        format!(
                            "Saved the allow rule {} to {}.",
                            info.rules_to_save.join(", "),
                            path.display()
                        ),
                    ),
                    (None, None) => {}
                }
                self.after_approval(effects, true);
                Ok(Approved::plain(resolved, plan.clone()))
            }
            Some(PermissionReply::Deny { feedback }) => {
                self.record_decision(call, "user", "deny", json!({"feedback": feedback}));
                let mut msg = format!("The user declined this {} call; it was not run.", call.name);
                if effects.leaves_plan {
                    msg = "The user did not approve the plan; plan mode stays on. Revise the plan.".into();
                }
                if let Some(f) = feedback.filter(|f| !f.trim().is_empty()) {
                    msg.push_str(&format!(" The user says: {f}"));
                } else {
                    msg.push_str(" Stop and wait for the user's direction before trying something similar.");
                }
                Err(denied(call, &msg))
            }
        }
    }

    async fn ask_human(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
        info: &AskInfo,
        cancel: &CancellationToken,
    ) -> Option<PermissionReply> {
        if self.hooks.has(Event::Notification) {
            let message = format!("keel needs your permission to use {}", call.name);
            self.hooks
                .fire(
                    Event::Notification,
                    Some("permission_prompt"),
                    self.services.mode(),
                    fields([
                        ("message", message.into()),
                        ("title", "Permission needed".into()),
                        ("notification_type", "permission_prompt".into()),
                    ]),
                    self.events,
                )
                .await;
        }
        let (tx, rx) = oneshot::channel();
        self.events.emit(EngineEvent::PermissionRequest(PermissionPrompt {
            tool_use_id: call.id.clone(),
            tool_name: call.name.clone(),
            input: call.input.clone(),
            detail: format!(
                "{}\n\n({})",
                tool.detail(&call.input)
                    .unwrap_or_else(|| serde_json::to_string_pretty(&call.input).unwrap_or_default()),
                info.reason
            ),
            preview: crate::tools::preview::build(tool, &call.input, &self.services.cwd, &info.reason),
            suggested_rule: info.rules_to_save.first().or(info.session_grants.first()).cloned(),
            reason: info.reason.clone(),
            suggestions: updates::suggestions(info),
            reply: tx,
        }));
        tokio::select! {
            _ = cancel.cancelled() => None,
            // A front end that drops the question without answering denies.
            r = rx => Some(r.unwrap_or(PermissionReply::Deny { feedback: None })),
        }
    }

    /// Tells the front ends how the call's permission was decided.
    fn decided(
        &self,
        call: &ToolCall,
        decision: &'static str,
        source: &'static str,
        reason_type: Option<&'static str>,
    ) {
        self.events.emit(EngineEvent::PermissionDecided {
            tool_use_id: call.id.clone(),
            decision,
            source,
            reason_type,
        });
    }

    /// Every answered question leaves an audit line in the session transcript.
    fn record_decision(&self, call: &ToolCall, by: &str, decision: &str, extra: serde_json::Value) {
        let mut data = json!({"tool_use_id": call.id, "tool": call.name, "decided_by": by, "decision": decision});
        if let (Some(d), serde_json::Value::Object(e)) = (data.as_object_mut(), extra) {
            d.extend(e);
        }
        let _ = self.hooks.transcript().event("permission_decision", data);
    }

    /// Applies the permission updates a program sent with its approval; one that cannot be
    /// applied is reported, never dropped silently.
    fn apply_updates(&self, list: Vec<Update>) {
        for u in list {
            let outcome = match u {
                Update::Rules {
                    op,
                    behavior,
                    rules,
                    destination,
                } => self.authorizer.update_rules(op, behavior, &rules, destination),
                Update::SetMode { mode, .. } if let Some(why) = self.authorizer.mode_refused(mode) => Err(why),
                Update::SetMode { mode, destination } => {
                    self.services.set_mode(mode);
                    self.events.emit(EngineEvent::ModeChanged(mode));
                    self.authorizer.save_mode(mode, destination)
                }
                Update::Directories {
                    add,
                    directories,
                    destination,
                } => self
                    .authorizer
                    .update_directories(add, &directories, destination)
                    .map(|dirs| self.services.set_extra_dirs(dirs.into_iter().skip(1).collect())),
            };
            if let Err(e) = outcome {
                self.events.notice(
                    NoticeLevel::Warning,
                    format!("a permission update sent with an approval was not applied: {e}"),
                );
            }
        }
    }

    /// Approving a call that leaves plan mode (ExitPlanMode): "always" → acceptEdits, "once"
    /// → default.
    fn after_approval(&self, effects: Effects, always: bool) {
        if effects.leaves_plan && self.services.mode() == Mode::Plan {
            let refused = |m: Mode| self.authorizer.mode_refused(m).is_some();
            let next = match always {
                true if !refused(Mode::AcceptEdits) => Mode::AcceptEdits,
                _ if !refused(Mode::Default) => Mode::Default,
                _ => Mode::Plan,
            };
            if next == Mode::Plan {
                return;
            }
            self.services.set_mode(next);
            self.events.emit(EngineEvent::ModeChanged(next));
        }
    }
}

fn denied(_call: &ToolCall, message: &str) -> Refusal {
    Refusal {
        output: ToolOutput::error(message.to_string()),
        denied: true,
        failed_check: false,
    }
}

/// The denial text when nobody can answer (headless, dontAsk).
fn unanswerable(call: &ToolCall, effects: Effects, info: &AskInfo, mode: Mode) -> String {
    if effects.leaves_plan {
        return "Plan mode: nobody can approve a plan in this non-interactive session, so plan mode stays on. \
                Give the plan as your final answer instead."
            .into();
    }
    let why = if mode == Mode::DontAsk {
        "the permission mode is dontAsk"
    } else {
        "keel runs non-interactively"
    };
    let mut msg = format!(
        "Permission needed: {}. This {} call was not run because {why} and nobody can approve it. Continue without \
         it, or finish and tell the user which permission is needed",
        info.reason, call.name
    );
    match info.rules_to_save.first() {
        Some(rule) => msg.push_str(&format!(" (for example the allow rule `{rule}`)")),
        None => msg.push_str(" (an allow rule or a different permission mode)"),
    }
    msg.push('.');
    msg
}

/// A Bash call that asks to run unconfined while it would be confined: the sandbox is on, or
/// keel approved it only as read-only (the jail).
fn leaves_sandbox(call: &ToolCall, sandbox: &crate::sandbox::SandboxMode, verdict: &Verdict) -> bool {
    call.input.get("dangerouslyDisableSandbox") == Some(&serde_json::Value::Bool(true))
        && (!matches!(sandbox, crate::sandbox::SandboxMode::Off) || matches!(verdict, Verdict::AllowConfined(_)))
}
