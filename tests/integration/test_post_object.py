"""POST object (browser form uploads) through the real gateway: forms made by boto3's
generate_presigned_post, sent as multipart/form-data with urllib3 (what a browser sends), policy
conditions and AWS's error codes, success_action_status / redirect, metadata, tagging and
checksum fields, and anonymous forms decided by the bucket policy."""
from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import html
import json
import re
import xml.etree.ElementTree as ET
import zlib

import pytest
import urllib3
from botocore.exceptions import ClientError

from conftest import ACCESS_KEY, REGION, SECRET_KEY, err_code

HTTP = urllib3.PoolManager()


def post(url, fields, file=b"data", filename="f.bin", file_content_type="application/octet-stream"):
    """Send the form: the fields in order, then the file (last, as browsers and AWS expect)."""
    parts = list(fields.items()) if isinstance(fields, dict) else list(fields)
    if file is not None:
        parts.append(("file", (filename, file, file_content_type)))
    body, ctype = urllib3.encode_multipart_formdata(parts)
    return HTTP.request("POST", url, body=body, headers={"Content-Type": ctype}, redirect=False)


def code_of(r):
    m = re.search(rb"<Code>([^<]*)</Code>", r.data)
    return m.group(1).decode() if m else ""


def message_of(r):
    m = re.search(rb"<Message>([^<]*)</Message>", r.data)
    return html.unescape(m.group(1).decode()) if m else ""


def test_presigned_post_uploads(s3, bucket):
    p = s3.generate_presigned_post(bucket, "uploads/${filename}",
                                   Fields={"x-amz-meta-project": "hpc", "Content-Type": "text/plain"},
                                   Conditions=[["starts-with", "$key", "uploads/"], {"x-amz-meta-project": "hpc"},
                                               {"Content-Type": "text/plain"}, ["content-length-range", 1, 1 << 20]],
                                   ExpiresIn=600)
    r = post(p["url"], p["fields"], b"hello from a browser", filename="report.txt")
    assert r.status == 204, r.data
    o = s3.get_object(Bucket=bucket, Key="uploads/report.txt")
    assert o["Body"].read() == b"hello from a browser"
    assert o["Metadata"] == {"project": "hpc"} and o["ContentType"] == "text/plain"
    assert r.headers["ETag"] == o["ETag"]


def test_content_type_comes_from_the_field_only(s3, bucket):
    """The file part's own Content-Type is not the object's (AWS): without a `Content-Type`
    field the object reads as binary/octet-stream."""
    p = s3.generate_presigned_post(bucket, "typed", ExpiresIn=600)
    r = post(p["url"], p["fields"], b"<html/>", filename="x.html", file_content_type="text/html")
    assert r.status == 204, r.data
    assert s3.head_object(Bucket=bucket, Key="typed")["ContentType"] == "binary/octet-stream"
    p = s3.generate_presigned_post(bucket, "typed2", Fields={"Content-Type": "text/html"},
                                   Conditions=[{"Content-Type": "text/html"}], ExpiresIn=600)
    r = post(p["url"], p["fields"], b"<html/>", filename="x.html", file_content_type="image/png")
    assert r.status == 204, r.data
    assert s3.head_object(Bucket=bucket, Key="typed2")["ContentType"] == "text/html"


def test_large_file_streams_and_is_whole(s3, bucket):
    data = bytes(range(256)) * (24 * 1024 + 7)        # ~6 MiB, not a multiple of anything
    p = s3.generate_presigned_post(bucket, "big", ExpiresIn=600)
    r = post(p["url"], p["fields"], data)
    assert r.status == 204, r.data
    assert s3.get_object(Bucket=bucket, Key="big")["Body"].read() == data
    assert r.headers["ETag"].strip('"') == hashlib.md5(data).hexdigest()


@pytest.mark.parametrize("status,want", [("200", 200), ("201", 201), ("204", 204), ("999", 204)])
def test_success_action_status(s3, bucket, status, want):
    p = s3.generate_presigned_post(bucket, f"st-{status}", Fields={"success_action_status": status},
                                   Conditions=[{"success_action_status": status}], ExpiresIn=600)
    r = post(p["url"], p["fields"], b"x")
    assert r.status == want, r.data
    if want == 201:
        # Without a namespace, as AWS answers (minio/minio#1477, localstack/localstack#1302 quote
        # S3's document; ceph s3-tests test_post_object_set_success_code reads it so).
        assert b"<PostResponse><Location>" in r.data and b"xmlns" not in r.data
        assert ET.fromstring(r.data).find("Key").text == f"st-{status}"
        assert f"<Key>st-{status}</Key>".encode() in r.data
        assert f"<Bucket>{bucket}</Bucket>".encode() in r.data and b"<ETag>&quot;" in r.data
    else:
        assert r.data == b""


def test_success_action_redirect(s3, bucket):
    target = "https://example.org/done?x=1"
    p = s3.generate_presigned_post(bucket, "redir", Fields={"success_action_redirect": target},
                                   Conditions=[{"success_action_redirect": target}], ExpiresIn=600)
    r = post(p["url"], p["fields"], b"x")
    assert r.status == 303, r.data
    loc = r.headers["Location"]
    assert loc.startswith(target + "&bucket=" + bucket + "&key=redir&etag=%22"), loc


def test_policy_violations_in_aws_words(s3, bucket):
    p = s3.generate_presigned_post(bucket, "pv", Conditions=[["content-length-range", 2, 10]], ExpiresIn=600)
    r = post(p["url"], p["fields"], b"x" * 11)
    assert (r.status, code_of(r)) == (400, "EntityTooLarge"), r.data
    r = post(p["url"], p["fields"], b"x")
    assert (r.status, code_of(r)) == (400, "EntityTooSmall"), r.data
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="pv")
    assert err_code(e.value) == "404"
    # A key outside the condition.
    p = s3.generate_presigned_post(bucket, "in/${filename}", Conditions=[["starts-with", "$key", "in/"]],
                                   ExpiresIn=600)
    f = dict(p["fields"], key="out/x")
    r = post(p["url"], f)
    assert (r.status, code_of(r)) == (403, "AccessDenied")
    assert message_of(r) == 'Invalid according to Policy: Policy Condition failed: ["starts-with", "$key", "in/"]'
    # A field no condition covers.
    r = post(p["url"], dict(p["fields"], **{"x-amz-meta-extra": "1"}))
    assert (r.status, message_of(r)) == (403, "Invalid according to Policy: Extra input fields: x-amz-meta-extra")
    # x-ignore- fields need no condition.
    r = post(p["url"], dict(p["fields"], **{"x-ignore-me": "1"}))
    assert r.status == 204, r.data
    # A tampered policy no longer matches its signature.
    doc = json.loads(base64.b64decode(p["fields"]["policy"]))
    doc["conditions"].append(["starts-with", "$x-amz-meta-extra", ""])
    r = post(p["url"], dict(p["fields"], policy=base64.b64encode(json.dumps(doc).encode()).decode()))
    assert (r.status, code_of(r)) == (403, "SignatureDoesNotMatch")
    # Expired.
    p = s3.generate_presigned_post(bucket, "late", ExpiresIn=-10)
    r = post(p["url"], p["fields"])
    assert (r.status, code_of(r), message_of(r)) == (403, "AccessDenied", "Invalid according to Policy: Policy expired.")


def sign_policy(doc, secret=SECRET_KEY, access_key=ACCESS_KEY):
    """A SigV4 form for `doc` (the credential fields are added to it and the form)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    day, amz = now.strftime("%Y%m%d"), now.strftime("%Y%m%dT%H%M%SZ")
    cred = f"{access_key}/{day}/{REGION}/s3/aws4_request"
    doc = dict(doc)
    if "conditions" in doc:
        doc["conditions"] = list(doc["conditions"]) + [
            {"x-amz-algorithm": "AWS4-HMAC-SHA256"}, {"x-amz-credential": cred}, {"x-amz-date": amz}]
    policy = base64.b64encode(json.dumps(doc).encode()).decode()
    k = ("AWS4" + secret).encode()
    for m in (day, REGION, "s3", "aws4_request"):
        k = hmac.new(k, m.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, policy.encode(), hashlib.sha256).hexdigest()
    return {"policy": policy, "x-amz-algorithm": "AWS4-HMAC-SHA256", "x-amz-credential": cred,
            "x-amz-date": amz, "x-amz-signature": sig}


def expires_in(secs=600):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=secs)
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def test_malformed_policies_and_forms(server, s3, bucket):
    url = f"{server.endpoint}/{bucket}"
    for doc, want in [({"conditions": []}, "Invalid Policy: Policy missing expiration."),
                      ({"expiration": expires_in()}, "Invalid Policy: Policy missing conditions."),
                      ({"expiration": expires_in(), "conditions": [["in", "$key", "x"]]}, None)]:
        r = post(url, [("key", "k")] + list(sign_policy(doc).items()))
        assert (r.status, code_of(r)) == (400, "InvalidPolicyDocument"), r.data
        if want:
            assert message_of(r) == want
    good = sign_policy({"expiration": expires_in(), "conditions": [["starts-with", "$key", ""]]})
    # No key field, no file field, fields too large before the file, a body cut short.
    r = post(url, list(good.items()))
    assert (r.status, code_of(r)) == (400, "InvalidArgument")
    assert message_of(r).startswith("Bucket POST must contain a field named 'key'.")
    r = post(url, [("key", "k")] + list(good.items()), file=None)
    assert (r.status, message_of(r)) == (400, "POST requires exactly one file upload per request.")
    r = post(url, [("key", "k"), ("x-ignore-pad", "p" * 30000)] + list(good.items()))
    assert (r.status, code_of(r)) == (400, "MaxPostPreDataLengthExceededError")
    body, ctype = urllib3.encode_multipart_formdata([("key", "cut")] + list(good.items()) +
                                                    [("file", ("f", b"0123456789" * 1000, "text/plain"))])
    r = HTTP.request("POST", url, body=body[:-200], headers={"Content-Type": ctype})
    assert (r.status, code_of(r)) == (400, "MalformedPOSTRequest"), r.data
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="cut")
    # Not a form at all.
    r = HTTP.request("POST", url, body=b"key=k", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert (r.status, code_of(r)) == (412, "PreconditionFailed")
    # An unknown key id.
    bad = sign_policy({"expiration": expires_in(), "conditions": [["starts-with", "$key", ""]]},
                      access_key="NOSUCHKEY0000000000")
    r = post(url, [("key", "k")] + list(bad.items()))
    assert (r.status, code_of(r)) == (403, "InvalidAccessKeyId")


def test_tagging_and_checksum_fields(s3, bucket, server):
    url = f"{server.endpoint}/{bucket}"
    data = b"checked content"
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    tagging = "<Tagging><TagSet><Tag><Key>team</Key><Value>a</Value></Tag></TagSet></Tagging>"
    form = sign_policy({"expiration": expires_in(), "conditions": [
        {"bucket": bucket}, ["eq", "$key", "ck"], {"tagging": tagging}, {"x-amz-checksum-crc32": crc}]})
    r = post(url, [("key", "ck"), ("tagging", tagging), ("x-amz-checksum-crc32", crc)] + list(form.items()), data)
    assert r.status == 204, r.data
    assert s3.get_object_tagging(Bucket=bucket, Key="ck")["TagSet"] == [{"Key": "team", "Value": "a"}]
    h = s3.head_object(Bucket=bucket, Key="ck", ChecksumMode="ENABLED")
    assert h["ChecksumCRC32"] == crc
    # A wrong checksum: BadDigest, nothing stored.
    wrong = base64.b64encode(b"\0\0\0\1").decode()
    form = sign_policy({"expiration": expires_in(), "conditions": [
        ["eq", "$key", "ck2"], {"x-amz-checksum-crc32": wrong}]})
    r = post(url, [("key", "ck2"), ("x-amz-checksum-crc32", wrong)] + list(form.items()), data)
    assert (r.status, code_of(r)) == (400, "BadDigest"), r.data
    # SHA512 (one of the algorithms AWS added) is verified too: a wrong value is BadDigest, an
    # unknown algorithm InvalidRequest, the right value stored.
    form = sign_policy({"expiration": expires_in(), "conditions": [
        ["eq", "$key", "ck3"], ["starts-with", "$x-amz-checksum-sha512", ""]]})
    r = post(url, [("key", "ck3"), ("x-amz-checksum-sha512", base64.b64encode(b"\0" * 64).decode())]
             + list(form.items()), data)
    assert (r.status, code_of(r)) == (400, "BadDigest"), r.data
    form = sign_policy({"expiration": expires_in(), "conditions": [
        ["eq", "$key", "ck3"], ["starts-with", "$x-amz-checksum-sha384", ""]]})
    r = post(url, [("key", "ck3"), ("x-amz-checksum-sha384", base64.b64encode(b"\0" * 48).decode())]
             + list(form.items()), data)
    assert (r.status, code_of(r)) == (400, "InvalidRequest"), r.data
    for k in ("ck2", "ck3"):
        with pytest.raises(ClientError):
            s3.head_object(Bucket=bucket, Key=k)
    sha512 = base64.b64encode(hashlib.sha512(data).digest()).decode()
    form = sign_policy({"expiration": expires_in(), "conditions": [
        ["eq", "$key", "ck4"], {"x-amz-checksum-sha512": sha512}]})
    r = post(url, [("key", "ck4"), ("x-amz-checksum-sha512", sha512)] + list(form.items()), data)
    assert r.status == 204, r.data
    h = s3.head_object(Bucket=bucket, Key="ck4", ChecksumMode="ENABLED")["ResponseMetadata"]["HTTPHeaders"]
    assert h["x-amz-checksum-sha512"] == sha512
    # A form without a checksum: the object gets the default CRC64NVME.
    form = sign_policy({"expiration": expires_in(), "conditions": [["eq", "$key", "ck5"]]})
    r = post(url, [("key", "ck5")] + list(form.items()), data)
    assert r.status == 204, r.data
    assert s3.head_object(Bucket=bucket, Key="ck5", ChecksumMode="ENABLED")["ChecksumType"] == "FULL_OBJECT"
    assert s3.head_object(Bucket=bucket, Key="ck5", ChecksumMode="ENABLED").get("ChecksumCRC64NVME")


ALICE = ("POSTALICE00000000001", "alice-secret/post")


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    from conftest import Server, make_client
    base = tmp_path_factory.mktemp("postauthz")
    cfg = base / "users.toml"
    cfg.write_text(f'[[users]]\naccess_key = "{ALICE[0]}"\nsecret_key = "{ALICE[1]}"\nid = "alice-id"\n')
    srv = Server(base / "root", extra=["--config", str(cfg), "--durability", "none"])
    try:
        yield srv, make_client(srv.endpoint, *ALICE)
    finally:
        srv.stop()


def test_anonymous_post_is_decided_by_the_bucket_policy(gw):
    srv, alice = gw
    alice.create_bucket(Bucket="post-drop")
    url = f"{srv.endpoint}/post-drop"
    r = post(url, [("key", "anon/a")], b"anonymous")
    assert (r.status, code_of(r)) == (403, "AccessDenied"), r.data
    policy = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::post-drop/anon/*"}]}
    alice.put_bucket_policy(Bucket="post-drop", Policy=json.dumps(policy))
    r = post(url, [("key", "anon/a")], b"anonymous")
    assert r.status == 204, r.data
    assert alice.get_object(Bucket="post-drop", Key="anon/a")["Body"].read() == b"anonymous"
    r = post(url, [("key", "elsewhere")], b"anonymous")
    assert (r.status, code_of(r)) == (403, "AccessDenied"), r.data
    # A form signed by the owner goes anywhere in the bucket; one signed with a wrong secret nowhere.
    form = sign_policy({"expiration": expires_in(), "conditions": [["starts-with", "$key", ""]]}, *reversed(ALICE))
    r = post(url, [("key", "elsewhere")] + list(form.items()), b"signed")
    assert r.status == 204, r.data
    form = sign_policy({"expiration": expires_in(), "conditions": [["starts-with", "$key", ""]]}, "wrong", ALICE[0])
    r = post(url, [("key", "elsewhere2")] + list(form.items()), b"signed")
    assert (r.status, code_of(r)) == (403, "SignatureDoesNotMatch"), r.data


def test_post_to_a_versioned_bucket_names_the_new_version(s3, bucket):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    try:
        p = s3.generate_presigned_post(bucket, "v", ExpiresIn=600)
        first = post(p["url"], p["fields"], b"one")
        second = post(p["url"], p["fields"], b"two")
        assert first.status == second.status == 204, second.data
        v1, v2 = first.headers.get("x-amz-version-id"), second.headers.get("x-amz-version-id")
        assert v1 and v2 and v1 != v2, (v1, v2)
        assert s3.get_object(Bucket=bucket, Key="v", VersionId=v1)["Body"].read() == b"one"
        assert s3.head_object(Bucket=bucket, Key="v")["VersionId"] == v2
    finally:
        for v in s3.list_object_versions(Bucket=bucket).get("Versions", []):
            s3.delete_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
