//! Wire protocol vs. the embedded store, in one run on one machine.
//!
//! ```text
//! cargo run --release -p s3hpc-wire --example wire_vs_embedded -- [--secs 2] [--conc 8] [--large-mib 8]
//!     [--dir /tmp] [--durability strict|relaxed|none] [--backend posix|memory|noop] [--slices 4]
//!     [--phases "MiB PUT,4 KiB HEAD"] [--targets embedded,unix,tcp,http] [--frame-kib 1024] [--conns 2]
//! ```
//!
//! `--phases` / `--targets` run a subset (for `perf stat` / `strace -c` of one path; the key
//! pre-creation still runs for the selected phase sizes).
//!
//! Each phase runs on the four targets in turn, `--slices` times for `secs / slices` each (the
//! targets interleaved), so that a change of load on a shared machine skews no column.
//!
//! `--backend` picks the store behind every target (default posix). `memory` keeps objects in
//! RAM (bodies are `Bytes`, so large GETs stream as DATA frames); `noop` stores nothing and
//! answers every GET with one fixed object (4 KiB for the small phases, `--large-mib` for the large
//! ones, each served by its own servers): both show the protocols' own capacity without the file
//! system's cost.
//!
//! For each target (the posix backend called directly; WireClient over a Unix socket and over TCP
//! to a server backed by the same kind of posix store; the S3 HTTP gateway `s3hpc-http` with the
//! HTTP client `s3hpc-client` over TCP, also on a posix store) it measures 4 KiB PUT/GET/HEAD ops/s at
//! concurrency 1 and `--conc`, and PUT/GET throughput of `--large-mib` MiB objects. The large PUT
//! runs twice: from one shared `Bytes` (as any caller holds its data), and (`body_buffer` row)
//! from a buffer per task that the target lends (`Store::body_buffer`: the wire client's upload
//! slots over the Unix socket; the other targets lend none and repeat the first run). The server runs
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
    backend: String,
    slices: usize,
    /// Only phases whose metric contains one of these (e.g. "MiB PUT", "HEAD"); empty: all.
    phases: Vec<String>,
    /// Only these targets (embedded, unix, tcp, http); empty: all.
    targets: Vec<String>,
    /// The wire servers' largest DATA frame, KiB (default: the server's default).
    frame_kib: Option<u32>,
    /// Client connections per WireClient.
    conns: usize,
    /// The posix store's I/O mode (the servers' and the embedded target's).
    io: s3hpc_posix::IoMode,
}

fn args() -> Args {
    let mut a = Args {
        secs: 2.0,
        conc: 8,
        large_mib: 8,
        dir: std::env::temp_dir(),
        durability: s3hpc_posix::Durability::default(),
        backend: "posix".into(),
        slices: 4,
        phases: Vec::new(),
        targets: Vec::new(),
        frame_kib: None,
        conns: 2,
        io: s3hpc_posix::IoMode::Offload,
    };
    const USAGE: &str = "usage: wire_vs_embedded [--secs 2] [--conc 8] [--large-mib 8] [--dir DIR] \
        [--durability strict|relaxed|none] [--backend posix|memory|noop] [--slices 4] [--phases LIST] \
        [--targets embedded,unix,tcp,http] [--frame-kib N] [--conns 2] [--io offload|inplace]";
    let usage = |why: String| -> ! {
        eprintln!("{why}\n{USAGE}");
        std::process::exit(2)
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        if k == "-h" || k == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let v = it.next().unwrap_or_else(|| usage(format!("{k} needs a value")));
        match k.as_str() {
            "--secs" => a.secs = v.parse().unwrap(),
            "--conc" => a.conc = v.parse().unwrap(),
            "--large-mib" => a.large_mib = v.parse().unwrap(),
            "--dir" => a.dir = v.into(),
            "--slices" => a.slices = v.parse::<usize>().unwrap().max(1),
            "--phases" => a.phases = v.split(',').map(String::from).collect(),
            "--targets" => a.targets = v.split(',').map(String::from).collect(),
            "--frame-kib" => a.frame_kib = Some(v.parse().unwrap()),
            "--conns" => a.conns = v.parse().unwrap(),
            "--backend" => {
                assert!(matches!(v.as_str(), "posix" | "memory" | "noop"), "--backend posix|memory|noop");
                a.backend = v;
            }
            "--durability" => {
                a.durability = match v.as_str() {
                    "strict" => s3hpc_posix::Durability::Strict,
                    "relaxed" => s3hpc_posix::Durability::Relaxed,
                    "none" => s3hpc_posix::Durability::None,
                    _ => panic!("--durability strict|relaxed|none"),
                }
            }
            "--io" => {
                a.io = match s3hpc_posix::IoMode::parse(&v) {
                    Some(m @ (s3hpc_posix::IoMode::Offload | s3hpc_posix::IoMode::InPlace)) => m,
                    _ => usage(format!("--io {v}: expected offload or inplace")),
                }
            }
            _ => usage(format!("unknown argument {k}")),
        }
    }
    a
}

/// A store of the chosen backend; `object_size` is the noop backend's fixed object.
fn make_store(a: &Args, root: &std::path::Path, object_size: usize) -> DynStore {
    match a.backend.as_str() {
        "memory" => Arc::new(s3hpc_core::memory::MemoryStore::new()),
        "noop" => Arc::new(s3hpc_core::noop::NoopStore::new(object_size)),
        _ => {
            std::fs::create_dir_all(root).unwrap();
            let opts = s3hpc_posix::PosixOptions { durability: a.durability, io: a.io, ..Default::default() };
            Arc::new(s3hpc_posix::PosixStore::open(root, opts).unwrap())
        }
    }
}

#[derive(Clone, Copy)]
enum Op {
    Put,
    Get,
    Head,
}

/// Run `op` from `conc` tasks for `secs`; returns (ops, bytes, seconds).
#[allow(clippy::too_many_arguments)]
async fn phase(
    store: &DynStore,
    bucket: &str,
    op: Op,
    size: usize,
    conc: usize,
    secs: f64,
    keys: u64,
    buffers: bool,
) -> (u64, u64, f64) {
    let data = Bytes::from(vec![0x5au8; size]);
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..conc as u64 {
        let (store, stop, ops, bytes, mut data, bucket) =
            (store.clone(), stop.clone(), ops.clone(), bytes.clone(), data.clone(), bucket.to_string());
        if let Some(mut b) = store.body_buffer(size).filter(|_| buffers) {
            // Each task's body in memory the store takes without a copy (the wire client's
            // upload slots), filled once like the shared buffer above.
            b.copy_from_slice(&data);
            data = b.freeze();
        }
        tasks.push(tokio::spawn(async move {
            let mut i = t;
            // A deadline rather than only the timer: an embedded noop/memory store never yields,
            // and busy workers would never drive the timer.
            let deadline = start + Duration::from_secs_f64(secs);
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                if (i / conc as u64) % 64 == 63 {
                    tokio::task::yield_now().await; // fairness among the tasks of one worker
                }
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

/// One access path: `store` serves the 4 KiB phases, `large` the large ones (the same store
/// unless noop).
struct Target {
    name: &'static str,
    store: DynStore,
    large: DynStore,
}

/// Every phase runs on every target in `--slices` round-robin slices of `secs / slices` (target
/// A, B, C, D, A, B, ...), so a change of the machine's load during the run hits all targets
/// alike and the ratios within a run stay meaningful.
async fn suite(targets: &[Target], a: &Args, rows: &mut Vec<(String, String, f64)>) {
    let bucket = "bench";
    let small = 4096;
    let large = a.large_mib << 20;
    // Pre-create the keys so GET/HEAD find them whatever the PUT phase reached.
    let keys = 1024u64;
    let large_keys = 8u64;
    let wanted = |m: &str| a.phases.is_empty() || a.phases.iter().any(|p| m.contains(p.as_str()));
    let lconc = a.conc.min(4);
    let mut phases = Vec::new();
    for conc in [1, a.conc] {
        for (op, label) in [(Op::Put, "PUT"), (Op::Get, "GET"), (Op::Head, "HEAD")] {
            phases.push((op, false, conc, false, format!("4 KiB {label} ops/s, conc {conc}")));
        }
    }
    let mib = a.large_mib;
    phases.push((Op::Put, true, lconc, false, format!("{mib} MiB PUT MiB/s, conc {lconc}")));
    phases.push((Op::Put, true, lconc, true, format!("{mib} MiB PUT MiB/s, conc {lconc}, body_buffer")));
    phases.push((Op::Get, true, lconc, false, format!("{mib} MiB GET MiB/s, conc {lconc}")));
    phases.push((Op::Get, true, 1, false, format!("{mib} MiB GET MiB/s, conc 1")));
    phases.retain(|p| wanted(&p.4));
    for t in targets {
        let _ = t.store.create_bucket(bucket).await;
        let _ = t.large.create_bucket(bucket).await;
        for i in 0..keys * phases.iter().any(|p| !p.1) as u64 {
            let body = Body::from(vec![1u8; small]);
            t.store.put_object(bucket, &format!("o{small}/{i}"), PutObjectRequest::default(), body).await.unwrap();
        }
        for i in 0..large_keys * phases.iter().any(|p| p.1) as u64 {
            let body = Body::from(vec![2u8; large]);
            t.large.put_object(bucket, &format!("o{large}/{i}"), PutObjectRequest::default(), body).await.unwrap();
        }
    }
    let slice = a.secs / a.slices as f64;
    for (op, is_large, conc, buffers, metric) in phases {
        let mut acc = vec![(0u64, 0u64, 0f64); targets.len()];
        for _ in 0..a.slices {
            for (t, acc) in targets.iter().zip(acc.iter_mut()) {
                let (store, size, nkeys) =
                    if is_large { (&t.large, large, large_keys) } else { (&t.store, small, keys) };
                let (n, b, s) = phase(store, bucket, op, size, conc, slice, nkeys, buffers).await;
                *acc = (acc.0 + n, acc.1 + b, acc.2 + s);
            }
        }
        for (t, (n, b, s)) in targets.iter().zip(acc) {
            let v = if is_large { b as f64 / s / 1048576.0 } else { n as f64 / s };
            eprintln!("{}: {metric}: {v:.0}", t.name);
            rows.push((t.name.into(), metric.clone(), v));
        }
    }
}

struct Servers {
    unix: s3hpc_wire::ServerHandle,
    tcp: s3hpc_wire::ServerHandle,
    http: std::net::SocketAddr,
    http_stop: tokio::sync::oneshot::Sender<()>,
}

/// The wire servers (Unix socket and TCP) on one store, the HTTP gateway on another.
fn start_servers(
    rt: &tokio::runtime::Runtime,
    sock: String,
    served: DynStore,
    http_store: DynStore,
    creds: &Credentials,
    a: &Args,
) -> Servers {
    let set = Arc::new(CredentialSet::new([creds.clone()]));
    let mut so = ServerOptions::default();
    if let Some(k) = a.frame_kib {
        so.max_data_frame = k << 10;
    }
    let (unix, tcp) = rt.block_on(async {
        let u = s3hpc_wire::bind(&sock, served.clone(), set.clone(), so.clone()).await.unwrap().spawn();
        let t = s3hpc_wire::bind("tcp://127.0.0.1:0", served, set, so).await.unwrap().spawn();
        (u, t)
    });
    let (http_stop, http_stop_rx) = tokio::sync::oneshot::channel::<()>();
    let http = rt.block_on(async {
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
    Servers { unix, tcp, http, http_stop }
}

impl Servers {
    fn stop(self, rt: &tokio::runtime::Runtime) {
        rt.block_on(self.unix.shutdown()).unwrap();
        rt.block_on(self.tcp.shutdown()).unwrap();
        let _ = self.http_stop.send(());
    }
}

fn main() {
    let a = args();
    let tmp = tempfile::tempdir_in(&a.dir).unwrap();
    let creds = Credentials::new("BENCHKEY", "bench-secret");
    let large = a.large_mib << 20;
    let noop = a.backend == "noop";

    // The servers on their own runtime and threads, like a separate process.
    let server_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let served = make_store(&a, &tmp.path().join("served"), 4096);
    let http_store = make_store(&a, &tmp.path().join("http"), 4096);
    let small_srv = start_servers(
        &server_rt,
        format!("unix://{}", tmp.path().join("wire.sock").display()),
        served,
        http_store,
        &creds,
        &a,
    );
    // noop answers one fixed size: the large phases get servers of their own.
    let large_srv = noop.then(|| {
        let s = make_store(&a, tmp.path(), large);
        let h = make_store(&a, tmp.path(), large);
        start_servers(&server_rt, format!("unix://{}", tmp.path().join("wire-large.sock").display()), s, h, &creds, &a)
    });

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut rows = Vec::new();
    let embedded = "embedded";
    rt.block_on(async {
        let e = make_store(&a, &tmp.path().join("embedded"), 4096);
        let el = if noop { make_store(&a, tmp.path(), large) } else { e.clone() };
        let opts = ClientOptions { connections: a.conns, ..Default::default() };
        let wire = |url: String| {
            let (creds, opts) = (creds.clone(), opts.clone());
            async move { Arc::new(WireClient::connect_with(&url, creds, opts).await.unwrap()) as DynStore }
        };
        let http = |addr: std::net::SocketAddr| {
            Arc::new(
                s3hpc_client::S3Client::new(s3hpc_client::ClientConfig {
                    endpoint: format!("http://{addr}"),
                    credentials: creds.clone(),
                    region: "us-east-1".into(),
                    virtual_host: false,
                })
                .unwrap(),
            ) as DynStore
        };
        let l = large_srv.as_ref().unwrap_or(&small_srv);
        let targets = [
            Target { name: embedded, store: e, large: el },
            Target {
                name: "wire (unix socket)",
                store: wire(small_srv.unix.url.clone()).await,
                large: wire(l.unix.url.clone()).await,
            },
            Target {
                name: "wire (tcp)",
                store: wire(small_srv.tcp.url.clone()).await,
                large: wire(l.tcp.url.clone()).await,
            },
            Target { name: "http (tcp)", store: http(small_srv.http), large: http(l.http) },
        ];
        let short = ["embedded", "unix", "tcp", "http"];
        let targets: Vec<Target> = targets
            .into_iter()
            .zip(short)
            .filter(|(_, n)| a.targets.is_empty() || a.targets.iter().any(|t| t == n))
            .map(|(t, _)| t)
            .collect();
        suite(&targets, &a, &mut rows).await;
    });
    small_srv.stop(&server_rt);
    if let Some(l) = large_srv {
        l.stop(&server_rt);
    }

    println!("backend {}, durability {:?}", a.backend, a.durability);
    println!("| metric | embedded | wire (unix) | wire (tcp) | http (tcp) | wire unix / embedded | wire unix / http |");
    println!("|---|---|---|---|---|---|---|");
    let mut metrics: Vec<String> = Vec::new();
    for r in &rows {
        if !metrics.contains(&r.1) {
            metrics.push(r.1.clone());
        }
    }
    for m in metrics {
        let get = |n: &str| rows.iter().find(|r| r.0 == n && r.1 == m).map(|r| r.2).unwrap_or(f64::NAN);
        let (e, w, t, h) = (get(embedded), get("wire (unix socket)"), get("wire (tcp)"), get("http (tcp)"));
        println!("| {m} | {e:.0} | {w:.0} | {t:.0} | {h:.0} | {:.2} | {:.2} |", w / e, w / h);
    }
}
