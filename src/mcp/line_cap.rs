//! A bound on one message from a stdio server. The client library drops a line over its own
//! limit and reads on, so the request that line answered would wait for the whole tool timeout
//! and then say only that the server did not answer. keel reads the server's stdout through
//! [`LineCap`] instead: a line past the bound ends the connection at once, and the reason is
//! kept where the failed call's message reads it.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The default bound on one message (the client library's own, so nothing it accepted before
/// is refused now).
pub const DEFAULT_MAX_LINE: usize = 16 * 1024 * 1024;

/// Why the connection was ended, once it was.
#[derive(Clone, Default)]
pub struct Tripped(Arc<Mutex<Option<String>>>);

impl Tripped {
    pub fn reason(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, reason: String) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason);
    }
}

/// `KEEL_MCP_MAX_MESSAGE_MB`, else [`DEFAULT_MAX_LINE`]; a value that is not a positive whole
/// number of megabytes is an error that names it.
pub fn max_line_from_env() -> Result<usize, String> {
    match std::env::var("KEEL_MCP_MAX_MESSAGE_MB")
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        None => Ok(DEFAULT_MAX_LINE),
        Some(raw) => raw
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|mb| *mb > 0)
            .map(|mb| mb.saturating_mul(1024 * 1024))
            .ok_or_else(|| format!("KEEL_MCP_MAX_MESSAGE_MB must be a whole number of megabytes, got `{raw}`")),
    }
}

/// Reads `inner`, failing the read once a line grows past `max` bytes (its newline aside).
pub struct LineCap<R> {
    inner: R,
    max: usize,
    /// Bytes of the current line so far.
    run: usize,
    tripped: Tripped,
}

impl<R> LineCap<R> {
    pub fn new(inner: R, max: usize, tripped: Tripped) -> LineCap<R> {
        LineCap {
            inner,
            max,
            run: 0,
            tripped,
        }
    }

    fn too_long(&self) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, self.reason())
    }

    fn reason(&self) -> String {
        let mib = 1024 * 1024;
        let size = if self.max.is_multiple_of(mib) {
            format!("{} MB", self.max / mib)
        } else {
            format!("{} bytes", self.max)
        };
        format!(
            "the server sent a message (one line of JSON) larger than {size}, more than keel accepts \
             (KEEL_MCP_MAX_MESSAGE_MB), so keel closed the connection"
        )
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineCap<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        if self.tripped.reason().is_some() {
            return Poll::Ready(Err(self.too_long()));
        }
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        let mut run = this.run;
        for &b in &buf.filled()[before..] {
            run = if b == b'\n' { 0 } else { run + 1 };
            if run > this.max {
                let reason = this.reason();
                this.tripped.set(reason);
                // A failed read hands over no bytes.
                buf.set_filled(before);
                return Poll::Ready(Err(this.too_long()));
            }
        }
        this.run = run;
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn lines_up_to_the_bound_pass_and_a_longer_one_ends_the_stream() {
        let mut data = b"short\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', 10));
        data.push(b'\n');
        let tripped = Tripped::default();
        let mut ok = LineCap::new(&data[..], 10, tripped.clone());
        let mut out = Vec::new();
        ok.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, data);
        assert!(tripped.reason().is_none());

        let long = [vec![b'y'; 11], b"\n".to_vec()].concat();
        let mut capped = LineCap::new(&long[..], 10, tripped.clone());
        let err = capped.read_to_end(&mut Vec::new()).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        let reason = tripped.reason().unwrap();
        assert!(
            reason.contains("larger than 10 bytes") && reason.contains("KEEL_MCP_MAX_MESSAGE_MB"),
            "{reason}"
        );
    }
}
