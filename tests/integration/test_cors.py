"""Bucket CORS against the real binary: the configuration API (AWS's validation), the unsigned
preflight `OPTIONS` (raw http.client, as a browser sends it) and the CORS headers of actual
requests, errors included."""
from __future__ import annotations

import base64
import hashlib
import uuid

import pytest
from botocore.exceptions import ClientError

from conftest import err_code, err_status, raw_request

ORIGIN = "https://app.example.com"
RULES = [
    {"ID": "app", "AllowedOrigins": ["https://*.example.com"], "AllowedMethods": ["GET", "PUT", "HEAD"],
     "AllowedHeaders": ["x-amz-*", "Content-Type"], "ExposeHeaders": ["ETag", "x-amz-request-id"],
     "MaxAgeSeconds": 600},
    {"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]},
]


def preflight(server, path, origin=ORIGIN, method="PUT", headers=None):
    h = {}
    if origin is not None:
        h["Origin"] = origin
    if method is not None:
        h["Access-Control-Request-Method"] = method
    if headers is not None:
        h["Access-Control-Request-Headers"] = headers
    return raw_request(server, "OPTIONS", path, headers=h, sign=False)


def put_raw(server, bucket, xml: bytes):
    md5 = base64.b64encode(hashlib.md5(xml).digest()).decode()
    return raw_request(server, "PUT", f"/{bucket}?cors", body=xml, headers={"Content-MD5": md5})


def test_put_get_delete_cors(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=bucket)
    assert err_code(e.value) == "NoSuchCORSConfiguration" and err_status(e.value) == 404
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": RULES})
    got = s3.get_bucket_cors(Bucket=bucket)["CORSRules"]
    assert got[0]["ID"] == "app" and got[0]["AllowedMethods"] == ["GET", "PUT", "HEAD"]
    assert got[0]["AllowedHeaders"] == ["x-amz-*", "Content-Type"]
    assert got[0]["ExposeHeaders"] == ["ETag", "x-amz-request-id"] and got[0]["MaxAgeSeconds"] == 600
    assert got[1]["AllowedOrigins"] == ["*"]
    s3.delete_bucket_cors(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=bucket)
    assert err_code(e.value) == "NoSuchCORSConfiguration"


RULE = "<CORSRule><AllowedOrigin>{o}</AllowedOrigin><AllowedMethod>{m}</AllowedMethod></CORSRule>"


@pytest.mark.parametrize("xml,code,message", [
    (RULE.format(o="*", m="PATCH"), "InvalidRequest",
     "Found unsupported HTTP method in CORS config. Unsupported method is PATCH"),
    (RULE.format(o="http://*.*.example.com", m="GET"), "InvalidRequest",
     "AllowedOrigin \"http://*.*.example.com\" can not have more than one wildcard."),
    (RULE.format(o="*", m="GET") * 101, "InvalidRequest",
     "The number of CORS rules should not exceed allowed limit of 100 rules."),
    ("<CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule>", "MalformedXML", None),
    ("", "MalformedXML", None),
])
def test_invalid_cors(server, bucket, xml, code, message):
    st, _, body = put_raw(server, bucket, f"<CORSConfiguration>{xml}</CORSConfiguration>".encode())
    text = body.decode().replace("&quot;", '"')
    assert st == 400 and f"<Code>{code}</Code>" in text, text
    if message:
        assert f"<Message>{message}</Message>" in text, text
    st, _, _ = raw_request(server, "GET", f"/{bucket}?cors")
    assert st == 404


def test_hundred_rules_are_accepted(server, bucket):
    st, _, body = put_raw(server, bucket, f"<CORSConfiguration>{RULE.format(o='*', m='GET') * 100}"
                                          f"</CORSConfiguration>".encode())
    assert st == 200, body


def test_preflight(server, s3, bucket):
    # No configuration: 403, AWS's text.
    st, h, body = preflight(server, f"/{bucket}/k")
    assert st == 403 and b"<Code>AccessForbidden</Code>" in body
    assert b"CORSResponse: CORS is not enabled for this bucket." in body
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": RULES})
    st, h, body = preflight(server, f"/{bucket}/some/key", headers="x-amz-meta-a, content-type")
    assert st == 200, body
    assert h["access-control-allow-origin"] == ORIGIN
    assert h["access-control-allow-methods"] == "GET, PUT, HEAD"
    assert h["access-control-allow-headers"] == "x-amz-meta-a, content-type"
    assert h["access-control-expose-headers"] == "ETag, x-amz-request-id"
    assert h["access-control-max-age"] == "600"
    assert h["access-control-allow-credentials"] == "true"
    assert "Origin" in h["vary"]
    # The bucket itself too.
    st, h, _ = preflight(server, f"/{bucket}", method="GET")
    assert st == 200
    # Any origin, GET only: the second rule, answered with "*".
    st, h, _ = preflight(server, f"/{bucket}/k", origin="http://elsewhere.org", method="GET")
    assert st == 200 and h["access-control-allow-origin"] == "*"
    assert "access-control-allow-credentials" not in h
    # No rule allows: 403 with AWS's text.
    for args in [dict(origin="http://elsewhere.org", method="PUT"), dict(method="DELETE"),
                 dict(headers="authorization")]:
        st, h, body = preflight(server, f"/{bucket}/k", **args)
        assert st == 403 and b"<Code>AccessForbidden</Code>" in body, (args, body)
        assert b"CORSResponse: This CORS request is not allowed." in body
        assert "access-control-allow-origin" not in h
    # Missing headers: 400.
    st, _, body = preflight(server, f"/{bucket}/k", origin=None)
    assert st == 400 and b"Insufficient information. Origin request header needed." in body
    st, _, body = preflight(server, f"/{bucket}/k", method=None)
    assert st == 400 and b"Invalid Access-Control-Request-Method: null" in body
    # A bucket that does not exist.
    st, _, body = preflight(server, f"/nope-{uuid.uuid4().hex[:8]}/k")
    assert st == 404 and b"NoSuchBucket" in body
    # Deleted: the gateway stops answering at once.
    s3.delete_bucket_cors(Bucket=bucket)
    st, _, body = preflight(server, f"/{bucket}/k")
    assert st == 403 and b"CORS is not enabled" in body


def test_headers_on_actual_requests(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"hello")
    # Before any configuration: no CORS headers, even with an Origin.
    st, h, _ = raw_request(server, "GET", f"/{bucket}/k", headers={"Origin": ORIGIN})
    assert st == 200 and "access-control-allow-origin" not in h
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": RULES})
    st, h, body = raw_request(server, "GET", f"/{bucket}/k", headers={"Origin": ORIGIN})
    assert st == 200 and body == b"hello"
    assert h["access-control-allow-origin"] == ORIGIN
    assert h["access-control-expose-headers"] == "ETag, x-amz-request-id"
    assert h["access-control-allow-credentials"] == "true" and "Origin" in h["vary"]
    # PUT and HEAD too.
    st, h, _ = raw_request(server, "PUT", f"/{bucket}/k2", body=b"x", headers={"Origin": ORIGIN})
    assert st == 200 and h["access-control-allow-origin"] == ORIGIN
    st, h, _ = raw_request(server, "HEAD", f"/{bucket}/k", headers={"Origin": ORIGIN})
    assert st == 200 and h["access-control-allow-origin"] == ORIGIN
    # Errors carry them as well (a missing key; an anonymous request that is denied).
    st, h, body = raw_request(server, "GET", f"/{bucket}/missing", headers={"Origin": ORIGIN})
    assert st == 404 and h["access-control-allow-origin"] == ORIGIN
    st, h, _ = raw_request(server, "GET", f"/{bucket}/k", headers={"Origin": ORIGIN}, sign=False)
    assert st == 403 and h["access-control-allow-origin"] == ORIGIN
    # A method no rule allows for this origin, or an origin none allows: nothing.
    st, h, _ = raw_request(server, "DELETE", f"/{bucket}/k2", headers={"Origin": ORIGIN})
    assert st == 204 and "access-control-allow-origin" not in h
    st, h, _ = raw_request(server, "PUT", f"/{bucket}/k3", body=b"x", headers={"Origin": "http://other.org"})
    assert st == 200 and "access-control-allow-origin" not in h
    # Without an Origin: nothing.
    st, h, _ = raw_request(server, "GET", f"/{bucket}/k")
    assert st == 200 and not any(k.startswith("access-control-") for k in h)
