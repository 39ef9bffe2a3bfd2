//! s3hpc core: the [`Store`] seam and what every layer shares.
//!
//! A backend implements [`Store`]; front ends (HTTP, binary protocol, C ABI) and clients speak
//! to any backend through it. See `docs/ARCHITECTURE.md`.
#![deny(unsafe_code)] // the one block left (body.rs) allows itself
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod body;
pub mod caller;
pub mod checksum;
pub mod creds;
pub mod error;
pub mod forwarding;
pub mod fsattr;
pub mod hooked;
pub mod identity;
pub mod io;
pub mod layer;
pub mod listing;
pub mod lock;
pub mod md5lanes;
pub mod memory;
pub mod multipart;
pub mod names;
pub mod noop;
pub mod op;
pub mod prefix_rename;
pub mod renames;
pub mod store;
pub mod types;
pub mod versions;

pub use body::{Body, BodyBuffer, BufferMemory, ByteStream};
pub use checksum::EtagMode;
pub use creds::{CredentialSet, Credentials};
pub use error::{Error, ErrorCode, Result};
pub use lock::{LockMode, ObjectLock, Retention};
pub use op::S3Op;
pub use store::{Capabilities, DynStore, Store, StoreOp};
pub use types::*;
pub use versions::{DeleteObjectOutput, ListVersionsPage, ListVersionsRequest, VersionEntry, VersioningState};
