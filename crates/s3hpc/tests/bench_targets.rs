//! `s3hpc bench` against the network targets a user points it at, all real processes:
//!
//! * `https://`: the real `s3hpc serve` behind nginx terminating TLS with `deploy/nginx-tls.conf`
//!   (a CA and server certificate made by `openssl` in the test's temp dir): path and
//!   virtual-host style (SNI checked in nginx's log), `--verify`, an untrusted certificate, and
//!   `--insecure`; plus the conformance suite through `S3Client` over TLS.
//! * `unix://` and `tcp://`: the binary protocol of `s3hpc serve --binary ...`, side by side.
//!
//! nginx and openssl come from scripts/install-test-deps; without them the TLS tests say so and
//! pass, except under CI (`CI` set), where they fail.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_s3hpc");
const AK: &str = "BENCHTARGETSACCESSKEY";
const SK: &str = "bench-targets-secret-key-0123456789";

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("s3hpc-bench-targets-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `s3hpc serve` with its output lines; killed when dropped.
struct Server {
    child: Child,
    lines: Vec<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Start `s3hpc serve ROOT --backend memory ARGS...` and read its banner (up to the users line).
    fn start(root: &Path, args: &[&str]) -> Server {
        Server::start_backend(root, "memory", args)
    }

    fn start_backend(root: &Path, backend: &str, args: &[&str]) -> Server {
        let mut child = Command::new(BIN)
            .arg("serve")
            .arg(root)
            .args(["--backend", backend, "--access-key", AK, "--secret-key", SK])
            .args(args)
            .env_remove("S3HPC_ACCESS_KEY")
            .env_remove("S3HPC_SECRET_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn s3hpc serve");
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            // Keep draining: a closed pipe would make the server's next line fail.
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut lines = Vec::new();
        loop {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(l) => {
                    let done = l.contains("user(s)");
                    lines.push(l);
                    if done {
                        return Server { child, lines };
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("s3hpc serve {args:?}: no banner within 30s: {lines:?}");
                }
            }
        }
    }

    /// The first word of the banner starting with `scheme://`.
    fn url(&self, scheme: &str) -> String {
        let p = format!("{scheme}://");
        self.lines
            .iter()
            .flat_map(|l| l.split_whitespace())
            .find(|w| w.starts_with(&p))
            .unwrap_or_else(|| panic!("no {p} address in {:?}", self.lines))
            .to_string()
    }
}

/// Run `s3hpc bench ARGS` with the test's keys; a run that takes longer than `limit` is a hang.
fn bench(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(BIN)
        .arg("bench")
        .args(args)
        .env("AWS_ACCESS_KEY_ID", AK)
        .env("AWS_SECRET_ACCESS_KEY", SK)
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_CA_BUNDLE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run s3hpc bench");
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("s3hpc bench {args:?} hung (> {limit:?}); stderr:\n{}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Run a bench that must succeed and return its `--json` document.
fn bench_json(args: &[&str], json: &Path) -> (serde_json::Value, Output) {
    let mut a: Vec<&str> = args.to_vec();
    a.extend(["-q", "--json", json.to_str().unwrap()]);
    let out = bench(&a, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "bench {a:?} failed:\nstdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    (serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap(), out)
}

fn phase<'a>(r: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no phase {name} in {r}"))
}

fn tool(name: &str) -> Option<PathBuf> {
    ["/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/sbin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
}

/// nginx and openssl, or None (and a note) when they are missing outside CI.
fn tls_tools() -> Option<(PathBuf, PathBuf)> {
    match (tool("nginx"), tool("openssl")) {
        (Some(n), Some(o)) => Some((n, o)),
        _ if std::env::var_os("CI").is_some() => panic!("nginx and openssl are needed (scripts/install-test-deps)"),
        _ => {
            eprintln!("SKIPPED: nginx or openssl not installed (scripts/install-test-deps installs them)");
            None
        }
    }
}

fn run_ok(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", text(&out.stderr));
}

/// A CA (`NAME-ca.pem`) and a server certificate for s3.localhost, *.s3.localhost and 127.0.0.1
/// signed by it (`NAME.pem`, `NAME.key`).
fn make_certs(openssl: &Path, dir: &Path, name: &str) {
    let f = |s: &str| dir.join(s.replace("NAME", name)).to_str().unwrap().to_string();
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    run_ok(Command::new(openssl).args(["req", "-x509"]).args(ec).args([
        "-keyout",
        &f("NAME-ca.key"),
        "-out",
        &f("NAME-ca.pem"),
        "-days",
        "2",
        "-subj",
        &format!("/CN=s3hpc test CA {name}"),
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]));
    run_ok(Command::new(openssl).arg("req").args(ec).args([
        "-keyout",
        &f("NAME.key"),
        "-out",
        &f("NAME.csr"),
        "-subj",
        "/CN=s3.localhost",
    ]));
    std::fs::write(
        f("NAME.ext"),
        "subjectAltName=DNS:s3.localhost,DNS:*.s3.localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run_ok(Command::new(openssl).args(["x509", "-req", "-days", "2", "-set_serial", "2"]).args([
        "-in",
        &f("NAME.csr"),
        "-CA",
        &f("NAME-ca.pem"),
        "-CAkey",
        &f("NAME-ca.key"),
        "-out",
        &f("NAME.pem"),
        "-extfile",
        &f("NAME.ext"),
    ]));
}

/// nginx running `deploy/nginx-tls.conf` for one gateway; stopped when dropped.
struct Nginx {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // TERM lets the master stop its workers; kill only if it does not.
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let t0 = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() {
            if t0.elapsed() > Duration::from_secs(10) {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn replace_once(text: &mut String, from: &str, to: &str) {
    assert_eq!(text.matches(from).count(), 1, "deploy/nginx-tls.conf: expected {from:?} exactly once");
    *text = text.replacen(from, to, 1);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

/// Start nginx with deploy/nginx-tls.conf in front of `gateway` (host:port), certificate `name`.
fn nginx_tls(nginx: &Path, dir: &Path, gateway: &str, name: &str) -> Nginx {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut conf = std::fs::read_to_string(repo.join("deploy/nginx-tls.conf")).unwrap();
    let port = free_port();
    let d = dir.display();
    replace_once(
        &mut conf,
        "        server 10.0.0.11:9000 max_fails=3 fail_timeout=10s;\n        server 10.0.0.12:9000 max_fails=3 fail_timeout=10s;\n",
        &format!("        server {gateway} max_fails=3 fail_timeout=10s;\n"),
    );
    replace_once(&mut conf, "worker_processes auto;", "worker_processes 1;");
    replace_once(&mut conf, "listen 443 ssl;", &format!("listen 127.0.0.1:{port} ssl;"));
    replace_once(&mut conf, "server_name s3.example.org *.s3.example.org;", "server_name s3.localhost *.s3.localhost;");
    replace_once(&mut conf, "/etc/nginx/tls/s3.example.org.crt", &format!("{d}/{name}.pem"));
    replace_once(&mut conf, "/etc/nginx/tls/s3.example.org.key", &format!("{d}/{name}.key"));
    replace_once(&mut conf, "/var/log/nginx/s3hpc-tls-access.log", &format!("{d}/access.log"));
    let temps: String = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
        .iter()
        .map(|t| format!("    {t}_temp_path {d}/{t};\n"))
        .collect();
    replace_once(&mut conf, "http {\n", &format!("http {{\n{temps}"));
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).unwrap();
    let mut glob = format!("daemon off; pid {d}/nginx.pid;");
    if is_root() {
        glob.push_str(" user root;");
    }
    let args = |cmd: &mut Command| {
        cmd.arg("-p").arg(dir).arg("-c").arg(&path).arg("-e").arg(dir.join("error.log")).args(["-g", &glob]);
    };
    let mut t = Command::new(nginx);
    args(&mut t);
    run_ok(t.arg("-t"));
    let mut cmd = Command::new(nginx);
    args(&mut cmd);
    let child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::inherit()).spawn().unwrap();
    let ng = Nginx { child, port, dir: dir.to_path_buf() };
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "nginx did not come up: {}",
            std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    ng
}

impl Nginx {
    fn access_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("access.log")).unwrap_or_default()
    }
}

/// Bytes read by the GET phases of one target's result.
fn get_bytes(r: &serde_json::Value) -> u64 {
    r["phases"].as_array().unwrap().iter().filter(|p| p["name"] == "get").map(|p| p["bytes"].as_u64().unwrap()).sum()
}

fn check_clean(v: &serde_json::Value, targets: usize) {
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), targets, "{v}");
    for r in results {
        assert_eq!(r["errors"], 0, "{r}");
        assert!(r["aborted"].is_null(), "{r}");
    }
}

#[test]
fn https_target_through_nginx_tls() {
    let Some((nginx, openssl)) = tls_tools() else { return };
    let dir = tmp("https");
    make_certs(&openssl, &dir, "good");
    make_certs(&openssl, &dir, "other");
    let srv = Server::start(&dir.join("srv"), &["--listen", "127.0.0.1:0", "--domain", "s3.localhost"]);
    let gw = srv.url("http").trim_start_matches("http://").to_string();
    let ng = nginx_tls(&nginx, &dir, &gw, "good");
    let ca = dir.join("good-ca.pem");
    let ca = ca.to_str().unwrap();

    // Path style, by IP address, content verified; two sizes, one larger than a TLS record.
    let t_ip = format!("https://127.0.0.1:{}", ng.port);
    let (v, _) = bench_json(
        &["sweep", "-t", &t_ip, "--ca-bundle", ca, "--sizes", "1KiB,1MiB", "--count", "8", "-c", "4", "--verify"],
        &dir.join("sweep.json"),
    );
    check_clean(&v, 1);
    let r = &v["results"][0];
    assert_eq!(r["target"], t_ip.as_str());
    for name in ["put", "get", "head"] {
        let p = r["phases"].as_array().unwrap().iter().filter(|p| p["name"] == name).collect::<Vec<_>>();
        assert_eq!(p.len(), 2, "{name}: {r}");
        assert!(p.iter().all(|p| p["ops"] == 8 && p["errors"] == 0), "{name}: {r}");
    }
    let gets = get_bytes(r);
    assert_eq!(gets, 8 * 1024 + 8 * (1 << 20));
    let log = ng.access_log();
    assert!(log.contains("TLSv1.3") || log.contains("TLSv1.2"), "{log}");
    // Keep-alive over TLS: connections carry many requests (4 tasks made > 50 requests).
    let most = log
        .lines()
        .filter_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("creq="))?.parse::<u64>().ok())
        .max();
    assert!(most.is_some_and(|n| n >= 10), "no connection served 10 requests: {most:?}");

    // Virtual-host style by name: SNI and Host carry the bucket (nginx logs both); the client
    // resolves *.localhost to loopback itself (RFC 6761).
    let t_name = format!("https://s3.localhost:{}", ng.port);
    let (v, _) = bench_json(
        &["crud", "-t", &t_name, "--ca-bundle", ca, "--virtual-host", "-n", "6", "-s", "64KiB", "-p", "--verify"],
        &dir.join("crud.json"),
    );
    check_clean(&v, 1);
    let r = &v["results"][0];
    for name in ["create-bucket", "upload", "list", "download", "delete-bucket"] {
        assert!(phase(r, name)["ops"].as_u64().unwrap() > 0, "{name}: {r}");
    }
    assert_eq!(phase(r, "upload")["ops"], 6);
    let log = ng.access_log();
    let vhost_line = log
        .lines()
        .find(|l| l.contains(&format!(".s3.localhost:{}", ng.port)) && l.contains("sni=s3hpc-"))
        .unwrap_or_else(|| panic!("no virtual-host request with the bucket in SNI and Host:\n{log}"));
    let sni = vhost_line.split_whitespace().find_map(|w| w.strip_prefix("sni=")).unwrap();
    assert!(vhost_line.contains(&format!("host={sni}:{}", ng.port)), "{vhost_line}");

    // A certificate from a CA the client does not trust: a clear error naming the target.
    let out = bench(
        &["sweep", "-t", &t_ip, "--ca-bundle", dir.join("other-ca.pem").to_str().unwrap(), "--sizes", "1KiB"],
        Duration::from_secs(60),
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains(&t_ip) && err.contains("create-bucket"), "{err}");
    assert!(err.contains("UnknownIssuer") && err.contains("AWS_CA_BUNDLE"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // Without a bundle only the system roots are trusted: refused too.
    let out = bench(&["sweep", "-t", &t_ip, "--sizes", "1KiB", "--count", "2"], Duration::from_secs(60));
    assert!(!out.status.success() && text(&out.stderr).to_lowercase().contains("certificate"));
    // A bundle that does not exist: said so, naming the file.
    let out = bench(
        &["sweep", "-t", &t_ip, "--ca-bundle", "/nonexistent/ca.pem", "--sizes", "1KiB"],
        Duration::from_secs(60),
    );
    assert!(!out.status.success() && text(&out.stderr).contains("/nonexistent/ca.pem"), "{}", text(&out.stderr));

    // https:// to a port that speaks plain HTTP: a TLS error naming the target, no hang.
    let plain = format!("https://{gw}");
    let out = bench(&["sweep", "-t", &plain, "--ca-bundle", ca, "--sizes", "1KiB"], Duration::from_secs(60));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains(&plain) && err.contains("create-bucket") && !err.contains("panicked"), "{err}");
    assert!(err.contains("did not answer in TLS"), "{err}");

    // --insecure: no verification, said loudly, and the run works.
    let (v, out) = bench_json(
        &["sweep", "-t", &t_ip, "--insecure", "--sizes", "4KiB", "--count", "4"],
        &dir.join("insecure.json"),
    );
    check_clean(&v, 1);
    assert!(text(&out.stderr).contains("NOT verified"), "{}", text(&out.stderr));

    drop(ng);
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The conformance suite through `S3Client` over TLS (nginx in front of the gateway).
#[test]
fn conformance_over_https() {
    let Some((nginx, openssl)) = tls_tools() else { return };
    let dir = tmp("conf-https");
    make_certs(&openssl, &dir, "good");
    let srv = Server::start(&dir.join("srv"), &["--listen", "127.0.0.1:0"]);
    let gw = srv.url("http").trim_start_matches("http://").to_string();
    let ng = nginx_tls(&nginx, &dir, &gw, "good");
    let client = s3hpc_client::S3Client::with_tls(
        s3hpc_client::ClientConfig {
            endpoint: format!("https://127.0.0.1:{}", ng.port),
            credentials: s3hpc_core::Credentials::new(AK, SK),
            region: "us-east-1".into(),
            virtual_host: false,
        },
        &s3hpc_client::TlsOptions { ca_bundle: Some(dir.join("good-ca.pem")), insecure: false },
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let caps = s3hpc_conformance::Caps {
        etag_md5: true,
        file_and_dir_same_name: true,
        part_checksums: false,
        default_checksum: false,
    };
    rt.block_on(s3hpc_conformance::run_all(Arc::new(client), caps));
    drop(ng);
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn binary_protocol_targets_side_by_side() {
    let dir = tmp("wire");
    let sock = dir.join("s3hpc.sock");
    let unix = format!("unix://{}", sock.display());
    let srv = Server::start(&dir.join("srv"), &["--binary", &unix, "--binary", "tcp://127.0.0.1:0", "--no-http"]);
    let tcp = srv.url("tcp");
    assert!(!tcp.ends_with(":0"), "{tcp}");
    assert_eq!(srv.url("unix"), unix);

    let (v, out) = bench_json(
        &["sweep", "-t", &unix, "-t", &tcp, "--sizes", "1KiB,256KiB", "--count", "8", "-c", "4", "--verify"],
        &dir.join("sweep.json"),
    );
    check_clean(&v, 2);
    let stdout = text(&out.stdout);
    assert!(stdout.contains(&unix) && stdout.contains(&tcp), "{stdout}");
    for (i, t) in [&unix, &tcp].into_iter().enumerate() {
        let r = &v["results"][i];
        assert_eq!(r["target"], t.as_str());
        let gets: Vec<_> = r["phases"].as_array().unwrap().iter().filter(|p| p["name"] == "get").collect();
        assert_eq!(gets.len(), 2, "{r}");
        assert!(gets.iter().all(|p| p["ops"] == 8 && p["ttfb"]["p50_us"].as_f64().unwrap() > 0.0), "{r}");
        let bytes: u64 = gets.iter().map(|p| p["bytes"].as_u64().unwrap()).sum();
        assert_eq!(bytes, 8 * 1024 + 8 * 256 * 1024);
    }

    let (v, _) = bench_json(
        &["mdworkbench", "-t", &unix, "-t", &tcp, "--precreate", "5", "--iterations", "10", "-c", "2", "--verify"],
        &dir.join("md.json"),
    );
    check_clean(&v, 2);
    for r in v["results"].as_array().unwrap() {
        for op in ["create", "read", "stat", "delete"] {
            let p = phase(r, &format!("benchmark:{op}"));
            assert_eq!(p["ops"], 20, "{op}: {r}");
        }
    }

    // Wrong credentials over the binary protocol: a clear error naming the target.
    let mut cmd = Command::new(BIN);
    let out = cmd
        .args(["bench", "sweep", "-t", &tcp, "--sizes", "1KiB", "--count", "2", "-q"])
        .env("AWS_ACCESS_KEY_ID", AK)
        .env("AWS_SECRET_ACCESS_KEY", "wrong-secret")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains(&tcp), "{err}");
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn binary_protocol_over_tls() {
    let openssl = match tool("openssl") {
        Some(o) => o,
        None if std::env::var_os("CI").is_some() => panic!("openssl is needed (scripts/install-test-deps)"),
        None => return eprintln!("SKIPPED: openssl not installed"),
    };
    let dir = tmp("wiretls");
    make_certs(&openssl, &dir, "good");
    make_certs(&openssl, &dir, "other");
    let f = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let (cert, key, ca, other_ca) = (f("good.pem"), f("good.key"), f("good-ca.pem"), f("other-ca.pem"));

    // tls:// without a certificate: refused at start, saying what is missing.
    let out = Command::new(BIN)
        .args(["serve", dir.join("nocert").to_str().unwrap(), "--backend", "memory", "--access-key", AK])
        .args(["--secret-key", SK, "--binary", "tls://127.0.0.1:0", "--no-http"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("--tls-cert"), "{}", text(&out.stderr));

    let srv = Server::start(
        &dir.join("srv"),
        &["--binary", "tls://127.0.0.1:0", "--no-http", "--tls-cert", &cert, "--tls-key", &key],
    );
    let tls = srv.url("tls");
    assert!(!tls.ends_with(":0"), "{tls}");

    // Data both ways, one size above a TLS record and a DATA frame, content verified.
    let (v, _) = bench_json(
        &["sweep", "-t", &tls, "--ca-bundle", &ca, "--sizes", "1KiB,3MiB", "--count", "6", "-c", "3", "--verify"],
        &dir.join("sweep.json"),
    );
    check_clean(&v, 1);
    let r = &v["results"][0];
    let gets = get_bytes(r);
    assert_eq!(gets, 6 * 1024 + 6 * (3 << 20), "{r}");

    // A client speaking the protocol in the clear gets no protocol answer (the server wants a
    // TLS ClientHello): nothing readable, and the connection ends.
    let addr = tls.trim_start_matches("tls://");
    let mut raw = std::net::TcpStream::connect(addr).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    use std::io::{Read, Write};
    raw.write_all(b"S3HW\x01\x00\x00\x00").unwrap();
    let mut got = Vec::new();
    let _ = raw.read_to_end(&mut got);
    assert!(!got.starts_with(b"S3HW"), "plaintext protocol answer on a tls:// listener: {got:?}");

    // A certificate from a CA the client does not trust, or no bundle at all: a certificate
    // error naming the target, no hang.
    for extra in [&["--ca-bundle", other_ca.as_str()][..], &[][..]] {
        let mut args = vec!["sweep", "-t", &tls, "--sizes", "1KiB", "--count", "2"];
        args.extend_from_slice(extra);
        let out = bench(&args, Duration::from_secs(60));
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert!(err.contains(&tls) && err.to_lowercase().contains("certificate"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A tmpfs of 4 MiB, unmounted when dropped.
struct SmallFs(PathBuf);

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A full disk under the real gateway (posix backend) and under the embedded path: the run stops
/// with a message naming target and operation, or with --keep-going counts the failures in every
/// output, and cleans up after itself either way. Needs root (mount); skipped otherwise.
#[test]
fn full_disk_stops_or_is_counted() {
    let dir = tmp("full");
    let mnt = dir.join("small");
    std::fs::create_dir_all(&mnt).unwrap();
    let mounted = is_root()
        && Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
            .arg(&mnt)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("SKIPPED: cannot mount a tmpfs here (needs root)");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let fs = SmallFs(mnt.clone());
    let srv = Server::start_backend(&mnt.join("gw"), "posix", &["--listen", "127.0.0.1:0", "--durability", "none"]);
    let http = srv.url("http");
    let file_t = format!("file://{}", mnt.join("emb").display());
    // 12 x 1 MiB does not fit in 4 MiB.
    let run = ["sweep", "--sizes", "1MiB", "--count", "12", "-c", "2", "--timeout", "20s"];

    for t in [&http, &file_t] {
        let mut a = run.to_vec();
        a.extend(["-t", t.as_str(), "-q"]);
        let out = bench(&a, Duration::from_secs(90));
        assert!(!out.status.success(), "{t}: a full disk must fail the run");
        let err = text(&out.stderr);
        assert!(err.contains(&format!("target {t}: put")) && err.contains("put failed"), "{err}");
        assert!(err.contains("storage full"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }

    let json = dir.join("keep-going.json");
    let csv = dir.join("keep-going.csv");
    let mut a = run.to_vec();
    a.extend(["-t", &http, "-t", &file_t, "--keep-going", "-q", "--json", json.to_str().unwrap()]);
    a.extend(["--csv", csv.to_str().unwrap()]);
    let out = bench(&a, Duration::from_secs(90));
    let stdout = text(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap())
        .unwrap_or_else(|e| panic!("{e}; stdout:\n{stdout}\nstderr:\n{}", text(&out.stderr)));
    for r in v["results"].as_array().unwrap() {
        assert!(r["aborted"].is_null(), "--keep-going goes on: {r}");
        let put = phase(r, "put");
        let failed = put["errors"].as_u64().unwrap();
        assert!(failed > 0 && put["ops"].as_u64().unwrap() < 12, "{r}");
        assert!(r["errors"].as_u64().unwrap() >= failed, "{r}");
        assert!(stdout.contains(&format!("{}: {} errors", r["target"].as_str().unwrap(), r["errors"])), "{stdout}");
    }
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(csv.lines().next().unwrap().contains("errors"), "{csv}");
    // Everything the runs wrote was deleted again: only the backends' own state is left.
    for root in [mnt.join("gw"), mnt.join("emb")] {
        let left: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("s3hpc-bench"))
            .collect();
        assert!(left.is_empty(), "{}: {left:?}", root.display());
    }
    drop(srv);
    drop(fs);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Keys from a `~/.aws/credentials` profile when neither flags nor environment give them.
#[test]
fn credentials_from_aws_profile() {
    let dir = tmp("profile");
    let home = dir.join("home");
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(
        home.join(".aws/credentials"),
        format!(
            "[default]\naws_access_key_id = NOSUCHKEY\naws_secret_access_key = nope\n\n\
             # the one to use\n[bench]\naws_access_key_id = {AK}\naws_secret_access_key = {SK}\n"
        ),
    )
    .unwrap();
    let srv = Server::start(&dir.join("srv"), &["--listen", "127.0.0.1:0"]);
    let http = srv.url("http");
    let run = |extra: &[&str]| {
        Command::new(BIN)
            .args(["bench", "crud", "-t", &http, "-n", "3", "-s", "1KiB", "-q"])
            .args(extra)
            .env("HOME", &home)
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_PROFILE")
            .output()
            .unwrap()
    };
    let out = run(&["--profile", "bench"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The default profile holds an unknown key: refused by the server, and said so.
    let out = run(&[]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("InvalidAccessKeyId"), "{}", text(&out.stderr));
    // A profile that does not exist: no credentials, and how to give them.
    let out = run(&["--profile", "missing"]);
    assert!(!out.status.success() && text(&out.stderr).contains("no credentials"), "{}", text(&out.stderr));
    // An explicit --profile beats key variables in the environment (the AWS CLI's order), and
    // a session token in the environment is signed and sent: the server refuses it with a
    // long-term key, as AWS does (InvalidToken; STS sessions: tests/integration/test_credentials.py).
    let with_env = |extra: &[&str], ak: &str, sk: &str| {
        Command::new(BIN)
            .args(["bench", "crud", "-t", &http, "-n", "3", "-s", "1KiB", "-q"])
            .args(extra)
            .env("HOME", &home)
            .env("AWS_ACCESS_KEY_ID", ak)
            .env("AWS_SECRET_ACCESS_KEY", sk)
            .env("AWS_SESSION_TOKEN", "temporary/token+1")
            .env_remove("AWS_PROFILE")
            .output()
            .unwrap()
    };
    let out = with_env(&["--profile", "bench"], "NOSUCHKEY", "nope");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = with_env(&[], AK, SK);
    assert!(!out.status.success() && text(&out.stderr).contains("InvalidToken"), "{}", text(&out.stderr));
    let out = with_env(&[], "NOSUCHKEY", "nope");
    assert!(text(&out.stderr).contains("InvalidAccessKeyId"), "{}", text(&out.stderr));
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every workload, briefly, against the real gateway over the posix backend (the product path),
/// with `--verify`: no errors, every phase did work, and the bucket is gone afterwards.
#[test]
fn every_workload_against_the_gateway() {
    let dir = tmp("all");
    let root = dir.join("srv");
    let srv = Server::start_backend(&root, "posix", &["--listen", "127.0.0.1:0", "--durability", "none"]);
    let http = srv.url("http");
    let runs: [&[&str]; 7] = [
        &["sweep", "--sizes", "4KiB,64KiB", "--count", "8"],
        &["speedtest", "--size", "64KiB", "--round", "200ms", "--max-rounds", "3"],
        &["crud", "-n", "4", "-s", "4KiB", "-p"],
        &["io500", "--stonewall", "200ms", "--max-bytes", "4MiB", "--max-files", "100"],
        &["mdworkbench", "--precreate", "3", "--iterations", "5"],
        &["rate", "--max-concurrency", "4", "--step", "200ms"],
        &["mixed", "--objects", "10", "--size", "4KiB", "--duration", "500ms"],
    ];
    for (i, args) in runs.iter().enumerate() {
        let mut a = args.to_vec();
        a.extend(["-t", &http, "-c", "2", "--verify"]);
        let (v, _) = bench_json(&a, &dir.join(format!("{i}.json")));
        check_clean(&v, 1);
        let phases = v["results"][0]["phases"].as_array().unwrap();
        assert!(!phases.is_empty(), "{args:?}: {v}");
        for p in phases {
            assert!(p["ops"].as_u64().unwrap() > 0, "{args:?}: idle phase {p}");
        }
    }
    let left: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("s3hpc-bench"))
        .collect();
    assert!(left.is_empty(), "not cleaned up: {left:?}");
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Virtual-host style over plain HTTP: the bucket goes in the Host header only (the gateway
/// runs with --domain); `*.localhost` needs no DNS.
#[test]
fn virtual_host_over_http() {
    let dir = tmp("vhost");
    let srv = Server::start(&dir.join("srv"), &["--listen", "127.0.0.1:0", "--domain", "s3.localhost"]);
    let port = srv.url("http").rsplit(':').next().unwrap().to_string();
    let t = format!("http://s3.localhost:{port}");
    let (v, _) = bench_json(
        &["sweep", "-t", &t, "--virtual-host", "--sizes", "4KiB", "--count", "4", "--verify"],
        &dir.join("vhost.json"),
    );
    check_clean(&v, 1);
    assert_eq!(phase(&v["results"][0], "get")["ops"], 4);
    // Path style against the same name still works.
    let (v, _) = bench_json(&["sweep", "-t", &t, "--sizes", "4KiB", "--count", "4"], &dir.join("path.json"));
    check_clean(&v, 1);
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}
