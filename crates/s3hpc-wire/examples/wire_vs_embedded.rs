//! Wire protocol vs. the embedded store, in one run on one machine.
//!
//! ```text
//! cargo run --release -p s3hpc-wire --example wire_vs_embedded -- [--secs 2] [--conc 8] [--large-mib 8]
//!     [--dir /tmp] [--durability strict|relaxed|none]
//! ```
//!
//! For each target (the posix backend called directly; WireClient over a Unix socket and over TCP
//! to a server backed by the same kind of posix store; the S3 HTTP gateway `s3hpc-http` with the
//! HTTP client `s3hpc-client` over TCP, also on a posix store) it measures 4 KiB PUT/GET/HEAD ops/s at
//! concurrency 1 and `--conc`, and PUT/GET throughput of `--large-mib` MiB objects. The server runs
//! on its own runtime (as it would in its own process). Results are printed as a Markdown table.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use s3hpc_core::{Body, CredentialSet, Credentials, DynStore, GetObjectRequest, PutObjectRequest};
use s3hpc_wire::{ClientOptions, ServerOptions, WireClient};

struct Args {
    secs: f64,
    conc: usize,
    large_mib: usize,
    dir: std::path::PathBuf,
    durability: s3hpc_posix::Durability,
}

fn args() -> Args {
    let mut a = Args {
        secs: 2.0,
        conc: 8,
        large_mib: 8,
        dir: std::env::temp_dir(),
        durability: s3hpc_posix::Durability::default(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--secs" => a.secs = v.parse().unwrap(),
            "--conc" => a.conc = v.parse().unwrap(),
            "--large-mib" => a.large_mib = v.parse().unwrap(),
            "--dir" => a.dir = v.into(),
            "--durability" => {
                a.durability = match v.as_str() {
                    "strict" => s3hpc_posix::Durability::Strict,
                    "relaxed" => s3hpc_posix::Durability::Relaxed,
                    "none" => s3hpc_posix::Durability::None,
                    _ => panic!("--durability strict|relaxed|none"),
                }
            }
            _ => panic!("unknown argument {k}"),
        }
    }
    a
}

fn posix_store(root: &std::path::Path, durability: s3hpc_posix::Durability) -> DynStore {
    std::fs::create_dir_all(root).unwrap();
    let opts = s3hpc_posix::PosixOptions { durability, ..Default::default() };
    Arc::new(s3hpc_posix::PosixStore::open(root, opts).unwrap())
}

#[derive(Clone, Copy)]
enum Op {
    Put,
    Get,
    Head,
}

/// Run `op` from `conc` tasks for `secs`; returns (ops, bytes, seconds).
async fn phase(
    store: &DynStore,
    bucket: &str,
    op: Op,
    size: usize,
    conc: usize,
    secs: f64,
    keys: u64,
) -> (u64, u64, f64) {
    let data = Bytes::from(vec![0x5au8; size]);
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..conc as u64 {
        let (store, stop, ops, bytes, data, bucket) =
            (store.clone(), stop.clone(), ops.clone(), bytes.clone(), data.clone(), bucket.to_string());
        tasks.push(tokio::spawn(async move {
            let mut i = t;
            while !stop.load(Ordering::Relaxed) {
                let key = format!("o{size}/{}", i % keys);
                match op {
                    Op::Put => {
                        let req = PutObjectRequest { content_length: Some(data.len() as u64), ..Default::default() };
                        store.put_object(&bucket, &key, req, Body::from(data.clone())).await.unwrap();
                        bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
                    }
                    Op::Get => {
                        let o = store.get_object(&bucket, &key, GetObjectRequest::default()).await.unwrap();
                        let mut s = o.body.into_stream();
                        let mut n = 0;
                        while let Some(c) = s.next().await {
                            n += c.unwrap().len() as u64;
                        }
                        assert_eq!(n, o.info.size);
                        bytes.fetch_add(n, Ordering::Relaxed);
                    }
                    Op::Head => {
                        store.head_object(&bucket, &key, GetObjectRequest::default()).await.unwrap();
                    }
                }
                ops.fetch_add(1, Ordering::Relaxed);
                i += conc as u64;
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    (ops.load(Ordering::Relaxed), bytes.load(Ordering::Relaxed), start.elapsed().as_secs_f64())
}

async fn suite(name: &str, store: DynStore, a: &Args, rows: &mut Vec<(String, String, f64)>) {
    let bucket = "bench";
    let _ = store.create_bucket(bucket).await;
    let small = 4096;
    let large = a.large_mib << 20;
    // Pre-create the small keys so GET/HEAD find them whatever the PUT phase reached.
    let keys = 1024u64;
    for i in 0..keys {
        store
            .put_object(bucket, &format!("o{small}/{i}"), PutObjectRequest::default(), Body::from(vec![1u8; small]))
            .await
            .unwrap();
    }
    for conc in [1, a.conc] {
        for (op, label) in [(Op::Put, "PUT"), (Op::Get, "GET"), (Op::Head, "HEAD")] {
            let (n, _, s) = phase(&store, bucket, op, small, conc, a.secs, keys).await;
            rows.push((name.into(), format!("4 KiB {label} ops/s, conc {conc}"), n as f64 / s));
        }
    }
    let large_keys = 8u64;
    let lconc = a.conc.min(4);
    let (_, b, s) = phase(&store, bucket, Op::Put, large, lconc, a.secs, large_keys).await;
    rows.push((name.into(), format!("{} MiB PUT MiB/s, conc {lconc}", a.large_mib), b as f64 / s / 1048576.0));
    let (_, b, s) = phase(&store, bucket, Op::Get, large, lconc, a.secs, large_keys).await;
    rows.push((name.into(), format!("{} MiB GET MiB/s, conc {lconc}", a.large_mib), b as f64 / s / 1048576.0));
    let (_, b, s) = phase(&store, bucket, Op::Get, large, 1, a.secs, large_keys).await;
    rows.push((name.into(), format!("{} MiB GET MiB/s, conc 1", a.large_mib), b as f64 / s / 1048576.0));
}

fn main() {
    let a = args();
    let tmp = tempfile::tempdir_in(&a.dir).unwrap();
    let creds = Credentials::new("BENCHKEY", "bench-secret");

    // The server on its own runtime and threads, like a separate process.
    let server_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let sock = format!("unix://{}", tmp.path().join("wire.sock").display());
    let served = posix_store(&tmp.path().join("served"), a.durability);
    let set = Arc::new(CredentialSet::new([creds.clone()]));
    let (handle, tcp_handle) = server_rt.block_on(async {
        let u = s3hpc_wire::bind(&sock, served.clone(), set.clone(), ServerOptions::default()).await.unwrap().spawn();
        let t = s3hpc_wire::bind("tcp://127.0.0.1:0", served, set, ServerOptions::default()).await.unwrap().spawn();
        (u, t)
    });
    let http_store = posix_store(&tmp.path().join("http"), a.durability);
    let (http_stop, http_stop_rx) = tokio::sync::oneshot::channel::<()>();
    let http_addr = server_rt.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let cfg = s3hpc_http::Config::new(http_store, CredentialSet::new([creds.clone()]));
        tokio::spawn(async move {
            s3hpc_http::serve(l, cfg, async move {
                let _ = http_stop_rx.await;
            })
            .await
            .unwrap()
        });
        addr
    });

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut rows = Vec::new();
    rt.block_on(async {
        suite("embedded posix", posix_store(&tmp.path().join("embedded"), a.durability), &a, &mut rows).await;
        let opts = ClientOptions { connections: 2, ..Default::default() };
        let c = WireClient::connect_with(&handle.url, creds.clone(), opts.clone()).await.unwrap();
        suite("wire (unix socket)", Arc::new(c), &a, &mut rows).await;
        let c = WireClient::connect_with(&tcp_handle.url, creds.clone(), opts).await.unwrap();
        suite("wire (tcp)", Arc::new(c), &a, &mut rows).await;
        let http = s3hpc_client::S3Client::new(s3hpc_client::ClientConfig {
            endpoint: format!("http://{http_addr}"),
            credentials: creds.clone(),
            region: "us-east-1".into(),
            virtual_host: false,
        })
        .unwrap();
        suite("http (tcp)", Arc::new(http), &a, &mut rows).await;
    });
    server_rt.block_on(handle.shutdown()).unwrap();
    server_rt.block_on(tcp_handle.shutdown()).unwrap();
    let _ = http_stop.send(());

    println!(
        "| metric | embedded posix | wire (unix) | wire (tcp) | http (tcp) | wire unix / embedded | wire unix / http |"
    );
    println!("|---|---|---|---|---|---|---|");
    let metrics: Vec<String> = rows.iter().filter(|r| r.0 == "embedded posix").map(|r| r.1.clone()).collect::<Vec<_>>();
    for m in metrics {
        let get = |n: &str| rows.iter().find(|r| r.0 == n && r.1 == m).map(|r| r.2).unwrap_or(f64::NAN);
        let (e, w, t, h) = (get("embedded posix"), get("wire (unix socket)"), get("wire (tcp)"), get("http (tcp)"));
        println!("| {m} | {e:.0} | {w:.0} | {t:.0} | {h:.0} | {:.2} | {:.2} |", w / e, w / h);
    }
}
