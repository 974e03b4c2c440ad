//! The HTTP side every protocol shares: one POST whose answer must be an event stream, a bound on
//! every phase (connect, response headers, first event, silence between events, error bodies),
//! errors that say what happened, and retries with backoff under a cap on the total wait.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::HeaderMap;
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout_at};
use tokio_util::sync::CancellationToken;

use super::client::{self, Reach};
use super::endpoint::{BaseUrl, not_found_hint};
use super::retry::{RetryPolicy, is_retryable_status, server_delay};
use super::sse::{SseError, SseParser};

mod explain;

use super::{ModelResponse, ProviderError, ProviderEvent, StreamAssembler, StreamFailure};
use explain::{classify_send_error, looks_like_sse, not_a_stream};
pub use explain::{
    describe_body, describe_send_error, error_chain, explain_context_full, fmt_duration, is_context_full,
    is_context_overflow,
};

/// How long each phase of a request may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP (and TLS) connection.
    pub connect: Duration,
    /// From sending the request to its first event: covers loading a local model and reading a
    /// long prompt on a CPU, which can take minutes.
    pub first_byte: Duration,
    /// Longest silence between two events of an open stream.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(600),
            idle: Duration::from_secs(300),
        }
    }
}

impl Timeouts {
    /// `API_TIMEOUT_MS` (the reference's request timeout) bounds the wait for the first event and
    /// every silence after it; connecting never takes longer than 10 s.
    pub fn from_env() -> Result<Timeouts, ProviderError> {
        let mut t = Timeouts::default();
        if let Some(raw) = std::env::var("API_TIMEOUT_MS").ok().filter(|v| !v.trim().is_empty()) {
            let ms =
                raw.trim().parse::<u64>().ok().filter(|ms| *ms > 0).ok_or_else(|| {
                    ProviderError::Config(format!("API_TIMEOUT_MS must be milliseconds, got `{raw}`"))
                })?;
            let d = Duration::from_millis(ms);
            t.first_byte = d;
            t.idle = d;
            t.connect = t.connect.min(d);
        }
        Ok(t)
    }
}

/// After this long without a first event, the user is told keel is still waiting.
const SLOW_NOTICE: Duration = Duration::from_secs(30);
/// Once a stop reason arrived, how long to wait for optional trailers (usage) before finishing.
const TAIL: Duration = Duration::from_secs(5);
/// Most of an error body that is read (the rest is not needed to explain the error).
const ERROR_BODY_CAP: usize = 64 * 1024;
/// Longest time spent reading an error body.
const ERROR_BODY_TIME: Duration = Duration::from_secs(10);
/// Largest response accepted in all (a server that never stops is cut off here).
const RESPONSE_CAP: u64 = 256 * 1024 * 1024;

pub type Tx = mpsc::Sender<Result<ProviderEvent, ProviderError>>;

/// One request to send, and how to talk about it in errors.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub base: BaseUrl,
    /// The variable or setting holding the key, named when the server refuses it.
    pub key_hint: String,
    /// Whether the protocol adds `/v1` to the base URL itself (Anthropic) or expects it in the
    /// base URL (OpenAI-compatible servers).
    pub protocol_adds_v1: bool,
}

#[derive(Clone)]
pub struct Transport {
    clients: Arc<Clients>,
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
    pub include_raw: bool,
    pub event_cap: usize,
}

/// A transport's clients, built when the first request to a URL of their kind is sent.
#[derive(Default)]
struct Clients {
    plain: OnceLock<reqwest::Client>,
    tls: OnceLock<reqwest::Client>,
}

/// Why one attempt failed.
enum AttemptError {
    Fatal(ProviderError),
    Retry(Cause),
}

struct Cause {
    status: Option<u16>,
    message: String,
    hint: Option<Duration>,
    /// The server could not be reached at all.
    unreachable: bool,
    overloaded: bool,
    /// The server ran out of context part-way (see [`StreamFailure::context_full`]).
    context_full: bool,
}

impl Cause {
    fn plain(message: String) -> AttemptError {
        AttemptError::Retry(Cause {
            status: None,
            message,
            hint: None,
            unreachable: false,
            overloaded: false,
            context_full: false,
        })
    }
}

impl Transport {
    pub fn new(timeouts: Timeouts, retry: RetryPolicy, include_raw: bool) -> Result<Transport, ProviderError> {
        let event_cap = match std::env::var("KEEL_MAX_SSE_EVENT_MB")
            .ok()
            .filter(|v| !v.trim().is_empty())
        {
            None => super::sse::DEFAULT_EVENT_CAP,
            Some(raw) => raw
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|mb| *mb > 0)
                .map(|mb| mb.saturating_mul(1024 * 1024))
                .ok_or_else(|| {
                    ProviderError::Config(format!(
                        "KEEL_MAX_SSE_EVENT_MB must be a whole number of megabytes, got `{raw}`"
                    ))
                })?,
        };
        Ok(Transport {
            clients: Arc::default(),
            timeouts,
            retry,
            include_raw,
            event_cap,
        })
    }

    /// The client for requests to `url`, built on first use: one for `http://` URLs, which loads
    /// no certificates, and one for the rest (`super::client`).
    pub fn client_for(&self, url: &str) -> Result<reqwest::Client, ProviderError> {
        let reach = Reach::of(url);
        let cell = match reach {
            Reach::Plain => &self.clients.plain,
            Reach::Tls => &self.clients.tls,
        };
        if let Some(c) = cell.get() {
            return Ok(c.clone());
        }
        let built = client::build(reqwest::Client::builder().connect_timeout(self.timeouts.connect), reach)
            .map_err(ProviderError::Config)?;
        Ok(cell.get_or_init(|| built).clone())
    }

    /// Sends the request until it succeeds, fails for good, or the retries run out.
    pub async fn run<A: StreamAssembler>(
        &self,
        target: &Target,
        new_assembler: impl Fn() -> A,
        cancel: &CancellationToken,
        tx: &Tx,
    ) -> Result<ModelResponse, ProviderError> {
        let mut attempt = 0u32;
        let mut unreachable = 0u32;
        let mut overloads = 0u32;
        let mut context_full = false;
        let mut waited = Duration::ZERO;
        let started = Instant::now();
        loop {
            let outcome = tokio::select! {
                _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
                r = self.attempt(target, new_assembler(), tx) => r,
            };
            let cause = match outcome {
                Ok(response) => return Ok(response),
                Err(AttemptError::Fatal(e)) => return Err(e),
                Err(AttemptError::Retry(cause)) => cause,
            };
            if cause.unreachable {
                unreachable += 1;
                // The retries may run out first (KEEL_MAX_RETRIES=0): the server was still
                // never reached, and the error says so.
                if unreachable >= self.retry.max_unreachable || attempt >= self.retry.max_retries {
                    return Err(ProviderError::Unreachable(format!(
                        "{} ({unreachable} attempts): is the server running? ({} is `{}`)",
                        cause.message,
                        target.base.source,
                        target.base.as_str()
                    )));
                }
            }
            // A request that filled the server's context part-way will most likely do it again:
            // one more try, not ten (each may stream for minutes before it fails).
            if cause.context_full {
                if context_full {
                    return Err(ProviderError::ServerError(format!(
                        "{} (keel sent the request twice; it failed the same way both times)",
                        cause.message
                    )));
                }
                context_full = true;
            }
            overloads = if cause.overloaded { overloads + 1 } else { 0 };
            if let Some(n) = self.retry.overloads_before_fallback
                && overloads >= n
            {
                return Err(ProviderError::Overloaded {
                    attempts: overloads,
                    message: cause.message,
                });
            }
            attempt += 1;
            if attempt > self.retry.max_retries {
                return Err(ProviderError::RetriesExhausted {
                    attempts: attempt,
                    last: cause.message,
                    status: cause.status,
                    overloaded: cause.overloaded,
                });
            }
            let remaining = self.retry.max_total_wait.saturating_sub(waited);
            let mut delay = self.retry.delay(attempt, cause.hint);
            if delay > remaining {
                let cap = fmt_duration(self.retry.max_total_wait);
                let why = match cause.hint {
                    Some(h) if h > remaining => format!(
                        "the server asks to retry after {}, longer than keel waits for one request in all ({cap}; \
                         setting maxRetryWaitSeconds or KEEL_MAX_RETRY_WAIT_SECS)",
                        fmt_duration(h)
                    ),
                    _ if remaining.is_zero() => format!(
                        "keel already waited {cap} between attempts, its limit for one request \
                         (setting maxRetryWaitSeconds or KEEL_MAX_RETRY_WAIT_SECS)"
                    ),
                    _ => String::new(),
                };
                if !why.is_empty() {
                    return Err(ProviderError::RetriesExhausted {
                        attempts: attempt,
                        last: format!("{}; {why}", cause.message),
                        status: cause.status,
                        overloaded: cause.overloaded,
                    });
                }
                delay = remaining;
            }
            tracing::info!(attempt, status = cause.status, error = %cause.message, delay_ms = delay.as_millis() as u64, "retrying");
            // A refused connection is retried fewer times than other faults: say so.
            let max_retries = if cause.unreachable {
                (attempt + self.retry.max_unreachable.saturating_sub(1 + unreachable)).min(self.retry.max_retries)
            } else {
                self.retry.max_retries
            };
            let _ = tx
                .send(Ok(ProviderEvent::Retry {
                    attempt,
                    max_retries,
                    delay_ms: delay.as_millis() as u64,
                    status: cause.status,
                    error: cause.message,
                    waited_ms: started.elapsed().as_millis() as u64,
                }))
                .await;
            tokio::select! {
                _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
                _ = tokio::time::sleep(delay) => {}
            }
            waited += delay;
        }
    }

    async fn attempt<A: StreamAssembler>(
        &self,
        t: &Target,
        mut asm: A,
        tx: &Tx,
    ) -> Result<ModelResponse, AttemptError> {
        let first_deadline = Instant::now() + self.timeouts.first_byte;
        let send = self
            .client_for(&t.url)
            .map_err(AttemptError::Fatal)?
            .post(&t.url)
            .headers(t.headers.clone())
            .body(t.body.clone())
            .send();
        let mut resp = match with_slow_notice(send, first_deadline, self.timeouts.first_byte, t, tx).await {
            Err(()) => return Err(Cause::plain(self.no_answer(t))),
            Ok(Err(e)) => return Err(classify_send_error(&e, &t.url, &t.base)),
            Ok(Ok(r)) => r,
        };
        tracing::debug!(status = resp.status().as_u16(), "response headers");
        if !resp.status().is_success() {
            return Err(self.http_error(resp, t).await);
        }
        let content_type = header(&resp, "content-type").unwrap_or_default().to_ascii_lowercase();
        let mut sniffed = content_type.starts_with("text/event-stream");
        if content_type.starts_with("text/html") || content_type.contains("json") {
            let deadline = Instant::now() + ERROR_BODY_TIME.min(self.timeouts.idle);
            let body = read_bounded(&mut resp, ERROR_BODY_CAP, deadline).await;
            return Err(AttemptError::Fatal(ProviderError::BadResponse(not_a_stream(
                t,
                resp.status().as_u16(),
                &content_type,
                &body,
            ))));
        }

        let mut parser = SseParser::new(self.event_cap);
        let mut events = Vec::new();
        let mut deadline = first_deadline;
        let mut saw_event = false;
        let mut total = 0u64;
        loop {
            let limit = if asm.can_finish() {
                deadline.min(Instant::now() + TAIL)
            } else {
                deadline
            };
            let next = if saw_event {
                timeout_at(limit, resp.chunk()).await.map_err(|_| ())
            } else {
                with_slow_notice(resp.chunk(), limit, self.timeouts.first_byte, t, tx).await
            };
            let chunk = match next {
                Err(()) if asm.can_finish() => break,
                Err(()) if !saw_event => return Err(Cause::plain(self.no_answer(t))),
                Err(()) => {
                    return Err(Cause::plain(format!(
                        "the response stream from {} stalled: no event for {} (API_TIMEOUT_MS)",
                        t.url,
                        fmt_duration(self.timeouts.idle)
                    )));
                }
                Ok(Err(e)) => return Err(Cause::plain(format!("the response stream broke: {}", error_chain(&e)))),
                Ok(Ok(None)) => {
                    parser.finish(&mut events).map_err(|e| sse_error(e, t))?;
                    self.dispatch(&mut asm, &mut events, tx).await?;
                    break;
                }
                Ok(Ok(Some(bytes))) => bytes,
            };
            if !sniffed && !chunk.is_empty() {
                sniffed = true;
                if !looks_like_sse(&chunk) {
                    return Err(AttemptError::Fatal(ProviderError::BadResponse(not_a_stream(
                        t,
                        resp.status().as_u16(),
                        &content_type,
                        &chunk,
                    ))));
                }
            }
            total += chunk.len() as u64;
            if total > RESPONSE_CAP {
                return Err(AttemptError::Fatal(ProviderError::BadResponse(format!(
                    "the response from {} passed {} MB without ending; keel stopped reading it",
                    t.url,
                    RESPONSE_CAP / (1024 * 1024)
                ))));
            }
            parser.feed(&chunk, &mut events).map_err(|e| sse_error(e, t))?;
            if !events.is_empty() {
                saw_event = true;
                deadline = Instant::now() + self.timeouts.idle;
            }
            self.dispatch(&mut asm, &mut events, tx).await?;
            if asm.is_done() {
                break;
            }
        }
        asm.finish().map_err(failure)
    }

    /// Hands parsed events to the assembler and its output to the engine.
    async fn dispatch<A: StreamAssembler>(
        &self,
        asm: &mut A,
        events: &mut Vec<super::sse::SseEvent>,
        tx: &Tx,
    ) -> Result<(), AttemptError> {
        for ev in events.drain(..) {
            if asm.is_done() {
                break;
            }
            if self.include_raw
                && let Ok(raw) = serde_json::from_str::<serde_json::Value>(&ev.data)
            {
                let _ = tx.send(Ok(ProviderEvent::Raw(raw))).await;
            }
            for out in asm.handle(&ev.event, &ev.data).map_err(failure)? {
                let _ = tx.send(Ok(out)).await;
            }
        }
        Ok(())
    }

    fn no_answer(&self, t: &Target) -> String {
        format!(
            "no response from {} within {} (API_TIMEOUT_MS)",
            t.url,
            fmt_duration(self.timeouts.first_byte)
        )
    }

    /// A non-2xx answer: its body (bounded in size and time) explains it.
    async fn http_error(&self, mut resp: reqwest::Response, t: &Target) -> AttemptError {
        let status = resp.status().as_u16();
        let hint = server_delay(
            header(&resp, "retry-after-ms").as_deref(),
            header(&resp, "retry-after").as_deref(),
        );
        let should_retry = header(&resp, "x-should-retry");
        let deadline = Instant::now() + ERROR_BODY_TIME.min(self.timeouts.idle);
        let body = read_bounded(&mut resp, ERROR_BODY_CAP, deadline).await;
        let detail = describe_body(&body);
        let overloaded = status == 529 || status == 503 || detail.to_ascii_lowercase().contains("overloaded");
        let retry = match should_retry.as_deref() {
            Some("true") => true,
            Some("false") => false,
            _ => is_retryable_status(status),
        };
        if retry {
            let context_full = is_context_full(&detail);
            let detail = if context_full {
                explain_context_full(&detail)
            } else {
                detail
            };
            return AttemptError::Retry(Cause {
                status: Some(status),
                message: format!("HTTP {status}: {detail}"),
                hint,
                unreachable: false,
                overloaded,
                context_full,
            });
        }
        AttemptError::Fatal(match status {
            401 | 403 => ProviderError::Auth {
                status,
                message: format!("{detail} (check {})", t.key_hint),
            },
            404 => ProviderError::Rejected {
                status,
                message: format!(
                    "POST {} was not found: {detail}; {}",
                    t.url,
                    not_found_hint(&t.url, &t.base, t.protocol_adds_v1)
                ),
            },
            _ if is_context_overflow(&detail) => ProviderError::Rejected {
                status,
                message: format!("prompt is too long for the model's context window: {detail}"),
            },
            _ => ProviderError::Rejected {
                status,
                message: detail,
            },
        })
    }
}

/// Awaits `fut` until `deadline`; while it waits for a first answer, tells the user once that
/// the server is slow, so a long silence is never unexplained. `Err(())`: the deadline passed.
async fn with_slow_notice<F: std::future::Future>(
    fut: F,
    deadline: Instant,
    limit: Duration,
    t: &Target,
    tx: &Tx,
) -> Result<F::Output, ()> {
    tokio::pin!(fut);
    let notice_at = Instant::now() + SLOW_NOTICE;
    if limit > SLOW_NOTICE * 2 && notice_at < deadline {
        tokio::select! {
            r = &mut fut => return Ok(r),
            _ = tokio::time::sleep_until(notice_at) => {
                let _ = tx
                    .send(Ok(ProviderEvent::Notice(format!(
                        "no answer from {} after {} s; still waiting (up to {}, API_TIMEOUT_MS) — a local model \
                         may be loading or reading a long prompt",
                        t.base.authority(),
                        SLOW_NOTICE.as_secs(),
                        fmt_duration(limit)
                    ))))
                    .await;
            }
        }
    }
    timeout_at(deadline, fut).await.map_err(|_| ())
}

fn failure(f: StreamFailure) -> AttemptError {
    if f.retryable {
        AttemptError::Retry(Cause {
            status: None,
            message: f.message,
            hint: None,
            unreachable: false,
            overloaded: f.overloaded,
            context_full: f.context_full,
        })
    } else {
        AttemptError::Fatal(ProviderError::ServerError(f.message))
    }
}

fn sse_error(e: SseError, t: &Target) -> AttemptError {
    let why = match e {
        SseError::TooLarge { cap } => format!(
            "an event of the response stream from {} is larger than {} MB (KEEL_MAX_SSE_EVENT_MB); keel stopped reading it",
            t.url,
            cap / (1024 * 1024)
        ),
        SseError::NotUtf8 => format!("the response stream from {} is not valid UTF-8", t.url),
    };
    AttemptError::Fatal(ProviderError::BadResponse(why))
}

fn header(resp: &reqwest::Response, name: &str) -> Option<String> {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Reads at most `max` bytes of a body, giving up at `deadline` (a body may never end).
async fn read_bounded(resp: &mut reqwest::Response, max: usize, deadline: Instant) -> Vec<u8> {
    let mut out = Vec::new();
    while out.len() < max {
        match timeout_at(deadline, resp.chunk()).await {
            Ok(Ok(Some(b))) => out.extend_from_slice(&b[..b.len().min(max - out.len())]),
            _ => break,
        }
    }
    out
}
