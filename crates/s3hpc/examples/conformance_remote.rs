//! The conformance suite against running gateways: `conformance_remote ENDPOINTS [+CASE|-CASE]...`,
//! ENDPOINTS one `http://host:port` or a comma-separated list of gateways that share one root
//! (taken as one store: every request opens a new connection and goes to the next gateway in
//! turn, so a case's PUT and the GET after it are served by different gateways). Credentials
//! from S3HPC_ACCESS_KEY / S3HPC_SECRET_KEY. `+CASE` runs only the named cases, `-CASE` leaves
//! the named cases out (default: every case).
//! The caps are those of the posix backend. Exits non-zero (the suite panics) on any failure.
//! Used by tests/integration/test_multinode.py (two gateways on two GlusterFS mounts).

use std::sync::Arc;

use s3hpc_client::{ClientConfig, S3Client};
use s3hpc_core::{Credentials, DynStore};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let endpoints = args.next().expect("usage: conformance_remote ENDPOINTS [+CASE|-CASE]...");
    let (only, skip): (Vec<String>, Vec<String>) = args.partition(|a| a.starts_with('+'));
    let only: Vec<String> = only.iter().map(|a| a[1..].to_string()).collect();
    let skip: Vec<String> = skip.iter().map(|a| a.trim_start_matches('-').to_string()).collect();
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} is not set"));
    let cfg = ClientConfig {
        endpoint: endpoints,
        credentials: Credentials::new(var("S3HPC_ACCESS_KEY"), var("S3HPC_SECRET_KEY")),
        region: "us-east-1".into(),
        virtual_host: false,
    };
    let store: DynStore = Arc::new(S3Client::alternating(cfg).expect("client"));
    s3hpc_conformance::run_selected(store, s3hpc_conformance::Caps::default(), |name| {
        (only.is_empty() || only.iter().any(|o| o == name)) && !skip.iter().any(|x| x == name)
    })
    .await;
    println!("conformance: every selected case passed");
}
