//! Idempotent RenameObject: a rename with an `x-amz-client-token` leaves a small record in
//! `<bucket>/.s3hpc/renames/` (named by a hash of the token), so a retry with the same token
//! through any gateway on the root answers 200 (the source is gone by then) and a reuse of the
//! token for other keys answers IdempotencyParameterMismatch. Records live for
//! [`RENAME_TOKEN_WINDOW`]; expired ones are swept at most every [`SWEEP_EVERY`] per bucket, as the
//! completion records of multipart uploads are (`uploads.rs`).

use s3hpc_core::renames::{CompletedRename, RENAME_TOKEN_WINDOW};

use super::*;

/// Expired token records are swept at most this often per bucket (marked by the mtime of
/// `renames/.sweep`, shared by every process on the root).
const SWEEP_EVERY: Duration = Duration::from_secs(600);

/// Lock stripes of tokens: apart from the key stripes (0..4096) and completions (0x1000 | n).
const TOKEN_STRIPES: u64 = 0x2000;

impl Inner {
    /// In the gateway's state (see `state`): `ROOT/.s3hpc/buckets/BUCKET/renames`.
    fn renames_dir(&self, bdir: &Path) -> PathBuf {
        self.state.bucket_dir(state::bucket_name(bdir)).join("renames")
    }

    fn token_path(&self, bdir: &Path, token: &str) -> PathBuf {
        let h = twox_hash::XxHash3_128::oneshot(token.as_bytes());
        self.renames_dir(bdir).join(format!("{h:032x}"))
    }

    /// The unexpired record of `token`, if any (an expired or foreign one counts as none).
    fn completed_rename(&self, bdir: &Path, token: &str) -> Result<Option<CompletedRename>> {
        match self.as_gateway(|| self.fs.read(&self.token_path(bdir, token)))? {
            Ok(b) => Ok(CompletedRename::decode(&b).filter(|r| r.token == token && !r.expired(SystemTime::now()))),
            Err(e) if is_missing(&e) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Keep the record (temp file + rename: a reader sees all of it or nothing). A failure only
    /// costs the idempotency of a retry, never the rename that already happened.
    fn record_rename(&self, bdir: &Path, rec: &CompletedRename) {
        let dir = self.renames_dir(bdir);
        if self.bucket_state_dir(bdir, state::bucket_name(bdir), true).is_err() {
            return;
        }
        let _ = self.as_gateway(|| self.record_rename_here(bdir, &dir, rec));
    }

    fn record_rename_here(&self, bdir: &Path, dir: &Path, rec: &CompletedRename) {
        if self.fs.create_dir_all(dir).is_err() {
            return;
        }
        let path = self.token_path(bdir, &rec.token);
        let tmp = dir.join(format!(".tmp-{}", rand_hex(8)));
        let write = || -> io::Result<()> {
            let mut f = self.fs.create(&tmp, true)?;
            f.write_all(&rec.encode())?;
            self.sync_file(&f)?;
            self.fs.rename(&tmp, &path)
        };
        if write().is_err() {
            let _ = self.fs.remove_file(&tmp);
        }
        self.sweep_renames(dir);
    }

    /// Remove records (and temp files) older than the window, unless a sweep ran recently.
    fn sweep_renames(&self, dir: &Path) {
        let marker = dir.join(".sweep");
        if self.age(&marker).is_some_and(|a| a < SWEEP_EVERY) || self.fs.write(&marker, b"").is_err() {
            return;
        }
        for e in self.fs.read_dir(dir).unwrap_or_default() {
            let p = dir.join(&e.name);
            if e.name != ".sweep" && self.age(&p).is_some_and(|a| a > RENAME_TOKEN_WINDOW) {
                let _ = self.fs.remove_file(&p);
            }
        }
    }

    /// RenameObject (`rename`: of one key or of a prefix) with its client token: renames
    /// carrying the same token run one after the other (a token lock), and a token already used
    /// answers from its record.
    pub(crate) fn rename_idempotent(
        &self,
        bucket: &str,
        src: &str,
        dst: &str,
        token: Option<&str>,
        rename: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let Some(token) = token else {
            return rename();
        };
        let bdir = self.bucket_dir(bucket)?;
        self.require_bucket(&bdir, bucket)?;
        let _token_lock = self.lock_stripe(&bdir, TOKEN_STRIPES | publish::lock_stripe_of(token))?;
        if let Some(done) = self.completed_rename(&bdir, token)? {
            return done.answer(src, dst);
        }
        rename()?;
        self.record_rename(&bdir, &CompletedRename::new(token, src, dst));
        Ok(())
    }
}
