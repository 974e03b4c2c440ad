//! `keel mcp login NAME`: the browser sign-in. Discovery (from the server's last challenge
//! when keel has one, else by asking the server), client registration when no client id is
//! configured, the authorization URL with PKCE (S256), `state` and the `resource` indicator,
//! the hand-off to a browser with the redirect to keel's loopback listener, and the code
//! exchanged for tokens, which go to the server's owner-only sign-in file.

use std::path::Path;
use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest, AuthorizationSession,
};

use super::callback::Listener;
use super::store::{ClientRecord, FileCredentials, TokenFile};
use super::{Challenge, auth_text, check_endpoints, check_secure};
use crate::mcp::config::OAuthConfig;

/// The name keel registers itself under.
const CLIENT_NAME: &str = "keel";

pub struct Login<'a> {
    pub server: &'a str,
    pub url: &'a str,
    pub oauth: &'a OAuthConfig,
    pub keel_home: &'a Path,
    /// How long to wait for the browser to come back.
    pub timeout: Duration,
    /// Try to open a browser (the URL is printed either way).
    pub open_browser: bool,
}

/// Runs the sign-in; `say` prints progress for the person. Returns the closing line.
pub async fn run(login: &Login<'_>, say: &(dyn Fn(&str) + Sync)) -> Result<String, String> {
    check_secure("server URL", login.url).map_err(|e| format!("{e} (the tokens would travel in clear)"))?;
    if login.oauth.client_credentials {
        return Err(format!(
            "MCP server `{}` signs in with its client credentials (oauth.grant = client_credentials) each time it connects; there is nothing to sign in to in a browser",
            login.server
        ));
    }
    let file = TokenFile::new(login.keel_home, login.url);
    let record = file.load()?;
    refuse_useless_step_up(login.server, &record)?;
    let listener = Listener::bind(login.oauth.callback_port).await?;
    super::install_tls();
    let redirect_uri = listener.redirect_uri.clone();

    let mut manager = AuthorizationManager::new(login.url).await.map_err(|e| auth_text(&e))?;
    manager.set_credential_store(FileCredentials(file.clone()));
    let challenge = match &record.challenge {
        Some(c) => Some(c.clone()),
        None => probe_challenge(login.url).await,
    };
    let metadata = match manager.resolve_metadata_from_challenge(challenge.as_deref()).await {
        Ok(resolution) => resolution.metadata,
        Err(AuthError::AuthorizationServerMismatch { .. }) if let Some(m) = own_origin_metadata(login.url).await => m,
        Err(e) => return Err(format!("discovering how to sign in failed: {}", auth_text(&e))),
    };
    check_endpoints(&metadata)?;
    manager.set_metadata(metadata.clone());

    let scopes = choose_scopes(&manager, login.oauth, &record).await;
    let mut request = AuthorizationRequest::new(redirect_uri.clone())
        .with_client_name(CLIENT_NAME)
        .with_scopes(scopes.clone());
    let supports_url_ids = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let client = match (&login.oauth.client_id, &login.oauth.client_metadata_url) {
        (Some(id), _) => ClientRecord {
            client_id: id.clone(),
            client_secret: login.oauth.client_secret.clone(),
            redirect_uri: redirect_uri.clone(),
        },
        (None, Some(url)) if supports_url_ids => ClientRecord {
            client_id: url.clone(),
            client_secret: None,
            redirect_uri: redirect_uri.clone(),
        },
        _ => register(&mut manager, &record, &redirect_uri, &scopes).await?,
    };
    request = request.with_preregistered_client(client.client_id.clone());
    if let Some(secret) = &client.client_secret {
        request = request.with_client_secret(secret.clone());
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| format!("starting the sign-in failed: {}", auth_text(&e)))?;
    let auth_url = session.get_authorization_url().to_string();
    check_secure("authorization URL", &auth_url)?;
    let state = reqwest::Url::parse(&auth_url)
        .ok()
        .and_then(|u| u.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()))
        .ok_or("the authorization URL has no state")?;

    say(&format!(
        "To sign in to MCP server `{}`, open this address in a browser:\n\n  {auth_url}\n\nkeel waits for the browser to come back to {redirect_uri} (up to {} s).",
        login.server,
        login.timeout.as_secs()
    ));
    if login.open_browser
        && let Err(e) = open_browser(&auth_url)
    {
        say(&format!("(no browser was opened: {e})"));
    }
    let back = listener.wait(&state, login.timeout).await?;
    session
        .handle_callback_with_issuer(&back.code, &state, back.issuer.as_deref())
        .await
        .map_err(|e| format!("exchanging the authorization code failed: {}", auth_text(&e)))?;
    let granted = file
        .load()?
        .credentials
        .map(|c| c.granted_scopes.join(" "))
        .filter(|s| !s.is_empty());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    file.update(|r| {
        r.client = Some(client);
        r.metadata = Some(metadata);
        r.challenge = None;
        r.signed_in_at = now;
    })?;
    Ok(format!(
        "Signed in to MCP server `{}`{}. The sign-in is kept in {} (readable only by you); keel renews it when it expires.",
        login.server,
        granted.map(|s| format!(" (scope: {s})")).unwrap_or_default(),
        file.path().display()
    ))
}

/// What the server answers an unauthenticated `initialize` with: its `WWW-Authenticate`
/// challenge (where its metadata is, the scope it wants) when it refuses. A server whose
/// metadata is only named there (not at a well-known place) is found this way.
async fn probe_challenge(url: &str) -> Option<String> {
    let client = crate::mcp::transport::http_client().ok()?;
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}}
    });
    let response = client
        .post(url)
        .header(reqwest::header::ACCEPT, "application/json, text/event-stream")
        .timeout(Duration::from_secs(30))
        .json(&body)
        .send()
        .await
        .ok()?;
    if !matches!(response.status().as_u16(), 401 | 403) {
        return None;
    }
    let header = response.headers().get(reqwest::header::WWW_AUTHENTICATE)?;
    header.to_str().ok().map(str::to_string)
}

/// The 2025-03-26 arrangement, where the MCP server is its own authorization server and
/// publishes its metadata at its origin's root: taken even when the document's `issuer` has a
/// path (which strict RFC 8414 discovery rejects), but only when the issuer and every endpoint
/// are on the server's own origin, so nothing leads keel elsewhere.
async fn own_origin_metadata(url: &str) -> Option<AuthorizationMetadata> {
    let server = reqwest::Url::parse(url).ok()?;
    let origin = server.origin();
    let doc = server.join("/.well-known/oauth-authorization-server").ok()?;
    let client = crate::mcp::transport::http_client().ok()?;
    let response = client.get(doc).timeout(Duration::from_secs(30)).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let bytes = response.bytes().await.ok()?;
    if bytes.len() > 1024 * 1024 {
        return None;
    }
    let metadata: AuthorizationMetadata = serde_json::from_slice(&bytes).ok()?;
    let same = |u: &str| reqwest::Url::parse(u).is_ok_and(|u| u.origin() == origin);
    let endpoints_ok = same(&metadata.authorization_endpoint)
        && same(&metadata.token_endpoint)
        && metadata.registration_endpoint.as_deref().is_none_or(same)
        && metadata.issuer.as_deref().is_some_and(same);
    endpoints_ok.then_some(metadata)
}

/// A server that keeps answering "insufficient scope" for a scope keel was already granted
/// will not be satisfied by another sign-in: say so instead of sending the person round again.
fn refuse_useless_step_up(server: &str, record: &super::store::Record) -> Result<(), String> {
    let (Some(header), Some(creds)) = (&record.challenge, &record.credentials) else {
        return Ok(());
    };
    let challenge = Challenge::from_header(header);
    let Some(wanted) = challenge.scope().filter(|_| challenge.status == 403) else {
        return Ok(());
    };
    if creds.token_response.is_some()
        && wanted
            .split_whitespace()
            .all(|s| creds.granted_scopes.iter().any(|g| g == s))
    {
        return Err(format!(
            "MCP server `{server}` refused keel for lack of scope `{wanted}`, which keel was already granted: signing in again would not change that. Run `keel mcp logout {server}` first to sign in afresh anyway"
        ));
    }
    Ok(())
}

/// The scopes to ask for: the configured ones; else what the server's challenge or its
/// metadata names (keeping what was granted before when the server asked for more).
async fn choose_scopes(
    manager: &AuthorizationManager,
    oauth: &OAuthConfig,
    record: &super::store::Record,
) -> Vec<String> {
    if !oauth.scopes.is_empty() {
        return oauth.scopes.clone();
    }
    let mut scopes = manager.select_initial_scopes(&[]).await;
    let stepping_up = record
        .challenge
        .as_ref()
        .is_some_and(|h| h.to_ascii_lowercase().contains("insufficient_scope"));
    if stepping_up && let Some(creds) = &record.credentials {
        for s in &creds.granted_scopes {
            if !scopes.contains(s) {
                scopes.push(s.clone());
            }
        }
    }
    scopes
}

/// Dynamic client registration (RFC 7591), or the client registered before for this same
/// redirect address.
async fn register(
    manager: &mut AuthorizationManager,
    record: &super::store::Record,
    redirect_uri: &str,
    scopes: &[String],
) -> Result<ClientRecord, String> {
    if let Some(c) = &record.client
        && c.redirect_uri == redirect_uri
    {
        return Ok(c.clone());
    }
    let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let config = manager.register_client(CLIENT_NAME, redirect_uri, &refs).await.map_err(|e| {
        format!(
            "registering keel with the authorization server failed ({}); if the server needs a registered client, configure oauth.clientId (and oauth.clientSecret)",
            auth_text(&e)
        )
    })?;
    Ok(ClientRecord {
        client_id: config.client_id,
        client_secret: config.client_secret,
        redirect_uri: redirect_uri.to_string(),
    })
}

/// Hands the URL to a browser: `$BROWSER` (a command; `%s` is replaced by the URL, else the
/// URL is its last argument), else the desktop's opener. The browser runs on its own.
fn open_browser(url: &str) -> Result<(), String> {
    let command = match std::env::var("BROWSER") {
        Ok(b) if !b.trim().is_empty() => b,
        _ if cfg!(target_os = "macos") => "open".into(),
        _ => "xdg-open".into(),
    };
    // `$BROWSER` may list several commands separated by `:`; the first one is used.
    let first = command.split(':').next().unwrap_or("").trim();
    let mut words: Vec<String> = first.split_whitespace().map(str::to_string).collect();
    if words.is_empty() {
        return Err("BROWSER is empty".into());
    }
    if words.iter().any(|w| w.contains("%s")) {
        for w in &mut words {
            *w = w.replace("%s", url);
        }
    } else {
        words.push(url.to_string());
    }
    let mut child = std::process::Command::new(&words[0])
        .args(&words[1..])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("`{}` could not be started: {e}", words[0]))?;
    // Reaped in the background so it leaves no zombie while keel waits for the redirect.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

impl Challenge {
    /// A challenge as the sign-in file keeps it (the status is not kept).
    pub fn from_header(header: &str) -> Challenge {
        Challenge {
            status: if header.to_ascii_lowercase().contains("insufficient_scope") {
                403
            } else {
                401
            },
            header: header.to_string(),
        }
    }
}
