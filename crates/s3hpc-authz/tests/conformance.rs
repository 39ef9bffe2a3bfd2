//! The conformance suite's access cases in process: `Authorized` over the memory oracle and over
//! the posix store, each caller a scoped handle (HTTP and the binary protocol run the same cases
//! through their clients).

use std::sync::Arc;

use s3hpc_authz::Authorized;
use s3hpc_conformance::access::{AsCaller, Callers, accounts, run_access};
use s3hpc_core::DynStore;
use s3hpc_core::caller::Caller;

fn callers(inner: DynStore) -> Callers {
    let store: DynStore = Arc::new(Authorized::new(inner, accounts()));
    Callers {
        alice: AsCaller::account(store.clone(), 0),
        bob: AsCaller::account(store.clone(), 1),
        admin: AsCaller::account(store.clone(), 2),
        anonymous: Some(AsCaller::store(store, Caller::anonymous())),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_cases_over_memory() {
    run_access(&callers(Arc::new(s3hpc_core::memory::MemoryStore::new()))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_cases_over_posix() {
    let dir = tempfile::tempdir().unwrap();
    let posix = s3hpc_posix::PosixStore::open(dir.path(), s3hpc_posix::PosixOptions::default()).unwrap();
    run_access(&callers(Arc::new(posix))).await;
}
