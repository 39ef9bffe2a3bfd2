"""The parity checks of test_parity.py seen through aws-sdk-go-v2 (tests/integration/goclient):
the Go program drives the real binary and reports each check; every one must pass."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ACCESS_KEY, SECRET_KEY

GOCLIENT = Path(__file__).resolve().parent / "goclient"


@pytest.fixture(scope="session")
def goclient(tmp_path_factory):
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if go is None:
        pytest.skip("go is not installed")
    out = tmp_path_factory.mktemp("go") / "goclient"
    env = {**os.environ, "GOFLAGS": "-buildvcs=false"}
    r = subprocess.run([go, "build", "-o", str(out), "."], cwd=GOCLIENT, env=env, capture_output=True, text=True,
                       timeout=900)
    if r.returncode != 0 and any(s in r.stderr for s in ("dial tcp", "proxy.golang.org", "no such host")):
        pytest.skip("Go modules cannot be fetched here: " + r.stderr[-300:])
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def test_aws_sdk_go_v2_parity(server, goclient, bucket):
    r = subprocess.run([str(goclient), server.endpoint, ACCESS_KEY, SECRET_KEY, bucket], capture_output=True,
                       text=True, timeout=120)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and not any(l.startswith("FAIL") for l in lines), r.stdout + r.stderr
    assert len([l for l in lines if l.startswith("ok ")]) == 17, r.stdout
