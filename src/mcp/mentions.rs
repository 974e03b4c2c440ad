//! `@server:uri` mentions: a prompt that names a server's resource gets its contents attached,
//! as `@path` attaches a file.

use tokio_util::sync::CancellationToken;

use super::McpHub;
use super::result;
use crate::types::message::ContentBlock;

/// Most characters of one mentioned resource attached to a prompt.
pub const MAX_ATTACH_CHARS: usize = 256 * 1024;

#[derive(Debug, Default)]
pub struct Attached {
    pub blocks: Vec<ContentBlock>,
    /// The mention tokens (without `@`) that named a server.
    pub handled: Vec<String>,
    /// Mentions that could not be attached, and why.
    pub notes: Vec<String>,
}

/// Splits `server:uri` when `server` is a configured server's name.
pub fn parse<'a>(token: &'a str, servers: &[String]) -> Option<(&'a str, &'a str)> {
    let (server, uri) = token.split_once(':')?;
    (servers.iter().any(|s| s == server) && !uri.is_empty()).then_some((server, uri))
}

pub async fn resolve(hub: &McpHub, text: &str, cancel: &CancellationToken) -> Attached {
    let mut out = Attached::default();
    let names: Vec<String> = hub.servers().iter().map(|s| s.name.clone()).collect();
    if names.is_empty() {
        return out;
    }
    let mut seen: Vec<&str> = Vec::new();
    for word in text.split_whitespace() {
        let Some(token) = word.strip_prefix('@') else {
            continue;
        };
        let token = token.trim_end_matches([',', ';', ')', '!', '?', '\'', '"']);
        let Some((server, uri)) = parse(token, &names) else {
            continue;
        };
        if seen.contains(&token) {
            continue;
        }
        seen.push(token);
        out.handled.push(token.to_string());
        let Some(s) = hub.server(server) else {
            continue;
        };
        match s.read_resource(uri, cancel).await {
            Ok(v) => {
                let mut body = result::read_resource_output(&v).content.as_text();
                if body.len() > MAX_ATTACH_CHARS {
                    let cut = (0..=MAX_ATTACH_CHARS)
                        .rev()
                        .find(|i| body.is_char_boundary(*i))
                        .unwrap_or(0);
                    body.truncate(cut);
                    out.notes.push(format!(
                        "@{token}: the resource is longer than {} KB; only its beginning is attached (ReadMcpResource gives the model all of it)",
                        MAX_ATTACH_CHARS / 1024
                    ));
                }
                out.blocks.push(ContentBlock::text(format!(
                    "The user attached the resource {uri} of MCP server `{server}`:\n{body}"
                )));
            }
            Err(e) => out.notes.push(format!("@{token}: not attached: {}", e.message(server))),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_configured_servers_count() {
        let servers = vec!["docs".to_string()];
        assert_eq!(parse("docs:file:///a.md", &servers), Some(("docs", "file:///a.md")));
        assert_eq!(parse("src/main.rs", &servers), None);
        assert_eq!(parse("other:x", &servers), None);
        assert_eq!(parse("docs:", &servers), None);
    }
}
