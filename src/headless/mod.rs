//! Headless mode (`keel -p`): one prompt, no human in the loop, machine-readable output.

pub mod output;

use std::collections::HashMap;
use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::cli::args::{Cli, OutputFormat};
use crate::cli::setup::{self, SetupError};
use crate::engine::{EngineEvent, NoticeLevel, ResultSubtype, TurnOutcome};
use crate::message::ContentBlock;

/// Largest prompt accepted on stdin.
const MAX_STDIN: u64 = 10 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum HeadlessError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("{0}")]
    Usage(String),
    #[error("cannot read the prompt from stdin: {0}")]
    Stdin(std::io::Error),
}

/// Reads the prompt from the argument and/or stdin (stdin is appended after the argument).
pub fn read_prompt(cli: &Cli) -> Result<String, HeadlessError> {
    let mut prompt = cli.prompt.clone().unwrap_or_default();
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let mut buf = String::new();
        stdin
            .lock()
            .take(MAX_STDIN + 1)
            .read_to_string(&mut buf)
            .map_err(HeadlessError::Stdin)?;
        if buf.len() as u64 > MAX_STDIN {
            return Err(HeadlessError::Usage("the prompt on stdin is larger than 10 MB".into()));
        }
        if !buf.trim().is_empty() {
            if !prompt.is_empty() {
                prompt.push_str("\n\n");
            }
            prompt.push_str(&buf);
        }
    }
    if prompt.trim().is_empty() {
        let mut msg = String::from("no prompt: give one as an argument (keel -p \"...\") or on stdin");
        if !cli.allowed_tools.is_empty() || !cli.disallowed_tools.is_empty() || !cli.add_dir.is_empty() {
            msg.push_str(
                "; note that --allowedTools, --disallowedTools and --add-dir take every following word, so put \
                 the prompt before them or end their list with --",
            );
        }
        return Err(HeadlessError::Usage(msg));
    }
    Ok(prompt)
}

pub async fn run(cli: Cli) -> Result<ExitCode, HeadlessError> {
    if cli.output_format == OutputFormat::StreamJson && !cli.verbose {
        return Err(HeadlessError::Usage(
            "--output-format stream-json with --print needs --verbose".into(),
        ));
    }
    if cli.include_partial_messages && cli.output_format != OutputFormat::StreamJson {
        return Err(HeadlessError::Usage(
            "--include-partial-messages needs --output-format stream-json".into(),
        ));
    }
    let prompt = read_prompt(&cli)?;
    let prepared = setup::prepare(&cli)?;
    for w in &prepared.warnings {
        eprintln!("keel: warning: {w}");
    }
    let mut engine = prepared.engine;
    let session_id = engine.session.id.clone();
    let printer = Printer {
        format: cli.output_format,
        verbose: cli.verbose,
        session_id: session_id.clone(),
        structured: HashMap::new(),
    };
    if printer.format == OutputFormat::StreamJson {
        let cwd = engine.session.shared.cwd.display().to_string();
        printer.line(&output::init_line(&output::InitInfo {
            session_id: &session_id,
            cwd: &cwd,
            tools: engine.registry.names(),
            model: &engine.config.model,
            permission_mode: prepared.permission_mode.as_str(),
            api_key_source: api_key_source(&cli),
        }));
    }

    let cancel = CancellationToken::new();
    let signal = watch_signals(cancel.clone());
    let printing = tokio::spawn(printer.drain(prepared.events));
    engine
        .session_start(if prepared.resumed { "resume" } else { "startup" })
        .await;
    let outcome = match compact_command(&prompt) {
        Some(instructions) => engine.compact_turn(instructions, &cancel).await,
        None => engine.run_turn(vec![ContentBlock::text(prompt)], cancel.clone()).await,
    };
    // The session ends with the turn: nothing it started in the background may outlive it.
    engine.session.shared.end();
    // The drain task ends at TurnFinished; a panic in it only loses progress lines.
    let leftover = printing.await.ok();
    engine.session_end("other").await;
    let s = engine.compactor.stats;
    crate::debug::log(format!(
        "compactor: {} views, {} rebuilds, {:.2} ms CPU ({:.2} ms rebuilding), {:.2} ms wall",
        s.views,
        s.rebuilds,
        s.cpu.as_secs_f64() * 1000.0,
        s.rebuild_cpu.as_secs_f64() * 1000.0,
        s.time.as_secs_f64() * 1000.0
    ));
    // Problems of SessionEnd hooks still reach the user, after the result.
    if let Some((_, mut rx)) = leftover {
        while let Ok(ev) = rx.try_recv() {
            if let EngineEvent::Notice { level, message } = ev
                && level != NoticeLevel::Info
            {
                eprintln!("keel: {message}");
            }
        }
    }
    let result = output::result_object(&outcome, &session_id, &engine.session.totals, &engine.session.denials);
    match cli.output_format {
        OutputFormat::Text => {
            if outcome.is_error {
                eprintln!("Error: {}", text_error(&outcome, cli.max_turns));
            } else {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", outcome.result);
            }
        }
        OutputFormat::Json | OutputFormat::StreamJson => {
            println!("{result}");
            if outcome.is_error && !outcome.interrupted {
                eprintln!("Error: {}", text_error(&outcome, cli.max_turns));
            }
        }
    }
    let code = match signal.triggered() {
        Some(sig) => 128 + sig,
        None if outcome.is_error => 1,
        None => 0,
    };
    Ok(ExitCode::from(code as u8))
}

/// `/compact [instructions]`: compact the (continued) session instead of running a turn.
fn compact_command(prompt: &str) -> Option<Option<&str>> {
    let rest = prompt.trim().strip_prefix("/compact")?;
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = rest.trim();
    Some((!rest.is_empty()).then_some(rest))
}

fn text_error(outcome: &TurnOutcome, max_turns: Option<u32>) -> String {
    match (outcome.subtype, max_turns) {
        (ResultSubtype::ErrorMaxTurns, Some(n)) => format!("Reached max turns ({n})"),
        _ => outcome.result.clone(),
    }
}

fn api_key_source(cli: &Cli) -> &'static str {
    use crate::cli::args::ProviderKind;
    let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.is_empty());
    match cli.provider {
        Some(ProviderKind::Script) => "none",
        Some(ProviderKind::OpenAi | ProviderKind::OpenAiResponses) if set("OPENAI_API_KEY") => "OPENAI_API_KEY",
        Some(ProviderKind::OpenAi | ProviderKind::OpenAiResponses) => "none",
        _ if set("ANTHROPIC_API_KEY") => "ANTHROPIC_API_KEY",
        _ if set("ANTHROPIC_AUTH_TOKEN") => "ANTHROPIC_AUTH_TOKEN",
        _ => "none",
    }
}

struct Printer {
    format: OutputFormat,
    verbose: bool,
    session_id: String,
    structured: HashMap<String, Value>,
}

impl Printer {
    fn line(&self, v: &Value) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{v}");
        let _ = out.flush();
    }

    /// Consumes engine events until the turn finishes.
    async fn drain(mut self, mut events: UnboundedReceiver<EngineEvent>) -> (Self, UnboundedReceiver<EngineEvent>) {
        while let Some(event) = events.recv().await {
            if let EngineEvent::TurnFinished(_) = event {
                break;
            }
            self.handle(event);
        }
        (self, events)
    }

    fn handle(&mut self, event: EngineEvent) {
        let stream = self.format == OutputFormat::StreamJson;
        match event {
            EngineEvent::Assistant {
                id,
                model,
                message,
                stop_reason,
                usage,
            } if stream => {
                for l in output::assistant_lines(&id, &model, &message, &stop_reason, &usage, &self.session_id) {
                    self.line(&l);
                }
            }
            EngineEvent::ToolFinished { id, structured, .. } if stream => {
                self.structured.insert(id, structured);
            }
            EngineEvent::ToolResults(message) if stream => {
                for block in &message.content {
                    let structured = match block {
                        ContentBlock::ToolResult { tool_use_id, .. } => self.structured.remove(tool_use_id),
                        _ => None,
                    };
                    self.line(&output::tool_result_line(block, structured.as_ref(), &self.session_id));
                }
            }
            EngineEvent::Assistant { message, .. } if self.verbose && !stream => {
                let text = message.text();
                if !text.trim().is_empty() && message.tool_uses().next().is_some() {
                    eprintln!("{}", text.trim_end());
                }
            }
            EngineEvent::ToolStarted { name, input, .. } if self.verbose && !stream => {
                eprintln!("→ {name}({})", crate::tools::summarize_input(&input));
            }
            EngineEvent::ToolFinished { content, is_error, .. } if self.verbose && !stream => {
                let text = content.as_text();
                let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                let first: String = first.chars().take(100).collect();
                let mark = if is_error { "✗" } else { "✓" };
                eprintln!("  {mark} {first} ({} lines)", text.lines().count());
            }
            EngineEvent::HookRun(run) => {
                if stream {
                    self.line(&output::system_line(
                        "hook_response",
                        serde_json::json!({
                            "hook_event": run.event, "hook_name": run.handler, "exit_code": run.exit_code,
                            "outcome": run.outcome, "decision": run.decision, "duration_ms": run.duration_ms,
                        }),
                        &self.session_id,
                    ));
                } else if self.verbose {
                    let decision = run.decision.map(|d| format!(", {d}")).unwrap_or_default();
                    eprintln!(
                        "  hook {} `{}`: {}{decision} ({} ms)",
                        run.event, run.handler, run.outcome, run.duration_ms
                    );
                }
            }
            EngineEvent::RawStream(v) if stream => {
                self.line(&output::stream_event_line(&v, &self.session_id));
            }
            EngineEvent::Retry {
                attempt,
                max_retries,
                delay_ms,
                status,
                error,
            } => {
                if stream {
                    self.line(&output::retry_line(
                        attempt,
                        max_retries,
                        delay_ms,
                        status,
                        &error,
                        &self.session_id,
                    ));
                }
                // The first retry of a request is always shown: a silent wait looks like a hang.
                if self.verbose || attempt == 1 {
                    eprintln!("keel: {error}; retrying in {delay_ms} ms (attempt {attempt} of {max_retries})");
                }
            }
            EngineEvent::Compacted {
                trigger,
                pre_tokens,
                post_tokens,
            } => {
                if stream {
                    self.line(&output::system_line(
                        "compact_boundary",
                        serde_json::json!({"compact_metadata": {"trigger": trigger.as_str(), "pre_tokens": pre_tokens}}),
                        &self.session_id,
                    ));
                }
                if self.verbose {
                    eprintln!(
                        "keel: compacted the conversation ({}): about {pre_tokens} tokens before, {post_tokens} after",
                        trigger.as_str()
                    );
                }
            }
            EngineEvent::Notice { level, message } => {
                if stream {
                    self.line(&output::system_line(
                        "notice",
                        serde_json::json!({"level": format!("{level:?}").to_lowercase(), "message": message}),
                        &self.session_id,
                    ));
                }
                if level != NoticeLevel::Info || self.verbose {
                    eprintln!("keel: {message}");
                }
            }
            _ => {}
        }
    }
}

/// Cancels the turn on SIGINT/SIGTERM and remembers which signal came.
struct SignalWatch(std::sync::Arc<std::sync::atomic::AtomicI32>);

impl SignalWatch {
    fn triggered(&self) -> Option<i32> {
        match self.0.load(std::sync::atomic::Ordering::SeqCst) {
            0 => None,
            n => Some(n),
        }
    }
}

fn watch_signals(cancel: CancellationToken) -> SignalWatch {
    use std::sync::atomic::{AtomicI32, Ordering};
    use tokio::signal::unix::{SignalKind, signal};
    let which = std::sync::Arc::new(AtomicI32::new(0));
    let flag = which.clone();
    tokio::spawn(async move {
        let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
            return;
        };
        let sig = tokio::select! {
            _ = int.recv() => 2,
            _ = term.recv() => 15,
        };
        flag.store(sig, Ordering::SeqCst);
        cancel.cancel();
    });
    SignalWatch(which)
}

#[cfg(test)]
mod tests {
    use super::compact_command;

    #[test]
    fn compact_command_takes_optional_instructions() {
        assert_eq!(compact_command("/compact"), Some(None));
        assert_eq!(
            compact_command("  /compact  keep the parser notes "),
            Some(Some("keep the parser notes"))
        );
        assert_eq!(compact_command("/compaction please"), None);
        assert_eq!(compact_command("please /compact"), None);
    }
}
