"""Credentials without an administrator (docs/CREDENTIALS.md): real Unix users (useradd) run
`s3hpc credentials create|list|revoke` against the gateway's Unix socket (`serve --user-keys`),
the gateway takes their uid from the kernel, and the key it prints acts as that POSIX user over
S3 (boto3). Keys live in ROOT/.s3hpc/credentials, shared by every gateway on the root; STS
GetSessionToken on the S3 endpoint gives temporary credentials boto3's own STS client reads.
CI runs as root; elsewhere the tests say why they do not run."""
from __future__ import annotations

import grp
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from conftest import Server, err_code, err_status, ensure_user, make_client, s3hpc_bin, wait_until

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("useradd") is None,
                                reason="needs root and useradd to create the test users")

ALICE, BOB = "s3hpc-kalice", "s3hpc-kbob"
ADMIN = ("CREDSADMIN0000000001", "admin/secret+creds")


class Bed:
    def __init__(self):
        self.users = {u: ensure_user(u) for u in (ALICE, BOB)}
        self.base = Path(tempfile.mkdtemp(prefix="s3hpc-creds-", dir="/tmp"))
        self.base.chmod(0o755)
        self.root = self.base / "root"
        self.root.mkdir()
        self.root.chmod(0o1777)
        for u in self.users:
            home = self.base / ("home-" + u)
            home.mkdir()
            os.chown(home, self.users[u].pw_uid, self.users[u].pw_gid)
        cfg = self.base / "users.toml"
        # The users file keeps working beside the key store: an administrator acting as root.
        cfg.write_text(f'[[users]]\naccess_key = "{ADMIN[0]}"\nsecret_key = "{ADMIN[1]}"\nuser = "root"\nadmin = true\n')
        common = ["--identity", "posix", "--umask", "022", "--config", str(cfg), "--durability", "none",
                  "--user-keys", "--sts-min-duration", "1", "--user-keys-max", "20"]
        self.common = common
        self.sock_a = self.base / "a.sock"
        self.sock_b = self.base / "b.sock"
        self.a = Server(self.root, extra=[*common, "--binary", f"unix://{self.sock_a}"])
        self.b = Server(self.root, extra=[*common, "--binary", f"unix://{self.sock_b}"])

    def home(self, login):
        return self.base / ("home-" + login)

    def cli(self, login, *args, sock=None, check=True, env=None):
        """`s3hpc credentials ARGS` as a local user (uid, gid, groups), HOME their own."""
        u = self.users[login]
        groups = [g.gr_gid for g in grp.getgrall() if login in g.gr_mem]
        e = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.home(login)),
             "S3HPC_ENDPOINT": f"unix://{sock or self.sock_a}", **(env or {})}
        r = subprocess.run([s3hpc_bin(), "credentials", *args], user=u.pw_uid, group=u.pw_gid,
                           extra_groups=groups, capture_output=True, text=True, env=e)
        if check and r.returncode != 0:
            raise AssertionError(f"s3hpc credentials {args} as {login}: rc {r.returncode}\n{r.stdout}\n{r.stderr}")
        return r

    def create(self, login, *args, sock=None):
        out = self.cli(login, "create", *args, sock=sock).stdout
        ak = re.search(r"^AccessKeyId: (\S+)$", out, re.M).group(1)
        sk = re.search(r"^SecretAccessKey: (\S+)$", out, re.M).group(1)
        return ak, sk

    def stop(self):
        self.a.stop()
        self.b.stop()
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="module")
def bed():
    b = Bed()
    try:
        yield b
    finally:
        b.stop()


def sts_client(endpoint, ak, sk, token=None, validate=True):
    import boto3
    from botocore.config import Config
    return boto3.client("sts", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=ak,
                        aws_secret_access_key=sk, aws_session_token=token,
                        config=Config(retries={"max_attempts": 1}, parameter_validation=validate))


def test_a_user_gets_a_key_that_acts_as_them(bed):
    ak, sk = bed.create(ALICE, "--description", "laptop")
    alice = bed.users[ALICE]
    s3 = make_client(bed.a.endpoint, ak, sk)
    s3.create_bucket(Bucket="kalice-bucket")
    s3.put_object(Bucket="kalice-bucket", Key="dir/f", Body=b"mine")
    # --identity posix: the files are Alice's.
    assert os.lstat(bed.root / "kalice-bucket/dir/f").st_uid == alice.pw_uid
    assert os.lstat(bed.root / "kalice-bucket").st_uid == alice.pw_uid
    assert s3.get_object(Bucket="kalice-bucket", Key="dir/f")["Body"].read() == b"mine"
    # The other gateway on the root knows the key at once (read on a miss).
    s3b = make_client(bed.b.endpoint, ak, sk)
    assert s3b.get_object(Bucket="kalice-bucket", Key="dir/f")["Body"].read() == b"mine"
    # Listed for her, without its secret; the key file is the gateway's alone.
    out = bed.cli(ALICE, "list").stdout
    assert ak in out and "laptop" in out and sk not in out
    f = bed.root / ".s3hpc" / "credentials" / f"{ak}.json"
    st = os.stat(f)
    assert st.st_mode & 0o777 == 0o600 and st.st_uid == 0
    assert os.stat(f.parent).st_mode & 0o777 == 0o700
    r = subprocess.run(["cat", str(f)], user=alice.pw_uid, group=alice.pw_gid, capture_output=True)
    assert r.returncode != 0, "a user read the key store"


def test_a_key_of_one_user_cannot_act_as_another(bed):
    ak_a, sk_a = bed.create(ALICE)
    ak_b, sk_b = bed.create(BOB)
    a, b = make_client(bed.a.endpoint, ak_a, sk_a), make_client(bed.a.endpoint, ak_b, sk_b)
    a.create_bucket(Bucket="kalice-private")
    a.put_object(Bucket="kalice-private", Key="secret", Body=b"alice only")
    with pytest.raises(ClientError) as e:
        b.get_object(Bucket="kalice-private", Key="secret")
    assert err_code(e.value) == "AccessDenied"
    b.create_bucket(Bucket="kbob-bucket")
    b.put_object(Bucket="kbob-bucket", Key="x", Body=b"bob")
    assert os.lstat(bed.root / "kbob-bucket/x").st_uid == bed.users[BOB].pw_uid
    # Alice's secret does not sign for Bob's key.
    forged = make_client(bed.a.endpoint, ak_b, sk_a)
    with pytest.raises(ClientError) as e:
        forged.list_objects_v2(Bucket="kbob-bucket")
    assert err_code(e.value) == "SignatureDoesNotMatch"


def test_users_list_and_revoke_only_their_own(bed):
    ak_a, _ = bed.create(ALICE)
    ak_b, sk_b = bed.create(BOB)
    assert ak_b not in bed.cli(ALICE, "list").stdout
    assert ak_a not in bed.cli(BOB, "list").stdout
    r = bed.cli(ALICE, "revoke", ak_b, check=False)
    assert r.returncode != 0 and "AccessDenied" in r.stderr, r.stderr
    assert make_client(bed.a.endpoint, ak_b, sk_b).list_buckets()
    # The users file's administrator (uid 0) sees and may revoke everyone's.
    out = subprocess.run([s3hpc_bin(), "credentials", "--endpoint", f"unix://{bed.sock_a}", "list"],
                         capture_output=True, text=True, check=True).stdout
    assert ak_a in out and ak_b in out


def test_revocation_reaches_the_other_gateway_within_a_second(bed):
    ak, sk = bed.create(ALICE, sock=bed.sock_a)
    on_b = make_client(bed.b.endpoint, ak, sk)
    on_b.list_buckets()
    bed.cli(ALICE, "revoke", ak, sock=bed.sock_a)
    t0 = time.monotonic()
    while True:
        try:
            on_b.list_buckets()
        except ClientError as e:
            assert err_code(e) == "InvalidAccessKeyId"
            break
        assert time.monotonic() - t0 < 1.0, "gateway B still takes a revoked key after 1 s"
        time.sleep(0.05)
    with pytest.raises(ClientError) as e:
        make_client(bed.a.endpoint, ak, sk).list_buckets()
    assert err_code(e.value) == "InvalidAccessKeyId"


def test_expired_keys_are_refused(bed):
    ak, sk = bed.create(ALICE, "--expires", "2s")
    s3 = make_client(bed.a.endpoint, ak, sk)
    s3.list_buckets()
    time.sleep(2.5)
    with pytest.raises(ClientError) as e:
        s3.list_buckets()
    assert err_code(e.value) == "InvalidAccessKeyId"
    assert ak not in bed.cli(ALICE, "list").stdout


def test_lifetime_and_count_are_bounded(bed):
    r = bed.cli(ALICE, "create", "--expires", "400d", check=False)
    assert r.returncode != 0 and "InvalidArgument" in r.stderr, r.stderr
    # --user-keys-max 20: a user cannot fill the key store.
    for login in (BOB,):
        made = []
        while True:
            r = bed.cli(login, "create", check=False)
            if r.returncode != 0:
                assert "InvalidRequest" in r.stderr and "revoke one first" in r.stderr, r.stderr
                break
            made.append(re.search(r"^AccessKeyId: (\S+)$", r.stdout, re.M).group(1))
            assert len(made) <= 20
        for ak in made:
            bed.cli(login, "revoke", ak)


def test_aws_profile_is_written_for_the_user(bed):
    r = bed.cli(ALICE, "create", "--aws-profile", "hpc")
    ak = re.search(r"^AccessKeyId: (\S+)$", r.stdout, re.M).group(1)
    cred = bed.home(ALICE) / ".aws" / "credentials"
    st = os.stat(cred)
    assert st.st_uid == bed.users[ALICE].pw_uid and st.st_mode & 0o777 == 0o600
    assert os.stat(cred.parent).st_mode & 0o777 == 0o700
    text = cred.read_text()
    assert "[hpc]" in text and f"aws_access_key_id = {ak}" in text
    # A second profile keeps the first.
    bed.cli(ALICE, "create", "--aws-profile", "other")
    text = cred.read_text()
    assert "[hpc]" in text and "[other]" in text


def test_keys_need_the_unix_socket_and_user_keys(bed):
    # Over TCP nobody is named by the kernel: refused by the CLI (and by the server).
    r = bed.cli(ALICE, "create", "--endpoint", "tcp://127.0.0.1:1", check=False)
    assert r.returncode != 0 and "Unix socket" in r.stderr
    # No endpoint anywhere: told where to give one.
    r = bed.cli(ALICE, "list", env={"S3HPC_ENDPOINT": "", "S3HPC_CONFIG": str(bed.base / "none.toml")}, check=False)
    assert r.returncode != 0 and "S3HPC_ENDPOINT" in r.stderr
    # The site file names it.
    site = bed.base / "client.toml"
    site.write_text(f'endpoint = "unix://{bed.sock_b}"\n')
    site.chmod(0o644)
    r = bed.cli(ALICE, "list", env={"S3HPC_ENDPOINT": "", "S3HPC_CONFIG": str(site)})
    assert r.returncode == 0


def test_a_peer_without_account_may_only_manage_keys(bed):
    """A keys-only connection (no account has the uid) gets no store access. (Two layers refuse
    here: the server's keys-only gate and S3 authorization, which has no caller; the gate alone
    is tested in crates/s3hpc-wire/tests/keys.rs, behind a store that does not authorize.)"""
    u = bed.users[BOB]
    # Store access needs an account: over a raw connection without a key (as `s3hpc
    # credentials` makes), ListBuckets is refused while the connection itself is accepted.
    code = ("import socket,struct,sys\n"
            f"s=socket.socket(socket.AF_UNIX);s.connect({str(bed.sock_a)!r})\n"
            "s.sendall(b'S3HW'+struct.pack('<HH',1,0))\n"
            "pre=s.recv(40)\n"
            "auth=bytes([0,0])\n"
            "s.sendall(struct.pack('<BBHII',1,0,0,0,len(auth))+auth)\n"
            "h=s.recv(12);t=h[0];n=struct.unpack('<I',h[8:12])[0];s.recv(n)\n"
            "assert t==2,t\n"
            "s.sendall(struct.pack('<BBHII',0x10,0,0,1,1)+bytes([4]))\n"
            "h=b''\n"
            "while len(h)<12: h+=s.recv(12-len(h))\n"
            "n=struct.unpack('<I',h[8:12])[0];p=b''\n"
            "while len(p)<n: p+=s.recv(n-len(p))\n"
            "print(h[0],p[0],struct.unpack('<H',p[1:3])[0])\n")
    py = "/usr/bin/python3"
    if not os.access(py, os.X_OK):
        pytest.skip("no system python3 for the test user")
    r = subprocess.run([py, "-c", code], user=u.pw_uid, group=u.pw_gid, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ty, status, err = map(int, r.stdout.split())
    assert (ty, status, err) == (0x20, 1, 0), r.stdout  # RESPONSE, failure, AccessDenied


def test_sts_session_credentials_work_with_boto3(bed):
    ak, sk = bed.create(ALICE)
    sts = sts_client(bed.a.endpoint, ak, sk)
    c = sts.get_session_token(DurationSeconds=900)["Credentials"]
    assert c["AccessKeyId"] != ak and c["SessionToken"]
    import boto3
    from botocore.config import Config
    cfg = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})
    s3 = boto3.client("s3", endpoint_url=bed.b.endpoint, region_name="us-east-1", config=cfg,
                      aws_access_key_id=c["AccessKeyId"], aws_secret_access_key=c["SecretAccessKey"],
                      aws_session_token=c["SessionToken"])
    s3.create_bucket(Bucket="kalice-sts")
    s3.put_object(Bucket="kalice-sts", Key="job", Body=b"batch")
    # The session acts as the user who asked for it.
    assert os.lstat(bed.root / "kalice-sts/job").st_uid == bed.users[ALICE].pw_uid
    # A tampered token is refused as AWS does.
    bad = boto3.client("s3", endpoint_url=bed.a.endpoint, region_name="us-east-1", config=cfg,
                       aws_access_key_id=c["AccessKeyId"], aws_secret_access_key=c["SecretAccessKey"],
                       aws_session_token=c["SessionToken"][:-4] + "AAAA")
    with pytest.raises(ClientError) as e:
        bad.get_object(Bucket="kalice-sts", Key="job")
    assert err_code(e.value) == "InvalidToken" and err_status(e.value) == 400
    # Without its token the session key is unknown.
    none = make_client(bed.a.endpoint, c["AccessKeyId"], c["SecretAccessKey"])
    with pytest.raises(ClientError) as e:
        none.list_buckets()
    assert err_code(e.value) == "InvalidAccessKeyId"
    # A long-term key with a token is refused.
    wrong = boto3.client("s3", endpoint_url=bed.a.endpoint, region_name="us-east-1", config=cfg,
                         aws_access_key_id=ak, aws_secret_access_key=sk, aws_session_token=c["SessionToken"])
    with pytest.raises(ClientError) as e:
        wrong.list_buckets()
    assert err_code(e.value) == "InvalidToken"
    # Presigned URLs carry the token in their query (X-Amz-Security-Token).
    import urllib3
    # SigV2 ones (boto3's default here) as x-amz-security-token.
    for v in ("s3v4", "s3"):
        cfg_v = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, signature_version=v)
        good_v = boto3.client("s3", endpoint_url=bed.a.endpoint, region_name="us-east-1", config=cfg_v,
                              aws_access_key_id=c["AccessKeyId"], aws_secret_access_key=c["SecretAccessKey"],
                              aws_session_token=c["SessionToken"])
        bad_v = boto3.client("s3", endpoint_url=bed.a.endpoint, region_name="us-east-1", config=cfg_v,
                             aws_access_key_id=c["AccessKeyId"], aws_secret_access_key=c["SecretAccessKey"],
                             aws_session_token=c["SessionToken"][:-4] + "AAAA")
        url = good_v.generate_presigned_url("get_object", Params={"Bucket": "kalice-sts", "Key": "job"})
        assert "security-token=" in url.lower(), url
        assert urllib3.PoolManager().request("GET", url, retries=False).data == b"batch", v
        url = bad_v.generate_presigned_url("get_object", Params={"Bucket": "kalice-sts", "Key": "job"})
        r = urllib3.PoolManager().request("GET", url, retries=False)
        assert r.status == 400 and b"InvalidToken" in r.data, (v, r.data)
    # Browser forms (POST object) need the token too: a form signed with the session's secret but
    # without its token is refused; with it, it uploads.
    import urllib3
    http = urllib3.PoolManager()

    def post(client):
        p = client.generate_presigned_post("kalice-sts", "form-upload")
        fields = [*p["fields"].items(), ("file", ("f.bin", b"form", "application/octet-stream"))]
        body, ctype = urllib3.encode_multipart_formdata(fields)
        return http.request("POST", p["url"], body=body, headers={"Content-Type": ctype}, retries=False)
    r = post(none)
    assert r.status == 403 and b"InvalidAccessKeyId" in r.data, r.data
    r = post(s3)
    assert r.status == 204, r.data
    assert os.lstat(bed.root / "kalice-sts/form-upload").st_uid == bed.users[ALICE].pw_uid
    # Session credentials cannot make more sessions (as AWS).
    with pytest.raises(ClientError) as e:
        sts_client(bed.a.endpoint, c["AccessKeyId"], c["SecretAccessKey"], c["SessionToken"]).get_session_token()
    assert err_code(e.value) == "AccessDenied"
    # Revoking the key ends its sessions.
    bed.cli(ALICE, "revoke", ak)
    time.sleep(0.6)
    with pytest.raises(ClientError) as e:
        s3.list_buckets()
    assert err_code(e.value) == "InvalidAccessKeyId"


def test_sts_expired_session_and_bad_requests(bed):
    ak, sk = bed.create(ALICE)
    # boto3 itself refuses DurationSeconds under 900 (AWS's floor); this gateway's test floor is 1.
    sts = sts_client(bed.a.endpoint, ak, sk, validate=False)
    c = sts.get_session_token(DurationSeconds=1)["Credentials"]
    import boto3
    from botocore.config import Config
    s3 = boto3.client("s3", endpoint_url=bed.a.endpoint, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
                      aws_access_key_id=c["AccessKeyId"], aws_secret_access_key=c["SecretAccessKey"],
                      aws_session_token=c["SessionToken"])
    time.sleep(2.2)
    with pytest.raises(ClientError) as e:
        s3.list_buckets()
    assert err_code(e.value) == "ExpiredToken" and err_status(e.value) == 400
    # AWS's validation of DurationSeconds (the gateway's floor here is 1 s; AWS's upper bound).
    with pytest.raises(ClientError) as e:
        sts.get_session_token(DurationSeconds=200000)
    assert err_code(e.value) == "ValidationError" and err_status(e.value) == 400
    assert "less than or equal to 129600" in e.value.response["Error"]["Message"]
    # A wrong secret and an unknown key, as STS answers them.
    with pytest.raises(ClientError) as e:
        sts_client(bed.a.endpoint, ak, "wrong-secret").get_session_token()
    assert err_code(e.value) == "SignatureDoesNotMatch"
    with pytest.raises(ClientError) as e:
        sts_client(bed.a.endpoint, "S3HPCNOSUCHKEY000000", "x").get_session_token()
    assert err_code(e.value) == "InvalidClientTokenId"
    # The users file's keys may ask for sessions too.
    c2 = sts_client(bed.a.endpoint, *ADMIN).get_session_token()["Credentials"]
    assert c2["SessionToken"]


def test_policies_name_self_service_accounts(bed):
    """A key's account is its user's login: bucket policies may name it (the account exists)."""
    import json
    ak_a, sk_a = bed.create(ALICE)
    ak_b, sk_b = bed.create(BOB)
    a, b = make_client(bed.a.endpoint, ak_a, sk_a), make_client(bed.a.endpoint, ak_b, sk_b)
    a.create_bucket(Bucket="kalice-shared")
    a.put_object(Bucket="kalice-shared", Key="doc", Body=b"for bob")
    (bed.root / "kalice-shared").chmod(0o755)
    (bed.root / "kalice-shared/doc").chmod(0o644)
    with pytest.raises(ClientError):
        b.get_object(Bucket="kalice-shared", Key="doc")
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{BOB}:root"}, "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::kalice-shared/*"}]}
    a.put_bucket_policy(Bucket="kalice-shared", Policy=json.dumps(policy))
    assert b.get_object(Bucket="kalice-shared", Key="doc")["Body"].read() == b"for bob"
    policy["Statement"][0]["Principal"] = {"AWS": "arn:aws:iam::s3hpc-nobody-here:root"}
    with pytest.raises(ClientError) as e:
        a.put_bucket_policy(Bucket="kalice-shared", Policy=json.dumps(policy))
    assert err_code(e.value) == "MalformedPolicy"


def test_console_refuses_sts_session_credentials(bed):
    """The web console takes long-term keys only: an STS session's key and secret (whose token
    every S3 request must carry) cannot log in, while the key that asked for it can."""
    import json
    import re
    import urllib.request
    import urllib.error
    ak, sk = bed.create(ALICE)
    c = sts_client(bed.a.endpoint, ak, sk).get_session_token(DurationSeconds=900)["Credentials"]
    srv = Server(bed.root, extra=[*bed.common, "--console-listen", "127.0.0.1:0"])
    try:
        assert wait_until(lambda: any("console on" in line for line in srv.output), 10), "".join(srv.output)
        url = re.search(r"console on (https?://\S+)", "".join(srv.output)).group(1)

        def login(key, secret):
            r = urllib.request.Request(url + "/api/login", method="POST",
                                       data=json.dumps({"accessKey": key, "secretKey": secret}).encode(),
                                       headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(r, timeout=10) as resp:
                    return resp.status, resp.read().decode()
            except urllib.error.HTTPError as e:
                return e.code, e.read().decode()

        st, body = login(c["AccessKeyId"], c["SecretAccessKey"])
        assert st == 403 and "Temporary credentials" in body, (st, body)
        st, body = login(ak, sk)
        assert st == 200, (st, body)
    finally:
        srv.stop()


# ---------- STS AssumeRole: [[roles]] of the users file ----------

R_ALICE = ("ROLEALICE00000000001", "alice/secret+roles")


def s3_session(endpoint, ak, sk, token):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
                        aws_access_key_id=ak, aws_secret_access_key=sk, aws_session_token=token)
R_BOB = ("ROLEBOB0000000000001", "bob/secret+roles")
R_INGEST = ("ROLEINGEST0000000001", "ingest/secret+roles")
ROLE_ARN = "arn:aws:iam::000000000000:role/ingest"


def roles_toml(extra=""):
    return (f'[[users]]\naccess_key = "{R_ALICE[0]}"\nsecret_key = "{R_ALICE[1]}"\nid = "alice"\nname = "alice"\n\n'
            f'[[users]]\naccess_key = "{R_BOB[0]}"\nsecret_key = "{R_BOB[1]}"\nid = "bob"\nname = "bob"\n\n'
            f'[[users]]\naccess_key = "{R_INGEST[0]}"\nsecret_key = "{R_INGEST[1]}"\nid = "ingest"\nname = "ingest"\n\n'
            f'[[roles]]\nname = "ingest"\naccount = "{R_INGEST[0]}"\ntrusted = ["alice"]\n'
            f'max-session-duration = 7200\n{extra}')


@pytest.fixture(scope="module")
def rsrv(tmp_path_factory):
    t = tmp_path_factory.mktemp("roles")
    (t / "users.toml").write_text(roles_toml())
    (t / "root").mkdir()
    s = Server(t / "root", ["--config", str(t / "users.toml"), "--durability", "none", "--lifecycle-interval", "0"])
    yield s
    s.stop()


def test_assume_role_acts_as_the_roles_account(rsrv):
    r = sts_client(rsrv.endpoint, *R_ALICE).assume_role(RoleArn=ROLE_ARN, RoleSessionName="job-42",
                                                          DurationSeconds=900)
    c = r["Credentials"]
    assert r["AssumedRoleUser"]["Arn"] == "arn:aws:sts::000000000000:assumed-role/ingest/job-42"
    assert r["AssumedRoleUser"]["AssumedRoleId"].endswith(":job-42")
    left = (c["Expiration"].timestamp() - time.time())
    assert 880 < left <= 901, left
    s3 = s3_session(rsrv.endpoint, c["AccessKeyId"], c["SecretAccessKey"], c["SessionToken"])
    s3.create_bucket(Bucket="role-ingest")
    s3.put_object(Bucket="role-ingest", Key="k", Body=b"by the role")
    # The bucket is the role account's: its own key reads it, alice's long-term key does not.
    assert s3.get_bucket_acl(Bucket="role-ingest")["Owner"]["ID"] == "ingest"
    assert make_client(rsrv.endpoint, *R_INGEST).get_object(Bucket="role-ingest", Key="k")["Body"].read() == b"by the role"
    with pytest.raises(ClientError) as e:
        make_client(rsrv.endpoint, *R_ALICE).get_object(Bucket="role-ingest", Key="k")
    assert err_code(e.value) == "AccessDenied"
    # Its token is checked as GetSessionToken's are.
    bad = s3_session(rsrv.endpoint, c["AccessKeyId"], c["SecretAccessKey"], c["SessionToken"] + "x")
    with pytest.raises(ClientError) as e:
        bad.list_buckets()
    assert (err_status(e.value), err_code(e.value)) == (400, "InvalidToken")
    with pytest.raises(ClientError) as e:
        make_client(rsrv.endpoint, c["AccessKeyId"], c["SecretAccessKey"]).list_buckets()
    assert err_code(e.value) == "InvalidAccessKeyId"


def test_assume_role_refused_with_awss_text(rsrv):
    for key, who, arn in [(R_BOB, "bob", ROLE_ARN), (R_INGEST, "ingest", ROLE_ARN),
                          (R_ALICE, "alice", "arn:aws:iam::000000000000:role/no-such-role")]:
        with pytest.raises(ClientError) as e:
            sts_client(rsrv.endpoint, *key).assume_role(RoleArn=arn, RoleSessionName="s1")
        assert (err_status(e.value), err_code(e.value)) == (403, "AccessDenied"), e.value.response
        assert e.value.response["Error"]["Message"] == (
            f"User: arn:aws:iam::000000000000:user/{who} is not authorized to perform: sts:AssumeRole "
            f"on resource: {arn}")
    alice = sts_client(rsrv.endpoint, *R_ALICE, validate=False)
    cases = [
        (dict(DurationSeconds=7201),
         "The requested DurationSeconds exceeds the MaxSessionDuration set for this role."),
        (dict(DurationSeconds=43201),
         "1 validation error detected: Value '43201' at 'durationSeconds' failed to satisfy constraint: "
         "Member must have value less than or equal to 43200"),
        (dict(RoleSessionName="x"),
         "1 validation error detected: Value 'x' at 'roleSessionName' failed to satisfy constraint: "
         "Member must have length greater than or equal to 2"),
        (dict(RoleSessionName="a b"),
         "1 validation error detected: Value 'a b' at 'roleSessionName' failed to satisfy constraint: "
         "Member must satisfy regular expression pattern: [\\w+=,.@-]*"),
    ]
    for kw, msg in cases:
        args = {"RoleArn": ROLE_ARN, "RoleSessionName": "s1", **kw}
        with pytest.raises(ClientError) as e:
            alice.assume_role(**args)
        assert (err_status(e.value), err_code(e.value), e.value.response["Error"]["Message"]) == (
            400, "ValidationError", msg), kw
    # Longest allowed by the role: fine.
    c = alice.assume_role(RoleArn=ROLE_ARN, RoleSessionName="long", DurationSeconds=7200)["Credentials"]
    assert 7180 < c["Expiration"].timestamp() - time.time() <= 7201


def test_roles_are_checked_when_the_users_file_is_read(tmp_path):
    (tmp_path / "root").mkdir()
    bad = roles_toml('\n[[roles]]\nname = "orphan"\naccount = "NOSUCHKEY"\ntrusted = ["*"]\n')
    (tmp_path / "users.toml").write_text(bad)
    with pytest.raises(RuntimeError) as e:
        Server(tmp_path / "root", ["--config", str(tmp_path / "users.toml")])
    assert "role \"orphan\": `account` NOSUCHKEY is not an (enabled) access key of [[users]]" in str(e.value)
