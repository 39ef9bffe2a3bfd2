//! Ranks: the unit an HPC launcher (MPI, `--procs N`) multiplies. Every workload asks the
//! coordinator for its rank (key prefixes), synchronises phases with `barrier` and combines
//! per-rank figures with `gather`. [`LocalCoordinator`] is the single-rank implementation.

use async_trait::async_trait;

#[async_trait]
pub trait Coordinator: Send + Sync + 'static {
    /// This rank, `0..size()`.
    fn rank(&self) -> usize;
    /// Number of ranks in the job.
    fn size(&self) -> usize;
    /// Wait until every rank reached this point.
    async fn barrier(&self);
    /// Every rank contributes `values`; every rank receives all contributions in rank order.
    async fn gather(&self, values: Vec<f64>) -> Vec<Vec<f64>>;
}

/// One rank, no peers: barriers are no-ops and gather returns the own values.
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
    async fn barrier(&self) {}
    async fn gather(&self, values: Vec<f64>) -> Vec<Vec<f64>> {
        vec![values]
    }
}

/// Sum of column `i` over all ranks' contributions.
pub fn sum_col(all: &[Vec<f64>], i: usize) -> f64 {
    all.iter().map(|v| v.get(i).copied().unwrap_or(0.0)).sum()
}

/// Maximum of column `i` over all ranks' contributions.
pub fn max_col(all: &[Vec<f64>], i: usize) -> f64 {
    all.iter().map(|v| v.get(i).copied().unwrap_or(0.0)).fold(0.0, f64::max)
}
