//! Closes descriptors of replaced objects on a background thread.
//!
//! When a PUT renames its file over an existing object, the old file's last link goes away and
//! the file system frees its blocks and page cache during the `rename` (on ext4 ~0.5 ms per
//! MiB), after the body was received and hashed: pure latency for the PUT. The publisher holds
//! an `O_PATH` descriptor of the old file across the rename and hands it here, so that work
//! happens when this thread closes it. The queue is bounded in files and in bytes (space not
//! yet returned to the file system): past either bound (objects replaced faster than this
//! thread frees them, or very large ones), the publisher closes the descriptor itself.

use std::fs::File;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};

/// Descriptors waiting to be closed.
const QUEUE: usize = 64;
/// Bytes of replaced files waiting to be freed.
const MAX_PENDING_BYTES: u64 = 1 << 30;
static PENDING: AtomicU64 = AtomicU64::new(0);

fn queue() -> Option<&'static SyncSender<(File, u64)>> {
    static TX: OnceLock<Option<SyncSender<(File, u64)>>> = OnceLock::new();
    TX.get_or_init(|| {
        let (tx, rx) = sync_channel::<(File, u64)>(QUEUE);
        let spawned = std::thread::Builder::new().name("s3hpc-reaper".into()).spawn(move || {
            lowest_priority();
            for (f, size) in rx {
                drop(f);
                PENDING.fetch_sub(size, Ordering::AcqRel);
            }
        });
        spawned.ok().map(|_| tx)
    })
    .as_ref()
}

/// Run this thread at the lowest priority (nice 19): freeing replaced files is garbage
/// collection, and at normal priority it took CPU from the PUTs it was meant to speed up (on 2
/// cores, a single MD5 PUT's hashing thread, its writer and the reaper were three runnable
/// threads, and the hashing thread, the PUT's critical path, lost ~10 % of its time). Nice 19
/// rather than `SCHED_IDLE`: on a node whose cores a compute job keeps busy, an idle-class
/// thread might never run, and the replaced files would keep their space indefinitely.
fn lowest_priority() {
    // `gettid` names this thread, whose niceness alone changes.
    let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
}

/// Close `f` on the reaper thread (or here, if a bound is reached or there is no thread).
pub(crate) fn release(f: File) {
    let Some(tx) = queue() else { return };
    let size = f.metadata().map_or(0, |m| m.len());
    if PENDING.fetch_add(size, Ordering::AcqRel) + size > MAX_PENDING_BYTES {
        PENDING.fetch_sub(size, Ordering::AcqRel);
        return;
    }
    if let Err(TrySendError::Full((f, size)) | TrySendError::Disconnected((f, size))) = tx.try_send((f, size)) {
        drop(f);
        PENDING.fetch_sub(size, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A replaced file held by the reaper is freed once the queue drains: its inode disappears.
    #[test]
    fn released_files_are_closed() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, vec![1u8; 1 << 20]).unwrap();
        let f = crate::sys::open_path(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
        let link = format!("/proc/self/fd/{fd}");
        assert!(std::fs::read_link(&link).unwrap().to_string_lossy().ends_with("(deleted)"));
        release(f);
        for _ in 0..200 {
            match std::fs::read_link(&link) {
                Err(_) => return,
                // The descriptor number may be reused by another test's file meanwhile.
                Ok(t) if !t.to_string_lossy().ends_with("f (deleted)") => return,
                Ok(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
        panic!("the reaper did not close the descriptor");
    }

    /// The reaper thread runs at nice 19 (it only frees what PUTs replaced).
    #[test]
    fn the_reaper_runs_at_the_lowest_priority() {
        queue().expect("the reaper thread starts");
        for _ in 0..200 {
            for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
                let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
                if comm.trim_end() != "s3hpc-reaper" {
                    continue;
                }
                let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
                // Fields after the parenthesised command: state is field 3, nice field 19.
                let after = &stat[stat.rfind(')').expect("stat has a command") + 2..];
                let nice: i32 = after.split(' ').nth(16).expect("nice field").parse().unwrap();
                if nice == 19 {
                    return;
                }
            }
            // The thread sets its priority as it starts.
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("no s3hpc-reaper thread at nice 19");
    }

    /// A replaced file larger than the byte bound is closed by the publisher at once.
    #[test]
    fn huge_files_are_closed_at_once() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big");
        std::fs::File::create(&p).unwrap().set_len(MAX_PENDING_BYTES + 1).unwrap(); // sparse
        let f = crate::sys::open_path(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        let link = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&f));
        release(f);
        let still = std::fs::read_link(&link).is_ok_and(|t| t.to_string_lossy().ends_with("big (deleted)"));
        assert!(!still, "a file over the byte bound was queued");
    }
}
