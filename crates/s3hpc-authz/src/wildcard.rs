//! `*` / `?` wildcard matching as IAM uses it in actions, resources and `StringLike`.
//!
//! `*` matches any run of characters (also `/` and `:`), `?` exactly one character. Matching
//! runs in O(len(pattern) * len(text)) at worst without recursion, so no input can blow the stack.

/// Whether `text` matches `pattern` (case-sensitive).
pub fn matches(pattern: &str, text: &str) -> bool {
    glob(pattern, text, false)
}

/// Whether `text` matches `pattern`, ASCII case ignored (action names).
pub fn matches_ignore_case(pattern: &str, text: &str) -> bool {
    glob(pattern, text, true)
}

/// Whether `s` holds a wildcard character.
pub fn has_wildcard(s: &str) -> bool {
    s.contains(['*', '?'])
}

fn glob(pattern: &str, text: &str, ignore_case: bool) -> bool {
    if pattern.is_ascii() && text.is_ascii() {
        // The common case needs no allocation: ASCII bytes are characters.
        return glob_slice(pattern.as_bytes(), text.as_bytes(), |a, b| {
            if ignore_case { a.eq_ignore_ascii_case(&b) } else { a == b }
        });
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    glob_slice(&p, &t, |a, b| if ignore_case { a.eq_ignore_ascii_case(&b) } else { a == b })
}

trait Wild: Copy {
    fn is_star(self) -> bool;
    fn is_any(self) -> bool;
}

impl Wild for u8 {
    fn is_star(self) -> bool {
        self == b'*'
    }
    fn is_any(self) -> bool {
        self == b'?'
    }
}

impl Wild for char {
    fn is_star(self) -> bool {
        self == '*'
    }
    fn is_any(self) -> bool {
        self == '?'
    }
}

fn glob_slice<T: Wild>(p: &[T], t: &[T], eq: impl Fn(T, T) -> bool) -> bool {
    let (mut pi, mut ti) = (0usize, 0usize);
    // Position after the last `*` seen in the pattern, and the text position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while let Some(&tc) = t.get(ti) {
        match p.get(pi) {
            Some(&c) if c.is_star() => {
                star = Some((pi + 1, ti));
                pi += 1;
            }
            Some(&c) if c.is_any() || eq(c, tc) => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p.get(pi..).is_some_and(|rest| rest.iter().all(|c| c.is_star()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_and_question() {
        assert!(matches("a*c", "abbbc"));
        assert!(matches("a*c", "ac"));
        assert!(!matches("a*c", "abbbd"));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "ac"));
        assert!(matches("*", ""));
        assert!(!matches("?", ""));
        assert!(matches("é?", "éü"));
        assert!(matches("b/*/test/*", "b/1///test///o.jpg"));
        assert!(matches("b/*/test/*", "b//test/o.jpg"));
        assert!(!matches("b/*/test/*", "b/1-test/o.jpg"));
        assert!(!matches("b/*/test/*", "b/test/o.jpg"));
        assert!(matches("arn:aws:s3:::*", "arn:aws:s3:::b/k:with:colons"));
    }

    #[test]
    fn case() {
        assert!(!matches("S3:GetObject", "s3:getobject"));
        assert!(matches_ignore_case("S3:Get*", "s3:getobject"));
        assert!(!matches_ignore_case("s3:Put*", "s3:getobject"));
    }

    #[test]
    fn pathological_is_fast() {
        let p = "*a".repeat(200) + "b";
        let t = "a".repeat(5000);
        assert!(!matches(&p, &t));
    }
}
