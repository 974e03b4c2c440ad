//! Slash commands in `keel -p`: a prompt that starts with `/name` runs like it would in the TUI
//! — a skill or custom command expands into the turn's prompt, `/compact`, `/cost` and
//! `/context` run here, and any other `/name` is a clear error instead of text sent to the
//! model.

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
