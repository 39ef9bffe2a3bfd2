//! `s3hpc bench` (owned by the benchmark work).

#[derive(clap::Args)]
pub struct BenchArgs {}

pub fn run(_args: BenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("the benchmark is not built yet")
}
