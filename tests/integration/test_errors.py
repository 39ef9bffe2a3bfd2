"""Bad input against the real binary: auth failures, malformed and oversized requests, truncated and
over-long bodies, clients that vanish mid-upload. The server must answer with the right S3 error
(or close the connection), publish nothing partial, and keep serving."""
from __future__ import annotations

import base64
import hashlib
import os
import re
import socket
import time

import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS_KEY, err_code, err_status, make_client, raw_request, sign_headers, wait_until


def assert_alive(s3):
    s3.list_buckets()


def test_wrong_secret_and_unknown_key(server, s3, bucket):
    bad = make_client(server.endpoint, secret_key="wrong-secret")
    with pytest.raises(ClientError) as e:
        bad.list_objects_v2(Bucket=bucket)
    assert err_code(e.value) == "SignatureDoesNotMatch" and err_status(e.value) == 403
    with pytest.raises(ClientError) as e:
        bad.put_object(Bucket=bucket, Key="k", Body=b"x" * 1000)
    assert err_code(e.value) == "SignatureDoesNotMatch"
    unknown = make_client(server.endpoint, access_key="NOSUCHKEY123")
    with pytest.raises(ClientError) as e:
        unknown.list_buckets()
    assert err_code(e.value) == "InvalidAccessKeyId" and err_status(e.value) == 403
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="k")
    assert err_status(e.value) == 404


def test_error_document_shape(server, bucket):
    st, h, body = raw_request(server, "GET", f"/{bucket}/missing-key")
    assert st == 404
    assert h["content-type"] == "application/xml"
    text = body.decode()
    for tag in ["Code", "Message", "Resource", "RequestId"]:
        assert f"<{tag}>" in text, text
    assert "<Code>NoSuchKey</Code>" in text
    rid = re.search(r"<RequestId>([^<]+)</RequestId>", text).group(1)
    assert h["x-amz-request-id"] == rid and h["x-amz-id-2"]
    # HEAD errors carry no body.
    st, h, body = raw_request(server, "HEAD", f"/{bucket}/missing-key")
    assert st == 404 and body == b"" and h["x-amz-request-id"]
    st, _, body = raw_request(server, "GET", "/no-such-bucket-xyz/k")
    assert st == 404 and b"<Code>NoSuchBucket</Code>" in body


def test_anonymous_and_malformed_auth(server, bucket):
    st, _, body = raw_request(server, "GET", f"/{bucket}", sign=False)
    assert st == 403 and b"AccessDenied" in body
    st, _, body = raw_request(server, "GET", f"/{bucket}", sign=False,
                              headers={"Authorization": "AWS4-HMAC-SHA256 garbage"})
    assert st in (400, 403) and b"<Error>" in body


def test_unsupported_operations_are_501(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="o", Body=b"x")
    st, _, body = raw_request(server, "GET", f"/{bucket}/o?torrent")
    assert st == 501 and b"NotImplemented" in body
    st, _, body = raw_request(server, "PUT", f"/{bucket}?replication", body=b"<ReplicationConfiguration/>")
    assert st == 501
    st, _, body = raw_request(server, "POST", f"/{bucket}/o?select&select-type=2", body=b"<x/>")
    assert st == 501
    st, _, _ = raw_request(server, "PUT", f"/{bucket}/sse", body=b"x",
                           headers={"x-amz-server-side-encryption": "aws:kms"})
    assert st == 501
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="sse")


def test_garbage_and_oversized_xml(server, s3, bucket):
    garbage = b"<Delete><Object><Key>unterminated"
    md5 = base64.b64encode(hashlib.md5(garbage).digest()).decode()
    st, _, body = raw_request(server, "POST", f"/{bucket}?delete", body=garbage, headers={"Content-MD5": md5})
    assert st == 400 and b"MalformedXML" in body
    ok = b"<Delete><Object><Key>a</Key></Object></Delete>"
    st, _, body = raw_request(server, "POST", f"/{bucket}?delete", body=ok)
    assert st == 400 and b"Content-MD5" in body  # a digest is required, as AWS does
    wrong = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    st, _, body = raw_request(server, "POST", f"/{bucket}?delete", body=ok, headers={"Content-MD5": wrong})
    assert st == 400 and b"BadDigest" in body
    big = b"<Delete>" + b"<Object><Key>" + b"k" * (3 << 20) + b"</Key></Object></Delete>"
    try:
        st, _, body = raw_request(server, "POST", f"/{bucket}?delete", body=big,
                                  headers={"Content-MD5": base64.b64encode(hashlib.md5(big).digest()).decode()})
        assert st == 400 and b"MaxMessageLengthExceeded" in body
    except (ConnectionError, OSError):
        pass  # closing the connection is an acceptable answer too
    uid = s3.create_multipart_upload(Bucket=bucket, Key="m")["UploadId"]
    st, _, body = raw_request(server, "POST", f"/{bucket}/m?uploadId={uid}", body=b"\x00\xff not xml")
    assert st == 400 and b"MalformedXML" in body
    tag = b"<Tagging><TagSet><Tag><Key>a</Key>"
    st, _, body = raw_request(server, "PUT", f"/{bucket}?tagging", body=tag,
                              headers={"Content-MD5": base64.b64encode(hashlib.md5(tag).digest()).decode()})
    assert st == 400 and b"MalformedXML" in body
    assert_alive(s3)


def test_oversized_headers(server, s3, bucket):
    st, _, body = raw_request(server, "GET", f"/{bucket}", headers={"x-amz-meta-big": "v" * 20000})
    assert st == 400 and b"RequestHeaderSectionTooLarge" in body
    try:
        st, _, _ = raw_request(server, "GET", f"/{bucket}", headers={"x-big": "v" * (1 << 20)}, sign=False)
        assert st in (400, 431)
    except (ConnectionError, OSError):
        pass
    assert_alive(s3)


def _raw_put_prefix(server, path, body_len, payload, extra=None):
    """Signed PUT headers for a body whose payload hash is known up front."""
    h = sign_headers("PUT", f"{server.endpoint}{path}", payload, extra)
    h["Content-Length"] = str(body_len)
    host, port = server.host_port
    head = f"PUT {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
    for k, v in h.items():
        if k.lower() != "host":
            head += f"{k}: {v}\r\n"
    return (head + "\r\n").encode()


def _read_response(sock, timeout=10):
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
            if b"\r\n\r\n" in data and (b"</Error>" in data or b"Content-Length: 0" in data.split(b"\r\n\r\n")[0]
                                         or b"content-length: 0" in data.split(b"\r\n\r\n")[0]):
                break
    except socket.timeout:
        pass
    return data


def test_short_body_then_eof(server, s3, bucket):
    payload = os.urandom(200_000)
    sock = socket.create_connection(server.host_port)
    sock.sendall(_raw_put_prefix(server, f"/{bucket}/short", len(payload), payload))
    sock.sendall(payload[:100_000])
    sock.shutdown(socket.SHUT_WR)  # the client stops sending early
    resp = _read_response(sock)
    sock.close()
    assert resp == b"" or resp.startswith(b"HTTP/1.1 400"), resp[:300]
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="short")
    assert err_status(e.value) == 404
    assert_alive(s3)


def test_disconnect_mid_upload_leaves_nothing(server, s3, bucket):
    payload = os.urandom(4 << 20)
    sock = socket.create_connection(server.host_port)
    sock.sendall(_raw_put_prefix(server, f"/{bucket}/gone", len(payload), payload))
    sock.sendall(payload[: 1 << 20])
    time.sleep(0.2)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
    sock.close()
    time.sleep(0.5)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="gone")
    assert err_status(e.value) == 404
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0
    # No object file and no temp file is left in the bucket directory either.
    bdir = server.root / bucket

    def leftovers():
        return [p for p in bdir.rglob("*") if p.is_file() and
                (not any(part.startswith(".") for part in p.relative_to(bdir).parts) or p.parent.name == "tmp")]

    assert wait_until(lambda: not leftovers(), 5), leftovers()
    assert_alive(s3)


def test_body_longer_than_content_length(server, s3, bucket):
    payload = os.urandom(1000)
    # Signed for all 1000 bytes but announced as 500: the hash check fails, nothing is published.
    sock = socket.create_connection(server.host_port)
    sock.sendall(_raw_put_prefix(server, f"/{bucket}/long", 500, payload))
    sock.sendall(payload)
    resp = _read_response(sock)
    sock.close()
    assert resp.startswith(b"HTTP/1.1 400"), resp[:200]
    assert b"XAmzContentSHA256Mismatch" in resp
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="long")
    assert_alive(s3)


def test_corrupted_chunked_body(server, s3, bucket):
    """An aws-chunked body with a bad chunk size / wrong trailer checksum publishes nothing."""
    host, port = server.host_port
    data = b"z" * 1000
    for body, name in [
        (b"3e8\r\n" + data + b"\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n", "badtrailer"),
        (b"zz\r\n" + data + b"\r\n0\r\n\r\n", "badsize"),
        (b"3e8\r\n" + data[:500], "truncated"),
    ]:
        path = f"/{bucket}/{name}"
        h = sign_headers("PUT", f"{server.endpoint}{path}", b"", {
            "Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(data)),
            "x-amz-trailer": "x-amz-checksum-crc32"}, payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
        h["Content-Length"] = str(len(body) + (0 if name != "truncated" else 600))
        head = f"PUT {path} HTTP/1.1\r\nHost: {host}:{port}\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in h.items() if k.lower() != "host") + "\r\n"
        sock = socket.create_connection((host, port))
        sock.sendall(head.encode() + body)
        if name == "truncated":
            sock.shutdown(socket.SHUT_WR)
        resp = _read_response(sock)
        sock.close()
        assert resp == b"" or resp.startswith(b"HTTP/1.1 400"), (name, resp[:300])
        with pytest.raises(ClientError):
            s3.head_object(Bucket=bucket, Key=name)
    assert_alive(s3)


def test_keep_alive_many_requests(server, bucket):
    import http.client
    host, port = server.host_port
    conn = http.client.HTTPConnection(host, port, timeout=10)
    for i in range(20):
        path = f"/{bucket}/ka{i}"
        body = f"v{i}".encode()
        conn.request("PUT", path, body=body, headers=sign_headers("PUT", f"{server.endpoint}{path}", body))
        r = conn.getresponse()
        r.read()
        assert r.status == 200
    conn.request("GET", f"/{bucket}?list-type=2", headers=sign_headers("GET", f"{server.endpoint}/{bucket}?list-type=2"))
    r = conn.getresponse()
    assert r.status == 200 and r.read().count(b"<Key>") == 20
    conn.close()


def test_generated_credentials_and_sigterm(tmp_path):
    from conftest import Server
    srv = Server(tmp_path / "root", ["--backend", "memory"],
                 env={"S3HPC_ACCESS_KEY": "", "S3HPC_SECRET_KEY": ""})
    try:
        out = "".join(srv.output)
        assert wait_until(lambda: "aws --endpoint-url" in "".join(srv.output), 5), out
        out = "".join(srv.output)
        ak = re.search(r"access key: (\S+)", out).group(1)
        sk = re.search(r"secret key: (\S+)", out).group(1)
        cred = tmp_path / "root" / ".s3hpc" / "credentials.toml"
        assert cred.stat().st_mode & 0o777 == 0o600
        assert ak in cred.read_text() and sk in cred.read_text()
        c = make_client(srv.endpoint, access_key=ak, secret_key=sk)
        c.create_bucket(Bucket="gen-bucket")
        assert [b["Name"] for b in c.list_buckets()["Buckets"]] == ["gen-bucket"]
        with pytest.raises(ClientError):
            c.create_bucket(Bucket=".s3hpc")
    finally:
        assert srv.stop() == 0
    # A restart reuses the stored key instead of generating a new one.
    srv = Server(tmp_path / "root", ["--backend", "memory"], env={"S3HPC_ACCESS_KEY": "", "S3HPC_SECRET_KEY": ""})
    try:
        assert wait_until(lambda: ak in "".join(srv.output), 5), srv.output
        assert "generated credentials" not in "".join(srv.output)
    finally:
        srv.stop()


def test_config_file_users_and_env(tmp_path):
    from conftest import Server
    cfg = tmp_path / "users.toml"
    cfg.write_text('[[users]]\naccess_key = "alice"\nsecret_key = "alicesecret"\n'
                   '[[users]]\naccess_key = "bob"\nsecret_key = "bobsecret"\n')
    srv = Server(tmp_path / "root", ["--backend", "memory", "--config", str(cfg)],
                 env={"S3HPC_ACCESS_KEY": "carol", "S3HPC_SECRET_KEY": "carolsecret"})
    try:
        for ak, sk in [("alice", "alicesecret"), ("bob", "bobsecret"), ("carol", "carolsecret")]:
            make_client(srv.endpoint, access_key=ak, secret_key=sk).list_buckets()
        with pytest.raises(ClientError) as e:
            make_client(srv.endpoint, access_key="alice", secret_key="bobsecret").list_buckets()
        assert err_code(e.value) == "SignatureDoesNotMatch"
        assert not (tmp_path / "root" / ".s3hpc" / "credentials.toml").exists()
    finally:
        srv.stop()


def test_virtual_host_style(tmp_path):
    from conftest import Server
    from botocore.config import Config
    import boto3
    srv = Server(tmp_path / "root", ["--backend", "memory", "--domain", "localhost", "--access-key", ACCESS_KEY,
                                     "--secret-key", "vhsecret"])
    try:
        port = srv.host_port[1]
        vh = boto3.client("s3", endpoint_url=f"http://localhost:{port}", aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key="vhsecret", region_name="us-east-1",
                          config=Config(s3={"addressing_style": "virtual"}, retries={"max_attempts": 1}))
        path = make_client(srv.endpoint, secret_key="vhsecret")
        path.create_bucket(Bucket="vhost")
        # Resolve vhost.localhost to 127.0.0.1 for this process only.
        orig = socket.getaddrinfo

        def fake(host, *a, **kw):
            if host.endswith(".localhost") or host == "localhost":
                host = "127.0.0.1"
            return orig(host, *a, **kw)

        socket.getaddrinfo = fake
        try:
            vh.put_object(Bucket="vhost", Key="k/v", Body=b"virtual")
            assert vh.get_object(Bucket="vhost", Key="k/v")["Body"].read() == b"virtual"
            assert [o["Key"] for o in vh.list_objects_v2(Bucket="vhost")["Contents"]] == ["k/v"]
        finally:
            socket.getaddrinfo = orig
        assert path.get_object(Bucket="vhost", Key="k/v")["Body"].read() == b"virtual"
    finally:
        srv.stop()
