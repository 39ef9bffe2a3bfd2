"""`s3hpc bench` as ONE job of several ranks against several gateways on one shared root.

  mpi    `mpirun -np 2` with each rank in its own network-namespace host (scripts/netns-hosts),
         using the gateway of its host (`--spread local`); on loopback (said so in the test
         output) where namespaces cannot be made. Skipped, with the reason, when mpirun or an
         s3hpc built with `--features mpi` is missing.
  procs  `--procs 2` (no MPI needed) against two loopback gateways, endpoints round-robin.

Both check the merged result rank 0 reports: every rank present and on its own gateway, aggregate
= sum of the per-rank figures, merged latency histograms holding every operation, 0 errors.
"""
from __future__ import annotations

import pytest

from conftest import s3hpc_bin
from multigw import Cluster, bench_job, hosts_or_loopback, mpi_mode


def check_job(res: dict, ranks: int, endpoints: list[str], launcher: str, per_rank_endpoint: bool):
    r = res["results"][0]
    assert r["aborted"] is None, r["aborted"]
    assert r["errors"] == 0, r["error_samples"]
    info = r["ranks"]
    assert [x["rank"] for x in info] == list(range(ranks))
    assert all(x["launcher"] == launcher for x in info), info
    assert len({x["pid"] for x in info}) == ranks
    if per_rank_endpoint:
        # rank i runs in host i (or is rank i round-robin) and uses that host's gateway
        assert [x["endpoint"] for x in info] == endpoints[:ranks], info
    names = {p["name"] for p in r["phases"]}
    assert {"put", "get", "head", "delete"} <= names, names
    for p in r["phases"]:
        per = p["per_rank"]
        assert len(per) == ranks, p["name"]
        assert p["ops"] == sum(x["ops"] for x in per) > 0
        assert p["bytes"] == sum(x["bytes"] for x in per)
        assert p["latency"]["count"] == p["ops"], p["name"]
        assert p["balance"]["ranks"] == ranks
        assert all(x["ops"] == 12 for x in per), (p["name"], per)   # --count 12 per rank


SWEEP = ["sweep", "--sizes", "16KiB", "--count", "12", "-c", "2", "--verify"]


def test_mpi_job_with_ranks_in_namespace_hosts(tmp_path):
    mode, why = mpi_mode(s3hpc_bin())
    if mode != "mpi":
        pytest.skip(why)
    with hosts_or_loopback(2) as (hosts, bridge, where):
        print(f"\nMPI job of 2 ranks: {where}")
        root = tmp_path / "root"
        root.mkdir()
        work = tmp_path / "job"
        work.mkdir()
        with Cluster(root, n=2, hosts=hosts) as c:
            eps = [g.endpoint for g in c.gateways]
            ns = [h[0] for h in hosts] if hosts else None
            res, cmd = bench_job(2, eps, SWEEP, work, "mpi", ns, bridge, timeout=300)
            print(cmd)
            check_job(res, 2, eps, "mpi", per_rank_endpoint=True)
            # nothing left behind on the shared root (the bench cleaned up its bucket)
            assert not [p for p in root.iterdir() if not p.name.startswith(".")]


def test_procs_job_round_robin_over_gateways(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    work = tmp_path / "job"
    work.mkdir()
    with Cluster(root, n=2) as c:
        eps = [g.endpoint for g in c.gateways]
        res, _ = bench_job(3, eps, SWEEP, work, "procs", timeout=300)
        check_job(res, 3, eps, "procs", per_rank_endpoint=False)
        assert [x["endpoint"] for x in res["results"][0]["ranks"]] == [eps[0], eps[1], eps[0]]
        assert not [p for p in root.iterdir() if not p.name.startswith(".")]
