#!/usr/bin/env python3
"""Server CPU per MiB uploaded, per PUT body encoding, against the hashing floor and versitygw.

    bench/put_cpu.py [--secs 6] [--rounds 2] [--sizes 1048576,16777216] [--conc 8]
                     [--encodings unsigned,signed,...] [--no-vgw] [--out /tmp/put_cpu.txt]

Starts three servers on fresh roots under $ROOT_BASE (default /dev/shm), each with
`--durability none` (versitygw does not fsync either): s3hpc `--etag md5`, s3hpc `--etag fast`
and versitygw (posix backend; its ETags are MD5). Every (size, encoding) cell is measured on each
server in turn, round after round (interleaved, so load from others on the machine spreads over
all of them). The load client is bench/s3load (Go), whose `-enc` sends each encoding as a real
client library does (aws-sdk-go-v2 and minio-go, the library warp uses; see its header). Server
CPU is utime+stime of the server process over the measured phase (bench/cpu_window.py), divided
by the MiB uploaded. The floor is measured in the same run by
`cargo run --release -p s3hpc-bench --example put_floor` (the mandatory hashes alone over the
same bytes). Prints one table (median over rounds) and writes it to --out; raw results go to
--out with `.jsonl` appended.

Env: S3HPC_BIN (default target/release/s3hpc), VGW (default versitygw on PATH or ~/go/bin),
S3HPC_BASE (another s3hpc build, e.g. the one before a change: measured in the same rounds as
`base-md5` and `base-fast`).
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
AK, SK = "benchAccessKey01", "benchSecretKey01benchSecretKey01"
# s3load's `chunked-trailer` (minio-go's STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER) is not in the
# default set: minio-go v7.4.1 ends the checksum trailer line with LF and then sends an empty CRLF
# line before x-amz-trailer-signature, which s3hpc ("aws-chunked trailer does not end with CRLF")
# and versitygw both refuse (2026-11-26).
ENCODINGS = ["unsigned", "signed", "chunked", "trailer-crc32", "trailer-crc32c",
             "trailer-crc64nvme"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port):
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"nothing listens on {port}")


def go_env():
    env = dict(os.environ)
    env.pop("AWS_CA_BUNDLE", None)  # the Go SDK rejects it on a custom transport
    env["PATH"] = env.get("PATH", "") + ":/usr/local/go/bin"
    return env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--sizes", default="1048576,16777216")
    ap.add_argument("--conc", type=int, default=8)
    ap.add_argument("--encodings", default=",".join(ENCODINGS))
    ap.add_argument("--no-vgw", action="store_true")
    ap.add_argument("--out", default="/tmp/put_cpu.txt")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    encs = a.encodings.split(",")
    root_base = os.environ.get("ROOT_BASE", "/dev/shm")
    s3hpc = os.environ.get("S3HPC_BIN", os.path.join(REPO, "target/release/s3hpc"))
    work = tempfile.mkdtemp(prefix="put_cpu.", dir=root_base)
    load = os.path.join(work, "s3load")
    subprocess.run(["go", "build", "-o", load, "."], cwd=os.path.join(HERE, "s3load"), env=go_env(), check=True)
    floor = {}
    for size in sizes:
        mib = max(size >> 20, 1)
        out = subprocess.run(["cargo", "run", "-q", "--release", "-p", "s3hpc-bench", "--example", "put_floor", "--",
                              str(mib), "3"], cwd=REPO, check=True, capture_output=True, text=True).stdout
        print(out, end="", file=sys.stderr)
        floor[size] = json.loads(out.strip().splitlines()[-1])

    procs, servers = [], []

    def start(name, cmd, env=None):
        port = free_port()
        root = os.path.join(work, name)
        os.makedirs(root)
        cmd = [c.format(root=root, port=port) for c in cmd]
        log = open(os.path.join(work, name + ".log"), "w")
        p = subprocess.Popen(cmd, stdout=log, stderr=log, env=env)
        procs.append(p)
        wait_port(port)
        servers.append((name, port, p.pid))

    try:
        common = ["serve", "{root}", "--listen", "127.0.0.1:{port}", "--access-key", AK, "--secret-key", SK,
                  "--durability", "none"]
        start("s3hpc-md5", [s3hpc] + common + ["--etag", "md5"])
        start("s3hpc-fast", [s3hpc] + common + ["--etag", "fast"])
        base = os.environ.get("S3HPC_BASE")
        if base:
            start("base-md5", [base] + common + ["--etag", "md5"])
            start("base-fast", [base] + common + ["--etag", "fast"])
        if not a.no_vgw:
            vgw = os.environ.get("VGW") or shutil.which("versitygw") or os.path.expanduser("~/go/bin/versitygw")
            env = dict(os.environ, ROOT_ACCESS_KEY=AK, ROOT_SECRET_KEY=SK)
            start("versitygw", [vgw, "--access", AK, "--secret", SK, "--port", "127.0.0.1:{port}", "--keep-alive",
                                "posix", "{root}"], env)
        rows = []
        raw = open(a.out + ".jsonl", "w")
        for rnd in range(a.rounds):
            for size in sizes:
                for enc in encs:
                    for name, port, pid in servers:
                        cmd = [sys.executable, os.path.join(HERE, "cpu_window.py"), str(pid), "s3load", "--", load,
                               "-endpoint", f"http://127.0.0.1:{port}", "-ak", AK, "-sk", SK, "-bucket", "bench",
                               "-op", "put", "-size", str(size), "-c", str(a.conc), "-d", f"{a.secs}s",
                               "-enc", enc]
                        r = subprocess.run(cmd, env=go_env(), capture_output=True, text=True)
                        if r.returncode != 0:
                            print(f"{name} {enc} {size}: failed: {r.stderr.strip()[-300:]}", file=sys.stderr)
                            continue
                        d = json.loads(r.stdout.strip().splitlines()[-1])
                        mib_up = d["ops"] * size / (1 << 20)
                        d.update(round=rnd, server=name, enc=enc, size=size,
                                 cpu_ms_per_mib=round(d["cpu_s"] * 1e3 / mib_up, 3) if mib_up else None)
                        raw.write(json.dumps(d) + "\n")
                        raw.flush()
                        print(f"r{rnd} {size >> 20:>2} MiB {enc:<18} {name:<10} {d['mib_per_s']:7.1f} MiB/s "
                              f"cpu {d['cpu_ms_per_mib']} ms/MiB errors {d['errors']}", file=sys.stderr)
                        rows.append(d)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
        shutil.rmtree(work, ignore_errors=True)

    def med(server, enc, size, key):
        v = [r[key] for r in rows if (r["server"], r["enc"], r["size"]) == (server, enc, size)
             and r[key] is not None and not r["errors"]]
        return statistics.median(v) if v else None

    names = [n for n, _, _ in servers]
    short = {"s3hpc-md5": "md5", "s3hpc-fast": "fast", "base-md5": "b-md5", "base-fast": "b-fast", "versitygw": "vgw"}

    def fmt(x, w=6, p=2):
        return f"{x:{w}.{p}f}" if x is not None else " " * (w - 1) + "-"

    def ratio(x, y):
        return fmt(x / y, 5) if x is not None and y else "    -"

    lines = [f"put_cpu: {a.secs}s x {a.rounds} rounds, c={a.conc}, {os.cpu_count()} cores, "
             f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, load avg {open('/proc/loadavg').read().split()[0]}",
             "server CPU ms per MiB uploaded (median of rounds); fl-m, fl-f = floor (put_floor: mandatory hashes only)",
             "with MD5 ETags / fast ETags; m/fl = md5 / fl-m, f/fl = fast / fl-f; m/v, f/v = md5, fast / vgw",
             f"{'size':>6} {'encoding':<18} {'fl-m':>6} {'fl-f':>6} | "
             + " ".join(f"{short[n]:>6}" for n in names)
             + f" | {'m/fl':>5} {'f/fl':>5} {'m/v':>5} {'f/v':>5} | MiB/s " + "/".join(short[n] for n in names)]
    for size in sizes:
        for enc in encs:
            cpu = {n: med(n, enc, size, "cpu_ms_per_mib") for n in names}
            tp = [med(n, enc, size, "mib_per_s") for n in names]
            fm, ff = floor[size]["floor_ms_per_mib"][f"{enc}/md5"], floor[size]["floor_ms_per_mib"][f"{enc}/fast"]
            m, f, v = cpu.get("s3hpc-md5"), cpu.get("s3hpc-fast"), cpu.get("versitygw")
            lines.append(f"{size >> 20:>4}Mi {enc:<18} {fmt(fm)} {fmt(ff)} | " + " ".join(fmt(cpu[n]) for n in names)
                         + f" | {ratio(m, fm)} {ratio(f, ff)} {ratio(m, v)} {ratio(f, v)} | "
                         + "/".join(f"{x:.0f}" if x is not None else "-" for x in tp))
    hashes = {s: floor[s]["hash_ms_per_mib"] for s in sizes}
    lines.append("hash floors ms/MiB: " + json.dumps(hashes))
    text = "\n".join(lines)
    print(text)
    with open(a.out, "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
