#!/usr/bin/env python3
"""Run one load-client command against a server and report the client's result together with the
server's CPU time per operation.

    cpu_window.py PID s3load -- CMD...          (CMD prints s3load's JSON line on stdout)
    cpu_window.py PID bench:FILE -- CMD...      (CMD is `s3hpc bench ... --json FILE`; last phase)

While CMD runs, the server's utime+stime (/proc/PID/stat) is sampled every 10 ms. The measured
phase is the last `seconds` of the run (both clients prepare objects first and end right after the
phase), so its server CPU is the CPU used in [exit - seconds, exit], interpolated between samples.
Prints one JSON line: ops, errors, seconds, ops_per_s, mib_per_s, cpu_s (server), cpu_us_per_op.
"""
import json
import os
import subprocess
import sys
import time

TCK = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def at(samples, t):
    """CPU ticks at time t, interpolated."""
    if t <= samples[0][0]:
        return samples[0][1]
    for (t0, c0), (t1, c1) in zip(samples, samples[1:]):
        if t0 <= t <= t1:
            return c0 + (c1 - c0) * ((t - t0) / (t1 - t0) if t1 > t0 else 1.0)
    return samples[-1][1]


def main():
    pid, kind = int(sys.argv[1]), sys.argv[2]
    cmd = sys.argv[sys.argv.index("--") + 1 :]
    samples = [(time.monotonic(), cpu_ticks(pid))]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    while proc.poll() is None:
        time.sleep(0.01)
        samples.append((time.monotonic(), cpu_ticks(pid)))
    out = proc.stdout.read()
    samples.append((time.monotonic(), cpu_ticks(pid)))
    if proc.returncode != 0:
        sys.exit(f"load client failed ({proc.returncode}): {' '.join(cmd)}")
    if kind == "s3load":
        d = json.loads(out.strip().splitlines()[-1])
        r = dict(ops=d["ops"], errors=d["errors"], seconds=d["seconds"], ops_per_s=d["ops_per_s"],
                 mib_per_s=d["mib_per_s"])
    elif kind.startswith("bench:"):
        with open(kind[len("bench:"):]) as f:
            p = json.load(f)["results"][0]["phases"][-1]
        r = dict(ops=p["ops"], errors=p["errors"], seconds=p["seconds"], ops_per_s=p["ops_per_sec"],
                 mib_per_s=p["mib_per_sec"] or 0.0)
    else:
        sys.exit(f"unknown client kind {kind}")
    end = samples[-1][0]
    cpu = (at(samples, end) - at(samples, end - r["seconds"])) / TCK
    r["cpu_s"] = round(cpu, 3)
    r["cpu_us_per_op"] = round(cpu * 1e6 / r["ops"], 1) if r["ops"] else 0.0
    print(json.dumps(r))


if __name__ == "__main__":
    main()
