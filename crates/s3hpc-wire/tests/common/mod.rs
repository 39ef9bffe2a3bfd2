//! Shared test helpers: a server on an ephemeral endpoint, backed by a store.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use s3hpc_core::{CredentialSet, Credentials, DynStore};
use s3hpc_wire::frame::{self, Header};
use s3hpc_wire::{ServerHandle, ServerOptions, WireClient};
use tokio::io::{AsyncRead, AsyncReadExt};

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

/// One whole frame, for raw-socket tests.
pub fn frame_bytes(t: u8, flags: u8, id: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Header { ty: t, flags, id, len: payload.len() as u32 }.encode().to_vec();
    v.extend_from_slice(payload);
    v
}

/// The next frame from a raw socket; `None` at the end of the stream. Panics if the server
/// sends nothing for 10 s.
pub async fn read_frame<S: AsyncRead + Unpin>(s: &mut S) -> Option<(Header, Vec<u8>)> {
    let mut h = [0u8; frame::HEADER_LEN];
    tokio::time::timeout(Duration::from_secs(10), s.read_exact(&mut h)).await.expect("server went silent").ok()?;
    let h = Header::decode(&h, frame::MAX_DATA_FRAME_HARD).unwrap();
    let mut p = vec![0; h.len as usize];
    s.read_exact(&mut p).await.ok()?;
    Some((h, p))
}
