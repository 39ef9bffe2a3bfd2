"""The admin API on the admin listener (docs/CREDENTIALS.md, "The admin API"): accounts of the
users file and self-service keys (list, create, disable, enable, rotate, remove), usage per
bucket and per account from a background walk, signed with SigV4 by an administrator's key
(botocore's own signer), and `s3hpc user ... --endpoint URL` using it remotely. Two gateways
share one root and one users file; a real Unix user (useradd) owns the self-service key."""
from __future__ import annotations

import calendar
import http.client
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from botocore.exceptions import ClientError

from conftest import Server, ensure_user, err_code, make_client, s3hpc_bin, wait_until

ADMIN = ("ADMINAPIADMIN0000001", "admin/secret+adminapi")
BOB = ("ADMINAPIBOB000000001", "bob/secret+adminapi")
CAROL = ("ADMINAPICAROL0000001", "carol/secret+adminapi")
LOGIN = "s3hpc-aalice"


def admin_url(srv: Server) -> str:
    for line in srv.output:
        m = re.search(r"admin on (http://127\.0\.0\.1:\d+)", line)
        if m:
            return m.group(1)
    raise AssertionError("no admin listener line:\n" + "".join(srv.output))


def call(url, method, path, body=None, key=ADMIN, token=None, raw_body=None, sign=True):
    """One admin API request, signed by botocore's SigV4 signer (service s3): status, document."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    data = raw_body if raw_body is not None else (json.dumps(body).encode() if body is not None else b"")
    headers = {"content-type": "application/json"} if data else {}
    req = AWSRequest(method=method, url=url + path, data=data, headers=headers)
    if sign:
        SigV4Auth(Credentials(key[0], key[1], token), "s3", "us-east-1").add_auth(req)
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.request(method, path, body=data, headers=dict(req.headers.items()))
        r = conn.getresponse()
        text = r.read().decode()
    finally:
        conn.close()
    if r.status == 200:
        return r.status, json.loads(text)
    code = re.search(r"<Code>(.*?)</Code>", text)
    msg = re.search(r"<Message>(.*?)</Message>", text)
    return r.status, {"Code": code and code.group(1), "Message": msg and msg.group(1), "raw": text}


class Bed:
    def __init__(self):
        self.alice = ensure_user(LOGIN)
        self.base = Path(tempfile.mkdtemp(prefix="s3hpc-adminapi-", dir="/tmp"))
        self.root = self.base / "root"
        self.root.mkdir()
        self.cfg = self.base / "users.toml"
        self.cfg.write_text(
            f'[[users]]\naccess_key = "{ADMIN[0]}"\nsecret_key = "{ADMIN[1]}"\nadmin = true\n\n'
            f'[[users]]\naccess_key = "{BOB[0]}"\nsecret_key = "{BOB[1]}"\nname = "bob"\n\n'
            f'[[users]]\naccess_key = "{CAROL[0]}"\nsecret_key = "{CAROL[1]}"\nname = "carol"\n')
        common = ["--config", str(self.cfg), "--durability", "none", "--admin-listen", "127.0.0.1:0",
                  "--usage-interval", "1", "--lifecycle-interval", "0"]
        self.a = Server(self.root, extra=common)
        self.b = Server(self.root, extra=common)
        self.url_a, self.url_b = admin_url(self.a), admin_url(self.b)

    def stop(self):
        self.a.stop()
        self.b.stop()
        shutil.rmtree(self.base, ignore_errors=True)

    def cli(self, *args, key=ADMIN, url=None, check=True):
        env = {**os.environ, "S3HPC_ADMIN_ACCESS_KEY": key[0], "S3HPC_ADMIN_SECRET_KEY": key[1]}
        r = subprocess.run([s3hpc_bin(), "user", *args, "--endpoint", url or self.url_a], capture_output=True,
                           text=True, env=env)
        if check and r.returncode != 0:
            raise AssertionError(f"s3hpc user {args}: rc {r.returncode}\n{r.stdout}\n{r.stderr}")
        return r


@pytest.fixture(scope="module")
def bed():
    b = Bed()
    try:
        yield b
    finally:
        b.stop()


def works(endpoint, key) -> str:
    """'ok', or the error code ListBuckets gets with this key."""
    try:
        make_client(endpoint, key[0], key[1]).list_buckets()
        return "ok"
    except ClientError as e:
        return err_code(e)


def test_only_administrators_may_call_it(bed):
    st, doc = call(bed.url_a, "GET", "/admin/v1/accounts")
    assert st == 200, doc
    # Not an administrator: AccessDenied, whatever the resource.
    for method, path in [("GET", "/admin/v1/accounts"), ("GET", "/admin/v1/usage"),
                         ("POST", f"/admin/v1/accounts/{CAROL[0]}/disable"),
                         ("DELETE", f"/admin/v1/accounts/{CAROL[0]}")]:
        st, doc = call(bed.url_a, method, path, key=BOB)
        assert (st, doc["Code"], doc["Message"]) == (403, "AccessDenied", "Access Denied"), (method, path, doc)
    assert works(bed.a.endpoint, CAROL) == "ok"
    # Unsigned: AccessDenied; a wrong secret: SignatureDoesNotMatch; an unknown key: InvalidAccessKeyId.
    st, doc = call(bed.url_a, "GET", "/admin/v1/accounts", sign=False)
    assert (st, doc["Code"]) == (403, "AccessDenied"), doc
    st, doc = call(bed.url_a, "GET", "/admin/v1/accounts", key=(ADMIN[0], "wrong"))
    assert (st, doc["Code"]) == (403, "SignatureDoesNotMatch"), doc
    st, doc = call(bed.url_a, "GET", "/admin/v1/accounts", key=("NOSUCHKEY00000000000", "x"))
    assert (st, doc["Code"]) == (403, "InvalidAccessKeyId"), doc
    # The body is signed: an admin's signature over one body does not carry another.
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method="POST", url=bed.url_a + "/admin/v1/accounts", data=b'{"name": "x"}',
                     headers={"content-type": "application/json"})
    SigV4Auth(Credentials(*ADMIN), "s3", "us-east-1").add_auth(req)
    u = urlsplit(bed.url_a)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    tampered = b'{"name": "x", "admin": true}'
    hdrs = {k: v for k, v in req.headers.items() if k.lower() != "content-length"}
    conn.request("POST", "/admin/v1/accounts", body=tampered, headers=hdrs)
    r = conn.getresponse()
    assert r.status == 403 and b"SignatureDoesNotMatch" in r.read()
    # The CLI says the same.
    r = bed.cli("list", key=BOB, check=False)
    assert r.returncode != 0 and "403 AccessDenied: Access Denied" in r.stderr, r.stderr


def test_users_file_accounts_create_disable_enable_rotate_remove(bed):
    st, doc = call(bed.url_a, "POST", "/admin/v1/accounts", {"name": "dave", "id": "dave"})
    assert st == 200, doc
    dave = (doc["accessKey"], doc["secretKey"])
    # Works at once on the gateway that made it, within a reload on the other.
    assert works(bed.a.endpoint, dave) == "ok"
    assert wait_until(lambda: works(bed.b.endpoint, dave) == "ok", 5)
    st, doc = call(bed.url_a, "GET", "/admin/v1/accounts")
    mine = [a for a in doc["accounts"] if a["accessKey"] == dave[0]]
    assert mine and mine[0]["source"] == "users-file" and mine[0]["name"] == "dave" and not mine[0]["disabled"]
    assert "secretKey" not in json.dumps(doc) and dave[1] not in json.dumps(doc)
    # Creating it again: EntityAlreadyExists; malformed JSON and unknown fields are refused.
    st, doc = call(bed.url_a, "POST", "/admin/v1/accounts", {"accessKey": dave[0]})
    assert (st, doc["Code"]) == (409, "EntityAlreadyExists"), doc
    st, doc = call(bed.url_a, "POST", "/admin/v1/accounts", raw_body=b"{not json")
    assert (st, doc["Code"]) == (400, "MalformedJSON"), doc
    st, doc = call(bed.url_a, "POST", "/admin/v1/accounts", {"nmae": "typo"})
    assert (st, doc["Code"]) == (400, "MalformedJSON"), doc
    # Disable: refused on both gateways, kept in the file.
    st, doc = call(bed.url_a, "POST", f"/admin/v1/accounts/{dave[0]}/disable")
    assert st == 200 and doc["disabled"] is True, doc
    assert works(bed.a.endpoint, dave) == "InvalidAccessKeyId"
    assert wait_until(lambda: works(bed.b.endpoint, dave) == "InvalidAccessKeyId", 5)
    assert "disabled = true" in bed.cfg.read_text()
    st, doc = call(bed.url_b, "GET", "/admin/v1/accounts")
    assert [a["disabled"] for a in doc["accounts"] if a["accessKey"] == dave[0]] == [True]
    # Enable, on the other gateway.
    st, doc = call(bed.url_b, "POST", f"/admin/v1/accounts/{dave[0]}/enable")
    assert st == 200, doc
    assert works(bed.b.endpoint, dave) == "ok"
    assert wait_until(lambda: works(bed.a.endpoint, dave) == "ok", 5)
    # Rotate: the old secret stops, the new one works.
    st, doc = call(bed.url_a, "POST", f"/admin/v1/accounts/{dave[0]}/rotate")
    assert st == 200, doc
    new = (dave[0], doc["secretKey"])
    assert works(bed.a.endpoint, dave) == "SignatureDoesNotMatch"
    assert works(bed.a.endpoint, new) == "ok"
    # Remove.
    st, doc = call(bed.url_a, "DELETE", f"/admin/v1/accounts/{dave[0]}")
    assert st == 200, doc
    assert works(bed.a.endpoint, new) == "InvalidAccessKeyId"
    assert dave[0] not in bed.cfg.read_text()
    st, doc = call(bed.url_a, "DELETE", f"/admin/v1/accounts/{dave[0]}")
    assert (st, doc["Code"], doc["Message"]) == (404, "NoSuchEntity",
                                                 f"The user with name {dave[0]} cannot be found."), doc
    st, doc = call(bed.url_a, "PUT", "/admin/v1/accounts")
    assert (st, doc["Code"]) == (405, "MethodNotAllowed"), doc


def test_self_service_keys_made_listed_disabled_and_removed_by_an_admin(bed):
    st, doc = call(bed.url_a, "POST", "/admin/v1/keys", {"user": LOGIN, "expires": "1d", "description": "job"})
    assert st == 200, doc
    assert doc["uid"] == bed.alice.pw_uid and doc["user"] == LOGIN
    key = (doc["accessKey"], doc["secretKey"])
    assert works(bed.a.endpoint, key) == "ok" and works(bed.b.endpoint, key) == "ok"
    st, doc = call(bed.url_b, "GET", "/admin/v1/accounts")
    k = [k for k in doc["keys"] if k["accessKey"] == key[0]]
    assert k and k[0]["source"] == "key-store" and k[0]["description"] == "job" and not k[0]["disabled"], doc
    assert key[1] not in json.dumps(doc)
    st, doc = call(bed.url_a, "POST", "/admin/v1/keys", {"user": "s3hpc-no-such-login"})
    assert (st, doc["Code"]) == (400, "InvalidArgument"), doc
    # Disabled on one gateway: the other refuses it within a second (the file is renamed).
    st, doc = call(bed.url_a, "POST", f"/admin/v1/accounts/{key[0]}/disable")
    assert st == 200 and doc["source"] == "key-store", doc
    assert works(bed.a.endpoint, key) == "InvalidAccessKeyId"
    t0 = time.monotonic()
    assert wait_until(lambda: works(bed.b.endpoint, key) == "InvalidAccessKeyId", 5)
    assert time.monotonic() - t0 < 1.5
    st, doc = call(bed.url_a, "GET", "/admin/v1/accounts")
    assert [k["disabled"] for k in doc["keys"] if k["accessKey"] == key[0]] == [True], doc
    st, doc = call(bed.url_b, "POST", f"/admin/v1/accounts/{key[0]}/enable")
    assert st == 200, doc
    assert wait_until(lambda: works(bed.a.endpoint, key) == "ok", 5)
    st, doc = call(bed.url_a, "POST", f"/admin/v1/accounts/{key[0]}/rotate")
    assert (st, doc["Code"]) == (400, "InvalidArgument"), doc
    st, doc = call(bed.url_a, "DELETE", f"/admin/v1/accounts/{key[0]}")
    assert st == 200 and doc["source"] == "key-store", doc
    assert works(bed.a.endpoint, key) == "InvalidAccessKeyId"
    assert wait_until(lambda: works(bed.b.endpoint, key) == "InvalidAccessKeyId", 5)
    st, doc = call(bed.url_a, "GET", "/admin/v1/accounts")
    assert key[0] not in json.dumps(doc)


def usage(url):
    st, doc = call(url, "GET", "/admin/v1/usage")
    assert st == 200, doc
    return doc


def test_usage_per_bucket_and_account_from_the_background_walk(bed):
    bob, carol = make_client(bed.a.endpoint, *BOB), make_client(bed.a.endpoint, *CAROL)
    bob.create_bucket(Bucket="adminapi-bob1")
    bob.create_bucket(Bucket="adminapi-bob2")
    carol.create_bucket(Bucket="adminapi-carol")
    for i in range(3):
        bob.put_object(Bucket="adminapi-bob1", Key=f"d/{i}", Body=b"x" * 1000)
    bob.put_object(Bucket="adminapi-bob2", Key="one", Body=b"y" * 5000)
    carol.put_object(Bucket="adminapi-carol", Key="a/b/c", Body=b"z" * 7)
    t_put = time.time()

    def fresh():
        d = usage(bed.url_a)
        return d if d["computedAt"] and calendar.timegm(time.strptime(d["computedAt"], "%Y-%m-%dT%H:%M:%SZ")) > t_put else None
    assert wait_until(lambda: fresh() is not None, 15, 0.3)
    d = fresh()
    b = {x["name"]: x for x in d["buckets"]}
    assert (b["adminapi-bob1"]["objects"], b["adminapi-bob1"]["bytes"]) == (3, 3000)
    assert (b["adminapi-bob2"]["objects"], b["adminapi-bob2"]["bytes"]) == (1, 5000)
    assert (b["adminapi-carol"]["objects"], b["adminapi-carol"]["bytes"]) == (1, 7)
    assert b["adminapi-bob1"]["owner"] == BOB[0] and b["adminapi-bob1"]["complete"]
    a = {x["id"]: x for x in d["accounts"]}
    assert (a[BOB[0]]["buckets"], a[BOB[0]]["objects"], a[BOB[0]]["bytes"]) == (2, 4, 8000)
    assert (a[CAROL[0]]["objects"], a[CAROL[0]]["bytes"], a[CAROL[0]]["name"]) == (1, 7, "carol")
    assert isinstance(d["ageSeconds"], int) and d["ageSeconds"] < 10
    # The CLI shows the same numbers.
    out = bed.cli("usage").stdout
    assert re.search(r"adminapi-bob1\s+" + BOB[0] + r"\s+3\s+3000", out), out


def test_usage_is_never_computed_per_request(tmp_path):
    """A gateway whose walk runs once an hour answers from its last walk: objects written
    after it do not show, however often usage is asked for."""
    cfg = tmp_path / "users.toml"
    cfg.write_text(f'[[users]]\naccess_key = "{ADMIN[0]}"\nsecret_key = "{ADMIN[1]}"\nadmin = true\n')
    root = tmp_path / "root"
    root.mkdir()
    (root / "early").mkdir()
    (root / "early" / "f").write_bytes(b"12345")
    srv = Server(root, extra=["--config", str(cfg), "--admin-listen", "127.0.0.1:0", "--usage-interval", "3600",
                              "--lifecycle-interval", "0"])
    try:
        url = admin_url(srv)
        assert wait_until(lambda: usage(url)["computedAt"] is not None, 10)
        first = usage(url)
        assert [(x["name"], x["objects"], x["bytes"]) for x in first["buckets"]] == [("early", 1, 5)]
        make_client(srv.endpoint, *ADMIN).put_object(Bucket="early", Key="g", Body=b"later")
        for _ in range(5):
            d = usage(url)
            assert d["computedAt"] == first["computedAt"]
            assert [(x["name"], x["objects"]) for x in d["buckets"]] == [("early", 1)]
        time.sleep(1.1)
        assert usage(url)["ageSeconds"] >= 1
    finally:
        srv.stop()


def test_user_command_works_remotely(bed):
    out = bed.cli("add", "erin", "--id", "erin").stdout
    ak = re.search(r"access key: (\S+)", out).group(1)
    sk = re.search(r"secret key: (\S+)", out).group(1)
    assert works(bed.a.endpoint, (ak, sk)) == "ok"
    listing = bed.cli("list").stdout
    assert re.search(rf"^{ak}\s+users-file\s+", listing, re.M), listing
    assert sk not in listing
    bed.cli("disable", ak)
    assert works(bed.a.endpoint, (ak, sk)) == "InvalidAccessKeyId"
    assert re.search(rf"^{ak}\s.*disabled", bed.cli("list").stdout, re.M)
    bed.cli("enable", ak)
    assert works(bed.a.endpoint, (ak, sk)) == "ok"
    out = bed.cli("add-key", LOGIN, "--expires", "2h", "--description", "remote").stdout
    kak = re.search(r"AccessKeyId: (\S+)", out).group(1)
    ksk = re.search(r"SecretAccessKey: (\S+)", out).group(1)
    assert works(bed.b.endpoint, (kak, ksk)) == "ok"
    assert re.search(rf"^{kak}\s+key-store\s+{LOGIN}\s", bed.cli("list").stdout, re.M)
    bed.cli("remove", kak)
    bed.cli("remove", ak)
    assert works(bed.a.endpoint, (ak, sk)) == "InvalidAccessKeyId"
    assert works(bed.a.endpoint, (kak, ksk)) == "InvalidAccessKeyId"
    r = bed.cli("remove", ak, check=False)
    assert r.returncode != 0 and "404 NoSuchEntity" in r.stderr, r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="--identity posix needs root")
def test_usage_walks_as_the_gateway_under_identity_posix(tmp_path):
    """With --identity posix every store call needs an identity: the walk acts as the gateway's
    own, so it counts buckets whatever their owners' POSIX users may read."""
    ensure_user(LOGIN)
    cfg = tmp_path / "users.toml"
    cfg.write_text(f'[[users]]\naccess_key = "{ADMIN[0]}"\nsecret_key = "{ADMIN[1]}"\nuser = "root"\nadmin = true\n\n'
                   f'[[users]]\naccess_key = "{BOB[0]}"\nsecret_key = "{BOB[1]}"\nuser = "{LOGIN}"\n')
    root = tmp_path / "root"
    root.mkdir()
    root.chmod(0o1777)
    srv = Server(root, extra=["--config", str(cfg), "--identity", "posix", "--umask", "077", "--admin-listen", "127.0.0.1:0",
                              "--usage-interval", "1", "--lifecycle-interval", "0"])
    try:
        url = admin_url(srv)
        s3 = make_client(srv.endpoint, *BOB)
        s3.create_bucket(Bucket="posix-usage")
        s3.put_object(Bucket="posix-usage", Key="d/x", Body=b"q" * 321)

        def seen():
            return [(b["objects"], b["bytes"], b["complete"]) for b in usage(url)["buckets"] if b["name"] == "posix-usage"]
        assert wait_until(lambda: seen() == [(1, 321, True)], 15, 0.3), usage(url)
    finally:
        srv.stop()
