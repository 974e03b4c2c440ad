//! Interactive mode: a ratatui + crossterm terminal UI over the same engine and event stream
//! as headless mode.
//!
//! Three parties: the engine runs in its own task ([`worker`]) and emits `EngineEvent`s; the
//! [`app::App`] turns those, keys and worker replies into state; this module's loop feeds it,
//! carries out its effects and draws — only when something changed, at most once per frame
//! interval, each frame a synchronized update.

pub mod app;
pub mod commands;
pub mod elicit;
pub mod external;
pub mod imports;
pub mod input;
pub mod integration;
pub mod present;
pub mod render;
pub mod sessions;
pub mod shell;
pub mod terminal;
pub mod transcript;
pub mod trust;
pub mod ui;
pub mod worker;

#[cfg(test)]
mod tests;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::EventStream;
use futures_util::StreamExt;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::config::paths;
use crate::console::out_line;
use crate::engine::{EngineEvent, NoticeLevel};
use crate::launch::options::Options;
use crate::launch::setup::{self, SetupError};
use crate::permissions::Mode;
use app::{App, AppInit, Effect, ExitReason};
use worker::{Reply, WorkerConfig};

/// Shortest time between two frames drawn for output (about 30 per second): smooth for
/// streamed text, and a third of the terminal traffic of 60. Input is drawn at once.
const FRAME_INTERVAL: Duration = Duration::from_millis(33);
/// How long exit waits for the engine task to record an interrupted turn.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("interactive mode needs a terminal on stdin and stdout; use -p for scripts and pipes")]
    NotATerminal,
    #[error("terminal error: {0}")]
    Terminal(#[from] std::io::Error),
    #[error("keel stopped after an internal error (details above)")]
    Panicked,
}

pub async fn run(cli: Options) -> Result<ExitCode, TuiError> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(TuiError::NotATerminal);
    }
    // Before setup: nothing of the project's own settings may run until this is answered.
    let Some(trust) = trust::decide(&cli)? else {
        return Ok(ExitCode::SUCCESS);
    };
    // Also before setup, which loads the instruction files: imports from outside the project.
    if let (Some(keel_home), Ok(cwd)) = (
        paths::keel_home(),
        std::env::current_dir().and_then(|d| d.canonicalize()),
    ) && !imports::decide(&cwd, dirs::home_dir().as_deref(), &keel_home)?
    {
        return Ok(ExitCode::SUCCESS);
    }
    let prepared = setup::prepare_with(&cli, trust)?;
    // Asked before the interface takes the terminal: a plain question, answered once per project.
    let mcp = prepared.mcp.clone();
    let approval_notes = match paths::keel_home() {
        Some(home) => crate::mcp::startup::ask_approvals(&mcp, &prepared.mcp_pending, &home, prepared.engine.cwd()),
        None => Vec::new(),
    };
    render::theme::set_truecolor(render::theme::truecolor_from_env());
    render::highlight::preload();

    let engine = prepared.engine;
    let cwd = engine.cwd().to_path_buf();
    let keel_home = paths::keel_home();
    let project_dir = keel_home
        .as_deref()
        .map(|h| paths::project_dir(h, &cwd))
        .unwrap_or_else(|| cwd.clone());
    let session_id = engine.session_id().to_string();
    let mut app = App::new(AppInit {
        cwd: cwd.clone(),
        model: prepared.model_spec.clone(),
        session_id: session_id.clone(),
        shared: engine.services(),
        bypass_available: prepared.permission_mode == Mode::BypassPermissions
            || (cli.allow_dangerously_skip_permissions && engine.mode_refused(Mode::BypassPermissions).is_none()),
        mode_ceiling: engine.mode_ceiling().map(|c| c.mode),
        harness: engine.harness().clone(),
        project_dir: project_dir.clone(),
    });
    if let Some(catalog) = &prepared.catalog {
        let configured: Vec<String> = prepared
            .fallback_model
            .iter()
            .flat_map(|f| crate::provider::fallback::chain(f))
            .collect();
        app.status.model_choices = catalog.choices(&prepared.model_spec, &configured);
    }
    // A compacted session shows its earlier conversation too (the engine goes on from the
    // hand-off).
    let resumed = transcript::resumed::read(&engine.transcript_path());
    match &resumed.conversation {
        Some(all) => transcript::history::fill(&mut app.transcript, all, &cwd),
        None => transcript::history::fill(&mut app.transcript, engine.history(), &cwd),
    }
    app.restore_figures(resumed.figures);
    app.editor.set_history(input::history::load(&project_dir));
    for w in prepared.warnings.iter().chain(&approval_notes) {
        app.notice(NoticeLevel::Warning, w.clone());
    }

    let (job_tx, job_rx) = mpsc::unbounded_channel();
    let (reply_tx, reply_rx) = mpsc::unbounded_channel();
    // `/clear` builds the next session's prompt the same way (`--system-prompt-file` included).
    let prompt_texts = setup::system_prompt_texts(&cli)?;
    let config = WorkerConfig {
        place: sessions::SessionPlace {
            cwd: cwd.clone(),
            project_dir,
            persist: !cli.no_session_persistence,
        },
        system_prompt: prompt_texts.0,
        append_system_prompt: prompt_texts.1,
        resumed: prepared.resumed,
        models: match (&prepared.catalog, &keel_home) {
            (Some(catalog), Some(home)) => Some(worker::ModelSwitch {
                catalog: catalog.clone(),
                fallback: prepared.fallback_model.clone(),
                settings_path: home.join("settings.json"),
            }),
            _ => None,
        },
    };
    let worker = tokio::spawn(worker::run(engine, job_rx, reply_tx, config));

    // `keel --resume` without an id: pick the session to resume.
    if cli.resume.as_deref() == Some("") {
        app.submit_text("/resume");
    }
    if let Some(prompt) = cli.prompt.as_deref().filter(|p| !p.trim().is_empty()) {
        app.submit_text(prompt);
    }

    let mut tui = terminal::Tui::enter()?;
    let result = event_loop(&mut tui, &mut app, prepared.events, reply_rx, &job_tx).await;
    // Nothing waits for a signal any more: one now (a stuck shutdown) ends keel at once.
    crate::shutdown::set_graceful(false);

    // Shutdown: stop the running job and let the engine record it before the terminal goes.
    if let Some(b) = &app.busy {
        b.cancel.cancel();
    }
    app.drop_pending();
    drop(job_tx);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, worker).await;
    mcp.shutdown().await;
    drop(tui);

    let reason = result?;
    if terminal::panicked() {
        return Err(TuiError::Panicked);
    }
    if !cli.no_session_persistence {
        out_line!("Session saved. Resume it with: keel --resume {}", app.status.session_id);
    }
    Ok(match reason {
        ExitReason::User => ExitCode::SUCCESS,
        ExitReason::Signal(n) => ExitCode::from((128 + n) as u8),
    })
}

async fn event_loop(
    tui: &mut terminal::Tui,
    app: &mut App,
    mut events: mpsc::UnboundedReceiver<EngineEvent>,
    mut replies: mpsc::UnboundedReceiver<Reply>,
    jobs: &mpsc::UnboundedSender<worker::Job>,
) -> Result<ExitReason, TuiError> {
    let mut keys = EventStream::new();
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    // The first signal ends the loop below; a second one, if keel is stuck before it can act
    // on the first or while shutting down, ends the process (terminal restored).
    crate::shutdown::set_graceful(true);
    if let Err(e) = crate::shutdown::install_forced_exit() {
        tracing::warn!("cannot install the forced exit on a second signal: {e}");
    }
    let (files_tx, mut files_rx) = mpsc::unbounded_channel::<Arc<Vec<String>>>();
    let mut last_draw: Option<Instant> = None;
    let mut next_live_poll = Instant::now();
    let mut events_open = true;
    // A key or paste arrived: its effect is drawn without waiting for the frame interval.
    let mut input_pending = false;
    loop {
        if terminal::panicked() {
            return Err(TuiError::Panicked);
        }
        for effect in app.take_effects() {
            match effect {
                Effect::Job(job) => {
                    if jobs.send(job).is_err() {
                        return Err(TuiError::Panicked);
                    }
                }
                Effect::Edit(path) => {
                    // The editor owns the terminal until it exits; keys are not read meanwhile.
                    drop(keys);
                    tui.suspend();
                    let outcome = external::edit_file(&path).await;
                    tui.resume()?;
                    keys = EventStream::new();
                    app.full_redraw = true;
                    match outcome {
                        Ok(()) => app.notice(
                            NoticeLevel::Info,
                            format!("Edited {}; the next session loads it.", path.display()),
                        ),
                        Err(e) => app.notice(NoticeLevel::Error, e),
                    }
                }
                Effect::EditPrompt(text) => {
                    drop(keys);
                    tui.suspend();
                    let outcome = external::edit_prompt(&text).await;
                    tui.resume()?;
                    keys = EventStream::new();
                    app.full_redraw = true;
                    match outcome {
                        Ok(edited) => app.set_prompt(&edited),
                        Err(e) => app.notice(NoticeLevel::Error, e),
                    }
                }
                Effect::RememberPrompt(text) => {
                    if let Err(e) = input::history::append(&app.project_dir, &text) {
                        app.notice(
                            NoticeLevel::Warning,
                            format!("the prompt was not added to the history file: {e}"),
                        );
                    }
                }
                Effect::IndexFiles => {
                    let root = app.cwd.clone();
                    let tx = files_tx.clone();
                    tokio::task::spawn_blocking(move || {
                        let _ = tx.send(input::completion::index_files(&root));
                    });
                }
            }
        }
        if let Some(reason) = app.exit {
            return Ok(reason);
        }
        if app.full_redraw {
            app.full_redraw = false;
            tui.clear()?;
            app.dirty = true;
        }
        let now = Instant::now();
        // Draw when something changed and the frame interval has passed; otherwise wake up
        // when it has. Nothing changed and nothing running: sleep until an input arrives.
        let mut deadline = app.next_wakeup(now);
        if app.dirty {
            let due = if std::mem::take(&mut input_pending) {
                now
            } else {
                last_draw.map_or(now, |t| t + FRAME_INTERVAL)
            };
            if due <= now {
                tui.draw(|f| ui::draw(f, app, now))?;
                app.dirty = false;
                last_draw = Some(now);
            } else {
                deadline = Some(deadline.map_or(due, |d| d.min(due)));
            }
        }
        let sleep = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            ev = keys.next() => match ev {
                Some(Ok(ev)) => {
                    app.on_terminal_event(ev, Instant::now());
                    input_pending = true;
                    // Keys come first, but steady typing on a slow machine must not starve the
                    // stream (nor hold back a dialog): take what the engine has already sent.
                    take_ready(app, &mut events, &mut replies);
                }
                Some(Err(e)) => return Err(TuiError::Terminal(e)),
                None => return Ok(ExitReason::User),
            },
            ev = events.recv(), if events_open => match ev {
                Some(ev) => {
                    app.on_engine_event(ev);
                    // Take what else is already there: one frame for a burst of deltas.
                    while let Ok(ev) = events.try_recv() {
                        app.on_engine_event(ev);
                    }
                }
                None => events_open = false,
            },
            reply = replies.recv() => match reply {
                Some(r) => {
                    while let Ok(ev) = events.try_recv() {
                        app.on_engine_event(ev);
                    }
                    app.on_reply(r);
                }
                None => {
                    app.notice(NoticeLevel::Error, "the engine stopped unexpectedly");
                    return Err(TuiError::Panicked);
                }
            },
            Some(files) = files_rx.recv() => app.set_files(files),
            _ = sigterm.recv() => return Ok(ExitReason::Signal(15)),
            _ = sighup.recv() => return Ok(ExitReason::Signal(1)),
            _ = sigint.recv() => return Ok(ExitReason::Signal(2)),
            _ = sleep => {
                let now = Instant::now();
                app.tick(now);
                if now >= next_live_poll {
                    next_live_poll = now + app::LIVE_POLL;
                    poll_live_output(app, now);
                }
            }
        }
    }
}

/// Engine events and a worker reply that are already waiting, in the order the loop would
/// take them (events first, so a reply never overtakes its turn's events).
fn take_ready(
    app: &mut App,
    events: &mut mpsc::UnboundedReceiver<EngineEvent>,
    replies: &mut mpsc::UnboundedReceiver<Reply>,
) {
    while let Ok(ev) = events.try_recv() {
        app.on_engine_event(ev);
    }
    if let Ok(r) = replies.try_recv() {
        // Events sent just before the reply.
        while let Ok(ev) = events.try_recv() {
            app.on_engine_event(ev);
        }
        app.on_reply(r);
    }
}

/// Reads what running commands wrote since the last poll (small reads, bounded per poll).
fn poll_live_output(app: &mut App, now: Instant) {
    for src in app.live_sources() {
        if let Ok((text, offset)) = crate::tools::bash::output::read_new(&src.path, src.offset, app::LIVE_READ_MAX) {
            app.on_live_output(&src.id, &text, offset, now);
        }
    }
}
