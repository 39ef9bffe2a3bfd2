//! `s3hpc bench`: the command line and the workloads live in the `s3hpc-bench` crate.

pub use s3hpc_bench::cli::BenchArgs;

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    s3hpc_bench::cli::run(args)
}
