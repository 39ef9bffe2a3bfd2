"""Shared fixtures for the integration suite: the real `s3hpc serve` binary on 127.0.0.1:0 with a
temporary posix root and known credentials, plus clients (boto3, raw signed http.client)."""
from __future__ import annotations

import http.client
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ACCESS_KEY = "itestAccessKey01"
SECRET_KEY = "itestSecretKey01/with+specials"
REGION = "us-east-1"
REPO = Path(__file__).resolve().parents[2]


def ensure_user(login: str) -> pwd.struct_passwd:
    """A real Unix user (made with useradd, no home, no shell) for tests where identities matter."""
    try:
        return pwd.getpwnam(login)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", login], check=True)
        return pwd.getpwnam(login)


def s3hpc_bin() -> str:
    b = os.environ.get("S3HPC_BIN") or str(REPO / "target" / "debug" / "s3hpc")
    if not os.access(b, os.X_OK):
        raise RuntimeError(f"s3hpc binary not found at {b} (set S3HPC_BIN or cargo build -p s3hpc)")
    return b


class Server:
    """One `s3hpc serve` process; stopped by `stop()` (SIGTERM, then SIGKILL)."""

    def __init__(self, root: Path, extra=(), env=None):
        self.root = Path(root)
        self.argv = [s3hpc_bin(), "serve", str(root), "--listen", "127.0.0.1:0", *extra]
        self.output: list[str] = []
        self.endpoint: str | None = None
        self._found = threading.Event()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace",
                                     env={**os.environ, **(env or {})}, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()
        if not self._found.wait(30) or self.endpoint is None:
            self.stop()
            raise RuntimeError(f"no 'listening on' line; output:\n{''.join(self.output)}")

    def _read(self):
        pat = re.compile(r"listening on (https?://127\.0\.0\.1:\d+)")
        for line in self.proc.stdout:
            self.output.append(line)
            m = pat.search(line)
            if m and self.endpoint is None:
                self.endpoint = m.group(1)
                self._found.set()
        self._found.set()

    @property
    def host_port(self):
        u = urlsplit(self.endpoint)
        return u.hostname, u.port

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=15) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("s3root")
    srv = Server(root, ["--backend", "posix", "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
    yield srv
    rc = srv.stop()
    assert rc == 0, f"server exited with {rc} on SIGTERM; output:\n{''.join(srv.output)[-3000:]}"


def make_client(endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY, checksum="when_supported",
                region_name=REGION, signature_version="s3v4", **cfg):
    import boto3
    from botocore.config import Config

    config = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, signature_version=signature_version,
                    request_checksum_calculation=checksum, response_checksum_validation=checksum, **cfg)
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=access_key,
                        aws_secret_access_key=secret_key, region_name=region_name, config=config)


@pytest.fixture(scope="session")
def s3(server):
    return make_client(server.endpoint)


@pytest.fixture(scope="session")
def s3_required(server):
    """A client with AWS_REQUEST_CHECKSUM_CALCULATION=when_required behaviour (plain bodies)."""
    return make_client(server.endpoint, checksum="when_required")


@pytest.fixture
def bucket(s3):
    name = "it-" + uuid.uuid4().hex[:16]
    s3.create_bucket(Bucket=name)
    yield name
    empty_bucket(s3, name)
    s3.delete_bucket(Bucket=name)


def empty_bucket(s3, name):
    for up in s3.list_multipart_uploads(Bucket=name).get("Uploads", []):
        s3.abort_multipart_upload(Bucket=name, Key=up["Key"], UploadId=up["UploadId"])
    while True:
        objs = s3.list_objects_v2(Bucket=name).get("Contents", [])
        if not objs:
            break
        s3.delete_objects(Bucket=name, Delete={"Objects": [{"Key": o["Key"]} for o in objs]})


def err_code(e) -> str:
    return e.response.get("Error", {}).get("Code", "")


def err_status(e) -> int:
    return e.response["ResponseMetadata"]["HTTPStatusCode"]


def sign_headers(method, url, body=b"", headers=None, access_key=ACCESS_KEY, secret_key=SECRET_KEY,
                 payload_hash=None):
    """SigV4 headers for a raw request (botocore's signer)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    hdrs = dict(headers or {})
    if payload_hash is not None:
        hdrs["X-Amz-Content-SHA256"] = payload_hash
    req = AWSRequest(method=method, url=url, data=body, headers=hdrs)
    S3SigV4Auth(Credentials(access_key, secret_key), "s3", REGION).add_auth(req)
    return dict(req.headers.items())


def raw_request(server, method, path, body=b"", headers=None, sign=True, timeout=30, **kw):
    """One request over http.client; returns (status, headers dict lower-cased, body bytes)."""
    host, port = server.host_port
    url = f"{server.endpoint}{path}"
    hdrs = dict(headers or {})
    if sign:
        hdrs = sign_headers(method, url, body, hdrs, **kw)
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=hdrs)
        r = conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        conn.close()


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="s3hpc-it-")
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


def wait_until(pred, timeout=10.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def purge_versioned_bucket(s3, name):
    """Remove every version and delete marker of bucket `name`, then the bucket."""
    while True:
        r = s3.list_object_versions(Bucket=name)
        items = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                 for v in r.get("Versions", []) + r.get("DeleteMarkers", [])]
        if not items:
            break
        s3.delete_objects(Bucket=name, Delete={"Objects": items})
    s3.delete_bucket(Bucket=name)
