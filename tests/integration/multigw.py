"""Helpers for running several `s3hpc serve` gateways on one shared root.

Used by test_multigateway.py, and runnable as the scale-out measurement of docs/perf/scale.md:

    cd tests/integration && ../../.venv/bin/python multigw.py scale --ranks 1,2,4
    (N gateways in N namespace hosts, `s3hpc bench` as one MPI job of N ranks, each rank using its
    host's gateway; see scripts/scale-bench), or `multigw.py load ...` (Python client)

Everything started here (gateways, nginx, haproxy, network namespaces) is stopped by the
context managers / fixtures that started it, also when a test fails.
"""
from __future__ import annotations

import contextlib
import datetime
import hashlib
import hmac
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote

from conftest import REGION, REPO, make_client, s3hpc_bin  # the http suite's helpers

ACCESS_KEY = "scaleAccessKey1"
SECRET_KEY = "scaleSecretKey1/shared+by+all+gateways"
NETNS_SCRIPT = REPO / "scripts" / "netns-hosts"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_tcp(host: str, port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class Gateway:
    """One `s3hpc serve ROOT --listen HOST:0` process; `prefix` runs it elsewhere (ip netns exec)."""

    def __init__(self, root, host="127.0.0.1", prefix=(), extra=(), name="gw",
                 access_key=ACCESS_KEY, secret_key=SECRET_KEY):
        self.root, self.host, self.prefix, self.extra, self.name = str(root), host, list(prefix), list(extra), name
        self.access_key, self.secret_key = access_key, secret_key
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.output: list[str] = []
        self._found = threading.Event()

    @property
    def argv(self):
        creds = ["--access-key", self.access_key, "--secret-key", self.secret_key] if self.access_key else []
        return [*self.prefix, s3hpc_bin(), "serve", self.root, "--listen", f"{self.host}:0",
                "--backend", "posix", *creds, *self.extra]

    def start(self, timeout: float = 30.0) -> "Gateway":
        self.launch()
        return self.wait_ready(timeout)

    def launch(self) -> None:
        """Start the process without waiting (several gateways can start at the same moment)."""
        env = {k: v for k, v in os.environ.items() if k not in ("S3HPC_ACCESS_KEY", "S3HPC_SECRET_KEY")}
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace",
                                     start_new_session=True, env=env)
        pat = re.compile(re.escape(self.host) + r":(\d+)")

        def reader():
            for line in self.proc.stdout:
                self.output.append(line)
                if self.port is None:
                    for m in pat.finditer(line):
                        if int(m.group(1)) != 0:
                            self.port = int(m.group(1))
                            self._found.set()
                            break
            self._found.set()

        self._reader = threading.Thread(target=reader, daemon=True, name=f"{self.name}-out")
        self._reader.start()

    def wait_ready(self, timeout: float = 30.0) -> "Gateway":
        if not self._found.wait(timeout) or self.port is None:
            self.stop()
            raise RuntimeError(f"{self.name}: no bound {self.host}:PORT line within {timeout}s; "
                               f"argv={self.argv} output:\n{''.join(self.output[:20])[:3000]}")
        wait_tcp(self.host, self.port)
        return self

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def endpoint(self) -> str:
        return f"http://{self.addr}"

    def client(self, **kw):
        return s3_client(self.endpoint, **kw)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig=signal.SIGKILL) -> None:
        if self.alive():
            self.proc.send_signal(sig)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        # The reader ends at EOF of the pipe (the process and any children holding it are gone).
        if getattr(self, "_reader", None) is not None:
            self._reader.join(5)


class Cluster:
    """N gateways on one root. `hosts` (optional) are (netns-name, address) pairs, one per gateway."""

    def __init__(self, root, n=3, hosts=None, extra=()):
        self.root = Path(root)
        self.gateways: list[Gateway] = []
        self.hosts = hosts
        for i in range(n):
            if hosts:
                ns, addr = hosts[i]
                g = Gateway(root, host=addr, prefix=["ip", "netns", "exec", ns], extra=extra, name=f"gw{i}@{ns}")
            else:
                g = Gateway(root, extra=extra, name=f"gw{i}")
            self.gateways.append(g)

    def __enter__(self):
        try:
            for g in self.gateways:
                g.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        for g in self.gateways:
            g.stop()

    def clients(self, **kw):
        return [g.client(**kw) for g in self.gateways]

    def describe(self) -> str:
        return ", ".join(f"{g.name}={g.addr}" for g in self.gateways)


def s3_client(endpoint: str, access_key=ACCESS_KEY, secret_key=SECRET_KEY, **cfg):
    return make_client(endpoint, access_key=access_key, secret_key=secret_key,
                       connect_timeout=10, read_timeout=120, **cfg)


# ---------------------------------------------------------------------------------------------
# Minimal SigV4 (header auth, UNSIGNED-PAYLOAD) for raw requests: half-sent uploads, requests
# signed for one Host and sent to another gateway (what a load balancer does), the load generator.

def sigv4_headers(method: str, host: str, path: str, query=(), headers=None,
                  access_key=ACCESS_KEY, secret_key=SECRET_KEY, payload_hash="UNSIGNED-PAYLOAD"):
    now = datetime.datetime.now(datetime.timezone.utc)
    amzdate = now.strftime("%Y%m%dT%H%M%SZ")
    day = amzdate[:8]
    h = {k.lower(): str(v) for k, v in (headers or {}).items()}
    h["host"] = host
    h["x-amz-date"] = amzdate
    h["x-amz-content-sha256"] = payload_hash
    signed = sorted(k for k in h if k in ("host", "content-md5", "content-type") or k.startswith("x-amz-"))
    cquery = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in sorted(query))
    creq = "\n".join([method, quote(path, safe="/-_.~"), cquery,
                      "".join(f"{k}:{' '.join(h[k].split())}\n" for k in signed), ";".join(signed), payload_hash])
    scope = f"{day}/{REGION}/s3/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope, hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + secret_key).encode()
    for part in (day, REGION, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    h["authorization"] = (f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
                          f"SignedHeaders={';'.join(signed)}, Signature={sig}")
    return h


def raw_request(addr: str, method: str, path: str, body: bytes = b"", host_header: str | None = None,
                query=(), timeout=30):
    """Signed request to addr (HOST:PORT), signed for host_header (default addr). Returns (status, headers, body)."""
    host, port = addr.rsplit(":", 1)
    hdrs = sigv4_headers(method, host_header or addr, path, query)
    hdrs["content-length"] = str(len(body))
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        qs = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in query)
        conn.putrequest(method, quote(path, safe="/-_.~") + (f"?{qs}" if qs else ""), skip_host=True,
                        skip_accept_encoding=True)
        for k, v in hdrs.items():
            conn.putheader(k, v)
        conn.endheaders(body)
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


class PartialUpload:
    """A PUT whose headers promise `size` bytes, of which only part is ever sent (raw socket)."""

    def __init__(self, addr: str, bucket: str, key: str, size: int):
        host, port = addr.rsplit(":", 1)
        hdrs = sigv4_headers("PUT", addr, f"/{bucket}/{key}")
        hdrs["content-length"] = str(size)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        head = f"PUT {quote(f'/{bucket}/{key}', safe='/-_.~')} HTTP/1.1\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
        self.sock.sendall(head.encode())
        self.sent = 0

    def send(self, data: bytes):
        self.sock.sendall(data)
        self.sent += len(data)

    def close(self):
        with contextlib.suppress(OSError):
            self.sock.close()


# ---------------------------------------------------------------------------------------------
# Network-namespace hosts (scripts/netns-hosts)

class NetnsUnavailable(Exception):
    pass


class NetnsHosts:
    """`scripts/netns-hosts up N` with a tag and /24 unique to this process; `down` on exit."""

    _count = 0

    def __init__(self, n: int):
        self.n = n
        NetnsHosts._count += 1
        self.tag = f"s3t{os.getpid() % 100000}x{NetnsHosts._count % 10}"
        self.net = None
        self.hosts: list[tuple[str, str]] = []

    def __enter__(self):
        if os.geteuid() != 0:
            raise NetnsUnavailable(f"not root (euid {os.geteuid()}): cannot create network namespaces")
        if not shutil.which("ip"):
            raise NetnsUnavailable("iproute2 `ip` not installed")
        routes = subprocess.run(["ip", "-4", "route", "show"], capture_output=True, text=True).stdout
        for third in [(os.getpid() + NetnsHosts._count * 7 + i) % 230 + 20 for i in range(40)]:
            net = f"10.77.{third}"
            if f"{net}.0/24" not in routes:
                self.net = net
                break
        else:
            raise NetnsUnavailable("no free 10.77.x.0/24")
        r = subprocess.run([str(NETNS_SCRIPT), "up", str(self.n), "--tag", self.tag, "--net", self.net],
                           capture_output=True, text=True)
        if r.returncode != 0:
            self.down()
            raise NetnsUnavailable(f"scripts/netns-hosts up failed: {r.stderr.strip()}")
        self.hosts = [tuple(line.split()) for line in r.stdout.split("\n") if line.strip()]
        return self

    def __exit__(self, *exc):
        self.down()

    def kill_leftovers(self):
        for ns, _ in self.hosts:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for p in pids:
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(p), signal.SIGKILL)

    def down(self):
        self.kill_leftovers()
        subprocess.run([str(NETNS_SCRIPT), "down", "--tag", self.tag], capture_output=True, text=True)


# ---------------------------------------------------------------------------------------------
# Load balancers, rendered from deploy/ with this run's addresses

def render_nginx(gateways: list[str], listen_port: int, workdir: Path) -> Path:
    """deploy/nginx.conf with our upstreams, listen address, log and temp paths substituted."""
    text = (REPO / "deploy" / "nginx.conf").read_text()
    servers = "".join(f"        server {a} max_fails=3 fail_timeout=10s;\n" for a in gateways)
    text, n = re.subn(r"(?m)^(\s*server \d+\.\d+\.\d+\.\d+:\d+[^;]*;\n)+", servers, text, count=1)
    assert n == 1, "deploy/nginx.conf: upstream server lines not found"
    text, n = re.subn(r"(?m)^(\s*)listen 9000;", rf"\1listen 127.0.0.1:{listen_port};", text)
    assert n == 1, "deploy/nginx.conf: `listen 9000;` not found"
    text, n = re.subn(r"access_log \S+ s3hpc;", f"access_log {workdir}/access.log s3hpc;", text)
    assert n == 1, "deploy/nginx.conf: access_log line not found"
    # Per-run temp dirs, and the upstream that served each response (only for the test).
    extra = "".join(f"    {d}_temp_path {workdir}/{d};\n" for d in
                    ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    extra += "    add_header X-S3hpc-Upstream $upstream_addr always;\n"
    text = text.replace("http {\n", "http {\n" + extra, 1)
    conf = workdir / "nginx.conf"
    conf.write_text(text)
    return conf


@contextlib.contextmanager
def run_nginx(gateways: list[str], workdir: Path):
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
    if not nginx:
        raise RuntimeError("nginx is not installed (scripts/install-test-deps installs it)")
    port = free_port()
    conf = render_nginx(gateways, port, workdir)
    glob = f"daemon off; pid {workdir}/nginx.pid;"
    if os.geteuid() == 0:
        glob += " user root;"   # workers run as the test user, not nobody/www-data
    base = [nginx, "-p", str(workdir), "-c", str(conf), "-e", str(workdir / "error.log"), "-g", glob]
    t = subprocess.run(base + ["-t"], capture_output=True, text=True)
    if t.returncode != 0:
        raise RuntimeError(f"nginx -t failed: {t.stderr}")
    proc = subprocess.Popen(base, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(workdir / "stderr.log", "w"), start_new_session=True)
    try:
        try:
            wait_tcp("127.0.0.1", port)
        except OSError:
            raise RuntimeError(f"nginx did not come up: {(workdir / 'error.log').read_text()[-2000:]}")
        yield f"127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGQUIT)      # graceful stop; then make sure
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def render_haproxy(gateways: list[str], listen_port: int, workdir: Path) -> Path:
    text = (REPO / "deploy" / "haproxy.cfg").read_text()
    servers = "".join(f"    server gw{i + 1} {a} check inter 2s\n" for i, a in enumerate(gateways))
    text, n = re.subn(r"(?m)^(\s*server gw\d+ [^\n]*\n)+", servers, text, count=1)
    assert n == 1, "deploy/haproxy.cfg: server lines not found"
    text, n = re.subn(r"(?m)^(\s*)bind :9000$", rf"\1bind 127.0.0.1:{listen_port}", text)
    assert n == 1, "deploy/haproxy.cfg: `bind :9000` not found"
    text = re.sub(r"(?m)^(\s*)maxconn \d+$", r"\1maxconn 1000", text)   # fits any test box's fd limit
    # Only for the test: tell the client which gateway served the response.
    text = text.replace("backend s3hpc_gateways\n",
                        "backend s3hpc_gateways\n    http-response set-header X-S3hpc-Upstream %s\n", 1)
    cfg = workdir / "haproxy.cfg"
    cfg.write_text(text)
    return cfg


@contextlib.contextmanager
def run_haproxy(gateways: list[str], workdir: Path):
    haproxy = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy", os.X_OK) else None)
    if not haproxy:
        raise RuntimeError("haproxy is not installed (scripts/install-test-deps installs it)")
    port = free_port()
    cfg = render_haproxy(gateways, port, workdir)
    t = subprocess.run([haproxy, "-c", "-f", str(cfg)], capture_output=True, text=True)
    if t.returncode != 0:
        raise RuntimeError(f"haproxy -c failed: {t.stdout}{t.stderr}")
    proc = subprocess.Popen([haproxy, "-db", "-f", str(cfg)], stdin=subprocess.DEVNULL,
                            stdout=open(workdir / "haproxy.out", "w"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        try:
            wait_tcp("127.0.0.1", port)
        except OSError:
            raise RuntimeError(f"haproxy did not come up: {(workdir / 'haproxy.out').read_text()[-2000:]}")
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


# ---------------------------------------------------------------------------------------------
# Load generator for docs/perf/scale.md: threads with keep-alive http.client connections and the
# SigV4 signer above (no boto3: it costs ~1 ms of CPU per request). Client threads are spread
# round-robin over the gateways. Python's GIL caps the client at about one core.

def _load_worker(addr, bucket, size, op, stop_at, nkeys, wid, out):
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    body = bytes([wid % 251]) * size
    ops = nbytes = errors = 0
    i = 0
    while time.monotonic() < stop_at:
        key = f"w{wid}/k{i % nkeys}"
        i += 1
        path = f"/{bucket}/{key}"
        method = "PUT" if op == "put" else "GET"
        h = sigv4_headers(method, addr, path)
        if op == "put":
            h["content-length"] = str(size)
        try:
            conn.request(method, path, body=body if op == "put" else None, headers=h)
            r = conn.getresponse()
            data = r.read()
            if r.status != 200:
                errors += 1
                continue
            ops += 1
            nbytes += size if op == "put" else len(data)
        except (OSError, http.client.HTTPException):
            errors += 1
            conn.close()
            conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.close()
    out.append((ops, nbytes, errors))


def run_load(addrs, bucket, size, op, seconds, threads, nkeys):
    out: list = []
    stop_at = time.monotonic() + seconds
    t0 = time.monotonic()
    ts = [threading.Thread(target=_load_worker, args=(addrs[w % len(addrs)], bucket, size, op, stop_at,
                                                      nkeys, w, out)) for w in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    el = time.monotonic() - t0
    ops = sum(o[0] for o in out)
    return {"ops_s": ops / el, "mib_s": sum(o[1] for o in out) / el / 2**20, "errors": sum(o[2] for o in out),
            "ops": ops, "seconds": el}


# ---------------------------------------------------------------------------------------------
# `s3hpc bench` as one job of N ranks: MPI ranks in namespace hosts, or --procs on loopback

def binary_has_mpi(binary: str) -> bool:
    """Whether `binary` was built with the `mpi` feature (the no-MPI build carries this message)."""
    with open(binary, "rb") as f:
        return b"this s3hpc was built without MPI" not in f.read()


def mpi_mode(binary: str) -> tuple[str, str]:
    """("mpi", why) when mpirun and an MPI-enabled binary are there, else ("procs", why not)."""
    if not shutil.which("mpirun"):
        return "procs", "mpirun not installed (apt-get install openmpi-bin libopenmpi-dev)"
    if not binary_has_mpi(binary):
        return "procs", f"{binary} built without the `mpi` feature (cargo build --features mpi)"
    return "mpi", "mpirun + s3hpc built with the mpi feature"


def rank_wrapper(workdir: Path, namespaces: list[str]) -> Path:
    """The program mpirun starts: puts MPI rank r into namespace host r mod n, then runs argv."""
    w = workdir / "rank-in-netns.sh"
    cases = "".join(f"  {i}) ns={ns} ;;\n" for i, ns in enumerate(namespaces))
    w.write_text("#!/bin/sh\n"
                 "# MPI rank r runs in network-namespace host r mod n (written by multigw.py)\n"
                 "r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-0}}}\n"
                 f"case $((r % {len(namespaces)})) in\n{cases}esac\n"
                 'exec ip netns exec "$ns" "$@"\n')
    w.chmod(0o755)
    return w


def bench_job(ranks: int, endpoints: list[str], bench_args: list[str], workdir: Path, mode: str,
              namespaces: list[str] | None = None, bridge: str | None = None, timeout: float = 900):
    """Run `s3hpc bench <bench_args>` as one job of `ranks` ranks against the one logical target
    `endpoints` (comma-joined; each rank uses its own: `--spread local` in namespaces, else
    round-robin) and return (rank 0's --json result, the command line)."""
    js = workdir / f"job-{ranks}-{len(list(workdir.iterdir()))}.json"
    target = ",".join(endpoints)
    spread = "local" if namespaces else "round-robin"
    bench = [s3hpc_bin(), "bench", *bench_args, "-t", target, "--spread", spread, "-q", "--json", str(js)]
    env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
    if mode == "mpi":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        argv = ["mpirun", "-np", str(ranks), "--oversubscribe", "--mca", "btl", "self,vader",
                "-x", "AWS_ACCESS_KEY_ID", "-x", "AWS_SECRET_ACCESS_KEY"]
        if namespaces:
            # The ranks reach mpirun's PMIx server over TCP; in a namespace its loopback is not
            # mpirun's, so the server listens on the hosts' bridge. Rank-to-rank MPI traffic uses
            # shared memory (vader: files in /dev/shm, not the network).
            env.update(PMIX_MCA_ptl_tcp_if_include=bridge, PMIX_MCA_ptl_tcp_remote_connections="1")
            argv += [str(rank_wrapper(workdir, namespaces))]
        argv += bench
    else:
        argv = bench + ["--procs", str(ranks)]
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    import json
    return json.loads(js.read_text()), " ".join(argv)


@contextlib.contextmanager
def hosts_or_loopback(n: int, want_netns: bool = True):
    """n namespace hosts ((ns, addr) pairs, bridge name), or (None, None, why) on loopback."""
    if want_netns:
        try:
            with NetnsHosts(n) as h:
                yield h.hosts, f"{h.tag}br", f"{n} network-namespace hosts {h.net}.11-1{n}"
                return
        except NetnsUnavailable as e:
            why = f"loopback: network namespaces unavailable ({e})"
    else:
        why = "loopback (namespaces not requested)"
    yield None, None, why


def main_scale(a):
    mode, why = mpi_mode(s3hpc_bin())
    if a.procs:
        mode, why = "procs", "--procs requested"
    print(f"# ranks via {mode}: {why}")
    sizes = a.sizes
    rows, base = [], {}
    io500 = None
    counts = [int(x) for x in a.ranks.split(",")]
    for n in counts:
        with hosts_or_loopback(n, not a.loopback) as (hosts, bridge, where):
            root = Path(tempfile.mkdtemp(prefix="s3hpc-scale-"))
            work = Path(tempfile.mkdtemp(prefix="s3hpc-scale-job-"))
            try:
                with Cluster(root, n=n, hosts=hosts, extra=a.extra.split()) as c:
                    eps = [g.endpoint for g in c.gateways]
                    ns = [h[0] for h in hosts] if hosts else None
                    res, cmd = bench_job(n, eps, ["sweep", "--sizes", sizes, "--duration", a.duration, "-c",
                                                  str(a.concurrency)], work, mode, ns, bridge)
                    print(f"# {n} gateways + {n} ranks, {where}\n#   {cmd}", flush=True)
                    r = res["results"][0]
                    used = sorted({x["endpoint"] for x in r.get("ranks", [])}) or eps
                    for ph in r["phases"]:
                        key = (ph["object_size"], ph["name"])
                        if n == counts[0]:
                            base[key] = ph
                        b = base.get(key)
                        x = ph["ops_per_sec"] / b["ops_per_sec"] if b and b["ops_per_sec"] else float("nan")
                        bal = ph.get("balance") or {}
                        rows.append((n, ph, x, x / (n / counts[0]), bal, len(used)))
                    if n == max(counts) and not a.no_io500:
                        io500, cmd = bench_job(n, eps, ["io500", "--stonewall", a.stonewall, "-c", "2",
                                                        "--max-bytes", "256MiB", "--max-files", "20000"],
                                               work, mode, ns, bridge)
                        print(f"# io500: {n} ranks, {where}\n#   {cmd}", flush=True)
            finally:
                shutil.rmtree(root, ignore_errors=True)
                shutil.rmtree(work, ignore_errors=True)
    print("\n| gateways = ranks | size | phase | ops/s | MiB/s | speed-up | efficiency | per-rank ops/s min / max | errors |")
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|")
    for n, ph, x, eff, bal, _ in rows:
        size = ph["object_size"]
        sz = f"{size // 1024} KiB" if size < 1 << 20 else f"{size >> 20} MiB"
        mm = f"{bal['ops_per_sec_min']:.0f} / {bal['ops_per_sec_max']:.0f}" if bal else "-"
        mib = f"{ph['mib_per_sec']:.1f}" if ph["bytes"] else "-"
        print(f"| {n} | {sz} | {ph['name']} | {ph['ops_per_sec']:.0f} | {mib} | {x:.2f} | "
              f"{eff * 100:.0f} % | {mm} | {ph['errors']} |")
    if io500:
        s = io500["results"][0]["summary"]
        print(f"\n## io500 across {max(counts)} hosts (stonewall {a.stonewall})\n")
        print("| phase | value | unit | seconds |\n|---|---:|---|---:|")
        for k in sorted(s):
            if k.endswith("_gib_s") or k.endswith("_kiops"):
                if "_stonewall_" in k or k.startswith("score_"):
                    continue
                name, unit = k.rsplit("_", 2)[0], "GiB/s" if k.endswith("_gib_s") else "kIOPS"
                print(f"| {name} | {s[k]:.4f} | {unit} | {s.get(name + '_seconds', 0):.2f} |")
        print(f"\nscore: **{s['score_total']:.4f}** (bw {s['score_bw_gib_s']:.4f} GiB/s, md {s['score_md_kiops']:.4f} kIOPS); "
              f"find matched {s.get('find_matched', 0):.0f} of {s.get('find_expected', 0):.0f}; wear-out seconds: "
              + ", ".join(f"{k.split('_')[0]} {s[k]:.2f}" for k in sorted(s) if k.endswith("_wearout_seconds")))
    print(f"\n# loadavg={os.getloadavg()[0]:.1f} (after)  cpus={os.cpu_count()}")


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="multigw.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    bp = sub.add_parser("scale", help="aggregate throughput of N gateways + N bench ranks (one MPI job, "
                                      "ranks in namespace hosts; --procs on loopback without MPI)")
    bp.add_argument("--ranks", default="1,2,4", help="gateways = ranks per run")
    bp.add_argument("--sizes", default="4KiB,1MiB")
    bp.add_argument("--duration", default="3s", help="per phase")
    bp.add_argument("--concurrency", type=int, default=8, help="requests in flight per rank")
    bp.add_argument("--stonewall", default="2s", help="io500 write phases")
    bp.add_argument("--no-io500", action="store_true")
    bp.add_argument("--loopback", action="store_true", help="no namespaces: gateways on 127.0.0.1")
    bp.add_argument("--procs", action="store_true", help="--procs instead of mpirun")
    bp.add_argument("--extra", default="", help="extra `s3hpc serve` flags, space-separated")
    lp = sub.add_parser("load", help="same with a Python threaded client (http.client + own SigV4 signer)")
    lp.add_argument("--gateways", default="1,2,4")
    lp.add_argument("--seconds", type=float, default=15)
    lp.add_argument("--threads", type=int, default=8, help="client threads (spread over gateways)")
    lp.add_argument("--size", type=int, default=64 * 1024)
    lp.add_argument("--keys", type=int, default=32, help="distinct keys per client thread")
    lp.add_argument("--ops", default="put,get")
    lp.add_argument("--extra", default="", help="extra `s3hpc serve` flags, space-separated")
    a = ap.parse_args(argv)
    print(f"# {' '.join(sys.argv)}\n# binary {s3hpc_bin()}  cpus={os.cpu_count()}  "
          f"loadavg={os.getloadavg()[0]:.1f} (before)")
    if a.cmd == "scale":
        return main_scale(a)
    return main_load(a)


def main_load(a):
    print(f"# client: python {sys.version.split()[0]} threads={a.threads} size={a.size} "
          f"seconds={a.seconds} keys/thread={a.keys}")
    print("gateways op   ops/s      MiB/s   errors  efficiency(vs 1 gw, per-gateway)")
    base = {}
    for n in [int(x) for x in a.gateways.split(",")]:
        root = Path(tempfile.mkdtemp(prefix="s3hpc-scale-"))
        try:
            with Cluster(root, n=n, extra=a.extra.split()) as c:
                cl = c.gateways[0].client()
                bucket = f"scale{n}"
                cl.create_bucket(Bucket=bucket)
                addrs = [g.addr for g in c.gateways]
                for op in a.ops.split(","):
                    if op == "get":   # make sure every key exists (the put phase may not have reached all)
                        for w in range(a.threads):
                            for k in range(a.keys):
                                s, _, _ = raw_request(addrs[0], "PUT", f"/{bucket}/w{w}/k{k}",
                                                      bytes([w % 251]) * a.size)
                                assert s == 200, s
                    r = run_load(addrs, bucket, a.size, op, a.seconds, a.threads, a.keys)
                    base.setdefault(op, r["ops_s"])
                    eff = r["ops_s"] / base[op] / n
                    print(f"{n:8d} {op:4s} {r['ops_s']:8.1f} {r['mib_s']:9.1f} {r['errors']:7d}  "
                          f"x{r['ops_s'] / base[op]:.2f} total, {eff * 100:.0f}% per gateway", flush=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
