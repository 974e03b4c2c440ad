//! The proxy a web request goes through, from `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and
//! `NO_PROXY` (upper or lower case). keel decides this itself, once per client, rather than
//! leaving it to the HTTP library, because the address check depends on it: through a proxy,
//! the proxy resolves the target, so keel checks its own resolution of the host beforehand.

use std::net::IpAddr;

use url::Url;

#[derive(Debug, Clone, Default)]
pub struct ProxyEnv {
    https: Option<Url>,
    http: Option<Url>,
    all: Option<Url>,
    no_proxy: Vec<Exception>,
}

#[derive(Debug, Clone, PartialEq)]
enum Exception {
    Everything,
    /// A domain and its subdomains.
    Domain(String),
    Ip(IpAddr),
    Net(IpAddr, u8),
}

impl ProxyEnv {
    pub fn from_env() -> ProxyEnv {
        ProxyEnv::from_vars(|k| std::env::var(k).ok())
    }

    /// Reads the variables through `get` (upper case first, as curl does for all but
    /// `http_proxy`, whose upper-case form CGI programs cannot trust; keel is no CGI program).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> ProxyEnv {
        let var = |name: &str| {
            get(name)
                .or_else(|| get(&name.to_ascii_lowercase()))
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let url = |name: &str| var(name).and_then(|v| parse_proxy(&v));
        ProxyEnv {
            https: url("HTTPS_PROXY"),
            http: url("HTTP_PROXY"),
            all: url("ALL_PROXY"),
            no_proxy: var("NO_PROXY").map(|v| parse_no_proxy(&v)).unwrap_or_default(),
        }
    }

    /// The proxy for `url`, if one applies.
    pub fn for_url(&self, url: &Url) -> Option<&Url> {
        let host = url.host_str()?;
        if self.excepted(host) {
            return None;
        }
        let scheme_proxy = match url.scheme() {
            "https" => self.https.as_ref(),
            "http" => self.http.as_ref(),
            _ => None,
        };
        scheme_proxy.or(self.all.as_ref())
    }

    /// The proxies' host names (resolved without the address check: they are the user's).
    pub fn hosts(&self) -> Vec<String> {
        [&self.https, &self.http, &self.all]
            .into_iter()
            .flatten()
            .filter_map(|u| u.host_str().map(super::address::normalize_host))
            .collect()
    }

    fn excepted(&self, host: &str) -> bool {
        let host = super::address::normalize_host(host);
        let ip = host.parse::<IpAddr>().ok();
        self.no_proxy.iter().any(|e| match e {
            Exception::Everything => true,
            Exception::Domain(d) => host == *d || host.ends_with(&format!(".{d}")),
            Exception::Ip(a) => ip == Some(*a),
            Exception::Net(net, bits) => ip.is_some_and(|ip| in_net(ip, *net, *bits)),
        })
    }
}

/// A proxy URL; a bare `host:port` means `http://host:port`.
fn parse_proxy(raw: &str) -> Option<Url> {
    let with_scheme = if raw.contains("://") {
        raw.to_string()
    } else {
        format!("http://{raw}")
    };
    Url::parse(&with_scheme).ok().filter(|u| u.host_str().is_some())
}

fn parse_no_proxy(raw: &str) -> Vec<Exception> {
    raw.split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|entry| {
            if entry == "*" {
                return Exception::Everything;
            }
            if let Some((net, bits)) = entry.split_once('/')
                && let (Ok(net), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u8>())
            {
                return Exception::Net(net, bits);
            }
            let bare = super::address::normalize_host(entry);
            if let Ok(ip) = bare.parse::<IpAddr>() {
                return Exception::Ip(ip);
            }
            // `example.com:8080`: the port is not compared.
            let name = bare.rsplit_once(':').map(|(h, _)| h.to_string()).unwrap_or(bare);
            Exception::Domain(name.trim_start_matches("*.").trim_start_matches('.').to_string())
        })
        .collect()
}

fn in_net(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> ProxyEnv {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        ProxyEnv::from_vars(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn scheme_proxies_and_the_fallback() {
        let e = env(&[("HTTPS_PROXY", "proxy.corp:3128"), ("all_proxy", "http://any:1")]);
        assert_eq!(
            e.for_url(&url("https://example.com/")).map(Url::as_str),
            Some("http://proxy.corp:3128/")
        );
        assert_eq!(
            e.for_url(&url("http://example.com/")).map(Url::as_str),
            Some("http://any:1/")
        );
        assert_eq!(e.hosts(), vec!["proxy.corp".to_string(), "any".to_string()]);
        assert!(env(&[]).for_url(&url("https://example.com/")).is_none());
    }

    #[test]
    fn no_proxy_entries() {
        let e = env(&[
            ("HTTPS_PROXY", "http://p:1"),
            ("NO_PROXY", ".internal.example, localhost,10.0.0.0/8, ::1, docs.rs:443"),
        ]);
        for direct in [
            "https://internal.example/",
            "https://a.internal.example/",
            "https://localhost/",
            "https://10.2.3.4/",
            "https://[::1]/",
            "https://docs.rs/",
        ] {
            assert!(e.for_url(&url(direct)).is_none(), "{direct}");
        }
        for proxied in [
            "https://example.com/",
            "https://notinternal.example/",
            "https://11.0.0.1/",
        ] {
            assert!(e.for_url(&url(proxied)).is_some(), "{proxied}");
        }
        let all = env(&[("HTTPS_PROXY", "http://p:1"), ("no_proxy", "*")]);
        assert!(all.for_url(&url("https://example.com/")).is_none());
    }
}
