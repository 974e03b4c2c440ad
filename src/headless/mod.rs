//! Headless mode (`keel -p`): one prompt, no human in the loop, machine-readable output.

pub mod facts;
pub mod out;
pub mod output;
pub mod printer;
pub mod protocol;
pub mod result_fields;
pub mod slash;
pub mod stdin;
pub mod stream;
pub mod turn_stats;

use std::process::ExitCode;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::console::err_line;
use crate::engine::{EngineEvent, NoticeLevel, ResultSubtype, TurnOutcome};
use crate::launch::options::{InputFormat, Options, OutputFormat};
use crate::launch::setup::{self, SetupError};
use out::Out;
use printer::Printer;

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
/// With an argument, a stdin nothing arrives on within a few seconds is left unread
/// (`stdin.rs`), unless `--wait-for-stdin` asks to wait.
pub fn read_prompt(cli: &Options) -> Result<String, HeadlessError> {
    let mut prompt = cli.prompt.clone().unwrap_or_default();
    let wait = if cli.prompt.is_some() && !cli.programs.wait_for_stdin {
        stdin::Wait::FirstByte(stdin::FIRST_BYTE_WAIT)
    } else {
        stdin::Wait::Unbounded
    };
    match stdin::read(wait)? {
        stdin::Input::Terminal => {}
        stdin::Input::Silent(waited) => err_line!("{}", stdin::silent_notice(waited)),
        stdin::Input::Text(buf) => {
            if !buf.trim().is_empty() {
                if !prompt.is_empty() {
                    prompt.push_str("\n\n");
                }
                prompt.push_str(&buf);
            }
        }
    }
    if prompt.trim().is_empty() {
        let mut msg = String::from("no prompt: give one as an argument (keel -p \"...\") or on stdin");
        if !cli.allowed_tools.is_empty()
            || !cli.disallowed_tools.is_empty()
            || !cli.add_dir.is_empty()
            || !cli.mcp_config.is_empty()
        {
            msg.push_str(
                "; note that --allowedTools, --disallowedTools, --add-dir and --mcp-config take every following word, so put \
                 the prompt before them or end their list with --",
            );
        }
        return Err(HeadlessError::Usage(msg));
    }
    Ok(prompt)
}

pub async fn run(cli: Options) -> Result<ExitCode, HeadlessError> {
    let out = Arc::new(Out::default());
    match run_inner(&cli, out.clone()).await {
        Ok(code) => Ok(code),
        Err(e) => {
            // Programs reading JSON still get a result object that says what went wrong.
            if matches!(cli.output_format, OutputFormat::Json | OutputFormat::StreamJson) {
                out.line(&output::startup_error_object(&e.to_string(), None));
            }
            Err(e)
        }
    }
}

/// Checks the combination of headless flags before anything starts.
fn check_flags(cli: &Options) -> Result<(), HeadlessError> {
    let stream_in = cli.programs.input_format == InputFormat::StreamJson;
    if let Some(flag) = cli.programs.unsupported.first() {
        return Err(HeadlessError::Usage(format!("keel does not support {flag}")));
    }
    if cli.print && cli.output_format == OutputFormat::StreamJson && !cli.verbose {
        return Err(HeadlessError::Usage(
            "--output-format stream-json with --print needs --verbose".into(),
        ));
    }
    if stream_in && cli.prompt.is_some() {
        return Err(HeadlessError::Usage(
            "with --input-format stream-json the prompts come as user messages on stdin, not as an argument".into(),
        ));
    }
    if stream_in && cli.output_format != OutputFormat::StreamJson {
        return Err(HeadlessError::Usage(
            "--input-format stream-json needs --output-format stream-json".into(),
        ));
    }
    if cli.include_partial_messages && cli.output_format != OutputFormat::StreamJson {
        return Err(HeadlessError::Usage(
            "--include-partial-messages needs --output-format stream-json".into(),
        ));
    }
    if cli.programs.include_hook_events && cli.output_format != OutputFormat::StreamJson {
        return Err(HeadlessError::Usage(
            "--include-hook-events needs --output-format stream-json".into(),
        ));
    }
    if cli.programs.replay_user_messages && !stream_in {
        return Err(HeadlessError::Usage(
            "--replay-user-messages needs --input-format stream-json and --output-format stream-json".into(),
        ));
    }
    match cli.programs.permission_prompt_tool.as_deref() {
        None => {}
        Some("stdio") if stream_in => {}
        Some("stdio") => {
            return Err(HeadlessError::Usage(
                "--permission-prompt-tool stdio needs --input-format stream-json (the program answers over stdin)"
                    .into(),
            ));
        }
        Some(other) => {
            return Err(HeadlessError::Usage(format!(
                "keel cannot ask an MCP tool for permission yet (--permission-prompt-tool {other}); use `stdio` \
                 with --input-format stream-json"
            )));
        }
    }
    if cli.resume.as_deref() == Some("") {
        return Err(HeadlessError::Usage(
            "--resume needs a session id in headless mode; run `keel --resume` without -p to pick one".into(),
        ));
    }
    Ok(())
}

async fn run_inner(cli: &Options, out: Arc<Out>) -> Result<ExitCode, HeadlessError> {
    check_flags(cli)?;
    let stream_in = cli.programs.input_format == InputFormat::StreamJson;
    let prompt = if stream_in { String::new() } else { read_prompt(cli)? };
    // A second signal ends keel even where the first cannot be acted on (work stuck in a
    // blocking call, stdout not being read).
    if let Err(e) = crate::shutdown::install_forced_exit() {
        err_line!("keel: warning: cannot install the signal handlers for a forced exit: {e}");
    }
    let prepared = setup::prepare(cli)?;
    for w in &prepared.warnings {
        err_line!("keel: warning: {w}");
    }
    let mut warnings = prepared.warnings.clone();
    let mcp = prepared.mcp.clone();
    if stream_in {
        // The program's in-process servers connect once its messages can be read.
        mcp.expect_relays();
    }
    let prompt = crate::mcp::startup::headless(&mcp, prompt)
        .await
        .map_err(HeadlessError::Usage)?;
    let cancel = CancellationToken::new();
    let signal = watch_signals(cancel.clone());
    if stream_in {
        let code = stream::run(cli, prepared, out, cancel).await;
        mcp.shutdown().await;
        return Ok(match signal.triggered() {
            Some(sig) => ExitCode::from((128 + sig) as u8),
            None => code,
        });
    }
    let key_source = protocol::offer::key_source(prepared.catalog.as_deref(), &prepared.model_spec);
    let mut engine = prepared.engine;
    let session_id = engine.session_id().to_string();
    let mut printer = Printer::new(out.clone(), cli.output_format, cli.verbose, session_id.clone());
    printer.include_hook_events = cli.programs.include_hook_events;
    printer.partial = cli.include_partial_messages;
    let stats = printer.stats.clone();
    if cli.output_format == OutputFormat::StreamJson {
        let cwd = engine.cwd().display().to_string();
        let inventory = engine.inventory();
        out.line(&output::init_line(&output::InitInfo {
            session_id: &session_id,
            cwd: &cwd,
            tools: engine.tool_names(),
            mcp_servers: mcp.init_json(),
            model: engine.model(),
            permission_mode: prepared.permission_mode.as_str(),
            api_key_source: &key_source,
            agents: inventory.agents.iter().map(String::as_str).collect(),
            slash_commands: inventory.slash_commands.iter().map(String::as_str).collect(),
            skills: inventory.skills.iter().map(String::as_str).collect(),
            plugins: inventory.plugins.clone(),
            safe_mode: inventory.safe_mode,
            facts: facts::init_fields(&engine),
        }));
    }

    // Nobody reads the output any more: stop the turn, nothing it does can be seen.
    let gone = out.gone();
    let turn_cancel = cancel.clone();
    tokio::spawn(async move {
        gone.cancelled().await;
        turn_cancel.cancel();
    });
    let printing = tokio::spawn(printer.drain(prepared.events));
    engine
        .session_start(if prepared.resumed { "resume" } else { "startup" })
        .await;
    stats.lock().unwrap_or_else(|p| p.into_inner()).next_turn();
    let outcome = match slash::plan(&mut engine, &prompt, &cancel).await {
        slash::Plan::Turn(content) => engine.run_turn(content, cancel.clone()).await,
        slash::Plan::Compact(instructions) => engine.compact_turn(instructions.as_deref(), &cancel).await,
        slash::Plan::Answer(text) => slash::finish(&engine, text, false),
        slash::Plan::Fail(message) => slash::finish(&engine, message, true),
    };
    // The session ends with the turn: nothing it started in the background may outlive it.
    engine.end_processes();
    mcp.shutdown().await;
    // The drain task ends at TurnFinished; a panic in it only loses progress lines.
    let leftover = printing.await.ok();
    engine.session_end("other").await;
    let s = engine.compactor_stats();
    tracing::debug!(
        views = s.views,
        rebuilds = s.rebuilds,
        consolidations = s.consolidations,
        view_copies = s.view_copies,
        cpu_ms = s.cpu.as_secs_f64() * 1000.0,
        rebuild_cpu_ms = s.rebuild_cpu.as_secs_f64() * 1000.0,
        wall_ms = s.time.as_secs_f64() * 1000.0,
        "compactor"
    );
    // Problems of SessionEnd hooks still reach the user, after the result.
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
        // `keel … | head -1`: the reader is gone; end quietly, as a pipeline writer does.
        return Ok(ExitCode::from(141));
    }
    // Lines the transcript still holds back (a full disk) get a last try; what stays unsaved
    // is part of the result, so a script sees that `--continue` will lack it.
    let report = engine.report();
    if let Some(unsaved) = report.unsaved.clone() {
        if cli.output_format == OutputFormat::Text {
            err_line!("keel: warning: {unsaved}");
        }
        warnings.push(unsaved);
    }
    // Told as notices already (stderr); the result names them too.
    warnings.extend(report.undo.iter().cloned());
    let provider = engine.provider();
    let result = {
        let stats = stats.lock().unwrap_or_else(|p| p.into_inner());
        let ctx = output::ResultContext {
            stats: &stats,
            since_last: &report.totals.by_model,
            result_index: 0,
            queued_turns: 0,
            provider: provider.name(),
        };
        output::result_object(&outcome, &report.session_id, &report.totals, &report.denials, &ctx)
    };
    let mut result = output::with_warnings(result, &warnings);
    if let Some(m) = result.as_object_mut() {
        m.insert("verification".into(), report.verification.clone());
    }
    match cli.output_format {
        OutputFormat::Text => {
            if let Some(line) = &report.verification_line {
                err_line!("{line}");
            }
            if outcome.is_error {
                err_line!("Error: {}", text_error(&outcome, cli.max_turns));
            } else {
                out.text(&outcome.result);
            }
        }
        OutputFormat::Json | OutputFormat::StreamJson => {
            out.line(&result);
            if outcome.is_error && !outcome.interrupted {
                err_line!("Error: {}", text_error(&outcome, cli.max_turns));
            }
        }
    }
    if let Some(line) = denial_note(&report.denials, report.mode) {
        err_line!("{line}");
    }
    let code = match signal.triggered() {
        Some(sig) => 128 + sig,
        None if outcome.is_error => 1,
        None => 0,
    };
    Ok(ExitCode::from(code as u8))
}

/// One stderr line when tool calls were denied because nobody could approve them: how many,
/// and how to allow them next time.
fn denial_note(denials: &[crate::engine::session::Denial], mode: crate::permissions::Mode) -> Option<String> {
    if denials.is_empty() || mode != crate::permissions::Mode::Default {
        return None;
    }
    let mut tools: Vec<&str> = denials.iter().map(|d| d.tool_name.as_str()).collect();
    tools.sort_unstable();
    tools.dedup();
    let n = denials.len();
    Some(format!(
        "keel: {n} tool call{} denied ({}); allow them with --allowedTools (e.g. --allowedTools \"{}\"), a \
         permissions.allow rule in .claude/settings.json, or --permission-mode acceptEdits",
        if n == 1 { " was" } else { "s were" },
        tools.join(", "),
        tools[0]
    ))
}

fn text_error(outcome: &TurnOutcome, max_turns: Option<u32>) -> String {
    match (outcome.subtype, max_turns) {
        (ResultSubtype::ErrorMaxTurns, Some(n)) => format!("Reached max turns ({n})"),
        _ => outcome.result.clone(),
    }
}

/// Cancels the turn on SIGINT, SIGTERM or SIGHUP (a closed terminal, a dropped ssh session)
/// and remembers which signal came.
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
        let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return;
        };
        crate::shutdown::set_graceful(true);
        let sig = tokio::select! {
            _ = int.recv() => libc::SIGINT,
            _ = term.recv() => libc::SIGTERM,
            _ = hup.recv() => libc::SIGHUP,
        };
        flag.store(sig, Ordering::SeqCst);
        crate::shutdown::note_stop_signal(sig);
        cancel.cancel();
    });
    SignalWatch(which)
}
