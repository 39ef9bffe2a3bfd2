"""AWS parity found with ceph s3-tests (issue 37, helper s3t): the `x-amz-expiration` header of
PutObject, CopyObject, CompleteMultipartUpload, HeadObject and GetObject when an Expiration rule of the bucket's lifecycle
configuration applies to the object (AWS: `expiry-date="<midnight UTC>", rule-id="<id,
URL-encoded>"`, the creation time plus the rule's days rounded up to the next midnight UTC, or
the rule's date; the earliest rule wins; tag and size conditions count), and a lifecycle
Transition's timing validated (400) before transitions are refused (501)."""
from __future__ import annotations

import datetime
import email.utils
import re

import pytest
from botocore.exceptions import ClientError

from conftest import err_code, err_status, raw_request

HDR = "x-amz-expiration"


def _exp(resp):
    """The header as (expiry datetime, rule id), or None."""
    v = resp["ResponseMetadata"]["HTTPHeaders"].get(HDR)
    if v is None:
        return None
    m = re.fullmatch(r'expiry-date="([^"]+)", rule-id="([^"]+)"', v)
    assert m, v
    return email.utils.parsedate_to_datetime(m.group(1)), m.group(2)


def _due(last_modified: datetime.datetime, days: int) -> datetime.datetime:
    t = last_modified.astimezone(datetime.timezone.utc) + datetime.timedelta(days=days)
    midnight = t.replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight if midnight == t else midnight + datetime.timedelta(days=1)


def test_expiration_header_on_put_head_and_get(s3, bucket):
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [
        {"ID": "logs", "Filter": {"Prefix": "logs/"}, "Status": "Enabled", "Expiration": {"Days": 1}},
        # Overlaps every other rule: the earliest expiry wins.
        {"ID": "all later", "Filter": {}, "Status": "Enabled", "Expiration": {"Days": 20000}},
        {"ID": "tagged rule/x", "Filter": {"And": {"Prefix": "t/", "Tags": [{"Key": "k", "Value": "v"}]}},
         "Status": "Enabled", "Expiration": {"Days": 3}},
        {"ID": "dated", "Filter": {"Prefix": "old/"}, "Status": "Enabled",
         "Expiration": {"Date": datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)}},
        {"ID": "off", "Filter": {"Prefix": "off/"}, "Status": "Disabled", "Expiration": {"Days": 1}},
        {"ID": "big", "Filter": {"And": {"Prefix": "sz/", "ObjectSizeGreaterThan": 10}}, "Status": "Enabled",
         "Expiration": {"Days": 2}},
    ]})
    put = s3.put_object(Bucket=bucket, Key="logs/a", Body=b"x")
    head = s3.head_object(Bucket=bucket, Key="logs/a")
    due = _due(head["LastModified"], 1)
    assert _exp(put) == (due, "logs")
    assert _exp(head) == (due, "logs")
    assert _exp(s3.get_object(Bucket=bucket, Key="logs/a")) == (due, "logs")

    # Only the catch-all rule. A disabled rule does not count.
    for key in ("other", "off/x"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
        h = s3.head_object(Bucket=bucket, Key=key)
        assert _exp(h) == (_due(h["LastModified"], 20000), "all%20later")

    # A dated rule: its date.
    put = s3.put_object(Bucket=bucket, Key="old/a", Body=b"x")
    assert _exp(put) == (datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc), "dated")

    # A tag condition: the PUT's own x-amz-tagging, and tags set later (read for HEAD and GET).
    put = s3.put_object(Bucket=bucket, Key="t/a", Body=b"x", Tagging="k=v")
    h = s3.head_object(Bucket=bucket, Key="t/a")
    assert _exp(put) == (_due(h["LastModified"], 3), "tagged%20rule%2Fx")
    s3.put_object(Bucket=bucket, Key="t/b", Body=b"x")
    h = s3.head_object(Bucket=bucket, Key="t/b")
    assert _exp(h)[1] == "all%20later"
    s3.put_object_tagging(Bucket=bucket, Key="t/b", Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    assert _exp(s3.head_object(Bucket=bucket, Key="t/b")) == (_due(h["LastModified"], 3), "tagged%20rule%2Fx")
    assert _exp(s3.get_object(Bucket=bucket, Key="t/b"))[1] == "tagged%20rule%2Fx"

    # A size condition.
    assert _exp(s3.put_object(Bucket=bucket, Key="sz/small", Body=b"x"))[1] == "all%20later"
    assert _exp(s3.put_object(Bucket=bucket, Key="sz/big", Body=b"x" * 11))[1] == "big"

    # Without a configuration (deleted through this gateway): no header at once.
    s3.delete_bucket_lifecycle(Bucket=bucket)
    assert _exp(s3.head_object(Bucket=bucket, Key="logs/a")) is None
    assert _exp(s3.put_object(Bucket=bucket, Key="logs/b", Body=b"x")) is None


def test_expiration_header_on_copy_and_complete(s3, bucket):
    """AWS sends x-amz-expiration on CopyObject and CompleteMultipartUpload too; their tags are
    not in the request (the upload's came with CreateMultipartUpload, a copy's by its tagging
    directive), so a tag rule reads the new object's tags."""
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [
        {"ID": "all", "Filter": {}, "Status": "Enabled", "Expiration": {"Days": 20000}},
        {"ID": "tagged", "Filter": {"Tag": {"Key": "k", "Value": "v"}}, "Status": "Enabled",
         "Expiration": {"Days": 3}},
    ]})
    s3.put_object(Bucket=bucket, Key="src", Body=b"x", Tagging="k=v")
    copied = s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"})
    h = s3.head_object(Bucket=bucket, Key="dst")
    assert _exp(copied) == (_due(h["LastModified"], 3), "tagged")
    replaced = s3.copy_object(Bucket=bucket, Key="dst2", CopySource={"Bucket": bucket, "Key": "src"},
                              TaggingDirective="REPLACE", Tagging="k=other")
    assert _exp(replaced)[1] == "all"

    up = s3.create_multipart_upload(Bucket=bucket, Key="mp", Tagging="k=v")
    part = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=b"y")
    done = s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up["UploadId"],
                                        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    h = s3.head_object(Bucket=bucket, Key="mp")
    assert _exp(done) == (_due(h["LastModified"], 3), "tagged")


def test_no_expiration_header_without_a_lifecycle_configuration(server, s3, bucket):
    for method in ("PUT", "HEAD", "GET"):
        status, headers, _ = raw_request(server, method, f"/{bucket}/k", body=b"x" if method == "PUT" else b"")
        assert status == 200 and HDR not in headers, (method, headers)


def test_transition_timing_is_validated_before_transitions_are_refused(s3, bucket):
    """A Transition whose Date is not at midnight is AWS's 400 InvalidArgument (ceph s3-tests
    test_lifecycle_transition_set_invalid_date: botocore reads Date '20220927' as epoch seconds,
    1970-08-23T01:08:47Z); a valid transition stays 501 (one storage class)."""
    def put(transition):
        return s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [
            {"ID": "r", "Filter": {"Prefix": "p/"}, "Status": "Enabled", "Expiration": {"Date": "2030-01-01"},
             "Transitions": [transition]}]})

    with pytest.raises(ClientError) as e:
        put({"Date": "20220927", "StorageClass": "GLACIER"})
    assert (err_status(e.value), err_code(e.value)) == (400, "InvalidArgument")
    assert e.value.response["Error"]["Message"] == "'Date' must be at midnight GMT"
    with pytest.raises(ClientError) as e:
        put({"Days": 30, "StorageClass": "GLACIER"})
    assert (err_status(e.value), err_code(e.value)) == (501, "NotImplemented")
