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
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

/// Why an address is not public.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    Loopback,
    /// RFC 1918 (10/8, 172.16/12, 192.168/16), IPv6 unique local (fc00::/7), site-local.
    Private,
    LinkLocal,
    /// Carrier-grade NAT, 100.64.0.0/10.
    SharedNat,
    Unspecified,
    Multicast,
    /// Broadcast, documentation, benchmarking and other ranges that are not the internet.
    Reserved,
    /// A cloud provider's instance metadata service.
    Metadata,
}

impl Range {
    pub fn describe(self) -> &'static str {
        match self {
            Range::Loopback => "a loopback address (this machine)",
            Range::Private => "a private network address",
            Range::LinkLocal => "a link-local address",
            Range::SharedNat => "a carrier-grade NAT address (100.64.0.0/10)",
            Range::Unspecified => "the unspecified address",
            Range::Multicast => "a multicast address",
            Range::Reserved => "a reserved address",
            Range::Metadata => "a cloud metadata service address",
        }
    }
}

/// Addresses of instance metadata services (AWS, GCP, Azure, OpenStack: 169.254.169.254; AWS
/// over IPv6; ECS task credentials; Alibaba Cloud; Oracle Cloud).
const METADATA_ADDRESSES: &[IpAddr] = &[
    IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),
    IpAddr::V4(Ipv4Addr::new(169, 254, 170, 2)),
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
    IpAddr::V4(Ipv4Addr::new(192, 0, 0, 192)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)),
];

/// Host names of metadata services, refused before they are resolved.
const METADATA_NAMES: &[&str] = &[
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
];

/// The range an address belongs to; `None` for a public address.
pub fn classify(ip: IpAddr) -> Option<Range> {
    if METADATA_ADDRESSES.contains(&ip) {
        return Some(Range::Metadata);
    }
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Range> {
    let [a, b, c, _] = ip.octets();
    let range = match (a, b, c) {
        (0, _, _) => Range::Unspecified,
        (127, _, _) => Range::Loopback,
        (10, _, _) | (172, 16..=31, _) | (192, 168, _) => Range::Private,
        (169, 254, _) => Range::LinkLocal,
        (100, 64..=127, _) => Range::SharedNat,
        (224..=239, _, _) => Range::Multicast,
        (240..=255, _, _) => Range::Reserved,
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113) | (198, 18..=19, _) => Range::Reserved,
        _ => return None,
    };
    Some(range)
}

fn classify_v6(ip: Ipv6Addr) -> Option<Range> {
    if ip.is_unspecified() {
        return Some(Range::Unspecified);
    }
    if ip.is_loopback() {
        return Some(Range::Loopback);
    }
    // Addresses that carry an IPv4 address are judged by it: mapped (::ffff:a.b.c.d),
    // compatible (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002:AABB:CCDD::/48).
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify(IpAddr::V4(v4));
    }
    if s[..6] == [0; 6] {
        return classify(IpAddr::V4(embedded(s[6], s[7])));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify(IpAddr::V4(embedded(s[6], s[7])));
    }
    if s[0] == 0x2002 {
        return classify(IpAddr::V4(embedded(s[1], s[2])));
    }
    let range = match s[0] {
        0xfc00..=0xfdff => Range::Private,
        0xfe80..=0xfebf => Range::LinkLocal,
        0xfec0..=0xfeff => Range::Private,
        0xff00..=0xffff => Range::Multicast,
        // Documentation (2001:db8::/32), Teredo (2001::/32, which hides an IPv4 address),
        // discard-only (100::/64).
        0x2001 if s[1] == 0x0db8 || s[1] == 0 => Range::Reserved,
        0x0100 if s[1..4] == [0, 0, 0] => Range::Reserved,
        _ => return None,
    };
    Some(range)
}

/// Whether a host name names a metadata service.
pub fn is_metadata_name(host: &str) -> bool {
    let host = normalize_host(host);
    METADATA_NAMES.contains(&host.as_str())
}

/// A host as rules and checks compare it: lower case, without a final dot or IPv6 brackets.
pub fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

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
    fn ranges() {
        for (addr, range) in [
            ("127.0.0.1", Range::Loopback),
            ("127.255.0.9", Range::Loopback),
            ("::1", Range::Loopback),
            ("10.1.2.3", Range::Private),
            ("172.16.0.1", Range::Private),
            ("172.31.255.255", Range::Private),
            ("192.168.1.1", Range::Private),
            ("fd12:3456::1", Range::Private),
            ("fc00::1", Range::Private),
            ("169.254.1.1", Range::LinkLocal),
            ("fe80::1", Range::LinkLocal),
            ("100.64.0.1", Range::SharedNat),
            ("100.127.255.254", Range::SharedNat),
            ("0.0.0.0", Range::Unspecified),
            ("::", Range::Unspecified),
            ("224.0.0.1", Range::Multicast),
            ("255.255.255.255", Range::Reserved),
            ("169.254.169.254", Range::Metadata),
            ("fd00:ec2::254", Range::Metadata),
            ("100.100.100.200", Range::Metadata),
            ("::ffff:127.0.0.1", Range::Loopback),
            ("::ffff:169.254.169.254", Range::Metadata),
            ("::ffff:10.0.0.1", Range::Private),
            ("64:ff9b::a00:1", Range::Private),
            ("2002:7f00:1::", Range::Loopback),
            ("2001:db8::1", Range::Reserved),
        ] {
            assert_eq!(classify(ip(addr)), Some(range), "{addr}");
        }
        for public in [
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "93.184.216.34",
        ] {
            assert_eq!(classify(ip(public)), None, "{public}");
        }
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
