#!/usr/bin/env python3
"""Server CPU per operation of two gateway builds, measured alternately in one run.

    bench/cpu_per_op.py OLD_BIN NEW_BIN [--rounds 6] [--secs 3] [--ops head4k,get4k,put4k,put1m,get1m]
                        [--flags "--durability none"] [--old-flags F] [--new-flags F] [--wire]

OLD_BIN and NEW_BIN may be the same binary with different --old-flags / --new-flags (the cost of
a setting). With --wire the gateways also serve the binary protocol on a Unix socket
(`--binary unix://ROOT.sock`) and the load client speaks it there instead of HTTP.

Both builds serve their own /dev/shm root for the whole run, pinned to CPU 0 (`taskset`); the load
client (`s3hpc bench mixed` of NEW_BIN, one operation at a time) runs pinned to CPU 1, so the
client does not steal the server's core and the server's CPU time is its own. For every operation
the builds are measured in turn, ROUNDS times each, the order swapped every round (old new, new
old, ...). Each measurement is the server's utime+stime over the client's measured phase divided
by its operations (bench/cpu_window.py). Prints, per operation, the median µs/op of each build,
new/old of the medians, the median of the rounds' own new/old ("paired": robust to a drift both
builds see during the run, as 1 MiB PUTs on /dev/shm show), and the spread; with --json FILE,
every sample too.

The figure is CPU time, not instructions (this VM has no hardware counters), so it still moves
with the machine's load; alternating many short rounds and taking medians is what makes a few
percent visible. Everything runs on 127.0.0.1 and is stopped at the end.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
AK, SK = "cpuPerOpKey01", "cpuPerOpSecret01cpuPerOpSecret01"
OPS = {  # name: (mix, size, concurrency, objects)
    "head4k": ("head", "4KiB", 16, 64),
    "get4k": ("get", "4KiB", 16, 64),
    "put4k": ("put", "4KiB", 16, 1),
    "put1m": ("put", "1MiB", 8, 1),
    "get1m": ("get", "1MiB", 8, 16),
}


def serve(binary, root, flags, wire=False):
    log = open(os.path.join(root + ".log"), "w+")
    sock = root + ".sock"
    extra = ["--binary", "unix://" + sock] if wire else []
    p = subprocess.Popen(
        ["taskset", "-c", "0", binary, "serve", root, "--listen", "127.0.0.1:0", "--access-key", AK,
         "--secret-key", SK] + extra + flags, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        log.seek(0)
        m = re.search(r"http://127\.0\.0\.1:\d+", log.read())
        if m and (not wire or os.path.exists(sock)):
            return p, ("unix://" + sock if wire else m.group(0))
        time.sleep(0.05)
    p.kill()
    sys.exit(f"{binary} did not start; see {root}.log")


def measure(client, server, endpoint, op, secs, tmp):
    mix, size, conc, objects = OPS[op]
    out = os.path.join(tmp, "phase.json")
    cmd = ["python3", os.path.join(HERE, "cpu_window.py"), str(server.pid), f"bench:{out}", "--",
           "taskset", "-c", "1", client, "bench", "mixed", "-t", endpoint, "--access-key", AK,
           "--secret-key", SK, "--bucket", f"cpo-{op}", "--keep", "-q", "-c", str(conc), "--mix",
           f"{mix}=100", "--objects", str(objects), "--size", size, "--duration", f"{secs}s",
           "--json", out]
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    if r["errors"]:
        sys.exit(f"{op} against {endpoint}: {r['errors']} errors")
    return r


def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("old")
    a.add_argument("new")
    a.add_argument("--rounds", type=int, default=6)
    a.add_argument("--secs", type=float, default=3)
    a.add_argument("--ops", default=",".join(OPS))
    a.add_argument("--flags", default="--durability none", help="serve flags for both builds")
    a.add_argument("--old-flags", default="", help="extra serve flags for OLD_BIN only")
    a.add_argument("--new-flags", default="", help="extra serve flags for NEW_BIN only")
    a.add_argument("--json", help="write every sample here")
    a.add_argument("--wire", action="store_true", help="load over the binary protocol's Unix socket")
    args = a.parse_args()
    ops = args.ops.split(",")
    for op in ops:
        if op not in OPS:
            sys.exit(f"unknown operation {op}; known: {', '.join(OPS)}")
    tmp = tempfile.mkdtemp(prefix="s3hpc-cpo.", dir="/dev/shm")
    servers = {}
    try:
        for name, binary, extra in (("old", args.old, args.old_flags), ("new", args.new, args.new_flags)):
            root = os.path.join(tmp, name)
            os.mkdir(root)
            servers[name] = serve(binary, root, args.flags.split() + extra.split(), args.wire)
        samples = {op: {"old": [], "new": []} for op in ops}
        for op in ops:
            for name in ("old", "new"):  # populate, and warm up, outside the rounds
                measure(args.new, servers[name][0], servers[name][1], op, 1, tmp)
            for rnd in range(args.rounds):
                order = ("old", "new") if rnd % 2 == 0 else ("new", "old")
                for name in order:
                    r = measure(args.new, servers[name][0], servers[name][1], op, args.secs, tmp)
                    samples[op][name].append(r)
                    print(f"  {op} round {rnd + 1} {name}: {r['cpu_us_per_op']} µs/op, "
                          f"{r['ops_per_s']:.0f} ops/s", file=sys.stderr)
        print(f"server CPU per operation ({'binary protocol' if args.wire else 'HTTP'}), median of "
              f"{args.rounds} alternating rounds of {args.secs:g} s (server on CPU 0, client on CPU 1)")
        print(f"{'op':8} {'old µs':>8} {'new µs':>8} {'new/old':>8} {'paired':>7}   {'old range':>15} "
              f"{'new range':>15}   {'old ops/s':>9} {'new ops/s':>9}")
        for op in ops:
            o = [r["cpu_us_per_op"] for r in samples[op]["old"]]
            n = [r["cpu_us_per_op"] for r in samples[op]["new"]]
            ro = statistics.median(r["ops_per_s"] for r in samples[op]["old"])
            rn = statistics.median(r["ops_per_s"] for r in samples[op]["new"])
            mo, mn = statistics.median(o), statistics.median(n)
            # The median of each round's new/old: robust to a drift both builds see over the run.
            paired = statistics.median(b / a for a, b in zip(o, n))
            print(f"{op:8} {mo:8.1f} {mn:8.1f} {mn / mo:8.3f} {paired:7.3f}   {min(o):7.1f}-{max(o):<7.1f} "
                  f"{min(n):7.1f}-{max(n):<7.1f}   {ro:9.0f} {rn:9.0f}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"old": args.old, "new": args.new, "samples": samples}, f, indent=1)
    finally:
        for p, _ in servers.values():
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
