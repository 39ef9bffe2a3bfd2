//! `--procs N`: several ranks on one node without MPI. The parent re-executes its own binary N
//! times with the same arguments; each child learns its rank, the job size and a Unix socket from
//! `S3HPC_RANK`, `S3HPC_SIZE` and `S3HPC_COORD`, and runs the ordinary code path with a
//! [`ProcsCoordinator`]. The parent only relays collectives (a hub: it answers a round once every
//! rank contributed) and watches the children: a child that exits with an error or disappears
//! ends the whole run promptly (the others get an error at their next collective, and are killed
//! if they do not exit on their own within a short grace period). Rank 0 prints the report.
//!
//! Wire format on the socket: frames of `u32 LE length` + payload. Child -> hub: first a hello
//! (`u32` rank), then one frame per collective. Hub -> child: `0` + `u32 n` + n frames (every
//! rank's contribution), or `1` + message (the run failed).

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::coord::Coordinator;

pub const ENV_RANK: &str = "S3HPC_RANK";
pub const ENV_SIZE: &str = "S3HPC_SIZE";
pub const ENV_COORD: &str = "S3HPC_COORD";

fn write_frame(w: &mut impl Write, payload: &[u8]) -> std::io::Result<()> {
    w.write_all(&(payload.len() as u32).to_le_bytes())?;
    w.write_all(payload)?;
    w.flush()
}

fn read_frame(r: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut n = [0u8; 4];
    r.read_exact(&mut n)?;
    let mut buf = vec![0u8; u32::from_le_bytes(n) as usize];
    r.read_exact(&mut buf)?;
    Ok(buf)
}

/// A child's end: one socket to the parent's hub.
pub struct ProcsCoordinator {
    rank: usize,
    size: usize,
    timeout: Duration,
    conn: Arc<Mutex<UnixStream>>,
}

impl ProcsCoordinator {
    /// The coordinator of a `--procs` child, if the environment names one.
    pub fn from_env(timeout: Duration) -> anyhow::Result<Option<ProcsCoordinator>> {
        let (Ok(rank), Ok(size), Some(path)) =
            (std::env::var(ENV_RANK), std::env::var(ENV_SIZE), std::env::var_os(ENV_COORD))
        else {
            return Ok(None);
        };
        let bad = || anyhow::anyhow!("bad {ENV_RANK}={rank:?} / {ENV_SIZE}={size:?}");
        let rank: usize = rank.parse().map_err(|_| bad())?;
        let size: usize = size.parse().map_err(|_| bad())?;
        if rank >= size {
            return Err(bad());
        }
        let mut s = UnixStream::connect(&path)
            .map_err(|e| anyhow::anyhow!("rank {rank}: cannot reach the --procs coordinator at {path:?}: {e}"))?;
        write_frame(&mut s, &(rank as u32).to_le_bytes())?;
        Ok(Some(ProcsCoordinator { rank, size, timeout, conn: Arc::new(Mutex::new(s)) }))
    }
}

#[async_trait]
impl Coordinator for ProcsCoordinator {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn kind(&self) -> &'static str {
        "procs"
    }
    async fn allgather(&self, data: Vec<u8>) -> anyhow::Result<Vec<Vec<u8>>> {
        let (conn, rank, timeout) = (self.conn.clone(), self.rank, self.timeout);
        tokio::task::spawn_blocking(move || -> anyhow::Result<Vec<Vec<u8>>> {
            let mut s = conn.lock().unwrap();
            write_frame(&mut *s, &data)
                .map_err(|e| anyhow::anyhow!("rank {rank}: coordinator connection lost: {e}"))?;
            s.set_read_timeout(Some(timeout))?;
            let reply = read_frame(&mut *s).map_err(|e| match e.kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => anyhow::anyhow!(
                    "rank {rank}: the other ranks did not reach the same point within {:.0} s (--barrier-timeout)",
                    timeout.as_secs_f64()
                ),
                _ => anyhow::anyhow!("rank {rank}: coordinator connection lost: {e}"),
            })?;
            match reply.split_first() {
                Some((0, mut rest)) => {
                    let n = read_frame_count(&mut rest)?;
                    (0..n).map(|_| read_frame(&mut rest).map_err(anyhow::Error::from)).collect()
                }
                Some((1, msg)) => anyhow::bail!("{}", String::from_utf8_lossy(msg)),
                _ => anyhow::bail!("rank {rank}: malformed answer from the coordinator"),
            }
        })
        .await?
    }
}

fn read_frame_count(r: &mut &[u8]) -> anyhow::Result<usize> {
    let mut n = [0u8; 4];
    r.read_exact(&mut n)?;
    Ok(u32::from_le_bytes(n) as usize)
}

enum Event {
    Hello(usize, UnixStream),
    Msg(usize, Vec<u8>),
    Gone(usize, String),
}

/// The parent: start `procs` copies of this program and relay their collectives.
/// Returns when every child exited; fails (after stopping the rest) if any failed.
pub fn launch(procs: usize) -> anyhow::Result<()> {
    let dir = tempfile::Builder::new().prefix("s3hpc-procs-").tempdir()?;
    let path: PathBuf = dir.path().join("coord.sock");
    let listener = UnixListener::bind(&path)?;
    let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("--procs: cannot find own executable: {e}"))?;
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    let (tx, rx) = mpsc::channel::<Event>();
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for s in listener.incoming() {
                let Ok(mut s) = s else { continue };
                let tx = tx.clone();
                std::thread::spawn(move || {
                    let Ok(h) = read_frame(&mut s) else { return };
                    let Ok(rank) = <[u8; 4]>::try_from(h.as_slice()).map(|b| u32::from_le_bytes(b) as usize) else {
                        return;
                    };
                    let Ok(w) = s.try_clone() else { return };
                    if tx.send(Event::Hello(rank, w)).is_err() {
                        return;
                    }
                    loop {
                        match read_frame(&mut s) {
                            Ok(m) => {
                                if tx.send(Event::Msg(rank, m)).is_err() {
                                    return;
                                }
                            }
                            Err(e) => {
                                let why = if e.kind() == std::io::ErrorKind::UnexpectedEof {
                                    "exited".to_string()
                                } else {
                                    e.to_string()
                                };
                                let _ = tx.send(Event::Gone(rank, why));
                                return;
                            }
                        }
                    }
                });
            }
        });
    }
    let mut children: Vec<Option<Child>> = Vec::with_capacity(procs);
    for r in 0..procs {
        let c = Command::new(&exe)
            .args(&args)
            .env(ENV_RANK, r.to_string())
            .env(ENV_SIZE, procs.to_string())
            .env(ENV_COORD, &path)
            .stdin(Stdio::null())
            .spawn();
        match c {
            Ok(c) => children.push(Some(c)),
            Err(e) => {
                kill_all(&mut children);
                anyhow::bail!("--procs: cannot start rank {r}: {e}");
            }
        }
    }
    drop(tx);
    let mut hub = Hub::new(procs);
    let mut failure: Option<String> = None;
    let mut failed_at: Option<Instant> = None;
    loop {
        // Relay whatever arrived.
        while let Ok(ev) = rx.recv_timeout(Duration::from_millis(20)) {
            if let Err(e) = hub.event(ev) {
                failure.get_or_insert(e);
                failed_at.get_or_insert_with(Instant::now);
            }
        }
        // Watch the children.
        let mut running = 0;
        for (r, slot) in children.iter_mut().enumerate() {
            let Some(c) = slot else { continue };
            match c.try_wait() {
                Ok(None) => running += 1,
                Ok(Some(st)) => {
                    *slot = None;
                    if !st.success() {
                        let msg = format!("rank {r} failed ({st})");
                        hub.fail(&msg);
                        failure.get_or_insert(msg);
                        failed_at.get_or_insert_with(Instant::now);
                    }
                }
                Err(e) => {
                    *slot = None;
                    failure.get_or_insert(format!("rank {r}: {e}"));
                }
            }
        }
        if running == 0 {
            break;
        }
        // After a failure the others get a few seconds to report and exit, then are killed.
        if failed_at.is_some_and(|t| t.elapsed() > Duration::from_secs(3)) {
            kill_all(&mut children);
            break;
        }
    }
    match failure {
        Some(f) => anyhow::bail!("--procs {procs}: {f}"),
        None => Ok(()),
    }
}

fn kill_all(children: &mut [Option<Child>]) {
    for c in children.iter_mut().flatten() {
        let _ = c.kill();
        let _ = c.wait();
    }
    children.iter_mut().for_each(|c| *c = None);
}

/// Rounds of contributions: a round completes when every rank contributed.
struct Hub {
    conns: Vec<Option<UnixStream>>,
    pending: Vec<Option<Vec<u8>>>,
    gone: Vec<Option<String>>,
    failed: Option<String>,
}

impl Hub {
    fn new(n: usize) -> Hub {
        Hub { conns: (0..n).map(|_| None).collect(), pending: vec![None; n], gone: vec![None; n], failed: None }
    }

    fn event(&mut self, ev: Event) -> Result<(), String> {
        let n = self.conns.len();
        match ev {
            Event::Hello(r, s) if r < n => {
                self.conns[r] = Some(s);
                if let Some(f) = self.failed.clone() {
                    self.fail(&f);
                }
            }
            Event::Hello(r, _) => return Err(format!("a child claimed rank {r} of {n}")),
            Event::Msg(r, m) => {
                if let Some(f) = self.failed.clone() {
                    self.fail(&f);
                    return Ok(());
                }
                if self.pending[r].is_some() {
                    let e = format!("rank {r} sent two contributions to one collective");
                    self.fail(&e);
                    return Err(e);
                }
                self.pending[r] = Some(m);
                if let Some((g, why)) = self.gone.iter().enumerate().find_map(|(g, w)| w.as_ref().map(|w| (g, w))) {
                    let e = format!("rank {g} {why} while rank {r} waits for it");
                    self.fail(&e);
                    return Err(e);
                }
                if self.pending.iter().all(Option::is_some) {
                    let mut reply = vec![0u8];
                    reply.extend_from_slice(&(n as u32).to_le_bytes());
                    for p in self.pending.iter_mut() {
                        let p = p.take().unwrap();
                        reply.extend_from_slice(&(p.len() as u32).to_le_bytes());
                        reply.extend_from_slice(&p);
                    }
                    for c in self.conns.iter_mut().flatten() {
                        let _ = write_frame(c, &reply);
                    }
                }
            }
            Event::Gone(r, why) => {
                self.conns[r] = None;
                self.gone[r] = Some(why.clone());
                if self.pending.iter().any(Option::is_some) {
                    let e = format!("rank {r} {why} while other ranks wait for it");
                    self.fail(&e);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Tell every connected rank the run failed (each answers its current/next collective with it).
    fn fail(&mut self, msg: &str) {
        self.failed.get_or_insert_with(|| msg.to_string());
        let mut f = vec![1u8];
        f.extend_from_slice(msg.as_bytes());
        for c in self.conns.iter_mut().flatten() {
            let _ = write_frame(c, &f);
        }
        self.pending.iter_mut().for_each(|p| *p = None);
    }
}
