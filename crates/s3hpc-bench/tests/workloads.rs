//! Every workload, briefly, against the in-process memory backend and the raw POSIX baseline
//! (and the embedded posix backend when it is built), plus outputs, compare and fault handling.

use std::sync::Arc;
use std::time::Duration;

use s3hpc_bench::fault::{FaultKind, fault_store};
use s3hpc_bench::runner::RunOpts;
use s3hpc_bench::stats::{BenchRun, TargetResult};
use s3hpc_bench::workloads::*;
use s3hpc_core::{DynStore, ErrorCode};

fn opts(concurrency: usize) -> RunOpts {
    RunOpts { concurrency, verify: true, ..Default::default() }
}

/// (name, store, directory to check for leftovers)
fn targets(dir: &std::path::Path) -> Vec<(String, DynStore, Option<std::path::PathBuf>)> {
    let raw = dir.join("raw");
    let emb = dir.join("file");
    std::fs::create_dir_all(&emb).unwrap();
    vec![
        (
            format!("file://{}", emb.display()),
            Arc::new(s3hpc_posix::PosixStore::open(&emb, s3hpc_posix::PosixOptions::default()).unwrap()) as DynStore,
            None,
        ),
        ("memory://".into(), Arc::new(s3hpc_core::memory::MemoryStore::new()) as DynStore, None),
        (
            format!("posix://{}", raw.display()),
            Arc::new(s3hpc_bench::rawfs::RawFsStore::open(&raw).unwrap()) as DynStore,
            Some(raw.clone()),
        ),
    ]
}

async fn assert_clean(store: &DynStore, dir: &Option<std::path::PathBuf>) {
    assert!(store.list_buckets().await.unwrap().is_empty(), "buckets left behind");
    if let Some(d) = dir {
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 0, "files left in {}", d.display());
    }
}

fn phase<'a>(r: &'a TargetResult, name: &str, size: u64) -> &'a s3hpc_bench::Phase {
    r.phases.iter().find(|p| p.name == name && p.object_size == size).unwrap_or_else(|| {
        panic!("no phase {name}/{size} in {:?}", r.phases.iter().map(|p| &p.name).collect::<Vec<_>>())
    })
}

fn ok(r: &TargetResult) {
    assert!(r.aborted.is_none(), "{}: aborted: {:?}", r.target, r.aborted);
    assert_eq!(r.errors, 0, "{}: errors: {:?}", r.target, r.error_samples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_puts_gets_heads_deletes_every_size() {
    let dir = tempfile::tempdir().unwrap();
    let sizes = vec![1024, 100 * 1024, 2 * MIB + 3];
    let wl = Workload::Sweep(SweepOpts { sizes: sizes.clone(), count: Some(6), duration: None, head: true });
    for (name, store, d) in targets(dir.path()) {
        let r = run_target(store.clone(), &name, opts(3), None, &wl).await;
        ok(&r);
        for &s in &sizes {
            for op in ["put", "get", "head", "delete"] {
                let p = phase(&r, op, s);
                assert_eq!(p.ops, 6, "{name} {op} {s}");
                assert_eq!(p.concurrency, 3);
                assert!(p.latency.is_some() && p.seconds > 0.0);
            }
            assert_eq!(phase(&r, "get", s).bytes, 6 * s);
            assert_eq!(phase(&r, "put", s).bytes, 6 * s);
            assert!(phase(&r, "get", s).ttfb.is_some());
        }
        assert_clean(&store, &d).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_by_duration_reads_only_what_it_wrote() {
    let store: DynStore = Arc::new(s3hpc_core::memory::MemoryStore::new());
    let wl = Workload::Sweep(SweepOpts {
        sizes: vec![4096],
        count: None,
        duration: Some(Duration::from_millis(150)),
        head: false,
    });
    let r = run_target(store.clone(), "memory://", opts(2), None, &wl).await;
    ok(&r);
    assert!(phase(&r, "put", 4096).ops > 0);
    assert!(phase(&r, "get", 4096).ops > 0);
    assert!(r.phases.iter().all(|p| p.name != "head"));
    assert_eq!(phase(&r, "delete", 4096).ops, phase(&r, "put", 4096).ops);
    assert_clean(&store, &None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn speedtest_rounds_grow_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    let wl = Workload::Speedtest(SpeedtestOpts {
        size: 64 * 1024,
        round: Duration::from_millis(100),
        start_concurrency: 1,
        max_rounds: 3,
        max_concurrency: 64,
    });
    for (name, store, d) in targets(dir.path()) {
        let r = run_target(store.clone(), &name, opts(1), None, &wl).await;
        ok(&r);
        let gets: Vec<_> = r.phases.iter().filter(|p| p.name.ends_with("-get")).collect();
        assert!(!gets.is_empty() && gets.len() <= 3);
        for w in gets.windows(2) {
            assert!(w[1].concurrency > w[0].concurrency);
        }
        assert!(r.summary["best_get_mib_s"] > 0.0);
        assert!(r.summary["best_concurrency"] >= 1.0);
        assert_clean(&store, &d).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crud_times_every_ossperf_step() {
    let dir = tempfile::tempdir().unwrap();
    for parallel in [false, true] {
        let wl = Workload::Crud(CrudOpts { count: 10, size: 1000, parallel });
        for (name, store, d) in targets(dir.path()) {
            let r = run_target(store.clone(), &name, opts(4), None, &wl).await;
            ok(&r);
            for step in ["create-bucket", "upload", "list", "download", "delete-objects", "delete-bucket"] {
                assert!(r.phases.iter().any(|p| p.name == step), "{name}: missing {step}");
            }
            assert_eq!(phase(&r, "upload", 1000).ops, 10);
            assert_eq!(phase(&r, "upload", 1000).concurrency, if parallel { 4 } else { 1 });
            assert_eq!(phase(&r, "download", 1000).bytes, 10_000);
            let line = ossperf_line(&r.summary, "2026-01-01", "00:00:00").unwrap();
            let cols: Vec<&str> = line.split(' ').collect();
            assert_eq!(cols.len(), 13, "{line}");
            assert_eq!(OSSPERF_HEADER.split(' ').count(), 13);
            assert_eq!(cols[2], "10");
            assert_eq!(cols[3], "1000");
            let sum: f64 = cols[4..10].iter().map(|c| c.parse::<f64>().unwrap()).sum();
            assert!((sum - cols[10].parse::<f64>().unwrap()).abs() < 0.01);
            assert_clean(&store, &d).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn io500_phases_and_score() {
    let dir = tempfile::tempdir().unwrap();
    for mode in [IorEasyMode::Fragment, IorEasyMode::Whole] {
        let wl = Workload::Io500(Io500Opts {
            stonewall: Duration::from_millis(150),
            ior_easy_xfer: 256 * 1024,
            ior_easy_mode: mode,
            ior_easy_block: 512 * 1024,
            max_bytes: 8 * MIB,
            max_files: 300,
            ..Default::default()
        });
        for (name, store, d) in targets(dir.path()) {
            let r = run_target(store.clone(), &name, opts(2), None, &wl).await;
            ok(&r);
            let by = |n: &str| r.phases.iter().find(|p| p.name == n).unwrap_or_else(|| panic!("{name}: no {n}"));
            for (n, _) in IO500_PHASES {
                assert!(by(n).ops > 0, "{name}: {n} did nothing");
            }
            assert_eq!(by("ior-easy-read").ops, by("ior-easy-write").ops);
            assert_eq!(by("ior-easy-read").bytes, by("ior-easy-write").bytes);
            assert_eq!(by("ior-hard-read").ops, by("ior-hard-write").ops);
            assert_eq!(by("mdtest-easy-stat").ops, by("mdtest-easy-write").ops);
            assert_eq!(by("mdtest-easy-read").ops, by("mdtest-easy-write").ops);
            assert_eq!(by("mdtest-easy-delete").ops, by("mdtest-easy-write").ops);
            assert_eq!(by("mdtest-hard-read").ops, by("mdtest-hard-write").ops);
            assert_eq!(by("find").ops, by("mdtest-easy-write").ops + by("mdtest-hard-write").ops);
            assert_eq!(r.summary["find_matched"] as u64, by("mdtest-hard-write").ops);
            assert!(by("ior-hard-write").ops <= 8 * MIB / 47008 + 1);
            let (bw, md) = (r.summary["score_bw_gib_s"], r.summary["score_md_kiops"]);
            assert!(bw > 0.0 && md > 0.0);
            assert!((r.summary["score_total"] - (bw * md).sqrt()).abs() < 1e-9);
            let bws: Vec<f64> = ["ior-easy-write", "ior-hard-write", "ior-easy-read", "ior-hard-read"]
                .iter()
                .map(|n| r.summary[&format!("{n}_gib_s")])
                .collect();
            assert!((geo_mean(&bws) - bw).abs() < 1e-9);
            assert_clean(&store, &d).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mdworkbench_latency_per_op() {
    let dir = tempfile::tempdir().unwrap();
    let wl = Workload::MdWorkbench(MdWorkbenchOpts { precreate: 5, size: 3901, iterations: 10, duration: None });
    for (name, store, d) in targets(dir.path()) {
        let r = run_target(store.clone(), &name, opts(2), None, &wl).await;
        ok(&r);
        assert_eq!(phase(&r, "precreate", 3901).ops, 10);
        for op in ["create", "read", "stat", "delete"] {
            let p = phase(&r, &format!("benchmark:{op}"), 3901);
            assert_eq!(p.ops, 20, "{name} {op}");
            let l = p.latency.as_ref().unwrap();
            assert!(l.min_us <= l.q1_us && l.q1_us <= l.p50_us && l.p50_us <= l.q3_us);
            assert!(l.q3_us <= l.p90_us && l.p90_us <= l.p99_us && l.p99_us <= l.max_us);
        }
        assert_eq!(phase(&r, "benchmark:read", 3901).bytes, 20 * 3901);
        assert_eq!(phase(&r, "cleanup", 3901).ops, 10);
        assert_clean(&store, &d).await;
    }
    // Duration mode, with progress enabled (a no-op without a terminal).
    let store: DynStore = Arc::new(s3hpc_core::memory::MemoryStore::new());
    let wl = Workload::MdWorkbench(MdWorkbenchOpts {
        precreate: 3,
        size: 100,
        iterations: 0,
        duration: Some(Duration::from_millis(100)),
    });
    let o = RunOpts { progress: true, ..opts(2) };
    let r = run_target(store.clone(), "memory://", o, None, &wl).await;
    ok(&r);
    let created = phase(&r, "benchmark:create", 100).ops;
    assert!(created > 0);
    assert_eq!(phase(&r, "benchmark:delete", 100).ops, created);
    assert_eq!(phase(&r, "cleanup", 100).ops, 6);
    assert_clean(&store, &None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_and_mixed() {
    let dir = tempfile::tempdir().unwrap();
    for (name, store, d) in targets(dir.path()) {
        for get in [false, true] {
            let wl = Workload::Rate(RateOpts { get, size: 1, max_concurrency: 4, step: Duration::from_millis(80) });
            let r = run_target(store.clone(), &name, opts(2), None, &wl).await;
            ok(&r);
            for c in [1, 2, 4] {
                let p = phase(&r, &format!("c{c}"), 1);
                assert_eq!(p.concurrency, c);
                assert_eq!(p.op, if get { "get" } else { "head" });
                assert!(p.ops > 0);
            }
            assert!(r.summary["best_ops_per_sec"] > 0.0);
        }
        let wl = Workload::Mixed(MixedOpts {
            mix: parse_mix("get=30,put=30,head=10,delete=20,list=10").unwrap(),
            objects: 20,
            size: 2000,
            duration: Duration::from_millis(300),
            overwrite: false,
        });
        let r = run_target(store.clone(), &name, opts(3), None, &wl).await;
        ok(&r);
        for op in ["get", "put", "head", "list"] {
            assert!(phase(&r, &format!("mixed:{op}"), 2000).ops > 0, "{name}: no {op}");
        }
        let total: u64 = r.phases.iter().filter(|p| p.name.starts_with("mixed:")).map(|p| p.ops).sum();
        let get = phase(&r, "mixed:get", 2000).ops as f64 / total as f64;
        assert!(get > 0.15 && get < 0.45, "get share {get}");
        assert_clean(&store, &d).await;
    }
    assert!(parse_mix("get=50,put=40").is_err());
    assert!(parse_mix("get=50,fly=50").is_err());
}

/// `mixed --overwrite`: PUTs rewrite the populated objects, so the stored set stays the same
/// however many PUTs run (without it every PUT adds an object).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_overwrite_keeps_the_stored_set() {
    for overwrite in [true, false] {
        let store: DynStore = Arc::new(s3hpc_core::memory::MemoryStore::new());
        let wl = Workload::Mixed(MixedOpts {
            mix: parse_mix("put=100").unwrap(),
            objects: 5,
            size: 100,
            duration: Duration::from_millis(200),
            overwrite,
        });
        let o = RunOpts { keep: true, ..opts(2) };
        let r = run_target(store.clone(), "memory://", o, Some("owbucket"), &wl).await;
        ok(&r);
        let puts: u64 = r.phases.iter().filter(|p| p.name.starts_with("mixed") && p.op == "put").map(|p| p.ops).sum();
        assert!(puts > 10, "only {puts} PUTs");
        let mut keys = Vec::new();
        let mut req = s3hpc_core::ListObjectsRequest { max_keys: 1000, ..Default::default() };
        loop {
            let page = store.list_objects("owbucket", req.clone()).await.unwrap();
            keys.extend(page.objects.iter().map(|o| o.key.clone()));
            match page.next_marker {
                Some(m) if page.is_truncated => req.start_after = Some(m),
                _ => break,
            }
        }
        if overwrite {
            assert_eq!(keys.len(), 5, "{keys:?}");
            assert!(keys.iter().all(|k| k.contains("mixed/base/")), "{keys:?}");
        } else {
            assert_eq!(keys.len() as u64, 5 + puts);
        }
    }
}

async fn small_run(targets: &[(&str, DynStore)]) -> BenchRun {
    let wl = Workload::Sweep(SweepOpts { sizes: vec![1024, 64 * 1024], count: Some(8), duration: None, head: true });
    let mut results = Vec::new();
    for (n, s) in targets {
        results.push(run_target(s.clone(), n, opts(2), None, &wl).await);
    }
    BenchRun {
        tool: "s3hpc bench".into(),
        version: "test".into(),
        started_unix: 0,
        command: "test".into(),
        workload: "sweep".into(),
        results,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outputs_json_csv_report_compare() {
    let dir = tempfile::tempdir().unwrap();
    let raw: DynStore = Arc::new(s3hpc_bench::rawfs::RawFsStore::open(dir.path().join("raw")).unwrap());
    let mem: DynStore = Arc::new(s3hpc_core::memory::MemoryStore::new());
    let run = small_run(&[("memory://", mem), ("posix://raw", raw)]).await;
    // JSON round trip
    let json = s3hpc_bench::output::to_json(&run);
    let back = s3hpc_bench::output::from_json(&json).unwrap();
    assert_eq!(back, run);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["results"].as_array().unwrap().len(), 2);
    assert!(v["results"][0]["phases"][0]["latency"]["p99_us"].as_f64().unwrap() > 0.0);
    // CSV: header plus one row per phase and summary figure, equal column counts
    let csv = s3hpc_bench::output::to_csv(&run);
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    assert_eq!(header, s3hpc_bench::output::CSV_HEADER);
    let ncols = header.split(',').count();
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), run.results.iter().map(|r| r.phases.len() + r.summary.len() + 1).sum::<usize>());
    assert!(rows.iter().all(|r| r.split(',').count() == ncols));
    // table names both targets side by side
    let t = s3hpc_bench::output::table(&run);
    assert!(t.contains("memory://") && t.contains("posix://raw") && t.contains("p99.9"));
    // report
    let rep = dir.path().join("report");
    let files = s3hpc_bench::report::write_report(&run, &rep).unwrap();
    assert!(files.iter().any(|f| f == "throughput.svg"));
    assert!(files.iter().any(|f| f.starts_with("latency-")));
    let html = std::fs::read_to_string(rep.join("index.html")).unwrap();
    for f in files.iter().filter(|f| f.ends_with(".svg")) {
        let svg = std::fs::read_to_string(rep.join(f)).unwrap();
        assert!(svg.contains("<svg") && svg.contains("</svg>"), "{f}");
        assert!(html.contains(&format!("src=\"{f}\"")));
    }
    assert!(html.contains("posix://raw"));
    // compare: identical runs show no change; a doubled rate shows +100%
    let same = s3hpc_bench::output::compare(&run, &run);
    assert!(same.contains("+0.0%") && !same.contains("only in"));
    let mut faster = run.clone();
    for p in &mut faster.results[0].phases {
        p.ops_per_sec *= 2.0;
    }
    let diff = s3hpc_bench::output::compare(&run, &faster);
    assert!(diff.contains("+100.0%"), "{diff}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_stop_the_run_or_are_counted() {
    let wl = Workload::Sweep(SweepOpts { sizes: vec![1024], count: Some(30), duration: None, head: true });
    // Without --keep-going: the first failure stops the run with a message naming target and op.
    let mem: DynStore = Arc::new(s3hpc_core::memory::MemoryStore::new());
    let faulty: DynStore = Arc::new(fault_store(mem.clone(), &["get"], 3, FaultKind::Fail(ErrorCode::InternalError)));
    let r = run_target(faulty, "faulty://", opts(2), None, &wl).await;
    let msg = r.aborted.clone().expect("must abort");
    assert!(msg.contains("faulty://") && msg.contains("get") && msg.contains("injected fault"), "{msg}");
    assert!(r.errors >= 1);
    assert!(r.phases.iter().any(|p| p.name == "put"), "phases before the failure are kept");
    assert!(mem.list_buckets().await.unwrap().is_empty(), "cleanup after abort");

    // With --keep-going: every failure is counted, the run completes.
    let mem: DynStore = Arc::new(s3hpc_core::memory::MemoryStore::new());
    let fs = Arc::new(fault_store(mem.clone(), &["get", "head"], 4, FaultKind::Fail(ErrorCode::ServiceUnavailable)));
    let faulty: DynStore = fs.clone();
    let o = RunOpts { keep_going: true, ..opts(3) };
    let r = run_target(faulty, "faulty://", o, None, &wl).await;
    assert!(r.aborted.is_none(), "{:?}", r.aborted);
    let counted: u64 = r.phases.iter().map(|p| p.errors).sum();
    assert_eq!(counted, fs.hook().injected());
    assert_eq!(r.errors, fs.hook().injected());
    assert_eq!(counted, 15, "60 get+head calls, every 4th fails");
    assert_eq!(phase(&r, "get", 1024).ops + phase(&r, "get", 1024).errors, 30);
    assert!(!r.error_samples.is_empty() && r.error_samples[0].contains("ServiceUnavailable"));
    assert!(mem.list_buckets().await.unwrap().is_empty());

    // A hanging request hits the timeout instead of hanging the benchmark.
    let mem: DynStore = Arc::new(s3hpc_core::memory::MemoryStore::new());
    let faulty: DynStore = Arc::new(fault_store(mem.clone(), &["put"], 5, FaultKind::Hang));
    let o = RunOpts { timeout: Duration::from_millis(200), ..opts(2) };
    let t0 = std::time::Instant::now();
    let r = run_target(faulty, "hang://", o, None, &wl).await;
    assert!(t0.elapsed() < Duration::from_secs(10));
    let msg = r.aborted.expect("timeout must abort");
    assert!(msg.contains("RequestTimeout") && msg.contains("put") && msg.contains("hang://"), "{msg}");

    // Failing setup (bucket creation) is reported as such.
    let mem: DynStore = Arc::new(s3hpc_core::memory::MemoryStore::new());
    let faulty: DynStore = Arc::new(fault_store(mem, &["create-bucket"], 1, FaultKind::Fail(ErrorCode::AccessDenied)));
    let r = run_target(faulty, "denied://", opts(1), None, &wl).await;
    let msg = r.aborted.expect("must abort");
    assert!(msg.contains("create-bucket") && msg.contains("AccessDenied"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_catches_wrong_content() {
    // noop:// stores nothing and answers every GET with zeros: --verify must notice.
    let store: DynStore = Arc::new(s3hpc_core::noop::NoopStore::new(1024));
    let wl = Workload::Sweep(SweepOpts { sizes: vec![1024], count: Some(4), duration: None, head: false });
    let r = run_target(store.clone(), "noop://", opts(1), None, &wl).await;
    let msg = r.aborted.expect("verification must fail");
    assert!(msg.contains("BadDigest") && msg.contains("verify"), "{msg}");
    // Without --verify the same run passes.
    let o = RunOpts { verify: false, ..opts(1) };
    let r = run_target(store, "noop://", o, None, &wl).await;
    ok(&r);
}

#[tokio::test]
async fn unavailable_targets_fail_clearly() {
    let topts = s3hpc_bench::target::TargetOpts::default();
    let e = s3hpc_bench::target::open("bogus://x", &topts).await.err().unwrap().to_string();
    assert!(e.contains("bogus://x") && e.contains("unknown scheme"), "{e}");
    let e = s3hpc_bench::target::open("posix://", &topts).await.err().unwrap().to_string();
    assert!(e.contains("needs a directory"), "{e}");
    // Network targets without credentials say so.
    let e = s3hpc_bench::target::open("http://127.0.0.1:9", &topts).await.err().unwrap().to_string();
    assert!(e.contains("no credentials"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_endpoints_name_target_and_operation() {
    // Port 9 (discard) on loopback: nothing listens there in the test environment.
    let topts = s3hpc_bench::target::TargetOpts {
        credentials: Some(s3hpc_core::Credentials::new("AK", "SK")),
        region: "us-east-1".into(),
        ..Default::default()
    };
    let wl = Workload::Sweep(SweepOpts { sizes: vec![1024], count: Some(2), duration: None, head: false });
    let store = s3hpc_bench::target::open("http://127.0.0.1:9", &topts).await.unwrap();
    let o = RunOpts { timeout: Duration::from_secs(5), ..opts(1) };
    let t0 = std::time::Instant::now();
    let r = run_target(store, "http://127.0.0.1:9", o, None, &wl).await;
    assert!(t0.elapsed() < Duration::from_secs(20));
    let msg = r.aborted.expect("must fail");
    assert!(msg.contains("http://127.0.0.1:9") && msg.contains("create-bucket"), "{msg}");
    let e = s3hpc_bench::target::open("tcp://127.0.0.1:9", &topts).await.err().unwrap().to_string();
    assert!(e.contains("tcp://127.0.0.1:9") && e.contains("connect failed"), "{e}");
}
