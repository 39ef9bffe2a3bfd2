"""Scale-out plumbing: one `s3hpc bench` process driving several gateways on one root.

`-t http://A,http://B` is one target spread over its endpoints: the client opens each new
connection to the next endpoint in turn (`--spread connection`, the default), so both gateways
serve requests; `--spread rank` keeps the old one-endpoint-per-rank behaviour. Each gateway's
access log counts what it served.
"""
from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from conftest import s3hpc_bin
from multigw import ACCESS_KEY, SECRET_KEY, Cluster


def bench(target: str, out, *args: str) -> dict:
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY)
    env.pop("AWS_PROFILE", None)
    cmd = [s3hpc_bin(), "bench", "mixed", "-t", target, "--mix", "head=100", "--objects", "16",
           "--size", "1KiB", "--duration", "1s", "-c", "6", "-q", "--json", str(out), *args]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"{cmd}: {p.returncode}\n{p.stdout}\n{p.stderr}"
    r = json.loads(out.read_text())["results"][0]
    assert r["errors"] == 0, r["error_samples"]
    return r


def heads_served(gw) -> int:
    return sum(1 for line in gw.output if "s3hpc::access" in line and " HeadObject " in line)


def served_after(gws, total: int) -> list[int]:
    """HEADs each gateway logged, once the logs hold `total` in all (the readers may lag)."""
    deadline = time.monotonic() + 10
    while True:
        n = [heads_served(g) for g in gws]
        if sum(n) >= total or time.monotonic() > deadline:
            return n
        time.sleep(0.05)


@pytest.fixture
def two(tmp_path):
    with Cluster(tmp_path / "root", n=2, extra=["--access-log"]) as c:
        yield c


def test_one_target_spreads_connections_over_gateways(two, tmp_path):
    target = ",".join(g.endpoint for g in two.gateways)
    r = bench(target, tmp_path / "spread.json")
    ops = [p for p in r["phases"] if p["name"] == "mixed" and p["op"] == "head"][0]["ops"]
    served = served_after(two.gateways, ops)
    # Every HEAD reached one of the two gateways, and each served a fair share (6 connections,
    # three to each; a connection's requests go where it was opened).
    assert sum(served) == ops, (served, ops)
    assert min(served) >= 0.25 * ops, f"one gateway got almost nothing: {served} of {ops}"


def test_spread_rank_uses_one_endpoint_per_rank(two, tmp_path):
    target = ",".join(g.endpoint for g in two.gateways)
    before = [heads_served(g) for g in two.gateways]
    r = bench(target, tmp_path / "rank.json", "--spread", "rank")
    ops = [p for p in r["phases"] if p["name"] == "mixed" and p["op"] == "head"][0]["ops"]
    after = served_after(two.gateways, sum(before) + ops)
    assert after[0] - before[0] == ops and after[1] == before[1], (before, after, ops)


def test_endpoint_lists_must_agree(two, tmp_path):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY)
    a = two.gateways[0].endpoint
    p = subprocess.run([s3hpc_bin(), "bench", "sweep", "-t", f"{a},{a}/prefix", "--sizes", "1KiB", "-q"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert "every endpoint of a list needs the first one's scheme and path" in p.stderr, p.stderr
