//! Base URLs of model servers: checked once at start (a missing scheme is a configuration error,
//! not a network fault), joined with each protocol's path, and the hints errors give about them.

use super::ProviderError;

/// A checked base URL, without a trailing slash, remembering where it was configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl {
    text: String,
    url: url::Url,
    /// Where the value came from, for messages: `OPENAI_BASE_URL`, `providers.ollama.baseUrl`.
    pub source: String,
}

impl BaseUrl {
    pub fn parse(raw: &str, source: &str) -> Result<BaseUrl, ProviderError> {
        let trimmed = raw.trim();
        let bad = |why: String| ProviderError::Config(format!("{source} is `{raw}`, {why}"));
        if trimmed.is_empty() {
            return Err(bad(
                "which is empty: give the server's URL, e.g. http://localhost:11434/v1".into(),
            ));
        }
        let Some((scheme, _)) = trimmed.split_once("://") else {
            let fix = if looks_local(trimmed) { "http" } else { "https" };
            return Err(bad(format!(
                "which has no scheme: write `{fix}://{}`",
                trimmed.trim_end_matches('/')
            )));
        };
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return Err(bad(format!(
                "whose scheme `{scheme}` is not supported: use http:// or https://"
            )));
        }
        let url = url::Url::parse(trimmed).map_err(|e| bad(format!("which is not a valid URL: {e}")))?;
        if url.host_str().is_none_or(str::is_empty) {
            return Err(bad("which names no host".into()));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad(
                "which has a query or fragment; keel appends the API path to the base URL, so give \
                 it without `?…` or `#…`"
                    .into(),
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad(
                "which carries credentials; give the key through the API key variable instead".into(),
            ));
        }
        let text = url.as_str().trim_end_matches('/').to_string();
        Ok(BaseUrl {
            text,
            url,
            source: source.to_string(),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The base with an API path appended (`path` starts with `/`).
    pub fn join(&self, path: &str) -> String {
        format!("{}{path}", self.text)
    }

    /// The base without a trailing `/v1` (where Ollama's `/api/…` and llama.cpp's `/props` live).
    pub fn root(&self) -> String {
        self.text
            .strip_suffix("/v1")
            .unwrap_or(&self.text)
            .trim_end_matches('/')
            .to_string()
    }

    /// `host:port` for messages.
    pub fn authority(&self) -> String {
        let host = self.url.host_str().unwrap_or("");
        match self.url.port_or_known_default() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        }
    }

    /// Whether the server is on this machine (project settings may only point there).
    pub fn is_loopback(&self) -> bool {
        match self.url.host() {
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        }
    }

    /// Whether the server runs on this machine or the local network (Ollama, llama.cpp, vLLM,
    /// LM Studio as people run them): such a server is asked what it serves, since it decides
    /// the context window and whether tools reach the model, whatever keel's table says.
    pub fn is_local(&self) -> bool {
        match self.url.host() {
            Some(url::Host::Domain(d)) => {
                let d = d.to_ascii_lowercase();
                d == "localhost"
                    || d == "host.docker.internal"
                    || [".localhost", ".local", ".lan", ".internal", ".home.arpa"]
                        .iter()
                        .any(|suffix| d.ends_with(suffix))
            }
            Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback() || ip.is_unique_local() || ip.is_unicast_link_local(),
            None => false,
        }
    }

    pub fn ends_in_v1(&self) -> bool {
        self.text.ends_with("/v1")
    }
}

fn looks_local(raw: &str) -> bool {
    let host = raw.split(['/', ':']).next().unwrap_or("");
    host.eq_ignore_ascii_case("localhost")
        || host.starts_with("127.")
        || host.starts_with("0.0.0.0")
        || host.starts_with("10.")
        || host.starts_with("192.168.")
        || raw.starts_with('[')
}

/// What a 404 for `requested` most likely means, given how the base URL was written.
pub fn not_found_hint(requested: &str, base: &BaseUrl, protocol_adds_v1: bool) -> String {
    if requested.contains("/v1/v1/") {
        return format!(
            "the path has /v1 twice: keel adds /v1 itself, so set {} without the trailing /v1 (`{}`)",
            base.source,
            base.as_str().trim_end_matches("/v1")
        );
    }
    if !protocol_adds_v1 && !base.as_str().contains("/v1") && !base.as_str().contains("/api") {
        return format!(
            "OpenAI-compatible servers usually serve under /v1: try {} = `{}/v1`",
            base.source,
            base.as_str()
        );
    }
    format!("check {} (`{}`) and the model name", base.source, base.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(raw: &str) -> String {
        BaseUrl::parse(raw, "OPENAI_BASE_URL").unwrap_err().to_string()
    }

    #[test]
    fn missing_scheme_is_named_with_the_fix() {
        let e = err("localhost:11434/v1");
        assert!(e.contains("`localhost:11434/v1`") && e.contains("no scheme"), "{e}");
        assert!(e.contains("`http://localhost:11434/v1`"), "{e}");
        let e = err("api.example.com/v1/");
        assert!(e.contains("`https://api.example.com/v1`"), "{e}");
    }

    #[test]
    fn other_problems_are_named() {
        assert!(err("ftp://host/v1").contains("`ftp` is not supported"));
        assert!(err("http://").contains("not a valid URL") || err("http://").contains("no host"));
        assert!(err("http://exa mple.com").contains("not a valid URL"));
        assert!(err("https://h/v1?api-version=1").contains("query"));
        assert!(err("https://u:p@h/v1").contains("credentials"));
        assert!(err("  ").contains("empty"));
    }

    #[test]
    fn local_servers_are_told_from_remote_ones() {
        let local = |raw: &str| BaseUrl::parse(raw, "X").unwrap().is_local();
        for raw in [
            "http://localhost:11434/v1",
            "http://127.0.0.1:8080/v1",
            "http://192.168.1.20:8000/v1",
            "http://10.0.0.5/v1",
            "http://gpu-box.local:8080/v1",
            "http://[::1]:8080/v1",
            "http://host.docker.internal:11434/v1",
        ] {
            assert!(local(raw), "{raw}");
        }
        for raw in [
            "https://api.openai.com/v1",
            "https://openrouter.ai/api/v1",
            "http://8.8.8.8/v1",
        ] {
            assert!(!local(raw), "{raw}");
        }
    }

    #[test]
    fn joins_and_roots() {
        let b = BaseUrl::parse("http://127.0.0.1:8080/v1/", "X").unwrap();
        assert_eq!(b.as_str(), "http://127.0.0.1:8080/v1");
        assert_eq!(b.join("/chat/completions"), "http://127.0.0.1:8080/v1/chat/completions");
        assert_eq!(b.root(), "http://127.0.0.1:8080");
        assert_eq!(b.authority(), "127.0.0.1:8080");
        assert!(b.is_loopback() && b.ends_in_v1());
        let r = BaseUrl::parse("https://openrouter.ai/api/v1", "X").unwrap();
        assert!(!r.is_loopback());
        assert_eq!(r.authority(), "openrouter.ai:443");
        assert!(BaseUrl::parse("http://localhost:11434", "X").unwrap().is_loopback());
        assert!(BaseUrl::parse("http://[::1]:8000/v1", "X").unwrap().is_loopback());
    }

    #[test]
    fn not_found_hints() {
        let b = BaseUrl::parse("http://h:1/v1", "ANTHROPIC_BASE_URL").unwrap();
        let h = not_found_hint("http://h:1/v1/v1/messages", &b, true);
        assert!(h.contains("/v1 twice") && h.contains("`http://h:1`"), "{h}");
        let o = BaseUrl::parse("http://h:11434", "OPENAI_BASE_URL").unwrap();
        let h = not_found_hint("http://h:11434/chat/completions", &o, false);
        assert!(h.contains("`http://h:11434/v1`"), "{h}");
    }
}
