//! Which addresses WebFetch may connect to. A page a model asks for must not become a way into
//! the user's machine or network: loopback, private and link-local ranges, carrier-grade NAT,
//! unspecified and reserved addresses are refused unless the user's settings allow the private
//! network (`webFetch.allowPrivateNetwork`), and cloud metadata services (which hand out
//! credentials) stay refused even then, unless an allow rule names them exactly.
//!
//! The check runs on the addresses a connection really uses: [`GuardedResolver`] is the HTTP
//! client's resolver, so the addresses it approves are the ones connected to (a name that
//! resolves to a public address for the check and a private one for the connection — DNS
//! rebinding — cannot slip through), and every redirect is resolved again.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

pub use crate::types::ip_range::{Range, classify, is_metadata_name, normalize_host};
use std::sync::Arc;

/// An address keel will not connect to, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{host} resolves to {ip}, {}", range.describe())]
pub struct Refused {
    pub host: String,
    pub ip: IpAddr,
    pub range: Range,
}

impl Refused {
    /// What the model is told: why, and what would allow it.
    pub fn explain(&self) -> String {
        let what = if self.host == self.ip.to_string() {
            format!("{} is {}", self.ip, self.range.describe())
        } else {
            self.to_string()
        };
        let remedy = if self.range == Range::Metadata {
            "Metadata services hand out credentials, so WebFetch never reaches them unless the user's settings allow \
             the private network and an allow rule names the host exactly (`WebFetch(domain:HOST)`)."
        } else {
            "WebFetch reaches only public addresses unless the user's own settings say \
             `\"webFetch\": {\"allowPrivateNetwork\": true}`."
        };
        format!("refused: {what}. {remedy}")
    }
}

/// What the user allows beyond the public internet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// `webFetch.allowPrivateNetwork` from the user's own settings.
    pub allow_private: bool,
    /// Metadata hosts (names or addresses) an allow rule names exactly; they count only with
    /// `allow_private`.
    pub metadata_allowed: BTreeSet<String>,
    /// Addresses treated as public (tests reach their loopback servers as if they were remote).
    #[cfg(test)]
    pub public_for_tests: Vec<IpAddr>,
}

impl Policy {
    // Outside tests every field is named here; in tests the one for tests keeps its default.
    #[cfg_attr(not(test), allow(clippy::needless_update))]
    pub fn new(allow_private: bool, metadata_allowed: BTreeSet<String>) -> Policy {
        Policy {
            allow_private,
            metadata_allowed,
            ..Policy::default()
        }
    }

    /// Whether `ip`, reached under the name `host`, may be connected to.
    pub fn check(&self, host: &str, ip: IpAddr) -> Result<(), Refused> {
        #[cfg(test)]
        if self.public_for_tests.contains(&ip) {
            return Ok(());
        }
        let Some(range) = classify(ip) else {
            return Ok(());
        };
        let host = normalize_host(host);
        let allowed = match range {
            Range::Metadata => {
                self.allow_private
                    && (self.metadata_allowed.contains(&host) || self.metadata_allowed.contains(&ip.to_string()))
            }
            _ => self.allow_private,
        };
        if allowed {
            Ok(())
        } else {
            Err(Refused { host, ip, range })
        }
    }

    /// The check of a host before anything is resolved: an IP literal is judged as it is, a
    /// metadata name as the metadata address it stands for.
    pub fn check_host(&self, host: &str) -> Result<(), Refused> {
        let bare = normalize_host(host);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return self.check(&bare, ip);
        }
        if is_metadata_name(&bare) {
            let ip = IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254));
            let allowed = self.allow_private && self.metadata_allowed.contains(&bare);
            if !allowed {
                return Err(Refused {
                    host: bare,
                    ip,
                    range: Range::Metadata,
                });
            }
        }
        Ok(())
    }
}

/// Looks a name up (the system resolver in keel; a table in tests).
pub type Lookup =
    Arc<dyn Fn(String) -> futures_util::future::BoxFuture<'static, std::io::Result<Vec<IpAddr>>> + Send + Sync>;

/// The system resolver (getaddrinfo, through tokio).
pub fn system_lookup() -> Lookup {
    Arc::new(|name: String| {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((name.as_str(), 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    })
}

/// The HTTP client's resolver: every address of a name is checked against the policy before
/// the client may connect to any of them. Names of configured proxies are resolved without the
/// check (the proxy is the user's own choice; keel checks the target itself, see `fetch`).
pub struct GuardedResolver {
    pub policy: Arc<Policy>,
    pub proxy_hosts: Vec<String>,
    pub lookup: Lookup,
}

impl GuardedResolver {
    /// The addresses of `host` when every one of them is allowed.
    pub async fn resolve_checked(&self, host: &str) -> Result<Vec<IpAddr>, ResolveError> {
        self.policy.check_host(host).map_err(ResolveError::Refused)?;
        let bare = normalize_host(host);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(vec![ip]);
        }
        let addrs = (self.lookup)(bare.clone())
            .await
            .map_err(|e| ResolveError::Lookup(format!("cannot resolve {bare}: {e}")))?;
        if addrs.is_empty() {
            return Err(ResolveError::Lookup(format!("{bare} has no addresses")));
        }
        // One refused address refuses the name: a host that answers with both a public and a
        // private address is not one to trust with either.
        for ip in &addrs {
            self.policy.check(&bare, *ip).map_err(ResolveError::Refused)?;
        }
        Ok(addrs)
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum ResolveError {
    #[error("{0}")]
    Refused(Refused),
    #[error("{0}")]
    Lookup(String),
}

impl reqwest::dns::Resolve for GuardedResolverHandle {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let this = self.0.clone();
        let name = name.as_str().to_string();
        Box::pin(async move {
            let bare = normalize_host(&name);
            let addrs = if this.proxy_hosts.contains(&bare) {
                (this.lookup)(bare)
                    .await
                    .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?
            } else {
                this.resolve_checked(&name)
                    .await
                    .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?
            };
            let iter: reqwest::dns::Addrs = Box::new(addrs.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(iter)
        })
    }
}

/// The resolver as the HTTP client holds it.
#[derive(Clone)]
pub struct GuardedResolverHandle(pub Arc<GuardedResolver>);

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn private_needs_the_setting_and_metadata_an_exact_rule_too() {
        let strict = Policy::default();
        assert!(strict.check("x", ip("10.0.0.1")).is_err());
        assert!(strict.check("x", ip("8.8.8.8")).is_ok());
        let open = Policy {
            allow_private: true,
            ..Policy::default()
        };
        assert!(open.check("x", ip("127.0.0.1")).is_ok());
        let refused = open.check("169.254.169.254", ip("169.254.169.254")).unwrap_err();
        assert_eq!(refused.range, Range::Metadata);
        assert!(refused.explain().contains("credentials"), "{}", refused.explain());
        let named = Policy {
            allow_private: true,
            metadata_allowed: ["169.254.169.254".to_string()].into(),
            ..Policy::default()
        };
        assert!(named.check("169.254.169.254", ip("169.254.169.254")).is_ok());
        let rule_only = Policy {
            allow_private: false,
            metadata_allowed: ["169.254.169.254".to_string()].into(),
            ..Policy::default()
        };
        assert!(rule_only.check("169.254.169.254", ip("169.254.169.254")).is_err());
    }

    #[test]
    fn metadata_names_are_refused_before_resolution() {
        let open = Policy {
            allow_private: true,
            ..Policy::default()
        };
        assert_eq!(
            open.check_host("Metadata.Google.Internal.").unwrap_err().range,
            Range::Metadata
        );
        assert!(open.check_host("[::1]").is_ok());
        assert_eq!(
            Policy::default().check_host("[::1]").unwrap_err().range,
            Range::Loopback
        );
    }

    #[tokio::test]
    async fn every_resolved_address_is_checked() {
        let lookup: Lookup = Arc::new(|name: String| {
            Box::pin(async move {
                Ok(match name.as_str() {
                    "mixed.test" => vec![ip("93.184.216.34"), ip("10.0.0.7")],
                    _ => vec![ip("93.184.216.34")],
                })
            })
        });
        let resolver = GuardedResolver {
            policy: Arc::new(Policy::default()),
            proxy_hosts: Vec::new(),
            lookup,
        };
        assert!(resolver.resolve_checked("public.test").await.is_ok());
        match resolver.resolve_checked("mixed.test").await {
            Err(ResolveError::Refused(r)) => assert_eq!(r.ip, ip("10.0.0.7")),
            other => panic!("{other:?}"),
        }
    }
}
