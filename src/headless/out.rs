//! Headless stdout: whole lines, flushed; a reader that went away (`keel … | head -1`) ends
//! output quietly instead of a panic, and is reported once through a token.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::console;

#[derive(Default)]
pub struct Out {
    closed: AtomicBool,
    gone: CancellationToken,
}

impl Out {
    /// One JSON value as one line (characters a terminal may obey written as JSON escapes).
    pub fn line(&self, v: &Value) {
        self.write(&console::json_safe(v.to_string()));
    }

    /// Text followed by a newline: the model's answer, escaped when stdout is a terminal and
    /// byte for byte when it is redirected.
    pub fn text(&self, s: &str) {
        self.write(&console::for_stream(s, console::stdout_is_terminal()));
    }

    fn write(&self, s: &str) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        let mut out = std::io::stdout().lock();
        let ok = out
            .write_all(s.as_bytes())
            .and_then(|_| out.write_all(b"\n"))
            .and_then(|_| out.flush());
        if ok.is_err() {
            self.closed.store(true, Ordering::SeqCst);
            self.gone.cancel();
        }
    }

    /// Whether a write failed because nobody reads stdout any more.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Cancelled when stdout goes away.
    pub fn gone(&self) -> CancellationToken {
        self.gone.clone()
    }
}
