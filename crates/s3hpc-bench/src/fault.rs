//! A [`Store`] wrapper that injects faults: every n-th call of chosen operations fails (or
//! hangs, to exercise the request timeout). Used by the tests of the benchmark's error handling.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use s3hpc_core::hooked::{Hook, HookedStore, Op};
use s3hpc_core::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Fail with this code.
    Fail(ErrorCode),
    /// Never answer (the caller's timeout must fire).
    Hang,
}

/// The store with faults injected by a [`Faults`] hook.
pub type FaultStore = HookedStore<Faults>;

/// Which calls fail, and how; counts what it injected.
pub struct Faults {
    /// Operation names to fault: `put`, `get`, `head`, `delete`, `list`, `create-bucket`.
    ops: Vec<&'static str>,
    every: u64,
    kind: FaultKind,
    calls: AtomicU64,
    injected: AtomicU64,
}

/// The name a fault list uses for `op` (operations without one are never faulted).
fn op_name(op: Op) -> Option<&'static str> {
    Some(match op {
        Op::CreateBucket => "create-bucket",
        Op::PutObject => "put",
        Op::GetObject => "get",
        // The object lock reads were told to hooks as HEAD before every store operation had
        // its own name; faults still count them as one.
        Op::HeadObject | Op::GetObjectRetention | Op::GetObjectLegalHold => "head",
        // S3's DELETE is `delete_object_version` (the current version when none is named).
        Op::DeleteObject | Op::DeleteObjectVersion => "delete",
        Op::ListObjects | Op::ListObjectVersions => "list",
        _ => return None,
    })
}

/// `inner` where every `every`-th call of the operations named in `ops` (counted together)
/// fails as `kind`.
pub fn fault_store(inner: DynStore, ops: &[&'static str], every: u64, kind: FaultKind) -> FaultStore {
    let faults =
        Faults { ops: ops.to_vec(), every: every.max(1), kind, calls: AtomicU64::new(0), injected: AtomicU64::new(0) };
    HookedStore::new(inner, faults)
}

impl Faults {
    /// How many faults were injected so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }
}

#[async_trait]
impl Hook for Faults {
    async fn before(&self, op: Op, _bucket: &str, _key: &str) -> Result<()> {
        let Some(name) = op_name(op).filter(|n| self.ops.contains(n)) else {
            return Ok(());
        };
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if !n.is_multiple_of(self.every) {
            return Ok(());
        }
        self.injected.fetch_add(1, Ordering::Relaxed);
        match self.kind {
            FaultKind::Fail(code) => Err(Error::new(code, format!("injected fault in {name}"))),
            FaultKind::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Err(Error::internal("hang ended"))
            }
        }
    }
}
