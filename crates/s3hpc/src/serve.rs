//! `s3hpc serve` (owned by the gateway work).

#[derive(clap::Args)]
pub struct ServeArgs {}

pub fn run(_args: ServeArgs) -> anyhow::Result<()> {
    anyhow::bail!("the gateway is not built yet")
}
