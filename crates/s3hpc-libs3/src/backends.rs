//! Construction of the concrete stores behind `S3HPC_TARGET`.

use std::sync::Arc;

use s3hpc_core::{Credentials, DynStore, Error, EtagMode};
use s3hpc_posix::{Durability, IoMode, PosixOptions, PosixStore};

/// Posix options from the environment: `S3HPC_DURABILITY` (strict | relaxed | none) and
/// `S3HPC_ETAG` (md5 | fast); unset means the posix backend's defaults. `S3HPC_IO` (inline |
/// offload) defaults to `inline`: every libs3 call waits for its result anyway, so the store's
/// file-system work runs on the calling thread instead of hopping to a blocking pool and back.
pub fn posix_options() -> Result<PosixOptions, String> {
    let mut o = PosixOptions { io: IoMode::Inline, ..Default::default() };
    if let Ok(v) = std::env::var("S3HPC_IO") {
        o.io = IoMode::parse(&v).ok_or_else(|| format!("S3HPC_IO={v:?}: use inline or offload"))?;
    }
    if let Ok(v) = std::env::var("S3HPC_DURABILITY") {
        o.durability =
            Durability::parse(&v).ok_or_else(|| format!("S3HPC_DURABILITY={v:?}: use strict, relaxed or none"))?;
    }
    if let Ok(v) = std::env::var("S3HPC_ETAG") {
        o.etag_mode = EtagMode::parse(&v).ok_or_else(|| format!("S3HPC_ETAG={v:?}: use md5 or fast"))?;
    }
    Ok(o)
}

/// The posix backend on `path` (embedded mode).
pub fn open_posix(path: &str) -> Result<DynStore, String> {
    if path.is_empty() || !path.starts_with('/') {
        return Err(format!("S3HPC_TARGET=file://{path}: the path must be absolute (file:///path)"));
    }
    let store = PosixStore::open(path, posix_options()?).map_err(|e| format!("S3HPC_TARGET=file://{path}: {e}"))?;
    Ok(Arc::new(store))
}

/// Validate a gateway URL before any connection is made.
pub fn check_remote(url: &str) -> Result<(), String> {
    let rest = ["unix://", "tcp://", "tls://"].iter().find_map(|p| url.strip_prefix(p)).unwrap_or("");
    if rest.is_empty() {
        return Err(format!("S3HPC_TARGET={url}: no address"));
    }
    Ok(())
}

/// A client of the node-local gateway at `url` with these credentials (connected on the shared
/// runtime, whose workers then drive its connections).
pub fn connect_remote(url: &str, access_key: &str, secret_key: &str) -> Result<DynStore, Error> {
    let creds = Credentials::new(access_key, secret_key);
    let url = url.to_string();
    let client =
        crate::target::shared().block_on(async move { s3hpc_wire::client::WireClient::connect(&url, creds).await })?;
    Ok(Arc::new(client))
}
