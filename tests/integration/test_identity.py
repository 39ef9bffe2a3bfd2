"""`s3hpc serve --identity posix`: each request acts as its account's POSIX user, so files belong
to that user and the kernel decides what each user may do. Real Unix users made with useradd
(CI runs as root; elsewhere the tests say why they do not run)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from conftest import Server, err_code, ensure_user, make_client, s3hpc_bin

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("useradd") is None,
                                reason="needs root and useradd to create the test users")

USERS = {"s3hpc-ia": ("IDENTITYUSERA0000001", "secret/a+identity"),
         "s3hpc-ib": ("IDENTITYUSERB0000001", "secret/b+identity")}


@pytest.fixture(scope="module")
def posix_gateway():
    users = {login: ensure_user(login) for login in USERS}
    # A root every test user can reach and create buckets in (like /tmp).
    base = Path(tempfile.mkdtemp(prefix="s3hpc-ident-", dir="/tmp"))
    base.chmod(0o755)
    root = base / "root"
    root.mkdir()
    root.chmod(0o1777)
    cfg = base / "users.toml"
    lines = []
    for login, (ak, sk) in USERS.items():
        # One account by login name (NSS), the other by numeric ids.
        if login.endswith("ia"):
            ident = f'user = "{login}"'
        else:
            ident = f"uid = {users[login].pw_uid}\ngid = {users[login].pw_gid}\ngroups = [{users[login].pw_gid}]"
        lines.append(f'[[users]]\naccess_key = "{ak}"\nsecret_key = "{sk}"\n{ident}\n')
    cfg.write_text("\n".join(lines))
    srv = Server(root, extra=["--identity", "posix", "--umask", "022", "--config", str(cfg), "--durability", "none",
                              "--admin-listen", "127.0.0.1:0"])
    try:
        clients = {login: make_client(srv.endpoint, ak, sk) for login, (ak, sk) in USERS.items()}
        yield srv, root, users, clients
    finally:
        srv.stop()
        shutil.rmtree(base, ignore_errors=True)


def anonymous_client(endpoint):
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


def owner(p: Path) -> int:
    return os.lstat(p).st_uid


def test_objects_belong_to_the_account_and_the_kernel_decides(posix_gateway):
    srv, root, users, c = posix_gateway
    a, b = users["s3hpc-ia"], users["s3hpc-ib"]
    ca, cb = c["s3hpc-ia"], c["s3hpc-ib"]
    ca.create_bucket(Bucket="ident-a")
    assert owner(root / "ident-a") == a.pw_uid
    ca.put_object(Bucket="ident-a", Key="dir/f", Body=b"from a")
    assert owner(root / "ident-a/dir/f") == a.pw_uid
    assert owner(root / "ident-a/dir") == a.pw_uid
    assert (os.stat(root / "ident-a/dir/f").st_mode & 0o777) == 0o644  # the default --umask 022

    # S3 first: A's bucket is private, so B is refused whatever the mode bits say.
    with pytest.raises(ClientError) as e:
        cb.get_object(Bucket="ident-a", Key="dir/f")
    assert err_code(e.value) == "AccessDenied"
    # A shares the bucket by policy (reads, writes and deletes for everyone, anonymous too).
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
         "Resource": "arn:aws:s3:::ident-a/*"}]}
    ca.put_bucket_policy(Bucket="ident-a", Policy=json.dumps(policy))
    with pytest.raises(ClientError) as e:
        cb.put_bucket_policy(Bucket="ident-a", Policy=json.dumps(policy))
    assert err_code(e.value) == "AccessDenied"
    anon = anonymous_client(srv.endpoint)
    # Now B and anonymous read what the mode bits let everyone read; writes and deletes, which the
    # policy allows, are the kernel's to refuse (A's directories are 0755).
    assert cb.get_object(Bucket="ident-a", Key="dir/f")["Body"].read() == b"from a"
    assert anon.get_object(Bucket="ident-a", Key="dir/f")["Body"].read() == b"from a"
    with pytest.raises(ClientError) as e:
        anon.put_object(Bucket="ident-a", Key="dir/anon", Body=b"x")
    assert err_code(e.value) == "AccessDenied"
    for what, call in [
        ("put", lambda: cb.put_object(Bucket="ident-a", Key="dir/intruder", Body=b"x")),
        ("delete", lambda: cb.delete_object(Bucket="ident-a", Key="dir/f")),
        ("mpu", lambda: cb.create_multipart_upload(Bucket="ident-a", Key="big")),
    ]:
        with pytest.raises(ClientError) as e:
            call()
        assert err_code(e.value) == "AccessDenied", what
    assert (root / "ident-a/dir/f").read_bytes() == b"from a"
    assert not (root / "ident-a/dir/intruder").exists()

    # A chmod on the POSIX side takes effect at once, for S3 readers too, whatever the policy says.
    os.chmod(root / "ident-a/dir/f", 0o600)
    for who in (cb, anon):
        with pytest.raises(ClientError) as e:
            who.get_object(Bucket="ident-a", Key="dir/f")
        assert err_code(e.value) == "AccessDenied"
    assert ca.get_object(Bucket="ident-a", Key="dir/f")["Body"].read() == b"from a"
    os.chmod(root / "ident-a", 0o700)
    ca.put_bucket_policy(Bucket="ident-a", Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::ident-a"}]}))
    with pytest.raises(ClientError) as e:
        cb.list_objects_v2(Bucket="ident-a")
    assert err_code(e.value) == "AccessDenied"
    assert [o["Key"] for o in ca.list_objects_v2(Bucket="ident-a")["Contents"]] == ["dir/f"]

    # The switches between the two accounts are counted (s3hpc_identity_switches_total).
    import re
    import urllib.request
    admin = next(re.search(r"admin on (http://\S+)", l).group(1) for l in srv.output if "admin on" in l)
    text = urllib.request.urlopen(admin + "/metrics", timeout=10).read().decode()
    switched = float(re.search(r"^s3hpc_identity_switches_total (\S+)$", text, re.M).group(1))
    assert switched >= 2, text[-2000:]

    # B's own multipart upload completes as B.
    cb.create_bucket(Bucket="ident-b")
    up = cb.create_multipart_upload(Bucket="ident-b", Key="big")["UploadId"]
    part = cb.upload_part(Bucket="ident-b", Key="big", UploadId=up, PartNumber=1, Body=b"p" * 1024)
    cb.complete_multipart_upload(Bucket="ident-b", Key="big", UploadId=up,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    assert owner(root / "ident-b/big") == b.pw_uid


def test_an_account_without_a_posix_identity_is_refused_at_start(tmp_path):
    cfg = tmp_path / "users.toml"
    cfg.write_text('[[users]]\naccess_key = "NOIDENTITY0000000001"\nsecret_key = "s"\n')
    p = subprocess.run([s3hpc_bin(), "serve", str(tmp_path / "root"), "--listen", "127.0.0.1:0",
                        "--identity", "posix", "--config", str(cfg)], capture_output=True, text=True, timeout=30)
    assert p.returncode != 0
    assert "NOIDENTITY0000000001 has no POSIX identity" in p.stderr


def test_unknown_fields_in_the_users_file_are_refused_with_their_line(tmp_path):
    cfg = tmp_path / "users.toml"
    cfg.write_text('[[users]]\naccess_key = "AK"\nsecret_key = "s"\nuid = 1000\ngid = 1000\nshell = "x"\n')
    p = subprocess.run([s3hpc_bin(), "serve", str(tmp_path / "root"), "--listen", "127.0.0.1:0",
                        "--config", str(cfg)], capture_output=True, text=True, timeout=30)
    assert p.returncode != 0
    assert "shell" in p.stderr and "line 6" in p.stderr, p.stderr
