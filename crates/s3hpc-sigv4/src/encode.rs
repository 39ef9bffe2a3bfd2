//! URI encoding, canonical request pieces and the AWS timestamp format.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// Whether S3's SigV4 URI encoding leaves `b` as is (RFC 3986 unreserved characters).
#[inline]
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~')
}

/// Append `bytes` URI-encoded as SigV4 requires (upper-case hex, unreserved characters kept);
/// `/` is kept when `keep_slash`.
pub fn uri_encode_into(bytes: &[u8], keep_slash: bool, out: &mut String) {
    for &b in bytes {
        if unreserved(b) || (keep_slash && b == b'/') {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX_UPPER[(b >> 4) as usize] as char);
            out.push(HEX_UPPER[(b & 15) as usize] as char);
        }
    }
}

/// `s` URI-encoded (`/` encoded too unless `keep_slash`).
pub fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    uri_encode_into(s.as_bytes(), keep_slash, &mut out);
    out
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-decode; a `%` not followed by two hex digits is kept literally. `+` stays `+`.
pub fn percent_decode(s: &str) -> Cow<'_, [u8]> {
    let b = s.as_bytes();
    if !b.contains(&b'%') {
        return Cow::Borrowed(b);
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex_val(b[i + 1]), hex_val(b[i + 2]))
        {
            out.push(h << 4 | l);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Cow::Owned(out)
}

/// The canonical URI of a path as received on the wire: every segment is decoded, then
/// encoded once with S3's rules (S3 does not double-encode). An encoded `/` inside a segment
/// (`%2F`) stays encoded.
pub fn canonical_uri_into(raw_path: &str, out: &mut String) {
    if raw_path.is_empty() {
        out.push('/');
        return;
    }
    for (i, seg) in raw_path.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        uri_encode_into(&percent_decode(seg), false, out);
    }
}

/// The canonical query string: parameters decoded, re-encoded, sorted by name then value.
/// `skip` names a parameter to leave out (`X-Amz-Signature` for presigned URLs).
pub fn canonical_query_into(raw: Option<&str>, skip: Option<&str>, out: &mut String) {
    let Some(raw) = raw.filter(|q| !q.is_empty()) else {
        return;
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    for part in raw.split('&') {
        if part.is_empty() {
            continue;
        }
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let mut ek = String::with_capacity(k.len());
        uri_encode_into(&percent_decode(k), false, &mut ek);
        if skip.is_some_and(|s| s == ek) {
            continue;
        }
        let mut ev = String::with_capacity(v.len());
        uri_encode_into(&percent_decode(v), false, &mut ev);
        pairs.push((ek, ev));
    }
    pairs.sort_unstable();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(k);
        out.push('=');
        out.push_str(v);
    }
}

/// Append a header value as SigV4 canonicalises it: trimmed, runs of spaces collapsed to one.
pub fn canonical_header_value_into(v: &[u8], out: &mut Vec<u8>) {
    let mut v = v;
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    let mut in_space = false;
    for &b in v {
        if b == b' ' || b == b'\t' {
            if !in_space {
                out.push(b' ');
            }
            in_space = true;
        } else {
            out.push(b);
            in_space = false;
        }
    }
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// Days since 1970-01-01 to (year, month, day) (Howard Hinnant's civil-from-days algorithm).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `YYYYMMDDTHHMMSSZ` of a time (times before 1970 are clamped to the epoch).
pub fn amz_date(t: SystemTime) -> String {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// `YYYY-MM-DDTHH:MM:SSZ` of a time (ISO 8601, as S3 writes `<ServerTime>`).
pub fn iso8601(t: SystemTime) -> String {
    let a = amz_date(t);
    format!("{}-{}-{}T{}:{}:{}Z", &a[0..4], &a[4..6], &a[6..8], &a[9..11], &a[11..13], &a[13..15])
}

/// Parse `YYYYMMDDTHHMMSSZ`.
pub fn parse_amz_date(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = &s[r];
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    let (y, mo, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (h, mi, se) = (num(9..11)?, num(11..13)?, num(13..15)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let days = days_from_civil(y as i64, mo, d);
    // Reject dates like Feb 31 (they would silently roll over).
    if civil_from_days(days) != (y as i64, mo, d) {
        return None;
    }
    let secs = days * 86400 + (h * 3600 + mi * 60 + se) as i64;
    if secs < 0 {
        return None;
    }
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_roundtrip() {
        let t = parse_amz_date("20130524T000000Z").unwrap();
        assert_eq!(t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(), 1_369_353_600);
        assert_eq!(amz_date(t), "20130524T000000Z");
        for s in ["20240229T235959Z", "19700101T000000Z", "20991231T120000Z"] {
            assert_eq!(amz_date(parse_amz_date(s).unwrap()), s);
        }
        for bad in ["20130231T000000Z", "2013052T000000Z", "20130524 000000Z", "20131324T000000Z", "2013052aT000000Z"] {
            assert!(parse_amz_date(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn uri_rules() {
        let mut s = String::new();
        canonical_uri_into("/examplebucket/my%20file+x!.txt", &mut s);
        assert_eq!(s, "/examplebucket/my%20file%2Bx%21.txt");
        s.clear();
        canonical_uri_into("/b/a%2Fb/c", &mut s);
        assert_eq!(s, "/b/a%2Fb/c");
        s.clear();
        canonical_uri_into("/b/%zz%4", &mut s);
        assert_eq!(s, "/b/%25zz%254");
        s.clear();
        canonical_uri_into("/b/\u{e9}", &mut s);
        assert_eq!(s, "/b/%C3%A9");
        s.clear();
        canonical_query_into(
            Some("uploads&prefix=a%20b&max-keys=2&X-Amz-Signature=x&a=~"),
            Some("X-Amz-Signature"),
            &mut s,
        );
        assert_eq!(s, "a=~&max-keys=2&prefix=a%20b&uploads=");
        let mut v = Vec::new();
        canonical_header_value_into(b"  a   b \t c  ", &mut v);
        assert_eq!(v, b"a b c");
    }
}
