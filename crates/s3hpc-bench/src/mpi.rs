//! Ranks under `mpirun` / `srun` (feature `mpi`): a thin FFI over the C shim in `mpi_shim.c`.
//! MPI calls block, so one dedicated thread initialises MPI, performs every collective and
//! finalises; async callers hand it requests and await the answer (no tokio worker ever blocks).

use std::ffi::c_int;
use std::sync::Mutex;
use std::sync::mpsc;

use async_trait::async_trait;
use tokio::sync::oneshot;

use crate::coord::Coordinator;

unsafe extern "C" {
    fn s3hpc_mpi_init(rank: *mut c_int, size: *mut c_int) -> c_int;
    fn s3hpc_mpi_finalize() -> c_int;
    fn s3hpc_mpi_abort(code: c_int) -> c_int;
    fn s3hpc_mpi_barrier() -> c_int;
    fn s3hpc_mpi_bcast(buf: *mut u8, len: i64, root: c_int) -> c_int;
    fn s3hpc_mpi_allgather_len(mine: i64, all: *mut i64) -> c_int;
    fn s3hpc_mpi_allgatherv(mine: *const u8, len: i64, out: *mut u8, lens: *const i64, size: c_int) -> c_int;
    fn s3hpc_mpi_gatherv(mine: *const u8, len: i64, out: *mut u8, lens: *const i64, size: c_int, root: c_int) -> c_int;
}

fn check(what: &str, rc: c_int) -> anyhow::Result<()> {
    if rc != 0 {
        anyhow::bail!("MPI {what} failed (error {rc})");
    }
    Ok(())
}

/// Variable-length all-gather: lengths first, then the bytes.
fn allgather(size: usize, mine: &[u8]) -> anyhow::Result<Vec<Vec<u8>>> {
    let mut lens = vec![0i64; size];
    // SAFETY: `lens` has `size` entries and `size` is the communicator's size (from s3hpc_mpi_init on
    // this thread), so the shim's MPI_Allgather writes within it.
    check("allgather (lengths)", unsafe { s3hpc_mpi_allgather_len(mine.len() as i64, lens.as_mut_ptr()) })?;
    let total: i64 = lens.iter().sum();
    let mut out = vec![0u8; total as usize];
    // SAFETY: `mine` is valid for its length, `lens` holds every rank's length and `out` their sum,
    // which is what MPI_Allgatherv writes.
    check("allgatherv", unsafe {
        s3hpc_mpi_allgatherv(mine.as_ptr(), mine.len() as i64, out.as_mut_ptr(), lens.as_ptr(), size as c_int)
    })?;
    Ok(split(&out, &lens))
}

fn split(out: &[u8], lens: &[i64]) -> Vec<Vec<u8>> {
    let mut off = 0usize;
    lens.iter()
        .map(|&l| {
            let v = out[off..off + l as usize].to_vec();
            off += l as usize;
            v
        })
        .collect()
}

/// Variable-length gather to rank 0 (others get an empty vector).
pub fn gather_root(rank: usize, size: usize, mine: &[u8]) -> anyhow::Result<Vec<Vec<u8>>> {
    let mut lens = vec![0i64; size];
    // SAFETY: as in `allgather`: `lens` has `size` entries, the communicator's size (callers pass it).
    check("gather (lengths)", unsafe { s3hpc_mpi_allgather_len(mine.len() as i64, lens.as_mut_ptr()) })?;
    let total: i64 = if rank == 0 { lens.iter().sum() } else { 0 };
    let mut out = vec![0u8; total as usize];
    // SAFETY: `mine` is valid for its length and `lens` has every rank's length; only rank 0's `out`
    // is written, and on rank 0 it holds their sum.
    check("gatherv", unsafe {
        s3hpc_mpi_gatherv(mine.as_ptr(), mine.len() as i64, out.as_mut_ptr(), lens.as_ptr(), size as c_int, 0)
    })?;
    Ok(if rank == 0 { split(&out, &lens) } else { Vec::new() })
}

/// Rank 0's bytes on every rank (length first).
pub fn broadcast(rank: usize, data: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut n = if rank == 0 { data.len() as i64 } else { 0 };
    // SAFETY: `n` is an i64: 8 writable bytes, the length every rank passes.
    check("bcast (length)", unsafe { s3hpc_mpi_bcast(&mut n as *mut i64 as *mut u8, 8, 0) })?;
    let mut buf = if rank == 0 { data.to_vec() } else { vec![0u8; n as usize] };
    // SAFETY: `buf` has `n` bytes on every rank (rank 0's data, the others' zeroes) after the length
    // broadcast above.
    check("bcast", unsafe { s3hpc_mpi_bcast(buf.as_mut_ptr(), n, 0) })?;
    Ok(buf)
}

enum Req {
    Allgather(Vec<u8>, oneshot::Sender<anyhow::Result<Vec<Vec<u8>>>>),
    Finish(bool, oneshot::Sender<()>),
}

pub struct MpiCoordinator {
    rank: usize,
    size: usize,
    tx: Mutex<mpsc::Sender<Req>>,
}

impl MpiCoordinator {
    /// Start the MPI thread and initialise MPI on it.
    pub fn init() -> anyhow::Result<MpiCoordinator> {
        let (tx, rx) = mpsc::channel::<Req>();
        let (itx, irx) = mpsc::channel::<anyhow::Result<(usize, usize)>>();
        std::thread::Builder::new().name("mpi".into()).spawn(move || {
            let (mut rank, mut size) = (0, 0);
            // SAFETY: `rank` and `size` are live ints; MPI is initialised on this dedicated thread only.
            let r = check("init", unsafe { s3hpc_mpi_init(&mut rank, &mut size) });
            let ok = r.is_ok();
            let _ = itx.send(r.map(|_| (rank as usize, size as usize)));
            if !ok {
                return;
            }
            let size = size as usize;
            while let Ok(req) = rx.recv() {
                match req {
                    Req::Allgather(d, reply) => {
                        let _ = reply.send(allgather(size, &d));
                    }
                    Req::Finish(ok, reply) => {
                        // SAFETY: no pointers: the collective calls run on the thread that initialised MPI, which stops
                        // after them.
                        unsafe {
                            if ok {
                                s3hpc_mpi_barrier();
                                s3hpc_mpi_finalize();
                            } else {
                                s3hpc_mpi_abort(1);
                            }
                        }
                        let _ = reply.send(());
                        return;
                    }
                }
            }
        })?;
        let (rank, size) = irx.recv().map_err(|_| anyhow::anyhow!("MPI thread died during init"))??;
        Ok(MpiCoordinator { rank, size, tx: Mutex::new(tx) })
    }
}

#[async_trait]
impl Coordinator for MpiCoordinator {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn kind(&self) -> &'static str {
        "mpi"
    }
    async fn allgather(&self, data: Vec<u8>) -> anyhow::Result<Vec<Vec<u8>>> {
        let (t, r) = oneshot::channel();
        self.tx.lock().unwrap().send(Req::Allgather(data, t)).map_err(|_| anyhow::anyhow!("MPI thread is gone"))?;
        r.await.map_err(|_| anyhow::anyhow!("MPI thread is gone"))?
    }
    async fn finish(&self, ok: bool) {
        let (t, r) = oneshot::channel();
        if self.tx.lock().unwrap().send(Req::Finish(ok, t)).is_ok() {
            let _ = r.await;
        }
    }
}
