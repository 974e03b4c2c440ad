//! Building a child engine from a definition: its tools (a subset of the parent's, filtered in
//! the registry), its system prompt, model, permission mode (never wider than the parent's),
//! optional git worktree, its own runners for deeper sub-agents and skills, and its first
//! message (the delegated prompt, or the verifier's brief).

use std::sync::Arc;

use tokio::task::JoinHandle;

use super::{MAX_SUBAGENT_TURNS, SubagentInfo, SubagentRunner};
use crate::agents::worktree::{self, Worktree};
use crate::agents::{AgentDef, Isolation, Role, verifier};
use crate::config::models;
use crate::context::{instructions, system_prompt};
use crate::engine::SessionServices;
use crate::engine::events::{EngineEvent, NoticeLevel};
use crate::engine::{Engine, EngineConfig, Session};
use crate::hooks::{Event, fields};
use crate::permissions::Mode;
use crate::provider::SystemBlock;
use crate::skills::render::{self, Part, Vars};
use crate::tools::agent::AgentRequest;
use crate::tools::registry::ToolRegistry;
use crate::transcript::Transcript;
use crate::types::message::{CacheControl, ContentBlock};

const SUBAGENT_NOTE: &str = "You are working as a sub-agent for keel's main session. The main agent gave \
you the task below and sees nothing of your work except your final message: make it a complete, \
self-contained report of what you found or did, with file paths and the evidence (commands run and \
their results). Say plainly what you could not do or verify.";

/// A child ready to run.
pub(super) struct Child {
    pub engine: Engine,
    pub content: Vec<ContentBlock>,
    pub info: SubagentInfo,
    pub worktree: Option<Worktree>,
    /// What finishing the worktree fires its hooks with: the hooks, the parent's events, the mode.
    pub finish_with: (Arc<crate::hooks::Hooks>, crate::engine::EventSink, Mode),
    /// Facts for the parent's result (a skipped prompt, a narrowed mode).
    pub notes: Vec<String>,
    /// Forwards the child's approvals, notices and hook runs to the parent's events.
    pub forward: JoinHandle<()>,
}

/// How permissive a mode is; a child's mode is never above its parent's.
fn rank(m: Mode) -> u8 {
    match m {
        Mode::Plan => 0,
        Mode::DontAsk => 1,
        Mode::Default => 2,
        Mode::AcceptEdits => 3,
        Mode::BypassPermissions => 4,
    }
}

pub(super) fn child_mode(parent: Mode, wanted: Option<Mode>) -> Mode {
    match wanted {
        Some(w) if rank(w) <= rank(parent) => w,
        _ => parent,
    }
}

/// Whether a definition's `tools` entry names `tool` (`Task` is Agent's older name; a trailing
/// `*` matches a prefix, e.g. `mcp__github__*`).
fn names(entry: &str, tool: &str) -> bool {
    let entry = if entry == "Task" { "Agent" } else { entry };
    match entry.strip_suffix('*') {
        Some(prefix) => tool.starts_with(prefix),
        None => entry == tool,
    }
}

pub(super) fn child_registry(
    parent: &ToolRegistry,
    def: &AgentDef,
    offer_agent: bool,
    mode: Mode,
) -> Result<ToolRegistry, String> {
    let effects = |n: &str| parent.get(n).map(|t| t.tool.declared().effects).unwrap_or_default();
    parent
        .subset(|n| {
            let listed = def.tools.as_ref().is_none_or(|t| t.iter().any(|e| names(e, n)));
            let barred = def.disallowed_tools.iter().any(|e| names(e, n));
            // Deeper sub-agents only within the depth limit; leaving plan mode only in it.
            let e = effects(n);
            let allowed_here = (!e.spawns_agent || offer_agent) && (!e.leaves_plan || mode == Mode::Plan);
            listed && !barred && allowed_here
        })
        .map_err(|e| e.to_string())
}

/// A child's services: the parent's startup decisions, a copy of what the parent has read,
/// its own evidence with a channel up to the parent's ledger, the parent's checkpoint log (one
/// rewind takes back both). In a worktree the parent's tree is not the child's: its views,
/// write access, evidence and checkpoints stay home.
fn child_services(
    parent: &SessionServices,
    session_dir: std::path::PathBuf,
    mode: Mode,
    worktree: Option<&Worktree>,
    authorizer: &Arc<crate::permissions::Authorizer>,
) -> Arc<SessionServices> {
    let cwd = worktree.map_or_else(|| parent.cwd.clone(), |w| w.cwd.clone());
    let builder = SessionServices::builder(cwd, session_dir.clone())
        .inherit(parent)
        .mode(mode);
    let services = match worktree {
        Some(w) => {
            let guard = authorizer.clone();
            let confiner = parent
                .shell
                .confiner
                .as_ref()
                .map(|c| Arc::new(c.rebased(&w.repo, &w.path, move |p| guard.read_denied_by_rule(p))));
            // Grep and Glob leave out what Read would refuse, in the worktree too.
            let guard = authorizer.clone();
            builder
                .sandbox(worktree::rebase_sandbox(&parent.shell.sandbox, &w.repo, &w.path))
                .confiner(confiner)
                .extra_dirs(authorizer.working_dirs().into_iter().skip(1).collect())
                .read_guard(crate::tools::ReadGuard::new(move |p, regular| {
                    guard.read_denied(p, regular)
                }))
                // Runs and changes in its own tree say nothing about the session's.
                .evidence(Arc::new(crate::evidence::Evidence::in_memory(&w.path, &session_dir)))
                .build()
        }
        None => builder
            .file_state(parent.files().clone())
            .evidence(Arc::new(crate::evidence::Evidence::for_subagent(
                &parent.evidence,
                &session_dir,
            )))
            .checkpoints(parent.checkpoints.clone())
            .build(),
    };
    services.shell.set_session_id(parent.shell.session_id());
    services
}

pub(super) async fn prepare(
    r: &SubagentRunner,
    def: &AgentDef,
    req: &AgentRequest,
    grants: &[crate::permissions::rules::Rule],
) -> Result<Child, String> {
    let parent = &r.parent;
    let tree = &r.tree;
    let n = tree.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    let short: String = uuid::Uuid::new_v4().simple().to_string().chars().take(8).collect();
    let agent_id = format!("agent-{n}-{short}");
    let dir = parent.session_dir.join("subagents");
    let transcript_path = dir.join(format!("{agent_id}.jsonl"));
    let mut notes = Vec::new();
    // Before anything is made for the child: a refused model is the call's error.
    let routes = r.routes();
    let choice = super::model::choose(
        req.model.as_deref(),
        def.model.as_deref(),
        &r.model(),
        &r.authorizer,
        routes.as_deref(),
    )?;
    let spec = match &choice {
        super::model::Choice::Model(m) | super::model::Choice::Fallback { model: m, .. } => m.clone(),
    };
    // A model on a named provider runs there; any other on the parent's provider.
    let routed = super::model::route(&spec, routes.as_deref())?;

    let worktree = if req.worktree || def.isolation == Some(Isolation::Worktree) {
        Some(
            super::worktree_hook::create(
                &tree.hooks,
                parent.mode(),
                &r.events,
                &parent.cwd,
                &worktree::home(&parent.cwd, &parent.session_dir),
                &agent_id,
                &tree.worktree_base,
            )
            .await?,
        )
    } else {
        None
    };
    let cwd = worktree
        .as_ref()
        .map(|w| w.cwd.clone())
        .unwrap_or_else(|| parent.cwd.clone());
    let transcript = Transcript::create(&transcript_path).map_err(|e| e.to_string())?;
    let child_dir = dir.join(&agent_id);

    let mode = child_mode(parent.mode(), def.permission_mode);
    if let Some(wanted) = def.permission_mode.filter(|w| *w != mode) {
        notes.push(format!(
            "(The agent type `{}` asks for permissionMode {}; it ran in {}, since a sub-agent never gets wider \
             permissions than its parent.)",
            def.name,
            wanted.as_str(),
            mode.as_str()
        ));
    }
    let depth = r.depth + 1;
    let offer_agent = depth < tree.budget.limits.max_depth;
    let registry = Arc::new(child_registry(&r.registry, def, offer_agent, mode)?);
    crate::mcp::add_loader(&registry);
    let authorizer = match &worktree {
        Some(w) => Arc::new(r.authorizer.rebased(&w.repo, &w.path)),
        None => r.authorizer.clone(),
    };
    let services = child_services(parent, child_dir, mode, worktree.as_ref(), &authorizer);
    let mut session = Session::with_services(agent_id.clone(), transcript, services);
    // The transcript names the call it answers, so an export can nest it under that call.
    session.log_event(
        crate::transcript::SUBAGENT_EVENT,
        serde_json::json!({
            "agent_id": agent_id,
            "agent_type": def.name,
            "parent_tool_use_id": req.tool_use_id,
            "description": req.description,
        }),
    );

    // A definition's model outside managed settings' allowlist gives way to the session's.
    if let super::model::Choice::Fallback { why, .. } = &choice {
        r.events.notice(
            NoticeLevel::Warning,
            format!("agent type {}: {why}; it runs on the session's model", def.name),
        );
    }
    // The id sent to the server (`qwen3-coder` of `lab/qwen3-coder`), and its provider.
    let (provider, model) = match routed {
        Some((provider, id)) => (provider, id),
        None => (
            tree.provider.read().unwrap_or_else(|p| p.into_inner()).clone(),
            spec.clone(),
        ),
    };
    let offers = |name: &str| registry.get(name).is_some();
    let mut listings = Vec::new();
    if offers("Agent")
        && let Some(l) = r.catalog().listing(crate::skills::listing::DEFAULT_BUDGET)
    {
        listings.push(l);
    }
    if offers("Skill")
        && let Some(l) = crate::skills::listing::render(tree.skills.for_model(), crate::skills::listing::DEFAULT_BUDGET)
    {
        listings.push(l);
    }
    let preloaded = preload_skills(r, def, &cwd, &agent_id, &mut notes);
    let config = EngineConfig {
        max_tokens: models::info(&model).max_output,
        system: system_blocks(r, def, &cwd, &model, &listings, &preloaded),
        model,
        max_turns: Some(def.max_turns.unwrap_or(MAX_SUBAGENT_TURNS)),
        interactive: tree.base.interactive,
        context_window: tree.base.context_window,
        compact: tree.base.compact,
        // `--task-budget` is the parent run's: a child's output counts there once it reports.
        reasoning: crate::provider::Reasoning {
            task_budget: None,
            ..tree.base.reasoning.clone()
        },
        // The parent checks the session's total, its children's included, between its own
        // requests; a child running meanwhile stops at the limit by itself, or one sub-agent
        // with many turns could spend any amount before the parent looks again.
        max_budget_usd: tree.base.max_budget_usd,
    };
    let (mut engine, mut events) = Engine::new(
        config,
        provider,
        registry.clone(),
        authorizer.clone(),
        tree.hooks.clone(),
        session,
    );
    engine.subagent = Some(SubagentInfo {
        agent_id: agent_id.clone(),
        agent_type: def.name.clone(),
        transcript: transcript_path.clone(),
    });
    engine.harness.skills = tree.skills.clone();
    engine.harness.agents = r.catalog();
    engine.harness.limits = tree.budget.limits;
    engine.subagents = offers("Agent").then(|| {
        Arc::new(r.for_child(
            registry.clone(),
            authorizer.clone(),
            engine.events().clone(),
            // What its own children inherit: the provider's name stays on.
            spec.clone(),
            engine.session.services.clone(),
            engine.contributions.0.clone(),
        ))
    });
    if offers("Skill") {
        engine.install_skills(tree.skills.clone());
    }
    if !grants.is_empty() {
        engine.session.services.skills.grant(&req.description, grants.to_vec());
    }

    // Approvals, notices and hook runs of the child reach the user like the parent's own; the
    // messages of a child the parent waits for go along tagged with the call that started it.
    let forward_to = r.events.clone();
    let messages_of = (!req.background.unwrap_or(def.background)).then(|| req.tool_use_id.clone());
    let forward = tokio::spawn(async move {
        while let Some(ev) = events.recv().await {
            match ev {
                EngineEvent::PermissionRequest(_) | EngineEvent::Notice { .. } | EngineEvent::HookRun(_) => {
                    forward_to.emit(ev);
                }
                EngineEvent::Assistant { .. } | EngineEvent::ToolResults(_) => {
                    if let Some(id) = &messages_of {
                        forward_to.emit(EngineEvent::Subagent {
                            parent_tool_use_id: id.clone(),
                            event: Box::new(ev),
                        });
                    }
                }
                EngineEvent::Subagent { .. } if messages_of.is_some() => forward_to.emit(ev),
                _ => {}
            }
        }
    });

    let first = if def.role == Role::Verifier {
        let facts = parent.verifier_facts.lock().unwrap_or_else(|p| p.into_inner()).clone();
        notes.push(
            "(keel gave the verifier its own brief — the user's requests, the diff, the changed files and the \
             commands run — and not your prompt.)"
                .into(),
        );
        verifier::brief(&facts, &cwd, &parent.evidence).await
    } else {
        req.prompt.clone()
    };
    let mut content = vec![ContentBlock::text(first)];
    // An agent hook's own sub-agent fires no hooks (see `hook_agent`).
    if def.name != super::HOOK_AGENT_TYPE && tree.hooks.has(Event::SubagentStart) {
        let agg = tree
            .hooks
            .fire(
                Event::SubagentStart,
                Some(&def.name),
                parent.mode(),
                fields([
                    ("agent_id", agent_id.clone().into()),
                    ("agent_type", def.name.clone().into()),
                ]),
                &r.events,
            )
            .await;
        for ctx in agg.context {
            content.push(ContentBlock::text(format!(
                "<system-reminder>\n{ctx}\n</system-reminder>"
            )));
        }
    }
    Ok(Child {
        engine,
        content,
        info: SubagentInfo {
            agent_id,
            agent_type: def.name.clone(),
            transcript: transcript_path,
        },
        worktree,
        finish_with: (tree.hooks.clone(), r.events.clone(), parent.mode()),
        notes,
        forward,
    })
}

/// The full text of the skills a definition preloads.
fn preload_skills(
    r: &SubagentRunner,
    def: &AgentDef,
    cwd: &std::path::Path,
    id: &str,
    notes: &mut Vec<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    for name in &def.skills {
        let Some(skill) = r.tree.skills.get(name) else {
            r.events.notice(
                NoticeLevel::Warning,
                format!(
                    "the agent type `{}` preloads the skill `{name}`, which does not exist",
                    def.name
                ),
            );
            notes.push(format!("(The skill `{name}` it preloads does not exist.)"));
            continue;
        };
        let vars = Vars {
            session_id: id,
            project_dir: cwd,
        };
        let text: String = render::render(skill, "", &vars)
            .into_iter()
            .map(|p| match p {
                Part::Text(t) => t,
                Part::Command(c) => format!("!`{c}`"),
            })
            .collect();
        out.push(format!(
            "<skill name=\"{}\">\n{}\n</skill>",
            skill.name,
            text.trim_end()
        ));
    }
    out
}

/// The child's system prompt: the definition's (or keel's core) prompt, then its environment,
/// project context (not for read-only research types), listings, preloaded skills and the
/// sub-agent note.
fn system_blocks(
    r: &SubagentRunner,
    def: &AgentDef,
    cwd: &std::path::Path,
    model: &str,
    listings: &[String],
    preloaded: &[String],
) -> Vec<SystemBlock> {
    let project = &r.tree.project;
    let first = match def.role {
        Role::GeneralPurpose | Role::ReadOnly => project.core_text().to_string(),
        Role::Verifier | Role::Custom if def.prompt.trim().is_empty() => project.core_text().to_string(),
        Role::Verifier | Role::Custom => def.prompt.clone(),
    };
    let mut second = system_prompt::environment(cwd, model);
    if def.role != Role::ReadOnly {
        if let Some(g) = project.git_now() {
            second.push_str("\n\n");
            second.push_str(&g.render());
        }
        let files = instructions::render(&project.instructions.files);
        if !files.is_empty() {
            second.push_str("\n\n");
            second.push_str(&files);
        }
    }
    for l in listings.iter().chain(preloaded) {
        second.push_str("\n\n");
        second.push_str(l);
    }
    second.push_str("\n\n");
    second.push_str(SUBAGENT_NOTE);
    let mut blocks = vec![SystemBlock::text(first), SystemBlock::text(second)];
    for b in &mut blocks {
        b.cache_control = Some(CacheControl::ephemeral());
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_never_gets_a_wider_mode() {
        assert_eq!(child_mode(Mode::Default, Some(Mode::BypassPermissions)), Mode::Default);
        assert_eq!(child_mode(Mode::Default, Some(Mode::Plan)), Mode::Plan);
        assert_eq!(child_mode(Mode::AcceptEdits, Some(Mode::Default)), Mode::Default);
        assert_eq!(child_mode(Mode::BypassPermissions, None), Mode::BypassPermissions);
        assert_eq!(child_mode(Mode::Plan, Some(Mode::AcceptEdits)), Mode::Plan);
    }

    #[test]
    fn the_registry_enforces_the_definition() {
        let parent = ToolRegistry::new(crate::tools::builtin_tools()).unwrap();
        let mut def = AgentDef::builtins().remove(0);
        def.tools = Some(vec!["Read".into(), "Grep".into(), "Task".into(), "Bash".into()]);
        def.disallowed_tools = vec!["Bash".into()];
        let reg = child_registry(&parent, &def, true, Mode::Default).unwrap();
        assert_eq!(reg.names(), vec!["Read", "Grep", "Agent"]);
        let reg = child_registry(&parent, &def, false, Mode::Default).unwrap();
        assert_eq!(reg.names(), vec!["Read", "Grep"]);
        def.tools = None;
        def.disallowed_tools.clear();
        let all = child_registry(&parent, &def, true, Mode::Default).unwrap();
        assert!(all.get("Write").is_some() && all.get("ExitPlanMode").is_none());
    }
}
