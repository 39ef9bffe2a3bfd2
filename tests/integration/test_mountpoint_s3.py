"""Mountpoint for Amazon S3 (`mount-s3`, the real binary) over an s3hpc gateway: files written,
read, listed, renamed and deleted through Mountpoint land in the gateway's root (the posix backend:
objects are plain files), and Mountpoint's `mv` is one RenameObject request that the gateway
carries out atomically (issue 38; Mountpoint sends `x-amz-rename-source` as the bare key, which
s3hpc accepts since issue 37).

Opt-in: the tests run only when MOUNT_S3_BIN names a `mount-s3` binary (Mountpoint is not built by
the project nor in CI: docs/MOUNT.md, "Mountpoint for Amazon S3 over s3hpc", says how to build one
from its source). Without it every test here is skipped.

    MOUNT_S3_BIN=/work/mp/target/release/mount-s3 S3HPC_BIN=target/release/s3hpc \\
        .venv/bin/python -m pytest -q tests/integration/test_mountpoint_s3.py
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from conftest import ACCESS_KEY, SECRET_KEY, Server, empty_bucket, make_client, wait_until

MOUNT_S3 = os.environ.get("MOUNT_S3_BIN", "")

pytestmark = [
    pytest.mark.skipif(not MOUNT_S3 or not os.access(MOUNT_S3, os.X_OK),
                       reason="MOUNT_S3_BIN does not name a mount-s3 binary (Mountpoint is opt-in: docs/MOUNT.md)"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"),
                       reason="/dev/fuse is absent: this machine cannot mount FUSE file systems"),
]

MiB = 1 << 20


def is_mounted(path: Path) -> bool:
    p = str(Path(path).resolve())
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == p for line in f)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class MountpointMount:
    """`mount-s3 BUCKET DIR --foreground` against the gateway over HTTP, path-style, with the
    gateway's keys in the environment, deletes and overwrites allowed."""

    def __init__(self, endpoint: str, bucket: str, path: Path, logdir: Path, *extra: str):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.logdir = Path(logdir)
        self.logdir.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY, AWS_REGION="us-east-1",
                   AWS_EC2_METADATA_DISABLED="true")
        self.argv = [MOUNT_S3, bucket, str(self.path), "--endpoint-url", endpoint, "--force-path-style",
                     "--region", "us-east-1", "--allow-delete", "--allow-overwrite", "--foreground",
                     "--log-directory", str(self.logdir), *extra]
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=env, start_new_session=True)
        if not wait_until(lambda: is_mounted(self.path) or self.proc.poll() is not None, 30) \
                or not is_mounted(self.path):
            self.close()
            pytest.fail(f"mount-s3 did not mount ({self.proc.returncode}): {self.output()}")

    def output(self) -> str:
        out = ""
        if self.proc.poll() is not None and self.proc.stdout:
            out = self.proc.stdout.read().decode(errors="replace")
        logs = sorted(self.logdir.glob("*"))
        if logs:
            out += "\n" + logs[-1].read_text(errors="replace")[-4000:]
        return out

    def close(self):
        if is_mounted(self.path):
            r = subprocess.run(["fusermount3", "-u", str(self.path)], capture_output=True)
            if r.returncode != 0:
                subprocess.run(["umount", "-l", str(self.path)], capture_output=True)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        if self.proc.stdout:
            self.proc.stdout.close()


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    root = tmp_path_factory.mktemp("mproot")
    srv = Server(root, ["--backend", "posix", "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY,
                        "--durability", "none", "--access-log"])
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def gws3(gw):
    return make_client(gw.endpoint)


@pytest.fixture
def mp(gw, gws3, tmp_path):
    bucket = "mp-" + uuid.uuid4().hex[:12]
    gws3.create_bucket(Bucket=bucket)
    m = MountpointMount(gw.endpoint, bucket, tmp_path / "mnt", tmp_path / "mplogs")
    m.bucket = bucket
    m.root = Path(gw.root) / bucket  # the bucket as the posix backend stores it
    yield m
    m.close()
    empty_bucket(gws3, bucket)
    gws3.delete_bucket(Bucket=bucket)


def access_lines(gw, bucket: str, since: int) -> list[tuple[str, str, str, int]]:
    """(method, path, operation, status) of each access-log line of `bucket` after line `since`."""
    pat = re.compile(r"s3hpc::access: \S+ (\S+) (\S+) (\S+) (\d+) ")
    out = []
    for line in gw.output[since:]:
        m = pat.search(line)
        if m and (m.group(2) == f"/{bucket}" or m.group(2).startswith(f"/{bucket}/")):
            out.append((m.group(1), m.group(2), m.group(3), int(m.group(4))))
    return out


def test_write_read_list_overwrite_delete(mp):
    # A 21 MiB file: Mountpoint uploads it in 8 MiB parts (multipart, with its CRC32C checksums).
    data = os.urandom(21 * MiB + 4321)
    (mp.path / "dir").mkdir()
    with open(mp.path / "dir" / "big.bin", "wb") as f:
        for off in range(0, len(data), MiB):
            f.write(data[off:off + MiB])
    assert sha((mp.root / "dir" / "big.bin").read_bytes()) == sha(data), "the object in the gateway differs"
    assert sha((mp.path / "dir" / "big.bin").read_bytes()) == sha(data), "read back through Mountpoint differs"
    assert (mp.path / "dir" / "big.bin").stat().st_size == len(data)

    # Files written through POSIX into the gateway's root are seen through Mountpoint.
    (mp.root / "posix" / "sub").mkdir(parents=True)
    for i in range(30):
        (mp.root / "posix" / f"f{i:02d}.txt").write_text(f"file {i}\n")
    (mp.root / "posix" / "sub" / "deep.txt").write_text("deep\n")
    assert sorted(os.listdir(mp.path / "posix")) == sorted([f"f{i:02d}.txt" for i in range(30)] + ["sub"])
    assert (mp.path / "posix" / "sub").is_dir()
    assert (mp.path / "posix" / "f07.txt").read_text() == "file 7\n"
    assert (mp.path / "posix" / "sub" / "deep.txt").stat().st_size == 5
    assert sorted(os.listdir(mp.path)) == ["dir", "posix"]

    # Overwrite (--allow-overwrite: open with O_TRUNC), then delete.
    (mp.path / "posix" / "f07.txt").write_text("replaced\n")
    assert (mp.root / "posix" / "f07.txt").read_text() == "replaced\n"
    os.remove(mp.path / "posix" / "f07.txt")
    assert not (mp.root / "posix" / "f07.txt").exists()
    assert "f07.txt" not in os.listdir(mp.path / "posix")
    os.remove(mp.path / "dir" / "big.bin")
    assert not (mp.root / "dir" / "big.bin").exists()


def test_mv_is_one_rename_object(gw, mp):
    """`mv` through Mountpoint: one RenameObject request (no copy, no delete), the bytes are the
    source's, the old name is gone on both sides; onto an existing name it replaces it; names with
    spaces and non-ASCII characters (sent raw in x-amz-rename-source) work too."""
    data = os.urandom(3 * MiB + 7)
    (mp.root / "a").mkdir()
    (mp.root / "a" / "src.bin").write_bytes(data)
    (mp.root / "b").mkdir()
    (mp.root / "b" / "old.txt").write_text("to be replaced\n")
    cases = [("a/src.bin", "a/dst.bin"), ("a/dst.bin", "b/moved.bin"), ("b/moved.bin", "b/old.txt"),
             ("b/old.txt", "b/with space ö+ß.bin"), ("b/with space ö+ß.bin", "top.bin")]
    for src, dst in cases:
        before = len(gw.output)
        os.rename(mp.path / src, mp.path / dst)
        assert not (mp.root / src).exists(), f"{src} still in the gateway after mv"
        assert sha((mp.root / dst).read_bytes()) == sha(data), f"{dst} in the gateway differs"
        assert not (mp.path / src).exists(), f"{src} still seen through Mountpoint"
        assert sha((mp.path / dst).read_bytes()) == sha(data), f"{dst} through Mountpoint differs"
        # The access log is written as the response goes out; wait for the rename's line.
        assert wait_until(lambda: any(op == "RenameObject" for _, _, op, _ in access_lines(gw, mp.bucket, before)), 5), \
            f"no RenameObject for mv {src} {dst}: {access_lines(gw, mp.bucket, before)}"
        ops = access_lines(gw, mp.bucket, before)
        renames = [o for o in ops if o[2] == "RenameObject"]
        assert len(renames) == 1 and renames[0][3] == 200, f"mv {src} {dst}: {ops}"
        writes = [o for o in ops if o[2] in ("CopyObject", "PutObject", "DeleteObject", "DeleteObjects",
                                             "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload")]
        assert not writes, f"mv {src} {dst} also copied, wrote or deleted: {writes}"
    assert "top.bin" in os.listdir(mp.path)
    assert not [p for p in mp.root.rglob("*") if p.is_file() and p.name != "top.bin"]


def test_mv_is_atomic_for_a_concurrent_observer(gw, mp):
    """While Mountpoint renames a 256 MiB file, observers HEAD the two names over and over, in
    both orders. A copy then a delete (what s3fs and rclone do) shows both names at once (the new
    name seen, then the old one still there) or, in the other order, neither; one rename(2) in the
    gateway shows exactly one name at every instant."""
    size = 256 * MiB
    (mp.root / "big").mkdir()
    with open(mp.root / "big" / "old.bin", "wb") as f:
        chunk = os.urandom(MiB)
        for _ in range(size // MiB):
            f.write(chunk)
    old, new = "big/old.bin", "big/new.bin"
    stop = threading.Event()
    seen = {"both": 0, "neither": 0, "probes": 0}
    errors: list[BaseException] = []

    def exists(client, key) -> bool:
        try:
            client.head_object(Bucket=mp.bucket, Key=key)
            return True
        except client.exceptions.ClientError as e:
            if e.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound"):
                return False
            raise

    def observer(client, first, second, verdict):
        try:
            while not stop.is_set():
                # `first` seen at t1 and `second` at t2 > t1: for (new, old) both existed at t2;
                # for (old, new) absent both, neither existed at t1.
                a = exists(client, first)
                b = exists(client, second)
                seen["probes"] += 1
                if verdict(a, b):
                    seen["both" if first == new else "neither"] += 1
        except BaseException as e:  # noqa: BLE001 - reported by the test's thread
            errors.append(e)

    # (boto3 clients made here: making them in the threads at once races in botocore)
    threads = [threading.Thread(target=observer, args=(make_client(gw.endpoint), new, old, lambda a, b: a and b)),
               threading.Thread(target=observer,
                                args=(make_client(gw.endpoint), old, new, lambda a, b: not a and not b))]
    for t in threads:
        t.start()
    time.sleep(0.3)
    before = len(gw.output)
    t0 = time.monotonic()
    os.rename(mp.path / old, mp.path / new)
    took = time.monotonic() - t0
    time.sleep(0.3)
    stop.set()
    for t in threads:
        t.join(30)
    assert not errors, errors
    assert seen["probes"] > 20, f"the observers probed too little to see anything: {seen}"
    assert seen["both"] == 0 and seen["neither"] == 0, f"the rename was seen half done: {seen}"
    assert (mp.root / new).stat().st_size == size and not (mp.root / old).exists()
    ops = [o for o in access_lines(gw, mp.bucket, before) if o[2] != "HeadObject"]
    assert [o[2] for o in ops if o[2] != "ListObjectsV2"] == ["RenameObject"], ops
    # One rename(2), not a copy of 256 MiB: well under the time a copy takes.
    assert took < 5, f"mv of {size >> 20} MiB took {took:.2f} s"
    assert sorted(os.listdir(mp.path / "big")) == ["new.bin"]


def test_directory_rename_is_refused_and_changes_nothing(mp):
    """Mountpoint renames files only; a directory's mv fails and leaves the objects where they were."""
    (mp.root / "d").mkdir()
    (mp.root / "d" / "x").write_text("x\n")
    with pytest.raises(OSError):
        os.rename(mp.path / "d", mp.path / "e")
    assert (mp.root / "d" / "x").read_text() == "x\n"
    assert not (mp.root / "e").exists()
    assert os.listdir(mp.path / "d") == ["x"]
