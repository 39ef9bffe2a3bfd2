"""pjdfstest (the POSIX file-system test suite, its Rust rewrite from crates.io, installed by
scripts/install-test-deps) run as root in `s3hpc mount` of a bucket of the real gateway (posix
backend), over HTTP and over the binary protocol's unix socket. The score (test cases passed of
all, as pjdfstest counts them: a test case fails at its first failed assertion, and pjdfstest does
not count assertions) is printed, and a floor is asserted: the score may only go up. Issue 38's
target is 90 % (359) with --posix-attrs; docs/MOUNT.md ("pjdfstest") says where the mount stands and why."""
from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import uuid
from collections import Counter
from pathlib import Path

import pytest

from conftest import ACCESS_KEY, REPO, SECRET_KEY, Server, make_client
from test_mount import Mount, endpoint_of, versitygw  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.skipif(not os.path.exists("/dev/fuse"),
                       reason="/dev/fuse is absent: this machine cannot mount FUSE file systems"),
    pytest.mark.skipif(os.geteuid() != 0, reason="pjdfstest switches users: it runs as root"),
]

PJDFSTEST_VERSION = "0.2.0"

# Test cases passed (of 398 in pjdfstest 0.2.0, 23 of them skipped on Linux with this
# configuration), 2026-11-28: plain 110-114 over either transport (main before the floor: 111-113);
# --posix-attrs 370 over either transport (320 before hard links were one inode, created entries
# got the caller's mode and owner, and what is no object went through the extension). A few
# rename and timestamp cases pass or fail with timing: each floor is what the mount reaches now,
# less those. Raise them with the score.
FLOOR = {("http", "plain"): 108, ("unix", "plain"): 108,
         ("http", "posix-attrs"): 366, ("unix", "posix-attrs"): 366}

# Over versitygw (another S3 server, no file-system extension), 2026-11-29: 112 as it is; with
# --metadata s3fs 290-300 (directory objects, symlinks, special files and truncate as s3fs keeps them;
# 114-118 before, with modes, owners and times of files only). s3fs 1.90 over the same versitygw,
# in the same run: 245 (the s3fs process dies in rmdir's cases, every run, with 14 cases left).
FLOOR_OTHER = {"none": 106, "s3fs": 285}

# Linux's features (pjdfstest's ci/linux-ext4.toml) and the dummy users: Debian's nobody has the
# group nogroup; the users tests and pjdfstest are made by scripts/install-test-deps.
CONFIG = """\
[features]
posix_fallocate = {}
utime_now = {}
utimensat = {}

[settings]
naptime = 0.01
allow_remount = false

[dummy_auth]
entries = [
  ["nobody", "nogroup"],
  ["tests", "tests"],
  ["pjdfstest", "pjdfstest"],
]
"""

SUMMARY = re.compile(r"Summary: (\d+) failed, (\d+) skipped, (\d+) passed, (\d+) expected failures, (\d+) total")
CASE = re.compile(r"^(\S+::\S+)\s+(ok|FAILED|skipped|PASSED UNEXPECTEDLY|failed as expected)$")


def pjdfstest_binary() -> str:
    for cand in (os.environ.get("PJDFSTEST"), str(REPO / ".dev" / f"pjdfstest-{PJDFSTEST_VERSION}" / "bin" / "pjdfstest"),
                 shutil.which("pjdfstest")):
        if cand and os.access(cand, os.X_OK):
            return cand
    pytest.fail(f"pjdfstest is not installed: run scripts/install-test-deps (cargo install pjdfstest "
                f"--version {PJDFSTEST_VERSION}) or set PJDFSTEST")


def check_users():
    missing = []
    for user, group in (("nobody", "nogroup"), ("tests", "tests"), ("pjdfstest", "pjdfstest")):
        try:
            pwd.getpwnam(user)
            grp.getgrnam(group)
        except KeyError:
            missing.append(f"{user}:{group}")
    if missing:
        pytest.fail(f"pjdfstest's dummy users are missing ({', '.join(missing)}): run scripts/install-test-deps")


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    root = tmp_path_factory.mktemp("pjdroot")
    sock = tmp_path_factory.mktemp("pjdsock") / "s3hpc.sock"
    srv = Server(root, ["--backend", "posix", "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY,
                        "--binary", f"unix://{sock}", "--durability", "none"])
    srv.sock = sock
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def rootgw(tmp_path_factory):
    """The gateway under --identity posix, its account acting as root: what `--posix-attrs`
    needs for owners and symlinks (the kernel decides as that account)."""
    root = tmp_path_factory.mktemp("pjdposixroot")
    root.chmod(0o755)
    sock = tmp_path_factory.mktemp("pjdposixsock") / "s3hpc.sock"
    cfg = tmp_path_factory.mktemp("pjdcfg") / "users.toml"
    cfg.write_text(f'[[users]]\naccess_key = "{ACCESS_KEY}"\nsecret_key = "{SECRET_KEY}"\nuid = 0\ngid = 0\ngroups = [0]\n')
    srv = Server(root, ["--backend", "posix", "--identity", "posix", "--umask", "0", "--config", str(cfg),
                        "--binary", f"unix://{sock}", "--durability", "none"])
    srv.sock = sock
    yield srv
    srv.stop()


def run_pjdfstest(binary: str, path: Path, config: Path, allow_crash: bool = False) -> tuple[dict, Counter, str]:
    """`allow_crash`: pjdfstest may die before its summary (it does in an s3fs mount, in rmdir's
    test cases): the cases it reported are counted."""
    r = subprocess.run([binary, "-c", str(config), "-p", str(path)], capture_output=True, text=True,
                       errors="replace", timeout=900,
                       env={**os.environ, "NO_COLOR": "1", "RUST_BACKTRACE": "0"})
    out = r.stdout + r.stderr
    m = SUMMARY.search(out)
    if m is None and allow_crash:
        seen = Counter(c.group(2) for c in map(CASE.match, (x.strip() for x in out.splitlines())) if c)
        return ({"failed": seen["FAILED"], "skipped": seen["skipped"], "passed": seen["ok"], "expected": 0,
                 "total": sum(seen.values()), "crashed": True}, Counter(), out)
    assert m, f"no summary from pjdfstest (rc {r.returncode}):\n{out[-4000:]}"
    failed, skipped, passed, expected, total = map(int, m.groups())
    groups = Counter()
    for line in out.splitlines():
        c = CASE.match(line.strip())
        if c:
            groups[(c.group(1).split("::")[0], c.group(2))] += 1
    return {"failed": failed, "skipped": skipped, "passed": passed, "expected": expected, "total": total}, groups, out


@pytest.mark.parametrize("mode", ["plain", "posix-attrs"])
@pytest.mark.parametrize("transport", ["unix", "http"])
def test_pjdfstest_score(request, transport, mode, tmp_path, capsys):
    """`plain`: the mount as it is by default (modes and owners from its options, EPERM for what
    it cannot keep). `posix-attrs`: `--posix-attrs` against the gateway under --identity posix
    (an account acting as root), so modes, owners, times, symlinks and hard links are the file
    system's own."""
    binary = pjdfstest_binary()
    check_users()
    gw = request.getfixturevalue("gw" if mode == "plain" else "rootgw")
    bucket = "pjd-" + uuid.uuid4().hex[:12]
    make_client(gw.endpoint).create_bucket(Bucket=bucket)
    config = tmp_path / "pjdfstest.toml"
    config.write_text(CONFIG)
    # allow_other: pjdfstest works in the mount as other users too.
    extra = ["--posix-attrs"] if mode == "posix-attrs" else []
    # A short mount path: pjdfstest binds Unix sockets in it (sun_path holds 108 bytes).
    mnt = Path(tempfile.mkdtemp(prefix="pjd", dir="/tmp"))
    m = Mount(endpoint_of(gw, transport), bucket, mnt, "--allow-delete", "--allow-overwrite",
              "-o", "allow_other", *extra, log=tmp_path / "mount.log")
    try:
        score, groups, out = run_pjdfstest(binary, m.path, config)
        assert (m.path).is_dir(), "the mount died under pjdfstest"
    finally:
        m.close()
        shutil.rmtree(mnt, ignore_errors=True)
    (tmp_path / "pjdfstest.out").write_text(out)
    pct = 100.0 * score["passed"] / score["total"]
    by_group = ", ".join(f"{g} {groups[(g, 'ok')]}/{groups[(g, 'ok')] + groups[(g, 'FAILED')]}"
                         for g in sorted({g for g, _ in groups}))
    with capsys.disabled():
        print(f"\npjdfstest {PJDFSTEST_VERSION} on s3hpc mount ({mode}) over {transport}: {score['passed']}/{score['total']} "
              f"test cases passed ({pct:.1f} %), {score['failed']} failed, {score['skipped']} skipped; "
              f"per syscall (passed/run): {by_group}")
    floor = FLOOR[(transport, mode)]
    assert score["passed"] >= floor, (
        f"pjdfstest ({mode}) over {transport}: {score['passed']} test cases passed, below the floor of {floor}:\n"
        + "\n".join(line for line in out.splitlines() if line.rstrip().endswith("FAILED")))


def per_group(out: str) -> dict[str, tuple[int, int]]:
    """Test cases passed and run (passed or failed) per pjdfstest test file (syscall)."""
    groups: dict[str, list[int]] = {}
    for line in out.splitlines():
        c = CASE.match(line.strip())
        if c and c.group(2) in ("ok", "FAILED"):
            g = groups.setdefault(c.group(1).split("::")[0], [0, 0])
            g[0] += c.group(2) == "ok"
            g[1] += 1
    return {k: (v[0], v[1]) for k, v in groups.items()}


def run_on_versitygw(binary: str, endpoint: str, config: Path, tmp_path: Path, client: str, metadata: str = "none"):
    """pjdfstest in a mount of a fresh bucket of versitygw: `client` s3hpc (with `--metadata`)
    or s3fs. Returns the score, the per-test-file counts and pjdfstest's output."""
    bucket = "pjd-" + uuid.uuid4().hex[:12]
    make_client(endpoint).create_bucket(Bucket=bucket)
    mnt = Path(tempfile.mkdtemp(prefix="pjd", dir="/tmp"))
    if client == "s3fs":
        from test_mount import S3fsMount
        m = S3fsMount(endpoint, bucket, mnt, tmp_path)
    else:
        m = Mount(endpoint, bucket, mnt, "--allow-delete", "--allow-overwrite", "--allow-copy-rename",
                  "--metadata", metadata, "-o", "allow_other", log=tmp_path / f"mount-{metadata}.log")
    try:
        score, _, out = run_pjdfstest(binary, m.path, config, allow_crash=client == "s3fs")
        try:
            alive = m.path.is_dir()
        except OSError:  # ENOTCONN: the FUSE server is gone
            alive = False
        # s3fs 1.90 dies under pjdfstest (in rmdir's cases, every run here), and pjdfstest
        # with it: its score is what it passed until then.
        assert alive or client == "s3fs", f"the {client} mount died under pjdfstest"
        score["died"] = not alive
    finally:
        m.close()
        shutil.rmtree(mnt, ignore_errors=True)
    (tmp_path / f"pjdfstest-{client}-{metadata}.out").write_text(out)
    return score, per_group(out), out


@pytest.mark.parametrize("metadata", ["none", "s3fs"])
def test_pjdfstest_on_another_store(request, metadata, tmp_path, capsys):
    """The mount over another S3 server (versitygw, the fixture of test_mount.py), as it is
    (`none`) and with `--metadata s3fs` (modes, owners and times in object metadata, directory
    objects, symlinks and special files as s3fs keeps them). Issue 38's target there: at least
    s3fs's score on the same suite; where s3fs is installed it runs on the same versitygw in the
    same test and both scores are printed per test file."""
    binary = pjdfstest_binary()
    check_users()
    endpoint = request.getfixturevalue("versitygw")
    config = tmp_path / "pjdfstest.toml"
    config.write_text(CONFIG)
    score, groups, out = run_on_versitygw(binary, endpoint, config, tmp_path, "s3hpc", metadata)
    pct = 100.0 * score["passed"] / score["total"]
    peer = None
    if metadata == "s3fs" and shutil.which("s3fs"):
        peer = run_on_versitygw(binary, endpoint, config, tmp_path, "s3fs")
    with capsys.disabled():
        print(f"\npjdfstest {PJDFSTEST_VERSION} on s3hpc mount (--metadata {metadata}) over versitygw: "
              f"{score['passed']}/{score['total']} test cases passed ({pct:.1f} %)")
        if peer:
            pscore, pgroups, _ = peer
            print(f"s3fs over the same versitygw: {pscore['passed']} passed, {pscore['failed']} failed"
                  + (" (the s3fs process died, and pjdfstest with it, before the end)" if pscore.get("died") else ""))
            print(f"{'test file':20} {'s3hpc':>9} {'s3fs':>9}")
            for g in sorted(set(groups) | set(pgroups)):
                a, b = groups.get(g, (0, 0)), pgroups.get(g, (0, 0))
                print(f"{g:20} {a[0]:>4}/{a[1]:<4} {b[0]:>4}/{b[1]:<4}")
    floor = FLOOR_OTHER[metadata]
    assert score["passed"] >= floor, f"pjdfstest (--metadata {metadata}) over versitygw: {score['passed']} < {floor}"
