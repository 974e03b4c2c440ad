//! A scripted model server on loopback: real HTTP, real SSE, per-chunk pacing, every request
//! recorded. Replies are queued by the test and served in order to the three API paths
//! (`/v1/messages`, `/v1/chat/completions`, `/v1/responses`) and other POST endpoints (hooks);
//! wrong API paths and probes get a 404 like a real server's, unless the test routes them
//! (model lists, `/props`, `/api/show`). Fault modes: a
//! reply that never sends headers, a body that never ends, any raw body (an HTML page).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;

/// One scripted HTTP reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A `text/event-stream` body sent chunk by chunk, `pace` apart.
    Sse { chunks: Vec<String>, pace: Duration },
    /// Like `Sse`, but the connection is dropped after the chunks (no clean end).
    SseThenDrop { chunks: Vec<String> },
    /// A plain JSON reply (errors: 401, 429, 529, ...), with extra headers.
    Json {
        status: u16,
        body: Value,
        headers: Vec<(String, String)>,
    },
    /// Any body with any content type (an HTML page from a proxy).
    Raw {
        status: u16,
        content_type: String,
        body: String,
    },
    /// Accepts the request and never sends the response headers.
    Hang,
    /// Headers, then `chunk` every `pace`, forever.
    Endless {
        status: u16,
        content_type: String,
        chunk: String,
        pace: Duration,
    },
    /// `then`, once as many requests as the meeting wants wait at it together (at most
    /// [`MEETING_WAIT`]; `then` is sent anyway after that, the meeting stays unmet and later
    /// requests at it no longer wait).
    Meet { meeting: Meeting, then: Box<Reply> },
}

/// Longest a [`Reply::Meet`] waits for the others.
pub const MEETING_WAIT: Duration = Duration::from_secs(30);

/// A meeting point for requests: it happens when `n` requests holding it wait at once, which
/// proves that they were in flight together (requests run one after another never meet: a
/// request whose client went away leaves its seat).
#[derive(Debug, Clone)]
pub struct Meeting(Arc<MeetingState>);

#[derive(Debug)]
struct MeetingState {
    n: usize,
    waiting: Mutex<usize>,
    happened: tokio::sync::watch::Sender<bool>,
    missed: std::sync::atomic::AtomicBool,
}

impl Meeting {
    pub fn new(n: usize) -> Meeting {
        Meeting(Arc::new(MeetingState {
            n,
            waiting: Mutex::new(0),
            happened: tokio::sync::watch::channel(false).0,
            missed: std::sync::atomic::AtomicBool::new(false),
        }))
    }

    /// Whether `n` requests were ever waiting here at the same time.
    pub fn happened(&self) -> bool {
        *self.0.happened.borrow()
    }

    async fn attend(&self) {
        use std::sync::atomic::Ordering;
        if self.0.missed.load(Ordering::SeqCst) {
            return;
        }
        struct Seat<'a>(&'a MeetingState);
        impl Drop for Seat<'_> {
            fn drop(&mut self) {
                *self.0.waiting.lock().unwrap() -= 1;
            }
        }
        let mut happened = self.0.happened.subscribe();
        let _seat = {
            let mut waiting = self.0.waiting.lock().unwrap();
            *waiting += 1;
            if *waiting >= self.0.n {
                self.0.happened.send_replace(true);
            }
            Seat(&self.0)
        };
        if tokio::time::timeout(MEETING_WAIT, happened.wait_for(|h| *h))
            .await
            .is_err()
        {
            self.0.missed.store(true, Ordering::SeqCst);
        }
    }
}

/// The model API paths: a request to a path that merely ends like one (`/v1/v1/messages`,
/// `/chat/completions` without `/v1`) gets a 404, as from a real server.
pub const API_PATHS: [&str; 3] = ["/v1/messages", "/v1/chat/completions", "/v1/responses"];

/// Whether queued replies answer this request: POSTs to the API paths, and to any other path
/// that does not look like a model API or probe path (a hook endpoint).
fn takes_queue(method: &hyper::Method, path: &str) -> bool {
    if API_PATHS.contains(&path) {
        return true;
    }
    let api_like = ["/messages", "/chat/completions", "/responses"]
        .iter()
        .any(|p| path.ends_with(p));
    method == hyper::Method::POST && !api_like && !path.starts_with("/api/")
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The messages array of the request.
    pub fn messages(&self) -> &Vec<Value> {
        self.body["messages"].as_array().expect("request has messages")
    }

    /// All tool_result blocks in the last user message.
    pub fn tool_results(&self) -> Vec<Value> {
        let last = self.messages().last().expect("at least one message");
        last["content"]
            .as_array()
            .map(|c| c.iter().filter(|b| b["type"] == "tool_result").cloned().collect())
            .unwrap_or_default()
    }

    /// The names of the tools the request offers, in order.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .expect("a tools array")
            .iter()
            .map(|t| t["name"].as_str().expect("a tool name").to_string())
            .collect()
    }

    /// The text of the tool result for `id` (string or text blocks).
    /// The text of a tool result inside its untrusted envelope (when it has one: the envelope
    /// is checked by [`Recorded::tool_result_as_sent`]), and whether it is an error.
    pub fn tool_result_text(&self, id: &str) -> (String, bool) {
        let (text, is_error) = self.tool_result_as_sent(id);
        (keel::types::untrusted::body(&text).to_string(), is_error)
    }

    /// The text of a tool result exactly as the request carries it.
    pub fn tool_result_as_sent(&self, id: &str) -> (String, bool) {
        for m in self.messages().iter().rev() {
            if let Some(blocks) = m["content"].as_array() {
                for b in blocks {
                    if b["type"] == "tool_result" && b["tool_use_id"] == id {
                        let text = match &b["content"] {
                            Value::String(s) => s.clone(),
                            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
                            other => other.to_string(),
                        };
                        return (text, b["is_error"].as_bool().unwrap_or(false));
                    }
                }
            }
        }
        panic!("no tool_result for {id} in request");
    }
}

/// Decides the reply from the request body; `None` falls back to the queue.
pub type Responder = Arc<dyn Fn(&Value) -> Option<Reply> + Send + Sync>;

#[derive(Default)]
struct State {
    responder: Option<Responder>,
    replies: VecDeque<Reply>,
    requests: Vec<Recorded>,
    /// Requests to other paths (probes, model lists), with the method.
    others: Vec<(String, String)>,
    routes: Vec<(String, Reply)>,
    /// SSE bodies whose client went away before the last chunk.
    abandoned: usize,
    /// SSE chunks handed to the connection, over all bodies.
    sent: usize,
}

pub struct ModelServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl ModelServer {
    pub async fn start() -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| handle(req, state.clone()));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        ModelServer { addr, state }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn push(&self, reply: Reply) -> &Self {
        self.state.lock().unwrap().replies.push_back(reply);
        self
    }

    /// Lets the test answer each request by looking at it (e.g. recognise a summary request, or
    /// report usage that matches the request's size).
    pub fn respond_with(&self, f: impl Fn(&Value) -> Option<Reply> + Send + Sync + 'static) -> &Self {
        self.state.lock().unwrap().responder = Some(Arc::new(f));
        self
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Answers every request to `path` (outside the API paths) with `reply`.
    pub fn route(&self, path: &str, reply: Reply) -> &Self {
        self.state.lock().unwrap().routes.push((path.to_string(), reply));
        self
    }

    /// `METHOD path` of the requests outside the API paths.
    pub fn other_requests(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap()
            .others
            .iter()
            .map(|(m, p)| format!("{m} {p}"))
            .collect()
    }

    pub fn abandoned(&self) -> usize {
        self.state.lock().unwrap().abandoned
    }

    /// Waits (bounded) until `abandoned()` reaches `n` and returns it (less than `n` when it never
    /// did): the server notices a client that went away only when it sends the next chunk.
    pub async fn wait_abandoned(&self, n: usize) -> usize {
        for _ in 0..1500 {
            if self.abandoned() >= n {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.abandoned()
    }

    /// SSE chunks sent so far, over all replies.
    pub fn chunks_sent(&self) -> usize {
        self.state.lock().unwrap().sent
    }

    /// Waits (bounded) until `n` requests have arrived; panics if they never do.
    pub async fn wait_requests(&self, n: usize) {
        for _ in 0..1500 {
            if self.requests().len() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("{} requests arrived, not {n}", self.requests().len());
    }

    /// Waits (bounded) until `n` SSE chunks have been sent; panics if they never are.
    pub async fn wait_chunks_sent(&self, n: usize) {
        for _ in 0..1500 {
            if self.chunks_sent() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("{} chunks were sent, not {n}", self.chunks_sent());
    }
}

type Body = BoxBody<Bytes, std::io::Error>;

async fn handle(req: Request<hyper::body::Incoming>, state: Arc<Mutex<State>>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_string();
    if !takes_queue(req.method(), &path) {
        let method = req.method().to_string();
        let reply = {
            let mut s = state.lock().unwrap();
            s.others.push((method, path.clone()));
            s.routes.iter().find(|(p, _)| *p == path).map(|(_, r)| r.clone())
        };
        let reply = reply.unwrap_or_else(|| Reply::Json {
            status: 404,
            body: serde_json::json!({"error": {"message": format!("no route for {path}"), "type": "not_found_error"}}),
            headers: Vec::new(),
        });
        return Ok(respond(reply, state).await);
    }
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let bytes = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let reply = {
        let mut s = state.lock().unwrap();
        let answered = s.responder.clone().and_then(|f| f(&body));
        s.requests.push(Recorded { path, headers, body });
        answered.or_else(|| s.replies.pop_front())
    };
    let Some(reply) = reply else {
        return Ok(json_response(
            400,
            serde_json::json!({"type": "error", "error": {"type": "invalid_request_error", "message": "scripted server: no reply queued"}}),
            &[],
        ));
    };
    Ok(respond(reply, state).await)
}

async fn respond(reply: Reply, state: Arc<Mutex<State>>) -> Response<Body> {
    match reply {
        Reply::Meet { meeting, then } => {
            meeting.attend().await;
            Box::pin(respond(*then, state)).await
        }
        Reply::Json { status, body, headers } => json_response(status, body, &headers),
        Reply::Sse { chunks, pace } => sse_response(chunks, pace, false, state),
        Reply::SseThenDrop { chunks } => sse_response(chunks, Duration::ZERO, true, state),
        Reply::Raw {
            status,
            content_type,
            body,
        } => {
            let full = Full::new(Bytes::from(body)).map_err(|never: Infallible| match never {});
            Response::builder()
                .status(status)
                .header("content-type", content_type)
                .body(full.boxed())
                .expect("response")
        }
        Reply::Hang => std::future::pending().await,
        Reply::Endless {
            status,
            content_type,
            chunk,
            pace,
        } => {
            let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(4);
            tokio::spawn(async move {
                loop {
                    if tx.send(Ok(Frame::data(Bytes::from(chunk.clone())))).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(pace).await;
                }
            });
            let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|f| (f, rx)) });
            Response::builder()
                .status(status)
                .header("content-type", content_type)
                .body(BodyExt::boxed(StreamBody::new(stream)))
                .expect("response")
        }
    }
}

fn json_response(status: u16, body: Value, headers: &[(String, String)]) -> Response<Body> {
    let mut b = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    for (k, v) in headers {
        b = b.header(k, v);
    }
    let full = Full::new(Bytes::from(body.to_string())).map_err(|never: Infallible| match never {});
    b.body(full.boxed()).expect("response")
}

fn sse_response(chunks: Vec<String>, pace: Duration, drop_at_end: bool, state: Arc<Mutex<State>>) -> Response<Body> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(4);
    tokio::spawn(async move {
        let total = chunks.len();
        for (i, chunk) in chunks.into_iter().enumerate() {
            if i > 0 && !pace.is_zero() {
                tokio::time::sleep(pace).await;
            }
            if tx.send(Ok(Frame::data(Bytes::from(chunk)))).await.is_err() {
                if i < total {
                    state.lock().unwrap().abandoned += 1;
                }
                return;
            }
            state.lock().unwrap().sent += 1;
        }
        if drop_at_end {
            let _ = tx
                .send(Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "scripted drop",
                )))
                .await;
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|f| (f, rx)) });
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(BodyExt::boxed(StreamBody::new(stream)))
        .expect("response")
}
