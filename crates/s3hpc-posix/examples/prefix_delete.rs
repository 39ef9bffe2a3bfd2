//! IOR's S3 delete phase on one flat directory, as mdtest runs it through the libs3 drop-in:
//! create N keys in one bucket, then for each key delete it and list the bucket with the key as
//! prefix (IOR looks for `<key>-<offset>-<len>` fragments). `--raw` times plain `unlink` of the
//! same files instead: the floor.
//!
//! ```text
//! cargo build --release -p s3hpc-posix --example prefix_delete
//! target/release/examples/prefix_delete [--dir DIR] [--n N] [--raw] [--staleness SECS]
//! strace -c -f target/release/examples/prefix_delete --n 1000     # getdents64 per phase
//! ```
//!
//! `bench/prefix_delete.sh` runs N = 1,000 and 10,000 both ways, with and without strace.
//! Keys are fixed width (`file.00000042`), so no key is a prefix of another and every listing
//! returns nothing: the cost measured is finding that out. `--staleness` sets the listing window
//! (`s3hpc serve --listing-staleness`, default 1 s) used where DIR is on a file system shared by
//! nodes (0: every delete reads the directory again). The store is embedded (`Inline` I/O,
//! durability none), as the libs3 drop-in's `file://` target; HTTP and the binary protocol
//! reach the same `list_objects`.

use std::path::PathBuf;
use std::time::Instant;

use bytes::Bytes;
use s3hpc_core::{Body, ListObjectsRequest, PutObjectRequest, Store};
use s3hpc_posix::{Durability, IoMode, PosixOptions, PosixStore};

const USAGE: &str = "usage: prefix_delete [--dir DIR] [--n N] [--raw] [--staleness SECS]";

fn main() {
    let (mut dir, mut n, mut raw) = (std::env::temp_dir(), 1000usize, false);
    let mut staleness = PosixOptions::default().listing_staleness;
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < v.len() {
        match v[i].as_str() {
            "--dir" => {
                dir = PathBuf::from(v.get(i + 1).expect("--dir DIR"));
                i += 1;
            }
            "--n" => {
                n = v.get(i + 1).and_then(|s| s.parse().ok()).expect("--n N");
                i += 1;
            }
            "--raw" => raw = true,
            "--staleness" => {
                let secs: f64 = v.get(i + 1).and_then(|s| s.parse().ok()).expect("--staleness SECS");
                staleness = std::time::Duration::from_secs_f64(secs);
                i += 1;
            }
            other => {
                eprintln!("unknown argument {other}\n{USAGE}");
                std::process::exit(2);
            }
        }
        i += 1;
    }
    let root = dir.join(format!("prefix_delete.{}", std::process::id()));
    let opts = PosixOptions {
        durability: Durability::None,
        io: IoMode::Inline,
        listing_staleness: staleness,
        ..Default::default()
    };
    let s = PosixStore::open(&root, opts).expect("open store");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let keys: Vec<String> = (0..n).map(|i| format!("file.{i:08}")).collect();
    let (what, secs) = rt.block_on(async {
        s.create_bucket("bkt").await.unwrap();
        for k in &keys {
            s.put_object("bkt", k, PutObjectRequest::default(), Body::from(Bytes::new())).await.unwrap();
        }
        let t = Instant::now();
        if raw {
            let b = root.join("bkt");
            for k in &keys {
                std::fs::remove_file(b.join(k)).unwrap();
            }
            return ("unlink", t.elapsed().as_secs_f64());
        }
        for k in &keys {
            s.delete_object("bkt", k).await.unwrap();
            let req = ListObjectsRequest { prefix: k.clone(), max_keys: 1000, ..Default::default() };
            let page = s.list_objects("bkt", req).await.unwrap();
            assert!(page.objects.is_empty(), "{k} still listed");
        }
        ("delete+list(prefix=key)", t.elapsed().as_secs_f64())
    });
    println!("{what} n={n}: {:.0} ops/s ({secs:.3} s)", n as f64 / secs);
    let _ = std::fs::remove_dir_all(&root);
}
