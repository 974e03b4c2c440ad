//! Turning what a server did into a sentence: connection failures, error bodies of every
//! shape, answers that are not event streams. Pure where it can be, so each case is tested.

use std::time::Duration;

use super::{AttemptError, Cause, Target};
use crate::provider::ProviderError;
use crate::provider::endpoint::BaseUrl;

/// What went wrong sending a request, in one line (for `keel doctor`).
pub fn describe_send_error(e: &reqwest::Error, url: &str, base: &BaseUrl) -> String {
    match classify_send_error(e, url, base) {
        AttemptError::Fatal(f) => f.to_string(),
        AttemptError::Retry(c) => c.message,
    }
}

/// Connection-level failures: unreachable servers are retried only a few times, TLS and
/// protocol mismatches not at all.
pub(super) fn classify_send_error(e: &reqwest::Error, url: &str, base: &BaseUrl) -> AttemptError {
    let chain = error_chain(e);
    let lower = chain.to_ascii_lowercase();
    let refused = io_kind(e) == Some(std::io::ErrorKind::ConnectionRefused) || lower.contains("connection refused");
    if refused || lower.contains("dns error") || lower.contains("failed to lookup address") {
        let what = if refused {
            format!("connection refused by {}", base.authority())
        } else {
            format!("cannot resolve the host of {}", base.as_str())
        };
        return AttemptError::Retry(Cause {
            status: None,
            message: format!("cannot connect to {url}: {what}"),
            hint: None,
            unreachable: true,
            overloaded: false,
            context_full: false,
        });
    }
    if lower.contains("certificate") || lower.contains("tls") || lower.contains("corrupt message") {
        return AttemptError::Fatal(ProviderError::BadResponse(format!(
            "TLS with {} failed: {chain}; if the server speaks plain HTTP, use http:// in {}",
            base.authority(),
            base.source
        )));
    }
    if lower.contains("invalid http version") || lower.contains("invalid status") || lower.contains("http/0.9") {
        return AttemptError::Fatal(ProviderError::BadResponse(format!(
            "{} did not answer in HTTP ({chain}); if it expects TLS, use https:// in {}",
            base.authority(),
            base.source
        )));
    }
    if e.is_timeout() {
        return Cause::plain(format!("connecting to {} timed out", base.authority()));
    }
    Cause::plain(format!("connection to {} failed: {chain}", base.authority()))
}

fn io_kind(e: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        cur = err.source();
    }
    None
}

pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let next = s.to_string();
        if !out.contains(&next) {
            out.push_str(": ");
            out.push_str(&next);
        }
        src = s.source();
    }
    out
}

/// Whether a server says it ran out of context while answering: llama.cpp's words when the
/// slot's share of the context fills up part-way through a response.
pub fn is_context_full(message: &str) -> bool {
    message.to_ascii_lowercase().contains("context size has been exceeded")
}

/// `message` (a context-full error) with what it means and what to do.
pub fn explain_context_full(message: &str) -> String {
    format!(
        "{message} — the server ran out of context while answering: llama.cpp divides its context (-c) \
         among its parallel slots (-np), so each request gets only a share; start llama-server with -np 1 or a \
         larger -c"
    )
}

/// Whether a 400-class message says the prompt did not fit (each server words it its own way).
pub fn is_context_overflow(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "prompt is too long",
        "context size has been exceeded",
        "context window",
        "too many tokens",
        "maximum context length",
        "context_length_exceeded",
        "exceeds the available context size",
        "exceed_context_size",
        "context length",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// The explanation inside an error body, whatever shape the server uses.
pub fn describe_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return "no error details in the response".into();
    }
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(trimmed) {
        let err = &v["error"];
        if let Some(msg) = err["message"].as_str() {
            let kind = err["type"].as_str().or_else(|| err["code"].as_str());
            return match kind {
                Some(k) if !msg.contains(k) => format!("{k}: {msg}"),
                _ => msg.to_string(),
            };
        }
        for key in ["error", "message", "detail"] {
            if let Some(msg) = v[key].as_str() {
                return msg.to_string();
            }
        }
    }
    if is_html(body) {
        return match html_title(trimmed) {
            Some(title) => format!("an HTML page (\"{title}\")"),
            None => "an HTML page".into(),
        };
    }
    excerpt(trimmed)
}

/// The message for a 2xx answer that is not an event stream.
pub(super) fn not_a_stream(t: &Target, status: u16, content_type: &str, body: &[u8]) -> String {
    let shown = if content_type.is_empty() { "none" } else { content_type };
    let what = if is_html(body) || content_type.starts_with("text/html") {
        let title = html_title(&String::from_utf8_lossy(body))
            .map(|t| format!(" (\"{t}\")"))
            .unwrap_or_default();
        format!(
            "an HTML page{title} instead of an event stream; a proxy or captive portal may be answering, or {} (`{}`) \
             points at a web page",
            t.base.source,
            t.base.as_str()
        )
    } else if content_type.contains("json") {
        format!(
            "one JSON document instead of an event stream (content-type {shown}): {}",
            describe_body(body)
        )
    } else {
        format!(
            "something that is not an event stream (content-type {shown}): {}",
            excerpt(String::from_utf8_lossy(body).trim())
        )
    };
    format!("{} answered HTTP {status} with {what}", t.url)
}

pub(super) fn is_html(body: &[u8]) -> bool {
    let start: Vec<u8> = body
        .iter()
        .skip_while(|b| b.is_ascii_whitespace())
        .take(15)
        .map(|b| b.to_ascii_lowercase())
        .collect();
    start.starts_with(b"<!doctype html")
        || start.starts_with(b"<html")
        || start.starts_with(b"<head")
        || start.starts_with(b"<body")
}

pub(super) fn looks_like_sse(first: &[u8]) -> bool {
    let first = first.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(first);
    let start: &[u8] = match first.iter().position(|b| !b.is_ascii_whitespace()) {
        Some(i) => &first[i..],
        None => return true,
    };
    [&b"data:"[..], b"event:", b":", b"id:", b"retry:"]
        .iter()
        .any(|p| start.starts_with(p))
}

pub(super) fn html_title(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title: String = text.get(start..end)?.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then(|| title.chars().take(100).collect())
}

pub(super) fn excerpt(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    if text.chars().count() > 200 {
        format!("{one_line}…")
    } else {
        one_line
    }
}

pub fn fmt_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_of_every_shape_are_explained() {
        assert_eq!(
            describe_body(br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
            "overloaded_error: Overloaded"
        );
        assert_eq!(
            describe_body(br#"{"error":{"message":"The model `x` does not exist","type":"invalid_request_error","code":"model_not_found"}}"#),
            "invalid_request_error: The model `x` does not exist"
        );
        assert_eq!(
            describe_body(br#"{"error":"model \"qwen\" not found, try pulling it first"}"#),
            "model \"qwen\" not found, try pulling it first"
        );
        assert_eq!(describe_body(br#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(
            describe_body(b"<!DOCTYPE html><html><head><title>502 Bad\n Gateway</title></head></html>"),
            "an HTML page (\"502 Bad Gateway\")"
        );
        assert_eq!(describe_body(b"  "), "no error details in the response");
        assert!(describe_body("x".repeat(500).as_bytes()).ends_with('…'));
    }

    #[test]
    fn event_streams_are_recognised_by_their_first_bytes() {
        assert!(looks_like_sse(b"data: {}"));
        assert!(looks_like_sse(b"\n\nevent: ping\n"));
        assert!(looks_like_sse(b": OPENROUTER PROCESSING\n\n"));
        assert!(!looks_like_sse(b"<html>"));
        assert!(!looks_like_sse(b"{\"id\":\"chatcmpl\"}"));
        assert!(is_html(b"\n  <!doctype HTML>"));
        assert!(!is_html(b"data: <html>"));
    }

    #[test]
    fn context_overflow_in_every_wording() {
        for m in [
            "prompt is too long: 210000 tokens > 200000 maximum",
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
            "the request exceeds the available context size, try increasing it",
        ] {
            assert!(is_context_overflow(m), "{m}");
        }
        assert!(!is_context_overflow("invalid tool schema"));
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(fmt_duration(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(fmt_duration(Duration::from_secs(600)), "600 s");
        assert_eq!(fmt_duration(Duration::from_millis(250)), "250 ms");
    }
}
