"""Real S3 tools against the gateway: the AWS CLI (s3 and s3api), s3cmd and rclone."""
from __future__ import annotations

import filecmp
import hashlib
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import ACCESS_KEY, SECRET_KEY, empty_bucket

VENV_BIN = Path(sys.executable).parent
MiB = 1 << 20


def md5_file(p: Path) -> str:
    h = hashlib.md5()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def make_tree(root: Path, n: int = 12) -> None:
    for i in range(n):
        p = root / f"sub{i % 3}" / f"file {i}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(os.urandom(1000 + i * 777))


def aws_env(checksum: str | None = None) -> dict:
    env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_CONFIG_FILE": "/dev/null",
           "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}
    env.pop("AWS_PROFILE", None)
    if checksum:
        env["AWS_REQUEST_CHECKSUM_CALCULATION"] = checksum
    return env


def run(argv, env=None, check=True, timeout=120):
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"{argv} failed ({r.returncode}):\nstdout:{r.stdout[-2000:]}\nstderr:{r.stderr[-3000:]}")
    return r


@pytest.fixture
def tool_bucket(s3):
    name = "tools-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=name)
    yield name
    empty_bucket(s3, name)
    s3.delete_bucket(Bucket=name)


@pytest.mark.parametrize("checksum", ["when_supported", "when_required"])
def test_aws_cli(server, s3, tool_bucket, workdir, checksum):
    aws = [str(VENV_BIN / "aws"), "--endpoint-url", server.endpoint]
    env = aws_env(checksum)
    big = workdir / "big.bin"
    with open(big, "wb") as f:
        f.write(os.urandom(21 * MiB))  # above the CLI's 8 MiB threshold: a multipart upload
    run(aws + ["s3", "cp", str(big), f"s3://{tool_bucket}/big.bin"], env)
    head = s3.head_object(Bucket=tool_bucket, Key="big.bin")
    assert head["ContentLength"] == 21 * MiB and head["ETag"].strip('"').endswith("-3")
    run(aws + ["s3", "cp", f"s3://{tool_bucket}/big.bin", str(workdir / "back.bin")], env)
    assert md5_file(workdir / "back.bin") == md5_file(big)
    out = run(aws + ["s3", "ls", f"s3://{tool_bucket}/"], env).stdout
    assert "big.bin" in out and str(21 * MiB) in out

    src = workdir / "tree"
    make_tree(src)
    run(aws + ["s3", "sync", str(src), f"s3://{tool_bucket}/tree"], env)
    dst = workdir / "tree-back"
    run(aws + ["s3", "sync", f"s3://{tool_bucket}/tree", str(dst)], env)
    assert not filecmp.dircmp(src, dst).diff_files
    assert sorted(p.relative_to(dst) for p in dst.rglob("*")) == sorted(p.relative_to(src) for p in src.rglob("*"))
    # A second sync uploads nothing.
    again = run(aws + ["s3", "sync", str(src), f"s3://{tool_bucket}/tree"], env).stdout
    assert "upload:" not in again
    (src / "sub0" / "file 0.bin").unlink()
    run(aws + ["s3", "sync", "--delete", str(src), f"s3://{tool_bucket}/tree"], env)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=tool_bucket, Prefix="tree/")["Contents"]]
    assert "tree/sub0/file 0.bin" not in keys and len(keys) == 11

    # s3api calls.
    api = aws + ["s3api"]
    run(api + ["put-object", "--bucket", tool_bucket, "--key", "api/x", "--body", str(src / "sub1" / "file 1.bin"),
               "--metadata", "a=b"], env)
    h = json.loads(run(api + ["head-object", "--bucket", tool_bucket, "--key", "api/x"], env).stdout)
    assert h["Metadata"] == {"a": "b"}
    lst = json.loads(run(api + ["list-objects-v2", "--bucket", tool_bucket, "--prefix", "api/"], env).stdout)
    assert [o["Key"] for o in lst["Contents"]] == ["api/x"]
    r = run(api + ["get-object", "--bucket", tool_bucket, "--key", "api/nope", str(workdir / "nope")], env,
            check=False)
    assert r.returncode != 0 and "NoSuchKey" in r.stderr
    run(api + ["delete-object", "--bucket", tool_bucket, "--key", "api/x"], env)
    run(aws + ["s3", "rm", "--recursive", f"s3://{tool_bucket}/"], env)
    assert s3.list_objects_v2(Bucket=tool_bucket)["KeyCount"] == 0


def test_s3cmd(server, s3, tool_bucket, workdir):
    host = server.endpoint.removeprefix("http://")
    cfg = workdir / "s3cfg"
    cfg.write_text(f"""[default]
access_key = {ACCESS_KEY}
secret_key = {SECRET_KEY}
host_base = {host}
host_bucket = {host}
use_https = False
signature_v2 = False
bucket_location = us-east-1
check_ssl_certificate = False
multipart_chunk_size_mb = 5
""")
    s3cmd = [str(VENV_BIN / "s3cmd"), "-c", str(cfg)]
    f = workdir / "one.bin"
    f.write_bytes(os.urandom(300_000))
    run(s3cmd + ["put", str(f), f"s3://{tool_bucket}/one.bin"])
    assert "one.bin" in run(s3cmd + ["ls", f"s3://{tool_bucket}/"]).stdout
    run(s3cmd + ["get", f"s3://{tool_bucket}/one.bin", str(workdir / "one.back")])
    assert md5_file(workdir / "one.back") == md5_file(f)
    info = run(s3cmd + ["info", f"s3://{tool_bucket}/one.bin"]).stdout
    assert md5_file(f) in info  # MD5 ETag as s3cmd checks it
    big = workdir / "big.bin"
    big.write_bytes(os.urandom(12 * MiB))  # s3cmd multipart (5 MiB chunks)
    run(s3cmd + ["put", str(big), f"s3://{tool_bucket}/big.bin"])
    run(s3cmd + ["get", f"s3://{tool_bucket}/big.bin", str(workdir / "big.back")])
    assert md5_file(workdir / "big.back") == md5_file(big)
    src = workdir / "tree"
    make_tree(src)
    run(s3cmd + ["sync", str(src) + "/", f"s3://{tool_bucket}/tree/"])
    dst = workdir / "tree-back"
    run(s3cmd + ["sync", f"s3://{tool_bucket}/tree/", str(dst) + "/"])
    assert not filecmp.dircmp(src, dst).diff_files
    assert len(list(dst.rglob("*.bin"))) == 12
    run(s3cmd + ["del", f"s3://{tool_bucket}/one.bin"])
    assert "one.bin" not in run(s3cmd + ["ls", f"s3://{tool_bucket}/"]).stdout


@pytest.mark.skipif(shutil.which("rclone") is None, reason="rclone not installed (scripts/install-test-deps)")
def test_rclone(server, s3, tool_bucket, workdir):
    env = {**os.environ, "RCLONE_CONFIG": "/dev/null", "RCLONE_CONFIG_S3HPC_TYPE": "s3",
           "RCLONE_CONFIG_S3HPC_PROVIDER": "Other", "RCLONE_CONFIG_S3HPC_ENDPOINT": server.endpoint,
           "RCLONE_CONFIG_S3HPC_ACCESS_KEY_ID": ACCESS_KEY, "RCLONE_CONFIG_S3HPC_SECRET_ACCESS_KEY": SECRET_KEY,
           "RCLONE_CONFIG_S3HPC_REGION": "us-east-1", "RCLONE_CONFIG_S3HPC_FORCE_PATH_STYLE": "true"}
    env.pop("AWS_CA_BUNDLE", None)  # Go's SDK refuses a CA bundle on rclone's own transport
    rc = ["rclone", "--low-level-retries", "1", "--retries", "1"]
    src = workdir / "tree"
    make_tree(src, 20)
    big = src / "big.bin"
    big.write_bytes(os.urandom(7 * MiB))
    run(rc + ["--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M", "copy", str(src), f"s3hpc:{tool_bucket}/r"], env)
    lsf = run(rc + ["lsf", "-R", f"s3hpc:{tool_bucket}/r"], env).stdout.split()
    assert "big.bin" in lsf and "sub0/file 0.bin" in " ".join(run(rc + ["lsf", "-R", f"s3hpc:{tool_bucket}/r"],
                                                                  env).stdout.splitlines())
    run(rc + ["check", str(src), f"s3hpc:{tool_bucket}/r"], env)
    (src / "sub1" / "file 1.bin").write_bytes(b"changed")
    (src / "sub2" / "file 2.bin").unlink()
    run(rc + ["sync", str(src), f"s3hpc:{tool_bucket}/r"], env)
    run(rc + ["check", "--download", str(src), f"s3hpc:{tool_bucket}/r"], env)
    back = workdir / "back"
    run(rc + ["copy", f"s3hpc:{tool_bucket}/r", str(back)], env)
    assert not filecmp.dircmp(src, back).diff_files
    assert md5_file(back / "big.bin") == md5_file(big)
