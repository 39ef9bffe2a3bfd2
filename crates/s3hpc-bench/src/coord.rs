//! Ranks: the unit an HPC launcher (MPI, `--procs N`) multiplies. Every workload asks the
//! coordinator for its rank (key prefixes), synchronises phases with barriers and combines
//! per-rank results with an all-gather of byte buffers.
//!
//! A [`Coordinator`] is the transport (single rank, `--procs` Unix socket, MPI); [`Ranks`] wraps
//! one and is what workloads use: every collective carries a tag naming the step, so ranks that
//! got out of step (one failed outside a phase, the others went on) are detected and the run fails
//! with a message instead of mixing up data or hanging. After such an error every later
//! collective fails at once ("broken"), so cleanup can still run rank-locally.

use std::sync::Mutex;

use async_trait::async_trait;

/// A transport for collectives. Implementations: [`LocalCoordinator`],
/// [`crate::procs::ProcsCoordinator`], `crate::mpi::MpiCoordinator` (feature `mpi`).
#[async_trait]
pub trait Coordinator: Send + Sync + 'static {
    /// This rank, `0..size()`.
    fn rank(&self) -> usize;
    /// Number of ranks in the job.
    fn size(&self) -> usize;
    /// Every rank contributes `data`; every rank receives all contributions in rank order.
    /// Blocks (asynchronously) until every rank contributed; fails if a rank is gone.
    async fn allgather(&self, data: Vec<u8>) -> anyhow::Result<Vec<Vec<u8>>>;
    /// End of the job: `ok` = every rank completed its collectives in step (MPI: finalize, else abort).
    async fn finish(&self, _ok: bool) {}
    /// What runs the ranks, for the report (`local`, `procs`, `mpi`).
    fn kind(&self) -> &'static str;
}

/// One rank, no peers: barriers are no-ops and gathers return the own contribution.
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalCoordinator;

#[async_trait]
impl Coordinator for LocalCoordinator {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    async fn allgather(&self, data: Vec<u8>) -> anyhow::Result<Vec<Vec<u8>>> {
        Ok(vec![data])
    }
    fn kind(&self) -> &'static str {
        "local"
    }
}

/// Tagged, checked collectives over a [`Coordinator`].
pub struct Ranks {
    inner: Box<dyn Coordinator>,
    broken: Mutex<Option<String>>,
}

impl Default for Ranks {
    fn default() -> Self {
        Ranks::new(Box::new(LocalCoordinator))
    }
}

impl Ranks {
    pub fn new(inner: Box<dyn Coordinator>) -> Ranks {
        Ranks { inner, broken: Mutex::new(None) }
    }
    pub fn rank(&self) -> usize {
        self.inner.rank()
    }
    pub fn size(&self) -> usize {
        self.inner.size()
    }
    pub fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    /// The error that broke the collectives, if any.
    pub fn broken(&self) -> Option<String> {
        self.broken.lock().unwrap().clone()
    }

    /// All-gather `data` under `tag`; every rank must be at the same tag.
    pub async fn allgather(&self, tag: &str, data: Vec<u8>) -> anyhow::Result<Vec<Vec<u8>>> {
        if let Some(b) = self.broken() {
            anyhow::bail!("rank {}: collectives unusable after an earlier error: {b}", self.rank());
        }
        if self.size() == 1 {
            return Ok(vec![data]);
        }
        let tb = tag.as_bytes();
        let mut buf = Vec::with_capacity(4 + tb.len() + data.len());
        buf.extend_from_slice(&(tb.len() as u32).to_le_bytes());
        buf.extend_from_slice(tb);
        buf.extend_from_slice(&data);
        let r = self.inner.allgather(buf).await.and_then(|all| {
            let mut out = Vec::with_capacity(all.len());
            let mut tags = Vec::new();
            for (r, b) in all.into_iter().enumerate() {
                let (t, d) = split_tag(&b).ok_or_else(|| anyhow::anyhow!("rank {r} sent a malformed message"))?;
                tags.push(t.to_string());
                out.push(d.to_vec());
            }
            if let Some((r, t)) = tags.iter().enumerate().find(|(_, t)| t.as_str() != tag) {
                anyhow::bail!("ranks out of step: rank {} is at {tag:?}, rank {r} at {t:?}", self.rank());
            }
            Ok(out)
        });
        if let Err(e) = &r {
            self.broken.lock().unwrap().get_or_insert_with(|| e.to_string());
        }
        r
    }

    /// Wait until every rank reached `tag`.
    pub async fn barrier(&self, tag: &str) -> anyhow::Result<()> {
        self.allgather(tag, Vec::new()).await.map(|_| ())
    }

    /// Rank 0's `data` on every rank.
    pub async fn broadcast(&self, tag: &str, data: Vec<u8>) -> anyhow::Result<Vec<u8>> {
        let data = if self.rank() == 0 { data } else { Vec::new() };
        Ok(self.allgather(tag, data).await?.swap_remove(0))
    }

    /// Every rank's `values` on every rank.
    pub async fn gather_f64(&self, tag: &str, values: &[f64]) -> anyhow::Result<Vec<Vec<f64>>> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Ok(self
            .allgather(tag, bytes)
            .await?
            .iter()
            .map(|b| b.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect())
            .collect())
    }

    /// Every rank reports whether it succeeded; all fail (with every failing rank's message) if any did.
    pub async fn agree(&self, tag: &str, local: Result<(), String>) -> anyhow::Result<()> {
        let mine = match &local {
            Ok(()) => Vec::new(),
            Err(e) => e.as_bytes().to_vec(),
        };
        let all = self.allgather(tag, mine).await?;
        let errs: Vec<String> = all
            .iter()
            .enumerate()
            .filter(|(_, b)| !b.is_empty())
            .map(|(r, b)| {
                if self.size() > 1 {
                    format!("rank {r}: {}", String::from_utf8_lossy(b))
                } else {
                    String::from_utf8_lossy(b).into_owned()
                }
            })
            .collect();
        if !errs.is_empty() {
            anyhow::bail!(errs.join("; "));
        }
        Ok(())
    }

    pub async fn finish(&self) {
        let ok = self.broken().is_none();
        self.inner.finish(ok).await
    }
}

fn split_tag(b: &[u8]) -> Option<(&str, &[u8])> {
    let n = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
    let t = std::str::from_utf8(b.get(4..4 + n)?).ok()?;
    Some((t, &b[4 + n..]))
}

/// Sum of column `i` over all ranks' contributions.
pub fn sum_col(all: &[Vec<f64>], i: usize) -> f64 {
    all.iter().map(|v| v.get(i).copied().unwrap_or(0.0)).sum()
}

/// Maximum of column `i` over all ranks' contributions.
pub fn max_col(all: &[Vec<f64>], i: usize) -> f64 {
    all.iter().map(|v| v.get(i).copied().unwrap_or(0.0)).fold(0.0, f64::max)
}

/// How this process was started: by an MPI launcher (with its job size) or not.
pub fn launcher() -> Option<(usize, &'static str)> {
    const VARS: &[&str] = &["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS"];
    for v in VARS {
        if let Some(n) = std::env::var(v).ok().and_then(|s| s.trim().parse::<usize>().ok()) {
            return Some((n, v));
        }
    }
    None
}

/// The coordinator for this process: MPI under an MPI launcher (feature `mpi`), a `--procs`
/// child when the parent set the environment for one, else the single local rank.
pub fn from_env(barrier_timeout: std::time::Duration) -> anyhow::Result<Ranks> {
    if let Some(c) = crate::procs::ProcsCoordinator::from_env(barrier_timeout)? {
        return Ok(Ranks::new(Box::new(c)));
    }
    if let Some((n, var)) = launcher() {
        #[cfg(feature = "mpi")]
        {
            let _ = (n, var);
            return Ok(Ranks::new(Box::new(crate::mpi::MpiCoordinator::init()?)));
        }
        #[cfg(not(feature = "mpi"))]
        if n > 1 {
            anyhow::bail!(
                "started as one of {n} MPI ranks ({var}={n}), but this s3hpc was built without MPI: \
                 rebuild with `cargo build --features mpi` (needs libopenmpi-dev), or use `--procs {n}` instead of mpirun"
            );
        }
    }
    Ok(Ranks::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// N ranks as tasks of one process: slots plus two barriers per round.
    struct MemRank {
        rank: usize,
        size: usize,
        slots: std::sync::Arc<Mutex<Vec<Vec<u8>>>>,
        barrier: std::sync::Arc<tokio::sync::Barrier>,
    }

    #[async_trait]
    impl Coordinator for MemRank {
        fn rank(&self) -> usize {
            self.rank
        }
        fn size(&self) -> usize {
            self.size
        }
        fn kind(&self) -> &'static str {
            "test"
        }
        async fn allgather(&self, data: Vec<u8>) -> anyhow::Result<Vec<Vec<u8>>> {
            self.slots.lock().unwrap()[self.rank] = data;
            self.barrier.wait().await;
            let all = self.slots.lock().unwrap().clone();
            self.barrier.wait().await;
            Ok(all)
        }
    }

    fn mem_ranks(n: usize) -> Vec<Ranks> {
        let slots = std::sync::Arc::new(Mutex::new(vec![Vec::new(); n]));
        let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(n));
        (0..n)
            .map(|rank| Ranks::new(Box::new(MemRank { rank, size: n, slots: slots.clone(), barrier: barrier.clone() })))
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn collectives_across_ranks_and_out_of_step_detection() {
        let mut set = tokio::task::JoinSet::new();
        for r in mem_ranks(3) {
            set.spawn(async move {
                let me = r.rank();
                let g = r.gather_f64("g", &[me as f64, 10.0]).await.unwrap();
                assert_eq!(g, vec![vec![0.0, 10.0], vec![1.0, 10.0], vec![2.0, 10.0]]);
                assert_eq!(sum_col(&g, 0), 3.0);
                assert_eq!(max_col(&g, 0), 2.0);
                let b = r.broadcast("id", format!("from {me}").into_bytes()).await.unwrap();
                assert_eq!(b, b"from 0");
                // one rank failed: everybody fails with that rank's message
                let e = r.agree("step", if me == 2 { Err("disk full".into()) } else { Ok(()) }).await.unwrap_err();
                assert_eq!(e.to_string(), "rank 2: disk full");
                assert!(r.broken().is_none(), "a failure everybody agreed on leaves the collectives usable");
                // rank 1 went elsewhere: all three see that they are out of step ...
                let tag = if me == 1 { "cleanup" } else { "start put" };
                let e = r.barrier(tag).await.unwrap_err().to_string();
                assert!(e.contains("out of step"), "{e}");
                // ... and every later collective fails at once, without waiting for the others
                let t0 = std::time::Instant::now();
                assert!(r.barrier("later").await.is_err());
                assert!(t0.elapsed() < std::time::Duration::from_secs(1));
                me
            });
        }
        let mut done = Vec::new();
        while let Some(r) = set.join_next().await {
            done.push(r.unwrap());
        }
        done.sort();
        assert_eq!(done, vec![0, 1, 2]);
    }

    #[tokio::test]
    async fn local_collectives() {
        let r = Ranks::default();
        assert_eq!(r.allgather("x", vec![1, 2]).await.unwrap(), vec![vec![1, 2]]);
        assert_eq!(r.gather_f64("y", &[1.5, 2.0]).await.unwrap(), vec![vec![1.5, 2.0]]);
        assert_eq!(r.broadcast("z", vec![7]).await.unwrap(), vec![7]);
        assert!(r.agree("a", Ok(())).await.is_ok());
        assert_eq!(r.agree("b", Err("boom".into())).await.unwrap_err().to_string(), "boom");
        assert_eq!(split_tag(&[1, 0, 0, 0, b'q', 9]), Some(("q", &[9u8][..])));
        assert_eq!(split_tag(&[9, 0, 0, 0, b'q']), None);
    }
}
