//! A web site on loopback for the web tools: each path answers with a status, headers and a
//! body from a table (redirects are a `Location` header), and every request is recorded with
//! its path, query and `Host` header.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

#[derive(Debug, Clone)]
pub struct Page {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

pub fn html(body: &str) -> Page {
    typed("text/html; charset=utf-8", body)
}

pub fn typed(content_type: &str, body: &str) -> Page {
    Page {
        status: 200,
        headers: vec![("content-type".into(), content_type.into())],
        body: body.to_string(),
    }
}

pub fn redirect(status: u16, location: &str) -> Page {
    Page {
        status,
        headers: vec![("location".into(), location.into())],
        body: String::new(),
    }
}

pub struct Site {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<(String, String)>>>,
}

impl Site {
    pub async fn start(pages: Vec<(&str, Page)>) -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let pages: Arc<HashMap<String, Page>> = Arc::new(pages.into_iter().map(|(p, r)| (p.to_string(), r)).collect());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let pages = pages.clone();
                let log = log.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                        let pages = pages.clone();
                        let log = log.clone();
                        async move {
                            let path = req.uri().path().to_string();
                            let full = req.uri().path_and_query().map(|p| p.to_string()).unwrap_or_default();
                            let host = req
                                .headers()
                                .get("host")
                                .and_then(|h| h.to_str().ok())
                                .unwrap_or("")
                                .to_string();
                            log.lock().unwrap().push((full, host));
                            let page = pages.get(&path).cloned().unwrap_or(Page {
                                status: 404,
                                headers: vec![("content-type".into(), "text/plain".into())],
                                body: "no such page".into(),
                            });
                            let mut b = Response::builder().status(page.status);
                            for (k, v) in &page.headers {
                                b = b.header(k, v);
                            }
                            Ok::<_, Infallible>(b.body(Full::new(Bytes::from(page.body))).unwrap())
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Site { addr, seen }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The paths (with query) requested so far, in order.
    pub fn paths(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(|(p, _)| p.clone()).collect()
    }

    /// The `Host` headers of the requests so far.
    pub fn hosts(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(|(_, h)| h.clone()).collect()
    }
}
