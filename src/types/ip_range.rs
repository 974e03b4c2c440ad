//! Which range an IP address belongs to (loopback, private, link-local, cloud metadata, …):
//! the one classification behind WebFetch's address policy and the sandbox proxy's, so both
//! refuse the same addresses.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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
}
