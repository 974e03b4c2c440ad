//! `keel mcp login|logout NAME` and the sign-in line of `keel mcp list`: the configured remote
//! server (streamable HTTP or legacy SSE) looked up by name, then `auth::login` (the browser flow) or the sign-in file removed.

use std::path::Path;
use std::time::Duration;

use super::auth::login::{self, Login};
use super::auth::{Challenge, TokenFile};
use super::config::ServerSpec;
use super::sources::{self, Entry, Sources};

/// The configured remote server named `name`: the one kind that signs in.
fn remote_entry(src: &Sources<'_>, name: &str) -> Result<Entry, String> {
    let loaded = sources::load(src, &|k| std::env::var(k).ok())?;
    let entry = loaded
        .entries
        .into_iter()
        .find(|e| e.name == name)
        .ok_or_else(|| format!("no MCP server named `{name}` is configured (see `keel mcp list`)"))?;
    match &entry.spec {
        Ok(spec) if spec.remote().is_some() => Ok(entry),
        Ok(other) => Err(format!(
            "MCP server `{name}` is a {} server; only remote servers sign in (`\"type\": \"http\"` or `\"sse\"`)",
            other.transport()
        )),
        Err(e) => Err(format!("MCP server `{name}` cannot be used: {e}")),
    }
}

/// Signs in to a configured HTTP server in a browser; `say` prints progress.
pub async fn login(
    src: &Sources<'_>,
    name: &str,
    timeout: Duration,
    open_browser: bool,
    say: &(dyn Fn(&str) + Sync),
) -> Result<String, String> {
    let entry = remote_entry(src, name)?;
    let Some((url, headers, oauth)) = entry.spec.as_ref().ok().and_then(ServerSpec::remote) else {
        return Err(format!("MCP server `{name}` is not a remote server"));
    };
    if headers.keys().any(|k| k.eq_ignore_ascii_case("authorization")) {
        say(&format!(
            "note: `{name}` has an Authorization header configured; keel uses that header instead of a sign-in while it is there"
        ));
    }
    login::run(
        &Login {
            server: name,
            url,
            oauth,
            keel_home: src.keel_home,
            timeout,
            open_browser,
        },
        say,
    )
    .await
}

/// Forgets the sign-in of a configured HTTP server.
pub fn logout(src: &Sources<'_>, name: &str) -> Result<String, String> {
    let entry = remote_entry(src, name)?;
    let Some((url, _, _)) = entry.spec.as_ref().ok().and_then(ServerSpec::remote) else {
        return Err(format!("MCP server `{name}` is not a remote server"));
    };
    let file = TokenFile::new(src.keel_home, url);
    Ok(if file.remove()? {
        format!("Signed out of MCP server `{name}` ({} removed).", file.path().display())
    } else {
        format!("keel was not signed in to MCP server `{name}`.")
    })
}

/// `signed in (…)` / `needs sign-in: …` for a remote server in `keel mcp list`.
pub fn state_line(keel_home: &Path, entry: &Entry) -> Option<String> {
    let (url, _, oauth) = entry.spec.as_ref().ok()?.remote()?;
    if oauth.client_credentials {
        return Some("signs in with its client credentials".into());
    }
    let record = TokenFile::new(keel_home, url).load().ok()?;
    let scope = record
        .credentials
        .as_ref()
        .map(|c| c.granted_scopes.join(" "))
        .filter(|s| !s.is_empty())
        .map(|s| format!(" (scope: {s})"))
        .unwrap_or_default();
    let login = format!("run `keel mcp login {}`", entry.name);
    match (&record.challenge, record.has_token()) {
        (Some(h), true) if Challenge::from_header(h).status == 403 => {
            let wants = Challenge::from_header(h)
                .scope()
                .map(|s| format!(" `{s}`"))
                .unwrap_or_default();
            Some(format!(
                "signed in{scope}, but the server asks for more{wants}: {login}"
            ))
        }
        (Some(_), true) => Some(format!(
            "signed in{scope}, but the server refused it last time: {login}"
        )),
        (_, true) => Some(format!("signed in{scope}")),
        (Some(_), false) => Some(format!("needs sign-in: {login}")),
        (None, false) => None,
    }
}

/// `/mcp login NAME` in a running session: signs in to one of the session's remote servers
/// (its configuration as the session loaded it), then connects it again so its tools join
/// the session and its `needs-auth` state is gone. Returns the closing line.
pub async fn login_in_session(
    hub: &super::McpHub,
    name: &str,
    timeout: Duration,
    open_browser: bool,
    say: &(dyn Fn(&str) + Sync),
) -> Result<String, String> {
    let server = hub.server(name).ok_or_else(|| hub.unknown_server(name))?;
    let Some((url, headers, oauth)) = server.remote_spec().and_then(ServerSpec::remote) else {
        return Err(format!(
            "MCP server `{name}` is not a remote server with a usable configuration; only remote servers sign in (`\"type\": \"http\"` or `\"sse\"`)"
        ));
    };
    let keel_home = hub
        .keel_home()
        .ok_or("keel has no home directory to keep a sign-in in (set KEEL_HOME)")?;
    if headers.keys().any(|k| k.eq_ignore_ascii_case("authorization")) {
        say(&format!(
            "note: `{name}` has an Authorization header configured; keel uses that header instead of a sign-in while it is there"
        ));
    }
    let done = login::run(
        &Login {
            server: name,
            url,
            oauth,
            keel_home,
            timeout,
            open_browser,
        },
        say,
    )
    .await?;
    server.recheck_sign_in();
    hub.start_all().await;
    let status = server.status();
    let after = match status.state {
        super::State::Connected => format!(
            "MCP server `{name}` is connected again ({} tool(s)).",
            status.tools.len()
        ),
        state => format!(
            "MCP server `{name}` is still {}: {}",
            state.as_str(),
            status
                .detail
                .as_deref()
                .and_then(|d| d.lines().next())
                .unwrap_or("no reason was given")
        ),
    };
    Ok(format!("{done}\n{after}"))
}
