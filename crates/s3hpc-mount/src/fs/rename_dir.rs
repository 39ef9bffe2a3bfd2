//! Rename of a directory: one RenameObject of the prefix (`src/` -> `dst/`, s3hpc's extension:
//! one rename(2) on the gateway, atomic and O(1) whatever the tree holds), then the inode table
//! follows: the directory and everything below it keep their inode numbers with keys under the
//! new prefix, and open read handles read the new keys. A directory made here by `mkdir` with
//! nothing of it in the bucket yet (NoSuchKey) is renamed in the table alone. Stores without the prefix rename (any
//! S3 store but s3hpc, and s3hpc gateways older than it) answer EXDEV, so `mv` copies and
//! deletes, even with `--allow-copy-rename` (a copy of every key is what `mv` does anyway, with
//! progress and errors of its own).

use super::*;

/// Where the rename stands after the checks made on the FUSE thread.
enum Plan {
    /// Answer at once with this errno.
    Refuse(Errno),
    /// Nothing to do (a directory renamed onto itself).
    Done,
    /// RenameObject `src` -> `dst` (both end in '/'); `local`: the source was made by `mkdir`
    /// here, so no keys under it (NoSuchKey) means a rename in the table alone.
    Remote { src: String, dst: String, local: bool },
}

/// Rename the directory `name` in `parent` (known to be a directory) to `newname` in
/// `newparent`.
pub(super) async fn rename_dir(
    ctx: &Ctx,
    (parent, name): (u64, &str),
    (newparent, newname): (u64, &str),
    noreplace: bool,
) -> Result<(), Errno> {
    let (src, dst, local) = match plan(ctx, (parent, name), (newparent, newname), noreplace) {
        Plan::Refuse(e) => return Err(e),
        Plan::Done => return Ok(()),
        Plan::Remote { src, dst, local } => (src, dst, local),
    };
    let r = ctx.store.rename_object(&ctx.opts.bucket, &src, &dst, Default::default()).await;
    match r {
        Ok(()) => {
            let key = dst.trim_end_matches('/').to_string();
            lock(&ctx.table).rename_dir(parent, name, newparent, newname, key);
            rekey_readers(ctx, &src, &dst, true);
            Ok(())
        }
        // Nothing of it in the bucket yet: a directory of this mount alone.
        Err(e) if ctx.posix() && matches!(e.code, ErrorCode::NoSuchKey | ErrorCode::KeyTooLongError) => {
            // `--posix-attrs`: a directory that is no object and holds none (a plain directory
            // of the store, a path longer than keys): the store's rename(2).
            let (from, to) = (src.trim_end_matches('/'), dst.trim_end_matches('/'));
            let op = s3hpc_core::fsattr::FsOp::Rename { source: from.to_string(), noreplace };
            ctx.fs_op(to, op).await.map_err(|e| errno(&e, "rename", from))?;
            lock(&ctx.table).rename_dir(parent, name, newparent, newname, to.to_string());
            rekey_readers(ctx, &src, &dst, true);
            Ok(())
        }
        Err(e) if local && e.code == ErrorCode::NoSuchKey => {
            let key = dst.trim_end_matches('/').to_string();
            lock(&ctx.table).rename_dir(parent, name, newparent, newname, key);
            Ok(())
        }
        // A key in the way, met where this mount (and the kernel) did not know the destination
        // yet: an object there means a directory onto a file (ENOTDIR).
        Err(e)
            if e.code == ErrorCode::InvalidRequest
                && matches!(ctx.head(dst.trim_end_matches('/')).await, Ok(Some(_))) =>
        {
            Err(Errno::ENOTDIR)
        }
        Err(e) => Err(match e.code {
            ErrorCode::PrefixNotEmpty => Errno::ENOTEMPTY,
            // No prefix rename here (another S3 store, an older s3hpc gateway, a key in the way
            // on the gateway's file system): `mv` copies.
            ErrorCode::NotImplemented | ErrorCode::InvalidRequest => {
                tracing::debug!("s3hpc mount: rename of directory {src:?}: {} {}: EXDEV", e.code, e.message);
                Errno::EXDEV
            }
            _ => errno(&e, "rename", &src),
        }),
    }
}

/// The checks on the inode table: a file being written below the source (its upload would
/// complete under the old key) makes the rename EBUSY; a file at the destination ENOTDIR; a
/// directory there with local entries ENOTEMPTY.
fn plan(ctx: &Ctx, (parent, name): (u64, &str), (newparent, newname): (u64, &str), noreplace: bool) -> Plan {
    let writers: Vec<u64> = lock(&ctx.handles)
        .values()
        .filter_map(|h| match &**h {
            Handle::Write { ino, .. } => Some(*ino),
            _ => None,
        })
        .collect();
    let t = lock(&ctx.table);
    let Some(sino) = t.child(parent, name) else { return Plan::Refuse(Errno::ENOENT) };
    let src = &t.inodes[&sino];
    let (Some(sp), Some(dp)) = (t.dir_prefix(parent), t.dir_prefix(newparent)) else {
        return Plan::Refuse(Errno::ENOTDIR);
    };
    let below = format!("{}/", src.key);
    let busy = |i: &Inode| i.key.starts_with(&below) && matches!(i.local, Local::Writing(_));
    if t.inodes.values().any(busy) || writers.iter().any(|w| t.inodes.get(w).is_some_and(|i| i.key.starts_with(&below)))
    {
        return Plan::Refuse(Errno::EBUSY);
    }
    if let Some(dino) = t.child(newparent, newname) {
        if dino == sino {
            return if noreplace { Plan::Refuse(Errno::EEXIST) } else { Plan::Done };
        }
        let d = &t.inodes[&dino];
        if noreplace {
            return Plan::Refuse(Errno::EEXIST);
        }
        if d.kind != Kind::Dir {
            return Plan::Refuse(Errno::ENOTDIR);
        }
        if t.has_local_children(dino) {
            return Plan::Refuse(Errno::ENOTEMPTY);
        }
    }
    Plan::Remote { src: format!("{sp}{name}/"), dst: format!("{dp}{newname}/"), local: src.local == Local::Dir }
}

/// Open read handles of files below the renamed directory (`prefix`: `src` and `dst` end in
/// '/'), or of the renamed file itself, read their new keys from now on (prefetched ranges of
/// the old key are dropped; a read in flight at the moment of the rename may fail with EIO),
/// and open directory listings there go on under the new prefix (one busy fetching a page at
/// that moment ends early).
pub(super) fn rekey_readers(ctx: &Ctx, src: &str, dst: &str, prefix: bool) {
    let moved = |k: &str| match prefix {
        true => k.strip_prefix(src).map(|rest| format!("{dst}{rest}")),
        false => (k == src).then(|| dst.to_string()),
    };
    let handles: Vec<Arc<Handle>> = lock(&ctx.handles).values().cloned().collect();
    for h in handles {
        match &*h {
            Handle::Read { reader, .. } => {
                let mut r = lock(reader);
                if let Some(key) = moved(&r.key) {
                    r.rekey(key);
                }
            }
            Handle::Dir(d) if prefix => {
                if let Ok(mut d) = d.try_lock()
                    && let Some(prefix) = moved(&d.prefix)
                {
                    d.prefix = prefix;
                    d.rekey_marker(src, dst);
                }
            }
            Handle::Dir(_) | Handle::Write { .. } => {}
        }
    }
}
