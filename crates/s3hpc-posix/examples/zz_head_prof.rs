// scratch (not committed)
use bytes::Bytes;
use s3hpc_core::{Body, EtagMode, GetObjectRequest, PutObjectRequest, Store};
use s3hpc_posix::{Durability, IoMode, PosixOptions, PosixStore};
use std::time::{Duration, Instant};
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let base = std::path::PathBuf::from("/tmp/zzhead");
    let _ = std::fs::remove_dir_all(&base);
    let s = PosixStore::open(
        base.join("store"),
        PosixOptions {
            durability: Durability::None,
            etag_mode: EtagMode::Md5,
            io: IoMode::Inline,
            ..Default::default()
        },
    )
    .unwrap();
    s.create_bucket("bench").await.unwrap();
    s.put_object("bench", "head-me", PutObjectRequest::default(), Body::Bytes(Bytes::from(vec![7u8; 4096])))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let path = base.join("store/bench/head-me");
    let n: usize = std::env::var("N").map(|v| v.parse().unwrap()).unwrap_or(2_000_000);
    for _ in 0..3 {
        let t = Instant::now();
        for _ in 0..n {
            std::hint::black_box(s.head_object("bench", "head-me", GetObjectRequest::default()).await.unwrap());
        }
        let th = t.elapsed();
        let t = Instant::now();
        for _ in 0..n {
            std::hint::black_box(std::fs::metadata(&path).unwrap());
        }
        let tr = t.elapsed();
        println!(
            "head {:.2} us stat {:.2} us ratio {:.2}",
            th.as_secs_f64() / n as f64 * 1e6,
            tr.as_secs_f64() / n as f64 * 1e6,
            tr.as_secs_f64() / th.as_secs_f64()
        );
    }
}
