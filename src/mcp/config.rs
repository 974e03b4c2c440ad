//! One MCP server's configuration: the reference's `mcpServers` entry format, lowered into a
//! typed [`ServerSpec`] with `${VAR}` / `${VAR:-default}` expanded. Pure functions; reading files
//! and deciding precedence live in `sources.rs`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value};

/// Where a server's configuration came from; later scopes override earlier ones by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// `~/.keel/keel.json` or `~/.claude.json` `mcpServers`, user settings `mcpServers`.
    User,
    /// `.mcp.json` in the project (and project settings `mcpServers`): needs approval.
    Project,
    /// Per-project entries kept outside the repository (`keel.json` / `~/.claude.json` `projects`).
    Local,
    /// `--mcp-config` (and `--settings` `mcpServers`).
    Cli,
    /// Registered at run time by an embedding front end (the Agent SDK's in-process servers).
    Sdk,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
            Scope::Cli => "dynamic",
            Scope::Sdk => "sdk",
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        match s {
            "user" | "global" => Some(Scope::User),
            "project" => Some(Scope::Project),
            "local" => Some(Scope::Local),
            _ => None,
        }
    }
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerSpec {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        /// How keel signs in when the server asks (`"oauth"` in the entry).
        oauth: OAuthConfig,
    },
    /// The legacy HTTP+SSE transport (an SSE stream plus a POST endpoint it names).
    Sse {
        url: String,
        headers: BTreeMap<String, String>,
        /// How keel signs in when the server asks, as for streamable HTTP.
        oauth: OAuthConfig,
    },
    /// A server inside the program driving keel (the Agent SDK's `"type": "sdk"`), reached
    /// through `mcp_message` control requests; only `--mcp-config` may declare one.
    Sdk,
}

impl ServerSpec {
    pub fn transport(&self) -> &'static str {
        match self {
            ServerSpec::Stdio { .. } => "stdio",
            ServerSpec::Http { .. } => "http",
            ServerSpec::Sse { .. } => "sse",
            ServerSpec::Sdk => "sdk",
        }
    }

    /// What a server that signs in (streamable HTTP or legacy SSE) is reached with: its URL,
    /// its configured headers and its sign-in settings.
    pub fn remote(&self) -> Option<(&String, &BTreeMap<String, String>, &OAuthConfig)> {
        match self {
            ServerSpec::Http { url, headers, oauth } | ServerSpec::Sse { url, headers, oauth } => {
                Some((url, headers, oauth))
            }
            _ => None,
        }
    }

    /// One line for listings: the command line or the URL.
    pub fn target(&self) -> String {
        match self {
            ServerSpec::Stdio { command, args, .. } => {
                let mut s = command.clone();
                for a in args {
                    s.push(' ');
                    s.push_str(a);
                }
                s
            }
            ServerSpec::Http { url, .. } | ServerSpec::Sse { url, .. } => url.clone(),
            ServerSpec::Sdk => "in-process (the program driving keel)".into(),
        }
    }
}

/// Parses one `mcpServers` entry without expanding variables (for listings and editing).
pub fn parse_entry(name: &str, raw: &Value) -> Result<ServerSpec, String> {
    lower(name, raw, &|s: &str| Ok(s.to_string()))
}

/// Parses one `mcpServers` entry and expands `${VAR}` / `${VAR:-default}` in the command, args,
/// env, url and headers. A variable that is unset and has no default is an error naming it.
pub fn resolve_entry(name: &str, raw: &Value, env: &dyn Fn(&str) -> Option<String>) -> Result<ServerSpec, String> {
    lower(name, raw, &|s: &str| expand(s, env))
}

fn lower(name: &str, raw: &Value, expand: &dyn Fn(&str) -> Result<String, String>) -> Result<ServerSpec, String> {
    validate_name(name)?;
    let obj = raw
        .as_object()
        .ok_or_else(|| format!("server `{name}`: the entry must be a JSON object"))?;
    let kind = match obj.get("type") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(other) => return Err(format!("server `{name}`: `type` must be a string, found {other}")),
    };
    let kind = match kind {
        Some(k) => k,
        None if obj.contains_key("command") => "stdio",
        None if obj.contains_key("url") => {
            return Err(format!(
                "server `{name}` has a `url` but no `type`: add \"type\": \"http\" (streamable HTTP) or \"type\": \"sse\""
            ));
        }
        None => {
            return Err(format!(
                "server `{name}` needs a `command` (stdio) or a `type` and `url`"
            ));
        }
    };
    match kind {
        "stdio" => {
            let command = string(obj, "command", name)?
                .ok_or_else(|| format!("server `{name}`: a stdio server needs a `command`"))?;
            if command.trim().is_empty() {
                return Err(format!("server `{name}`: `command` is empty"));
            }
            let args = strings(obj, "args", name)?;
            let env = string_map(obj, "env", name)?;
            let cwd = string(obj, "cwd", name)?
                .map(|c| expand(&c))
                .transpose()?
                .map(PathBuf::from);
            Ok(ServerSpec::Stdio {
                command: expand(&command).map_err(|e| format!("server `{name}`: {e}"))?,
                args: args
                    .iter()
                    .map(|a| expand(a))
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("server `{name}`: {e}"))?,
                env: expand_map(env, expand).map_err(|e| format!("server `{name}`: {e}"))?,
                cwd,
            })
        }
        "http" | "streamable-http" | "sse" => {
            let url =
                string(obj, "url", name)?.ok_or_else(|| format!("server `{name}`: a {kind} server needs a `url`"))?;
            let url = expand(&url).map_err(|e| format!("server `{name}`: {e}"))?;
            check_url(name, &url)?;
            let headers =
                expand_map(string_map(obj, "headers", name)?, expand).map_err(|e| format!("server `{name}`: {e}"))?;
            for key in headers.keys() {
                check_header(name, key)?;
            }
            let oauth = oauth_config(name, obj.get("oauth"), expand)?;
            Ok(if kind == "sse" {
                ServerSpec::Sse { url, headers, oauth }
            } else {
                ServerSpec::Http { url, headers, oauth }
            })
        }
        "sdk" => Ok(ServerSpec::Sdk),
        "ws" => Err(format!(
            "server `{name}`: WebSocket servers (`\"type\": \"ws\"`) are not supported; use \"http\" or \"sse\""
        )),
        other => Err(format!(
            "server `{name}`: unknown `type` `{other}`; use \"stdio\", \"http\" or \"sse\" (or \"sdk\" for a program's in-process server)"
        )),
    }
}

/// The `"oauth"` object of an HTTP server's entry: what keel needs to sign in that discovery
/// cannot tell it. Everything is optional; without a client id keel registers itself
/// (dynamic client registration).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OAuthConfig {
    /// A client id registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// Its secret, for a confidential client (usually `${VAR}` from the environment).
    pub client_secret: Option<String>,
    /// The port of the loopback address the browser is sent back to (0 or absent: any free
    /// port; a pre-registered client usually needs a fixed one).
    pub callback_port: u16,
    /// Scopes to ask for instead of those the server's metadata names.
    pub scopes: Vec<String>,
    /// An https URL of keel's client metadata document (a URL-based client id), used when the
    /// authorization server supports them and no client id is configured.
    pub client_metadata_url: Option<String>,
    /// `client_credentials`: keel signs in as the client itself, with its id and secret and no
    /// person (machine-to-machine servers); otherwise a person signs in in a browser.
    pub client_credentials: bool,
}

fn oauth_config(
    name: &str,
    raw: Option<&Value>,
    expand: &dyn Fn(&str) -> Result<String, String>,
) -> Result<OAuthConfig, String> {
    let obj = match raw {
        None | Some(Value::Null) => return Ok(OAuthConfig::default()),
        Some(Value::Object(o)) => o,
        Some(other) => return Err(format!("server `{name}`: `oauth` must be an object, found {other}")),
    };
    let text = |key: &str| -> Result<Option<String>, String> {
        string(obj, key, name)?
            .map(|v| expand(&v).map_err(|e| format!("server `{name}`: oauth.{key}: {e}")))
            .transpose()
    };
    for key in obj.keys() {
        if !matches!(
            key.as_str(),
            "clientId" | "clientSecret" | "callbackPort" | "scopes" | "clientMetadataUrl" | "grant"
        ) {
            return Err(format!(
                "server `{name}`: unknown oauth key `{key}` (known: clientId, clientSecret, callbackPort, scopes, clientMetadataUrl, grant)"
            ));
        }
    }
    let callback_port = match obj.get("callbackPort") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .ok_or_else(|| format!("server `{name}`: oauth.callbackPort must be a port number, found {v}"))?,
    };
    let scopes = match obj.get("scopes") {
        Some(Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
        _ => strings(obj, "scopes", name)?,
    };
    let client_credentials = match text("grant")?.as_deref() {
        None | Some("authorization_code") => false,
        Some("client_credentials") => true,
        Some(other) => {
            return Err(format!(
                "server `{name}`: oauth.grant `{other}` is not known; use \"authorization_code\" (a person signs in, the default) or \"client_credentials\""
            ));
        }
    };
    let config = OAuthConfig {
        client_id: text("clientId")?.filter(|s| !s.is_empty()),
        client_secret: text("clientSecret")?.filter(|s| !s.is_empty()),
        callback_port,
        scopes,
        client_metadata_url: text("clientMetadataUrl")?.filter(|s| !s.is_empty()),
        client_credentials,
    };
    if config.client_secret.is_some() && config.client_id.is_none() {
        return Err(format!("server `{name}`: oauth.clientSecret needs oauth.clientId"));
    }
    if config.client_credentials && (config.client_id.is_none() || config.client_secret.is_none()) {
        return Err(format!(
            "server `{name}`: the client_credentials grant needs oauth.clientId and oauth.clientSecret"
        ));
    }
    if let Some(url) = &config.client_metadata_url {
        let ok = reqwest::Url::parse(url).is_ok_and(|u| u.scheme() == "https" && u.path() != "/");
        if !ok {
            return Err(format!(
                "server `{name}`: oauth.clientMetadataUrl must be an https URL with a path, got {url}"
            ));
        }
    }
    Ok(config)
}

/// Server names become part of tool names and permission rules (sanitised there).
pub fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err(format!("server name `{name}` must have 1 to 64 characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
    {
        return Err(format!(
            "server name `{name}` may only contain letters, digits, `_`, `-`, `.` and `:` (which separates a plugin's name from its server's)"
        ));
    }
    Ok(())
}

fn check_url(name: &str, url: &str) -> Result<(), String> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| format!("server `{name}`: `url` {url} is not a valid URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("server `{name}`: `url` must be http:// or https://, got {url}"));
    }
    Ok(())
}

/// Headers the transport sets itself cannot be configured.
fn check_header(name: &str, key: &str) -> Result<(), String> {
    let lower = key.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "accept" | "mcp-session-id" | "last-event-id" | "content-type" | "content-length" | "host"
    ) {
        return Err(format!(
            "server `{name}`: header `{key}` is set by the transport and cannot be configured"
        ));
    }
    reqwest::header::HeaderName::from_bytes(key.as_bytes())
        .map_err(|_| format!("server `{name}`: `{key}` is not a valid header name"))?;
    Ok(())
}

fn string(obj: &Map<String, Value>, key: &str, name: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("server `{name}`: `{key}` must be a string, found {other}")),
    }
}

fn strings(obj: &Map<String, Value>, key: &str, name: &str) -> Result<Vec<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                other => Err(format!("server `{name}`: `{key}` must hold strings, found {other}")),
            })
            .collect(),
        Some(other) => Err(format!(
            "server `{name}`: `{key}` must be an array of strings, found {other}"
        )),
    }
}

fn string_map(obj: &Map<String, Value>, key: &str, name: &str) -> Result<BTreeMap<String, String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(n) => Ok((k.clone(), n.to_string())),
                Value::Bool(b) => Ok((k.clone(), b.to_string())),
                other => Err(format!("server `{name}`: `{key}.{k}` must be a string, found {other}")),
            })
            .collect(),
        Some(other) => Err(format!(
            "server `{name}`: `{key}` must be an object of strings, found {other}"
        )),
    }
}

fn expand_map(
    map: BTreeMap<String, String>,
    expand: &dyn Fn(&str) -> Result<String, String>,
) -> Result<BTreeMap<String, String>, String> {
    map.into_iter().map(|(k, v)| Ok((k, expand(&v)?))).collect()
}

/// Expands `${VAR}` and `${VAR:-default}`. Text without `${` is returned as is; `$VAR` without
/// braces is left alone (as the reference does). An unset variable without a default is an
/// error, so a missing token is never sent as an empty string.
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut missing = Vec::new();
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        let valid = !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            out.push_str(&rest[start..start + 2 + end + 1]);
        } else {
            match (env(var).filter(|v| !v.is_empty() || default.is_none()), default) {
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => missing.push(var.to_string()),
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(format!(
            "environment variable(s) {} not set (use ${{VAR:-default}} for a fallback)",
            missing.join(", ")
        ))
    }
}

/// The environment variables an entry refers to with `${VAR}` or `${VAR:-default}`, sorted.
pub fn variables(raw: &Value) -> Vec<String> {
    let mut found = std::collections::BTreeSet::new();
    let mut stack = vec![raw];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                let mut rest = s.as_str();
                while let Some(start) = rest.find("${") {
                    let after = &rest[start + 2..];
                    let Some(end) = after.find('}') else { break };
                    let var = after[..end].split(":-").next().unwrap_or("");
                    if !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        found.insert(var.to_string());
                    }
                    rest = &after[end + 1..];
                }
            }
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    found.into_iter().collect()
}

/// The `mcpServers` object of a configuration document (`.mcp.json`, `--mcp-config`,
/// `keel.json`): entries in file order. A document without the key has no servers.
pub fn servers_of(doc: &Value, label: &str) -> Result<Vec<(String, Value)>, String> {
    match doc.get("mcpServers") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(m)) => Ok(m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        Some(other) => Err(format!("{label}: `mcpServers` must be an object, found {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(k: &str) -> Option<String> {
        match k {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expansion_forms() {
        assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer s3cret");
        assert_eq!(expand("${NOPE:-fallback}/x", &env).unwrap(), "fallback/x");
        assert_eq!(expand("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(expand("${TOKEN:-d}", &env).unwrap(), "s3cret");
        assert_eq!(expand("$TOKEN and ${", &env).unwrap(), "$TOKEN and ${");
        assert_eq!(expand("${not valid}", &env).unwrap(), "${not valid}");
        let err = expand("${A}${B:-x}${C}", &env).unwrap_err();
        assert!(err.contains("A, C"), "{err}");
    }

    #[test]
    fn stdio_http_sse_and_errors() {
        let spec = resolve_entry(
            "fs",
            &json!({"command": "node", "args": ["srv.js", "${NOPE:-/tmp}", 3], "env": {"K": "${TOKEN}"}}),
            &env,
        )
        .unwrap();
        match spec {
            ServerSpec::Stdio { command, args, env, .. } => {
                assert_eq!(command, "node");
                assert_eq!(args, vec!["srv.js", "/tmp", "3"]);
                assert_eq!(env["K"], "s3cret");
            }
            other => panic!("{other:?}"),
        }
        let http = resolve_entry(
            "r",
            &json!({"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}),
            &env,
        )
        .unwrap();
        assert_eq!(http.transport(), "http");
        assert_eq!(
            resolve_entry("s", &json!({"type": "sse", "url": "http://h/sse"}), &env)
                .unwrap()
                .transport(),
            "sse"
        );
        let no_type = resolve_entry("r", &json!({"url": "https://h"}), &env).unwrap_err();
        assert!(no_type.contains("no `type`"), "{no_type}");
        assert!(
            resolve_entry("w", &json!({"type": "ws", "url": "ws://h"}), &env)
                .unwrap_err()
                .contains("WebSocket")
        );
        assert!(resolve_entry("f", &json!({"type": "http", "url": "file:///etc/passwd"}), &env).is_err());
        assert!(
            resolve_entry("m", &json!({"command": "x", "env": {"K": "${MISSING}"}}), &env)
                .unwrap_err()
                .contains("MISSING")
        );
        assert!(
            resolve_entry(
                "h",
                &json!({"type": "http", "url": "http://h", "headers": {"Mcp-Session-Id": "x"}}),
                &env
            )
            .is_err()
        );
        assert!(resolve_entry("bad name", &json!({"command": "x"}), &env).is_err());
        assert!(resolve_entry("a", &json!({"command": ["x"]}), &env).is_err());
        assert_eq!(
            variables(&json!({"url": "https://h/?k=${KEY}", "headers": {"A": "${TOKEN:-x} ${KEY}"}, "n": 1})),
            vec!["KEY", "TOKEN"]
        );
        // Listing shows the configuration as written.
        let raw = parse_entry("m", &json!({"command": "x", "env": {"K": "${MISSING}"}})).unwrap();
        assert_eq!(raw.target(), "x");
    }
}
