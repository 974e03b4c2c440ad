//! HTTP clients that load the platform's root certificates only when they may speak TLS.
//!
//! Building a TLS-capable client reads and parses every certificate the system trusts (the
//! bundle and each file of `/etc/ssl/certs`: some 300 files and half a megabyte of PEM, on every
//! build) and fails outright where there are none, as in many minimal containers. A client for
//! `http://` URLs — a local model server, a hook or search engine on loopback — needs none of
//! that, so it is built without roots and refuses a redirect to `https://` with a clear error
//! instead of a certificate failure.

use std::sync::OnceLock;
use std::time::Duration;

use super::http::error_chain;

/// Whether a client will only ever be sent to plain-HTTP URLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reach {
    /// `http://` only: no certificates loaded.
    Plain,
    /// Anything, `https://` included: the platform's roots are loaded.
    Tls,
}

impl Reach {
    /// `Plain` for an `http://` URL; anything else (`https://`, a URL keel cannot read) may need TLS.
    pub fn of(url: &str) -> Reach {
        let scheme = url.trim_start().split_once("://").map(|(s, _)| s);
        match scheme {
            Some(s) if s.eq_ignore_ascii_case("http") => Reach::Plain,
            _ => Reach::Tls,
        }
    }
}

/// Finishes `builder` for `reach`; the error says what failed and what to do.
pub fn build(builder: reqwest::ClientBuilder, reach: Reach) -> Result<reqwest::Client, String> {
    // reqwest is built without a bundled crypto provider; ring is ours. A second install is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let builder = match reach {
        Reach::Plain => builder.tls_certs_only(std::iter::empty()).redirect(plain_redirects()),
        Reach::Tls => builder,
    };
    builder.build().map_err(|e| {
        let why = error_chain(&e);
        match reach {
            Reach::Tls => format!(
                "cannot build the HTTP client: {why} (for https:// URLs keel uses the system's CA \
                 certificates: install them, e.g. the ca-certificates package, or point SSL_CERT_FILE \
                 at a PEM bundle)"
            ),
            Reach::Plain => format!("cannot build the HTTP client: {why}"),
        }
    })
}

/// One client per reach for the whole process, for callers with no settings of their own (HTTP
/// hooks, web search): timeouts go on each request. Built on first use; a failure is not kept,
/// so the next call tries again.
pub fn shared(reach: Reach) -> Result<reqwest::Client, String> {
    static PLAIN: OnceLock<reqwest::Client> = OnceLock::new();
    static TLS: OnceLock<reqwest::Client> = OnceLock::new();
    let cell = match reach {
        Reach::Plain => &PLAIN,
        Reach::Tls => &TLS,
    };
    if let Some(c) = cell.get() {
        return Ok(c.clone());
    }
    let built = build(
        reqwest::Client::builder().connect_timeout(Duration::from_secs(30)),
        reach,
    )?;
    Ok(cell.get_or_init(|| built).clone())
}

/// A client sent to an `http://` URL follows redirects as reqwest's default does (at most 10),
/// but not onto `https://`, for which it has no certificates.
fn plain_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        if attempt.url().scheme() == "https" {
            let to = attempt.url().to_string();
            attempt.error(format!(
                "the server redirected to {to}: a client for http:// URLs does not follow a redirect to \
                 https://; configure the https:// URL itself"
            ))
        } else if attempt.previous().len() >= 10 {
            attempt.error("more than 10 redirects")
        } else {
            attempt.follow()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_http_url_is_plain() {
        assert_eq!(Reach::of("http://127.0.0.1:8080/v1"), Reach::Plain);
        assert_eq!(Reach::of("HTTP://localhost"), Reach::Plain);
        assert_eq!(Reach::of("https://api.example.com"), Reach::Tls);
        assert_eq!(Reach::of("localhost:8080"), Reach::Tls);
        assert_eq!(Reach::of("httpx://weird"), Reach::Tls);
        assert_eq!(Reach::of(""), Reach::Tls);
    }

    #[test]
    fn a_plain_client_builds_without_any_certificate() {
        // No roots are read for Plain, so an unreadable certificate location cannot matter.
        assert!(build(reqwest::Client::builder(), Reach::Plain).is_ok());
        assert!(shared(Reach::Plain).is_ok());
    }
}
