//! CIDR blocks for `IpAddress` / `NotIpAddress` on `aws:SourceIp` (IPv4 and IPv6).

use std::net::IpAddr;

/// An address block: a network address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `a.b.c.d/n`, `x::y/n`, or an address alone (a /32 or /128, as IAM does).
    pub fn parse(s: &str) -> Option<Cidr> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => {
                if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                (a.parse::<IpAddr>().ok()?, p.parse::<u8>().ok()?)
            }
            None => {
                let a = s.parse::<IpAddr>().ok()?;
                (a, if a.is_ipv4() { 32 } else { 128 })
            }
        };
        let max = if addr.is_ipv4() { 32 } else { 128 };
        (prefix <= max).then_some(Cidr { addr, prefix })
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether this is an IPv4 block.
    pub fn is_ipv4(&self) -> bool {
        self.addr.is_ipv4()
    }

    /// Whether `ip` is inside the block. An IPv4-mapped IPv6 address is compared as IPv4.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(a)) => {
                let mask = if self.prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(self.prefix)) };
                (u32::from(net) & mask) == (u32::from(a) & mask)
            }
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                let mask = if self.prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(self.prefix)) };
                (u128::from(net) & mask) == (u128::from(a) & mask)
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn v4() {
        let c = Cidr::parse("192.168.1.0/24").unwrap();
        assert!(c.contains(ip("192.168.1.77")));
        assert!(!c.contains(ip("192.168.2.1")));
        assert!(Cidr::parse("10.0.0.1").unwrap().contains(ip("10.0.0.1")));
        assert!(!Cidr::parse("10.0.0.1").unwrap().contains(ip("10.0.0.2")));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        assert!(Cidr::parse("10.0.0.0/8").unwrap().contains(ip("::ffff:10.1.2.3")));
        assert!(!Cidr::parse("10.0.0.0/8").unwrap().contains(ip("2001:db8::1")));
    }

    #[test]
    fn v6() {
        let c = Cidr::parse("2001:db8::/32").unwrap();
        assert!(c.contains(ip("2001:db8:1::1")));
        assert!(!c.contains(ip("2001:db9::1")));
        assert!(!c.contains(ip("10.0.0.1")));
        assert!(Cidr::parse("::/0").unwrap().contains(ip("::1")));
    }

    #[test]
    fn invalid() {
        for s in ["", "1.2.3", "1.2.3.4/33", "::/129", "1.2.3.4/", "1.2.3.4/+8", "1.2.3.4/0008", "abc", "1.2.3.4/-1"] {
            assert!(Cidr::parse(s).is_none(), "{s}");
        }
    }
}
