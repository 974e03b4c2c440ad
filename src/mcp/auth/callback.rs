//! The loopback end of the browser hand-off: keel listens on 127.0.0.1 for the one redirect
//! the authorization server sends the browser back with. Only `GET /callback` with the `state`
//! keel put in the authorization URL is taken; anything else (another path, a wrong or missing
//! state, a request from a page that guesses the port) is answered with an error and ignored.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Path of the redirect URI.
pub const PATH: &str = "/callback";

/// Requests that are not the awaited redirect before keel gives up.
const MAX_STRAY: usize = 20;

/// What the redirect brought.
#[derive(Debug, PartialEq, Eq)]
pub struct Redirect {
    pub code: String,
    /// RFC 9207 `iss`, when the authorization server sends it.
    pub issuer: Option<String>,
}

pub struct Listener {
    listener: TcpListener,
    pub redirect_uri: String,
}

impl Listener {
    /// Listens on 127.0.0.1 (`port` 0: any free port).
    pub async fn bind(port: u16) -> Result<Listener, String> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| format!("cannot listen on 127.0.0.1:{port} for the sign-in redirect: {e}"))?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        Ok(Listener {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}{PATH}"),
        })
    }

    /// Waits for the redirect carrying `state`, at most `limit`.
    pub async fn wait(&self, state: &str, limit: Duration) -> Result<Redirect, String> {
        tokio::time::timeout(limit, self.accept_loop(state))
            .await
            .map_err(|_| {
                format!(
                    "no sign-in arrived within {} s (the browser was to come back to {})",
                    limit.as_secs(),
                    self.redirect_uri
                )
            })?
    }

    async fn accept_loop(&self, state: &str) -> Result<Redirect, String> {
        let mut stray = 0;
        loop {
            let (mut stream, _) = self
                .listener
                .accept()
                .await
                .map_err(|e| format!("the sign-in listener failed: {e}"))?;
            let target = match tokio::time::timeout(Duration::from_secs(10), read_target(&mut stream)).await {
                Ok(Some(t)) => t,
                _ => {
                    let _ = respond(&mut stream, 400, "keel could not read this request.").await;
                    continue;
                }
            };
            match judge(&target, state) {
                Verdict::Done(redirect) => {
                    let _ = respond(
                        &mut stream,
                        200,
                        "Signed in. You can close this window and go back to keel.",
                    )
                    .await;
                    return Ok(redirect);
                }
                Verdict::Refused(why) => {
                    let _ = respond(&mut stream, 400, &format!("Sign-in failed: {why}")).await;
                    return Err(format!("the authorization server refused the sign-in: {why}"));
                }
                Verdict::Stray(status, why) => {
                    let _ = respond(&mut stream, status, why).await;
                    stray += 1;
                    if stray >= MAX_STRAY {
                        return Err(
                            "too many requests to the sign-in listener that were not the sign-in redirect".into(),
                        );
                    }
                }
            }
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Done(Redirect),
    /// The redirect came back with an error (the user refused, the server failed).
    Refused(String),
    /// Not the awaited redirect: answered and ignored.
    Stray(u16, &'static str),
}

/// Judges a request target (`/callback?code=…&state=…`).
fn judge(target: &str, state: &str) -> Verdict {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path != PATH {
        return Verdict::Stray(404, "Not found.");
    }
    let mut code = None;
    let mut got_state = None;
    let mut issuer = None;
    let mut error = None;
    let mut description = None;
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match k.as_ref() {
            "code" => code = Some(v.into_owned()),
            "state" => got_state = Some(v.into_owned()),
            "iss" => issuer = Some(v.into_owned()),
            "error" => error = Some(v.into_owned()),
            "error_description" => description = Some(v.into_owned()),
            _ => {}
        }
    }
    // A redirect without keel's state did not come from the sign-in keel started (a page that
    // found the port, an old tab): it decides nothing, not even a failure.
    if got_state.as_deref() != Some(state) {
        return Verdict::Stray(
            400,
            "This is not the sign-in keel is waiting for (wrong or missing state).",
        );
    }
    if let Some(error) = error {
        let text = match description {
            Some(d) => format!("{error}: {d}"),
            None => error,
        };
        return Verdict::Refused(crate::console::terminal_safe(&text).into_owned());
    }
    match code {
        Some(code) if !code.is_empty() => Verdict::Done(Redirect { code, issuer }),
        _ => Verdict::Stray(400, "The redirect has no authorization code."),
    }
}

/// Reads the request head and returns the target of a `GET`.
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() > 16 * 1024 {
            return None;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf);
    let line = head.lines().next()?;
    let mut parts = line.split(' ');
    let (method, target) = (parts.next()?, parts.next()?);
    (method == "GET").then(|| target.to_string())
}

async fn respond(stream: &mut TcpStream, status: u16, text: &str) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>keel</title></head><body><p>{}</p></body></html>",
        text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
    );
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_awaited_redirect_counts() {
        assert_eq!(
            judge("/callback?code=abc&state=s1", "s1"),
            Verdict::Done(Redirect {
                code: "abc".into(),
                issuer: None
            })
        );
        assert!(matches!(
            judge("/callback?code=abc&state=s2", "s1"),
            Verdict::Stray(400, _)
        ));
        assert!(matches!(judge("/callback?code=abc", "s1"), Verdict::Stray(400, _)));
        assert!(matches!(
            judge("/other?code=abc&state=s1", "s1"),
            Verdict::Stray(404, _)
        ));
        assert!(matches!(judge("/callback?state=s1", "s1"), Verdict::Stray(400, _)));
        // An error with a wrong state is a stray too: it cannot end keel's sign-in.
        assert!(matches!(
            judge("/callback?error=access_denied&state=x", "s1"),
            Verdict::Stray(400, _)
        ));
        assert_eq!(
            judge(
                "/callback?error=access_denied&error_description=no%20thanks&state=s1",
                "s1"
            ),
            Verdict::Refused("access_denied: no thanks".into())
        );
        assert_eq!(
            judge("/callback?code=a%2Bb&state=s%201&iss=https%3A%2F%2Fas", "s 1"),
            Verdict::Done(Redirect {
                code: "a+b".into(),
                issuer: Some("https://as".into())
            })
        );
    }
}
