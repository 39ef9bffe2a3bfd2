"""AWS parity (issue 37): an anonymous upload that will be refused is answered 403 at once, with
no `100 Continue` first (ceph s3-tests test_100_continue); one that may write gets `100
Continue` and then stores the body."""
from __future__ import annotations

import json
import socket

from test_authz import gw  # noqa: F401  (the fixture)


def _put_expecting_continue(host, port, path, body=b"x" * 123):
    """Send a PUT head with `Expect: 100-continue` and return the first status line's code,
    then (after a 100) send the body and return the final code as well."""
    s = socket.create_connection((host, port), timeout=10)
    try:
        s.sendall((f"PUT {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {len(body)}\r\n"
                   "Expect: 100-continue\r\n\r\n").encode())
        first = s.recv(4096).decode("latin-1")
        code = first.split(" ")[1]
        final = None
        if code == "100":
            s.sendall(body)
            rest = first.split("\r\n\r\n", 1)[1]
            while "HTTP/1.1" not in rest:
                rest += s.recv(4096).decode("latin-1")
            final = rest[rest.index("HTTP/1.1"):].split(" ")[1]
        return code, final, first
    finally:
        s.close()


def test_refused_anonymous_put_gets_no_100_continue(gw):  # noqa: F811
    srv, c = gw
    a = c["alice"]
    a.create_bucket(Bucket="cont-private")
    host, port = srv.host_port
    code, _, first = _put_expecting_continue(host, port, "/cont-private/obj")
    assert code == "403", first
    assert "<Code>AccessDenied</Code>" in first, first
    # A bucket whose policy lets anyone write: 100 Continue, then the object is stored.
    a.create_bucket(Bucket="cont-public")
    a.delete_public_access_block(Bucket="cont-public")
    a.put_bucket_policy(Bucket="cont-public", Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::cont-public/*"}]}))
    code, final, first = _put_expecting_continue(host, port, "/cont-public/obj")
    assert (code, final) == ("100", "200"), first
    assert a.get_object(Bucket="cont-public", Key="obj")["Body"].read() == b"x" * 123
