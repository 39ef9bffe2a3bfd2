#!/usr/bin/env bash
# Scale-out of N gateways on one RAM-backed root, driven by ONE `s3hpc bench` process that
# spreads its connections over all of them, with client and server CPU per request and each
# gateway's peak RSS.
#
#   bench/scale_out.sh --bin PATH --out FILE [--gateways 1,2,4] [--gateway-cores LIST]
#       [--gateway-cores-each K] [--client-cores LIST] [--duration 5s] [--conc-per-gateway 16]
#       [--root DIR] [--ops head4k,get4k,put4k,get1m,put1m] [--serve-args "..."] [--warp PATH]
#
# This 2-core machine:  bench/scale_out.sh --bin target/release/s3hpc --gateways 1 \
#                           --gateway-cores 0 --client-cores 1 --out /tmp/scale.md
# A 16-core host:       bench/scale_out.sh --bin BIN --gateways 1,2,4 --gateway-cores-each 1 \
#                           --gateway-cores 0-7 --client-cores 8-15 --out scale.md
#
# For each N: N `s3hpc serve ROOT --threads K` (K = --gateway-cores-each), gateway i pinned with
# taskset to the i-th K cores of --gateway-cores (default: every core not in --client-cores);
# then for each operation one `s3hpc bench mixed --mix OP=100 --overwrite` pinned to
# --client-cores, -c (conc-per-gateway x N), against `-t http://gw1,http://gw2,...` (one target,
# connections round-robin over the gateways). The client's and the gateways' utime+stime
# (/proc/PID/stat, sampled every 10 ms) are taken over the measured phase only (the last
# `seconds` before the client exits: it prepares its objects first and, with --keep, exits right
# after the phase). Peak RSS = each gateway's VmHWM after its N's runs (the largest shown).
# The root (default: a fresh directory under /dev/shm) is removed at the end; everything started
# is stopped on exit. Needs python3 and taskset (without taskset it runs unpinned and says so).
# --warp PATH: each row is also run with MinIO's warp (stat/get/put, --host-select roundrobin over
# the same gateways, same concurrency, pinned to the same client cores) right after `s3hpc bench`,
# so the client CPU per request of both load generators is compared in one run. warp's window is
# from its "Benchmark starting" line to its "Saving benchmark data" line; its ops are its reported
# average obj/s times that window (its uploads before the window are not counted).
# --budget SECONDS (default 330): no further N is started once it is spent, so an unattended run
# ends in time; the table says which N were skipped.
set -euo pipefail
exec python3 - "$@" <<'PY'
import argparse, json, os, re, shutil, signal, subprocess, sys, tempfile, time

TCK = os.sysconf("SC_CLK_TCK")
OPS = {  # name: (mix op, size, label)
    "head4k": ("head", 4096, "HEAD 4 KiB"),
    "get4k": ("get", 4096, "GET 4 KiB"),
    "put4k": ("put", 4096, "PUT 4 KiB"),
    "get1m": ("get", 1 << 20, "GET 1 MiB"),
    "put1m": ("put", 1 << 20, "PUT 1 MiB"),
}
KEY, SECRET = "scaleOutKey0001", "scale-out-secret-0123456789abcdef"


def cores(spec):
    out = []
    for part in filter(None, spec.split(",")):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def ap():
    p = argparse.ArgumentParser(prog="bench/scale_out.sh")
    p.add_argument("--bin", required=True, help="the s3hpc binary (a release build)")
    p.add_argument("--out", required=True, help="write the table (markdown) here")
    p.add_argument("--gateways", default="1", help="gateway counts, e.g. 1,2,4")
    p.add_argument("--gateway-cores", default=None, help="cores for the gateways (default: all but the client's)")
    p.add_argument("--gateway-cores-each", type=int, default=1, help="cores (and --threads) per gateway")
    p.add_argument("--client-cores", required=True, help="cores of the bench client, e.g. 8-15")
    p.add_argument("--duration", default="5s", help="measured phase per operation")
    p.add_argument("--conc-per-gateway", type=int, default=16, help="requests in flight per gateway")
    p.add_argument("--root", default=None, help="the shared root (default: fresh under /dev/shm)")
    p.add_argument("--ops", default=",".join(OPS), help="operations: " + ",".join(OPS))
    p.add_argument("--serve-args", default="", help="extra `s3hpc serve` arguments")
    p.add_argument("--warp", default=None, help="also run each row with this warp binary (client CPU compared)")
    p.add_argument("--budget", type=float, default=330, help="start no further N after this many seconds")
    return p.parse_args(sys.argv[1:])


TASKSET = shutil.which("taskset")


def pinned(cpus):
    return ["taskset", "-c", cpus] if TASKSET else []


def ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        v = f.read().rsplit(")", 1)[1].split()
    return int(v[11]) + int(v[12])


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def parse_secs(d):
    m = re.fullmatch(r"([\d.]+)(ms|s|m)?", d.strip())
    if not m:
        sys.exit(f"--duration {d!r}: expected e.g. 5s")
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, None: 1}[m.group(2)]


def loadavg():
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


def at(samples, t):
    """Value at time t, interpolated between (time, value) samples."""
    if t <= samples[0][0]:
        return samples[0][1]
    for (t0, c0), (t1, c1) in zip(samples, samples[1:]):
        if t0 <= t <= t1:
            return c0 + (c1 - c0) * ((t - t0) / (t1 - t0) if t1 > t0 else 1.0)
    return samples[-1][1]


class Gateways:
    def __init__(self, a, n, root, pool):
        self.procs, self.endpoints, self.pins = [], [], []
        k = a.gateway_cores_each
        for i in range(n):
            pin = ",".join(map(str, pool[i * k:(i + 1) * k]))
            log = open(os.path.join(root, f".gw{n}-{i}.log"), "w+")
            argv = [*pinned(pin), a.bin, "serve", root, "--listen", "127.0.0.1:0", "--backend", "posix",
                    "--threads", str(k), "--access-key", KEY, "--secret-key", SECRET, *a.serve_args.split()]
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
            self.procs.append((p, log))
            self.pins.append(pin)
        for p, log in self.procs:
            for _ in range(300):
                log.seek(0)
                m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", log.read())
                if m:
                    self.endpoints.append(m.group(1))
                    break
                if p.poll() is not None:
                    break
                time.sleep(0.05)
            else:
                m = None
            if not m:
                log.seek(0)
                sys.exit(f"gateway did not start: {' '.join(p.args)}\n{log.read()[-2000:]}")
        self.pids = [p.pid for p, _ in self.procs]

    def stop(self):
        for p, log in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p, log in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            log.close()


def watch(cli, pids, deadline):
    """Sample the CPU ticks of the client process `cli` and of the gateways `pids` every 10 ms
    until the client exits (killed after `deadline` seconds); returns (gateway samples, client
    samples, end time), each sample (monotonic time, ticks)."""
    srv = [[(time.monotonic(), ticks(p))] for p in pids]
    csamp = [(time.monotonic(), 0)]
    while True:
        now = time.monotonic()
        try:
            csamp.append((now, ticks(cli.pid)))
        except (OSError, ValueError, IndexError):
            pass
        for s, p in zip(srv, pids):
            s.append((now, ticks(p)))
        # Reaped here with wait4 for the client's total CPU at exit (its rusage; the last /proc
        # sample may be 10 ms old).
        pid, status, ru = os.wait4(cli.pid, os.WNOHANG)
        if pid:
            cli.returncode = os.waitstatus_to_exitcode(status)
            break
        if now - srv[0][0][0] > deadline:
            cli.kill()
        time.sleep(0.01)
    end = time.monotonic()
    for s, p in zip(srv, pids):
        s.append((end, ticks(p)))
    csamp.append((end, round((ru.ru_utime + ru.ru_stime) * TCK, 3)))
    return srv, csamp, end


def run_op(a, gws, name, n, bucket, wdir):
    op, size, label = OPS[name]
    conc = a.conc_per_gateway * n
    objects = max(conc, 256) if size <= 65536 else conc
    js = os.path.join(wdir, f"{name}-{n}.json")
    argv = [*pinned(a.client_cores), a.bin, "bench", "mixed", "-t", ",".join(gws.endpoints),
            "--mix", f"{op}=100", "--overwrite", "--objects", str(objects), "--size", str(size),
            "--duration", a.duration, "-c", str(conc), "--bucket", bucket, "--keep", "-q", "--json", js]
    env = dict(os.environ, AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET)
    # A client that hangs is killed after its phase + 90 s (preparing included).
    cli = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env)
    srv, csamp, end = watch(cli, gws.pids, parse_secs(a.duration) + 90)
    if cli.returncode != 0:
        sys.exit(f"bench failed ({cli.returncode}): {' '.join(argv)}")
    with open(js) as f:
        r = json.load(f)["results"][0]
    ph = [p for p in r["phases"] if p["name"] == "mixed" and p["op"] == op][0]
    secs = ph["seconds"]
    t0 = end - secs
    srv_cpu = sum(s[-1][1] - at(s, t0) for s in srv) / TCK
    cli_cpu = (csamp[-1][1] - at(csamp, t0)) / TCK
    return dict(n=n, op=name, label=label, size=size, conc=conc, ops=ph["ops"], errors=r["errors"],
                client="bench", seconds=secs, ops_s=ph["ops"] / secs, mb_s=ph["bytes"] / secs / 1e6,
                client_us=1e6 * cli_cpu / max(ph["ops"], 1), server_us=1e6 * srv_cpu / max(ph["ops"], 1),
                client_busy=cli_cpu / secs, server_busy=srv_cpu / secs)


WARP_OP = {"head": "stat", "get": "get", "put": "put"}


def run_warp(a, gws, name, n, wdir):
    """One row driven by warp instead of `s3hpc bench`: same gateways, concurrency, client cores."""
    import threading
    op, size, label = OPS[name]
    conc = a.conc_per_gateway * n
    objects = max(conc, 256) if size <= 65536 else conc
    hosts = ",".join(e.split("://", 1)[1] for e in gws.endpoints)
    argv = [*pinned(a.client_cores), a.warp, "--no-color", WARP_OP[op], "--host", hosts, "--host-select", "roundrobin",
            "--access-key", KEY, "--secret-key", SECRET, "--obj.size", str(size), "--duration", a.duration,
            "--concurrent", str(conc), "--bucket", f"warp-{n}-{name}-{os.getpid()}", "--noclear",
            "--benchdata", os.path.join(wdir, f"warp-{name}-{n}")]
    if op != "put":
        argv += ["--objects", str(objects)]
    env = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}
    cli = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, errors="replace", env=env, cwd=wdir)
    marks, lines = {}, []

    def read():
        for line in cli.stdout:
            lines.append(line)
            for m in ("Benchmark starting", "Saving benchmark data"):
                if m in line and m not in marks:
                    marks[m] = time.monotonic()
    th = threading.Thread(target=read, daemon=True)
    th.start()
    srv, csamp, _ = watch(cli, gws.pids, parse_secs(a.duration) + 120)
    th.join(5)
    out = "".join(lines)
    t0, t1 = marks.get("Benchmark starting"), marks.get("Saving benchmark data")
    sec = re.search(r"Operation: " + WARP_OP[op].upper() + r".*?Average: [^\n]*?([\d.]+) obj/s", out, re.S)
    if cli.returncode != 0 or t0 is None or t1 is None or not sec:
        sys.exit(f"warp failed ({cli.returncode}): {' '.join(argv)}\n{out[-3000:]}")
    secs = parse_secs(a.duration)
    ops = float(sec.group(1)) * secs
    srv_cpu = sum(at(sm, t1) - at(sm, t0) for sm in srv) / TCK
    cli_cpu = (at(csamp, t1) - at(csamp, t0)) / TCK
    win = t1 - t0
    return dict(n=n, op=name, label=label, client="warp", size=size, conc=conc, ops=ops, errors=0,
                seconds=secs, ops_s=ops / secs, mb_s=0.0 if op == "head" else ops * size / secs / 1e6,
                client_us=1e6 * cli_cpu / max(ops, 1), server_us=1e6 * srv_cpu / max(ops, 1),
                client_busy=cli_cpu / win, server_busy=srv_cpu / win)


def main():
    a = ap()
    t_start = time.time()
    load0 = loadavg()
    if not TASKSET:
        print("note: no taskset here: gateways and client run UNPINNED", file=sys.stderr)
    counts = [int(x) for x in a.gateways.split(",")]
    ops = [o for o in a.ops.split(",") if o]
    for o in ops:
        if o not in OPS:
            sys.exit(f"--ops: unknown {o!r} (known: {', '.join(OPS)})")
    client = cores(a.client_cores)
    pool = cores(a.gateway_cores) if a.gateway_cores else [c for c in sorted(os.sched_getaffinity(0)) if c not in client]
    need = max(counts) * a.gateway_cores_each
    if len(pool) < need:
        sys.exit(f"{max(counts)} gateways x {a.gateway_cores_each} cores need {need} gateway cores; have {pool}")
    if set(pool[:need]) & set(client):
        print(f"note: gateway cores {pool[:need]} overlap the client's {client}", file=sys.stderr)
    root = a.root or tempfile.mkdtemp(prefix="s3hpc-scale.", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    made_root = a.root is None
    os.makedirs(root, exist_ok=True)
    wdir = tempfile.mkdtemp(prefix="s3hpc-scale-json.")
    rows, rss = [], {}
    try:
        skipped = []
        for n in counts:
            if time.time() - t_start > a.budget:
                skipped.append(n)
                continue
            gws = Gateways(a, n, root, pool)
            idle = [status_kb(p, "VmRSS") for p in gws.pids]
            bucket = f"scale-{n}-{os.getpid()}"
            try:
                for o in ops:
                    rows_o = [run_op(a, gws, o, n, bucket, wdir)]
                    if a.warp:
                        rows_o.append(run_warp(a, gws, o, n, wdir))
                    for row in rows_o:
                        rows.append(row)
                        print(f"N={n} {row['client']:<5} {row['label']:<11} {row['ops_s']:10.0f} ops/s "
                              f"{row['mb_s']:9.1f} MB/s  "
                              f"client {row['client_us']:6.1f} us/req ({row['client_busy']:.2f} cores)  "
                              f"server {row['server_us']:6.1f} us/req ({row['server_busy']:.2f} cores)  "
                              f"errors {row['errors']}", file=sys.stderr, flush=True)
                rss[n] = dict(idle=idle, hwm=[status_kb(p, "VmHWM") for p in gws.pids],
                              pins=gws.pins)
            finally:
                gws.stop()
                shutil.rmtree(os.path.join(root, bucket), ignore_errors=True)
    finally:
        if made_root:
            shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(wdir, ignore_errors=True)
    base = {(r["op"], r["client"]): r["ops_s"] for r in rows if r["n"] == counts[0]}
    n0 = counts[0]
    host = os.uname()
    cpu = ""
    try:
        cpu = re.search(r"model name\s*:\s*(.*)", open("/proc/cpuinfo").read()).group(1)
    except Exception:
        pass
    out = [f"Host {host.nodename}: {os.cpu_count()} cores ({cpu}), Linux {host.release}; "
           f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(t_start))}, load before {load0}; "
           f"root {'tmpfs ' if root.startswith('/dev/shm') else ''}{root if not made_root else '(fresh, removed)'}",
           f"Gateways: {a.gateway_cores_each} core(s) each ({', '.join(f'N={n}: ' + ' '.join(v['pins']) for n, v in rss.items())}), "
           f"client on cores {a.client_cores}; {a.duration} per row, {a.conc_per_gateway} requests in flight per gateway; "
           f"`{os.path.basename(a.bin)} {subprocess.run([a.bin, '--version'], capture_output=True, text=True).stdout.strip()}`",
           "",
           f"| N | op | load client | ops/s | MB/s | vs N x (N={n0}) | client us/req (cores busy) | server us/req (cores busy) | errors |",
           "|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        b = base.get((r["op"], r["client"]))
        ratio = r["ops_s"] / (b * r["n"] / n0) if b else 0
        name = "s3hpc bench" if r["client"] == "bench" else "warp"
        out.append(f"| {r['n']} | {r['label']} | {name} | {r['ops_s']:.0f} | {r['mb_s']:.1f} | {ratio:.2f} | "
                   f"{r['client_us']:.1f} ({r['client_busy']:.2f}) | {r['server_us']:.1f} ({r['server_busy']:.2f}) | {r['errors']} |")
    out += ["", "| N | gateway idle RSS (MB) | gateway peak RSS, VmHWM (MB) |", "|---:|---|---|"]
    for n, v in rss.items():
        out.append(f"| {n} | {' '.join(f'{x / 1024:.1f}' for x in v['idle'])} | {' '.join(f'{x / 1024:.1f}' for x in v['hwm'])} |")
    out.append("")
    if skipped:
        out.append(f"Skipped (--budget {a.budget:.0f} s spent): N = {', '.join(map(str, skipped))}.")
    if not TASKSET:
        out.append("No taskset on this host: nothing was pinned.")
    out.append(f"{time.time() - t_start:.0f} s in all; load after {loadavg()}.")
    text = "\n".join(out) + "\n"
    with open(a.out, "w") as f:
        f.write(text)
    print(text)


main()
PY
