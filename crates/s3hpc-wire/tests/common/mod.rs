//! Shared test helpers: a server on an ephemeral endpoint, backed by a store.

#![allow(dead_code)]

use std::sync::Arc;

use s3hpc_core::{CredentialSet, Credentials, DynStore};
use s3hpc_wire::{ServerHandle, ServerOptions, WireClient};

pub fn creds() -> Credentials {
    Credentials::new("WIRETESTKEY", "wire-test-secret-0123456789")
}

pub struct Running {
    pub server: ServerHandle,
    pub dirs: Vec<tempfile::TempDir>,
}

/// Start a server on a Unix socket (`unix = true`) or on 127.0.0.1:0.
pub async fn start(store: DynStore, unix: bool, opts: ServerOptions) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let url =
        if unix { format!("unix://{}", dir.path().join("wire.sock").display()) } else { "tcp://127.0.0.1:0".into() };
    let set = Arc::new(CredentialSet::new([creds()]));
    let server = s3hpc_wire::bind(&url, store, set, opts).await.unwrap().spawn();
    Running { server, dirs: vec![dir] }
}

pub async fn client(url: &str) -> WireClient {
    WireClient::connect(url, creds()).await.unwrap()
}
