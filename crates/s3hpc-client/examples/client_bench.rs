//! Client-over-gateway throughput against the in-process direct path, on one machine:
//! `cargo run --release -p s3hpc-client --example client_bench [concurrency] [seconds]`.
//!
//! Starts the s3hpc HTTP gateway over the `noop` store (no storage cost) on 127.0.0.1:0, then
//! runs small-object PUT/GET and 16 MiB GET/PUT through `S3Client` with `concurrency` tasks,
//! and the same operations directly on the store, and prints both and their ratio.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use s3hpc_client::{ClientConfig, S3Client};
use s3hpc_core::*;

async fn drive(store: DynStore, conc: usize, secs: f64, op: &'static str, size: usize) -> (f64, f64) {
    let ops = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let payload = Bytes::from(vec![7u8; size]);
    let stop = Instant::now() + Duration::from_secs_f64(secs);
    let mut tasks = Vec::new();
    for t in 0..conc {
        let (store, ops, bytes, payload) = (store.clone(), ops.clone(), bytes.clone(), payload.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = 0u64;
            while Instant::now() < stop {
                let key = format!("k-{t}-{}", i % 64);
                match op {
                    "put" => {
                        let req = PutObjectRequest { content_length: Some(payload.len() as u64), ..Default::default() };
                        store.put_object("bench", &key, req, Body::Bytes(payload.clone())).await.unwrap();
                        bytes.fetch_add(payload.len() as u64, Ordering::Relaxed);
                    }
                    _ => {
                        let out = store.get_object("bench", &key, GetObjectRequest::default()).await.unwrap();
                        let n = out.body.collect().await.unwrap().len();
                        bytes.fetch_add(n as u64, Ordering::Relaxed);
                    }
                }
                ops.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
        }));
    }
    let t0 = Instant::now();
    for t in tasks {
        t.await.unwrap();
    }
    let el = t0.elapsed().as_secs_f64();
    (ops.load(Ordering::Relaxed) as f64 / el, bytes.load(Ordering::Relaxed) as f64 / el / 1e6)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let conc: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(64);
    let secs: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let creds = Credentials::new("BENCHACCESSKEY", "bench-secret");
    for size in [4096usize, 16 << 20] {
        let direct: DynStore = Arc::new(s3hpc_core::noop::NoopStore::new(size));
        let cfg = s3hpc_http::Config::new(direct.clone(), CredentialSet::new([creds.clone()]));
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let srv = tokio::spawn(s3hpc_http::serve(l, cfg, async move {
            let _ = rx.await;
        }));
        let client: DynStore = Arc::new(
            S3Client::new(ClientConfig {
                endpoint: format!("http://{addr}"),
                credentials: creds.clone(),
                region: "us-east-1".into(),
                virtual_host: false,
            })
            .unwrap(),
        );
        let _ = client.create_bucket("bench").await;
        let _ = direct.create_bucket("bench").await;
        for op in ["put", "get"] {
            let (d_ops, d_mb) = drive(direct.clone(), conc, secs, op, size).await;
            let (c_ops, c_mb) = drive(client.clone(), conc, secs, op, size).await;
            println!(
                "{op} {size:>9} B x{conc}: direct {d_ops:>9.0} op/s {d_mb:>8.0} MB/s | http client {c_ops:>8.0} op/s {c_mb:>7.0} MB/s | ratio {:.3}",
                c_ops / d_ops
            );
        }
        let _ = tx.send(());
        let _ = srv.await;
    }
}
