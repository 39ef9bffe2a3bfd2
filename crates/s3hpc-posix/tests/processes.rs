//! Multi-process tests of the posix store: two processes on one root, and kill -9 in the
//! middle of puts and multipart completes (the child processes are this test binary).

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use common::*;
use s3hpc_core::*;
use s3hpc_posix::{Durability, PosixOptions, PosixStore};

const CHILD_ENV: &str = "S3HPC_POSIX_TEST_CHILD";

/// Size and fill byte of object `i` written by child `c`.
fn spec(c: u32, i: u32) -> (usize, u8) {
    (((i as usize * 37_813) % (300 * 1024)) + 1, (c * 50 + i % 47 + 1) as u8)
}

/// Body of a child process (run by the tests below, never on its own): writes objects and
/// multipart uploads and prints one `ACK <key> <len> <byte>` line per acknowledged write.
#[test]
#[ignore = "child process of the multi-process tests"]
fn child_writer() {
    let Ok(cfg) = std::env::var(CHILD_ENV) else { return };
    let mut it = cfg.split(',');
    let root = it.next().unwrap().to_string();
    let cid: u32 = it.next().unwrap().parse().unwrap();
    let count: u32 = it.next().unwrap().parse().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async move {
        use std::io::Write;
        let s = PosixStore::open(&root, PosixOptions { durability: Durability::None, ..Default::default() }).unwrap();
        let _ = s.create_bucket("bkt").await;
        let mut out = std::io::stdout();
        for i in 0..count {
            let (len, byte) = spec(cid, i);
            if i % 5 == 4 {
                // Multipart: one 5 MiB part plus a small one.
                let key = format!("mp/{cid}/{i}");
                let id = s.create_multipart_upload("bkt", &key, CreateMultipartRequest::default()).await.unwrap();
                let mut parts = Vec::new();
                for (n, l) in [(1u32, 5 << 20), (2, len)] {
                    let p = s
                        .upload_part("bkt", &key, &id, n, UploadPartRequest::default(), Body::from(vec![byte; l]))
                        .await
                        .unwrap();
                    parts.push(CompletePart { part_number: n, etag: p.etag, checksum: None });
                }
                s.complete_multipart_upload("bkt", &key, &id, parts, Conditions::default()).await.unwrap();
                writeln!(out, "ACK {key} {} {byte}", (5 << 20) + len).unwrap();
            } else {
                let key = format!("obj/{cid}/{i}");
                let chunks: Vec<std::io::Result<Bytes>> =
                    vec![byte; len].chunks(50_000).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
                let body = Body::Stream(Box::pin(futures::stream::iter(chunks)));
                s.put_object("bkt", &key, PutObjectRequest::default(), body).await.unwrap();
                // A shared key both processes fight over.
                s.put_object("bkt", "shared", PutObjectRequest::default(), Body::from(vec![byte; len])).await.unwrap();
                writeln!(out, "ACK {key} {len} {byte}").unwrap();
            }
            out.flush().unwrap();
        }
        writeln!(out, "DONE").unwrap();
    });
}

fn spawn_child(root: &Path, cid: u32, count: u32) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_writer", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{},{cid},{count}", root.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Every object in the bucket is whole (one repeated byte, the right length for its key).
async fn check_all_whole(s: &PosixStore) -> usize {
    let all = keys(s, "").await;
    for k in &all {
        let (info, data) = get(s, k).await.unwrap();
        assert_eq!(info.size as usize, data.len());
        assert!(!data.is_empty());
        assert!(data.iter().all(|b| *b == data[0]), "{k}: partial or mixed content");
        let parts: Vec<&str> = k.split('/').collect();
        if parts.len() == 3 {
            let (c, i): (u32, u32) = (parts[1].parse().unwrap(), parts[2].parse().unwrap());
            let (len, byte) = spec(c, i);
            let want = if parts[0] == "mp" { (5 << 20) + len } else { len };
            assert_eq!((data.len(), data[0]), (want, byte), "{k}");
        }
    }
    all.len()
}

fn read_acks(child: &mut std::process::Child, stop_after: Option<usize>) -> Vec<(String, usize, u8)> {
    let out = child.stdout.take().unwrap();
    let mut acks = Vec::new();
    let mut lines = BufReader::new(out).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        // The test harness may print "test child_writer ... " in front of the first line.
        if let Some(rest) = line.find("ACK ").map(|i| &line[i + 4..]) {
            let v: Vec<&str> = rest.split(' ').collect();
            acks.push((v[0].to_string(), v[1].parse().unwrap(), v[2].parse().unwrap()));
            if stop_after.is_some_and(|n| acks.len() >= n) {
                // Keep draining so the child never blocks or fails on a full/closed pipe.
                std::thread::spawn(move || for _ in lines {});
                return acks;
            }
        }
    }
    acks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_writes_leaves_only_whole_objects() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let mut acked = Vec::new();
    for (round, stop) in [(0u32, 3usize), (1, 7), (2, 12)] {
        let mut child = spawn_child(&root, round, 1000);
        let acks = tokio::task::spawn_blocking(move || {
            let a = read_acks(&mut child, Some(stop));
            // Let it get into the next write (a put or a multipart completion), then kill -9.
            std::thread::sleep(Duration::from_millis(15 + 20 * stop as u64));
            child.kill().unwrap();
            child.wait().unwrap();
            a
        })
        .await
        .unwrap();
        assert!(acks.len() >= stop);
        acked.extend(acks);
    }
    let s = PosixStore::open(&root, opts()).unwrap();
    for (k, len, byte) in &acked {
        let (_, data) = get(&s, k).await.unwrap_or_else(|e| panic!("acknowledged {k} lost: {e}"));
        assert_eq!(data.len(), *len, "{k}");
        assert!(data.iter().all(|b| b == byte), "{k} corrupted");
    }
    let n = check_all_whole(&s).await;
    assert!(n >= acked.len());
    // The killed writers' temp files are invisible; cleanup by age removes them.
    let s0 = PosixStore::open(&root, PosixOptions { stale_temp_age: Duration::ZERO, ..opts() }).unwrap();
    std::thread::sleep(Duration::from_millis(10));
    s0.cleanup_stale();
    let tmp: Vec<_> = std::fs::read_dir(root.join(".s3hpc/staging/tmp")).unwrap().collect();
    assert!(tmp.is_empty(), "{tmp:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_one_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let s = PosixStore::open(&root, opts()).unwrap();
    s.create_bucket("bkt").await.unwrap();
    let children: Vec<_> = (1..=2).map(|c| spawn_child(&root, c, 12)).collect();
    let acks = tokio::task::spawn_blocking(move || {
        let mut all = Vec::new();
        for mut c in children {
            all.extend(read_acks(&mut c, None));
            assert!(c.wait().unwrap().success());
        }
        all
    })
    .await
    .unwrap();
    assert_eq!(acks.len(), 24);
    for (k, len, byte) in &acks {
        let (_, data) = get(&s, k).await.unwrap();
        assert_eq!((data.len(), data[0]), (*len, *byte), "{k}");
    }
    assert_eq!(check_all_whole(&s).await, 25);
    assert!(std::fs::read_dir(root.join(".s3hpc/staging/tmp")).unwrap().next().is_none());
}
