//! Slash commands in `keel -p`: a prompt that starts with `/name` runs like it would in the TUI
//! — a skill or custom command expands into the turn's prompt, `/compact`, `/cost`,
//! `/context`, `/help`, `/permissions`, `/skills`, `/agents` and `/mcp` run here, and any other
//! `/name` is a clear error instead of text sent to the model.

use tokio_util::sync::CancellationToken;

use crate::commands::{self, Slash};
use crate::engine::{Engine, EngineEvent, NoticeLevel, ResultSubtype, TurnOutcome};
use crate::types::message::ContentBlock;

/// What a headless prompt turns into.
pub enum Plan {
    Turn(Vec<ContentBlock>),
    Compact(Option<String>),
    /// A command answered without the model.
    Answer(String),
    Fail(String),
}

pub async fn plan(engine: &mut Engine, prompt: &str, cancel: &CancellationToken) -> Plan {
    let skills = engine.skills();
    let slash = match commands::parse(prompt, &skills) {
        None => return with_mentions(engine, prompt, cancel).await,
        Some(Err(e)) => return Plan::Fail(e),
        Some(Ok(s)) => s,
    };
    match slash {
        Slash::Builtin { name: "compact", args } => Plan::Compact((!args.is_empty()).then_some(args)),
        Slash::Builtin { name: "cost", .. } => Plan::Answer(cost(engine)),
        Slash::Builtin { name: "context", .. } => Plan::Answer(context(engine)),
        Slash::Builtin { name: "help", .. } => Plan::Answer(help(&skills)),
        Slash::Builtin {
            name: "permissions", ..
        } => Plan::Answer(engine.authorizer().describe(engine.mode())),
        Slash::Builtin { name: "skills", .. } => Plan::Answer(skill_list(&skills)),
        Slash::Builtin { name: "agents", .. } => Plan::Answer(agent_list(engine)),
        Slash::Builtin { name: "mcp", args } if args.split_whitespace().next() == Some("login") => {
            let name = args.split_whitespace().nth(1).unwrap_or("NAME");
            Plan::Fail(format!(
                "/mcp login signs in through a browser and runs in the TUI; without it, run `keel mcp login {name}`"
            ))
        }
        Slash::Builtin { name: "mcp", .. } => Plan::Answer(mcp_list(engine)),
        Slash::Builtin { name, .. } => Plan::Fail(format!(
            "/{name} is an interactive command and does not run with -p; headless mode runs {}",
            commands::headless_names(&skills)
                .iter()
                .map(|n| format!("/{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Slash::Skill { name, args } => match engine.expand_slash_skill(&name, &args, cancel).await {
            Ok(content) => Plan::Turn(content),
            Err(e) => Plan::Fail(format!("/{name}: {e}")),
        },
    }
}

/// A plain prompt with the files its `@path` mentions name attached. Nobody can be asked here,
/// so a mention the Read check does not allow outright is left out, and the note saying so
/// (with the path it resolved to) goes to stderr and to stream-json readers.
async fn with_mentions(engine: &Engine, prompt: &str, cancel: &CancellationToken) -> Plan {
    match engine.mentions().attach(prompt.to_string(), cancel).await {
        Some(resolved) => {
            for note in resolved.notes {
                engine.events().notice(NoticeLevel::Warning, note);
            }
            Plan::Turn(resolved.blocks)
        }
        None => Plan::Turn(vec![ContentBlock::text(prompt)]),
    }
}

/// Ends a "turn" that ran no model request, with the usual outcome and event.
pub fn finish(engine: &Engine, result: String, is_error: bool) -> TurnOutcome {
    let outcome = TurnOutcome {
        subtype: if is_error {
            ResultSubtype::ErrorDuringExecution
        } else {
            ResultSubtype::Success
        },
        is_error,
        errors: if is_error { vec![result.clone()] } else { Vec::new() },
        result,
        stop_reason: None,
        num_turns: 0,
        duration_ms: 0,
        duration_api_ms: 0,
        interrupted: false,
        api_error_status: None,
        ..TurnOutcome::default()
    };
    engine.events().emit(EngineEvent::TurnFinished(outcome.clone()));
    outcome
}

fn cost(engine: &Engine) -> String {
    let t = engine.totals();
    let mut s = format!(
        "Total cost: ${:.4}\nAPI time: {} ms\nRequests: {}\nTokens: {} input, {} output, {} cache write, {} cache read",
        t.cost_usd,
        t.api_ms,
        t.requests,
        t.usage.input_tokens,
        t.usage.output_tokens,
        t.usage.cache_creation_input_tokens,
        t.usage.cache_read_input_tokens
    );
    for (model, m) in &t.by_model {
        s.push_str(&format!("\n{model}: ${:.4}", m.cost_usd));
    }
    s
}

fn context(engine: &Engine) -> String {
    engine.context_report()
}

/// The commands this session runs, one a line with its arguments and what it does.
fn help(skills: &crate::skills::Catalog) -> String {
    commands::headless_offer(skills)
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
            let args = s("argumentHint");
            let head = if args.is_empty() {
                format!("/{}", s("name"))
            } else {
                format!("/{} {args}", s("name"))
            };
            format!("{head} — {}", s("description"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn skill_list(skills: &crate::skills::Catalog) -> String {
    let lines: Vec<String> = skills
        .for_user()
        .map(|s| format!("/{} — {}", s.name, s.description))
        .collect();
    if lines.is_empty() {
        "No skills or custom commands here.".into()
    } else {
        lines.join("\n")
    }
}

fn agent_list(engine: &Engine) -> String {
    let agents = engine.harness().agents.clone();
    engine
        .inventory()
        .agents
        .iter()
        .map(|name| match agents.get(name) {
            Some(d) if !d.description.is_empty() => format!("{name} — {}", d.description),
            _ => name.clone(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn mcp_list(engine: &Engine) -> String {
    let servers = engine.mcp().map(|h| h.init_json()).unwrap_or_default();
    if servers.is_empty() {
        return "No MCP servers are configured.".into();
    }
    servers
        .iter()
        .map(|s| {
            format!(
                "{}: {}",
                s["name"].as_str().unwrap_or("?"),
                s["status"].as_str().unwrap_or("unknown")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
