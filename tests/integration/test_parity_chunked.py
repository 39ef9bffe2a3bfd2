"""AWS parity of aws-chunked uploads and of policy/CORS validation (issue 37 leftovers). Every test
drives the real binary with boto3 or raw signed requests and checks AWS's status, code and message."""
from __future__ import annotations

import re
import socket

from conftest import ACCESS_KEY, REGION, SECRET_KEY


def sign_streaming(method, url, headers, payload_hash):
    """SigV4 headers with `payload_hash` as x-amz-content-sha256 (botocore's signer would put the
    SHA-256 of the empty body there)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    class Auth(S3SigV4Auth):
        def payload(self, request):
            return payload_hash

    req = AWSRequest(method=method, url=url, data=b"", headers=dict(headers))
    Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", REGION).add_auth(req)
    return dict(req.headers.items())

MALFORMED_TRAILER = ("The request contained trailing data that was not well-formed or did not conform "
                     "to our published schema.")


def _field(body: bytes, tag: str):
    m = re.search(rf"<{tag}>(.*?)</{tag}>".encode(), body, re.S)
    return m.group(1).decode() if m else None


def _chunked_put(server, path, body, decoded_len, trailer="x-amz-checksum-crc32", shut=False):
    """A signed STREAMING-UNSIGNED-PAYLOAD-TRAILER PUT sent over a raw socket; returns the response."""
    host, port = server.host_port
    hdrs = {"Content-Encoding": "aws-chunked"}
    if decoded_len is not None:
        hdrs["x-amz-decoded-content-length"] = str(decoded_len)
    if trailer:
        hdrs["x-amz-trailer"] = trailer
    h = sign_streaming("PUT", f"{server.endpoint}{path}", hdrs, "STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    assert h["X-Amz-Content-SHA256"] == "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
    h["Content-Length"] = str(len(body))
    head = f"PUT {path} HTTP/1.1\r\nHost: {host}:{port}\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in h.items() if k.lower() != "host") + "\r\n"
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(head.encode() + body)
        if shut:
            sock.shutdown(socket.SHUT_WR)
        resp = b""
        while True:
            end = resp.find(b"\r\n\r\n")
            if end >= 0:
                m = re.search(rb"(?i)content-length: *(\d+)", resp[:end])
                if len(resp) >= end + 4 + (int(m.group(1)) if m else 0):
                    break
            chunk = sock.recv(65536)
            if not chunk:
                break
            resp += chunk
    status = int(resp.split(b" ", 2)[1]) if resp.startswith(b"HTTP/1.1 ") else 0
    return status, resp


def _crc32_b64(data: bytes) -> str:
    import base64
    import zlib
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


def test_chunked_put_without_decoded_length_is_411(server, s3, bucket):
    body = b"5\r\nhello\r\n0\r\nx-amz-checksum-crc32:" + _crc32_b64(b"hello").encode() + b"\r\n\r\n"
    st, resp = _chunked_put(server, f"/{bucket}/nodecoded", body, None)
    assert st == 411, resp[:400]
    assert _field(resp, "Code") == "MissingContentLength", resp[:400]
    assert _field(resp, "Message") == "You must provide the Content-Length HTTP header.", resp[:400]


def test_chunked_body_shorter_than_declared_is_incomplete_body(server, s3, bucket):
    body = b"5\r\nhello\r\n0\r\nx-amz-checksum-crc32:" + _crc32_b64(b"hello").encode() + b"\r\n\r\n"
    st, resp = _chunked_put(server, f"/{bucket}/short", body, 10)
    assert st == 400, resp[:400]
    assert _field(resp, "Code") == "IncompleteBody", resp[:400]
    assert _field(resp, "Message") == ("You did not provide the number of bytes specified by the "
                                       "Content-Length HTTP header."), resp[:400]
    import pytest
    from botocore.exceptions import ClientError
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="short")


def test_chunked_malformed_trailer_is_malformed_trailer_error(server, s3, bucket):
    good = _crc32_b64(b"hello").encode()
    for name, trailer in [
        ("nocolon", b"x-amz-checksum-crc32 " + good + b"\r\n\r\n"),
        ("missing", b"\r\n"),
        ("other", b"x-amz-checksum-sha1:" + good + b"\r\n\r\n"),
    ]:
        body = b"5\r\nhello\r\n0\r\n" + trailer
        st, resp = _chunked_put(server, f"/{bucket}/{name}", body, 5)
        assert st == 400, (name, resp[:400])
        assert _field(resp, "Code") == "MalformedTrailerError", (name, resp[:400])
        assert _field(resp, "Message") == MALFORMED_TRAILER, (name, resp[:400])
    # A well-formed trailer is stored.
    body = b"5\r\nhello\r\n0\r\nx-amz-checksum-crc32:" + good + b"\r\n\r\n"
    st, resp = _chunked_put(server, f"/{bucket}/good", body, 5)
    assert st == 200, resp[:400]
    assert s3.get_object(Bucket=bucket, Key="good")["Body"].read() == b"hello"
