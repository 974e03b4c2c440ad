//! The client library's errors in words. Its own messages name its Rust types
//! (`Transport [rmcp::transport::worker::WorkerTransport<…>] error: HTTP 500`); what a user or
//! the model needs is what failed: the HTTP status, the refused connection, the answer that
//! was not MCP.

use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::provider::http::error_chain;

/// A failed request to a connected server.
pub fn service_error(e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(e) => e.message.to_string(),
        ServiceError::TransportSend(t) => transport_error(t),
        ServiceError::TransportClosed => "the connection to the server closed".into(),
        ServiceError::UnexpectedResponse => "the server answered with a result of the wrong kind".into(),
        ServiceError::Cancelled { reason } => match reason {
            Some(r) => format!("the request was cancelled ({r})"),
            None => "the request was cancelled".into(),
        },
        ServiceError::Timeout { timeout } => {
            format!("the server did not answer within {} s", timeout.as_secs_f64())
        }
        other => other.to_string(),
    }
}

/// A failed connection or `initialize` handshake.
pub fn init_error(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::TransportError { error, .. } => transport_error(error),
        ClientInitializeError::ConnectionClosed(_) => {
            "the server closed the connection before it answered `initialize`".into()
        }
        ClientInitializeError::ExpectedInitResponse(_) | ClientInitializeError::ExpectedInitResult(_) => {
            "the server's first answer was not the result of `initialize`".into()
        }
        ClientInitializeError::JsonRpcError(data) => {
            format!("the server refused `initialize`: {}", data.message)
        }
        other => other.to_string(),
    }
}

/// What the transport under a request said, without the transport's type name.
pub fn transport_error(t: &DynamicTransportError) -> String {
    let inner: &(dyn std::error::Error + 'static) = &*t.error;
    match inner.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(http) => http_error(http),
        None => error_chain(inner),
    }
}

fn http_error(e: &StreamableHttpError<reqwest::Error>) -> String {
    match e {
        StreamableHttpError::HttpStatus(s) => {
            let reason = reqwest::StatusCode::from_u16(s.status)
                .ok()
                .and_then(|c| c.canonical_reason())
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            let retry = s
                .retry_after
                .as_deref()
                .map(|r| format!("; it asks to retry after {r}"))
                .unwrap_or_default();
            format!("the server answered HTTP {}{reason}{retry}", s.status)
        }
        StreamableHttpError::Client(c) => format!("the HTTP request failed: {}", error_chain(c)),
        StreamableHttpError::Io(io) => format!("the connection failed: {io}"),
        StreamableHttpError::Sse(sse) => format!("the server's event stream was broken: {sse}"),
        StreamableHttpError::UnexpectedEndOfStream => "the server's event stream ended before its answer".into(),
        StreamableHttpError::UnexpectedServerResponse(body) => {
            format!("the server's answer was not an MCP message: {body}")
        }
        StreamableHttpError::UnexpectedContentType(ct) => format!(
            "the server answered with content type {}, neither JSON nor an event stream",
            ct.as_deref().unwrap_or("(none)")
        ),
        StreamableHttpError::Deserialize(d) => format!("the server's answer was not valid JSON: {d}"),
        StreamableHttpError::SessionExpired => "the server no longer knows keel's session (HTTP 404)".into(),
        StreamableHttpError::AuthRequired(_) => "the server needs authentication (HTTP 401)".into(),
        StreamableHttpError::InsufficientScope(_) => {
            "the server refused the credentials for this request (HTTP 403, insufficient scope)".into()
        }
        StreamableHttpError::ResponseBodyTooLarge { max_size } => {
            format!("the server's answer was larger than {max_size} bytes")
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::transport::streamable_http_client::HttpStatusError;

    #[test]
    fn an_http_status_is_said_without_type_names() {
        let inner: StreamableHttpError<reqwest::Error> =
            StreamableHttpError::HttpStatus(HttpStatusError::new(500, None));
        let t = DynamicTransportError::from_parts(
            "rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::Client>>",
            std::any::TypeId::of::<()>(),
            Box::new(inner),
        );
        let e = ServiceError::TransportSend(t);
        assert!(e.to_string().contains("rmcp::"), "the library's own text: {e}");
        let words = service_error(&e);
        assert_eq!(words, "the server answered HTTP 500 (Internal Server Error)");
    }
}
