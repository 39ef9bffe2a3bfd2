"""Every S3 operation the gateway supports, driven by boto3 against the real binary (posix backend).

Uploads run twice where it matters: with boto3's default (STREAMING-UNSIGNED-PAYLOAD-TRAILER,
CRC32 trailer) and with request_checksum_calculation=when_required (plain signed bodies)."""
from __future__ import annotations

import base64
import datetime
import hashlib
import os
import uuid
import zlib

import pytest
from botocore.exceptions import ClientError

from conftest import err_code, err_status, make_client

MiB = 1 << 20


@pytest.fixture(params=["trailer", "when_required"])
def cli(request, s3, s3_required):
    return s3 if request.param == "trailer" else s3_required


def md5(b: bytes) -> str:
    return hashlib.md5(b).hexdigest()


def crc32_b64(b: bytes) -> str:
    return base64.b64encode(zlib.crc32(b).to_bytes(4, "big")).decode()


# ---- buckets ----

def test_bucket_lifecycle(s3):
    name = "it-bkt-" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=name)
    assert name in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    h = s3.head_bucket(Bucket=name)
    assert h["ResponseMetadata"]["HTTPHeaders"]["x-amz-bucket-region"] == "us-east-1"
    assert s3.get_bucket_location(Bucket=name).get("LocationConstraint") in (None, "")
    # The owner creating it again: 200 in us-east-1, as S3 there (409 BucketAlreadyOwnedByYou
    # elsewhere: test_parity.py::test_create_bucket_again_by_its_owner).
    assert s3.create_bucket(Bucket=name)["ResponseMetadata"]["HTTPStatusCode"] == 200
    s3.put_object(Bucket=name, Key="x", Body=b"1")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=name)
    assert err_code(e.value) == "BucketNotEmpty" and err_status(e.value) == 409
    s3.delete_object(Bucket=name, Key="x")
    s3.delete_bucket(Bucket=name)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=name)
    assert err_status(e.value) == 404
    with pytest.raises(ClientError) as e:
        s3.list_objects_v2(Bucket=name)
    assert err_code(e.value) == "NoSuchBucket"


def test_invalid_bucket_names(s3):
    for bad in ["ab", "Upper-Case", "a_b_c", "-abc", "192.168.1.1"]:
        with pytest.raises(ClientError) as e:
            s3.create_bucket(Bucket=bad)
        assert err_code(e.value) == "InvalidBucketName", bad


def test_reserved_dot_dir_is_not_a_bucket(server, s3):
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert all(not n.startswith(".") for n in names)
    from conftest import raw_request
    st, _, body = raw_request(server, "GET", "/.s3hpc")
    assert st == 400 and b"InvalidBucketName" in body


def test_bucket_subresources(s3, bucket):
    assert s3.get_bucket_versioning(Bucket=bucket).get("Status") is None
    acl = s3.get_bucket_acl(Bucket=bucket)
    assert acl["Grants"][0]["Permission"] == "FULL_CONTROL"
    with pytest.raises(ClientError) as e:
        s3.get_bucket_policy(Bucket=bucket)
    assert err_code(e.value) == "NoSuchBucketPolicy"
    # Versioning itself: tests/integration/test_versioning.py.
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    with pytest.raises(ClientError) as e:
        s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
    # New buckets are BucketOwnerEnforced (ACLs disabled), as on AWS since 2023.
    assert err_status(e.value) == 400 and err_code(e.value) == "AccessControlListNotSupported"


def test_bucket_tagging(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=bucket)
    assert err_code(e.value) == "NoSuchTagSet"
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [{"Key": "team", "Value": "hpc"}]})
    assert s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == [{"Key": "team", "Value": "hpc"}]
    s3.delete_bucket_tagging(Bucket=bucket)
    with pytest.raises(ClientError):
        s3.get_bucket_tagging(Bucket=bucket)


# ---- objects ----

def test_put_get_head_delete(cli, bucket):
    data = os.urandom(100_000)
    r = cli.put_object(Bucket=bucket, Key="dir/obj name+ü", Body=data, ContentType="text/x-test",
                       Metadata={"color": "blue"}, CacheControl="no-cache", ContentDisposition="inline")
    assert r["ETag"] == f'"{md5(data)}"'
    g = cli.get_object(Bucket=bucket, Key="dir/obj name+ü")
    assert g["Body"].read() == data
    assert g["ContentType"] == "text/x-test" and g["Metadata"] == {"color": "blue"}
    assert g["CacheControl"] == "no-cache" and g["ContentDisposition"] == "inline"
    assert g["ETag"] == f'"{md5(data)}"' and g["ContentLength"] == len(data)
    assert "ContentEncoding" not in g  # aws-chunked is a transfer detail, never stored
    h = cli.head_object(Bucket=bucket, Key="dir/obj name+ü")
    assert h["ContentLength"] == len(data) and h["ETag"] == g["ETag"]
    assert h["ResponseMetadata"]["HTTPHeaders"]["x-amz-request-id"]
    cli.delete_object(Bucket=bucket, Key="dir/obj name+ü")
    with pytest.raises(ClientError) as e:
        cli.get_object(Bucket=bucket, Key="dir/obj name+ü")
    assert err_code(e.value) == "NoSuchKey" and err_status(e.value) == 404
    cli.delete_object(Bucket=bucket, Key="never-existed")  # idempotent


def test_empty_and_large_objects(cli, bucket):
    cli.put_object(Bucket=bucket, Key="empty", Body=b"")
    assert cli.get_object(Bucket=bucket, Key="empty")["Body"].read() == b""
    data = os.urandom(9 * MiB + 123)  # several GET read-ahead chunks
    cli.put_object(Bucket=bucket, Key="big", Body=data)
    assert md5(cli.get_object(Bucket=bucket, Key="big")["Body"].read()) == md5(data)


def test_checksums(cli, s3, bucket):
    data = b"hello world" * 1000
    r = cli.put_object(Bucket=bucket, Key="ck", Body=data, ChecksumAlgorithm="CRC32")
    assert r["ChecksumCRC32"] == crc32_b64(data)
    g = s3.get_object(Bucket=bucket, Key="ck", ChecksumMode="ENABLED")
    assert g["ChecksumCRC32"] == crc32_b64(data) and g["Body"].read() == data
    h = s3.head_object(Bucket=bucket, Key="ck", ChecksumMode="ENABLED")
    assert h["ChecksumCRC32"] == crc32_b64(data)
    h = s3.head_object(Bucket=bucket, Key="ck")
    assert "ChecksumCRC32" not in h
    for alg, key in [("SHA256", "ChecksumSHA256"), ("SHA1", "ChecksumSHA1")]:
        r = cli.put_object(Bucket=bucket, Key="ck-" + alg, Body=data, ChecksumAlgorithm=alg)
        assert key in r
        assert s3.head_object(Bucket=bucket, Key="ck-" + alg, ChecksumMode="ENABLED")[key] == r[key]


def test_wrong_checksum_and_md5_publish_nothing(s3_required, bucket):
    with pytest.raises(ClientError) as e:
        s3_required.put_object(Bucket=bucket, Key="bad", Body=b"abc", ChecksumCRC32=crc32_b64(b"xyz"))
    assert err_code(e.value) == "BadDigest"
    with pytest.raises(ClientError) as e:
        s3_required.put_object(Bucket=bucket, Key="bad", Body=b"abc",
                               ContentMD5=base64.b64encode(hashlib.md5(b"xyz").digest()).decode())
    assert err_code(e.value) == "BadDigest"
    with pytest.raises(ClientError) as e:
        s3_required.head_object(Bucket=bucket, Key="bad")
    assert err_status(e.value) == 404


def test_ranges(s3, bucket):
    data = bytes(range(256)) * 40
    s3.put_object(Bucket=bucket, Key="r", Body=data)
    cases = {"bytes=0-9": data[0:10], "bytes=100-": data[100:], "bytes=-7": data[-7:],
             "bytes=10200-99999": data[10200:]}
    for rng, want in cases.items():
        g = s3.get_object(Bucket=bucket, Key="r", Range=rng)
        assert g["Body"].read() == want, rng
        assert g["ResponseMetadata"]["HTTPStatusCode"] == 206
        assert g["ContentRange"].endswith(f"/{len(data)}")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="r", Range=f"bytes={len(data)}-")
    assert err_status(e.value) == 416 and err_code(e.value) == "InvalidRange"
    # Unusable range syntax is ignored, as S3 does.
    g = s3.get_object(Bucket=bucket, Key="r", Range="bytes=5-2")
    assert g["Body"].read() == data and g["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_response_overrides(s3, bucket):
    s3.put_object(Bucket=bucket, Key="o", Body=b"x", ContentType="text/plain")
    g = s3.get_object(Bucket=bucket, Key="o", ResponseContentType="application/json",
                      ResponseContentDisposition="attachment; filename=a.json", ResponseCacheControl="max-age=5",
                      ResponseContentLanguage="de", ResponseContentEncoding="identity")
    assert g["ContentType"] == "application/json"
    assert g["ContentDisposition"] == "attachment; filename=a.json"
    assert g["CacheControl"] == "max-age=5" and g["ContentLanguage"] == "de"


def test_conditionals(s3, bucket):
    r = s3.put_object(Bucket=bucket, Key="c", Body=b"cond")
    etag = r["ETag"]
    assert s3.get_object(Bucket=bucket, Key="c", IfMatch=etag)["Body"].read() == b"cond"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfMatch='"0000"')
    assert err_status(e.value) == 412 and err_code(e.value) == "PreconditionFailed"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfNoneMatch=etag)
    assert err_status(e.value) == 304
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="c", IfNoneMatch=etag)
    assert err_status(e.value) == 304
    future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfModifiedSince=future)
    assert err_status(e.value) == 304
    past = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfUnmodifiedSince=past)
    assert err_status(e.value) == 412
    # Conditional writes.
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="c", Body=b"new", IfNoneMatch="*")
    assert err_status(e.value) == 412
    s3.put_object(Bucket=bucket, Key="c2", Body=b"new", IfNoneMatch="*")


def test_object_tagging(s3, bucket):
    s3.put_object(Bucket=bucket, Key="t", Body=b"x", Tagging="a=1&b=two%20words")
    g = s3.get_object(Bucket=bucket, Key="t")
    assert g["TagCount"] == 2
    tags = {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=bucket, Key="t")["TagSet"]}
    assert tags == {"a": "1", "b": "two words"}
    s3.put_object_tagging(Bucket=bucket, Key="t", Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    assert s3.get_object_tagging(Bucket=bucket, Key="t")["TagSet"] == [{"Key": "k", "Value": "v"}]
    s3.delete_object_tagging(Bucket=bucket, Key="t")
    assert s3.get_object_tagging(Bucket=bucket, Key="t")["TagSet"] == []
    with pytest.raises(ClientError) as e:
        s3.put_object_tagging(Bucket=bucket, Key="t",
                              Tagging={"TagSet": [{"Key": f"k{i}", "Value": "v"} for i in range(11)]})
    assert err_code(e.value) == "InvalidTag"


def test_copy_object(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src key/ä+b", Body=b"copy me", Metadata={"m": "1"}, Tagging="t=1",
                  ContentType="text/a")
    # boto3 URL-encodes the copy source.
    r = s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src key/ä+b"})
    assert r["CopyObjectResult"]["ETag"] == f'"{md5(b"copy me")}"'
    h = s3.head_object(Bucket=bucket, Key="dst")
    assert h["Metadata"] == {"m": "1"} and h["ContentType"] == "text/a"
    assert s3.get_object_tagging(Bucket=bucket, Key="dst")["TagSet"] == [{"Key": "t", "Value": "1"}]
    s3.copy_object(Bucket=bucket, Key="dst2", CopySource=f"{bucket}/src key/ä+b", MetadataDirective="REPLACE",
                   Metadata={"n": "2"}, ContentType="text/b", TaggingDirective="REPLACE", Tagging="x=y")
    h = s3.head_object(Bucket=bucket, Key="dst2")
    assert h["Metadata"] == {"n": "2"} and h["ContentType"] == "text/b"
    assert s3.get_object_tagging(Bucket=bucket, Key="dst2")["TagSet"] == [{"Key": "x", "Value": "y"}]
    etag = h["ETag"]
    s3.copy_object(Bucket=bucket, Key="dst3", CopySource={"Bucket": bucket, "Key": "dst2"}, CopySourceIfMatch=etag)
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst4", CopySource={"Bucket": bucket, "Key": "dst2"},
                       CopySourceIfMatch='"nope"')
    assert err_status(e.value) == 412
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst4", CopySource={"Bucket": bucket, "Key": "dst2"},
                       CopySourceIfNoneMatch=etag)
    assert err_status(e.value) == 412
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst2", CopySource={"Bucket": bucket, "Key": "dst2"})
    assert err_code(e.value) == "InvalidRequest"
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst5", CopySource={"Bucket": bucket, "Key": "missing"})
    assert err_code(e.value) == "NoSuchKey"


def test_delete_objects(s3, bucket):
    keys = [f"d/{i:03}" for i in range(30)]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[:10]]})
    assert sorted(d["Key"] for d in r["Deleted"]) == keys[:10]
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[10:]], "Quiet": True})
    assert "Deleted" not in r and "Errors" not in r
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0


def test_list_objects(s3, bucket):
    keys = ["a/1", "a/2", "a/b/3", "b", "c d/e", "c+d", "z"]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    r = s3.list_objects_v2(Bucket=bucket)
    assert [o["Key"] for o in r["Contents"]] == sorted(keys) and r["KeyCount"] == len(keys)
    assert r["Contents"][0]["Size"] == 3 and r["Contents"][0]["ETag"] == f'"{md5(b"a/1")}"'
    r = s3.list_objects_v2(Bucket=bucket, Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/", "c d/"]
    assert [o["Key"] for o in r["Contents"]] == ["b", "c+d", "z"]
    r = s3.list_objects_v2(Bucket=bucket, Prefix="a/", Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["a/1", "a/2"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/b/"]
    r = s3.list_objects_v2(Bucket=bucket, StartAfter="b")
    assert [o["Key"] for o in r["Contents"]] == ["c d/e", "c+d", "z"]
    # Pagination with continuation tokens (max-keys 2).
    seen, token = [], None
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = s3.list_objects_v2(Bucket=bucket, MaxKeys=2, **kw)
        seen += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    assert seen == sorted(keys)
    with pytest.raises(ClientError) as e:
        s3.list_objects_v2(Bucket=bucket, ContinuationToken="!!!not-base64!!!")
    assert err_code(e.value) == "InvalidArgument"
    # v1 with markers and the paginator.
    r = s3.list_objects(Bucket=bucket, Marker="a/b/3", MaxKeys=2)
    assert [o["Key"] for o in r["Contents"]] == ["b", "c d/e"] and r["IsTruncated"]
    assert "Owner" in r["Contents"][0]
    pages = s3.get_paginator("list_objects").paginate(Bucket=bucket, PaginationConfig={"PageSize": 3})
    assert [o["Key"] for p in pages for o in p.get("Contents", [])] == sorted(keys)
    # encoding-type=url asked for explicitly: boto3 leaves the keys encoded. (By default boto3 sets
    # it itself and decodes, which every listing above went through.)
    r = s3.list_objects_v2(Bucket=bucket, EncodingType="url", FetchOwner=True, Prefix="c")
    assert [o["Key"] for o in r["Contents"]] == ["c%20d/e", "c%2Bd"] and "Owner" in r["Contents"][0]
    r = s3.list_objects_v2(Bucket=bucket, Prefix="c")
    assert "Owner" not in r["Contents"][0]
    r = s3.list_objects_v2(Bucket=bucket, MaxKeys=0)
    assert r["KeyCount"] == 0


def test_list_object_versions(s3, bucket):
    for k in ["v1", "v2"]:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = s3.list_object_versions(Bucket=bucket)
    assert [(v["Key"], v["VersionId"], v["IsLatest"]) for v in r["Versions"]] == [("v1", "null", True),
                                                                                  ("v2", "null", True)]


def test_get_object_attributes(s3, bucket):
    s3.put_object(Bucket=bucket, Key="attr", Body=b"12345", ChecksumAlgorithm="SHA256")
    r = s3.get_object_attributes(Bucket=bucket, Key="attr",
                                 ObjectAttributes=["ETag", "ObjectSize", "StorageClass", "Checksum"])
    assert r["ETag"] == md5(b"12345") and r["ObjectSize"] == 5 and r["StorageClass"] == "STANDARD"
    assert "ChecksumSHA256" in r["Checksum"]


# ---- multipart ----

def test_multipart(cli, bucket):
    part1 = os.urandom(5 * MiB)
    part2 = os.urandom(1234)
    c = cli.create_multipart_upload(Bucket=bucket, Key="mp", Metadata={"k": "v"}, ContentType="app/x")
    uid = c["UploadId"]
    ups = cli.list_multipart_uploads(Bucket=bucket)["Uploads"]
    assert [(u["Key"], u["UploadId"]) for u in ups] == [("mp", uid)]
    e1 = cli.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=1, Body=part1)["ETag"]
    e2 = cli.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=2, Body=part2)["ETag"]
    lp = cli.list_parts(Bucket=bucket, Key="mp", UploadId=uid)
    assert [(p["PartNumber"], p["Size"]) for p in lp["Parts"]] == [(1, len(part1)), (2, len(part2))]
    lp = cli.list_parts(Bucket=bucket, Key="mp", UploadId=uid, MaxParts=1)
    assert lp["IsTruncated"] and lp["NextPartNumberMarker"] == 1
    r = cli.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    assert r["ETag"].strip('"').endswith("-2")
    want = hashlib.md5(bytes.fromhex(md5(part1)) + bytes.fromhex(md5(part2))).hexdigest() + "-2"
    assert r["ETag"] == f'"{want}"'
    g = cli.get_object(Bucket=bucket, Key="mp")
    assert md5(g["Body"].read()) == md5(part1 + part2)
    assert g["Metadata"] == {"k": "v"} and g["ContentType"] == "app/x"
    g = cli.get_object(Bucket=bucket, Key="mp", PartNumber=2)
    assert g["Body"].read() == part2 and g["PartsCount"] == 2
    attrs = cli.get_object_attributes(Bucket=bucket, Key="mp", ObjectAttributes=["ObjectParts"])
    assert attrs["ObjectParts"]["TotalPartsCount"] == 2
    with pytest.raises(ClientError) as e:
        cli.list_parts(Bucket=bucket, Key="mp", UploadId=uid)
    assert err_code(e.value) == "NoSuchUpload"


def test_multipart_errors_and_abort(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp2")["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key="mp2", UploadId=uid, PartNumber=1, Body=b"small")["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="mp2", UploadId=uid, PartNumber=2, Body=b"small")["ETag"]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="mp2", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    assert err_code(e.value) == "EntityTooSmall"
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="mp2", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 2, "ETag": e2}, {"PartNumber": 1, "ETag": e1}]})
    assert err_code(e.value) == "InvalidPartOrder"
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="mp2", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": '"ffff"'}]})
    assert err_code(e.value) == "InvalidPart"
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="mp2", UploadId=uid, PartNumber=10001, Body=b"x")
    assert err_code(e.value) == "InvalidArgument"
    s3.abort_multipart_upload(Bucket=bucket, Key="mp2", UploadId=uid)
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="mp2", UploadId=uid, PartNumber=1, Body=b"x")
    assert err_code(e.value) == "NoSuchUpload"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="mp2")
    assert err_status(e.value) == 404


def test_upload_part_copy(s3, bucket):
    src = os.urandom(6 * MiB)
    s3.put_object(Bucket=bucket, Key="src", Body=src)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="pc")["UploadId"]
    p1 = s3.upload_part_copy(Bucket=bucket, Key="pc", UploadId=uid, PartNumber=1,
                             CopySource={"Bucket": bucket, "Key": "src"}, CopySourceRange=f"bytes=0-{5 * MiB - 1}")
    p2 = s3.upload_part_copy(Bucket=bucket, Key="pc", UploadId=uid, PartNumber=2,
                             CopySource={"Bucket": bucket, "Key": "src"}, CopySourceRange=f"bytes={5 * MiB}-{6 * MiB - 1}")
    s3.complete_multipart_upload(Bucket=bucket, Key="pc", UploadId=uid, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": p1["CopyPartResult"]["ETag"]},
        {"PartNumber": 2, "ETag": p2["CopyPartResult"]["ETag"]}]})
    assert md5(s3.get_object(Bucket=bucket, Key="pc")["Body"].read()) == md5(src)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="pc2")["UploadId"]
    with pytest.raises(ClientError) as e:
        s3.upload_part_copy(Bucket=bucket, Key="pc2", UploadId=uid, PartNumber=1,
                            CopySource={"Bucket": bucket, "Key": "src"}, CopySourceRange="bytes=5-")
    assert err_code(e.value) == "InvalidArgument"
    s3.abort_multipart_upload(Bucket=bucket, Key="pc2", UploadId=uid)


def test_multipart_with_checksums(s3, bucket):
    part1, part2 = os.urandom(5 * MiB), os.urandom(100)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mpc", ChecksumAlgorithm="CRC32")["UploadId"]
    r1 = s3.upload_part(Bucket=bucket, Key="mpc", UploadId=uid, PartNumber=1, Body=part1, ChecksumAlgorithm="CRC32")
    r2 = s3.upload_part(Bucket=bucket, Key="mpc", UploadId=uid, PartNumber=2, Body=part2, ChecksumAlgorithm="CRC32")
    assert r1["ChecksumCRC32"] == crc32_b64(part1)
    r = s3.complete_multipart_upload(Bucket=bucket, Key="mpc", UploadId=uid, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": r1["ETag"], "ChecksumCRC32": r1["ChecksumCRC32"]},
        {"PartNumber": 2, "ETag": r2["ETag"], "ChecksumCRC32": r2["ChecksumCRC32"]}]})
    assert r["ChecksumCRC32"].endswith("-2")
    g = s3.get_object(Bucket=bucket, Key="mpc", ChecksumMode="ENABLED")
    assert md5(g["Body"].read()) == md5(part1 + part2)


def test_presigned_urls(server, s3, bucket):
    import urllib.request
    put_url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "pre"}, ExpiresIn=300)
    req = urllib.request.Request(put_url, data=b"presigned body", method="PUT")
    with urllib.request.urlopen(req) as r:
        assert r.status == 200
    get_url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre"}, ExpiresIn=300)
    with urllib.request.urlopen(get_url) as r:
        assert r.read() == b"presigned body"
    # Expired: signed an hour ago, valid for one second.
    import botocore.auth
    from unittest import mock
    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
    with mock.patch.object(botocore.auth.datetime, "datetime", wraps=datetime.datetime) as dt:
        dt.utcnow.return_value = past.replace(tzinfo=None)
        dt.now.return_value = past
        old = make_client(server.endpoint)
        url = old.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre"}, ExpiresIn=1)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url)
    assert e.value.code == 403
    assert b"AccessDenied" in e.value.read()
    # Tampered signature.
    bad = get_url[:-4] + ("0000" if not get_url.endswith("0000") else "1111")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(bad)
    assert e.value.code == 403 and b"SignatureDoesNotMatch" in e.value.read()
