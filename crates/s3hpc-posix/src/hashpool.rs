//! Persistent helper threads that hash a body while its writer writes it.
//!
//! Spawning a thread per body costs a `clone` + stack setup + the first wake-up on every large
//! PUT; these threads stay parked after a job and take the next one, and exit after
//! [`IDLE_EXIT`] without work. At most [`limit`] jobs run at once: past that (many concurrent
//! PUTs, every core already busy writing) a body is hashed on its writing thread, where a
//! hand-off would buy nothing.

use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::Duration;

type Job = Box<dyn FnOnce() + Send>;

/// Parked workers, most recently parked last (reused first: its stack is warm).
static IDLE: Mutex<Vec<(u64, mpsc::Sender<Job>)>> = Mutex::new(Vec::new());
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
const IDLE_EXIT: Duration = Duration::from_secs(10);

/// Jobs allowed at once: one per core (at least 2). Beyond that every core is already busy
/// writing or hashing, and a hand-off only adds wake-ups.
fn limit() -> usize {
    static L: OnceLock<usize> = OnceLock::new();
    *L.get_or_init(|| std::thread::available_parallelism().map_or(2, |n| n.get()).max(2))
}

fn idle() -> std::sync::MutexGuard<'static, Vec<(u64, mpsc::Sender<Job>)>> {
    IDLE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The right to run one job on a helper; released when the job ends (or the ticket is dropped).
pub(crate) struct Ticket(());

impl Drop for Ticket {
    fn drop(&mut self) {
        ACTIVE.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A ticket, or `None` when `limit()` jobs are already running.
pub(crate) fn ticket() -> Option<Ticket> {
    let mut cur = ACTIVE.load(Ordering::Acquire);
    loop {
        if cur >= limit() {
            return None;
        }
        match ACTIVE.compare_exchange_weak(cur, cur + 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Some(Ticket(())),
            Err(c) => cur = c,
        }
    }
}

impl Ticket {
    /// Run `f` on a helper thread; its result arrives on the returned channel (which reports a
    /// disconnect if `f` panicked).
    pub(crate) fn run<T: Send + 'static>(
        self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<mpsc::Receiver<T>> {
        let (tx, rx) = mpsc::sync_channel(1);
        let mut job: Job = Box::new(move || {
            let ticket = self;
            let _ = tx.send(f());
            drop(ticket);
        });
        loop {
            let w = idle().pop();
            match w {
                Some((_, w)) => match w.send(job) {
                    Ok(()) => return Ok(rx),
                    // That worker is gone (its job panicked): try the next one.
                    Err(mpsc::SendError(j)) => job = j,
                },
                None => break,
            }
        }
        spawn_worker(job)?;
        Ok(rx)
    }
}

fn spawn_worker(first: Job) -> io::Result<()> {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new().name("s3hpc-hash".into()).spawn(move || {
        let mut job = first;
        loop {
            job();
            idle().push((id, tx.clone()));
            job = loop {
                match rx.recv_timeout(IDLE_EXIT) {
                    Ok(j) => break j,
                    Err(_) => {
                        let mut idle = idle();
                        if let Some(i) = idle.iter().position(|(x, _)| *x == id) {
                            idle.swap_remove(i);
                            return;
                        }
                        // A submitter took this worker off the list: its job is on the way.
                    }
                }
            };
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Other tests (here and in the store's tests) may hold tickets for a moment.
    fn wait_ticket() -> Ticket {
        loop {
            if let Some(t) = ticket() {
                return t;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn runs_jobs_and_reuses_workers() {
        let a = wait_ticket().run(|| 2 + 2).unwrap();
        assert_eq!(a.recv().unwrap(), 4);
        // The worker parks itself after the job; the next job finds it (or a new one).
        for i in 0..20u64 {
            let r = wait_ticket().run(move || i * 3).unwrap();
            assert_eq!(r.recv().unwrap(), i * 3);
        }
    }

    #[test]
    fn a_panicking_job_disconnects_its_channel() {
        let r = wait_ticket().run(|| -> u32 { panic!("job fails on purpose") }).unwrap();
        assert!(r.recv().is_err());
        // The pool still works afterwards.
        let r = wait_ticket().run(|| 7).unwrap();
        assert_eq!(r.recv().unwrap(), 7);
    }

    #[test]
    fn tickets_are_bounded() {
        // Other tests may hold tickets concurrently: only check that the bound exists.
        let held: Vec<Ticket> = std::iter::from_fn(ticket).take(limit() + 1).collect();
        assert!(held.len() <= limit());
    }
}
