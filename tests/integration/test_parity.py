"""AWS parity of the HTTP front end (issue 25): hostile paths and tokens, headers AWS sends,
range/partNumber edge cases, auth error wording, listing details, checksum verification. Every test
drives the real binary with boto3 or raw signed requests and checks what AWS answers."""
from __future__ import annotations

import base64
import re
import uuid

import pytest
from botocore.exceptions import ClientError

from conftest import err_code, err_status, raw_request


def xml_field(body: bytes, tag: str) -> str | None:
    m = re.search(rf"<{tag}>(.*?)</{tag}>".encode(), body, re.S)
    return m.group(1).decode() if m else None


def assert_error(status, body, want_status, want_code, want_message=None):
    assert status == want_status, (status, body[:400])
    assert xml_field(body, "Code") == want_code, body[:400]
    assert xml_field(body, "RequestId"), body[:400]
    if want_message is not None:
        assert xml_field(body, "Message") == want_message, body[:400]


# ---- hostile paths ----

@pytest.mark.parametrize("path", ["/%2Ftmp/x", "/%2Ftmp", "/%2F", "//x", "//", "/%2Fetc%2Fpasswd/x"])
def test_encoded_slash_in_bucket_is_an_invalid_bucket_not_list_buckets(server, s3, bucket, path):
    s3.put_object(Bucket=bucket, Key="x", Body=b"x")
    for method in ["GET", "HEAD", "PUT", "DELETE"]:
        st, _, body = raw_request(server, method, path, body=b"" if method != "PUT" else b"data")
        assert b"ListAllMyBucketsResult" not in body and b"<Bucket>" not in body, (method, path, body[:300])
        if method == "HEAD":
            assert st == 400 and body == b"", (method, path, st)
        else:
            assert_error(st, body, 400, "InvalidBucketName")
    # Nothing was created anywhere, and the service answers as before.
    assert {b["Name"] for b in s3.list_buckets()["Buckets"]} >= {bucket}
    assert not any(p.name == "tmp" for p in server.root.iterdir())


def test_encoded_slash_in_key_is_part_of_the_key(server, s3, bucket):
    st, _, _ = raw_request(server, "PUT", f"/{bucket}/a%2Fb", body=b"v")
    assert st == 200
    assert s3.get_object(Bucket=bucket, Key="a/b")["Body"].read() == b"v"


# ---- continuation tokens ----

def test_listobjectsv2_pages_with_opaque_tokens(s3, bucket):
    keys = sorted(f"k{i:02d}" for i in range(5))
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"")
    seen, token, pages = [], None, 0
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = s3.list_objects_v2(Bucket=bucket, MaxKeys=2, **kw)
        pages += 1
        seen += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
        # Opaque: the token does not spell the key it resumes after.
        assert seen[-1] not in token and base64.b64encode(seen[-1].encode()).decode() not in token
    assert seen == keys and pages == 3


@pytest.mark.parametrize("token", ["junk", "azAx", base64.b64encode(b"k01").decode(), "AQ", "%%%"])
def test_junk_continuation_token_is_refused(s3, bucket, token):
    for k in ["k00", "k01", "k02"]:
        s3.put_object(Bucket=bucket, Key=k, Body=b"")
    with pytest.raises(ClientError) as e:
        s3.list_objects_v2(Bucket=bucket, ContinuationToken=token)
    assert err_code(e.value) == "InvalidArgument" and err_status(e.value) == 400
    assert e.value.response["Error"]["Message"] == "The continuation token provided is incorrect"


def test_continuation_token_of_another_bucket_or_tampered_is_refused(s3, bucket):
    other = "it-" + uuid.uuid4().hex[:16]
    s3.create_bucket(Bucket=other)
    try:
        for b in (bucket, other):
            for k in ["a", "b", "c"]:
                s3.put_object(Bucket=b, Key=k, Body=b"")
        token = s3.list_objects_v2(Bucket=bucket, MaxKeys=1)["NextContinuationToken"]
        assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, ContinuationToken=token)["Contents"]] == ["b", "c"]
        with pytest.raises(ClientError) as e:
            s3.list_objects_v2(Bucket=other, ContinuationToken=token)
        assert err_code(e.value) == "InvalidArgument"
        tampered = token[:-1] + ("A" if token[-1] != "A" else "B")
        with pytest.raises(ClientError) as e:
            s3.list_objects_v2(Bucket=bucket, ContinuationToken=tampered)
        assert err_code(e.value) == "InvalidArgument"
    finally:
        for k in ["a", "b", "c"]:
            s3.delete_object(Bucket=other, Key=k)
        s3.delete_bucket(Bucket=other)
