//! Idempotent RenameObject: what a rename that carried an `x-amz-client-token` leaves behind, so
//! that a retry with the same token and the same keys answers 200 instead of NoSuchKey (the
//! source is gone), as S3 does, and a reuse of the token for other keys answers
//! IdempotencyParameterMismatch. Backends keep these records per bucket for
//! [`RENAME_TOKEN_WINDOW`].

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, ErrorCode, Result};

/// How long a completed rename's token answers retries (S3 does not document its window; SDK
/// retries come within seconds to minutes).
pub const RENAME_TOKEN_WINDOW: Duration = Duration::from_secs(3600);

/// A completed rename with a client token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedRename {
    pub token: String,
    pub src: String,
    pub dst: String,
    pub at: SystemTime,
}

const MAGIC: &str = "s3hpc-completed-rename 1";

impl CompletedRename {
    pub fn new(token: &str, src: &str, dst: &str) -> Self {
        CompletedRename { token: token.to_string(), src: src.to_string(), dst: dst.to_string(), at: SystemTime::now() }
    }

    /// Is the record past [`RENAME_TOKEN_WINDOW`] at `now`?
    pub fn expired(&self, now: SystemTime) -> bool {
        now.duration_since(self.at).is_ok_and(|d| d > RENAME_TOKEN_WINDOW)
    }

    /// The answer to a rename of `src` to `dst` carrying this record's token: done already (a
    /// retry), or IdempotencyParameterMismatch when the keys differ.
    pub fn answer(&self, src: &str, dst: &str) -> Result<()> {
        if self.src == src && self.dst == dst {
            Ok(())
        } else {
            Err(Error::code(ErrorCode::IdempotencyParameterMismatch))
        }
    }

    /// A line-based text form (token and keys hex-encoded, so any byte of them is safe).
    pub fn encode(&self) -> Vec<u8> {
        let at = self.at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        format!(
            "{MAGIC}\ntoken {}\nsrc {}\ndst {}\nat {at}\nend\n",
            hex::encode(&self.token),
            hex::encode(&self.src),
            hex::encode(&self.dst)
        )
        .into_bytes()
    }

    /// The record [`Self::encode`] wrote; `None` for anything else (also a truncated record).
    pub fn decode(b: &[u8]) -> Option<Self> {
        let s = std::str::from_utf8(b).ok()?;
        let mut lines = s.lines();
        if lines.next()? != MAGIC {
            return None;
        }
        let text = |l: Option<&str>, tag: &str| -> Option<String> {
            let rest = l?.strip_prefix(tag)?.strip_prefix(' ')?;
            String::from_utf8(hex::decode(rest).ok()?).ok()
        };
        let token = text(lines.next(), "token")?;
        let src = text(lines.next(), "src")?;
        let dst = text(lines.next(), "dst")?;
        let ns: u128 = lines.next()?.strip_prefix("at ")?.parse().ok()?;
        let d = Duration::new(u64::try_from(ns / 1_000_000_000).ok()?, (ns % 1_000_000_000) as u32);
        let at = UNIX_EPOCH.checked_add(d)?;
        (lines.next()? == "end").then_some(CompletedRename { token, src, dst, at })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_and_answers() {
        let r = CompletedRename::new("tok\n en", "a/b", "c d\u{e9}");
        let b = r.encode();
        assert_eq!(CompletedRename::decode(&b), Some(r.clone()));
        for cut in 0..b.len() - 1 {
            assert_eq!(CompletedRename::decode(&b[..cut]), None, "prefix {cut}");
        }
        assert!(r.answer("a/b", "c d\u{e9}").is_ok());
        assert_eq!(r.answer("a/b", "other").unwrap_err().code, ErrorCode::IdempotencyParameterMismatch);
        assert_eq!(r.answer("x", "c d\u{e9}").unwrap_err().code, ErrorCode::IdempotencyParameterMismatch);
        assert!(!r.expired(SystemTime::now()));
        assert!(r.expired(SystemTime::now() + RENAME_TOKEN_WINDOW + Duration::from_secs(1)));
    }
}
