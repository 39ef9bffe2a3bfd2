//! End to end: the real `s3hpc serve` (memory backend) on an ephemeral port, measured by the
//! real `s3hpc bench` over HTTP, next to the embedded and raw POSIX paths.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_s3hpc");
const AK: &str = "BENCHE2EACCESSKEY";
const SK: &str = "bench-e2e-secret-key-0123456789";

struct Server {
    child: Child,
    endpoint: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("s3hpc-bench-e2e-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn serve(root: &std::path::Path) -> Server {
    let mut child = Command::new(BIN)
        .arg("serve")
        .arg(root)
        .args(["--backend", "memory", "--listen", "127.0.0.1:0", "--access-key", AK, "--secret-key", SK])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn s3hpc serve");
    let mut line = String::new();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    reader.read_line(&mut line).unwrap();
    // Keep draining the server's stdout: a closed pipe would make its next line fail.
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    let endpoint = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    Server { child, endpoint }
}

fn bench(args: &[&str], secret: &str) -> std::process::Output {
    Command::new(BIN)
        .arg("bench")
        .args(args)
        .env("AWS_ACCESS_KEY_ID", AK)
        .env("AWS_SECRET_ACCESS_KEY", secret)
        .env_remove("AWS_PROFILE")
        .output()
        .expect("run s3hpc bench")
}

#[test]
fn bench_against_real_server_side_by_side() {
    let dir = tmp("side");
    let srv = serve(&dir.join("srv"));
    let json = dir.join("run.json");
    let csv = dir.join("run.csv");
    let report = dir.join("report");
    let file_t = format!("file://{}", dir.join("emb").display());
    let posix_t = format!("posix://{}", dir.join("raw").display());
    let out = bench(
        &[
            "sweep",
            "--target",
            &srv.endpoint,
            "--target",
            &file_t,
            "--target",
            &posix_t,
            "--sizes",
            "1KiB,256KiB",
            "--count",
            "16",
            "-c",
            "4",
            "--verify",
            "-q",
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ],
        SK,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&srv.endpoint) && stdout.contains(&file_t) && stdout.contains(&posix_t));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    for r in results {
        assert_eq!(r["errors"], 0, "{r}");
        let get = r["phases"].as_array().unwrap().iter().find(|p| p["name"] == "get").unwrap();
        assert_eq!(get["ops"], 16);
        assert_eq!(get["bytes"], 16 * 1024);
    }
    assert!(std::fs::read_to_string(&csv).unwrap().starts_with("target,workload,phase"));
    assert!(report.join("index.html").exists() && report.join("throughput.svg").exists());

    // compare the run with itself
    let out = Command::new(BIN).args(["bench", "compare"]).arg(&json).arg(&json).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("+0.0%"));

    // crud with the OSSperf line and io500, briefly, over HTTP
    let out = bench(&["crud", "-t", &srv.endpoint, "-n", "5", "-s", "4KiB", "--ossperf", "-q"], SK);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let line = stdout.lines().last().unwrap();
    assert_eq!(line.split(' ').count(), 13, "{line}");
    let out = bench(
        &["io500", "-t", &srv.endpoint, "--stonewall", "200ms", "--max-bytes", "8MiB", "--max-files", "200", "-q"],
        SK,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("score_total"));
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_reports_wrong_credentials_and_unreachable_endpoint() {
    let dir = tmp("fault");
    let srv = serve(&dir.join("srv"));
    let out = bench(&["sweep", "-t", &srv.endpoint, "--sizes", "1KiB", "--count", "2", "-q"], "wrong-secret");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&srv.endpoint) && err.contains("create-bucket"), "{err}");
    assert!(err.contains("SignatureDoesNotMatch") || err.contains("AccessDenied"), "{err}");
    drop(srv);
    let out =
        bench(&["sweep", "-t", "http://127.0.0.1:9", "--sizes", "1KiB", "--count", "2", "--timeout", "5s", "-q"], SK);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("http://127.0.0.1:9") && err.contains("create-bucket"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--etag` and `--io` configure file:// targets: the kept objects carry fast ETags (not MD5
/// shaped), the inline run verifies its reads, and bad values are refused by name.
#[test]
fn embedded_target_etag_and_io_modes() {
    use s3hpc_core::Store;
    let dir = tmp("modes");
    let root = dir.join("emb");
    let file_t = format!("file://{}", root.display());
    let run = |extra: &[&str]| {
        // speedtest keeps its objects with --keep (sweep deletes them in its own phase).
        let mut a = vec!["speedtest", "-t", &file_t, "--size", "4KiB", "--round", "200ms", "--max-rounds", "1"];
        a.extend_from_slice(&["-q", "--bucket", "modes"]);
        a.extend_from_slice(extra);
        bench(&a, SK)
    };
    let out = run(&["--etag", "fast", "--io", "inline", "--verify", "--keep", "--durability", "none"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let store = s3hpc_posix::PosixStore::open(&root, s3hpc_posix::PosixOptions::default()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let req = s3hpc_core::types::ListObjectsRequest { max_keys: 1000, ..Default::default() };
    let listed = rt.block_on(store.list_objects("modes", req)).unwrap();
    assert!(!listed.objects.is_empty(), "--keep kept the objects");
    for o in &listed.objects {
        // Fast ETags are XXH3-128 hex with a `-1` suffix; MD5 ones are 32 hex digits.
        assert!(o.etag.trim_matches('"').ends_with("-1"), "fast ETag expected, got {}", o.etag);
    }
    for (flag, bad) in [("--etag", "sha1"), ("--io", "sideways")] {
        let out = run(&[flag, bad]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag) && err.contains(bad), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
