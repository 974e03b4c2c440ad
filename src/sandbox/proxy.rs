//! The filtering proxy of the sandbox's network lists. Sandboxed commands live in a network
//! namespace of their own whose only way out is a loopback port the helper bridges to this
//! proxy's unix socket ([`super::bridge`]); the proxy lets through HTTP `CONNECT` tunnels and
//! plain `http://` requests to the hosts [`DomainRules`] allow, and answers everything else
//! with a 403 that names the setting. It never forwards to a host the lists do not allow: no
//! open relay, no IP-literal targets unless listed, names resolved by keel and every address
//! judged ([`DomainRules::check_resolved`]) before it connects to exactly those addresses,
//! the Host header rewritten to the checked target, bounded request heads, connection counts,
//! lifetimes and idle time.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::Semaphore;

use super::domains::DomainRules;

/// The most bytes of a request head (request line and headers).
const MAX_HEAD: usize = 32 * 1024;
/// The longest wait for a request head, and for the upstream connection.
const HEAD_TIMEOUT: Duration = Duration::from_secs(15);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// The longest a tunnel stays open (a command runs at most 10 minutes).
const MAX_TUNNEL: Duration = Duration::from_secs(15 * 60);
/// A tunnel in which neither side sent anything for this long is closed.
const IDLE: Duration = Duration::from_secs(120);
/// Connections served at once; more wait.
const MAX_CONNECTIONS: usize = 64;

/// A running proxy: the socket the helper's bridge connects to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    pub socket: PathBuf,
}

/// The proxies of this process, one per set of rules (sub-agents share their session's).
static RUNNING: Mutex<Vec<(DomainRules, Proxy)>> = Mutex::new(Vec::new());

/// Starts (once per set of rules) a proxy enforcing `rules`, in a thread of its own, on a
/// unix socket in a fresh private directory that no sandboxed command can write.
pub fn start(rules: &DomainRules) -> Result<Proxy, String> {
    let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, p)) = running.iter().find(|(r, _)| r == rules) {
        return Ok(p.clone());
    }
    let dir = tempfile::Builder::new()
        .prefix("keel-net-")
        .tempdir()
        .map_err(|e| format!("cannot create the network proxy's folder: {e}"))?;
    // Kept for the life of the process: the bridge of every later command connects here.
    let dir = dir.keep();
    let socket = dir.join("proxy.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket)
        .map_err(|e| format!("cannot open the network proxy's socket {}: {e}", socket.display()))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("cannot set up the network proxy: {e}"))?;
    let served = rules.clone();
    std::thread::Builder::new()
        .name("keel-net-proxy".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                return;
            };
            rt.block_on(async move {
                if let Ok(l) = UnixListener::from_std(listener) {
                    serve(l, Arc::new(served)).await;
                }
            });
        })
        .map_err(|e| format!("cannot start the network proxy: {e}"))?;
    let proxy = Proxy { socket };
    running.push((rules.clone(), proxy.clone()));
    Ok(proxy)
}

async fn serve(listener: UnixListener, rules: Arc<DomainRules>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok((conn, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let rules = rules.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(MAX_TUNNEL, handle(conn, &rules)).await;
            drop(slot);
        });
    }
}

/// A parsed request head.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    /// `host:port` of the target.
    host: String,
    port: u16,
    /// For plain HTTP: the head to send upstream (origin-form target, no proxy headers).
    forward: Option<Vec<u8>>,
}

async fn handle(mut conn: UnixStream, rules: &DomainRules) -> std::io::Result<()> {
    let (head, rest) = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut conn)).await {
        Ok(Ok(v)) => v,
        Ok(Err(why)) => return reply(&mut conn, 400, &why).await,
        Err(_) => return reply(&mut conn, 408, "keel's sandbox proxy: no request arrived in time").await,
    };
    let head = match parse(&head) {
        Ok(h) => h,
        Err(why) => return reply(&mut conn, 400, &why).await,
    };
    let grant = match rules.check(&head.host) {
        Ok(g) => g,
        Err(r) => return reply(&mut conn, 403, &r.explain(&head.host)).await,
    };
    let target = format!("{}:{}", bracket(&head.host), head.port);
    // keel resolves the name itself, judges every address and connects to the ones it judged:
    // a name that resolves to a public address for a check and to this machine for the
    // connection (DNS rebinding) gets no second lookup to slip through.
    let addrs = match resolve(&head.host, head.port).await {
        Ok(a) => a,
        Err(e) => {
            return reply(
                &mut conn,
                502,
                &format!("keel's sandbox proxy cannot resolve {target}: {e}"),
            )
            .await;
        }
    };
    if let Some(r) = addrs.iter().find_map(|a| rules.check_resolved(grant, a.ip()).err()) {
        return reply(&mut conn, 403, &r.explain(&head.host)).await;
    }
    let upstream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&addrs[..])).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return reply(
                &mut conn,
                502,
                &format!("keel's sandbox proxy cannot reach {target}: {e}"),
            )
            .await;
        }
        Err(_) => {
            return reply(
                &mut conn,
                504,
                &format!("keel's sandbox proxy: {target} did not answer in time"),
            )
            .await;
        }
    };
    let mut upstream = upstream;
    match &head.forward {
        None => conn.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await?,
        Some(forward) => upstream.write_all(forward).await?,
    }
    upstream.write_all(&rest).await?;
    relay(conn, upstream).await;
    Ok(())
}

/// The addresses of `host` (an IP literal is its own), at least one.
async fn resolve(host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let addrs: Vec<SocketAddr> = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host((host, port)))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "the lookup did not finish in time"))??
        .collect();
    if addrs.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the name has no addresses",
        ));
    }
    Ok(addrs)
}

/// Copies both ways until both sides are done, or until neither has sent anything for
/// [`IDLE`]: a command cannot hold the proxy's connections with tunnels it leaves open.
async fn relay(mut conn: UnixStream, mut upstream: TcpStream) {
    let last = AtomicU64::new(0);
    let start = tokio::time::Instant::now();
    let (cr, cw) = conn.split();
    let (ur, uw) = upstream.split();
    let _ = tokio::join!(pipe(cr, uw, &last, start), pipe(ur, cw, &last, start));
}

async fn pipe<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    mut from: R,
    mut to: W,
    last: &AtomicU64,
    start: tokio::time::Instant,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match tokio::time::timeout(IDLE, from.read(&mut buf)).await {
            Ok(Ok(0)) => return to.shutdown().await,
            Ok(Ok(n)) => {
                to.write_all(&buf[..n]).await?;
                last.store(start.elapsed().as_millis() as u64, Ordering::Relaxed);
            }
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                let quiet = (start.elapsed().as_millis() as u64).saturating_sub(last.load(Ordering::Relaxed));
                if quiet >= IDLE.as_millis() as u64 {
                    return to.shutdown().await;
                }
            }
        }
    }
}

fn bracket(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// Reads up to the end of the head; returns it and whatever came after it.
async fn read_head<S: AsyncRead + Unpin>(conn: &mut S) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(format!(
                "keel's sandbox proxy: the request head is over {MAX_HEAD} bytes"
            ));
        }
        let n = conn
            .read(&mut chunk)
            .await
            .map_err(|e| format!("keel's sandbox proxy: {e}"))?;
        if n == 0 {
            return Err("keel's sandbox proxy: the request ended before its head did".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Splits `host[:port]` (IPv6 in brackets).
fn host_port(authority: &str, default: Option<u16>) -> Result<(String, u16), String> {
    let bad = || format!("keel's sandbox proxy: `{authority}` is not host:port");
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (h, tail) = rest.split_once(']').ok_or_else(bad)?;
        (h.to_string(), tail.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    let port = match port {
        Some(p) => p.parse::<u16>().map_err(|_| bad())?,
        None => default.ok_or_else(bad)?,
    };
    if host.is_empty() || port == 0 {
        return Err(bad());
    }
    Ok((host, port))
}

fn parse(head: &[u8]) -> Result<Head, String> {
    let text =
        std::str::from_utf8(head).map_err(|_| "keel's sandbox proxy: the request head is not text".to_string())?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("keel's sandbox proxy: malformed request line `{first}`"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("keel's sandbox proxy: unsupported protocol {version}"));
    }
    if method == "CONNECT" {
        let (host, port) = host_port(target, None)?;
        return Ok(Head {
            host,
            port,
            forward: None,
        });
    }
    let Some(after) = target.strip_prefix("http://") else {
        return Err(format!(
            "keel's sandbox proxy forwards CONNECT tunnels and http:// requests only, not `{target}`"
        ));
    };
    let (authority, path) = match after.find('/') {
        Some(i) => (&after[..i], &after[i..]),
        None => (after, "/"),
    };
    if authority.contains('@') {
        return Err("keel's sandbox proxy: credentials in the URL are not forwarded".into());
    }
    let (host, port) = host_port(authority, Some(80))?;
    // The Host header is the checked target's, never the client's: a shared front end routes
    // by it, so a client's own would reach a host the lists do not allow (domain fronting).
    let mut forward = format!("{method} {path} {version}\r\nHost: {authority}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim().to_ascii_lowercase();
        // Proxy credentials stay here; one request per connection, so a second request on it
        // cannot reach another host.
        if name.starts_with("proxy-") || name == "connection" || name == "keep-alive" || name == "host" {
            continue;
        }
        forward.push_str(line);
        forward.push_str("\r\n");
    }
    forward.push_str("Connection: close\r\n\r\n");
    Ok(Head {
        host,
        port,
        forward: Some(forward.into_bytes()),
    })
}

async fn reply<S: AsyncWrite + Unpin>(conn: &mut S, status: u16, text: &str) -> std::io::Result<()> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        408 => "Request Timeout",
        502 => "Bad Gateway",
        _ => "Gateway Timeout",
    };
    let body = format!("{text}\n");
    let msg = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nX-Keel-Sandbox: {status}\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(msg.as_bytes()).await?;
    conn.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_and_absolute_requests_are_parsed() {
        let h = parse(b"CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(
            (h.host.as_str(), h.port, h.forward.is_none()),
            ("api.example.com", 443, true)
        );
        let h = parse(b"GET http://localhost:8080/a?b HTTP/1.1\r\nHost: other.site\r\nProxy-Authorization: x\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n").unwrap();
        assert_eq!((h.host.as_str(), h.port), ("localhost", 8080));
        let fwd = String::from_utf8(h.forward.unwrap()).unwrap();
        assert_eq!(
            fwd, "GET /a?b HTTP/1.1\r\nHost: localhost:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n",
            "the client's Host header is replaced by the checked target's"
        );
        let h = parse(b"CONNECT [::1]:22 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(h.host, "::1");
        for bad in [
            &b"GET /relative HTTP/1.1\r\n\r\n"[..],
            b"GET ftp://x/ HTTP/1.1\r\n\r\n",
            b"CONNECT host HTTP/1.1\r\n\r\n",
            b"GET http://u:p@host/ HTTP/1.1\r\n\r\n",
            b"CONNECT a:99999 HTTP/1.1\r\n\r\n",
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[tokio::test]
    async fn an_endless_head_is_cut_off() {
        let (mut a, mut b) = tokio::io::duplex(1 << 20);
        tokio::spawn(async move {
            let junk = vec![b'x'; MAX_HEAD + 8192];
            let _ = b.write_all(&junk).await;
        });
        assert!(read_head(&mut a).await.unwrap_err().contains("over"));
    }
}
