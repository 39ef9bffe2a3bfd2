//! `s3hpc bench` with several ranks: the real binary with `--procs N` (local processes, the same
//! code path MPI ranks take), checked through its `--json` output: every rank present, aggregate
//! = sum of the per-rank figures, merged latency histograms holding every operation, io500's
//! stonewall wear-out giving complete read sets, and failures (a dead rank, a rank whose endpoint
//! is down) ending the run promptly with a clear message. MPI itself is tested by
//! tests/integration/test_scale.py (needs mpirun).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_s3hpc");

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("s3hpc-bench-ranks-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn bench(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("bench")
        .args(args)
        .env_remove("OMPI_COMM_WORLD_SIZE")
        .env_remove("PMI_SIZE")
        .env_remove("PMIX_SIZE")
        .env_remove("SLURM_STEP_NUM_TASKS")
        .output()
        .expect("run s3hpc bench")
}

fn ok_json(out: &Output, json: &Path) -> Value {
    let so = String::from_utf8_lossy(&out.stdout);
    let se = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed: {}\nstdout:\n{so}\nstderr:\n{se}", out.status);
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

/// Every phase: per-rank entries for each rank, ops/bytes/errors = their sums, the merged
/// histogram holds one sample per operation, the balance agrees with the per-rank figures.
fn check_merged(r: &Value, ranks: usize) {
    let info = r["ranks"].as_array().expect("rank list");
    assert_eq!(info.len(), ranks);
    for (i, x) in info.iter().enumerate() {
        assert_eq!(x["rank"].as_u64().unwrap() as usize, i);
        assert!(x["pid"].as_u64().unwrap() > 0);
    }
    let mut pids: Vec<u64> = info.iter().map(|x| x["pid"].as_u64().unwrap()).collect();
    pids.dedup();
    assert_eq!(pids.len(), ranks, "ranks are separate processes");
    let phases = r["phases"].as_array().unwrap();
    assert!(!phases.is_empty());
    for p in phases {
        let name = p["name"].as_str().unwrap();
        let per = p["per_rank"].as_array().unwrap_or_else(|| panic!("{name}: no per_rank"));
        assert_eq!(per.len(), ranks, "{name}");
        let sum = |k: &str| per.iter().map(|x| x[k].as_u64().unwrap()).sum::<u64>();
        assert_eq!(p["ops"].as_u64().unwrap(), sum("ops"), "{name}: aggregate ops");
        assert_eq!(p["bytes"].as_u64().unwrap(), sum("bytes"), "{name}: aggregate bytes");
        assert_eq!(p["errors"].as_u64().unwrap(), sum("errors"), "{name}: aggregate errors");
        if let Some(l) = p["latency"].as_object() {
            assert_eq!(l["count"].as_u64().unwrap(), p["ops"].as_u64().unwrap(), "{name}: merged histogram");
        }
        // wall time from the first start to the last end: at least the longest rank's own time
        let secs = p["seconds"].as_f64().unwrap();
        let longest = per.iter().map(|x| x["seconds"].as_f64().unwrap()).fold(0.0, f64::max);
        assert!(secs + 1e-6 >= longest, "{name}: {secs} < {longest}");
        let b = &p["balance"];
        assert_eq!(b["ranks"].as_u64().unwrap() as usize, ranks);
        let ops: Vec<u64> = per.iter().map(|x| x["ops"].as_u64().unwrap()).collect();
        assert_eq!(b["ops_min"].as_u64().unwrap(), *ops.iter().min().unwrap(), "{name}");
        assert_eq!(b["ops_max"].as_u64().unwrap(), *ops.iter().max().unwrap(), "{name}");
    }
}

fn phase<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["phases"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("no phase {name}"))
}

#[test]
fn sweep_with_two_procs_on_memory() {
    let d = tmp("mem2");
    let json = d.join("r.json");
    let out = bench(&[
        "sweep",
        "-t",
        "memory://",
        "--sizes",
        "4KiB,64KiB",
        "--count",
        "24",
        "-c",
        "3",
        "--procs",
        "2",
        "-q",
        "--verify",
        "--json",
        json.to_str().unwrap(),
    ]);
    let v = ok_json(&out, &json);
    let r = &v["results"][0];
    assert!(r["aborted"].is_null());
    check_merged(r, 2);
    // every rank did its full count of every phase
    for p in r["phases"].as_array().unwrap() {
        assert_eq!(p["ops"].as_u64().unwrap(), 48, "{}", p["name"]);
    }
    assert_eq!(r["ranks"][0]["launcher"], "procs");
    // the report is printed once (by rank 0)
    let so = String::from_utf8_lossy(&out.stdout);
    assert_eq!(so.matches("errors\n").count(), 1, "{so}");
    assert!(so.contains("balance: phase") && so.contains("per rank: phase"), "{so}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn sweep_and_crud_with_three_procs_on_one_posix_root() {
    let d = tmp("file3");
    let root = d.join("root");
    let target = format!("file://{}", root.display());
    let json = d.join("r.json");
    let csv = d.join("r.csv");
    let out = bench(&[
        "sweep",
        "-t",
        &target,
        "--sizes",
        "8KiB",
        "--count",
        "10",
        "-c",
        "2",
        "--procs",
        "3",
        "-q",
        "--verify",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let v = ok_json(&out, &json);
    let r = &v["results"][0];
    check_merged(r, 3);
    assert_eq!(phase(r, "get")["ops"].as_u64().unwrap(), 30);
    assert_eq!(phase(r, "get")["bytes"].as_u64().unwrap(), 30 * 8192);
    // CSV: aggregate rows (rank empty) plus one row per rank
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    let col = |n: &str| rows[0].iter().position(|c| *c == n).unwrap();
    let (pc, rc, oc) = (col("phase"), col("rank"), col("ops"));
    let gets: Vec<&Vec<&str>> = rows.iter().filter(|r| r[pc] == "get").collect();
    assert_eq!(gets.len(), 4);
    let per: u64 = gets.iter().filter(|r| !r[rc].is_empty()).map(|r| r[oc].parse::<u64>().unwrap()).sum();
    assert_eq!(per, 30);
    // everything the ranks wrote on the shared root was cleaned up (buckets included)
    let left: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");

    // crud (OSSperf): rank 0 creates and deletes the bucket, every rank uploads/lists/downloads its share
    let out = bench(&[
        "crud",
        "-t",
        &target,
        "-n",
        "6",
        "-s",
        "4KiB",
        "--procs",
        "3",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let v = ok_json(&out, &json);
    let r = &v["results"][0];
    assert!(r["aborted"].is_null(), "{r}");
    assert_eq!(phase(r, "upload")["ops"].as_u64().unwrap(), 18);
    assert_eq!(phase(r, "download")["per_rank"].as_array().unwrap().len(), 3);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn io500_with_two_procs_stonewalls_and_wears_out() {
    let d = tmp("io500");
    let root = d.join("root");
    let target = format!("file://{}", root.display());
    let json = d.join("r.json");
    let out = bench(&[
        "io500",
        "-t",
        &target,
        "--stonewall",
        "400ms",
        "--ior-easy-xfer",
        "64KiB",
        "--max-bytes",
        "4MiB",
        "--max-files",
        "400",
        "-c",
        "2",
        "--procs",
        "2",
        "-q",
        "--verify",
        "--json",
        json.to_str().unwrap(),
    ]);
    let v = ok_json(&out, &json);
    let r = &v["results"][0];
    let s = &r["summary"];
    assert_eq!(s["ranks"].as_f64().unwrap(), 2.0);
    for (w, rd) in [
        ("ior-easy-write", "ior-easy-read"),
        ("ior-hard-write", "ior-hard-read"),
        ("mdtest-easy-write", "mdtest-easy-stat"),
        ("mdtest-hard-write", "mdtest-hard-read"),
    ] {
        // After the wear-out every task of every rank has the same item count, and the read
        // phase (each rank reading its neighbour's data) reads exactly what was written.
        let wp = phase(r, w);
        assert_eq!(phase(r, rd)["ops"], wp["ops"], "{w} vs {rd}");
        let hi = s[format!("{w}_items_max")].as_f64().unwrap() as u64;
        assert!(s[format!("{w}_items_min")].as_f64().unwrap() as u64 <= hi);
        assert_eq!(wp["ops"].as_u64().unwrap(), hi * 2 * 2, "{w}: 2 ranks x 2 tasks x {hi}");
        let sw = phase(r, &format!("{w}-stonewall"))["ops"].as_u64().unwrap();
        let wear = r["phases"].as_array().unwrap().iter().find(|p| p["name"] == format!("{w}-wearout"));
        assert_eq!(sw + wear.map(|p| p["ops"].as_u64().unwrap()).unwrap_or(0), wp["ops"].as_u64().unwrap(), "{w}");
        assert!(s[format!("{w}_wearout_seconds")].as_f64().is_some());
    }
    assert_eq!(s["find_matched"], s["find_expected"]);
    assert_eq!(s["find_matched"].as_f64().unwrap() as u64, phase(r, "mdtest-hard-write")["ops"].as_u64().unwrap());
    assert!(s["score_total"].as_f64().unwrap() > 0.0);
    check_merged(r, 2);
    let _ = std::fs::remove_dir_all(&d);
}

/// A rank that dies (SIGKILL) in the middle of a phase ends the whole run promptly, with an
/// error naming it, and no rank is left behind.
#[test]
fn a_dead_rank_fails_the_run_promptly() {
    let mut child = Command::new(BIN)
        .args([
            "bench",
            "mixed",
            "-t",
            "memory://",
            "--duration",
            "120s",
            "--objects",
            "20",
            "-c",
            "1",
            "--procs",
            "3",
            "-q",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let parent = child.id();
    // wait for the three ranks (children of the parent) to exist
    let deadline = Instant::now() + Duration::from_secs(20);
    let kids = loop {
        let k = children_of(parent);
        if k.len() == 3 || Instant::now() > deadline {
            break k;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(kids.len(), 3, "ranks: {kids:?}");
    std::thread::sleep(Duration::from_millis(1500));
    let t0 = Instant::now();
    unsafe_kill(kids[1]);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "run did not end after a rank died");
        std::thread::sleep(Duration::from_millis(50));
    };
    let elapsed = t0.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(!status.success());
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    assert!(err.contains("rank"), "{err}");
    for k in kids {
        assert!(!Path::new(&format!("/proc/{k}")).exists() || is_zombie(k), "rank pid {k} still runs");
    }
}

/// A rank whose endpoint is down: every rank stops at the same phase and the error names the
/// rank and the target.
#[test]
fn a_rank_with_a_dead_endpoint_fails_every_rank() {
    let t0 = Instant::now();
    let out = bench(&[
        "sweep",
        "-t",
        "memory://,http://127.0.0.1:9",
        "--sizes",
        "4KiB",
        "--count",
        "8",
        "--procs",
        "2",
        "-q",
        "--access-key",
        "AK",
        "--secret-key",
        "SECRETSECRET",
        "--timeout",
        "5s",
    ]);
    assert!(!out.status.success());
    assert!(t0.elapsed() < Duration::from_secs(30));
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(all.contains("rank 1"), "{all}");
    assert!(all.contains("127.0.0.1:9"), "{all}");
}

#[test]
fn mpi_launcher_environment_without_the_feature() {
    let out = Command::new(BIN)
        .args(["bench", "sweep", "-t", "memory://", "--sizes", "1KiB", "--count", "2", "-q"])
        .env("OMPI_COMM_WORLD_SIZE", "2")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if cfg!(feature = "mpi") {
        // With MPI built in, a fake launcher environment must not pass silently as one rank
        // (MPI_Init without mpirun gives a singleton of size 1 or fails): either way not "built without".
        assert!(!err.contains("built without MPI"), "{err}");
    } else {
        assert!(!out.status.success());
        assert!(err.contains("built without MPI") && err.contains("--procs 2"), "{err}");
    }
    // --procs under an MPI launcher is refused
    let out = Command::new(BIN)
        .args(["bench", "sweep", "-t", "memory://", "--sizes", "1KiB", "--count", "2", "-q", "--procs", "2"])
        .env("OMPI_COMM_WORLD_SIZE", "2")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("use one or the other"));
}

fn children_of(pid: u32) -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| s.rsplit(')').next().map(|r| r.split_whitespace().nth(1) == Some(&pid.to_string())))
                .unwrap_or(false)
        })
        .collect();
    v.sort();
    v
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit(')').next().and_then(|r| r.split_whitespace().next()) == Some("Z"))
        .unwrap_or(true)
}

fn unsafe_kill(pid: u32) {
    let st = Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    assert!(st.success());
}
