//! Staging buffers at a fixed offset within a page, and a small pool of them for upload pieces.
//!
//! Every byte of a GET or PUT is copied through one of these: by `pread`/`write` from/to
//! page-aligned page-cache pages, and by the program's data callback from/to its own buffer
//! (large `malloc`s sit 16 bytes into a page). When source and destination of a copy are (almost)
//! equally placed within their pages, loads falsely wait for the stores just issued ("4K
//! aliasing"): a page-aligned staging buffer made `ior_like`'s 1 MiB reads 3.5x slower than
//! one half a page off (2.2 vs 7.3 GB/s here). So buffers start [`SKEW`] bytes into a page. The
//! pool keeps a pipelined upload, whose pieces are freed on the writer thread, from freeing and
//! re-faulting heap pages for every piece.

use std::alloc::{Layout, alloc_zeroed, dealloc, handle_alloc_error};
use std::ptr::NonNull;
use std::sync::Mutex;

const PAGE: usize = 4096;
/// Offset of the data from a page boundary: as far as possible from 0 (page cache) and from the
/// 16 of glibc's large allocations.
const SKEW: usize = 2048;

/// `len` zeroed bytes starting [`SKEW`] bytes into a page.
pub struct PageBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a uniquely owned heap allocation, like `Vec<u8>`.
unsafe impl Send for PageBuf {}
// SAFETY: shared access only reads.
unsafe impl Sync for PageBuf {}

impl PageBuf {
    pub fn new(len: usize) -> PageBuf {
        let layout = Layout::from_size_align(len + SKEW, PAGE).expect("buffer size fits a Layout");
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(p).unwrap_or_else(|| handle_alloc_error(layout));
        // SAFETY: SKEW < len + SKEW bytes allocated.
        let ptr = unsafe { NonNull::new_unchecked(ptr.as_ptr().add(SKEW)) };
        PageBuf { ptr, len }
    }
}

impl std::ops::Deref for PageBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` initialised (zeroed at allocation) bytes owned by this buffer.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for PageBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, with unique access through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.len + SKEW, PAGE).expect("as allocated");
        // SAFETY: allocated in `new` with this layout, SKEW bytes before `ptr`.
        unsafe { dealloc(self.ptr.as_ptr().sub(SKEW), layout) }
    }
}

/// Buffers of [`PIECE`] bytes kept for reuse (a pipelined upload has about three in flight).
static POOL: Mutex<Vec<PageBuf>> = Mutex::new(Vec::new());
const KEPT: usize = 8;
pub const PIECE: usize = 256 << 10;

/// A pooled buffer holding the first `len` bytes of an upload piece; back to the pool on drop
/// (when the store has written it, often on its writer thread).
pub struct Piece {
    buf: Option<PageBuf>,
    pub len: usize,
}

impl Piece {
    pub fn take() -> Piece {
        let b = POOL.lock().unwrap_or_else(|p| p.into_inner()).pop();
        Piece { buf: Some(b.unwrap_or_else(|| PageBuf::new(PIECE))), len: 0 }
    }

    /// The whole buffer, to fill.
    pub fn space(&mut self) -> &mut [u8] {
        self.buf.as_deref_mut().expect("a piece has its buffer until dropped")
    }
}

impl AsRef<[u8]> for Piece {
    fn as_ref(&self) -> &[u8] {
        &self.buf.as_deref().expect("a piece has its buffer until dropped")[..self.len]
    }
}

impl Drop for Piece {
    fn drop(&mut self) {
        if let Some(b) = self.buf.take() {
            let mut pool = POOL.lock().unwrap_or_else(|p| p.into_inner());
            if pool.len() < KEPT {
                pool.push(b);
            }
        }
    }
}
