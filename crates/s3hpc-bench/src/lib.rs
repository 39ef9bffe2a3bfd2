//! `s3hpc bench`: HPC-grade measurement of any S3 store through the [`s3hpc_core::Store`] seam.
//!
//! One workload code path serves every target kind (embedded posix backend, raw POSIX baseline,
//! HTTP gateway, binary protocol, in-process memory/noop). Workloads run as tokio tasks inside a
//! rank; ranks are a first-class concept through [`coord::Coordinator`] (single rank, `--procs N`
//! local processes, or MPI ranks with the `mpi` feature).
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod cli;
pub mod coord;
pub mod data;
pub mod fault;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod output;
pub mod procs;
pub mod rawfs;
pub mod report;
pub mod runner;
pub mod stats;
pub mod target;
pub mod workloads;

pub use runner::{Ctx, RunOpts};
pub use stats::{BenchRun, Lat, Phase, TargetResult};
