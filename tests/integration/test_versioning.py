"""S3 versioning through the gateway with boto3: Put/GetBucketVersioning, versioned PUT/GET/HEAD/
DELETE, delete markers, suspended mode and the null version, ListObjectVersions paging, copy from
a version, DeleteObjects with versions, and AWS's errors; plus the posix layout on disk."""
from __future__ import annotations

import uuid

import pytest
from botocore.exceptions import ClientError

from conftest import err_code, err_status, purge_versioned_bucket as purge, raw_request


@pytest.fixture
def vbucket(s3):
    name = "itv-" + uuid.uuid4().hex[:16]
    s3.create_bucket(Bucket=name)
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    yield name
    purge(s3, name)


def entries(s3, bucket, **kw):
    r = s3.list_object_versions(Bucket=bucket, **kw)
    out = [(v["Key"], v["VersionId"], v["IsLatest"], False) for v in r.get("Versions", [])]
    out += [(m["Key"], m["VersionId"], m["IsLatest"], True) for m in r.get("DeleteMarkers", [])]
    return r, out


def test_versioning_state_roundtrip(s3):
    name = "itv-" + uuid.uuid4().hex[:16]
    s3.create_bucket(Bucket=name)
    try:
        assert "Status" not in s3.get_bucket_versioning(Bucket=name)
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
        assert s3.get_bucket_versioning(Bucket=name)["Status"] == "Enabled"
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Suspended"})
        assert s3.get_bucket_versioning(Bucket=name)["Status"] == "Suspended"
        with pytest.raises(ClientError) as e:
            s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled", "MFADelete": "Enabled"})
        assert err_status(e.value) == 501 and err_code(e.value) == "NotImplemented"
        assert s3.get_bucket_versioning(Bucket=name)["Status"] == "Suspended"
    finally:
        purge(s3, name)


def test_bad_versioning_document(server, s3):
    name = "itv-" + uuid.uuid4().hex[:16]
    s3.create_bucket(Bucket=name)
    try:
        doc = b'<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>On</Status></VersioningConfiguration>'
        st, _, body = raw_request(server, "PUT", f"/{name}?versioning", body=doc)
        assert st == 400 and b"IllegalVersioningConfigurationException" in body
        st, _, body = raw_request(server, "PUT", f"/{name}?versioning", body=b"<nope")
        assert st == 400 and b"MalformedXML" in body
    finally:
        purge(s3, name)


def test_versions_markers_and_reads(s3, vbucket):
    b = vbucket
    v1 = s3.put_object(Bucket=b, Key="k", Body=b"one")["VersionId"]
    v2 = s3.put_object(Bucket=b, Key="k", Body=b"two")["VersionId"]
    assert v1 != v2 and v1 != "null"
    g = s3.get_object(Bucket=b, Key="k")
    assert g["Body"].read() == b"two" and g["VersionId"] == v2
    g = s3.get_object(Bucket=b, Key="k", VersionId=v1)
    assert g["Body"].read() == b"one" and g["VersionId"] == v1
    h = s3.head_object(Bucket=b, Key="k", VersionId=v1)
    assert h["ContentLength"] == 3 and h["VersionId"] == v1
    g = s3.get_object(Bucket=b, Key="k", VersionId=v1, Range="bytes=1-1")
    assert g["Body"].read() == b"n"
    # A delete makes a marker.
    d = s3.delete_object(Bucket=b, Key="k")
    assert d["DeleteMarker"] is True
    m = d["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="k")
    assert err_status(e.value) == 404 and err_code(e.value) == "NoSuchKey"
    hdrs = e.value.response["ResponseMetadata"]["HTTPHeaders"]
    assert hdrs.get("x-amz-delete-marker") == "true" and hdrs.get("x-amz-version-id") == m
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=b, Key="k", VersionId=m)
    assert err_status(e.value) == 405
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="k", VersionId=m)
    assert err_status(e.value) == 405 and err_code(e.value) == "MethodNotAllowed"
    assert "Contents" not in s3.list_objects_v2(Bucket=b)
    r, got = entries(s3, b)
    assert sorted(got) == sorted([("k", m, True, True), ("k", v2, False, False), ("k", v1, False, False)])
    assert [v["VersionId"] for v in r["Versions"]] == [v2, v1]
    # Removing the marker restores the key; removing the current version promotes the previous.
    d = s3.delete_object(Bucket=b, Key="k", VersionId=m)
    assert d["DeleteMarker"] is True and d["VersionId"] == m
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"two"
    d = s3.delete_object(Bucket=b, Key="k", VersionId=v2)
    assert d["VersionId"] == v2 and "DeleteMarker" not in d
    g = s3.get_object(Bucket=b, Key="k")
    assert g["Body"].read() == b"one" and g["VersionId"] == v1


def test_version_id_errors(s3, vbucket):
    b = vbucket
    s3.put_object(Bucket=b, Key="k", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="k", VersionId="not-a-version")
    assert err_status(e.value) == 400 and err_code(e.value) == "InvalidArgument"
    assert e.value.response["Error"]["Message"] == "Invalid version id specified"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="k", VersionId="0" * 32)
    assert err_status(e.value) == 404 and err_code(e.value) == "NoSuchVersion"
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=b, Key="k", VersionId="bad")
    assert err_status(e.value) == 400 and err_code(e.value) == "InvalidArgument"
    # Deleting a version that does not exist succeeds, as on S3.
    s3.delete_object(Bucket=b, Key="k", VersionId="0" * 32)
    with pytest.raises(ClientError) as e:
        s3.list_object_versions(Bucket=b, VersionIdMarker="null")
    assert err_status(e.value) == 400 and err_code(e.value) == "InvalidArgument"


def test_suspended_mode_and_null_version(s3, vbucket):
    b = vbucket
    va = s3.put_object(Bucket=b, Key="k", Body=b"a")["VersionId"]
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    r = s3.put_object(Bucket=b, Key="k", Body=b"b")
    assert r.get("VersionId") in (None, "null")
    s3.put_object(Bucket=b, Key="k", Body=b"c")
    _, got = entries(s3, b)
    assert sorted(got) == sorted([("k", "null", True, False), ("k", va, False, False)])
    assert s3.get_object(Bucket=b, Key="k", VersionId="null")["Body"].read() == b"c"
    d = s3.delete_object(Bucket=b, Key="k")
    assert d["DeleteMarker"] is True and d["VersionId"] == "null"
    _, got = entries(s3, b)
    assert sorted(got) == sorted([("k", "null", True, True), ("k", va, False, False)])


def test_list_versions_paging_and_prefixes(s3, vbucket):
    b = vbucket
    for k in ["a", "d/1", "d/2", "z"]:
        for body in (b"1", b"2"):
            s3.put_object(Bucket=b, Key=k, Body=body)
    s3.delete_object(Bucket=b, Key="z")
    _, full = entries(s3, b)
    assert len(full) == 9
    seen, kw = [], {}
    while True:
        r = s3.list_object_versions(Bucket=b, MaxKeys=2, **kw)
        page = r.get("Versions", []) + r.get("DeleteMarkers", [])
        assert len(page) <= 2
        seen += [(v["Key"], v["VersionId"]) for v in page]
        if not r["IsTruncated"]:
            break
        kw = {"KeyMarker": r["NextKeyMarker"], "VersionIdMarker": r["NextVersionIdMarker"]}
    assert sorted(seen) == sorted((e[0], e[1]) for e in full) and len(seen) == len(set(seen))
    r = s3.list_object_versions(Bucket=b, Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["d/"]
    r = s3.list_object_versions(Bucket=b, Prefix="d/", EncodingType="url")
    assert r["EncodingType"] == "url" and len(r["Versions"]) == 4


def test_copy_from_version_and_multipart_version(s3, vbucket):
    b = vbucket
    v1 = s3.put_object(Bucket=b, Key="src", Body=b"first")["VersionId"]
    s3.put_object(Bucket=b, Key="src", Body=b"second")
    c = s3.copy_object(Bucket=b, Key="dst", CopySource={"Bucket": b, "Key": "src", "VersionId": v1})
    assert c["CopySourceVersionId"] == v1 and c["VersionId"] not in (None, "null")
    assert s3.get_object(Bucket=b, Key="dst")["Body"].read() == b"first"
    up = s3.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    p = s3.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=1, Body=b"part")
    done = s3.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up,
                                        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert done["VersionId"] not in (None, "null")
    assert s3.head_object(Bucket=b, Key="mp")["VersionId"] == done["VersionId"]


def test_upload_part_copy_from_a_noncurrent_version(s3, vbucket):
    b = vbucket
    v1 = s3.put_object(Bucket=b, Key="src", Body=b"A" * (5 << 20))["VersionId"]
    v2 = s3.put_object(Bucket=b, Key="src", Body=b"second")["VersionId"]
    up = s3.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    p1 = s3.upload_part_copy(Bucket=b, Key="mp", UploadId=up, PartNumber=1,
                             CopySource={"Bucket": b, "Key": "src", "VersionId": v1})
    assert p1["CopySourceVersionId"] == v1
    p2 = s3.upload_part_copy(Bucket=b, Key="mp", UploadId=up, PartNumber=2, CopySourceRange="bytes=0-2",
                             CopySource={"Bucket": b, "Key": "src", "VersionId": v2})
    assert p2["CopySourceVersionId"] == v2
    # A source condition is judged against the version named, not the current one.
    etag1 = s3.head_object(Bucket=b, Key="src", VersionId=v1)["ETag"]
    s3.upload_part_copy(Bucket=b, Key="mp", UploadId=up, PartNumber=3, CopySourceIfMatch=etag1,
                        CopySource={"Bucket": b, "Key": "src", "VersionId": v1})
    marker = s3.delete_object(Bucket=b, Key="src")["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.upload_part_copy(Bucket=b, Key="mp", UploadId=up, PartNumber=4,
                            CopySource={"Bucket": b, "Key": "src", "VersionId": marker})
    assert err_code(e.value) == "InvalidRequest"
    with pytest.raises(ClientError) as e:
        s3.upload_part_copy(Bucket=b, Key="mp", UploadId=up, PartNumber=4, CopySource={"Bucket": b, "Key": "src"})
    assert err_code(e.value) == "NoSuchKey"
    parts = [{"PartNumber": 1, "ETag": p1["CopyPartResult"]["ETag"]}, {"PartNumber": 2, "ETag": p2["CopyPartResult"]["ETag"]}]
    s3.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up, MultipartUpload={"Parts": parts})
    assert s3.get_object(Bucket=b, Key="mp")["Body"].read() == b"A" * (5 << 20) + b"sec"


def test_delete_objects_with_versions(s3, vbucket):
    b = vbucket
    v1 = s3.put_object(Bucket=b, Key="x", Body=b"1")["VersionId"]
    s3.put_object(Bucket=b, Key="y", Body=b"1")
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "x", "VersionId": v1}, {"Key": "y"},
                                                         {"Key": "z", "VersionId": "bad"}]})
    deleted = {d["Key"]: d for d in r["Deleted"]}
    assert deleted["x"]["VersionId"] == v1 and "DeleteMarker" not in deleted["x"]
    assert deleted["y"]["DeleteMarker"] is True and deleted["y"]["DeleteMarkerVersionId"]
    assert [(e["Key"], e["Code"]) for e in r["Errors"]] == [("z", "InvalidArgument")]
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="x", VersionId=v1)
    assert err_code(e.value) == "NoSuchVersion"


def test_bucket_with_versions_is_not_empty(s3, vbucket):
    s3.put_object(Bucket=vbucket, Key="k", Body=b"x")
    s3.delete_object(Bucket=vbucket, Key="k")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=vbucket)
    assert err_code(e.value) == "BucketNotEmpty"


def test_posix_layout_and_posix_writes(server, s3, vbucket):
    b = vbucket
    v1 = s3.put_object(Bucket=b, Key="dir/k", Body=b"one")["VersionId"]
    s3.put_object(Bucket=b, Key="dir/k", Body=b"two")
    root = server.root
    assert (root / b / "dir" / "k").read_bytes() == b"two"
    assert (root / b / ".s3hpc" / "versions" / "dir" / "k" / ".s3hpc" / v1).read_bytes() == b"one"
    # A file written by a POSIX tool is the current version, with version id null.
    (root / b / "dir" / "k").write_bytes(b"posix!")
    h = s3.head_object(Bucket=b, Key="dir/k")
    assert h["ContentLength"] == 6 and h.get("VersionId") in (None, "null")


def test_tagging_of_any_version(server, s3, vbucket):
    """Get/Put/DeleteObjectTagging with VersionId act on that version only and answer its id;
    a versioned GET/HEAD counts that version's tags; a delete marker's id is 405, an unknown
    one 404 NoSuchVersion, a malformed one 400 InvalidArgument."""
    b = vbucket
    tagset = lambda *kv: {"TagSet": [{"Key": k, "Value": v} for k, v in kv]}
    count = lambda r: r["ResponseMetadata"]["HTTPHeaders"].get("x-amz-tagging-count")
    v1 = s3.put_object(Bucket=b, Key="k", Body=b"one", Tagging="gen=1")["VersionId"]
    v2 = s3.put_object(Bucket=b, Key="k", Body=b"two")["VersionId"]
    # Without a version id: the current version, whose id is answered.
    r = s3.put_object_tagging(Bucket=b, Key="k", Tagging=tagset(("cur", "2")))
    assert r["VersionId"] == v2
    assert s3.get_object_tagging(Bucket=b, Key="k", VersionId=v1)["TagSet"] == tagset(("gen", "1"))["TagSet"]
    # A noncurrent version.
    r = s3.put_object_tagging(Bucket=b, Key="k", VersionId=v1, Tagging=tagset(("a", "1"), ("b", "2")))
    assert r["VersionId"] == v1
    g = s3.get_object_tagging(Bucket=b, Key="k", VersionId=v1)
    assert g["VersionId"] == v1 and g["TagSet"] == tagset(("a", "1"), ("b", "2"))["TagSet"]
    g = s3.get_object_tagging(Bucket=b, Key="k")
    assert g["VersionId"] == v2 and g["TagSet"] == tagset(("cur", "2"))["TagSet"]
    got = s3.get_object(Bucket=b, Key="k", VersionId=v1)
    assert got["Body"].read() == b"one" and got["TagCount"] == 2
    assert count(s3.head_object(Bucket=b, Key="k", VersionId=v1)) == "2"
    assert s3.get_object(Bucket=b, Key="k")["TagCount"] == 1
    assert count(s3.head_object(Bucket=b, Key="k")) == "1"
    # The current version named by its id.
    r = s3.put_object_tagging(Bucket=b, Key="k", VersionId=v2, Tagging=tagset(("cur", "3")))
    assert r["VersionId"] == v2
    assert s3.get_object_tagging(Bucket=b, Key="k")["TagSet"] == tagset(("cur", "3"))["TagSet"]
    # DeleteObjectTagging of a version.
    r = s3.delete_object_tagging(Bucket=b, Key="k", VersionId=v1)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204 and r["VersionId"] == v1
    assert s3.get_object_tagging(Bucket=b, Key="k", VersionId=v1)["TagSet"] == []
    assert "TagCount" not in s3.get_object(Bucket=b, Key="k", VersionId=v1)
    assert count(s3.head_object(Bucket=b, Key="k", VersionId=v1)) is None
    assert s3.get_object_tagging(Bucket=b, Key="k")["TagSet"] == tagset(("cur", "3"))["TagSet"]
    r = s3.delete_object_tagging(Bucket=b, Key="k")
    assert r["VersionId"] == v2
    s3.put_object_tagging(Bucket=b, Key="k", Tagging=tagset(("cur", "4")))
    # A delete marker: 405 for its id, 404 NoSuchKey without one; v2 keeps its tags.
    m = s3.delete_object(Bucket=b, Key="k")["VersionId"]
    calls = {
        "get": lambda v: s3.get_object_tagging(Bucket=b, Key="k", VersionId=v),
        "put": lambda v: s3.put_object_tagging(Bucket=b, Key="k", VersionId=v, Tagging=tagset(("x", "y"))),
        "delete": lambda v: s3.delete_object_tagging(Bucket=b, Key="k", VersionId=v),
    }
    for name, call in calls.items():
        with pytest.raises(ClientError) as e:
            call(m)
        assert (err_status(e.value), err_code(e.value)) == (405, "MethodNotAllowed"), name
        with pytest.raises(ClientError) as e:
            call("0" * 32)
        assert (err_status(e.value), err_code(e.value)) == (404, "NoSuchVersion"), name
        with pytest.raises(ClientError) as e:
            call("not-a-version")
        assert (err_status(e.value), err_code(e.value)) == (400, "InvalidArgument"), name
        assert e.value.response["Error"]["Message"] == "Invalid version id specified"
    with pytest.raises(ClientError) as e:
        s3.get_object_tagging(Bucket=b, Key="k")
    assert (err_status(e.value), err_code(e.value)) == (404, "NoSuchKey")
    g = s3.get_object_tagging(Bucket=b, Key="k", VersionId=v2)
    assert g["VersionId"] == v2 and g["TagSet"] == tagset(("cur", "4"))["TagSet"]
    s3.put_object_tagging(Bucket=b, Key="k", VersionId=v2, Tagging=tagset(("noncurrent", "yes")))
    assert s3.get_object(Bucket=b, Key="k", VersionId=v2)["TagCount"] == 1
    assert s3.get_object_tagging(Bucket=b, Key="k", VersionId=v1)["TagSet"] == []
    # The version files on disk are untouched (the tags are in their records).
    vdir = server.root / b / ".s3hpc" / "versions" / "k" / ".s3hpc"
    assert (vdir / v1).read_bytes() == b"one" and (vdir / v2).read_bytes() == b"two"


def test_tagging_on_an_unversioned_bucket(s3, bucket):
    """Without versioning nothing changes: the null version is the object, answers carry no
    version id, any other id is NoSuchVersion."""
    s3.put_object(Bucket=bucket, Key="u", Body=b"x")
    r = s3.put_object_tagging(Bucket=bucket, Key="u", VersionId="null", Tagging={"TagSet": [{"Key": "a", "Value": "1"}]})
    assert "VersionId" not in r
    g = s3.get_object_tagging(Bucket=bucket, Key="u")
    assert "VersionId" not in g and g["TagSet"] == [{"Key": "a", "Value": "1"}]
    with pytest.raises(ClientError) as e:
        s3.get_object_tagging(Bucket=bucket, Key="u", VersionId="0" * 32)
    assert (err_status(e.value), err_code(e.value)) == (404, "NoSuchVersion")
    s3.delete_object_tagging(Bucket=bucket, Key="u", VersionId="null")
    assert s3.get_object_tagging(Bucket=bucket, Key="u")["TagSet"] == []
