//! Signing in to MCP servers over HTTP: the MCP authorization flow (OAuth 2.1 with PKCE,
//! protected-resource and authorization-server metadata discovery, dynamic client
//! registration, the `resource` indicator), run by the client library's `auth` feature and
//! driven here. keel's part: where the sign-in is kept (`store.rs`: owner-only, per server
//! URL), the browser hand-off with a loopback callback (`login.rs`, `callback.rs`), the checks
//! on what a hostile server may point keel at (https only, except loopback), and noticing a
//! server's 401/403 during a session (`watch.rs`) so it is reported as "needs sign-in".
//!
//! A token is sent only to the server URL it was issued for: the client library adds it to
//! requests of that one transport, the sign-in file is keyed by the URL, and reqwest drops the
//! `Authorization` header on a redirect to another host.

pub mod callback;
pub mod login;
pub mod store;
mod watch;

use std::path::Path;
use std::sync::Mutex;

use rmcp::transport::auth::{AuthClient, AuthError, AuthorizationManager, ClientCredentialsConfig, OAuthClientConfig};

pub use store::TokenFile;
pub use watch::Watched;

use super::config::OAuthConfig;

/// A 401 or 403 the server answered, with its `WWW-Authenticate` value.
#[derive(Debug, Clone)]
pub struct Challenge {
    pub status: u16,
    pub header: String,
}

impl Challenge {
    /// The `scope="…"` the challenge asks for, if any.
    pub fn scope(&self) -> Option<String> {
        let lower = self.header.to_ascii_lowercase();
        let at = lower.find("scope=")?;
        let rest = &self.header[at + 6..];
        let value = match rest.strip_prefix('"') {
            Some(quoted) => quoted.split('"').next()?,
            None => rest.split([',', ' ']).next()?,
        };
        (!value.trim().is_empty()).then(|| value.trim().to_string())
    }
}

/// One HTTP server's sign-in as its connections see it.
pub struct Access {
    /// The server's configured name (for messages naming `keel mcp login NAME`).
    pub server: String,
    pub url: String,
    pub oauth: OAuthConfig,
    /// `None` without a keel home (nothing can be stored; only a header can sign in).
    pub file: Option<TokenFile>,
    /// The configuration sets its own `Authorization` header, which is then used as it is.
    pub has_header: bool,
    last: Mutex<Option<Challenge>>,
}

impl Access {
    pub fn new(server: &str, url: &str, oauth: OAuthConfig, keel_home: Option<&Path>, has_header: bool) -> Access {
        Access {
            server: server.to_string(),
            url: url.to_string(),
            oauth,
            file: keel_home.map(|h| TokenFile::new(h, url)),
            has_header,
            last: Mutex::new(None),
        }
    }

    /// Notes a 401/403 the server answered (kept for the next sign-in's scope).
    pub fn note(&self, status: u16, header: &str) {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(Challenge {
            status,
            header: header.to_string(),
        });
        if let Some(file) = &self.file
            && !self.has_header
        {
            file.note_challenge(header);
        }
    }

    /// The challenge noted since the last look, if any.
    pub fn take_challenge(&self) -> Option<Challenge> {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// When the stored sign-in was last renewed by `keel mcp login` (0: never), so a server
    /// left "needs-auth" can tell that someone signed in since.
    pub fn signed_in_at(&self) -> u64 {
        self.file
            .as_ref()
            .and_then(|f| f.load().ok())
            .filter(|r| r.has_token())
            .map(|r| r.signed_in_at)
            .unwrap_or(0)
    }

    /// What to tell the user when the server refused keel (401/403).
    pub fn needs_sign_in(&self, challenge: Option<&Challenge>) -> String {
        let login = format!("keel mcp login {}", self.server);
        if self.has_header {
            return format!(
                "the server refused the configured Authorization header (HTTP {}); fix the header, or remove it and run `{login}`",
                challenge.map(|c| c.status).unwrap_or(401)
            );
        }
        if self.oauth.client_credentials {
            return "the server refused keel's client credentials (oauth.clientId and oauth.clientSecret)".into();
        }
        if let Some(c) = challenge.filter(|c| c.status == 403) {
            let scope = c.scope().map(|s| format!(" (scope `{s}`)")).unwrap_or_default();
            return format!(
                "the server needs more permissions{scope} than keel was granted: run `{login}` to sign in again"
            );
        }
        let signed_in = self
            .file
            .as_ref()
            .and_then(|f| f.load().ok())
            .is_some_and(|r| r.has_token());
        if signed_in {
            format!("the server no longer accepts keel's sign-in and it could not be renewed: run `{login}`")
        } else if self.file.is_none() {
            "the server needs a sign-in and keel has no home directory to keep one (set KEEL_HOME), or configure an Authorization header".into()
        } else {
            format!(
                "it answered HTTP {}; run `{login}` to sign in (or configure an Authorization header)",
                challenge.map(|c| c.status).unwrap_or(401)
            )
        }
    }

    /// The HTTP client with keel's sign-in, or `None` when there is none to use (no token yet,
    /// or a configured header takes its place). The client-credentials grant signs in here,
    /// no person being needed.
    pub async fn authorized(&self, base: reqwest::Client) -> Result<Option<AuthClient<reqwest::Client>>, String> {
        if self.has_header {
            return Ok(None);
        }
        // A token or a client secret goes only to an https server (or one on this machine).
        let secure = || check_secure("server URL", &self.url).map_err(|e| format!("{e}; use its https address"));
        if self.oauth.client_credentials {
            secure()?;
            return self.client_credentials(base).await.map(Some);
        }
        let Some(file) = &self.file else {
            return Ok(None);
        };
        let record = file.load()?;
        if !record.has_token() {
            return Ok(None);
        }
        secure()?;
        let (Some(client), Some(metadata)) = (record.client, record.metadata) else {
            return Ok(None);
        };
        install_tls();
        let mut manager = AuthorizationManager::new(self.url.as_str())
            .await
            .map_err(|e| auth_text(&e))?;
        manager.set_credential_store(store::FileCredentials(file.clone()));
        manager.set_metadata(metadata);
        let mut config = OAuthClientConfig::new(client.client_id, client.redirect_uri);
        if let Some(secret) = client.client_secret {
            config = config.with_client_secret(secret);
        }
        manager.configure_client(config).map_err(|e| auth_text(&e))?;
        Ok(Some(AuthClient::new(base, manager)))
    }

    /// Signs in as the client itself (`"grant": "client_credentials"`): discovery, then the
    /// token request with the configured id and secret. Tokens stay in memory.
    async fn client_credentials(&self, base: reqwest::Client) -> Result<AuthClient<reqwest::Client>, String> {
        let (Some(id), Some(secret)) = (&self.oauth.client_id, &self.oauth.client_secret) else {
            return Err("the client_credentials grant needs oauth.clientId and oauth.clientSecret".into());
        };
        install_tls();
        let mut manager = AuthorizationManager::new(self.url.as_str())
            .await
            .map_err(|e| auth_text(&e))?;
        let resolution = manager.resolve_metadata().await.map_err(|e| auth_text(&e))?;
        check_endpoints(&resolution.metadata)?;
        manager.set_metadata(resolution.metadata);
        let scopes = if self.oauth.scopes.is_empty() {
            manager.select_scopes(None, &[])
        } else {
            self.oauth.scopes.clone()
        };
        let config = ClientCredentialsConfig::ClientSecret {
            client_id: id.clone(),
            client_secret: secret.clone(),
            scopes,
            resource: Some(self.url.clone()),
        };
        manager
            .validate_client_credentials_metadata(&config)
            .map_err(|e| auth_text(&e))?;
        manager
            .configure_client_credentials(&config)
            .map_err(|e| auth_text(&e))?;
        manager
            .exchange_client_credentials(&config)
            .await
            .map_err(|e| auth_text(&e))?;
        Ok(AuthClient::new(base, manager))
    }
}

/// The TLS provider the client library's own HTTP clients need (keel builds reqwest without a
/// default one).
pub fn install_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// An error of the client library in words for the user (never with a token in it: the
/// library's errors carry none).
pub fn auth_text(e: &AuthError) -> String {
    e.to_string()
}

/// Whether a URL's host is this machine (`localhost`, 127.0.0.0/8, ::1).
pub fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// A URL keel may send a secret to (a code, a token, a client secret): https, or plain http
/// to this machine only.
pub fn check_secure(what: &str, raw: &str) -> Result<(), String> {
    let url = reqwest::Url::parse(raw).map_err(|e| format!("the {what} `{raw}` is not a valid URL: {e}"))?;
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(&url) => Ok(()),
        _ => Err(format!(
            "the {what} `{raw}` is not https (only servers on this machine may use plain http); keel does not send credentials there"
        )),
    }
}

/// The authorization server's endpoints must all be https (or loopback).
pub fn check_endpoints(metadata: &rmcp::transport::auth::AuthorizationMetadata) -> Result<(), String> {
    check_secure("authorization endpoint", &metadata.authorization_endpoint)?;
    check_secure("token endpoint", &metadata.token_endpoint)?;
    if let Some(r) = &metadata.registration_endpoint {
        check_secure("registration endpoint", r)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_gets_secrets() {
        assert!(check_secure("token endpoint", "https://as.example/token").is_ok());
        assert!(check_secure("token endpoint", "http://127.0.0.1:9/token").is_ok());
        assert!(check_secure("token endpoint", "http://localhost:9/token").is_ok());
        assert!(check_secure("token endpoint", "http://[::1]:9/token").is_ok());
        let err = check_secure("token endpoint", "http://as.example/token").unwrap_err();
        assert!(err.contains("not https"), "{err}");
        assert!(check_secure("token endpoint", "http://127.0.0.1.evil.example/token").is_err());
        assert!(check_secure("token endpoint", "ftp://as.example/token").is_err());
    }

    #[tokio::test]
    async fn client_credentials_go_to_no_plain_http_server_elsewhere() {
        let oauth = OAuthConfig {
            client_id: Some("id".into()),
            client_secret: Some("secret".into()),
            client_credentials: true,
            ..OAuthConfig::default()
        };
        let access = Access::new("remote", "http://mcp.example/mcp", oauth, None, false);
        let client = crate::mcp::transport::http_client().unwrap();
        let err = match access.authorized(client).await {
            Err(e) => e,
            Ok(_) => panic!("a client secret was about to go to a plain-http server"),
        };
        assert!(err.contains("not https") && err.contains("mcp.example"), "{err}");
    }

    #[test]
    fn challenge_scope() {
        let c = Challenge {
            status: 403,
            header: r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="x""#.into(),
        };
        assert_eq!(c.scope().as_deref(), Some("mcp:basic mcp:write"));
        let none = Challenge {
            status: 401,
            header: "Bearer".into(),
        };
        assert_eq!(none.scope(), None);
    }
}
