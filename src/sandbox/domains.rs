//! `sandbox.network.allowedDomains` / `deniedDomains`: which hosts sandboxed commands may
//! reach through keel's filtering proxy ([`super::proxy`]). A pattern is a host name
//! (`example.com`, that host only), `*.example.com` (its subdomains, not the name itself) or
//! an IP address (that literal address only). A denied pattern wins over an allowed one.

use crate::config::settings::{Settings, SettingsError};

/// One entry of a domain list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Pattern {
    Exact(String),
    /// `*.suffix`: any name that ends in `.suffix`.
    Subdomains(String),
}

impl Pattern {
    pub fn parse(text: &str) -> Option<Pattern> {
        let t = normalize(text)?;
        match t.strip_prefix("*.") {
            Some(rest) if valid_name(rest) => Some(Pattern::Subdomains(rest.to_string())),
            Some(_) => None,
            None if valid_name(&t) || t.parse::<std::net::IpAddr>().is_ok() => Some(Pattern::Exact(t)),
            None => None,
        }
    }

    fn matches(&self, host: &str) -> bool {
        match self {
            Pattern::Exact(name) => name == host,
            Pattern::Subdomains(suffix) => host
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        }
    }
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pattern::Exact(n) => f.write_str(n),
            Pattern::Subdomains(s) => write!(f, "*.{s}"),
        }
    }
}

/// Lower case, without a trailing dot or IPv6 brackets; `None` for an empty or oversized name.
fn normalize(text: &str) -> Option<String> {
    let t = text.trim().trim_end_matches('.').to_ascii_lowercase();
    let t = t
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .map(str::to_string)
        .unwrap_or(t);
    (!t.is_empty() && t.len() <= 253).then_some(t)
}

/// Letters, digits, hyphens and dots: a DNS name (no spaces, no `@`, no `%` tricks).
fn valid_name(name: &str) -> bool {
    name.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// What the proxy lets through.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct DomainRules {
    pub allowed: Vec<Pattern>,
    pub denied: Vec<Pattern>,
    /// Every host not denied is allowed (`allowNetwork: true` with only a deny list).
    pub allow_unlisted: bool,
}

/// Why a host was refused, for the proxy's 403 text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Denied(Pattern),
    NotAllowed,
    /// Not a host name or address at all.
    Malformed,
}

impl Refusal {
    pub fn explain(&self, host: &str) -> String {
        match self {
            Refusal::Denied(p) => {
                format!("keel's sandbox refused {host}: it matches `{p}` in sandbox.network.deniedDomains")
            }
            Refusal::NotAllowed => format!(
                "keel's sandbox refused {host}: it is not in sandbox.network.allowedDomains (IP addresses must be \
                 listed as they are written)"
            ),
            Refusal::Malformed => format!("keel's sandbox refused `{host}`: it is not a host name or address"),
        }
    }
}

impl DomainRules {
    /// The `sandbox.network` lists, or `None` when neither is set. Errors name a malformed
    /// entry.
    pub fn from_settings(settings: &Settings, allow_network: bool) -> Result<Option<DomainRules>, SettingsError> {
        let mut rules = DomainRules {
            allow_unlisted: allow_network,
            ..DomainRules::default()
        };
        let mut any = false;
        for (key, list) in [
            ("allowedDomains", &mut rules.allowed),
            ("deniedDomains", &mut rules.denied),
        ] {
            for (text, layer) in settings.strings(&["sandbox", "network", key])? {
                any = true;
                let p = Pattern::parse(&text).ok_or_else(|| SettingsError::Invalid {
                    path: layer.label(),
                    key: format!("sandbox.network.{key}"),
                    problem: format!("`{text}` is not a host name, `*.name` or an IP address"),
                })?;
                if !list.contains(&p) {
                    list.push(p);
                }
            }
        }
        // A list given makes the lists decide, even when it is empty (nothing allowed).
        any |= settings.nested(&["sandbox", "network", "allowedDomains"]).is_some();
        // An allow list narrows `allowNetwork`; only a deny list alone leaves the rest open.
        if !rules.allowed.is_empty() {
            rules.allow_unlisted = false;
        }
        Ok(any.then_some(rules))
    }

    /// Whether the proxy may connect to `host` (a name or an IP literal, as the client wrote it).
    pub fn check(&self, host: &str) -> Result<(), Refusal> {
        let Some(h) = normalize(host) else {
            return Err(Refusal::Malformed);
        };
        if !valid_name(&h) && h.parse::<std::net::IpAddr>().is_err() {
            return Err(Refusal::Malformed);
        }
        if let Some(p) = self.denied.iter().find(|p| p.matches(&h)) {
            return Err(Refusal::Denied(p.clone()));
        }
        // An address is reached only when listed as such, never through `allow_unlisted`
        // names or a wildcard: a name list must not open the private network by number.
        if h.parse::<std::net::IpAddr>().is_ok() {
            return match self.allowed.contains(&Pattern::Exact(h)) {
                true => Ok(()),
                false => Err(Refusal::NotAllowed),
            };
        }
        if self.allow_unlisted || self.allowed.iter().any(|p| p.matches(&h)) {
            Ok(())
        } else {
            Err(Refusal::NotAllowed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allowed: &[&str], denied: &[&str]) -> DomainRules {
        DomainRules {
            allowed: allowed.iter().map(|a| Pattern::parse(a).unwrap()).collect(),
            denied: denied.iter().map(|a| Pattern::parse(a).unwrap()).collect(),
            allow_unlisted: false,
        }
    }

    #[test]
    fn wildcards_match_subdomains_and_deny_wins() {
        let r = rules(&["*.example.com", "github.com"], &["evil.example.com"]);
        assert!(r.check("api.example.com").is_ok());
        assert!(r.check("A.B.Example.COM.").is_ok());
        assert_eq!(
            r.check("example.com"),
            Err(Refusal::NotAllowed),
            "the wildcard is for subdomains"
        );
        assert!(r.check("github.com").is_ok());
        assert_eq!(r.check("api.github.com"), Err(Refusal::NotAllowed));
        assert_eq!(r.check("notexample.com"), Err(Refusal::NotAllowed));
        assert!(matches!(r.check("evil.example.com"), Err(Refusal::Denied(_))));
        assert!(
            matches!(r.check("x.evil.example.com"), Ok(())),
            "an exact deny is that name only"
        );
    }

    #[test]
    fn addresses_must_be_listed_as_written() {
        let mut r = rules(&["localhost", "10.0.0.5"], &[]);
        assert_eq!(r.check("127.0.0.1"), Err(Refusal::NotAllowed));
        assert!(r.check("10.0.0.5").is_ok());
        assert_eq!(r.check("[::1]"), Err(Refusal::NotAllowed));
        r.allow_unlisted = true;
        assert_eq!(r.check("169.254.169.254"), Err(Refusal::NotAllowed));
        assert!(r.check("anything.org").is_ok());
    }

    #[test]
    fn malformed_hosts_and_patterns_are_refused() {
        let r = rules(&["localhost"], &[]);
        for bad in ["", "local host", "a@b", "x/y", "%2e"] {
            assert_eq!(r.check(bad), Err(Refusal::Malformed), "{bad}");
        }
        for bad in ["*", "*.", "**.x.com", "a b", "x.*.com"] {
            assert!(Pattern::parse(bad).is_none(), "{bad}");
        }
    }
}
