//! The Language Server Protocol's framing: JSON-RPC messages behind a `Content-Length` header.

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// Largest message read from a server (a hostile or broken one must not exhaust memory).
pub const MAX_MESSAGE: usize = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("the server closed its output")]
    Closed,
    #[error("bad header: {0}")]
    Header(String),
    #[error("message of {0} bytes is larger than the {MAX_MESSAGE} keel reads")]
    TooLarge(usize),
    #[error("message is not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

pub async fn write_message<W: AsyncWrite + Unpin>(out: &mut W, message: &Value) -> Result<(), WireError> {
    let body = serde_json::to_vec(message)?;
    out.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes())
        .await?;
    out.write_all(&body).await?;
    out.flush().await?;
    Ok(())
}

pub async fn read_message<R: tokio::io::AsyncRead + Unpin>(input: &mut BufReader<R>) -> Result<Value, WireError> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    loop {
        line.clear();
        // Header lines are short; a line without end is cut by the cap on the whole header.
        let n = (&mut *input).take(4096).read_line(&mut line).await?;
        if n == 0 {
            return Err(WireError::Closed);
        }
        let trimmed = line.trim_end_matches(['\r', '\n']);
        if trimmed.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((name, value)) = trimmed.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            let n: usize = value
                .trim()
                .parse()
                .map_err(|_| WireError::Header(trimmed.to_string()))?;
            length = Some(n);
        }
    }
    let length = length.unwrap_or(0);
    if length > MAX_MESSAGE {
        return Err(WireError::TooLarge(length));
    }
    let mut body = vec![0u8; length];
    input.read_exact(&mut body).await?;
    Ok(serde_json::from_slice(&body)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_round_trip_and_oversized_ones_are_refused() {
        let mut buf = Vec::new();
        write_message(&mut buf, &serde_json::json!({"jsonrpc": "2.0", "id": 1}))
            .await
            .unwrap();
        write_message(&mut buf, &serde_json::json!({"method": "x"}))
            .await
            .unwrap();
        let mut r = BufReader::new(&buf[..]);
        assert_eq!(read_message(&mut r).await.unwrap()["id"], 1);
        assert_eq!(read_message(&mut r).await.unwrap()["method"], "x");
        assert!(matches!(read_message(&mut r).await, Err(WireError::Closed)));
        let huge = format!("Content-Length: {}\r\n\r\n", MAX_MESSAGE + 1);
        let mut r = BufReader::new(huge.as_bytes());
        assert!(matches!(read_message(&mut r).await, Err(WireError::TooLarge(_))));
    }
}
