//! `sandbox.network.allowedDomains` / `deniedDomains`: which hosts sandboxed commands may
//! reach through keel's filtering proxy ([`super::proxy`]). A pattern is a host name
//! (`example.com`, that host only), `*.example.com` (its subdomains, not the name itself) or
//! an IP address (that literal address only). A denied pattern wins over an allowed one.

use std::net::IpAddr;

use crate::config::settings::{Settings, SettingsError};
use crate::types::ip_range::{Range, classify};

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
            None if t.parse::<IpAddr>().is_ok() => Some(Pattern::Exact(t)),
            None if valid_name(&t) && !reads_as_address(&t) => Some(Pattern::Exact(t)),
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

/// A name whose last label is a number or `0x…`: getaddrinfo reads such a "name" as an IPv4
/// address in one of its short forms, so it must be judged as one, not as a host name.
fn reads_as_address(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    last.bytes().all(|b| b.is_ascii_digit()) || last.starts_with("0x")
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
    /// A name the resolver would read as an IP address (`127.1`, `2130706433`, `0x7f.1`).
    AddressForm,
    /// The name resolves to a loopback, private, link-local or metadata address that the
    /// lists do not name.
    Resolved {
        ip: IpAddr,
        range: Range,
    },
}

/// How a host got through the lists: what it may then resolve to depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// An IP literal listed as it is written.
    Address,
    /// The exact name is listed.
    Exact,
    /// A `*.name` pattern matched.
    Wildcard,
    /// Not listed: open because the lists only deny.
    Unlisted,
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
            Refusal::AddressForm => format!(
                "keel's sandbox refused `{host}`: it reads as an IP address in a short or numeric form; write \
                 addresses in full (a.b.c.d) and list them in sandbox.network.allowedDomains"
            ),
            Refusal::Resolved { ip, range } => format!(
                "keel's sandbox refused {host}: it resolves to {ip}, {}; such addresses are reached only when \
                 sandbox.network.allowedDomains names the host (metadata and link-local addresses: the exact \
                 name or the address itself)",
                range.describe()
            ),
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
        // A list given makes the lists decide, even when it is empty (nothing allowed): an
        // allow list narrows `allowNetwork`; only a deny list alone leaves the rest open.
        if settings.nested(&["sandbox", "network", "allowedDomains"]).is_some() || !rules.allowed.is_empty() {
            any = true;
            rules.allow_unlisted = false;
        }
        Ok(any.then_some(rules))
    }

    /// Whether the proxy may connect to `host` (a name or an IP literal, as the client wrote
    /// it), and how it got through; [`DomainRules::check_resolved`] then judges each address.
    pub fn check(&self, host: &str) -> Result<Grant, Refusal> {
        let Some(h) = normalize(host) else {
            return Err(Refusal::Malformed);
        };
        let literal = h.parse::<IpAddr>().is_ok();
        if !literal && !valid_name(&h) {
            return Err(Refusal::Malformed);
        }
        if !literal && reads_as_address(&h) {
            return Err(Refusal::AddressForm);
        }
        if let Some(p) = self.denied.iter().find(|p| p.matches(&h)) {
            return Err(Refusal::Denied(p.clone()));
        }
        // An address is reached only when listed as such, never through `allow_unlisted`
        // names or a wildcard: a name list must not open the private network by number.
        if literal {
            return match self.allowed.contains(&Pattern::Exact(h)) {
                true => Ok(Grant::Address),
                false => Err(Refusal::NotAllowed),
            };
        }
        if self.allowed.contains(&Pattern::Exact(h.clone())) {
            Ok(Grant::Exact)
        } else if self.allowed.iter().any(|p| p.matches(&h)) {
            Ok(Grant::Wildcard)
        } else if self.allow_unlisted {
            Ok(Grant::Unlisted)
        } else {
            Err(Refusal::NotAllowed)
        }
    }

    /// Whether a name let through as `grant` may be connected to at `ip`, one of its
    /// addresses. A name only the openness of the lists let through reaches public addresses
    /// only (a public name can resolve to this machine or the cloud's metadata service); a
    /// listed pattern may reach the private network; metadata and link-local addresses need
    /// the exact name or the address listed. A denied address is denied under any name.
    pub fn check_resolved(&self, grant: Grant, ip: IpAddr) -> Result<(), Refusal> {
        let bare = ip.to_string();
        if let Some(p) = self.denied.iter().find(|p| **p == Pattern::Exact(bare.clone())) {
            return Err(Refusal::Denied(p.clone()));
        }
        let Some(range) = classify(ip) else {
            return Ok(());
        };
        let allowed = match (grant, range) {
            (Grant::Address, _) => true,
            (Grant::Exact, _) => true,
            (Grant::Wildcard, Range::Metadata | Range::LinkLocal) => false,
            (Grant::Wildcard, _) => true,
            (Grant::Unlisted, _) => false,
        };
        match allowed {
            true => Ok(()),
            false => Err(Refusal::Resolved { ip, range }),
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
            matches!(r.check("x.evil.example.com"), Ok(Grant::Wildcard)),
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

    #[test]
    fn short_and_numeric_address_forms_are_not_names() {
        let mut r = rules(&["*.example.com"], &[]);
        r.allow_unlisted = true;
        for form in [
            "127.1",
            "2130706433",
            "0x7f.1",
            "0251.0376.0251.0376",
            "x.0x7f",
            "a.example.com.1",
        ] {
            assert_eq!(r.check(form), Err(Refusal::AddressForm), "{form}");
        }
        assert!(Pattern::parse("127.1").is_none());
        assert!(Pattern::parse("2130706433").is_none());
        assert_eq!(r.check("v1.example.com"), Ok(Grant::Wildcard));
    }

    #[test]
    fn what_a_name_may_resolve_to_depends_on_how_it_was_let_through() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let mut r = rules(&["localhost", "*.corp.test", "169.254.169.254"], &["10.9.9.9"]);
        r.allow_unlisted = true;
        assert_eq!(r.check("localhost"), Ok(Grant::Exact));
        assert!(r.check_resolved(Grant::Exact, ip("127.0.0.1")).is_ok());
        assert!(r.check_resolved(Grant::Wildcard, ip("10.0.0.7")).is_ok());
        assert!(matches!(
            r.check_resolved(Grant::Wildcard, ip("169.254.169.254")),
            Err(Refusal::Resolved {
                range: Range::Metadata,
                ..
            })
        ));
        // An unlisted name that resolves to this machine or the metadata service (DNS
        // rebinding, `localtest.me`-style names) reaches neither.
        for private in ["127.0.0.1", "::1", "169.254.169.254", "192.168.1.1", "::ffff:127.0.0.1"] {
            let refused = r.check_resolved(Grant::Unlisted, ip(private)).unwrap_err();
            assert!(matches!(refused, Refusal::Resolved { .. }), "{private}");
            assert!(refused.explain("h.test").contains("allowedDomains"), "{private}");
        }
        assert!(r.check_resolved(Grant::Unlisted, ip("93.184.216.34")).is_ok());
        assert!(r.check_resolved(Grant::Address, ip("169.254.169.254")).is_ok());
        assert!(matches!(
            r.check_resolved(Grant::Exact, ip("10.9.9.9")),
            Err(Refusal::Denied(_))
        ));
    }

    #[test]
    fn an_empty_allow_list_allows_nothing() {
        let t = tempfile::tempdir().unwrap();
        let keel = t.path().join("keel");
        std::fs::create_dir_all(&keel).unwrap();
        std::fs::write(
            keel.join("settings.json"),
            r#"{"sandbox": {"network": {"allowedDomains": []}}}"#,
        )
        .unwrap();
        let s = Settings::load(None, &keel, &t.path().join("proj"), None).unwrap();
        let r = DomainRules::from_settings(&s, true).unwrap().expect("the list decides");
        assert!(!r.allow_unlisted);
        assert_eq!(r.check("example.org"), Err(Refusal::NotAllowed));
    }
}
