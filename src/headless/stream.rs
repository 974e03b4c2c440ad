//! `--input-format stream-json`: a session driven by a program over stdin/stdout. One turn per
//! user message, control requests answered as they come (an interrupt or a mode change lands
//! during a turn), the process living until stdin closes.
//!
//! Three parties: the reader task decodes stdin and answers what it can at once; the turn loop
//! (this task) owns the engine and runs turns and the requests that change it, in order; the
//! printer task turns engine events into lines and hands permission questions to the client.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::out::Out;
use super::output;
use super::printer::Printer;
use super::protocol::client::ClientLink;
use super::protocol::codec::{self, ClientRequest, Inbound, Initialize};
use super::protocol::control;
use super::protocol::elicitation;
use super::protocol::mcp_relay;
use super::protocol::offer;
use super::slash;
use crate::console::err_line;
use crate::engine::SessionServices;
use crate::engine::session::ModelTotals;
use crate::engine::{Engine, EngineEvent, NoticeLevel, TurnOutcome};
use crate::launch::options::{Options, OutputFormat};
use crate::launch::setup::Prepared;
use crate::permissions::Mode;
use crate::types::message::{ContentBlock, Usage};

/// Work for the turn loop, in the order the client sent it.
enum Command {
    Turn(Vec<ContentBlock>),
    Initialize { id: String, init: Box<Initialize> },
    SetModel(control::ModelChange),
}

/// What the reader shares with the turn loop.
struct Shared {
    out: Arc<Out>,
    /// User messages read but not yet taken up by a turn (`queued_turn_count`).
    queued: std::sync::atomic::AtomicU64,
    link: Arc<ClientLink>,
    session: Arc<SessionServices>,
    session_id: String,
    /// The running turn's token, so `interrupt` can stop it.
    current: Mutex<Option<CancellationToken>>,
    replay: bool,
    /// The highest mode `set_permission_mode` may enter, when a setting limits it.
    ceiling: Option<crate::config::precedence::Ceiling>,
    /// Managed settings' model allowlist, which `set_model` stays inside.
    model_allowlist: Option<crate::config::precedence::ModelAllowlist>,
    /// How `set_model` finds models (`None` with the script provider).
    models: Option<control::ModelRoutes>,
}

pub async fn run(cli: &Options, prepared: Prepared, out: Arc<Out>, shutdown: CancellationToken) -> ExitCode {
    let mut engine = prepared.engine;
    let session_id = engine.session_id().to_string();
    let default_model = engine.model().to_string();
    // The model in use as the user names it (`ollama/qwen3-coder`), for `initialize` and the
    // key source of `system/init`.
    let mut current_spec = prepared.model_spec.clone();
    let link = Arc::new(ClientLink::new(out.clone()));
    let shared = Arc::new(Shared {
        out: out.clone(),
        queued: Default::default(),
        link: link.clone(),
        session: engine.services(),
        session_id: session_id.clone(),
        current: Mutex::new(None),
        replay: cli.programs.replay_user_messages,
        ceiling: engine.mode_ceiling(),
        model_allowlist: engine.model_allowlist(),
        models: prepared.catalog.clone().map(|catalog| control::ModelRoutes {
            catalog,
            fallback: prepared.fallback_model.clone(),
            default_spec: prepared.model_spec.clone(),
        }),
    });
    let state_events = std::env::var("CLAUDE_CODE_SDK_READS_SESSION_STATE").is_ok_and(|v| v == "1")
        || std::env::var("CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS").is_ok_and(|v| v == "1");

    let mut printer = Printer::new(out.clone(), OutputFormat::StreamJson, cli.verbose, session_id.clone());
    printer.include_hook_events = cli.programs.include_hook_events;
    printer.partial = cli.include_partial_messages;
    let stats = printer.stats.clone();
    let provider = engine.provider();
    let mut result_index = 0u64;
    let forward_subagent_text = printer.forward_subagent_text.clone();
    if engine.interactive() {
        printer.link = Some(link.clone());
    }
    let (finished_tx, mut finished_rx) = mpsc::unbounded_channel();
    let stop_printer = CancellationToken::new();
    let printing = tokio::spawn(printer.run(prepared.events, finished_tx, stop_printer.clone()));

    let (commands_tx, mut commands) = mpsc::unbounded_channel();
    let reader = tokio::spawn(read_input(shared.clone(), commands_tx));
    // In-process servers of the program connect in the background (their messages need the
    // reader); a turn starts only once they have answered or failed.
    let mut connecting = Vec::new();
    if let Some(hub) = engine.mcp() {
        connecting.push(tokio::spawn(mcp_relay::connect_configured(hub, link.clone())));
    }

    let mut started = false;
    // The dynamic sections an `excludeDynamicSections` initialize took out of the system prompt
    // go with the next user message.
    let mut dynamic_pending = false;
    let mut last: Option<TurnOutcome> = None;
    loop {
        let gone = out.gone();
        let command = tokio::select! {
            c = commands.recv() => c,
            _ = shutdown.cancelled() => None,
            _ = gone.cancelled() => None,
        };
        let Some(command) = command else { break };
        match command {
            Command::Initialize { id, init } => {
                let view = control::ModelView {
                    routes: shared.models.as_ref(),
                    default_spec: &prepared.model_spec,
                    current: &current_spec,
                };
                match control::initialize(&mut engine, &init, &link, &view) {
                    Ok((answer, warnings)) => {
                        for w in warnings {
                            err_line!("keel: warning: {w}");
                        }
                        dynamic_pending |= init.exclude_dynamic_sections == Some(true);
                        if let Some(forward) = init.forward_subagent_text {
                            forward_subagent_text.store(forward, std::sync::atomic::Ordering::Relaxed);
                        }
                        out.line(&codec::success(&id, answer));
                        // A program that speaks the control protocol answers servers'
                        // elicitation requests (its SDK declines those it has no handler for).
                        if let Some(hub) = engine.mcp() {
                            hub.elicitation()
                                .set(Arc::new(elicitation::SdkElicitor { link: link.clone() }));
                        }
                        if let (Some(hub), false) = (engine.mcp(), init.sdk_mcp_servers.is_empty()) {
                            let names = init.sdk_mcp_servers.clone();
                            connecting.push(tokio::spawn(mcp_relay::connect_named(hub, link.clone(), names)));
                        }
                    }
                    Err(e) => out.line(&codec::error(&id, &e)),
                }
            }
            Command::SetModel(change) => {
                current_spec = change.spec(&prepared.model_spec);
                control::set_model(&mut engine, change, &default_model);
            }
            Command::Turn(content) => {
                shared.queued.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                for task in connecting.drain(..) {
                    for w in task.await.unwrap_or_default() {
                        err_line!("keel: warning: {w}");
                    }
                }
                if !started {
                    started = true;
                    engine
                        .session_start(if prepared.resumed { "resume" } else { "startup" })
                        .await;
                }
                let cancel = shutdown.child_token();
                *shared.current.lock().unwrap_or_else(|p| p.into_inner()) = Some(cancel.clone());
                if state_events {
                    out.line(&output::session_state_line("running", &session_id));
                }
                let key_source = offer::key_source(shared.models.as_ref().map(|r| &*r.catalog), &current_spec);
                out.line(&init_line(&engine, &key_source));
                let before = (engine.totals().clone(), engine.denials().len());
                stats.lock().unwrap_or_else(|p| p.into_inner()).next_turn();
                // A plain text message may be a slash command, as with -p.
                match content.as_slice() {
                    [ContentBlock::Text { text, .. }] => {
                        let text = text.clone();
                        match slash::plan(&mut engine, &text, &cancel).await {
                            slash::Plan::Turn(content) => {
                                let content = with_dynamic(&engine, &mut dynamic_pending, content);
                                engine.run_turn(content, cancel).await
                            }
                            slash::Plan::Compact(instructions) => {
                                engine.compact_turn(instructions.as_deref(), &cancel).await
                            }
                            slash::Plan::Answer(text) => slash::finish(&engine, text, false),
                            slash::Plan::Fail(message) => slash::finish(&engine, message, true),
                        };
                    }
                    _ => {
                        let content = with_dynamic(&engine, &mut dynamic_pending, content);
                        engine.run_turn(content, cancel).await;
                    }
                }
                *shared.current.lock().unwrap_or_else(|p| p.into_inner()) = None;
                // The printer reports the turn once every line before it is out.
                let Some(outcome) = finished_rx.recv().await else { break };
                // Usage and denials of this turn; cost and per-model usage of the session.
                let mut totals = engine.totals().clone();
                totals.usage = usage_since(&before.0.usage, &totals.usage);
                let since_last = models_since(&before.0.by_model, &totals.by_model);
                let denials = engine.denials().get(before.1..).unwrap_or(&[]);
                let result = {
                    let stats = stats.lock().unwrap_or_else(|p| p.into_inner());
                    let ctx = output::ResultContext {
                        stats: &stats,
                        since_last: &since_last,
                        result_index,
                        queued_turns: shared.queued.load(std::sync::atomic::Ordering::Relaxed),
                        provider: provider.name(),
                    };
                    output::result_object(&outcome, &session_id, &totals, denials, &ctx)
                };
                result_index += 1;
                out.line(&result);
                if state_events {
                    out.line(&output::session_state_line("idle", &session_id));
                }
                last = Some(outcome);
            }
        }
    }
    reader.abort();
    link.close();
    engine.end_processes();
    stop_printer.cancel();
    let leftover = printing.await.ok();
    engine.session_end("other").await;
    if let Some((_, mut rx)) = leftover {
        while let Ok(ev) = rx.try_recv() {
            if let EngineEvent::Notice { level, message } = ev
                && level != NoticeLevel::Info
            {
                err_line!("keel: {message}");
            }
        }
    }
    if out.is_closed() {
        return ExitCode::from(141);
    }
    match last {
        Some(o) if o.is_error && !o.interrupted => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    }
}

/// Puts the system prompt's dynamic sections (environment, git snapshot, memory) in front of
/// the message when `excludeDynamicSections` took them out and they were not sent yet.
fn with_dynamic(engine: &Engine, pending: &mut bool, mut content: Vec<ContentBlock>) -> Vec<ContentBlock> {
    if std::mem::take(pending)
        && let Some(text) = engine.dynamic_context()
    {
        content.insert(
            0,
            ContentBlock::text(format!("<system-reminder>\n{text}\n</system-reminder>")),
        );
    }
    content
}

fn usage_since(
    before: &crate::types::message::Usage,
    now: &crate::types::message::Usage,
) -> crate::types::message::Usage {
    crate::types::message::Usage {
        input_tokens: now.input_tokens.saturating_sub(before.input_tokens),
        output_tokens: now.output_tokens.saturating_sub(before.output_tokens),
        cache_creation_input_tokens: now
            .cache_creation_input_tokens
            .saturating_sub(before.cache_creation_input_tokens),
        cache_read_input_tokens: now
            .cache_read_input_tokens
            .saturating_sub(before.cache_read_input_tokens),
        cache_creation_1h_input_tokens: now
            .cache_creation_1h_input_tokens
            .saturating_sub(before.cache_creation_1h_input_tokens),
        web_search_requests: now.web_search_requests.saturating_sub(before.web_search_requests),
    }
}

/// Per-model usage and cost since `before`; models unused since are left out.
fn models_since(
    before: &BTreeMap<String, ModelTotals>,
    now: &BTreeMap<String, ModelTotals>,
) -> BTreeMap<String, ModelTotals> {
    now.iter()
        .filter_map(|(model, t)| {
            let b = before.get(model).cloned().unwrap_or_default();
            let usage = usage_since(&b.usage, &t.usage);
            (usage != Usage::default()).then(|| {
                let totals = ModelTotals {
                    usage,
                    cost_usd: (t.cost_usd - b.cost_usd).max(0.0),
                    unpriced: t.unpriced,
                };
                (model.clone(), totals)
            })
        })
        .collect()
}

/// The `system/init` line that opens each turn.
fn init_line(engine: &Engine, api_key_source: &str) -> Value {
    let cwd = engine.cwd().display().to_string();
    let inventory = engine.inventory();
    output::init_line(&output::InitInfo {
        session_id: engine.session_id(),
        cwd: &cwd,
        tools: engine.tool_names(),
        mcp_servers: engine
            .session
            .services
            .mcp
            .as_ref()
            .map(|h| h.init_json())
            .unwrap_or_default(),
        model: engine.model(),
        permission_mode: engine.mode().as_str(),
        api_key_source,
        agents: inventory.agents.iter().map(String::as_str).collect(),
        slash_commands: inventory.slash_commands.iter().map(String::as_str).collect(),
        skills: inventory.skills.iter().map(String::as_str).collect(),
        plugins: inventory.plugins.clone(),
        safe_mode: inventory.safe_mode,
        facts: super::facts::init_fields(engine),
    })
}

/// Reads stdin line by line until it closes. Answers at once what needs no engine (interrupt,
/// permission mode, status); queues the rest for the turn loop.
async fn read_input(shared: Arc<Shared>, commands: mpsc::UnboundedSender<Command>) {
    let mut lines = stdin_lines();
    while let Some(line) = lines.recv().await {
        if line.trim().is_empty() {
            continue;
        }
        let inbound = match codec::decode(&line) {
            Ok(i) => i,
            Err(e) => {
                match &e.request_id {
                    Some(id) => shared.out.line(&codec::error(id, &e.message)),
                    None => err_line!("keel: ignoring an input line: {}", e.message),
                }
                continue;
            }
        };
        match inbound {
            Inbound::User { content, raw } => {
                if shared.replay {
                    shared
                        .out
                        .line(&output::replay_line(&raw["message"], &shared.session_id));
                }
                shared.queued.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let _ = commands.send(Command::Turn(content));
            }
            Inbound::Request { id, request } => answer(&shared, &commands, id, request),
            Inbound::Response { id, result } => {
                if !shared.link.resolve(&id, result) {
                    crate::debug::log(format!("control_response for unknown or settled request {id}"));
                }
            }
            // keel sends no request the client could still be working on that a cancel would
            // change; the answer, if it comes, is ignored.
            Inbound::Cancel { .. } | Inbound::Nothing => {}
        }
    }
    // The client will answer nothing more: open questions fail now rather than hang.
    shared.link.close();
}

/// Lines of stdin, read on a thread of their own (a blocking read must not stall the turn).
fn stdin_lines() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::stdin().lock().split(b'\n') {
            match line {
                Ok(bytes) => {
                    if tx.send(String::from_utf8_lossy(&bytes).into_owned()).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    err_line!("keel: cannot read stdin: {e}");
                    return;
                }
            }
        }
    });
    rx
}

fn answer(shared: &Shared, commands: &mpsc::UnboundedSender<Command>, id: String, request: ClientRequest) {
    let out = &shared.out;
    match request {
        ClientRequest::Initialize(init) => {
            let _ = commands.send(Command::Initialize { id, init });
        }
        ClientRequest::Interrupt => {
            if let Some(t) = shared.current.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                t.cancel();
            }
            out.line(&codec::success(&id, json!({})));
        }
        ClientRequest::SetPermissionMode(m) => match Mode::parse(&m) {
            Some(mode) if let Some(why) = shared.ceiling.as_ref().and_then(|c| c.refuses(mode)) => {
                out.line(&codec::error(&id, &format!("cannot enter {}: {why}", mode.as_str())));
            }
            Some(mode) => {
                shared.session.set_mode(mode);
                out.line(&codec::success(&id, json!({"mode": mode.as_str()})));
                out.line(&output::status_line(mode.as_str(), &shared.session_id));
            }
            None => out.line(&codec::error(
                &id,
                &format!(
                    "unknown permission mode `{m}`; use one of: {}",
                    Mode::ALL.map(Mode::as_str).join(", ")
                ),
            )),
        },
        ClientRequest::SetModel(Some(model))
            if let Some(why) = shared.model_allowlist.as_ref().and_then(|l| l.refuses(&model)) =>
        {
            out.line(&codec::error(&id, &why));
        }
        ClientRequest::SetModel(model) => match control::route_model(shared.models.as_ref(), model.as_deref()) {
            Ok((change, name)) => {
                let _ = commands.send(Command::SetModel(change));
                out.line(&codec::success(&id, json!({ "model": name })));
            }
            Err(e) => out.line(&codec::error(&id, &e)),
        },
        ClientRequest::McpStatus => {
            let servers: Vec<Value> = shared
                .session
                .mcp
                .as_ref()
                .map(|h| h.statuses().iter().map(crate::mcp::ServerStatus::sdk_json).collect())
                .unwrap_or_default();
            out.line(&codec::success(&id, json!({ "mcpServers": servers })));
        }
        ClientRequest::Unsupported(subtype) => out.line(&codec::error(
            &id,
            &format!("keel does not support the control request `{subtype}`"),
        )),
    }
}
