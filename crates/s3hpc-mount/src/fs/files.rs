//! Opening, creating and renaming files: the handles the kernel gets (readers, writers,
//! appenders) and the rename fallback for stores without RenameObject.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use fuser::Errno;
use s3hpc_core::{Error, ErrorCode, PutObjectOutput};

use super::{Ctx, Handle, lock};
use crate::errors::errno;
use crate::inode::{Kind, Local, Table};
use crate::read::Reader;
use crate::write::Writer;

/// A new file `name` in `parent`, local until its writer (the handle made here) closes it.
/// `made`: the file exists, empty, in the store with these attributes (`--posix-attrs`).
pub(super) fn create_local(
    ctx: &Arc<Ctx>,
    parent: u64,
    name: &str,
    key: String,
    pid: u32,
    made: Option<s3hpc_core::fsattr::FsAttr>,
    meta: Option<super::meta::S3fsAttr>,
) -> Result<super::io::Created, Errno> {
    let fh = ctx.next_fh.fetch_add(1, Ordering::Relaxed);
    let mut t = lock(&ctx.table);
    let ino = t.insert_local(parent, name, Kind::File, Local::Writing(fh)).ok_or(Errno::ENOENT)?;
    let mut writer = Writer::new(ctx.wctx.clone(), key, pid);
    if made.is_some() {
        writer = writer.made_empty();
    }
    if let Some(m) = &meta {
        writer.meta = m.object_meta();
    }
    let writer = Mutex::new(writer);
    lock(&ctx.handles).insert(fh, Arc::new(Handle::Write { ino, writer }));
    let i = t.inodes.get_mut(&ino).expect("just inserted");
    if let Some(a) = made {
        i.fs = Some(a);
    }
    i.meta = meta;
    i.lookups += 1;
    i.opens += 1;
    Ok(super::io::Created { attr: ctx.attr(ino, i), fh })
}

/// Open the existing file `ino` for writing without `O_TRUNC`: where the store appends (an
/// s3hpc gateway), a writer at the object's end (`any_offset` for `O_APPEND`); elsewhere
/// `EPERM`, as Mountpoint answers.
pub(super) async fn open_appender(
    ctx: &Arc<Ctx>,
    ino: u64,
    key: String,
    any_offset: bool,
    pid: u32,
) -> Result<super::io::Opened, Errno> {
    if !ctx.store.appends(&ctx.opts.bucket).await {
        tracing::info!(
            "s3hpc mount: open {key:?} for writing refused: the store does not append (overwriting needs --allow-overwrite and O_TRUNC)"
        );
        return Err(Errno::EPERM);
    }
    let info = match ctx.head(&key).await {
        Ok(Some(info)) => info,
        Ok(None) => return Err(Errno::ENOENT),
        Err(e) => return Err(errno(&e, "open", &key)),
    };
    let mut t = lock(&ctx.table);
    let until = ctx.until();
    let i = t.inodes.get_mut(&ino).ok_or(Errno::ENOENT)?;
    if i.local != Local::No {
        // Another writer opened it meanwhile: one writer per file.
        return Err(Errno::EPERM);
    }
    i.size = info.size;
    i.etag = info.etag.clone();
    i.mtime = info.last_modified;
    i.valid_until = until;
    let at = PutObjectOutput {
        version_id: None,
        etag: info.etag,
        checksum: None,
        size: info.size,
        last_modified: info.last_modified,
    };
    let writer = Writer::appender(ctx.wctx.clone(), key, pid, at, any_offset);
    let fh = ctx.new_fh(Handle::Write { ino, writer: Mutex::new(writer) });
    i.local = Local::Writing(fh);
    i.opens += 1;
    Ok(super::io::Opened { fh, keep_cache: false })
}

/// A rename where the store has no RenameObject (`--allow-copy-rename`): a server-side copy,
/// then the source's deletion. Not atomic: both names exist in between, and a writer that
/// replaces the source meanwhile loses its object.
pub(super) async fn copy_rename(ctx: &Ctx, src: &str, dst: &str, noreplace: bool) -> Result<(), Error> {
    let bucket = &ctx.opts.bucket;
    if noreplace && ctx.head(dst).await?.is_some() {
        return Err(Error::new(ErrorCode::PreconditionFailed, "the destination exists"));
    }
    let req = s3hpc_core::CopyObjectRequest {
        conditions: s3hpc_core::Conditions { if_none_match: noreplace.then(|| "*".to_string()), ..Default::default() },
        ..Default::default()
    };
    ctx.store.copy_object(bucket, src, bucket, dst, req).await?;
    ctx.store.delete_object(bucket, src).await
}

/// Make a read handle for `ino` (whose attributes are fresh).
pub(super) fn open_reader(ctx: &Ctx, t: &mut Table, ino: u64) -> u64 {
    let i = t.inodes.get_mut(&ino).expect("caller checked");
    i.opens += 1;
    let reader = Reader::new(i.key.clone(), i.etag.clone(), i.size, ctx.opts.max_read_chunk, ctx.opts.max_read_window);
    ctx.new_fh(Handle::Read { ino, reader: Mutex::new(reader) })
}

/// A read handle opened: keep the kernel's page cache when it holds this very ETag's data.
pub(super) fn opened(t: &mut Table, ino: u64, fh: u64) -> super::io::Opened {
    let i = t.inodes.get_mut(&ino).expect("caller checked");
    let keep = i.cached_etag.as_deref() == Some(i.etag.as_str()) && !i.etag.is_empty();
    i.cached_etag = Some(i.etag.clone());
    super::io::Opened { fh, keep_cache: keep }
}
