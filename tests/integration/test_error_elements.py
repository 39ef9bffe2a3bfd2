"""The elements AWS adds to an error document beside Code/Message/Resource/RequestId/HostId
(issue 25): `BucketName` of NoSuchBucket, `Key` of NoSuchKey, `ArgumentName`/`ArgumentValue` of
InvalidArgument, `RangeRequested`/`ActualObjectSize` of InvalidRange, ... boto3 puts every element
into `e.response["Error"]`; these tests read them there (or from the raw document where boto3
would retry or sign by itself), against the real binary."""
from __future__ import annotations

import datetime
import html
import re
import time
import uuid
from unittest import mock
from urllib.parse import urlsplit

import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS_KEY, make_client, purge_versioned_bucket, raw_request


def error_of(call, **kw) -> dict:
    with pytest.raises(ClientError) as ei:
        call(**kw)
    return ei.value.response["Error"]


def fields(body: bytes) -> dict:
    """The child elements of `<Error>`, in document order (a dict keeps it)."""
    inner = re.search(rb"<Error>(.*)</Error>", body, re.S)
    assert inner, body[:400]
    return {m.group(1).decode(): html.unescape(m.group(2).decode())
            for m in re.finditer(rb"<([A-Za-z0-9-]+)>(.*?)</\1>", inner.group(1), re.S)}


@pytest.fixture
def vbucket(s3):
    """A versioned bucket, every version and marker removed afterwards."""
    name = "itv-" + uuid.uuid4().hex[:16]
    s3.create_bucket(Bucket=name)
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    yield name
    purge_versioned_bucket(s3, name)


# ---- the resource that is missing ----

def test_no_such_bucket_names_the_bucket(s3):
    name = f"missing-{uuid.uuid4().hex[:12]}"
    e = error_of(s3.list_objects_v2, Bucket=name)
    assert (e["Code"], e.get("BucketName")) == ("NoSuchBucket", name)


def test_no_such_key_names_the_key_escaped(server, s3, bucket):
    key = "dir/a&b<c>'\"d"
    e = error_of(s3.get_object, Bucket=bucket, Key=key)
    assert (e["Code"], e.get("Key")) == ("NoSuchKey", key)
    # On the wire the key is escaped (boto3 would not parse the document otherwise).
    st, _, body = raw_request(server, "GET", f"/{bucket}/dir/a%26b%3Cc%3E%27%22d")
    assert st == 404 and b"<Key>dir/a&amp;b&lt;c&gt;&apos;&quot;d</Key>" in body, body


def test_no_such_upload_names_the_upload(s3, bucket):
    upload_id = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    s3.abort_multipart_upload(Bucket=bucket, Key="mp", UploadId=upload_id)
    e = error_of(s3.list_parts, Bucket=bucket, Key="mp", UploadId=upload_id)
    assert (e["Code"], e.get("UploadId")) == ("NoSuchUpload", upload_id)


def test_no_such_version_names_key_and_version(s3, vbucket):
    bucket = vbucket
    s3.put_object(Bucket=bucket, Key="v", Body=b"x")
    vid = "0" * 32
    e = error_of(s3.get_object, Bucket=bucket, Key="v", VersionId=vid)
    assert (e["Code"], e.get("Key"), e.get("VersionId")) == ("NoSuchVersion", "v", vid)


def test_delete_marker_version_names_method_and_resource_type(s3, vbucket):
    bucket = vbucket
    s3.put_object(Bucket=bucket, Key="gone", Body=b"x")
    marker = s3.delete_object(Bucket=bucket, Key="gone")["VersionId"]
    e = error_of(s3.get_object, Bucket=bucket, Key="gone", VersionId=marker)
    assert (e["Code"], e.get("Method"), e.get("ResourceType")) == ("MethodNotAllowed", "GET", "DeleteMarker")


def test_bucket_errors_name_the_bucket(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    e = error_of(s3.delete_bucket, Bucket=bucket)
    assert (e["Code"], e.get("BucketName")) == ("BucketNotEmpty", bucket)
    e = error_of(s3.get_bucket_policy, Bucket=bucket)
    assert (e["Code"], e.get("BucketName")) == ("NoSuchBucketPolicy", bucket)
    e = error_of(s3.get_bucket_cors, Bucket=bucket)
    assert (e["Code"], e.get("BucketName")) == ("NoSuchCORSConfiguration", bucket)


# ---- InvalidArgument: the argument and the value sent ----

@pytest.mark.parametrize("query,name,value", [
    ("max-keys=-1", "max-keys", "-1"),
    ("list-type=2&max-keys=abc", "max-keys", "abc"),
    ("encoding-type=base64", "encoding-type", "base64"),
])
def test_invalid_argument_of_a_listing_names_it(server, bucket, query, name, value):
    st, _, body = raw_request(server, "GET", f"/{bucket}?{query}")
    f = fields(body)
    assert (st, f["Code"], f.get("ArgumentName"), f.get("ArgumentValue")) == (400, "InvalidArgument", name, value)
    # After the message, before the resource (AWS's place for them).
    names = list(f)
    assert names.index("Message") < names.index("ArgumentName") < names.index("ArgumentValue") < names.index("RequestId")


def test_invalid_argument_of_an_object_call_names_it(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="o", Body=b"data")
    e = error_of(s3.get_object, Bucket=bucket, Key="o", VersionId="junk")
    assert (e["Code"], e.get("ArgumentName"), e.get("ArgumentValue")) == ("InvalidArgument", "versionId", "junk")
    st, _, body = raw_request(server, "GET", f"/{bucket}/o?partNumber=0")
    f = fields(body)
    assert (st, f.get("ArgumentName"), f.get("ArgumentValue")) == (400, "partNumber", "0")
    e = error_of(s3.copy_object, Bucket=bucket, Key="c", CopySource=f"{bucket}/o", MetadataDirective="MOVE")
    assert (e["Code"], e.get("ArgumentName"), e.get("ArgumentValue")) == \
        ("InvalidArgument", "x-amz-metadata-directive", "MOVE")
    e = error_of(s3.put_object, Bucket=bucket, Key="acl", Body=b"", ACL="everyone")
    assert (e["Code"], e.get("ArgumentName"), e.get("ArgumentValue")) == ("InvalidArgument", "x-amz-acl", "everyone")


def test_acl_call_without_acl_names_the_missing_header(server, bucket):
    st, _, body = raw_request(server, "PUT", f"/{bucket}?acl")
    f = fields(body)
    assert (st, f["Code"], f.get("MissingHeaderName")) == (400, "MissingSecurityHeader", "x-amz-acl"), body


def test_list_buckets_max_buckets_names_it(server):
    st, _, body = raw_request(server, "GET", "/?max-buckets=0")
    f = fields(body)
    assert (st, f.get("ArgumentName"), f.get("ArgumentValue")) == (400, "max-buckets", "0")


# ---- reads and conditions ----

def test_invalid_range_names_range_and_size(s3, bucket):
    s3.put_object(Bucket=bucket, Key="ten", Body=b"0123456789")
    e = error_of(s3.get_object, Bucket=bucket, Key="ten", Range="bytes=100-200")
    assert (e["Code"], e.get("RangeRequested"), e.get("ActualObjectSize")) == ("InvalidRange", "bytes=100-200", "10")
    s3.put_object(Bucket=bucket, Key="empty", Body=b"")
    e = error_of(s3.get_object, Bucket=bucket, Key="empty", Range="bytes=0-")
    assert (e.get("RangeRequested"), e.get("ActualObjectSize")) == ("bytes=0-", "0")


def test_precondition_failed_names_the_condition(s3, bucket):
    s3.put_object(Bucket=bucket, Key="c", Body=b"x")
    e = error_of(s3.get_object, Bucket=bucket, Key="c", IfMatch='"0000"')
    assert (e["Code"], e.get("Condition")) == ("PreconditionFailed", "If-Match")
    e = error_of(s3.get_object, Bucket=bucket, Key="c", IfUnmodifiedSince=datetime.datetime(2000, 1, 1))
    assert (e["Code"], e.get("Condition")) == ("PreconditionFailed", "If-Unmodified-Since")
    e = error_of(s3.put_object, Bucket=bucket, Key="c", Body=b"y", IfNoneMatch="*")
    assert (e["Code"], e.get("Condition")) == ("PreconditionFailed", "If-None-Match")


# ---- multipart ----

def test_invalid_part_names_upload_part_and_etag(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="m")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="m", UploadId=uid, PartNumber=1, Body=b"a")
    bad = '"00000000000000000000000000000000"'
    e = error_of(s3.complete_multipart_upload, Bucket=bucket, Key="m", UploadId=uid,
                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": bad}]})
    assert (e["Code"], e.get("UploadId"), e.get("PartNumber"), e.get("ETag")) == ("InvalidPart", uid, "1", bad)


def test_entity_too_small_names_sizes(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="s")["UploadId"]
    parts = [{"PartNumber": n, "ETag": s3.upload_part(Bucket=bucket, Key="s", UploadId=uid, PartNumber=n,
                                                      Body=b"abc")["ETag"]} for n in (1, 2)]
    e = error_of(s3.complete_multipart_upload, Bucket=bucket, Key="s", UploadId=uid,
                 MultipartUpload={"Parts": parts})
    assert (e["Code"], e.get("ProposedSize"), e.get("MinSizeAllowed")) == ("EntityTooSmall", "3", str(5 * 1024 * 1024))


def test_entity_too_large_names_sizes(server, bucket):
    # Refused from the announced length, before any body byte is read.
    big = 5 * 1024 ** 3 + 1
    st, _, body = raw_request(server, "PUT", f"/{bucket}/big", timeout=10,
                              headers={"Content-Length": str(big), "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    f = fields(body)
    assert (st, f["Code"], f.get("ProposedSize"), f.get("MaxSizeAllowed")) == \
        (400, "EntityTooLarge", str(big), str(5 * 1024 ** 3)), body


# ---- authentication ----

def test_invalid_access_key_id_names_the_key(server):
    c = make_client(server.endpoint, access_key="NOSUCHKEY0000000", secret_key="whatever")
    e = error_of(c.list_buckets)
    assert (e["Code"], e.get("AWSAccessKeyId")) == ("InvalidAccessKeyId", "NOSUCHKEY0000000")


def test_signature_does_not_match_shows_what_was_signed(server, bucket):
    c = make_client(server.endpoint, secret_key="not-the-secret")
    e = error_of(c.list_objects_v2, Bucket=bucket)
    assert e["Code"] == "SignatureDoesNotMatch"
    assert e.get("AWSAccessKeyId") == ACCESS_KEY
    assert re.fullmatch(r"[0-9a-f]{64}", e.get("SignatureProvided", ""))
    sts = e.get("StringToSign", "")
    assert sts.startswith("AWS4-HMAC-SHA256\n") and sts.count("\n") == 3, sts
    creq = e.get("CanonicalRequest", "")
    assert creq.startswith(f"GET\n/{bucket}\n") and "\nhost:" in creq, creq
    # The hash in the string to sign is the hash of the canonical request shown.
    import hashlib
    assert sts.rsplit("\n", 1)[1] == hashlib.sha256(creq.encode()).hexdigest()
    assert e.get("StringToSignBytes", "").split() == [f"{b:02x}" for b in sts.encode()]
    assert e.get("CanonicalRequestBytes", "").split() == [f"{b:02x}" for b in creq.encode()]


def test_request_time_too_skewed_names_the_times(server, bucket):
    sent = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(hours=1)
    with mock.patch("botocore.auth.get_current_datetime", return_value=sent):
        st, _, body = raw_request(server, "GET", f"/{bucket}")
    f = fields(body)
    assert (st, f["Code"]) == (403, "RequestTimeTooSkewed"), body
    assert f.get("RequestTime") == sent.strftime("%Y%m%dT%H%M%SZ")
    server_time = datetime.datetime.strptime(f.get("ServerTime", ""), "%Y-%m-%dT%H:%M:%SZ")
    assert abs((server_time - sent).total_seconds() - 3600) < 120
    assert f.get("MaxAllowedSkewMilliseconds") == "900000"


def test_expired_presigned_url_names_expiry_and_server_time(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="p", Body=b"x")
    u = urlsplit(s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "p"}, ExpiresIn=1))
    signed_at = datetime.datetime.strptime(re.search(r"X-Amz-Date=(\w+)", u.query).group(1), "%Y%m%dT%H%M%SZ")
    time.sleep(2.2)
    st, _, body = raw_request(server, "GET", f"{u.path}?{u.query}", sign=False)
    f = fields(body)
    assert (st, f["Code"]) == (403, "AccessDenied"), body
    assert f.get("X-Amz-Expires") == "1"
    assert f.get("Expires") == (signed_at + datetime.timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    server_time = datetime.datetime.strptime(f.get("ServerTime", ""), "%Y-%m-%dT%H:%M:%SZ")
    assert server_time > signed_at
    names = list(f)
    assert names.index("X-Amz-Expires") < names.index("Expires") < names.index("ServerTime")


def test_errors_without_elements_have_none(s3, bucket):
    e = error_of(s3.put_bucket_versioning, Bucket=bucket, VersioningConfiguration={"Status": "Sideways"})
    assert set(e) <= {"Code", "Message", "Resource"}, e
