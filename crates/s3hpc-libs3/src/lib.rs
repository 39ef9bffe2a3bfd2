#![allow(non_upper_case_globals)]

//! s3hpc's libs3: a C library with libs3's interface (soname `libs3.so.4`, header
//! `include/libs3.h`) that sends libs3 requests to an s3hpc store instead of an HTTP server:
//! embedded on a POSIX file system (`S3HPC_TARGET=file:///path`) or to the node-local gateway
//! (`unix:///path.sock`, `tcp://host:port`). See `docs/LIBS3.md`.
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod api;
mod backends;
pub mod exec;
pub mod ffi;
pub mod ops;
mod pagebuf;
pub mod status;
mod status_table;
pub mod target;
