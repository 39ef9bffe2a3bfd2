//! Dates for the `Date*` condition operators: W3C ISO 8601 forms or epoch seconds.

/// Seconds since the Unix epoch of `s`: an integer (epoch seconds), `YYYY-MM-DD`, or
/// `YYYY-MM-DDThh:mm[:ss[.fff]]` followed by `Z`, `±hh:mm` or nothing (UTC).
pub fn parse(s: &str) -> Option<i64> {
    let s = s.trim();
    if !s.is_empty() && s.len() <= 12 && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().ok();
    }
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let mut secs = days_from_civil(year, month, day) * 86_400;
    let mut i = 10;
    if i == b.len() {
        return Some(secs);
    }
    if b[i] != b'T' {
        return None;
    }
    let (h, m) = (num(i + 1, 2)?, num(i + 4, 2)?);
    if b.get(i + 3) != Some(&b':') || h > 23 || m > 59 {
        return None;
    }
    secs += h * 3600 + m * 60;
    i += 6;
    if b.get(i) == Some(&b':') {
        let sec = num(i + 1, 2)?;
        if sec > 60 {
            return None;
        }
        secs += sec;
        i += 3;
        if b.get(i) == Some(&b'.') {
            i += 1;
            let start = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == start {
                return None;
            }
        }
    }
    match b.get(i) {
        None => Some(secs),
        Some(b'Z') if i + 1 == b.len() => Some(secs),
        Some(&sign @ (b'+' | b'-')) if i + 6 == b.len() && b[i + 3] == b':' => {
            let (oh, om) = (num(i + 1, 2)?, num(i + 4, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let off = oh * 3600 + om * 60;
            Some(if sign == b'+' { secs - off } else { secs + off })
        }
        _ => None,
    }
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given date (proleptic Gregorian), counted day by month by year.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let mut days = 0i64;
    if y >= 1970 {
        for yy in 1970..y {
            days += if is_leap(yy) { 366 } else { 365 };
        }
    } else {
        for yy in y..1970 {
            days -= if is_leap(yy) { 366 } else { 365 };
        }
    }
    for mm in 1..m {
        days += days_in_month(y, mm);
    }
    days + d - 1
}

/// `secs` as `YYYY-MM-DDThh:mm:ssZ` (the `aws:CurrentTime` value).
pub fn format(secs: i64) -> String {
    let mut days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let mut y = 1970i64;
    loop {
        let len = if is_leap(y) { 366 } else { 365 };
        if days >= len {
            days -= len;
            y += 1;
        } else if days < 0 {
            y -= 1;
            days += if is_leap(y) { 366 } else { 365 };
        } else {
            break;
        }
    }
    let mut m = 1;
    while days >= days_in_month(y, m) {
        days -= days_in_month(y, m);
        m += 1;
    }
    format!("{y:04}-{m:02}-{:02}T{:02}:{:02}:{:02}Z", days + 1, rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(parse("0"), Some(0));
        assert_eq!(parse("1700000000"), Some(1_700_000_000));
        assert_eq!(parse("1970-01-02"), Some(86_400));
        assert_eq!(parse("2023-11-14T22:13:20Z"), Some(1_700_000_000));
        assert_eq!(parse("2023-11-14T22:13:20.123Z"), Some(1_700_000_000));
        assert_eq!(parse("2023-11-14T23:13:20+01:00"), Some(1_700_000_000));
        assert_eq!(parse("2023-11-14T22:13Z"), Some(1_700_000_000 - 20));
        assert_eq!(parse("2000-02-29"), Some(951_782_400));
        assert_eq!(parse("1969-12-31T23:59:59Z"), Some(-1));
    }

    #[test]
    fn invalid() {
        for s in [
            "",
            "x",
            "2023-13-01",
            "2023-02-29",
            "2023-11-14T25:00Z",
            "2023-11-14 22:13:20",
            "2023-11-14T22:13:20.Z",
            "2023-11-14T22:13:20+0100",
            "1234567890123",
        ] {
            assert_eq!(parse(s), None, "{s}");
        }
    }

    #[test]
    fn round_trip() {
        for s in [0i64, 1_700_000_000, 951_782_400, -1, 4_102_444_800] {
            assert_eq!(parse(&format(s)), Some(s), "{s}");
        }
    }
}
