"""`s3hpc mount`: the real binary mounts the real gateway (over HTTP and over the binary protocol's
unix socket) and real programs work on the mount: cp, dd, rsync, tar, python file I/O, fio. What
they write is checked in the gateway's root (the posix backend: objects are plain files), and
files written there through POSIX are read back through the mount."""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import tarfile
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from conftest import ACCESS_KEY, SECRET_KEY, Server, empty_bucket, make_client, s3hpc_bin, wait_until

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/fuse"),
                                reason="/dev/fuse is absent: this machine cannot mount FUSE file systems")

MiB = 1 << 20


def is_mounted(path: Path) -> bool:
    p = str(Path(path).resolve())
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == p for line in f)


def env():
    return {**os.environ, "S3HPC_ACCESS_KEY": ACCESS_KEY, "S3HPC_SECRET_KEY": SECRET_KEY, "RUST_BACKTRACE": "0"}


def unmount(path: Path):
    if is_mounted(path):
        r = subprocess.run(["fusermount3", "-u", str(path)], capture_output=True, text=True)
        if r.returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)
    assert wait_until(lambda: not is_mounted(path), 15), f"{path} still mounted"


class Mount:
    """`s3hpc mount` in its default mode: it returns once the mount is live and keeps running in
    the background until unmounted."""

    def __init__(self, endpoint: str, bucket: str, path: Path, *extra: str, log: Path | None = None):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        argv = [s3hpc_bin(), "mount", bucket, str(self.path), "--endpoint", endpoint, *extra]
        if log:
            argv += ["--log-file", str(log)]
        r = subprocess.run(argv, capture_output=True, text=True, env=env(), timeout=60)
        assert r.returncode == 0, f"mount failed ({r.returncode}): {r.stderr}"
        assert is_mounted(self.path), "s3hpc mount returned 0 but nothing is mounted"

    def close(self):
        unmount(self.path)


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    root = tmp_path_factory.mktemp("mountroot")
    sock = tmp_path_factory.mktemp("sock") / "s3hpc.sock"
    srv = Server(root, ["--backend", "posix", "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY,
                        "--binary", f"unix://{sock}", "--durability", "none"])
    srv.sock = sock
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def gws3(gw):
    return make_client(gw.endpoint)


@pytest.fixture
def bkt(gws3):
    name = "mnt-" + uuid.uuid4().hex[:12]
    gws3.create_bucket(Bucket=name)
    yield name
    empty_bucket(gws3, name)
    gws3.delete_bucket(Bucket=name)


def endpoint_of(gw, transport: str) -> str:
    return gw.endpoint if transport == "http" else f"unix://{gw.sock}"


@pytest.fixture(params=["http", "unix"])
def mounted(request, gw, bkt, tmp_path):
    """A read-write mount (deletes allowed, 5 MiB parts so that small tests go multipart)."""
    m = Mount(endpoint_of(gw, request.param), bkt, tmp_path / "mnt", "--allow-delete", "--part-size", "5MiB",
              log=tmp_path / "mount.log")
    m.root = Path(gw.root) / bkt  # the bucket as the posix backend stores it
    m.bucket = bkt
    yield m
    m.close()


def sha(p: Path) -> str:
    return hashlib.sha256(Path(p).read_bytes()).hexdigest()


def run(*argv, **kw):
    r = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{argv} failed ({r.returncode}): {r.stdout}\n{r.stderr}"
    return r


def test_cp_dd_and_python_io(mounted, tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(13 * MiB + 12345))  # three 5 MiB parts, the last one short
    run("cp", src, mounted.path / "copied.bin")
    assert sha(mounted.root / "copied.bin") == sha(src), "object in the gateway differs from the source"
    assert sha(mounted.path / "copied.bin") == sha(src), "read back through the mount differs"
    assert (mounted.path / "copied.bin").stat().st_size == src.stat().st_size

    run("dd", "if=/dev/urandom", f"of={mounted.path / 'dd.bin'}", "bs=1M", "count=7", "conv=fsync")
    assert (mounted.root / "dd.bin").stat().st_size == 7 * MiB
    run("dd", f"if={mounted.path / 'dd.bin'}", f"of={tmp_path / 'dd.back'}", "bs=256k")
    assert sha(tmp_path / "dd.back") == sha(mounted.root / "dd.bin")

    # python text and binary I/O; a shell redirection (open, dup2, close, then write)
    (mounted.path / "hello.txt").write_text("héllo\nworld\n")
    assert (mounted.root / "hello.txt").read_text() == "héllo\nworld\n"
    with open(mounted.path / "hello.txt") as f:
        assert f.readlines() == ["héllo\n", "world\n"]
    run("bash", "-c", f"echo via-shell > {mounted.path / 'shell.txt'}")
    assert (mounted.root / "shell.txt").read_text() == "via-shell\n"
    empty = mounted.path / "empty"
    empty.touch()
    assert wait_until(lambda: (mounted.root / "empty").exists(), 5)
    assert (mounted.root / "empty").stat().st_size == 0


def test_posix_files_seen_through_mount(mounted):
    (mounted.root / "from" / "posix").mkdir(parents=True)
    (mounted.root / "from" / "posix" / "p.txt").write_bytes(b"written by POSIX\n")
    assert (mounted.path / "from" / "posix" / "p.txt").read_bytes() == b"written by POSIX\n"
    assert sorted(os.listdir(mounted.path / "from")) == ["posix"]
    st = (mounted.path / "from" / "posix" / "p.txt").stat()
    assert st.st_size == 17 and st.st_mode & 0o777 == 0o644
    assert (mounted.path / "from").is_dir()


def test_tar_extract_and_rsync(mounted, tmp_path):
    tree = tmp_path / "tree"
    for i in range(12):
        d = tree / f"dir{i % 3}" / f"sub{i % 2}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"file{i}.dat").write_bytes(os.urandom(1000 * i + 1))
    (tree / "big.dat").write_bytes(os.urandom(6 * MiB))
    with tarfile.open(tmp_path / "t.tar", "w") as t:
        t.add(tree, arcname="tree")
    # -m: the files' times are the objects' (tar's utime would be EPERM, as in Mountpoint)
    run("tar", "-m", "-xf", tmp_path / "t.tar", "-C", mounted.path)
    run("diff", "-r", tree, mounted.path / "tree")
    run("diff", "-r", tree, mounted.root / "tree")

    # rsync writes in place (a rename-free transfer) into a new directory
    run("rsync", "-r", "--inplace", "--no-perms", "--no-times", f"{tree}/", f"{mounted.path / 'rs'}/")
    run("diff", "-r", tree, mounted.root / "rs")
    # a second run finds nothing to do (sizes and contents match)
    r = run("rsync", "-r", "--inplace", "--checksum", "--itemize-changes", f"{tree}/", f"{mounted.path / 'rs'}/")
    assert r.stdout.strip() == "", r.stdout
    # Without -m tar restores the times, which the mount cannot keep: it says so (EPERM).
    (mounted.path / "utime").mkdir()
    r = subprocess.run(["tar", "-xf", tmp_path / "t.tar", "-C", mounted.path / "utime"], capture_output=True, text=True)
    assert r.returncode != 0 and "Cannot utime: Operation not permitted" in r.stderr, r.stderr


def test_fio_sequential_and_random_reads(mounted, tmp_path):
    if not shutil.which("fio"):
        pytest.fail("fio is not installed (scripts/install-test-deps installs it)")
    data = os.urandom(48 * MiB)
    (mounted.root / "fio.dat").write_bytes(data)
    target = mounted.path / "fio.dat"
    for rw, bs in (("read", "1M"), ("randread", "4k")):
        r = run("fio", "--name=j", f"--filename={target}", f"--rw={rw}", f"--bs={bs}", "--size=48M",
                "--io_size=16M" if rw == "randread" else "--io_size=48M", "--ioengine=psync",
                "--output-format=json", "--randrepeat=0")
        job = json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]
        assert job["error"] == 0
        assert job["read"]["io_bytes"] == (16 if rw == "randread" else 48) * MiB, job["read"]
    # and the bytes are right at random places
    with open(target, "rb") as f:
        for off in (0, 5 * MiB - 3, 17 * MiB + 12345, 48 * MiB - 10):
            f.seek(off)
            assert f.read(4096) == data[off:off + 4096]


def test_directories_unlink_rmdir(mounted):
    d = mounted.path / "newdir"
    d.mkdir()
    assert d.is_dir() and "newdir" in os.listdir(mounted.path)
    assert not (mounted.root / "newdir").exists(), "mkdir is local until a file is written below it"
    (d / "inner.txt").write_text("x")
    assert (mounted.root / "newdir" / "inner.txt").read_text() == "x"
    with pytest.raises(OSError) as e:
        d.rmdir()
    assert e.value.errno == errno.ENOTEMPTY
    (d / "inner.txt").unlink()
    assert not (mounted.root / "newdir" / "inner.txt").exists()
    d.rmdir()
    assert "newdir" not in os.listdir(mounted.path)
    e2 = mounted.path / "e2"
    e2.mkdir()
    e2.rmdir()
    assert not e2.exists()
    with pytest.raises(FileNotFoundError):
        (mounted.path / "missing").stat()


def test_nonsequential_write_and_overwrite_refused(mounted):
    p = mounted.path / "seq.bin"
    fd = os.open(p, os.O_WRONLY | os.O_CREAT)
    try:
        os.write(fd, b"a" * 4096)
        os.lseek(fd, 0, os.SEEK_SET)
        with pytest.raises(OSError) as e:
            os.write(fd, b"b")
        assert e.value.errno == errno.EINVAL
    finally:
        os.close(fd)
    assert (mounted.root / "seq.bin").read_bytes() == b"a" * 4096
    # no --allow-overwrite: an existing object cannot be truncated and replaced
    with pytest.raises(PermissionError):
        open(p, "wb")
    # opened for writing without O_TRUNC, writes go to the end only (appends on s3hpc)
    fd = os.open(p, os.O_WRONLY)
    try:
        with pytest.raises(OSError) as e:
            os.write(fd, b"b")  # at offset 0, not the end
        assert e.value.errno == errno.EINVAL
    finally:
        os.close(fd)
    assert (mounted.root / "seq.bin").read_bytes() == b"a" * 4096


def test_append_through_mount(mounted, gws3):
    """On an s3hpc gateway a file opened without O_TRUNC appends (PutObject with a write offset):
    shell `>>`, python "ab" with fsync in the middle (the appended bytes are in the object at
    once, and writing goes on), appends larger than a part (several appends, in order), and
    a file written through POSIX on the gateway's root appended to through the mount."""
    p = mounted.path
    (mounted.root / "log.txt").write_text("line 1\n")
    run("sh", "-c", f"echo 'line 2' >> {p / 'log.txt'}")
    assert (mounted.root / "log.txt").read_text() == "line 1\nline 2\n"
    with open(p / "log.txt", "ab") as f:
        f.write(b"line 3\n")
        f.flush()
        os.fsync(f.fileno())
        assert (mounted.root / "log.txt").read_text() == "line 1\nline 2\nline 3\n"
        head = gws3.head_object(Bucket=mounted.bucket, Key="log.txt")
        assert head["ContentLength"] == 21
        f.write(b"line 4\n")
    assert (mounted.root / "log.txt").read_text() == "line 1\nline 2\nline 3\nline 4\n"
    # Seen through the mount after the close (the kernel's cached pages are not reused).
    assert (p / "log.txt").read_text() == "line 1\nline 2\nline 3\nline 4\n"
    # 12 MiB appended to a 1 MiB file through 5 MiB parts: three appends, in order.
    base = os.urandom(MiB)
    more = os.urandom(12 * MiB)
    (p / "big.bin").write_bytes(base)
    with open(p / "big.bin", "ab") as f:
        for i in range(0, len(more), 256 << 10):
            f.write(more[i:i + (256 << 10)])
    assert hashlib.sha256((mounted.root / "big.bin").read_bytes()).hexdigest() == hashlib.sha256(base + more).hexdigest()
    assert os.stat(p / "big.bin").st_size == 13 * MiB
    # Opened for writing and closed without a write (touch does so): nothing changes, and the
    # file can be opened again at once.
    for _ in range(3):
        os.close(os.open(p / "log.txt", os.O_WRONLY))
    assert (mounted.root / "log.txt").read_text() == "line 1\nline 2\nline 3\nline 4\n"
    # Two writers of one file in one mount: the second open fails while the first writes.
    with open(p / "log.txt", "ab") as f:
        with pytest.raises(PermissionError):
            open(p / "log.txt", "ab")
        f.write(b"x")
    assert (mounted.root / "log.txt").read_text().endswith("line 4\nx")


def test_overwrite_allowed_and_unlink_refused(gw, bkt, tmp_path):
    (Path(gw.root) / bkt / "o.txt").write_text("old")
    m = Mount(gw.endpoint, bkt, tmp_path / "m", "--allow-overwrite")
    try:
        (m.path / "o.txt").write_text("new contents")
        assert (Path(gw.root) / bkt / "o.txt").read_text() == "new contents"
        with pytest.raises(PermissionError):
            (m.path / "o.txt").unlink()
        assert (Path(gw.root) / bkt / "o.txt").exists()
    finally:
        m.close()


@pytest.mark.parametrize("posix_attrs", [False, True])
@pytest.mark.parametrize("transport", ["http", "unix"])
def test_truncate_then_rewrite_at_once(gw, bkt, tmp_path, transport, posix_attrs):
    """`: > f; echo x > f`: an open with O_TRUNC closed without a write, then the next writer at
    once. The kernel sends the first handle's RELEASE after close() returned, so the second open
    could find the first writer not yet released and got EPERM (seen once in a full run); the
    open now waits a moment for that release."""
    (Path(gw.root) / bkt / "t.txt").write_text("old")
    args = ["--allow-overwrite"] + (["--posix-attrs"] if posix_attrs else [])
    m = Mount(endpoint_of(gw, transport), bkt, tmp_path / "m", *args)
    try:
        p = m.path / "t.txt"
        for i in range(60):
            os.close(os.open(p, os.O_WRONLY | os.O_TRUNC))
            p.write_bytes(b"round %d" % i)
        assert (Path(gw.root) / bkt / "t.txt").read_bytes() == b"round 59"
    finally:
        m.close()


def test_rename_is_one_rename_object(mounted):
    """mv of a file on an s3hpc gateway: one RenameObject, so on the posix backend the very inode
    moves (not a copy); replacing an existing object needs --allow-overwrite."""
    p = mounted.path
    (p / "sub").mkdir()
    (p / "a.txt").write_bytes(b"alpha" * 1000)
    ino = os.stat(mounted.root / "a.txt").st_ino
    os.rename(p / "a.txt", p / "sub" / "b.txt")
    assert not (p / "a.txt").exists()
    assert (p / "sub" / "b.txt").read_bytes() == b"alpha" * 1000
    assert os.stat(mounted.root / "sub" / "b.txt").st_ino == ino, "renamed by copying"
    assert not (mounted.root / "a.txt").exists()
    # The renamed file reads the same through a fresh lookup (its inode names the new key).
    run("cat", p / "sub" / "b.txt")
    # No --allow-overwrite here: an existing destination is refused and both stay.
    (p / "c.txt").write_bytes(b"c")
    with pytest.raises(PermissionError):
        os.rename(p / "c.txt", p / "sub" / "b.txt")
    assert (mounted.root / "c.txt").read_bytes() == b"c"
    assert (mounted.root / "sub" / "b.txt").read_bytes() == b"alpha" * 1000


def test_directory_rename_is_one_rename(mounted, gws3, tmp_path):
    """mv of a directory tree on an s3hpc gateway: one RenameObject of the prefix, so on the posix
    backend the very directory moves (same inode, no copy); inode numbers in the mount stay, an
    open reader goes on reading, the keys are under the new prefix only, a non-empty
    destination is ENOTEMPTY and an empty one is replaced."""
    p = mounted.path
    (p / "tree" / "deep").mkdir(parents=True)
    (p / "tree" / "a.txt").write_bytes(b"a" * 1000)
    big = os.urandom(6 * MiB)  # two 5 MiB parts: a multipart object
    (p / "tree" / "deep" / "b.bin").write_bytes(big)
    (p / "tree" / "only-here").mkdir()  # local to the mount (nothing below it yet)
    dir_ino = os.stat(mounted.root / "tree").st_ino
    file_ino = os.stat(mounted.root / "tree" / "deep" / "b.bin").st_ino
    mnt_ino = os.stat(p / "tree" / "deep").st_ino
    with open(p / "tree" / "deep" / "b.bin", "rb") as reader:
        assert reader.read(1000) == big[:1000]
        run("mv", p / "tree", p / "moved")
        os.posix_fadvise(reader.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)  # read from the gateway again
        assert reader.read() == big[1000:], "an open reader of a moved file broke"
    assert os.stat(mounted.root / "moved").st_ino == dir_ino, "the directory was copied, not renamed"
    assert os.stat(mounted.root / "moved" / "deep" / "b.bin").st_ino == file_ino
    assert not (mounted.root / "tree").exists()
    assert not (p / "tree").exists()
    assert os.stat(p / "moved" / "deep").st_ino == mnt_ino, "the mount gave the moved directory a new inode"
    assert (p / "moved" / "only-here").is_dir()
    assert sha(p / "moved" / "deep" / "b.bin") == hashlib.sha256(big).hexdigest()
    keys = sorted(o["Key"] for o in gws3.list_objects_v2(Bucket=mounted.bucket).get("Contents", []))
    assert keys == ["moved/a.txt", "moved/deep/b.bin"]
    assert gws3.get_object(Bucket=mounted.bucket, Key="moved/a.txt")["Body"].read() == b"a" * 1000
    # Onto a non-empty directory: ENOTEMPTY (rename(2) says ENOTEMPTY or EEXIST), nothing moves.
    (p / "full").mkdir()
    (p / "full" / "x").write_bytes(b"x")
    with pytest.raises(OSError) as e:
        os.rename(p / "moved", p / "full")
    assert e.value.errno in (errno.ENOTEMPTY, errno.EEXIST)
    assert (mounted.root / "moved" / "a.txt").exists() and (mounted.root / "full" / "x").exists()
    # Onto an empty directory: replaced; into a directory that is not in the bucket yet.
    (p / "empty").mkdir()
    os.rename(p / "moved", p / "empty")
    assert (mounted.root / "empty" / "deep" / "b.bin").stat().st_ino == file_ino
    (p / "new" / "parent").mkdir(parents=True)
    os.rename(p / "empty", p / "new" / "parent" / "tree")
    assert (p / "new" / "parent" / "tree" / "a.txt").read_bytes() == b"a" * 1000
    assert os.stat(mounted.root / "new" / "parent" / "tree").st_ino == dir_ino
    # A listing open across the rename goes on under the new name (two pages of 1,000 keys).
    (mounted.root / "many").mkdir()
    for i in range(1100):
        (mounted.root / "many" / f"f{i:04}").write_bytes(b"")
    with os.scandir(p / "many") as it:
        first = [next(it).name for _ in range(5)]
        os.rename(p / "many", p / "many2")
        names = first + [e.name for e in it]
    assert len(set(names)) == 1100, f"{len(set(names))} names listed across the rename"
    # A directory of this mount alone (mkdir, nothing written) renames too.
    (p / "loc" / "sub").mkdir(parents=True)
    os.rename(p / "loc", p / "loc2")
    assert (p / "loc2" / "sub").is_dir() and not (p / "loc").exists()


@pytest.mark.parametrize("transport", ["http", "unix"])
def test_rename_between_file_and_directory(gw, bkt, tmp_path, transport):
    """rename(2) of a file onto a directory is EISDIR and of a directory onto a file ENOTDIR,
    also when neither the kernel nor the mount knew the destination yet (it appeared on the
    gateway's root after a lookup found nothing: the gateway refuses the key conflict); they
    were EIO and EXDEV. Nothing moves."""
    m = Mount(endpoint_of(gw, transport), bkt, tmp_path / "mnt", "--allow-overwrite", "--metadata-ttl", "60s",
              log=tmp_path / "mount.log")
    try:
        p, root = m.path, Path(gw.root) / bkt
        (p / "f").write_bytes(b"file")
        (p / "d").mkdir()
        (p / "d" / "x").write_bytes(b"x")
        # Both names known to the kernel: it answers itself.
        for src, dst, want in [("f", "d", errno.EISDIR), ("d", "f", errno.ENOTDIR)]:
            with pytest.raises(OSError) as e:
                os.rename(p / src, p / dst)
            assert e.value.errno == want, f"{src} -> {dst}: {e.value}"
        # The destinations were absent at lookup (cached for 60 s), then made through POSIX.
        assert not (p / "g").exists() and not (p / "h").exists()
        (root / "g").mkdir()
        (root / "g" / "y").write_bytes(b"y")
        (root / "h").write_bytes(b"h")
        for src, dst, want in [("f", "g", errno.EISDIR), ("d", "h", errno.ENOTDIR)]:
            with pytest.raises(OSError) as e:
                os.rename(p / src, p / dst)
            assert e.value.errno == want, f"{src} -> {dst} (unknown to the mount): {e.value}"
        assert (root / "f").read_bytes() == b"file" and (root / "d" / "x").read_bytes() == b"x"
        assert (root / "g" / "y").read_bytes() == b"y" and (root / "h").read_bytes() == b"h"
    finally:
        m.close()


def test_git_commit_and_mv_of_the_repository(gw, bkt, tmp_path):
    """git replaces files by renaming lock files over them (config.lock -> config, index.lock
    -> index): with --allow-overwrite init, add and commit work in the mount, and the
    repository, moved with mv (one prefix rename), works under its new name."""
    m = Mount(gw.endpoint, bkt, tmp_path / "m", "--allow-overwrite", "--allow-delete", log=tmp_path / "mount.log")
    try:
        p = m.path
        run("git", "init", "-q", p / "repo")
        (p / "repo" / "f.txt").write_text("hello\n")
        git = ["git", "-C", p / "repo", "-c", "user.name=t", "-c", "user.email=t@e"]
        run(*git, "add", "f.txt")
        run(*git, "commit", "-q", "-m", "one")
        ino = os.stat(Path(gw.root) / bkt / "repo").st_ino
        run("mv", p / "repo", p / "repo2")
        assert os.stat(Path(gw.root) / bkt / "repo2").st_ino == ino, "the repository was copied"
        r = run("git", "-C", p / "repo2", "log", "--format=%s")
        assert r.stdout.strip() == "one"
        (p / "repo2" / "g.txt").write_text("two\n")
        git = ["git", "-C", p / "repo2", "-c", "user.name=t", "-c", "user.email=t@e"]
        run(*git, "add", "g.txt")
        run(*git, "commit", "-q", "-m", "two")
        assert run(*git, "status", "--porcelain").stdout.strip() == ""
    finally:
        m.close()


def test_rename_over_an_object_with_allow_overwrite(gw, bkt, tmp_path):
    root = Path(gw.root) / bkt
    (root / "old").write_text("old")
    (root / "new").write_text("new")
    m = Mount(gw.endpoint, bkt, tmp_path / "m", "--allow-overwrite")
    try:
        os.rename(m.path / "new", m.path / "old")
        assert (m.path / "old").read_text() == "new"
        assert not (root / "new").exists() and (root / "old").read_text() == "new"
    finally:
        m.close()


@pytest.mark.parametrize("transport", ["http", "unix"])
def test_read_only(gw, bkt, tmp_path, transport):
    (Path(gw.root) / bkt / "r.txt").write_text("read me")
    m = Mount(endpoint_of(gw, transport), bkt, tmp_path / "ro", "--read-only")
    try:
        assert (m.path / "r.txt").read_text() == "read me"
        for act in (lambda: (m.path / "w.txt").write_text("x"), lambda: (m.path / "d").mkdir(),
                    lambda: (m.path / "r.txt").unlink(), lambda: open(m.path / "r.txt", "r+b")):
            with pytest.raises(OSError) as e:
                act()
            assert e.value.errno == errno.EROFS
        assert sorted(n for n in os.listdir(Path(gw.root) / bkt) if n != ".s3hpc") == ["r.txt"]
    finally:
        m.close()


def test_prefix_and_metadata_ttl(gw, bkt, tmp_path):
    root = Path(gw.root) / bkt
    (root / "p" / "q").mkdir(parents=True)
    (root / "p" / "q" / "in.txt").write_text("inside")
    (root / "out.txt").write_text("outside")
    m = Mount(gw.endpoint, bkt, tmp_path / "pm", "--prefix", "p/q", "--metadata-ttl", "1s")
    try:
        assert os.listdir(m.path) == ["in.txt"]
        assert not (m.path / "late.txt").exists()  # a negative lookup, cached for the TTL
        (root / "p" / "q" / "late.txt").write_text("late")
        # the cached absence ends with the TTL
        assert wait_until(lambda: (m.path / "late.txt").exists(), 5)
        assert (m.path / "late.txt").read_text() == "late"
    finally:
        m.close()


def test_mount_errors(gw, bkt, tmp_path):
    d = tmp_path / "e"
    d.mkdir()
    bad = [s3hpc_bin(), "mount", bkt, str(d), "--endpoint", gw.endpoint]
    r = subprocess.run(bad, capture_output=True, text=True, timeout=60,
                       env={**env(), "S3HPC_SECRET_KEY": "wrong-secret"})
    # HEAD has no error body: a bad signature shows as 403 AccessDenied
    assert r.returncode != 0 and ("AccessDenied" in r.stderr or "SignatureDoesNotMatch" in r.stderr), r.stderr
    r = subprocess.run([s3hpc_bin(), "mount", "no-such-bucket-x", str(d), "--endpoint", gw.endpoint],
                       capture_output=True, text=True, timeout=60, env=env())
    assert r.returncode != 0 and "no-such-bucket-x" in r.stderr, r.stderr
    r = subprocess.run([s3hpc_bin(), "mount", bkt, str(d), "--part-size", "1MiB"], capture_output=True, text=True,
                       timeout=60, env=env())
    assert r.returncode != 0 and "part-size" in r.stderr, r.stderr
    assert not is_mounted(d)


def test_foreground_ctrl_c_unmounts(gw, bkt, tmp_path):
    d = tmp_path / "fg"
    d.mkdir()
    p = subprocess.Popen([s3hpc_bin(), "mount", bkt, str(d), "--endpoint", f"unix://{gw.sock}", "--foreground"],
                         env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert wait_until(lambda: is_mounted(d), 30), "foreground mount never became live"
        (d / "fg.txt").write_text("fg")
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=30)
        assert p.returncode == 0, out
        assert not is_mounted(d)
        assert (Path(gw.root) / bkt / "fg.txt").read_text() == "fg"
    finally:
        if p.poll() is None:
            p.kill()
        unmount(d)


def test_gateway_restart_during_read(tmp_path):
    """Reads in flight when the gateway restarts (same address) are retried, not failed."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = tmp_path / "root"
    (root / "rbkt").mkdir(parents=True)
    data = os.urandom(40 * MiB)
    (root / "rbkt" / "f.bin").write_bytes(data)
    argv = ["--backend", "posix", "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY]

    def start():
        p = subprocess.Popen([s3hpc_bin(), "serve", str(root), "--listen", f"127.0.0.1:{port}", *argv],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        def up():
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                return True
            except OSError:
                return False
        assert wait_until(up, 30), "gateway did not come up"
        return p

    gw1 = start()
    # a small window: most of the file is fetched after the restart
    m = Mount(f"http://127.0.0.1:{port}", "rbkt", tmp_path / "m", "--read-window", "4MiB", log=tmp_path / "m.log")
    try:
        with open(m.path / "f.bin", "rb", buffering=0) as f:
            head = f.read(4 * MiB)
            gw1.send_signal(signal.SIGTERM)
            gw1.wait(30)
            # the gateway comes back 0.7 s later; meanwhile the reads below find nobody there
            later = {}
            t = threading.Timer(0.7, lambda: later.setdefault("gw", start()))
            t.start()
            try:
                rest = b""
                while chunk := f.read(1 * MiB):
                    rest += chunk
            finally:
                t.join()
                later["gw"].send_signal(signal.SIGTERM)
                later["gw"].wait(30)
        assert head + rest == data
    finally:
        m.close()


def versitygw_binary(tmp_path_factory) -> str | None:
    """versitygw (a Go S3 gateway over POSIX) from PATH or ~/go/bin, else built with `go install`
    into a temporary GOBIN; None where Go or the module proxy is not available."""
    for cand in (shutil.which("versitygw"), os.path.expanduser("~/go/bin/versitygw")):
        if cand and os.access(cand, os.X_OK):
            return cand
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if go is None:
        return None
    gobin = tmp_path_factory.mktemp("gobin")
    r = subprocess.run([go, "install", "github.com/versity/versitygw/cmd/versitygw@latest"],
                       env={**os.environ, "GOBIN": str(gobin)}, capture_output=True, text=True, timeout=1200)
    return str(gobin / "versitygw") if r.returncode == 0 else None


@pytest.fixture(scope="module")
def versitygw(tmp_path_factory):
    binary = versitygw_binary(tmp_path_factory)
    if binary is None:
        pytest.skip("versitygw is not installed and cannot be built here (no Go or no module proxy)")
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = tmp_path_factory.mktemp("vgwroot")
    proc = subprocess.Popen([binary, "--access", ACCESS_KEY, "--secret", SECRET_KEY, "--port", f"127.0.0.1:{port}",
                             "posix", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"})

    def up():
        with socket.socket() as c:
            return c.connect_ex(("127.0.0.1", port)) == 0
    assert wait_until(up, 30), "versitygw did not start"
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


def test_mount_of_another_s3_server(versitygw, tmp_path):
    """The generic path: s3hpc mount over versitygw (an S3 server that is not s3hpc). Reads and
    writes work; rename answers ENOSYS and appending EPERM (the mount does not risk a write
    offset the server may ignore) unless --allow-copy-rename, which copies and deletes."""
    s3 = make_client(versitygw)
    bucket = "generic-" + uuid.uuid4().hex[:8]
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="seed.txt", Body=b"seed")
    m = Mount(versitygw, bucket, tmp_path / "m", "--allow-delete", log=tmp_path / "mount.log")
    try:
        data = os.urandom(7 * MiB)
        (m.path / "f.bin").write_bytes(data)
        assert s3.get_object(Bucket=bucket, Key="f.bin")["Body"].read() == data
        assert (m.path / "seed.txt").read_bytes() == b"seed"
        with pytest.raises(OSError) as e:
            os.rename(m.path / "f.bin", m.path / "g.bin")
        assert e.value.errno == errno.ENOSYS
        with pytest.raises(PermissionError):
            open(m.path / "seed.txt", "ab")
        assert s3.get_object(Bucket=bucket, Key="seed.txt")["Body"].read() == b"seed"
        # A directory (a prefix) is not renamed here: EXDEV, so mv copies and deletes it.
        (m.path / "d").mkdir()
        (m.path / "d" / "x").write_bytes(b"x")
        with pytest.raises(OSError) as e:
            os.rename(m.path / "d", m.path / "d2")
        assert e.value.errno == errno.EXDEV
        run("mv", m.path / "d", m.path / "d2")
        assert s3.get_object(Bucket=bucket, Key="d2/x")["Body"].read() == b"x"
    finally:
        m.close()
    m = Mount(versitygw, bucket, tmp_path / "m2", "--allow-copy-rename", log=tmp_path / "mount2.log")
    try:
        os.rename(m.path / "f.bin", m.path / "g.bin")
        assert not (m.path / "f.bin").exists()
        assert (m.path / "g.bin").read_bytes() == data
        keys = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
        assert keys == {"seed.txt", "g.bin", "d2/x"}
        # No --allow-overwrite: an existing destination stays.
        with pytest.raises(PermissionError):
            os.rename(m.path / "g.bin", m.path / "seed.txt")
        assert s3.get_object(Bucket=bucket, Key="seed.txt")["Body"].read() == b"seed"
        # Nor is a directory (a prefix) renamed key by key with --allow-copy-rename: EXDEV.
        with pytest.raises(OSError) as e:
            os.rename(m.path / "d2", m.path / "d3")
        assert e.value.errno == errno.EXDEV
        assert s3.get_object(Bucket=bucket, Key="d2/x")["Body"].read() == b"x"
    finally:
        m.close()


def test_stat_while_writing_keeps_the_written_bytes(mounted):
    """issue 38: an fstat, a stat or a listing of a file being written reported size 0, which the
    kernel took as the file's size (dropping what was written from its view), so a read right
    after the close returned b'' (the bytes came 1 s later, when the attributes expired). The
    size of a file being written is what was written so far, as in Mountpoint."""
    p = mounted.path
    for how in ("fstat", "stat", "readdir"):
        f = p / f"w-{how}.txt"
        fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            os.write(fd, b"hello")
            if how == "fstat":
                size = os.fstat(fd).st_size
            elif how == "stat":
                size = os.stat(f).st_size
            else:
                assert f.name in os.listdir(p)  # READDIRPLUS hands the kernel the attributes
                size = os.stat(f).st_size
            assert size == 5, f"{how} while writing: st_size {size}"
            os.write(fd, b" world")
            assert os.fstat(fd).st_size == 11
        finally:
            os.close(fd)
        assert f.read_bytes() == b"hello world", f"read right after the close ({how} while writing)"
        assert (mounted.root / f.name).read_bytes() == b"hello world"
    # Python's "w+": reading back through the write handle fails with EBADF (a handle writes
    # or reads, as in Mountpoint), never an empty read; the file is whole after the close.
    f = p / "wplus.txt"
    with open(f, "w+") as fh:
        fh.write("hello")
        fh.seek(0)
        with pytest.raises(OSError) as e:
            fh.read()
        assert e.value.errno == errno.EBADF
    assert f.read_text() == "hello"
    assert (mounted.root / "wplus.txt").read_text() == "hello"


def test_name_max_of_the_store(gw, bkt, tmp_path):
    """issue 38: NAME_MAX was 1024 on a mount of s3hpc over POSIX, whose file system allows 255:
    256-1024-byte names were accepted by create and mkdir and failed later (the file's upload at
    close, rename, unlink). The mount asks the store at mount: statfs says 255 and longer names
    fail at once with ENAMETOOLONG; other stores (here s3hpc's memory backend) keep 1024."""
    long, ok = "l" * 256, "k" * 255
    for transport in ("http", "unix"):
        m = Mount(endpoint_of(gw, transport), bkt, tmp_path / f"nm-{transport}", "--allow-overwrite",
                  log=tmp_path / "mount.log")
        try:
            p = m.path
            assert os.statvfs(p).f_namemax == 255
            (p / ok).write_bytes(b"fits")
            assert (Path(gw.root) / bkt / ok).read_bytes() == b"fits"
            for act in (lambda: os.open(p / long, os.O_WRONLY | os.O_CREAT), lambda: os.mkdir(p / long),
                        lambda: os.rename(p / ok, p / long), lambda: os.stat(p / long)):
                with pytest.raises(OSError) as e:
                    act()
                assert e.value.errno == errno.ENAMETOOLONG, e.value
            (p / "d").mkdir()
            with pytest.raises(OSError) as e:
                os.mkdir(p / "d" / long)
            assert e.value.errno == errno.ENAMETOOLONG
            os.rename(p / ok, p / "short")
            os.rename(p / "short", p / ok)
        finally:
            m.close()
    # --name-max overrides the probe.
    m = Mount(gw.endpoint, bkt, tmp_path / "nm-opt", "--name-max", "100")
    try:
        assert os.statvfs(m.path).f_namemax == 100
        with pytest.raises(OSError) as e:
            os.mkdir(m.path / ("x" * 101))
        assert e.value.errno == errno.ENAMETOOLONG
    finally:
        m.close()
    # Another store: S3's 1,024 bytes (a whole key).
    mem = Server(tmp_path / "memroot", ["--backend", "memory", "--access-key", ACCESS_KEY,
                                        "--secret-key", SECRET_KEY])
    try:
        make_client(mem.endpoint).create_bucket(Bucket="membkt")
        m = Mount(mem.endpoint, "membkt", tmp_path / "nm-mem")
        try:
            assert os.statvfs(m.path).f_namemax == 1024
            (m.path / ("m" * 300)).write_bytes(b"long name")
            assert make_client(mem.endpoint).get_object(Bucket="membkt", Key="m" * 300)["Body"].read() == b"long name"
        finally:
            m.close()
    finally:
        mem.stop()


def test_metadata_changes_are_refused_not_lost(mounted):
    """issue 38: chmod, chown and utimes returned 0 and changed nothing. A change the mount cannot
    keep is EPERM (as in Mountpoint); one that changes nothing is accepted, and so is a time of
    "now" on a file being written (touch of a new file)."""
    p = mounted.path
    (mounted.root / "meta.txt").write_text("meta")
    f = p / "meta.txt"
    st = os.stat(f)
    for act in (lambda: os.chmod(f, 0o600), lambda: os.chown(f, st.st_uid + 1, -1),
                lambda: os.chown(f, -1, st.st_gid + 1), lambda: os.utime(f, (1_000_000, 1_000_000)),
                lambda: os.utime(f), lambda: os.truncate(f, 2), lambda: os.chmod(p, 0o700)):
        with pytest.raises(PermissionError):
            act()
    after = os.stat(f)
    assert (after.st_mode, after.st_uid, after.st_gid, after.st_mtime, after.st_size) == \
        (st.st_mode, st.st_uid, st.st_gid, st.st_mtime, st.st_size)
    # What changes nothing is accepted.
    os.chmod(f, st.st_mode & 0o7777)
    os.chown(f, st.st_uid, st.st_gid)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.truncate(f, 4)
    # touch of a new file (create, then set the times to now) works; of an existing one it is
    # refused (the object's time is its Last-Modified).
    run("touch", p / "touched")
    assert wait_until(lambda: (mounted.root / "touched").exists(), 5)
    r = subprocess.run(["touch", str(f)], capture_output=True, text=True)
    assert r.returncode != 0 and "Operation not permitted" in r.stderr, r.stderr
    fd = os.open(p / "being-written", os.O_WRONLY | os.O_CREAT)
    try:
        os.write(fd, b"x")
        os.utime(p / "being-written")  # now: the object gets the time of its close
        with pytest.raises(PermissionError):
            os.utime(p / "being-written", (1_000_000, 1_000_000))
        with pytest.raises(PermissionError):
            os.fchmod(fd, 0o755)
        os.fchmod(fd, 0o644)
    finally:
        os.close(fd)
    assert (mounted.root / "being-written").read_bytes() == b"x"


def test_concurrent_appends_from_two_mounts(gw, bkt, tmp_path):
    """issue 38: 50 `echo >> log` from each of two mounts kept 74-76 of 100 lines: the losers got
    EIO from close() only, which bash ignores. Now the first write of a handle is one append,
    answered when it is in the object, and an O_APPEND append that another writer overtook goes
    again to the end as it is (nothing lost); a first write that cannot be placed fails itself
    (bash sees it). Later writes gather into parts (a stream of small writes is not as many
    appends), each write whole, and they too go to the end others left."""
    root = Path(gw.root) / bkt
    (root / "log").write_text("")
    ma = Mount(gw.endpoint, bkt, tmp_path / "ma", log=tmp_path / "ma.log")
    mb = Mount(f"unix://{gw.sock}", bkt, tmp_path / "mb", log=tmp_path / "mb.log")
    try:
        loop = 'for i in $(seq 50); do if echo "{w} $i" >> {log}; then echo "ok {w} $i"; else echo "lost {w} $i"; fi; done'
        procs = [subprocess.Popen(["bash", "-c", loop.format(w=w, log=m.path / "log")], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for w, m in (("A", ma), ("B", mb))]
        outs = [pr.communicate(timeout=300) for pr in procs]
        reported = [line for out, _ in outs for line in out.splitlines()]
        kept = (root / "log").read_text().splitlines()
        ok = sorted(line[3:] for line in reported if line.startswith("ok "))
        lost = [line for line in reported if line.startswith("lost ")]
        assert sorted(kept) == ok, f"lines lost silently or twice: kept {len(kept)}, reported ok {len(ok)}"
        assert len(ok) + len(lost) == 100
        assert not lost, f"O_APPEND writes that could not be placed: {lost}; stderr: {[e for _, e in outs]}"
        # Writers that keep the file open and write many lines (later writes gather): every
        # line lands, whole.
        def many(path, tag):
            with open(path, "a") as f:
                for i in range(200):
                    f.write(f"{tag} {i}\n")
                    f.flush()
        threads = [threading.Thread(target=many, args=(m.path / "log", tag)) for tag, m in (("PA", ma), ("PB", mb))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        lines = (root / "log").read_text().splitlines()
        for tag in ("PA", "PB"):
            mine = [line for line in lines if line.startswith(tag + " ")]
            assert mine == [f"{tag} {i}" for i in range(200)], f"{tag}: {len(mine)} lines, in order: {mine[:5]}"
        # A writer without O_APPEND (at the end it knew) overtaken by the other mount: its write
        # fails, not only its close, and nothing of it lands in the object. First the sizes that
        # A's kernel and A's table keep of log expire: B appended after A's last close, and
        # within --metadata-ttl A would answer A's own size (the write at that end is EINVAL,
        # see test_write_at_an_end_another_mount_moved_within_the_ttl). Once under load the
        # kernel's entry expired while the table's had not: the test failed with EINVAL.
        time.sleep(1.2)
        fd = os.open(ma.path / "log", os.O_WRONLY)
        try:
            os.fstat(fd)  # the kernel learns the size of the object at open
            os.lseek(fd, 0, os.SEEK_END)
            with open(mb.path / "log", "a") as other:
                other.write("from B\n")
            with pytest.raises(OSError) as e:
                os.write(fd, b"from A\n")
            assert e.value.errno == errno.EIO
        finally:
            with pytest.raises(OSError):
                os.close(fd)
        assert (root / "log").read_text().endswith("from B\n")
    finally:
        ma.close()
        mb.close()


def test_write_at_an_end_another_mount_moved_within_the_ttl(gw, bkt, tmp_path):
    """Cached sizes and appends from two mounts: for --metadata-ttl after its own close, mount A
    reports the size it left, though mount B appended since (changes by others show after the
    TTL). A writer without O_APPEND that seeks to that end writes elsewhere than the end its
    handle learned at open: EINVAL, and nothing lands. After the TTL the end is the object's."""
    root = Path(gw.root) / bkt
    (root / "log").write_text("x\n")
    ma = Mount(gw.endpoint, bkt, tmp_path / "ma", "--metadata-ttl", "5s", log=tmp_path / "ma.log")
    mb = Mount(f"unix://{gw.sock}", bkt, tmp_path / "mb", log=tmp_path / "mb.log")
    try:
        with open(ma.path / "log", "a") as f:
            time.sleep(5.5)  # the kernel's entry of log (looked up at this open) expires
            f.write("a\n")
        # A's table keeps log's size at its close (4 bytes) for the TTL; B appends meanwhile.
        with open(mb.path / "log", "a") as g:
            g.write("b\n")
        fd = os.open(ma.path / "log", os.O_WRONLY)  # a lookup answered from A's table
        try:
            assert os.fstat(fd).st_size == 4
            assert os.lseek(fd, 0, os.SEEK_END) == 4
            with pytest.raises(OSError) as e:
                os.write(fd, b"c\n")
            assert e.value.errno == errno.EINVAL
        finally:
            os.close(fd)
        assert (root / "log").read_text() == "x\na\nb\n"
        time.sleep(5.5)
        fd = os.open(ma.path / "log", os.O_WRONLY)
        try:
            assert os.fstat(fd).st_size == 6
            os.lseek(fd, 0, os.SEEK_END)
            assert os.write(fd, b"c\n") == 2
        finally:
            os.close(fd)
        assert (root / "log").read_text() == "x\na\nb\nc\n"
    finally:
        ma.close()
        mb.close()


@pytest.mark.parametrize("transport", ["http", "unix"])
def test_rename_over_a_file_while_others_look(gw, bkt, tmp_path, transport):
    """issue 38: once, under load, ENOENT right after a successful `mv -f a b` onto an existing b.
    A stress test: while one thread replaces b by renaming a onto it again and again, others
    read the directory slowly and stat both names; for 0.1 s after each rename b must read the
    new bytes and a must be gone. (It passed before the fix too: glibc reads a directory with a
    1 MiB buffer here, so a listing page is consumed at once. The race it looks for is shown
    deterministically by test_listing_across_a_rename_brings_no_ghost.)"""
    m = Mount(endpoint_of(gw, transport), bkt, tmp_path / "m", "--allow-overwrite", "--allow-delete",
              log=tmp_path / "mount.log")
    try:
        d = m.path / "race"
        d.mkdir()
        # Several READDIRPLUS calls per listing, and the renamed names in the last ones.
        for i in range(150):
            (d / f"filler-{i:03}").write_bytes(b"")
        (d / "z-b").write_bytes(b"initial")
        stop = threading.Event()
        errors: list[str] = []

        def lister():
            # A slow reader of the directory: the names at its end are handed out well after
            # the page was listed.
            while not stop.is_set():
                try:
                    with os.scandir(d) as it:
                        for _ in it:
                            time.sleep(0.0005)
                except OSError as e:
                    errors.append(f"listdir: {e}")

        def stater():
            while not stop.is_set():
                for n in ("z-a", "z-b"):
                    try:
                        os.stat(d / n)
                    except FileNotFoundError:
                        pass

        threads = [threading.Thread(target=f, daemon=True) for f in (lister, lister, stater)]
        for t in threads:
            t.start()
        try:
            for i in range(30):
                body = f"version {i} ".encode() * (i + 1)
                (d / "z-a").write_bytes(body)
                os.rename(d / "z-a", d / "z-b")
                # For a while after the rename (the listings and lookups begun before it land
                # meanwhile): b is the new file, a is gone.
                until = time.monotonic() + 0.1
                while time.monotonic() < until:
                    try:
                        got = (d / "z-b").read_bytes()
                        if got != body:
                            errors.append(f"round {i}: b has {len(got)} bytes, not the {len(body)} renamed onto it")
                    except OSError as e:
                        errors.append(f"round {i}: read b: {e}")
                    if os.path.exists(d / "z-a"):
                        errors.append(f"round {i}: a exists after the rename")
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        assert not errors, errors[:10]
        assert (Path(gw.root) / bkt / "race" / "z-b").read_bytes() == f"version {29} ".encode() * 30
    finally:
        m.close()


def getdents(fd: int, size: int = 4096) -> list[str] | None:
    """One getdents64(2) with a small buffer, as Go's os.ReadDir reads (glibc's readdir reads
    with a buffer of st_blksize, 1 MiB here, which takes a whole LIST page at once); None at
    the end of the directory."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(size)
    n = libc.syscall(217, fd, buf, size)  # SYS_getdents64 on x86_64
    assert n >= 0, os.strerror(ctypes.get_errno())
    names, off = [], 0
    while off < n:
        reclen = int.from_bytes(buf.raw[off + 16:off + 18], "little")
        names.append(buf.raw[off + 19:off + reclen].split(b"\0")[0].decode())
        off += reclen
    return names or None


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="getdents64's syscall number is x86_64's")
@pytest.mark.parametrize("transport", ["http", "unix"])
def test_listing_across_a_rename_brings_no_ghost(gw, bkt, tmp_path, transport):
    """issue 38 (ENOENT right after `mv -f a b`): a listing page (1,000 keys of one LIST) is handed
    out over several READDIRPLUS calls when the reader's buffer is small, the directory unlocked
    in between; entries of a page listed before a rename installed the old names after it: the
    source came back (a ghost that stat finds and read cannot open, for the TTL and beyond) and
    the destination took the replaced object's attributes. Names this mount changed after the
    page was listed are answered from the inode table."""
    m = Mount(endpoint_of(gw, transport), bkt, tmp_path / "m", "--allow-overwrite", "--metadata-ttl", "10s",
              log=tmp_path / "mount.log")
    try:
        root = Path(gw.root) / bkt / "dd"
        root.mkdir()
        for i in range(300):
            (root / f"f{i:03}-{'x' * 40}").write_bytes(b"")
        d = m.path / "dd"
        (d / "z-a").write_bytes(b"new contents")
        (d / "z-b").write_bytes(b"old")
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        try:
            getdents(fd)  # "." and ".."
            getdents(fd)  # the page is listed; its first entries handed out
            os.rename(d / "z-a", d / "z-b")
            while getdents(fd) is not None:
                pass
        finally:
            os.close(fd)
        assert not os.path.exists(d / "z-a"), "the renamed-away name came back from the listing"
        assert "z-a" not in os.listdir(d)
        assert os.stat(d / "z-b").st_size == 12
        assert (d / "z-b").read_bytes() == b"new contents"
        # The same for an unlink (a name removed after the page was listed stays removed).
        (d / "z-c").write_bytes(b"c")
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        try:
            getdents(fd)
            getdents(fd)
            with pytest.raises(PermissionError):
                os.unlink(d / "z-c")  # no --allow-delete: refused, nothing changes
            os.rename(d / "z-c", d / "z-d")
            while getdents(fd) is not None:
                pass
        finally:
            os.close(fd)
        assert not os.path.exists(d / "z-c") and (d / "z-d").read_bytes() == b"c"
    finally:
        m.close()


@pytest.fixture(scope="module")
def rootgw(tmp_path_factory):
    """A gateway under `--identity posix` whose account acts as root (uid 0): the file system
    decides what the mount's requests may do, and root may give files away."""
    root = tmp_path_factory.mktemp("posixroot")
    sock = tmp_path_factory.mktemp("posixsock") / "s3hpc.sock"
    cfg = tmp_path_factory.mktemp("posixcfg") / "users.toml"
    cfg.write_text(f'[[users]]\naccess_key = "{ACCESS_KEY}"\nsecret_key = "{SECRET_KEY}"\nuid = 0\ngid = 0\ngroups = [0]\n')
    srv = Server(root, ["--backend", "posix", "--identity", "posix", "--umask", "022", "--config", str(cfg),
                        "--binary", f"unix://{sock}", "--durability", "none"])
    srv.sock = sock
    yield srv
    srv.stop()


@pytest.mark.parametrize("transport", ["http", "unix"])
def test_posix_attrs_are_the_file_systems(gw, bkt, tmp_path, transport):
    """issue 38: with --posix-attrs, on an s3hpc gateway over POSIX, chmod, utimes, truncate and
    mkdir act on the gateway's files and stat shows the files' own mode, owner and times (before:
    EPERM, modes from the options). Without --identity posix the gateway refuses what would lend
    its own rights (chown, symlinks: EPERM)."""
    root = Path(gw.root) / bkt
    (root / "f").write_bytes(b"hello world")
    os.chmod(root / "f", 0o640)
    m = Mount(endpoint_of(gw, transport), bkt, tmp_path / "mnt", "--posix-attrs", "--allow-delete",
              log=tmp_path / "mount.log")
    try:
        f = m.path / "f"
        st = os.stat(f)
        assert (st.st_mode & 0o7777, st.st_uid, st.st_size) == (0o640, os.stat(root / "f").st_uid, 11)
        os.chmod(f, 0o604)
        assert os.stat(root / "f").st_mode & 0o7777 == 0o604 and os.stat(f).st_mode & 0o7777 == 0o604
        os.utime(f, ns=(1_000_000_123_456_789, 1_500_000_000_987_654_321))
        assert os.stat(root / "f").st_mtime_ns == 1_500_000_000_987_654_321
        assert (os.stat(f).st_atime_ns, os.stat(f).st_mtime_ns) == (1_000_000_123_456_789, 1_500_000_000_987_654_321)
        os.truncate(f, 5)
        assert (root / "f").read_bytes() == b"hello" and f.read_bytes() == b"hello"
        os.mkdir(m.path / "d", 0o711)
        assert os.stat(root / "d").st_mode & 0o7777 == 0o711 and os.stat(m.path / "d").st_mode & 0o7777 == 0o711
        with pytest.raises(PermissionError):
            os.chown(f, 12345, -1)
        with pytest.raises(PermissionError):
            os.symlink("f", m.path / "l")
        assert not os.path.lexists(root / "l")
    finally:
        m.close()


@pytest.mark.parametrize("transport", ["http", "unix"])
def test_posix_attrs_symlinks_links_and_owners(rootgw, tmp_path, transport):
    """issue 38: with --posix-attrs under --identity posix, symlinks and hard links are made on
    the gateway's file system (a symlink's target is kept as given and never followed by the
    gateway), and chown is honoured as the kernel allows the account (here root's)."""
    s3 = make_client(rootgw.endpoint)
    bkt = "pa-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=bkt)
    root = Path(rootgw.root) / bkt
    (root / "f").write_bytes(b"data")
    m = Mount(endpoint_of(rootgw, transport), bkt, tmp_path / "mnt", "--posix-attrs", "--allow-delete",
              log=tmp_path / "mount.log")
    try:
        p = m.path
        os.symlink("f", p / "l")
        assert os.readlink(root / "l") == "f" and os.readlink(p / "l") == "f"
        assert (p / "l").read_bytes() == b"data"  # the kernel follows it, through the mount
        os.symlink("/etc/passwd", p / "abs")
        assert os.readlink(p / "abs") == "/etc/passwd" and os.lstat(p / "abs").st_size == len("/etc/passwd")
        os.link(p / "f", p / "h")
        assert os.stat(root / "f").st_ino == os.stat(root / "h").st_ino
        assert os.stat(p / "h").st_nlink == 2 and (p / "h").read_bytes() == b"data"
        os.chown(p / "f", 65534, 65534)
        assert (os.stat(root / "f").st_uid, os.stat(root / "f").st_gid) == (65534, 65534)
        assert os.stat(p / "f").st_uid == 65534
        os.unlink(p / "l")
        assert not os.path.lexists(root / "l") and (root / "f").exists()
    finally:
        m.close()


def test_posix_attrs_refused_where_the_store_has_none(versitygw, tmp_path):
    """--posix-attrs needs the extension: against another S3 server the mount says so and fails
    (no silent fallback to the options' modes)."""
    b = "pa-" + uuid.uuid4().hex[:8]
    make_client(versitygw).create_bucket(Bucket=b)
    d = tmp_path / "mnt"
    d.mkdir()
    r = subprocess.run([s3hpc_bin(), "mount", b, str(d), "--endpoint", versitygw, "--posix-attrs"],
                       capture_output=True, text=True, env=env(), timeout=60)
    assert r.returncode != 0 and "does not offer s3hpc's file-system extension" in r.stderr, r.stderr
    assert not is_mounted(d)


def as_nobody(code: str) -> subprocess.CompletedProcess:
    """Run Python `code` as nobody:nogroup (65534:65534)."""
    def drop():
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    return subprocess.run([shutil.which("python3", path="/usr/bin:/bin") or "python3", "-c", code], capture_output=True, text=True, preexec_fn=drop, timeout=60)


@pytest.mark.parametrize("transport", ["http", "unix"])
def test_posix_attrs_inodes_creators_and_what_is_no_object(rootgw, tmp_path, transport):
    """issue 38, pjdfstest's failure classes with --posix-attrs: the hard links of a file are one
    inode in the mount (before: two, with different st_ino); files, directories and FIFOs are
    made with the caller's mode and owner (before: the gateway's umask and account); FIFOs and
    symlinks are renamed and rmdir sees them (before: RenameObject and the listing saw objects
    only); paths longer than S3's 1,024-byte keys can be made; a file just created can be
    ftruncate'd and posix_fallocate'd; O_TRUNC keeps the file's inode and mode; a directory made
    through the mount stays when its last file goes."""
    s3 = make_client(rootgw.endpoint)
    bkt = "pa-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=bkt)
    root = Path(rootgw.root) / bkt
    # Outside pytest's private directory, so that nobody reaches the mount.
    mnt = Path(tempfile.mkdtemp(prefix="pam", dir="/tmp"))
    m = Mount(endpoint_of(rootgw, transport), bkt, mnt, "--posix-attrs", "--allow-delete",
              "--allow-overwrite", "-o", "allow_other", log=tmp_path / "mount.log")
    old = os.umask(0)
    try:
        p = m.path
        # Hard links: one inode, before and after the first name goes.
        (p / "f").write_bytes(b"data")
        os.link(p / "f", p / "h")
        assert os.stat(p / "f").st_ino == os.stat(p / "h").st_ino
        assert os.stat(p / "h").st_nlink == 2
        os.chmod(p / "h", 0o600)
        assert os.stat(p / "f").st_mode & 0o7777 == 0o600
        os.unlink(p / "f")
        assert os.stat(p / "h").st_nlink == 1 and (p / "h").read_bytes() == b"data"

        # Made with the caller's mode and owner, on the gateway's file system too.
        os.mkdir(p / "shared", 0o777)
        r = as_nobody(f"""
import os
os.umask(0)
d = {str(p / 'shared')!r}
os.mkdir(d + '/dir', 0o750)
os.close(os.open(d + '/empty', os.O_CREAT | os.O_WRONLY, 0o640))
fd = os.open(d + '/full', os.O_CREAT | os.O_WRONLY, 0o604)
os.write(fd, b'bytes')
os.close(fd)
os.mkfifo(d + '/fifo', 0o620)
""")
        assert r.returncode == 0, r.stderr
        for name, mode in (("dir", 0o750), ("empty", 0o640), ("full", 0o604), ("fifo", 0o620)):
            for base in (root / "shared", p / "shared"):
                st = os.lstat(base / name)
                assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (mode, 65534, 65534), (base, name, oct(st.st_mode))
        assert (root / "shared" / "full").read_bytes() == b"bytes"

        # FIFOs and symlinks: renamed by the store, seen by rmdir.
        os.mkdir(p / "d")
        os.mkfifo(p / "d" / "pipe")
        with pytest.raises(OSError) as e:
            os.rmdir(p / "d")
        assert e.value.errno == errno.ENOTEMPTY and (root / "d" / "pipe").exists()
        os.rename(p / "d" / "pipe", p / "pipe2")
        assert stat.S_ISFIFO(os.lstat(root / "pipe2").st_mode) and not os.path.lexists(root / "d" / "pipe")
        os.symlink("pipe2", p / "sl")
        os.rename(p / "sl", p / "sl2")
        assert os.readlink(root / "sl2") == "pipe2"
        os.rmdir(p / "d")
        assert not (root / "d").exists()

        # A directory made here stays when its last file goes.
        os.mkdir(p / "keep")
        (p / "keep" / "x").write_bytes(b"x")
        os.unlink(p / "keep" / "x")
        assert (root / "keep").is_dir() and (p / "keep").is_dir()

        # Paths longer than S3's keys.
        deep = p
        for i in range(6):
            deep = deep / (f"{i}" * 200)
        os.makedirs(deep)
        os.close(os.open(deep / "file", os.O_CREAT | os.O_WRONLY, 0o600))
        rel = deep.relative_to(p) / "file"
        assert len(str(rel)) > 1024 and (root / rel).is_file() and os.stat(deep / "file").st_size == 0
        os.unlink(deep / "file")
        assert not (root / rel).exists()

        # ftruncate and posix_fallocate of a file just created.
        fd = os.open(p / "t", os.O_CREAT | os.O_RDWR, 0o644)
        os.ftruncate(fd, 1234)
        assert os.fstat(fd).st_size == 1234 and os.stat(root / "t").st_size == 1234
        os.close(fd)
        fd = os.open(p / "fa", os.O_CREAT | os.O_RDWR, 0o644)
        os.posix_fallocate(fd, 0, 567)
        os.close(fd)
        assert os.stat(root / "fa").st_size == 567 and os.stat(p / "fa").st_size == 567

        # O_TRUNC: the same file, emptied.
        os.chmod(p / "h", 0o640)
        ino = os.stat(root / "h").st_ino
        os.close(os.open(p / "h", os.O_WRONLY | os.O_TRUNC))
        st = os.stat(root / "h")
        assert (st.st_ino, st.st_size, st.st_mode & 0o7777) == (ino, 0, 0o640)
        # ... and written: a new file there, with the mode it had.
        (p / "h").write_bytes(b"new")
        assert (root / "h").read_bytes() == b"new" and os.stat(root / "h").st_mode & 0o7777 == 0o640
    finally:
        os.umask(old)
        m.close()
        shutil.rmtree(mnt, ignore_errors=True)


def test_s3fs_metadata_on_another_s3_server(versitygw, tmp_path):
    """issue 38: `--metadata s3fs` keeps a file's mode, owner and times in its object's metadata
    with s3fs's keys (x-amz-meta-mode/uid/gid/mtime), so that s3fs, rclone and this mount agree:
    what s3fs wrote is shown, chmod/chown/utimes are kept (before: EPERM), and a created file
    carries the caller's mode and owner. Without the option nothing changes (chmod: EPERM)."""
    s3 = make_client(versitygw)
    b = "md-" + uuid.uuid4().hex[:8]
    s3.create_bucket(Bucket=b)
    # An object as s3fs writes one: the whole st_mode in decimal, seconds for the time.
    s3.put_object(Bucket=b, Key="from-s3fs", Body=b"s3fs",
                  Metadata={"mode": str(0o100640), "uid": "1234", "gid": "5678", "mtime": "1600000000"})
    m = Mount(versitygw, b, tmp_path / "mnt", "--metadata", "s3fs", "--allow-delete", "--allow-overwrite",
              log=tmp_path / "mount.log")
    old = os.umask(0)
    try:
        st = os.stat(m.path / "from-s3fs")
        assert (st.st_mode & 0o7777, st.st_uid, st.st_gid, st.st_mtime) == (0o640, 1234, 5678, 1600000000)
        # Kept where s3fs reads them.
        f = m.path / "from-s3fs"
        os.chmod(f, 0o600)
        os.chown(f, 4321, 8765)
        os.utime(f, (1700000000, 1700000001))
        md = s3.head_object(Bucket=b, Key="from-s3fs")["Metadata"]
        assert (md["mode"], md["uid"], md["gid"], md["mtime"]) == (str(0o100600), "4321", "8765", "1700000001")
        assert s3.get_object(Bucket=b, Key="from-s3fs")["Body"].read() == b"s3fs"
        st = os.stat(f)
        assert (st.st_mode & 0o7777, st.st_uid, st.st_gid, st.st_mtime) == (0o600, 4321, 8765, 1700000001)
        # A created file: the caller's mode and owner, in its metadata from the upload on.
        fd = os.open(m.path / "created", os.O_CREAT | os.O_WRONLY, 0o604)
        os.write(fd, b"new")
        os.fchmod(fd, 0o640)
        os.close(fd)
        md = s3.head_object(Bucket=b, Key="created")["Metadata"]
        assert (md["mode"], md["uid"], md["gid"]) == (str(0o100640), str(os.getuid()), str(os.getgid()))
        # An overwrite (O_TRUNC) keeps them.
        (m.path / "created").write_bytes(b"again")
        md = s3.head_object(Bucket=b, Key="created")["Metadata"]
        assert md["mode"] == str(0o100640) and s3.get_object(Bucket=b, Key="created")["Body"].read() == b"again"
    finally:
        os.umask(old)
        m.close()
    # Without the option: the options' mode, and chmod is refused, not lost.
    m = Mount(versitygw, b, tmp_path / "mnt2", log=tmp_path / "mount2.log")
    try:
        assert os.stat(m.path / "from-s3fs").st_mode & 0o7777 == 0o644
        with pytest.raises(PermissionError):
            os.chmod(m.path / "from-s3fs", 0o600)
    finally:
        m.close()


class S3fsMount:
    """s3fs-fuse (`s3fs`, Debian's s3fs package) mounting `bucket` of `endpoint`: the peer whose
    object layout `--metadata s3fs` keeps."""

    def __init__(self, endpoint: str, bucket: str, path: Path, workdir: Path):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        passwd = workdir / f"s3fs-passwd-{uuid.uuid4().hex[:6]}"
        passwd.write_text(f"{ACCESS_KEY}:{SECRET_KEY}\n")
        passwd.chmod(0o600)
        r = subprocess.run(["s3fs", bucket, str(self.path), "-o", f"url={endpoint}", "-o", "use_path_request_style",
                            "-o", f"passwd_file={passwd}", "-o", "stat_cache_expire=1", "-o", "allow_other"],
                           capture_output=True, text=True, timeout=60,
                           env={k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"})
        assert r.returncode == 0, f"s3fs failed ({r.returncode}): {r.stderr}"
        assert wait_until(lambda: is_mounted(self.path), 15), "s3fs mounted nothing"

    def close(self):
        unmount(self.path)


def kinds_modes_owners(root: Path) -> dict:
    """What a mount shows of every entry below `root`: type, permission bits, owner, size,
    symlink target, mtime in whole seconds (s3fs keeps seconds)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for n in dirs + files:
            p = Path(dirpath) / n
            st = os.lstat(p)
            out[str(p.relative_to(root))] = (stat.S_IFMT(st.st_mode), st.st_mode & 0o7777, st.st_uid, st.st_gid,
                                             st.st_size if not stat.S_ISDIR(st.st_mode) else 0,
                                             os.readlink(p) if stat.S_ISLNK(st.st_mode) else None,
                                             int(st.st_mtime))
    return out


def make_tree(p: Path):
    """Directories with their own modes and owners, a symlink, a FIFO, a socket and devices, and
    files with modes, owners and times: everything s3fs keeps in objects."""
    os.mkdir(p / "d", 0o750)
    os.chown(p / "d", 1234, 5678)
    os.mkdir(p / "d" / "sub", 0o700)
    (p / "d" / "f").write_bytes(b"file in d")
    os.chmod(p / "d" / "f", 0o604)
    os.chown(p / "d" / "f", 4321, 8765)
    os.utime(p / "d" / "f", (1_600_000_000, 1_600_000_001))
    os.utime(p / "d", (1_500_000_000, 1_500_000_002))
    os.symlink("d/f", p / "link")
    os.symlink("/nowhere/at/all", p / "dangling")
    os.mkfifo(p / "fifo", 0o640)
    os.mknod(p / "chr", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(p / "sock", 0o644 | stat.S_IFSOCK)
    (p / "top").write_bytes(b"top")
    os.chmod(p / "top", 0o4711)


@pytest.mark.skipif(shutil.which("s3fs") is None, reason="s3fs (s3fs-fuse) is not installed")
def test_s3fs_and_s3hpc_mounts_of_one_bucket_agree(versitygw, tmp_path):
    """issue 38: with `--metadata s3fs` the mount keeps directories' modes and owners (on `dir/`
    objects), symlinks (the target as the body), FIFOs, sockets and devices (empty objects whose
    x-amz-meta-mode carries the type) as s3fs does, so that a tree made through an s3fs mount
    reads the same through this one and back. Before: directories showed --dir-mode, symlinks
    and special files were regular files (s3fs's objects) or EPERM/ENOSYS (made here)."""
    s3 = make_client(versitygw)
    old = os.umask(0)
    try:
        for maker in ("s3fs", "s3hpc"):
            b = f"agree-{maker}-" + uuid.uuid4().hex[:6]
            s3.create_bucket(Bucket=b)
            s3fs_m = S3fsMount(versitygw, b, tmp_path / f"s3fs-{maker}", tmp_path)
            hpc_m = Mount(versitygw, b, tmp_path / f"hpc-{maker}", "--metadata", "s3fs", "--metadata-ttl", "0",
                          "-o", "allow_other", log=tmp_path / f"mount-{maker}.log")
            try:
                make_tree(s3fs_m.path if maker == "s3fs" else hpc_m.path)
                time.sleep(1.5)  # s3fs's stat cache
                seen_s3fs, seen_hpc = kinds_modes_owners(s3fs_m.path), kinds_modes_owners(hpc_m.path)
                assert seen_hpc == seen_s3fs, f"made by {maker}:\n s3fs sees {seen_s3fs}\n s3hpc sees {seen_hpc}"
                assert seen_hpc["d"][:4] == (stat.S_IFDIR, 0o750, 1234, 5678)
                assert seen_hpc["d/sub"][:2] == (stat.S_IFDIR, 0o700)
                assert seen_hpc["d/f"] == (stat.S_IFREG, 0o604, 4321, 8765, 9, None, 1_600_000_001)
                assert seen_hpc["link"][0] == stat.S_IFLNK and seen_hpc["link"][5] == "d/f"
                assert seen_hpc["dangling"][5] == "/nowhere/at/all"
                assert seen_hpc["fifo"][:2] == (stat.S_IFIFO, 0o640)
                assert seen_hpc["chr"][:2] == (stat.S_IFCHR, 0o600)
                assert seen_hpc["sock"][:2] == (stat.S_IFSOCK, 0o644)
                assert seen_hpc["top"][:2] == (stat.S_IFREG, 0o4711)
                assert (hpc_m.path / "link").read_bytes() == b"file in d"  # followed by the kernel
                # The layout both use: a directory object, the target as a symlink's body.
                # (s3fs 1.90's chmod of a directory writes the mode without S_IFDIR.)
                assert int(s3.head_object(Bucket=b, Key="d/")["Metadata"]["mode"]) & 0o7777 == 0o750
                assert s3.get_object(Bucket=b, Key="link")["Body"].read() == b"d/f"
                assert int(s3.head_object(Bucket=b, Key="link")["Metadata"]["mode"]) == stat.S_IFLNK | 0o777
                assert int(s3.head_object(Bucket=b, Key="fifo")["Metadata"]["mode"]) == stat.S_IFIFO | 0o640
                # A change through one mount is seen through the other.
                other = hpc_m.path if maker == "s3fs" else s3fs_m.path
                os.chmod(other / "d", 0o711)
                os.chmod(other / "fifo", 0o600)
                time.sleep(1.5)
                for m in (s3fs_m, hpc_m):
                    assert os.stat(m.path / "d").st_mode & 0o7777 == 0o711, m.path
                    assert os.lstat(m.path / "fifo").st_mode & 0o7777 == 0o600, m.path
            finally:
                hpc_m.close()
                s3fs_m.close()
    finally:
        os.umask(old)


def test_s3fs_metadata_truncate(versitygw, tmp_path):
    """`--metadata s3fs`: truncate and ftruncate change the object (rewritten, as s3fs does,
    keeping its metadata) where before they were EPERM; a file being written is extended with
    zeros or cut while its bytes are all in the part buffer. Without --allow-overwrite a file of
    the bucket is not rewritten (EPERM, as O_TRUNC)."""
    s3 = make_client(versitygw)
    b = "trunc-" + uuid.uuid4().hex[:8]
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="f", Body=b"0123456789", Metadata={"mode": str(0o100640), "uid": "7", "gid": "8"})
    m = Mount(versitygw, b, tmp_path / "mnt", "--metadata", "s3fs", "--allow-overwrite", log=tmp_path / "mount.log")
    try:
        f = m.path / "f"
        os.truncate(f, 4)
        assert s3.get_object(Bucket=b, Key="f")["Body"].read() == b"0123"
        os.truncate(f, 6)
        o = s3.get_object(Bucket=b, Key="f")
        assert o["Body"].read() == b"0123\0\0" and o["Metadata"]["mode"] == str(0o100640) and o["Metadata"]["uid"] == "7"
        assert f.read_bytes() == b"0123\0\0" and os.stat(f).st_size == 6
        # A file being written: cut, then extended with zeros, then written on.
        fd = os.open(m.path / "new", os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, b"abcdef")
        os.ftruncate(fd, 2)
        os.ftruncate(fd, 4)
        os.lseek(fd, 4, os.SEEK_SET)
        os.write(fd, b"xy")
        os.close(fd)
        assert s3.get_object(Bucket=b, Key="new")["Body"].read() == b"ab\0\0xy"
    finally:
        m.close()
    m = Mount(versitygw, b, tmp_path / "mnt2", "--metadata", "s3fs", log=tmp_path / "mount2.log")
    try:
        with pytest.raises(PermissionError):
            os.truncate(m.path / "f", 1)
        assert s3.get_object(Bucket=b, Key="f")["Body"].read() == b"0123\0\0"
    finally:
        m.close()


def test_unlink_right_after_close(mounted):
    """`touch f; rm f`: an empty new file is uploaded at its writer's RELEASE, which the kernel
    sends after close() returned, so the unlink comes while the file is still being written
    here; it waits for the release (as an open does) instead of failing with EBUSY."""
    for k in range(30):
        p = mounted.path / f"t{k}"
        os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o644))
        os.unlink(p)
        assert not p.exists()


def test_extended_attributes_are_not_supported_once_for_all(mounted):
    """The mount keeps no extended attributes. It answered each getxattr with ENODATA, so `ls -l`
    (two getxattr per file) cost two FUSE round trips per file: 10,000 for 5,000 files
    (docs/MOUNT.md, "Performance"). It answers ENOSYS now, as Mountpoint does: the kernel then
    answers every later getxattr itself with EOPNOTSUPP. listxattr still lists none."""
    (mounted.root / "x.txt").write_text("x")
    f = mounted.path / "x.txt"
    for name in ("user.a", "security.selinux", "user.b"):
        with pytest.raises(OSError) as e:
            os.getxattr(f, name)
        assert e.value.errno == errno.EOPNOTSUPP, (name, e.value)
    # POSIX ACLs: the kernel's ACL code reads "no ACL" from that (ENODATA), as on a file system
    # without ACLs.
    with pytest.raises(OSError) as e:
        os.getxattr(f, "system.posix_acl_access")
    assert e.value.errno == errno.ENODATA, e.value
    assert os.listxattr(f) == []
    r = subprocess.run(["ls", "-l", str(mounted.path)], capture_output=True, text=True)
    assert r.returncode == 0 and "x.txt" in r.stdout and r.stderr == "", r
