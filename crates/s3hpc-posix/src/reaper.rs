//! Closes descriptors of replaced objects on a background thread.
//!
//! When a PUT renames its file over an existing object, the old file's last link goes away and
//! the file system frees its blocks and page cache during the `rename` (on ext4 ~0.5 ms per
//! MiB), after the body was received and hashed: pure latency for the PUT. The publisher holds
//! an `O_PATH` descriptor of the old file across the rename and hands it here, so that work
//! happens when this thread closes it. The queue is bounded: when it is full (objects replaced
//! faster than this thread frees them), the publisher closes the descriptor itself.

use std::fs::File;
use std::sync::OnceLock;
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};

/// Descriptors waiting to be closed.
const QUEUE: usize = 64;

fn queue() -> Option<&'static SyncSender<File>> {
    static TX: OnceLock<Option<SyncSender<File>>> = OnceLock::new();
    TX.get_or_init(|| {
        let (tx, rx) = sync_channel::<File>(QUEUE);
        let spawned = std::thread::Builder::new().name("s3hpc-reaper".into()).spawn(move || {
            for f in rx {
                drop(f);
            }
        });
        spawned.ok().map(|_| tx)
    })
    .as_ref()
}

/// Close `f` on the reaper thread (or here, if the queue is full or there is no thread).
pub(crate) fn release(f: File) {
    if let Some(tx) = queue() {
        match tx.try_send(f) {
            Ok(()) => {}
            Err(TrySendError::Full(f) | TrySendError::Disconnected(f)) => drop(f),
        }
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
}
