//! Acting as a POSIX user, per thread (`--identity posix`).
//!
//! Linux keeps the file-system uid and gid (`setfsuid`/`setfsgid`) and the supplementary
//! groups per thread at the kernel level; glibc's wrappers broadcast `setgroups` (and the
//! set*id calls) to every thread of the process, so the raw system calls are used here. A
//! thread keeps the identity it last switched to and switches again only when the next request
//! acts as someone else. The process keeps CAP_SETUID and CAP_SETGID throughout (a non-zero
//! fsuid drops only the file-system capabilities, which come back with fsuid 0), so a thread can
//! always switch back to the process's own identity.
//!
//! On the caller's own thread (inline and in-place I/O) the store acts as a user only for the
//! duration of one call ([`enter`] and its guard). On Tokio's blocking pool, where offloaded
//! calls run, a thread keeps the identity of its last call ([`assume`]) and switches only when
//! the next call acts as someone else (or as the gateway): a single-user stream of requests
//! switches once per thread, not twice per request. Code that runs on the blocking pool and
//! opens files itself must call `assume(None)` first (in the gateway today only the store opens
//! files there: the others send already-open files or resolve names).

use std::cell::RefCell;
use std::io;
use std::sync::OnceLock;

use s3hpc_core::identity::Identity;

/// Read the process's own identity now, before any thread switches (the supplementary groups
/// are per thread, so they must be read from a thread that never switched).
pub fn init() {
    process();
}

/// The process's own identity (fsuid = euid, fsgid = egid, its groups), read once.
fn process() -> &'static Identity {
    static P: OnceLock<Identity> = OnceLock::new();
    P.get_or_init(|| {
        // SAFETY: plain getters.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        // SAFETY: size query, then a buffer of that size.
        let n = unsafe { libc::getgroups(0, std::ptr::null_mut()) }.max(0) as usize;
        let mut groups = vec![0 as libc::gid_t; n];
        // SAFETY: `groups` has room for `n` gids, the count passed.
        let got = unsafe { libc::getgroups(n as libc::c_int, groups.as_mut_ptr()) }.max(0) as usize;
        groups.truncate(got);
        Identity { uid, gid, groups }
    })
}

/// Identity switches made by this process (`s3hpc_identity_switches_total`).
static SWITCHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many times a thread of this process switched its file-system identity.
pub fn switches() -> u64 {
    SWITCHES.load(std::sync::atomic::Ordering::Relaxed)
}

thread_local! {
    /// The identity this thread's file-system calls run with now (`None`: the process's).
    static ACTIVE: RefCell<Option<Identity>> = const { RefCell::new(None) };
}

/// Make this thread's file-system calls act as `id` (`None`: as the process), switching only
/// if the thread acts as someone else now.
pub fn assume(id: Option<&Identity>) -> io::Result<()> {
    ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        if a.as_ref() == id {
            return Ok(());
        }
        let target = id.unwrap_or_else(|| process());
        // Mark unknown first: a failed switch leaves the thread in a state to be redone.
        *a = Some(Identity { uid: u32::MAX, gid: u32::MAX, groups: Vec::new() });
        switch(target)?;
        *a = id.cloned();
        Ok(())
    })
}

/// The uid this thread's file-system calls act as, when it is not the process's.
pub fn active_uid() -> Option<u32> {
    ACTIVE.with(|a| a.borrow().as_ref().map(|i| i.uid))
}

/// Acting as an identity until dropped (then as the process again).
#[must_use]
pub struct Guard(bool);

impl Drop for Guard {
    fn drop(&mut self) {
        if self.0
            && let Err(e) = assume(None)
        {
            // Cannot happen with the capabilities the switch itself needed; never continue
            // as someone else.
            panic!("cannot switch back to the gateway's identity: {e}");
        }
    }
}

/// Act as `id` (`None`: as the process) until the guard drops.
pub fn enter(id: Option<&Identity>) -> io::Result<Guard> {
    assume(id)?;
    Ok(Guard(id.is_some()))
}

/// Run `f` as the process (for the gateway's own bookkeeping inside a request), then return to
/// the identity the thread had.
pub fn as_process<T>(f: impl FnOnce() -> T) -> io::Result<T> {
    let prev = ACTIVE.with(|a| a.borrow().clone());
    assume(None)?;
    let r = f();
    assume(prev.as_ref())?;
    Ok(r)
}

/// Run the gateway's own work (health probes, metrics, leases, cleanup) as the gateway: this
/// thread is made to act as the process first, whatever user it acted as last (blocking-pool
/// threads keep the last request's identity, see the module doc), and stays so.
pub fn as_gateway<T>(f: impl FnOnce() -> T) -> io::Result<T> {
    assume(None)?;
    Ok(f())
}

fn switch(to: &Identity) -> io::Result<()> {
    SWITCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // Groups and gid first, while the fsuid may still be the process's.
    // SAFETY: a pointer to `len` gids that outlives the call.
    let r = unsafe { libc::syscall(libc::SYS_setgroups, to.groups.len(), to.groups.as_ptr()) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    set_fs(libc::SYS_setfsgid, to.gid)?;
    set_fs(libc::SYS_setfsuid, to.uid)
}

/// `setfsuid`/`setfsgid` report the previous value, never an error: ask again to check.
fn set_fs(call: libc::c_long, id: u32) -> io::Result<()> {
    // SAFETY: plain system calls with integer arguments.
    unsafe { libc::syscall(call, id) };
    // SAFETY: as above; -1 (invalid) changes nothing and returns the current value.
    let now = unsafe { libc::syscall(call, -1i32 as libc::c_long) } as u32;
    if now != id {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("cannot switch the file-system identity to {id} (the gateway lacks CAP_SETUID/CAP_SETGID)"),
        ));
    }
    Ok(())
}

/// May this process switch identities? (CAP_SETUID and CAP_SETGID in its effective set.)
pub fn can_switch() -> bool {
    // The capability sets are in /proc/self/status as hex masks.
    let Ok(s) = std::fs::read_to_string("/proc/self/status") else { return false };
    let eff = s
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    const CAP_SETGID: u64 = 1 << 6;
    const CAP_SETUID: u64 = 1 << 7;
    eff & (CAP_SETUID | CAP_SETGID) == (CAP_SETUID | CAP_SETGID)
}
