"""A hostile local user is part of the suite: `s3hpc serve --identity posix` as root on a root
that local users share (mode 1777, like /tmp), with real Unix users from useradd:

- alice: an S3 tenant, the victim;
- mallory: an S3 tenant who also has a shell on the node (plants symlinks, files, locks);
- eve: a local user with no S3 account at all.

Each attack of the hostile-local-users issue is a test that fails when its protection is removed
(docs/SECURITY.md, "Threat model")."""
from __future__ import annotations

import fcntl
import grp
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from conftest import Server, err_code, ensure_user, make_client, wait_until

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("useradd") is None,
                                reason="needs root and useradd to create the test users")

USERS = {"s3hpc-alice": ("HOSTILEALICE00000001", "secret/alice+hostile"),
         "s3hpc-mallory": ("HOSTILEMALLORY000001", "secret/mallory+hostile")}
EVE = "s3hpc-eve"
TEAM = "s3hpc-team"


def ensure_team(members):
    try:
        grp.getgrnam(TEAM)
    except KeyError:
        subprocess.run(["groupadd", TEAM], check=True)
    for m in members:
        subprocess.run(["usermod", "-a", "-G", TEAM, m], check=True)
    return grp.getgrnam(TEAM).gr_gid


class Bed:
    def __init__(self):
        self.users = {login: ensure_user(login) for login in [*USERS, EVE]}
        self.team_gid = ensure_team(["s3hpc-alice", "s3hpc-mallory"])
        self.base = Path(tempfile.mkdtemp(prefix="s3hpc-hostile-", dir="/tmp"))
        self.base.chmod(0o755)
        self.root = self.base / "root"
        self.root.mkdir()
        self.root.chmod(0o1777)
        self.cfg = self.base / "users.toml"
        lines = []
        for login, (ak, sk) in USERS.items():
            # The team group is part of every member's identity (NSS, like a login).
            lines.append(f'[[users]]\naccess_key = "{ak}"\nsecret_key = "{sk}"\nuser = "{login}"\n')
        self.cfg.write_text("\n".join(lines))
        self.srv = None
        self.start()

    def start(self, extra=()):
        self.srv = Server(self.root, extra=["--identity", "posix", "--config", str(self.cfg), "--durability",
                                            "none", "--admin-listen", "127.0.0.1:0", "--lock-timeout", "1",
                                            *extra])
        self.c = {login: make_client(self.srv.endpoint, ak, sk) for login, (ak, sk) in USERS.items()}

    def restart(self, extra=()):
        self.srv.stop()
        self.start(extra)

    def uid(self, login):
        return self.users[login].pw_uid

    def as_user(self, login, argv, check=True):
        """Run a shell command as a local user (their uid, gid and groups)."""
        u = self.users[login]
        groups = [g.gr_gid for g in grp.getgrall() if login in g.gr_mem]
        return subprocess.run(argv, user=u.pw_uid, group=u.pw_gid, extra_groups=groups, check=check,
                              capture_output=True, text=True)

    def stop(self):
        if self.srv:
            self.srv.stop()
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="module")
def bed():
    b = Bed()
    try:
        yield b
    finally:
        b.stop()


def snapshot(d: Path):
    """Every entry below `d` (and `d` itself): mode, owner, size, content of small files."""
    out = {}
    for p in [d, *sorted(d.rglob("*"))]:
        st = os.lstat(p)
        data = p.read_bytes() if p.is_file() and not p.is_symlink() and st.st_size < 4096 else None
        out[str(p.relative_to(d.parent))] = (oct(st.st_mode), st.st_uid, st.st_size, data)
    return out


def victim(bed, name):
    """alice's bucket with a private directory of private files."""
    a = bed.c["s3hpc-alice"]
    a.create_bucket(Bucket=name)
    for k in ["private/one", "private/two", "top"]:
        a.put_object(Bucket=name, Key=k, Body=b"alice's " + k.encode())
    private = bed.root / name / "private"
    assert (os.stat(private).st_mode & 0o777) == 0o700
    return private


def code_of(call):
    try:
        call()
        return "OK"
    except ClientError as e:
        return err_code(e)


def test_the_gateways_state_is_out_of_every_local_users_reach(bed):
    a, m = bed.c["s3hpc-alice"], bed.c["s3hpc-mallory"]
    a.create_bucket(Bucket="state-a")
    a.put_object(Bucket="state-a", Key="d/k", Body=b"x")
    a.put_object(Bucket="state-a", Key="c", Body=b"x", IfNoneMatch="*")
    up = a.create_multipart_upload(Bucket="state-a", Key="big")["UploadId"]
    a.upload_part(Bucket="state-a", Key="big", UploadId=up, PartNumber=1, Body=b"p" * 100)
    a.put_bucket_tagging(Bucket="state-a", Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    moat = bed.root / ".s3hpc"
    st = os.lstat(moat)
    assert (st.st_uid, st.st_mode & 0o7777) == (0, 0o700)
    # No local user can look in, create, open or lock anything there.
    alice = bed.uid("s3hpc-alice")
    for who in (EVE, "s3hpc-mallory", "s3hpc-alice"):
        for argv in (["ls", str(moat)], ["mkdir", str(moat / "staging/tmp" / f"u{alice}")],
                     ["cat", str(moat / "buckets/state-a/config/s3hpc-auth")],
                     ["touch", str(moat / "locks/state-a/0000")]):
            r = bed.as_user(who, argv, check=False)
            assert r.returncode != 0 and "Permission denied" in r.stderr, (who, argv, r)
    # Ownership of everything the gateway made: its state is root's; a user's temp directory and
    # upload staging are that user's; objects and their directories are the writer's.
    for p in [moat, *moat.rglob("*")]:
        rel = p.relative_to(moat).parts
        st = os.lstat(p)
        if rel[:2] == ("staging", "tmp") and len(rel) >= 3 and rel[2].startswith("u"):
            assert st.st_uid == int(rel[2][1:]), p
            if len(rel) == 3:
                assert st.st_mode & 0o7777 == 0o700, p
        elif rel[:2] == ("staging", "uploads") and len(rel) >= 4:
            assert st.st_uid == alice, p
        else:
            assert st.st_uid == 0, p
    for p in [bed.root / "state-a", *(bed.root / "state-a").rglob("*")]:
        st = os.lstat(p)
        assert st.st_uid == alice, p
        # The default --umask 077: S3's "private" is private on the file system too.
        assert st.st_mode & 0o077 == 0, (p, oct(st.st_mode))
    r = bed.as_user(EVE, ["cat", str(bed.root / "state-a/c")], check=False)
    assert r.returncode != 0 and "Permission denied" in r.stderr
    a.abort_multipart_upload(Bucket="state-a", Key="big", UploadId=up)
    assert code_of(lambda: m.get_object(Bucket="state-a", Key="c")) == "AccessDenied"


def test_symlinked_internal_directories_never_redirect_the_gateway(bed):
    """mallory replaces the internal directories of her own bucket by symlinks into alice's
    private directory (beneath the root): uploads, PUTs, conditional PUTs and versioned PUTs in her
    bucket never chmod, create, read or remove anything of alice's."""
    private = victim(bed, "sym-victim")
    m = bed.c["s3hpc-mallory"]
    m.create_bucket(Bucket="sym-mal")
    mal = bed.root / "sym-mal"
    target = "../../sym-victim/private"
    bed.as_user("s3hpc-mallory", ["mkdir", "-p", str(mal / ".s3hpc")])
    for d in ["uploads", "tmp", "locks", "config", "renames", "versions"]:
        bed.as_user("s3hpc-mallory", ["ln", "-s", target, str(mal / ".s3hpc" / d)])
    before = snapshot(private)
    up = m.create_multipart_upload(Bucket="sym-mal", Key="mp")["UploadId"]
    p = m.upload_part(Bucket="sym-mal", Key="mp", UploadId=up, PartNumber=1, Body=b"part")
    m.complete_multipart_upload(Bucket="sym-mal", Key="mp", UploadId=up,
                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    m.put_object(Bucket="sym-mal", Key="k", Body=b"mine")
    m.put_object(Bucket="sym-mal", Key="c", Body=b"mine", IfNoneMatch="*")
    m.put_bucket_versioning(Bucket="sym-mal", VersioningConfiguration={"Status": "Enabled"})
    # Versions live below the bucket's .s3hpc, which mallory made: the gateway refuses to use a
    # directory it did not create (AccessDenied) rather than follow her symlink.
    assert code_of(lambda: m.put_object(Bucket="sym-mal", Key="k", Body=b"v2")) in ("OK", "AccessDenied")
    assert code_of(lambda: m.put_object(Bucket="sym-mal", Key="k", Body=b"v3")) in ("OK", "AccessDenied")
    m.put_bucket_versioning(Bucket="sym-mal", VersioningConfiguration={"Status": "Suspended"})
    assert snapshot(private) == before
    assert code_of(lambda: m.get_object(Bucket="sym-victim", Key="private/one")) == "AccessDenied"
    # Nothing the gateway made is mallory's to read where it is alice's.
    for d in ["uploads", "tmp", "locks", "config", "renames", "versions"]:
        assert (mal / ".s3hpc" / d).is_symlink()


def test_versions_area_made_by_the_gateway_never_follows_a_swap(bed):
    """The versions area of a versioned bucket is made by the gateway; a writer of the bucket who
    swaps it (or a key directory of it) for a symlink gets AccessDenied, never a chmod elsewhere."""
    private = victim(bed, "ver-victim")
    m = bed.c["s3hpc-mallory"]
    m.create_bucket(Bucket="ver-mal")
    m.put_bucket_versioning(Bucket="ver-mal", VersioningConfiguration={"Status": "Enabled"})
    m.put_object(Bucket="ver-mal", Key="k", Body=b"1")
    m.put_object(Bucket="ver-mal", Key="k", Body=b"2")
    vers = bed.root / "ver-mal/.s3hpc/versions"
    st = os.lstat(bed.root / "ver-mal/.s3hpc")
    assert st.st_uid == 0 and st.st_mode & 0o7777 == 0o1777
    before = snapshot(private)
    # mallory (who may write her bucket) moves the gateway's directory away and plants a link.
    bed.as_user("s3hpc-mallory", ["mv", str(bed.root / "ver-mal/.s3hpc"), str(bed.root / "ver-mal/old")],
                check=False)
    if not (bed.root / "ver-mal/.s3hpc").exists():
        bed.as_user("s3hpc-mallory", ["ln", "-s", "../ver-victim/private", str(bed.root / "ver-mal/.s3hpc")])
    else:
        # The sticky 1777 directory is root's: she may not move it; she plants in the versions tree.
        bed.as_user("s3hpc-mallory", ["ln", "-s", "../../../ver-victim/private", str(vers / "j")], check=False)
    for k in ["k", "j", "k2"]:
        code = code_of(lambda: m.put_object(Bucket="ver-mal", Key=k, Body=b"3"))
        assert code in ("OK", "AccessDenied"), code
    assert snapshot(private) == before


def test_start_up_cleanup_never_follows_planted_symlinks(bed):
    """The stale-temp cleanup runs as root at start; it only sweeps the gateway's own staging area,
    so symlinked `.s3hpc/tmp` or `uploads` in a bucket (by mallory, or by eve in a shared bucket)
    lead it nowhere, however old the files there are."""
    private = victim(bed, "clean-victim")
    old = time.time() - 3 * 86400
    for p in private.iterdir():
        os.utime(p, (old, old))
    m = bed.c["s3hpc-mallory"]
    m.create_bucket(Bucket="clean-mal")
    mal = bed.root / "clean-mal"
    bed.as_user("s3hpc-mallory", ["mkdir", "-p", str(mal / ".s3hpc")])
    for d in ["tmp", "uploads"]:
        bed.as_user("s3hpc-mallory", ["ln", "-s", "../../clean-victim/private", str(mal / ".s3hpc" / d)])
    # eve, with no account, where the root lets anyone make a directory.
    bed.as_user(EVE, ["mkdir", "-p", str(bed.root / "eve-dir/.s3hpc")])
    bed.as_user(EVE, ["ln", "-s", "../../clean-victim/private", str(bed.root / "eve-dir/.s3hpc/tmp")])
    before = snapshot(private)
    bed.restart()
    assert snapshot(private) == before
    assert bed.c["s3hpc-alice"].get_object(Bucket="clean-victim", Key="private/one")["Body"].read() \
        == b"alice's private/one"


def test_stale_temp_files_of_users_are_swept(bed):
    """A user's own temp directory is swept too (acting as that user), by age."""
    a = bed.c["s3hpc-alice"]
    a.create_bucket(Bucket="sweep-a")
    a.put_object(Bucket="sweep-a", Key="k", Body=b"x")
    udir = bed.root / ".s3hpc/staging/tmp" / f"u{bed.uid('s3hpc-alice')}"
    assert udir.is_dir()
    stale, fresh = udir / "host.1.dead", udir / "host.2.live"
    for f in (stale, fresh):
        f.write_bytes(b"left by a killed gateway")
        os.chown(f, bed.uid("s3hpc-alice"), -1)
    old = time.time() - 3 * 86400
    os.utime(stale, (old, old))
    bed.restart()
    assert not stale.exists() and fresh.exists()
    fresh.unlink()


def test_locks_cannot_be_taken_by_users_and_waits_are_bounded(bed):
    """The lock files are the gateway's (no local user can open them); and when a lock is held
    for long (a stuck gateway on another node, simulated here by holding every stripe), waiting
    requests answer 503 SlowDown after --lock-timeout instead of piling up, and other tenants'
    requests go on."""
    a, m = bed.c["s3hpc-alice"], bed.c["s3hpc-mallory"]
    a.create_bucket(Bucket="lock-a")
    a.put_object(Bucket="lock-a", Key="k", Body=b"x", IfNoneMatch="*")
    m.create_bucket(Bucket="lock-m")
    locks = bed.root / ".s3hpc/locks/lock-a"
    assert locks.is_dir()
    r = bed.as_user(EVE, ["flock", str(locks / "0000"), "true"], check=False)
    assert r.returncode != 0
    held = []
    for stripe in range(0x1000):
        fd = os.open(locks / f"{stripe:04x}", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.append(fd)
    try:
        def conditional(i):
            t = time.monotonic()
            try:
                a.put_object(Bucket="lock-a", Key=f"c{i}", Body=b"x", IfNoneMatch="*")
                return "OK", time.monotonic() - t
            except ClientError as e:
                assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 503
                assert e.response["Error"]["Message"] == "Please reduce your request rate."
                return err_code(e), time.monotonic() - t
        with ThreadPoolExecutor(64) as ex:
            waiting = [ex.submit(conditional, i) for i in range(64)]
            time.sleep(0.3)
            t = time.monotonic()
            m.put_object(Bucket="lock-m", Key="free", Body=b"y")
            assert m.get_object(Bucket="lock-m", Key="free")["Body"].read() == b"y"
            assert time.monotonic() - t < 2.0
            results = [f.result(timeout=60) for f in waiting]
        assert {c for c, _ in results} == {"SlowDown"}, results
        assert max(d for _, d in results) < 15, results
    finally:
        for fd in held:
            os.close(fd)
    a.put_object(Bucket="lock-a", Key="after", Body=b"x", IfNoneMatch="*")


def test_a_swapped_internal_directory_does_not_make_a_group_member_the_owner(bed):
    """alice's team bucket is group-writable; mallory, a member, plants her own bucket's
    authorization document (naming her the owner) in the bucket's .s3hpc. The gateway reads
    authorization only from its own state: she stays a stranger to the bucket in S3 terms."""
    a, m = bed.c["s3hpc-alice"], bed.c["s3hpc-mallory"]
    a.create_bucket(Bucket="team-a")
    os.chown(bed.root / "team-a", bed.uid("s3hpc-alice"), bed.team_gid)
    os.chmod(bed.root / "team-a", 0o2770)
    m.create_bucket(Bucket="team-mal")
    m.put_bucket_ownership_controls(Bucket="team-mal", OwnershipControls={
        "Rules": [{"ObjectOwnership": "BucketOwnerPreferred"}]})
    mine = bed.root / ".s3hpc/buckets/team-mal/config"
    docs = {p.name: p.read_bytes() for p in mine.iterdir()}
    assert docs, "mallory's bucket has authorization documents"
    plant = bed.root / "team-a/.s3hpc/config"
    bed.as_user("s3hpc-mallory", ["mkdir", "-p", str(plant)])
    for name, data in docs.items():
        tmp = bed.base / f"doc-{name}"
        tmp.write_bytes(data)
        tmp.chmod(0o644)
        bed.as_user("s3hpc-mallory", ["cp", str(tmp), str(plant / name)])
    bed.restart()
    a, m = bed.c["s3hpc-alice"], bed.c["s3hpc-mallory"]
    assert code_of(lambda: m.put_bucket_policy(Bucket="team-a", Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                                                "Resource": "arn:aws:s3:::team-a/*"}]}))) == "AccessDenied"
    assert code_of(lambda: m.get_bucket_acl(Bucket="team-a")) == "AccessDenied"
    acl = a.get_bucket_acl(Bucket="team-a")
    assert acl["Owner"]["ID"] != bed.c["s3hpc-mallory"].get_bucket_acl(Bucket="team-mal")["Owner"]["ID"]


def test_an_unreadable_subdirectory_does_not_fail_the_listing(bed):
    a = bed.c["s3hpc-alice"]
    a.create_bucket(Bucket="unread-a")
    for k in ["a/1", "b/2", "c/3"]:
        a.put_object(Bucket="unread-a", Key=k, Body=b"x")
    os.chmod(bed.root / "unread-a/b", 0o000)
    try:
        keys = [o["Key"] for o in a.list_objects_v2(Bucket="unread-a")["Contents"]]
        assert keys == ["a/1", "c/3"]
        # Asked for by prefix, it is left out the same way (and logged).
        assert "Contents" not in a.list_objects_v2(Bucket="unread-a", Prefix="b/")
    finally:
        os.chmod(bed.root / "unread-a/b", 0o700)
    assert any("skipped b/" in line for line in bed.srv.output), "".join(bed.srv.output[-20:])


def test_gateway_work_never_inherits_a_users_identity(bed):
    """With --identity posix a blocking thread keeps the last request's identity; the readiness
    probe and the uploads gauge run as the gateway regardless."""
    a = bed.c["s3hpc-alice"]
    a.create_bucket(Bucket="ready-a")
    line = next(x for x in bed.srv.output if "admin on" in x) if wait_until(
        lambda: any("admin on" in x for x in bed.srv.output), 10) else ""
    admin = re.search(r"admin on (http://\S+)", line).group(1)
    codes = []
    for i in range(40):
        a.put_object(Bucket="ready-a", Key=f"k{i}", Body=b"x" * 4096)
        try:
            with urllib.request.urlopen(admin + "/health/ready", timeout=10) as r:
                codes.append(r.status)
        except urllib.error.HTTPError as e:
            codes.append(e.code)
    assert codes == [200] * 40
    up = a.create_multipart_upload(Bucket="ready-a", Key="m")["UploadId"]
    with urllib.request.urlopen(admin + "/metrics", timeout=10) as r:
        text = r.read().decode()
    assert re.search(r"^s3hpc_multipart_uploads_in_progress(\{[^}]*\})? [1-9]", text, re.M), text[-2000:]
    a.abort_multipart_upload(Bucket="ready-a", Key="m", UploadId=up)


def test_racing_flips_of_every_area_never_reach_another_tenant(bed):
    """mallory flips every directory the gateway creates or enters in her bucket (.s3hpc, its
    versions area, a key directory) between a real directory and a symlink into alice's private
    directory, while both tenants run PUTs, uploads, versioned PUTs and deletes: nothing of alice's
    changes, and nothing outside mallory's bucket becomes hers."""
    private = victim(bed, "race-victim")
    a, m = bed.c["s3hpc-alice"], bed.c["s3hpc-mallory"]
    m.create_bucket(Bucket="race-mal")
    m.put_bucket_versioning(Bucket="race-mal", VersioningConfiguration={"Status": "Enabled"})
    m.put_object(Bucket="race-mal", Key="sub/k", Body=b"0")
    before = snapshot(private)
    flipper = f"""
import os, time
mal = {str(bed.root / 'race-mal')!r}
end = time.time() + 6
n = 0
while time.time() < end:
    for d, target in [("sub", "../race-victim/private"), (".s3hpc/versions/sub", "../../../race-victim/private"),
                      (".s3hpc", "../race-victim/private")]:
        p = os.path.join(mal, d)
        try:
            os.rename(p, p + ".away")
        except OSError:
            pass
        try:
            os.symlink(target, p)
        except OSError:
            pass
        time.sleep(0.001)
        try:
            os.unlink(p)
        except OSError:
            pass
        try:
            os.rename(p + ".away", p)
        except OSError:
            pass
        n += 1
print(n)
"""
    proc = threading.Thread(target=lambda: bed.as_user("s3hpc-mallory", ["python3", "-c", flipper], check=False))
    proc.start()
    errors = []

    def tenant(c, bucket, i):
        for j in range(40):
            for call in (
                lambda: c.put_object(Bucket=bucket, Key=f"sub/k{i}", Body=b"x" * 1000),
                lambda: c.put_object(Bucket=bucket, Key="sub/k", Body=b"v"),
                lambda: c.put_object(Bucket=bucket, Key=f"sub/c{i}.{j}", Body=b"c", IfNoneMatch="*"),
                lambda: c.delete_object(Bucket=bucket, Key=f"sub/k{i}"),
            ):
                try:
                    call()
                except ClientError as e:
                    if err_status(e) >= 500:
                        errors.append(str(e))
    with ThreadPoolExecutor(4) as ex:
        fs = [ex.submit(tenant, m, "race-mal", i) for i in range(3)]
        fs.append(ex.submit(tenant, a, "race-victim", 9))
        for f in fs:
            f.result()
    proc.join()
    after = snapshot(private)
    mallory = bed.uid("s3hpc-mallory")
    assert not [k for k, v in after.items() if v[1] == mallory], "mallory's files in alice's directory"
    assert {k: v for k, v in after.items() if k in before} == before
    assert (os.stat(private).st_mode & 0o7777) == 0o700
    assert not errors, errors[:3]


def err_status(e):
    return e.response["ResponseMetadata"]["HTTPStatusCode"]


def test_old_layout_state_is_moved_once(tmp_path):
    """A root written before the moat (`BUCKET/.s3hpc/config`, `tags`, `created`) keeps its
    configuration: moved into ROOT/.s3hpc at the first start, and only then."""
    root = tmp_path / "root"
    srv = Server(root, extra=["--access-key", "OLDLAYOUT00000000001", "--secret-key", "old/secret"])
    c = make_client(srv.endpoint, "OLDLAYOUT00000000001", "old/secret")
    c.create_bucket(Bucket="donor")
    c.put_bucket_cors(Bucket="donor", CORSConfiguration={"CORSRules": [{"AllowedMethods": ["GET"],
                                                                        "AllowedOrigins": ["*"]}]})
    c.put_bucket_tagging(Bucket="donor", Tagging={"TagSet": [{"Key": "team", "Value": "x"}]})
    srv.stop()
    state = root / ".s3hpc/buckets/donor"
    # An old-layout bucket, as an earlier s3hpc left it.
    old = root / "legacy/.s3hpc"
    (old / "config").mkdir(parents=True)
    shutil.copy(state / "config/cors", old / "config/cors")
    shutil.copy(state / "tags", old / "tags")
    (old / "created").write_text("1700000000000000000")
    (root / ".s3hpc/layout").unlink()
    srv = Server(root, extra=["--access-key", "OLDLAYOUT00000000001", "--secret-key", "old/secret"])
    try:
        c = make_client(srv.endpoint, "OLDLAYOUT00000000001", "old/secret")
        assert c.get_bucket_cors(Bucket="legacy")["CORSRules"][0]["AllowedMethods"] == ["GET"]
        assert c.get_bucket_tagging(Bucket="legacy")["TagSet"] == [{"Key": "team", "Value": "x"}]
        created = {b["Name"]: b["CreationDate"] for b in c.list_buckets()["Buckets"]}["legacy"]
        assert created.year == 2023
        # Planted after the move: never read.
        (root / "later/.s3hpc/config").mkdir(parents=True)
        shutil.copy(state / "config/cors", root / "later/.s3hpc/config/cors")
    finally:
        srv.stop()
    srv = Server(root, extra=["--access-key", "OLDLAYOUT00000000001", "--secret-key", "old/secret"])
    try:
        c = make_client(srv.endpoint, "OLDLAYOUT00000000001", "old/secret")
        assert code_of(lambda: c.get_bucket_cors(Bucket="later")) == "NoSuchCORSConfiguration"
    finally:
        srv.stop()


def test_state_of_a_bucket_removed_behind_the_gateway_is_not_inherited(tmp_path):
    """`rm -r` of a bucket and a `mkdir` of the same name by someone else: the new directory
    does not inherit the old bucket's configuration (policy, CORS, owner)."""
    root = tmp_path / "root"
    srv = Server(root, extra=["--access-key", "RMRBUCKET00000000001", "--secret-key", "rm/secret"])
    try:
        c = make_client(srv.endpoint, "RMRBUCKET00000000001", "rm/secret")
        c.create_bucket(Bucket="reborn")
        c.put_bucket_cors(Bucket="reborn", CORSConfiguration={"CORSRules": [{"AllowedMethods": ["GET"],
                                                                             "AllowedOrigins": ["*"]}]})
        assert c.get_bucket_cors(Bucket="reborn")["CORSRules"]
        shutil.rmtree(root / "reborn")
        (root / "reborn").mkdir()
        assert code_of(lambda: c.get_bucket_cors(Bucket="reborn")) == "NoSuchCORSConfiguration"
    finally:
        srv.stop()


def test_start_up_says_what_the_root_offers(tmp_path):
    """One line at start: the root's file system, its xattrs, O_TMPFILE, RENAME_NOREPLACE, OFD
    locks, and the lock mode the gateway will use."""
    srv = Server(tmp_path / "root", extra=["--access-key", "PROBELINE00000000001", "--secret-key", "p/secret",
                                           "--lock-mode", "flock", "--lock-timeout", "2.5"])
    try:
        assert wait_until(lambda: any("O_TMPFILE" in line for line in srv.output), 10)
        line = next(line for line in srv.output if "O_TMPFILE" in line)
        assert re.search(r"root \S+: \S+ \((local|shared by nodes)\), user xattrs ", line), line
        assert "RENAME_NOREPLACE yes" in line and "OFD locks yes" in line, line
        assert "lock mode flock (wait at most 2.5s)" in line, line
        # Nothing of the probe is left behind.
        assert not list((tmp_path / "root" / ".s3hpc" / "staging" / "tmp").iterdir())
    finally:
        srv.stop()
