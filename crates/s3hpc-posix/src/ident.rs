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
        let (uid, gid) = (rustix::process::geteuid().as_raw(), rustix::process::getegid().as_raw());
        // This thread's groups (the raw system call, as the switches use).
        let groups = rustix::process::getgroups().unwrap_or_default().into_iter().map(|g| g.as_raw()).collect();
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
    // This thread's groups only (the raw system call); up to 32 groups without an allocation.
    use rustix::process::Gid;
    const SMALL: usize = 32;
    let (mut small, heap): ([Gid; SMALL], Vec<Gid>);
    let gids: &[Gid] = if to.groups.len() <= SMALL {
        small = [Gid::ROOT; SMALL];
        for (d, &g) in small.iter_mut().zip(&to.groups) {
            *d = Gid::from_raw_unchecked(g);
        }
        &small[..to.groups.len()]
    } else {
        heap = to.groups.iter().map(|&g| Gid::from_raw_unchecked(g)).collect();
        &heap
    };
    rustix::thread::set_thread_groups(gids)?;
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
