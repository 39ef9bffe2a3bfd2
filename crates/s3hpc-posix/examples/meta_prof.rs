//! One metadata operation in a loop, for profiling (`perf record`, `valgrind --tool=callgrind`,
//! `strace -c`): the store's HEAD and 4 KiB GET (Inline I/O mode) and the raw calls they are
//! measured against. See `docs/perf/posix.md`.
//!
//! ```text
//! meta_prof head|stat|get|raw-get|put|raw-put N [--dir DIR]
//! ```
//!
//! Instructions per operation: run under callgrind with two values of N and divide the
//! difference of the totals by the difference of the Ns (setup cancels out).

use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use s3hpc_core::{Body, EtagMode, GetObjectRequest, PutObjectRequest, Store};
use s3hpc_posix::{Durability, IoMode, PosixOptions, PosixStore};

fn main() {
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mode = v.first().cloned().unwrap_or_else(|| "head".into());
    let n: usize = v.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let dir = match v.iter().position(|a| a == "--dir") {
        Some(i) => PathBuf::from(&v[i + 1]),
        None => std::env::temp_dir().join(format!("s3hpc-meta-prof-{}", std::process::id())),
    };
    fs::create_dir_all(&dir).unwrap();
    let store = PosixStore::open(
        dir.join("store"),
        PosixOptions {
            durability: Durability::None,
            etag_mode: EtagMode::Fast,
            io: IoMode::Inline,
            ..Default::default()
        },
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let small = Bytes::from(vec![7u8; 4096]);
    rt.block_on(async {
        let _ = store.create_bucket("bench").await;
        store.put_object("bench", "head-me", PutObjectRequest::default(), Body::Bytes(small.clone())).await.unwrap();
    });
    fs::create_dir_all(dir.join("raw")).unwrap();
    let raw = dir.join("raw").join("head-me");
    fs::write(&raw, &small).unwrap();
    // Records are cached once their file has settled (see rcache.rs).
    std::thread::sleep(Duration::from_millis(150));
    let mut buf = vec![0u8; 4096];
    let t = Instant::now();
    match mode.as_str() {
        "head" => rt.block_on(async {
            for _ in 0..n {
                std::hint::black_box(store.head_object("bench", "head-me", GetObjectRequest::default()).await.unwrap());
            }
        }),
        "stat" => {
            for _ in 0..n {
                std::hint::black_box(fs::metadata(&raw).unwrap());
            }
        }
        "get" => rt.block_on(async {
            for _ in 0..n {
                let o = store.get_object("bench", "head-me", GetObjectRequest::default()).await.unwrap();
                if let Body::File { file, offset, len } = o.body {
                    file.read_exact_at(&mut buf[..len as usize], offset).unwrap();
                }
            }
        }),
        "raw-get" => {
            for _ in 0..n {
                let f = File::open(&raw).unwrap();
                let len = f.metadata().unwrap().len();
                f.read_exact_at(&mut buf[..len as usize], 0).unwrap();
            }
        }
        "put" => rt.block_on(async {
            for i in 0..n {
                let key = format!("put/{i}");
                store.put_object("bench", &key, PutObjectRequest::default(), Body::Bytes(small.clone())).await.unwrap();
            }
        }),
        "raw-put" => {
            let d = dir.join("raw").join("put");
            fs::create_dir_all(&d).unwrap();
            for i in 0..n {
                let tmp = d.join(format!(".tmp.{i}"));
                fs::write(&tmp, &small).unwrap();
                fs::rename(&tmp, d.join(i.to_string())).unwrap();
            }
        }
        other => panic!("unknown mode {other}"),
    }
    let d = t.elapsed();
    println!("{mode}: {n} ops in {:.3} s = {:.0} ops/s", d.as_secs_f64(), n as f64 / d.as_secs_f64());
    let _ = fs::remove_dir_all(&dir);
}
