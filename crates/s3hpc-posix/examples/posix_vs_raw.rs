//! PosixStore against raw `std::fs` on the same directory, in one run, so the ratios are
//! comparable on a noisy machine. See `docs/perf/posix.md`.
//!
//! ```text
//! cargo run --release -p s3hpc-posix --example posix_vs_raw -- [--dir DIR] [--small N] [--list N] [--big-mib N]
//! ```
//!
//! Both sides do the same file system work: the raw side writes a temp file and renames it
//! (what any safe writer does), the store adds hashing and the metadata xattr. The store runs
//! in both I/O modes: `Inline` (embedded callers: no thread hop) is compared with raw code on
//! the calling thread, `Offload` (servers: every call hops to `spawn_blocking`) with the same
//! raw code run through `spawn_blocking`. Durability is `none` on the store and no fsync on the
//! raw side.

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use s3hpc_core::{Body, EtagMode, GetObjectRequest, ListObjectsRequest, PutObjectRequest, Store};
use s3hpc_posix::{Durability, IoMode, PosixOptions, PosixStore};

struct Args {
    dir: Option<PathBuf>,
    small: usize,
    list: usize,
    big_mib: usize,
    /// Only the listing part (for profiling it).
    list_only: bool,
}

const USAGE: &str = "usage: posix_vs_raw [--dir DIR] [--small N] [--list N] [--big-mib N] [--list-only]";

fn args() -> Args {
    let mut a = Args { dir: None, small: 3000, list: 100_000, big_mib: 64, list_only: false };
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < v.len() {
        let val = v.get(i + 1).cloned().unwrap_or_default();
        match v[i].as_str() {
            "--dir" => a.dir = Some(val.into()),
            "--small" => a.small = val.parse().expect("--small N"),
            "--list" => a.list = val.parse().expect("--list N"),
            "--big-mib" => a.big_mib = val.parse().expect("--big-mib N"),
            "--list-only" => {
                a.list_only = true;
                i += 1;
                continue;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => {
                eprintln!("unknown argument {other}\n{USAGE}");
                std::process::exit(2);
            }
        }
        i += 2;
    }
    a
}

/// `syncfs(2)` of the file system holding `dir`.
fn sync_fs(dir: &Path) {
    if let Ok(f) = File::open(dir) {
        // SAFETY: a valid descriptor for the call's duration.
        unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&f)) };
    }
}

fn mbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e6
}

fn rate(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

fn raw_put(dir: &Path, name: &str, data: &[u8], n: u64) {
    let tmp = dir.join(format!(".tmp.{name}.{n}"));
    let mut f = File::create(&tmp).unwrap();
    f.write_all(data).unwrap();
    drop(f);
    fs::rename(&tmp, dir.join(name)).unwrap();
}

fn read_file_region(f: &File, off: u64, len: u64, buf: &mut [u8]) {
    f.read_exact_at(&mut buf[..len as usize], off).unwrap();
}

fn raw_get(path: &Path, buf: &mut [u8]) -> u64 {
    let f = File::open(path).unwrap();
    let len = f.metadata().unwrap().len();
    read_file_region(&f, 0, len, buf);
    len
}

async fn store_get(s: &PosixStore, key: &str, buf: &mut [u8]) -> u64 {
    let o = s.get_object("bench", key, GetObjectRequest::default()).await.unwrap();
    match o.body {
        Body::File { file, offset, len } => {
            // What a front end does with a file body, done here on the caller's thread like the raw side.
            read_file_region(&file, offset, len, buf);
            len
        }
        other => other.collect().await.unwrap().len() as u64,
    }
}

/// Peak RSS since the last reset, in MiB (Linux: clear_refs 5 resets VmHWM).
fn reset_peak() {
    let _ = fs::write("/proc/self/clear_refs", "5");
}

fn peak_mib() -> f64 {
    let s = fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// One result row: the store inline vs raw, and the store offloaded vs raw on spawn_blocking.
fn row(what: &str, inline: f64, raw: f64, offload: f64, raw_sb: f64, unit: &str, target: f64) {
    let ratio = inline / raw;
    let verdict = if ratio >= target { "ok" } else { "BELOW TARGET" };
    println!(
        "| {what} | {inline:.1} {unit} | {raw:.1} {unit} | {:.0}% | >= {:.0}% {verdict} | {offload:.1} {unit} | {raw_sb:.1} {unit} | {:.0}% |",
        ratio * 100.0,
        target * 100.0,
        offload / raw_sb * 100.0,
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let a = args();
    let _keep;
    let base = match &a.dir {
        Some(d) => d.clone(),
        None => {
            let t = std::env::temp_dir().join(format!("s3hpc-posix-bench-{}", std::process::id()));
            _keep = Cleanup(t.clone());
            t
        }
    };
    fs::create_dir_all(&base).unwrap();
    let raw_dir = base.join("raw");
    fs::create_dir_all(&raw_dir).unwrap();
    let open = |mode, io| {
        PosixStore::open(
            base.join("store"),
            PosixOptions { durability: Durability::None, etag_mode: mode, io, ..Default::default() },
        )
        .unwrap()
    };
    let fast = open(EtagMode::Fast, IoMode::Inline);
    let md5 = open(EtagMode::Md5, IoMode::Inline);
    let fast_off = open(EtagMode::Fast, IoMode::Offload);
    let md5_off = open(EtagMode::Md5, IoMode::Offload);
    let _ = fast.create_bucket("bench").await;
    let bdir = fast.root().join("bench");
    println!("dir {} ({:?} metadata)\n", base.display(), fast.meta_mode());

    if !a.list_only {
        io_rows(&a, &fast, &md5, &fast_off, &md5_off, &raw_dir, &bdir).await;
    }
    list_rows(&a, &fast, &fast_off, &raw_dir, &bdir).await;
}

async fn io_rows(
    a: &Args,
    fast: &PosixStore,
    md5: &PosixStore,
    fast_off: &PosixStore,
    md5_off: &PosixStore,
    raw_dir: &Path,
    bdir: &Path,
) {
    // MD5 speed alone, the ceiling of MD5-mode ETags.
    let big = Bytes::from(vec![0x5au8; a.big_mib << 20]);
    let t = Instant::now();
    let mut n = 0u64;
    let piece = big.len().min(8 << 20);
    while t.elapsed() < Duration::from_millis(700) {
        std::hint::black_box(s3hpc_core::checksum::md5_hex(&big[..piece]));
        n += piece as u64;
    }
    let md5_speed = mbps(n, t.elapsed());
    println!("MD5 alone: {md5_speed:.0} MB/s\n");

    println!(
        "| operation | store Inline | raw std::fs | Inline / raw | target | store Offload | raw on spawn_blocking | Offload / raw-sb |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    // Touched before any timing: the first read into fresh pages would pay their page faults.
    let mut buf = vec![1u8; big.len()];
    // At least 256 MiB per side and mode for the big objects: with fewer, where write-back throttling
    // strikes decides the row on a disk file system.
    let big_reps = (256 / a.big_mib).clamp(6, 32);
    for (label, size, reps) in [("1 MiB", 1usize << 20, 200usize), ("big", a.big_mib << 20, big_reps)] {
        let data = big.slice(..size);
        let label = if label == "big" { format!("{} MiB", a.big_mib) } else { label.to_string() };
        for (mode, s, so) in [("fast", &fast, &fast_off), ("md5", &md5, &md5_off)] {
            // Interleave the sides in rounds so drift on the machine hits all of them.
            let (mut ts, mut tr, mut tb, mut to) = (Duration::ZERO, Duration::ZERO, Duration::ZERO, Duration::ZERO);
            for r in 0..reps {
                // The first side of a round pays for what the previous one left behind (dirty
                // pages, freed inodes): rotate which side goes first.
                for k in 0..4 {
                    // Each timed put starts with nothing dirty (untimed): otherwise the write-back
                    // of earlier puts lands in whichever put is running (on a disk file system
                    // the same 64 MiB row read 65 %, 159 % and 113 % in three runs).
                    sync_fs(raw_dir);
                    match (k + r) % 4 {
                        0 => {
                            let t = Instant::now();
                            s.put_object(
                                "bench",
                                &format!("obj-{label}"),
                                PutObjectRequest::default(),
                                Body::Bytes(data.clone()),
                            )
                            .await
                            .unwrap();
                            ts += t.elapsed();
                        }
                        1 => {
                            let t = Instant::now();
                            so.put_object(
                                "bench",
                                &format!("obj-{label}"),
                                PutObjectRequest::default(),
                                Body::Bytes(data.clone()),
                            )
                            .await
                            .unwrap();
                            to += t.elapsed();
                        }
                        2 => {
                            let t = Instant::now();
                            raw_put(raw_dir, &format!("obj-{label}"), &data, r as u64);
                            tr += t.elapsed();
                        }
                        _ => {
                            let (d, dd, l) = (raw_dir.to_path_buf(), data.clone(), label.clone());
                            let t = Instant::now();
                            tokio::task::spawn_blocking(move || raw_put(&d, &format!("obj-b-{l}"), &dd, r as u64))
                                .await
                                .unwrap();
                            tb += t.elapsed();
                        }
                    }
                }
            }
            let bytes = (size * reps) as u64;
            let target = if mode == "fast" { 0.95 } else { 0.90 };
            let raw = mbps(bytes, tr);
            let raw_sb = mbps(bytes, tb);
            let (raw_ref, sb_ref) =
                if mode == "md5" { (raw.min(md5_speed), raw_sb.min(md5_speed)) } else { (raw, raw_sb) };
            row(
                &format!("put {label} ({mode} ETag)"),
                mbps(bytes, ts),
                raw_ref,
                mbps(bytes, to),
                sb_ref,
                "MB/s",
                target,
            );
            if mode == "md5" {
                println!("| (raw put {label} alone) | | {raw:.1} MB/s | | | | {raw_sb:.1} MB/s | |");
            }
        }
        let (mut ts, mut tr, mut tb, mut to) = (Duration::ZERO, Duration::ZERO, Duration::ZERO, Duration::ZERO);
        for r in 0..reps {
            for k in 0..4 {
                match (k + r) % 4 {
                    0 => {
                        let t = Instant::now();
                        store_get(fast, &format!("obj-{label}"), &mut buf).await;
                        ts += t.elapsed();
                    }
                    1 => {
                        let t = Instant::now();
                        store_get(fast_off, &format!("obj-{label}"), &mut buf).await;
                        to += t.elapsed();
                    }
                    2 => {
                        let t = Instant::now();
                        raw_get(&raw_dir.join(format!("obj-{label}")), &mut buf);
                        tr += t.elapsed();
                    }
                    _ => {
                        // Raw open + fstat on the blocking pool, then the same read: the async hop alone.
                        let p = raw_dir.join(format!("obj-{label}"));
                        let t = Instant::now();
                        let f = tokio::task::spawn_blocking(move || {
                            let f = File::open(p).unwrap();
                            let len = f.metadata().unwrap().len();
                            (f, len)
                        })
                        .await
                        .unwrap();
                        read_file_region(&f.0, 0, f.1, &mut buf);
                        tb += t.elapsed();
                    }
                }
            }
        }
        let bytes = (size * reps) as u64;
        row(&format!("get {label}"), mbps(bytes, ts), mbps(bytes, tr), mbps(bytes, to), mbps(bytes, tb), "MB/s", 0.95);
    }
    drop(buf);

    // HEAD vs stat, on the same 4 KiB file.
    let small = Bytes::from(vec![7u8; 4096]);
    fast.put_object("bench", "head-me", PutObjectRequest::default(), Body::Bytes(small.clone())).await.unwrap();
    let path = bdir.join("head-me");
    // Records are cached once a file is 100 ms old (see rcache.rs): HEAD of a settled object.
    tokio::time::sleep(Duration::from_millis(150)).await;
    // Interleaved slices, rotating which side goes first, as for the other rows: right after
    // the big writes the file system's write-back competes for the cores, and a side measured
    // all at once, first, paid for it alone (HEAD read 54 % of stat in one such run, 80 % in
    // the next).
    let n = a.small * 5;
    let slices = 10;
    let m = n / slices;
    let (mut th, mut tho, mut tst, mut tsb) = (Duration::ZERO, Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for sl in 0..slices {
        for k in 0..4 {
            let t = Instant::now();
            match (k + sl) % 4 {
                0 => {
                    for _ in 0..m {
                        fast.head_object("bench", "head-me", GetObjectRequest::default()).await.unwrap();
                    }
                    th += t.elapsed();
                }
                1 => {
                    for _ in 0..m {
                        fast_off.head_object("bench", "head-me", GetObjectRequest::default()).await.unwrap();
                    }
                    tho += t.elapsed();
                }
                2 => {
                    for _ in 0..m {
                        std::hint::black_box(fs::metadata(&path).unwrap());
                    }
                    tst += t.elapsed();
                }
                _ => {
                    for _ in 0..m {
                        let p = path.clone();
                        tokio::task::spawn_blocking(move || fs::metadata(&p).unwrap()).await.unwrap();
                    }
                    tsb += t.elapsed();
                }
            }
        }
    }
    let n = m * slices;
    row("head vs stat", rate(n, th), rate(n, tst), rate(n, tho), rate(n, tsb), "ops/s", 0.80);

    // 4 KiB puts vs write+rename, distinct keys, in interleaved slices (file creation rates
    // drift with the file system's state, e.g. inodes freed just before).
    let n = a.small;
    let sdir = raw_dir.join("small");
    fs::create_dir_all(&sdir).unwrap();
    let (mut tp, mut tpo, mut tr, mut trb) = (Duration::ZERO, Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let slices = 10;
    for sl in 0..slices {
        let range = sl * n / slices..(sl + 1) * n / slices;
        for k in 0..4 {
            let t = Instant::now();
            match (k + sl) % 4 {
                0 => {
                    for i in range.clone() {
                        fast.put_object(
                            "bench",
                            &format!("small/{i}"),
                            PutObjectRequest::default(),
                            Body::Bytes(small.clone()),
                        )
                        .await
                        .unwrap();
                    }
                    tp += t.elapsed();
                }
                1 => {
                    for i in range.clone() {
                        fast_off
                            .put_object(
                                "bench",
                                &format!("small-o/{i}"),
                                PutObjectRequest::default(),
                                Body::Bytes(small.clone()),
                            )
                            .await
                            .unwrap();
                    }
                    tpo += t.elapsed();
                }
                2 => {
                    for i in range.clone() {
                        raw_put(&sdir, &i.to_string(), &small, i as u64);
                    }
                    tr += t.elapsed();
                }
                _ => {
                    for i in range.clone() {
                        let (d, s) = (sdir.clone(), small.clone());
                        tokio::task::spawn_blocking(move || raw_put(&d, &format!("b{i}"), &s, i as u64)).await.unwrap();
                    }
                    trb += t.elapsed();
                }
            }
        }
    }
    row("4 KiB put vs write+rename", rate(n, tp), rate(n, tr), rate(n, tpo), rate(n, trb), "ops/s", 0.80);
}

async fn list_rows(a: &Args, fast: &PosixStore, fast_off: &PosixStore, raw_dir: &Path, bdir: &Path) {
    let _ = raw_dir;
    // Listing one directory of N keys (written by the store, so each has its xattr).
    let n = a.list;
    let ldir = bdir.join("many");
    fs::create_dir_all(&ldir).unwrap();
    let t = Instant::now();
    for i in 0..n {
        let name = format!("k{:08}", (i as u64).wrapping_mul(2_654_435_761) % 100_000_000);
        fast.put_object("bench", &format!("many/{name}"), PutObjectRequest::default(), Body::Empty).await.unwrap();
    }
    println!("\n(created {n} keys in {:.1} s)", t.elapsed().as_secs_f64());
    tokio::time::sleep(Duration::from_millis(400)).await;
    let count = fs::read_dir(&ldir).unwrap().count();
    // Raw: readdir + sort (names only), and readdir + sort + stat each (what a listing must return).
    reset_peak();
    let t = Instant::now();
    let mut names: Vec<String> =
        fs::read_dir(&ldir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort_unstable();
    let t_raw = t.elapsed();
    let raw_peak = peak_mib();
    let t = Instant::now();
    let mut sz = 0;
    for nm in &names {
        sz += fs::metadata(ldir.join(nm)).unwrap().len();
    }
    std::hint::black_box(sz);
    let t_raw_stat = t_raw + t.elapsed();
    drop(names);
    println!("\n| listing {count} keys in one directory | time | peak RSS | / readdir+sort | / readdir+sort+stat |");
    println!("|---|---|---|---|---|");
    println!("| raw readdir + sort | {:.0} ms | {raw_peak:.0} MiB | | |", t_raw.as_secs_f64() * 1e3);
    println!("| raw readdir + sort + stat each | {:.0} ms | | | |", t_raw_stat.as_secs_f64() * 1e3);
    // A store opened now has nothing cached (as after a restart, or for keys written by another
    // process); the writer's own store remembers the records it published.
    let cold = PosixStore::open(
        fast.root(),
        PosixOptions {
            durability: Durability::None,
            etag_mode: EtagMode::Fast,
            io: IoMode::Inline,
            ..Default::default()
        },
    )
    .unwrap();
    for (what, s) in [
        ("Inline, cold store, 1st", &cold),
        ("Inline, cold store, 2nd", &cold),
        ("Inline, the writer's store", fast),
        ("Offload, cold store, 1st", fast_off),
    ] {
        reset_peak();
        let t = Instant::now();
        let (listed, pages) = list_all(s).await;
        let t_list = t.elapsed();
        let list_peak = peak_mib();
        assert_eq!(listed, count, "listing lost keys");
        println!(
            "| PosixStore {what}, {pages} pages of 1000 | {:.0} ms | {list_peak:.0} MiB | {:.2}x | {:.2}x |",
            t_list.as_secs_f64() * 1e3,
            t_list.as_secs_f64() / t_raw.as_secs_f64(),
            t_list.as_secs_f64() / t_raw_stat.as_secs_f64()
        );
    }
    println!("\n(targets: listing <= 2x readdir+sort; head, 4 KiB put >= 80%)");
}

/// List `many/` in pages of 1000; returns (keys, pages).
async fn list_all(s: &PosixStore) -> (usize, usize) {
    let mut listed = 0;
    let mut sa = None;
    let mut pages = 0;
    loop {
        let p = s
            .list_objects(
                "bench",
                ListObjectsRequest {
                    prefix: "many/".into(),
                    start_after: sa.clone(),
                    max_keys: 1000,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        listed += p.objects.len();
        pages += 1;
        if !p.is_truncated {
            return (listed, pages);
        }
        sa = p.next_marker;
    }
}

struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
