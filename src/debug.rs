//! Diagnostics through `tracing`: spans for the session, each turn, each provider request
//! (attempts, retries, timings), each tool call, hook and compaction, and events inside them.
//!
//! Off by default: no subscriber is installed, so every span and event is a cheap disabled
//! check and nothing is formatted. `--debug[=FILTER]`, `KEEL_LOG=FILTER` (or the older
//! `KEEL_DEBUG=1`) turn it on. Everything then goes to the session's own log file,
//! `<session dir>/debug.log`, so one file explains a failure; lines written before the session
//! is known (settings, setup) are buffered and land at its top. Only `--debug` in headless mode
//! also copies the lines to stderr; the terminal UI never writes there.
//!
//! Credentials in the lines are redacted before they are kept (`crate::redact`).
//!
//! FILTER is a comma-separated list of `target=level` directives (`keel::provider=trace`), bare
//! levels (`debug`), or bare keel module names (`provider,hooks`: everything from them).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::console::err_line;

/// The filter used by a bare `--debug` or `KEEL_DEBUG=1`.
pub const DEFAULT_FILTER: &str = "keel=debug";

/// Most bytes buffered before the session's log file is known.
const EARLY_BUFFER: usize = 4 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum DebugError {
    #[error("invalid debug filter `{filter}`: {reason}")]
    Filter { filter: String, reason: String },
}

enum Target {
    Buffer(Vec<u8>),
    File(std::fs::File),
    /// The file could not be opened; lines are dropped.
    Gone,
}

struct Sink {
    target: Target,
    path: Option<PathBuf>,
}

#[derive(Clone)]
struct SessionLog(Arc<Mutex<Sink>>);

impl Write for SessionLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // One write is one formatted event: credentials in it are redacted before it is kept.
        // Bytes that are not UTF-8 are kept lossily: a credential next to them still goes.
        let text = String::from_utf8_lossy(buf);
        let (redacted, _) = crate::redact::redact(&text);
        let bytes = redacted.as_bytes();
        let mut sink = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match &mut sink.target {
            Target::Buffer(b) if b.len() + bytes.len() <= EARLY_BUFFER => b.extend_from_slice(bytes),
            Target::Buffer(_) | Target::Gone => {}
            Target::File(f) => f.write_all(bytes)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

static LOG: OnceLock<SessionLog> = OnceLock::new();

/// The filter asked for: `--debug[=FILTER]` first, then `KEEL_LOG`, then `KEEL_DEBUG`.
pub fn requested(cli_debug: Option<&str>) -> Option<String> {
    if let Some(f) = cli_debug {
        return Some(if f.trim().is_empty() { DEFAULT_FILTER } else { f }.to_string());
    }
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    if let Some(f) = var("KEEL_LOG") {
        return Some(f);
    }
    var("KEEL_DEBUG")
        .filter(|v| v != "0")
        .map(|_| DEFAULT_FILTER.to_string())
}

/// Turns a user's filter into `tracing` targets (see the module docs for the syntax).
pub fn parse_filter(filter: &str) -> Result<Targets, DebugError> {
    const LEVELS: [&str; 6] = ["trace", "debug", "info", "warn", "error", "off"];
    let directives: Vec<String> = filter
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| {
            let bare = !d.contains('=') && !d.contains("::") && d != "keel";
            if bare && LEVELS.contains(&d.to_ascii_lowercase().as_str()) {
                format!("keel={d}")
            } else if bare {
                format!("keel::{d}=trace")
            } else {
                d.to_string()
            }
        })
        .collect();
    directives.join(",").parse::<Targets>().map_err(|e| DebugError::Filter {
        filter: filter.to_string(),
        reason: e.to_string(),
    })
}

/// Installs the subscriber when diagnostics were asked for; `stderr` also copies the lines
/// there (headless `--debug`). Returns whether tracing is on.
pub fn init(cli_debug: Option<&str>, stderr: bool) -> Result<bool, DebugError> {
    let Some(filter) = requested(cli_debug) else {
        return Ok(false);
    };
    let targets = parse_filter(&filter)?;
    let log = LOG
        .get_or_init(|| {
            SessionLog(Arc::new(Mutex::new(Sink {
                target: Target::Buffer(Vec::new()),
                path: None,
            })))
        })
        .clone();
    let file_layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_span_events(FmtSpan::CLOSE)
        .with_writer(move || log.clone());
    let stderr_layer = stderr.then(|| {
        tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_span_events(FmtSpan::CLOSE)
            // Events quote tool inputs, file names and server answers: escaped like every line.
            .with_writer(crate::console::SafeStderr::default)
    });
    // A second init (tests, an embedding program) keeps the first subscriber.
    let _ = tracing_subscriber::registry()
        .with(file_layer)
        .with(stderr_layer)
        .with(targets)
        .try_init();
    Ok(true)
}

/// Points the log at the session's file `<session_dir>/debug.log` (appending, so a resumed
/// session keeps one file) and writes what was buffered so far. Returns the path when tracing
/// is on.
pub fn attach_session(session_dir: &Path) -> Option<PathBuf> {
    let log = LOG.get()?;
    let mut sink = log.0.lock().unwrap_or_else(|p| p.into_inner());
    let path = session_dir.join("debug.log");
    if sink.path.as_deref() == Some(path.as_path()) {
        return Some(path);
    }
    let opened = std::fs::create_dir_all(session_dir)
        .and_then(|_| std::fs::OpenOptions::new().create(true).append(true).open(&path));
    let previous = std::mem::replace(&mut sink.target, Target::Gone);
    sink.target = match opened {
        Ok(mut f) => {
            if let Target::Buffer(b) = previous {
                let _ = f.write_all(&b);
            }
            Target::File(f)
        }
        Err(e) => {
            err_line!("keel: warning: cannot open the debug log {}: {e}", path.display());
            Target::Gone
        }
    };
    sink.path = Some(path.clone());
    Some(path)
}

/// A debug event (kept for callers of the earlier printer).
pub fn log(message: impl AsRef<str>) {
    tracing::debug!(target: "keel", "{}", message.as_ref());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_line_that_is_not_utf8_is_still_redacted() {
        let sink = Sink {
            target: Target::Buffer(Vec::new()),
            path: None,
        };
        let mut log = SessionLog(Arc::new(Mutex::new(sink)));
        let mut line = b"\xff\xfe raw bytes then Authorization: Bearer abcdef0123456789\n".to_vec();
        line.extend_from_slice(b"x-api-key: 0123456789abcdef\n");
        assert_eq!(log.write(&line).unwrap(), line.len());
        let kept = match &log.0.lock().unwrap().target {
            Target::Buffer(b) => String::from_utf8(b.clone()).unwrap(),
            _ => panic!("the early buffer is the target"),
        };
        assert!(!kept.contains("abcdef0123456789"), "{kept}");
        assert!(!kept.contains("0123456789abcdef"), "{kept}");
        assert!(kept.contains("Bearer [REDACTED:header-credential]"), "{kept}");
    }

    #[test]
    fn filters_accept_levels_modules_and_directives() {
        for ok in [
            "debug",
            "provider,hooks",
            "keel::provider=trace,keel=info",
            "keel=warn",
            "TRACE",
        ] {
            parse_filter(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        let err = parse_filter("keel=loud").unwrap_err().to_string();
        assert!(err.contains("invalid debug filter `keel=loud`"), "{err}");
    }
}
