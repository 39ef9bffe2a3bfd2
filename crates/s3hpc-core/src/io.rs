//! Where a store may do its blocking file-system work.
//!
//! A store whose calls block in the file system (the posix backend) normally hands that work to
//! a blocking pool so async workers never wait for a disk. A caller that is itself on a thread
//! that may block (a blocking-pool thread running a batch of small requests) marks the thread
//! with [`blocking_here`]; inside it such stores run the work at once on the calling thread,
//! saving the two thread hand-offs per call. Stores that may do this say so with
//! [`Capabilities::offloads_io`](crate::Capabilities::offloads_io).

use std::cell::Cell;

thread_local! {
    static MAY_BLOCK: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current thread is inside [`blocking_here`].
pub fn may_block() -> bool {
    MAY_BLOCK.with(Cell::get)
}

/// Run `f` with the current thread marked as one that may block in the file system. Never call
/// this on an async worker thread: every store call made inside blocks the thread.
pub fn blocking_here<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            MAY_BLOCK.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(MAY_BLOCK.with(|c| c.replace(true)));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_holds_inside_and_is_restored_after_nesting_and_panics() {
        assert!(!may_block());
        blocking_here(|| {
            assert!(may_block());
            blocking_here(|| assert!(may_block()));
            assert!(may_block());
        });
        assert!(!may_block());
        let r = std::panic::catch_unwind(|| blocking_here(|| panic!("inside")));
        assert!(r.is_err());
        assert!(!may_block());
        std::thread::spawn(|| assert!(!may_block())).join().unwrap();
    }
}
