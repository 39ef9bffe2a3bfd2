//! Key to path mapping and the path-safety rules: a key can never name anything outside its
//! bucket, nor the internal directory.

use std::path::PathBuf;

use s3hpc_core::{Error, ErrorCode, Result, names};

/// Name of the hidden per-bucket internal directory; never a key segment.
pub const INTERNAL: &str = ".s3hpc";
/// Longest file name most POSIX file systems accept.
pub const NAME_MAX: usize = 255;

/// A validated key: its relative path inside the bucket and whether it is a directory object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPath {
    pub rel: PathBuf,
    pub dir: bool,
}

fn bad(key: &str, why: &str) -> Error {
    Error::new(ErrorCode::InvalidArgument, format!("Object key {key:?} cannot be stored on a POSIX file system: {why}"))
        .with_resource(key.to_string())
}

/// Validate `key` without building its path: `Ok(true)` for a directory object (`a/b/`).
pub fn check_key(key: &str) -> Result<bool> {
    names::validate_key(key)?;
    if key.contains('\0') {
        return Err(bad(key, "it contains a NUL byte"));
    }
    if key.starts_with('/') {
        return Err(bad(key, "absolute keys (leading '/') are not allowed"));
    }
    let (body, dir) = match key.strip_suffix('/') {
        Some(b) => (b, true),
        None => (key, false),
    };
    for seg in body.split('/') {
        match seg {
            "" => return Err(bad(key, "empty path segment ('//' or a lone '/')")),
            "." | ".." => return Err(bad(key, "'.' and '..' segments are not allowed")),
            INTERNAL => return Err(bad(key, "the segment '.s3hpc' is reserved for internal files")),
            s if s.len() > NAME_MAX => {
                return Err(Error::new(
                    ErrorCode::KeyTooLongError,
                    format!("a key segment is {} bytes; the file system allows {NAME_MAX}", s.len()),
                )
                .with_resource(key.to_string()));
            }
            _ => {}
        }
    }
    Ok(dir)
}

/// Validate `key` and map it to a relative path.
pub fn parse_key(key: &str) -> Result<KeyPath> {
    let dir = check_key(key)?;
    // A valid key's path is the key itself without its trailing '/' (segments are joined by
    // single slashes and none is '.' or '..').
    let rel = PathBuf::from(if dir { &key[..key.len() - 1] } else { key });
    Ok(KeyPath { rel, dir })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_keys() {
        assert_eq!(parse_key("a/b/c").unwrap(), KeyPath { rel: "a/b/c".into(), dir: false });
        assert_eq!(parse_key("a/b/").unwrap(), KeyPath { rel: "a/b".into(), dir: true });
        assert_eq!(parse_key("...").unwrap().rel, PathBuf::from("..."));
        assert_eq!(parse_key(".s3hpcx/y").unwrap().rel, PathBuf::from(".s3hpcx/y"));
        assert!(parse_key(&"k".repeat(255)).is_ok());
        assert_eq!(check_key("a/b/"), Ok(true));
        assert_eq!(check_key("a/b"), Ok(false));
    }

    #[test]
    fn bad_keys() {
        let cases: &[(&str, ErrorCode)] = &[
            ("", ErrorCode::InvalidArgument),
            ("/abs", ErrorCode::InvalidArgument),
            ("/", ErrorCode::InvalidArgument),
            ("a//b", ErrorCode::InvalidArgument),
            ("a//", ErrorCode::InvalidArgument),
            ("..", ErrorCode::InvalidArgument),
            ("../x", ErrorCode::InvalidArgument),
            ("a/../../x", ErrorCode::InvalidArgument),
            ("a/..", ErrorCode::InvalidArgument),
            ("./a", ErrorCode::InvalidArgument),
            ("a/./b", ErrorCode::InvalidArgument),
            ("a/.", ErrorCode::InvalidArgument),
            ("a\0b", ErrorCode::InvalidArgument),
            (".s3hpc", ErrorCode::InvalidArgument),
            (".s3hpc/tmp/x", ErrorCode::InvalidArgument),
            ("a/.s3hpc/b", ErrorCode::InvalidArgument),
            ("a/.s3hpc/", ErrorCode::InvalidArgument),
        ];
        for (k, code) in cases {
            assert_eq!(parse_key(k).unwrap_err().code, *code, "{k:?}");
            assert_eq!(check_key(k).unwrap_err().code, *code, "{k:?}");
        }
        assert_eq!(parse_key(&"k".repeat(256)).unwrap_err().code, ErrorCode::KeyTooLongError);
        assert_eq!(parse_key(&format!("a/{}/b", "k".repeat(256))).unwrap_err().code, ErrorCode::KeyTooLongError);
        assert_eq!(parse_key(&"k/".repeat(600)).unwrap_err().code, ErrorCode::KeyTooLongError);
    }

    use proptest::prelude::*;

    /// Keys made of the segments that matter to path safety, joined with `/` (leading, trailing
    /// and doubled slashes included), and arbitrary strings.
    fn key_strategy() -> impl Strategy<Value = String> {
        let seg = prop_oneof![
            Just("a".to_string()),
            Just("..".to_string()),
            Just(".".to_string()),
            Just(String::new()),
            Just(".s3hpc".to_string()),
            Just(".s3hpc.".to_string()),
            Just("...".to_string()),
            Just("a\0b".to_string()),
            Just("é/..".to_string()),
            Just("k".repeat(255)),
            Just("k".repeat(256)),
            "[a-z./\u{0}-\u{1f}]{0,6}",
        ];
        prop_oneof![
            (any::<bool>(), prop::collection::vec(seg, 1..6), any::<bool>()).prop_map(|(lead, segs, trail)| {
                let mut k = segs.join("/");
                if lead {
                    k.insert(0, '/');
                }
                if trail {
                    k.push('/');
                }
                k
            }),
            any::<String>(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Whatever the key, an accepted one maps to a relative path of plain segments (no `.`,
        /// `..`, root, or internal directory; each at most NAME_MAX bytes) that spells the key,
        /// so joined to a bucket directory it names something inside it; and `check_key` agrees
        /// with `parse_key`.
        #[test]
        fn accepted_keys_stay_inside_the_bucket(key in key_strategy()) {
            let parsed = parse_key(&key);
            prop_assert_eq!(parsed.as_ref().map(|p| p.dir).map_err(|e| e.code), check_key(&key).map_err(|e| e.code));
            if let Ok(kp) = parsed {
                prop_assert!(kp.rel.is_relative());
                prop_assert!(!key.contains('\0'));
                let mut n = 0;
                for c in kp.rel.components() {
                    n += 1;
                    match c {
                        std::path::Component::Normal(s) => {
                            prop_assert!(s != INTERNAL, "{:?}", key);
                            prop_assert!(s.len() <= NAME_MAX, "{:?}", key);
                        }
                        other => prop_assert!(false, "{:?} has component {:?}", key, other),
                    }
                }
                prop_assert_eq!(n, key.trim_end_matches('/').split('/').count());
                prop_assert_eq!(kp.rel.to_str().unwrap(), key.strip_suffix('/').unwrap_or(&key));
                let base = std::path::Path::new("/root/bucket");
                prop_assert!(base.join(&kp.rel).starts_with(base));
            }
        }
    }
}
