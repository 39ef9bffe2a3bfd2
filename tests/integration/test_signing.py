"""Request signing as strict as AWS (issue 35) and Signature Version 2 (issue 37).

SigV4: an `x-amz-*` header that the signature does not cover (added to a captured signed
request or to a presigned URL) is refused with 403 AccessDenied / HeadersNotSigned before
anything acts on it; a credential scope naming another region than the gateway's `--region`
is refused with AWS's AuthorizationHeaderMalformed / AuthorizationQueryParametersError.
SigV2: header auth, presigned URLs and POST policies from real clients (awscli v1 `aws s3
presign`, boto3 `signature_version='s3'`, s3cmd `signature_v2 = True`), and `--no-sigv2`."""
from __future__ import annotations

import html
import http.client
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS_KEY, REPO, SECRET_KEY, Server, err_code, err_status, make_client, raw_request

VENV_BIN = REPO / ".venv" / "bin"
if not (VENV_BIN / "aws").exists():
    VENV_BIN = Path("/work/main/.venv/bin")
CREDS = ["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY]


def elem(body: bytes, name: str) -> str | None:
    m = re.search(rf"<{name}>([^<]*)</{name}>".encode(), body)
    return html.unescape(m.group(1).decode()) if m else None


def signed(method, server, path, headers=None, body=b"", region="us-east-1"):
    """Headers of a request signed with botocore's SigV4 signer for `region`."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    req = AWSRequest(method=method, url=f"{server.endpoint}{path}", data=body, headers=dict(headers or {}))
    S3SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", region).add_auth(req)
    return dict(req.headers.items())


def send(server, method, path, headers, body=b""):
    """Send exactly these headers (nothing re-signed); (status, body)."""
    host, port = server.host_port
    c = http.client.HTTPConnection(host, port, timeout=30)
    try:
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def presigned_path(s3, op, params, expires=300):
    u = urlsplit(s3.generate_presigned_url(op, Params=params, ExpiresIn=expires))
    return f"{u.path}?{u.query}"


def assert_not_signed(st, body, names):
    assert st == 403, (st, body)
    assert elem(body, "Code") == "AccessDenied", body
    assert elem(body, "Message") == "There were headers present in the request which were not signed", body
    assert elem(body, "HeadersNotSigned") == names, body


# --- SigV4: unsigned x-amz-* headers -------------------------------------------------------------


def test_unsigned_copy_source_on_signed_request_is_refused(server, s3, bucket):
    """A captured signed PUT of an empty body, with `x-amz-copy-source` added after signing, would
    copy another object into the key (CopyObject): AWS refuses it, and so does s3hpc."""
    s3.put_object(Bucket=bucket, Key="secret", Body=b"private bytes")
    h = signed("PUT", server, f"/{bucket}/dst")
    h["x-amz-copy-source"] = f"/{bucket}/secret"
    st, body = send(server, "PUT", f"/{bucket}/dst", h)
    assert_not_signed(st, body, "x-amz-copy-source")
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="dst")
    assert err_status(e.value) == 404
    # The same request with the header signed is a copy.
    h = signed("PUT", server, f"/{bucket}/dst", headers={"x-amz-copy-source": f"/{bucket}/secret"})
    st, body = send(server, "PUT", f"/{bucket}/dst", h)
    assert st == 200, body
    assert s3.get_object(Bucket=bucket, Key="dst")["Body"].read() == b"private bytes"


def test_unsigned_tagging_and_acl_listed_in_request_order(server, s3, bucket):
    h = signed("PUT", server, f"/{bucket}/t", body=b"v")
    h["x-amz-tagging"] = "evil=1"
    h["x-amz-acl"] = "public-read"
    st, body = send(server, "PUT", f"/{bucket}/t", h, body=b"v")
    assert_not_signed(st, body, "x-amz-tagging, x-amz-acl")
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="t")
    # Signed, the tag is applied.
    h = signed("PUT", server, f"/{bucket}/t", headers={"x-amz-tagging": "ok=1"}, body=b"v")
    st, body = send(server, "PUT", f"/{bucket}/t", h, body=b"v")
    assert st == 200, body
    assert s3.get_object_tagging(Bucket=bucket, Key="t")["TagSet"] == [{"Key": "ok", "Value": "1"}]


def test_unsigned_date_and_content_sha256_headers(server, bucket):
    """Header auth: x-amz-date and x-amz-content-sha256 are x-amz-* headers too, and must be signed
    when sent."""
    h = signed("GET", server, f"/{bucket}")
    auth = h["Authorization"]
    h["Authorization"] = re.sub(r"SignedHeaders=[^,]*", "SignedHeaders=host;x-amz-date", auth)
    st, body = send(server, "GET", f"/{bucket}", h)
    assert_not_signed(st, body, "x-amz-content-sha256")


def test_unsigned_headers_on_presigned_url_are_refused(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="secret", Body=b"private bytes")
    path = presigned_path(s3, "put_object", {"Bucket": bucket, "Key": "up"})
    # x-amz-copy-source added to a presigned PUT URL: would copy the secret object.
    st, body = send(server, "PUT", path, {"x-amz-copy-source": f"/{bucket}/secret"})
    assert_not_signed(st, body, "x-amz-copy-source")
    st, body = send(server, "PUT", path, {"x-amz-tagging": "evil=1"}, body=b"x")
    assert_not_signed(st, body, "x-amz-tagging")
    st, body = send(server, "PUT", path, {"x-amz-meta-a": "1", "x-amz-security-token": "t"}, body=b"x")
    assert_not_signed(st, body, "x-amz-meta-a, x-amz-security-token")
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="up")
    # x-amz-content-sha256 may come unsigned on a presigned URL (AWS accepts UNSIGNED-PAYLOAD
    # there; another value is the payload line of the canonical request, so it fails the
    # signature instead).
    st, body = send(server, "PUT", path, {"x-amz-content-sha256": "UNSIGNED-PAYLOAD"}, body=b"ok")
    assert st == 200, body
    assert s3.get_object(Bucket=bucket, Key="up")["Body"].read() == b"ok"
    st, body = send(server, "PUT", path, {"x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"})
    assert st == 403 and elem(body, "Code") == "SignatureDoesNotMatch", body
    # A presigned GET with a header the URL signed is fine.
    path = presigned_path(s3, "get_object", {"Bucket": bucket, "Key": "up"})
    st, body = send(server, "GET", path, {})
    assert (st, body) == (200, b"ok")


# --- SigV4: the region of the credential scope ---------------------------------------------------


def test_wrong_region_header_auth(server, bucket):
    h = signed("GET", server, f"/{bucket}", region="eu-west-1")
    st, body = send(server, "GET", f"/{bucket}", h)
    assert st == 400, body
    assert elem(body, "Code") == "AuthorizationHeaderMalformed", body
    assert elem(body, "Message") == (
        "The authorization header is malformed; the region 'eu-west-1' is wrong; expecting 'us-east-1'")
    assert elem(body, "Region") == "us-east-1"
    # boto3 configured for another region reads the Region element and signs again for it (its
    # S3 region redirector, as against AWS), so it keeps working.
    other = make_client(server.endpoint, region_name="eu-west-1")
    assert other.list_objects_v2(Bucket=bucket)["KeyCount"] == 0


def test_wrong_region_presigned(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="p", Body=b"x")
    other = make_client(server.endpoint, region_name="ap-south-1")
    st, body = send(server, "GET", presigned_path(other, "get_object", {"Bucket": bucket, "Key": "p"}), {})
    assert st == 400, body
    assert elem(body, "Code") == "AuthorizationQueryParametersError", body
    assert elem(body, "Message") == (
        "Error parsing the X-Amz-Credential parameter; the region 'ap-south-1' is wrong; expecting 'us-east-1'")
    assert elem(body, "Region") == "us-east-1"


def test_wrong_region_post_form(server, s3, bucket):
    """A SigV4 POST form scoped to another region: 400 InvalidArgument (AWS's code for forms)."""
    import urllib3

    p = make_client(server.endpoint, region_name="eu-west-3").generate_presigned_post(bucket, "f", ExpiresIn=600)
    body, ctype = urllib3.encode_multipart_formdata(list(p["fields"].items()) + [("file", ("f", b"z", "text/plain"))])
    r = urllib3.PoolManager().request("POST", p["url"], body=body, headers={"Content-Type": ctype})
    assert r.status == 400 and elem(r.data, "Code") == "InvalidArgument", r.data
    assert elem(r.data, "Message") == (
        "Error parsing the X-Amz-Credential parameter; the region 'eu-west-3' is wrong; expecting 'us-east-1'")
    assert elem(r.data, "Region") == "us-east-1"
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="f")


def test_gateway_region_is_the_one_expected(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    srv = Server(root, [*CREDS, "--region", "eu-central-1"])
    try:
        ok = make_client(srv.endpoint, region_name="eu-central-1")
        ok.create_bucket(Bucket="reg", CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
        ok.put_object(Bucket="reg", Key="k", Body=b"v")
        url = ok.generate_presigned_url("get_object", Params={"Bucket": "reg", "Key": "k"}, ExpiresIn=60)
        assert urllib.request.urlopen(url, timeout=10).read() == b"v"
        h = signed("GET", srv, "/reg")  # us-east-1
        st, body = send(srv, "GET", "/reg", h)
        assert (st, elem(body, "Code"), elem(body, "Region")) == (400, "AuthorizationHeaderMalformed", "eu-central-1")
        assert elem(body, "Message").endswith("the region 'us-east-1' is wrong; expecting 'eu-central-1'")
        ok.delete_object(Bucket="reg", Key="k")
        ok.delete_bucket(Bucket="reg")
    finally:
        srv.stop()


# --- SigV2 -----------------------------------------------------------------------------------------


def v2_client(endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY):
    return make_client(endpoint, access_key, secret_key, signature_version="s3")


@pytest.fixture(scope="module")
def nov2(tmp_path_factory):
    root = tmp_path_factory.mktemp("nov2")
    srv = Server(root, [*CREDS, "--no-sigv2"])
    yield srv
    srv.stop()


def test_boto3_sigv2_operations(server, s3, bucket):
    c = v2_client(server.endpoint)
    c.put_object(Bucket=bucket, Key="dir/a b+c.txt", Body=b"hello v2", ContentType="text/plain",
                 Metadata={"k": "v"}, Tagging="t=1")
    o = c.get_object(Bucket=bucket, Key="dir/a b+c.txt")
    assert o["Body"].read() == b"hello v2" and o["Metadata"] == {"k": "v"}
    assert c.head_object(Bucket=bucket, Key="dir/a b+c.txt")["ContentType"] == "text/plain"
    assert [x["Key"] for x in c.list_objects_v2(Bucket=bucket)["Contents"]] == ["dir/a b+c.txt"]
    assert c.get_object_tagging(Bucket=bucket, Key="dir/a b+c.txt")["TagSet"] == [{"Key": "t", "Value": "1"}]
    # Sub-resources in the canonical resource: uploads, uploadId, partNumber.
    up = c.create_multipart_upload(Bucket=bucket, Key="mp")
    p1 = c.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=b"a" * (5 << 20))
    p2 = c.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=2, Body=b"b")
    assert len(c.list_parts(Bucket=bucket, Key="mp", UploadId=up["UploadId"])["Parts"]) == 2
    c.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up["UploadId"], MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": p1["ETag"]}, {"PartNumber": 2, "ETag": p2["ETag"]}]})
    assert s3.head_object(Bucket=bucket, Key="mp")["ContentLength"] == (5 << 20) + 1
    c.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "mp"})
    c.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "copy"}, {"Key": "mp"}]})
    # response-* overrides are sub-resources too.
    r = c.get_object(Bucket=bucket, Key="dir/a b+c.txt", ResponseContentType="application/x-test")
    assert r["ContentType"] == "application/x-test"
    c.delete_object(Bucket=bucket, Key="dir/a b+c.txt")
    # A wrong secret is SignatureDoesNotMatch with the string to sign.
    bad = v2_client(server.endpoint, ACCESS_KEY, "wrong")
    with pytest.raises(ClientError) as e:
        bad.list_objects(Bucket=bucket)
    assert (err_status(e.value), err_code(e.value)) == (403, "SignatureDoesNotMatch")
    assert e.value.response["Error"].get("StringToSign", "").startswith("GET\n")


def test_boto3_sigv2_presigned_urls(server, s3, bucket):
    c = v2_client(server.endpoint)
    put = c.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "pre v2"}, ExpiresIn=300)
    assert "AWSAccessKeyId=" in put and "Signature=" in put and "X-Amz-" not in put
    # (Sent with http.client: urllib would add a Content-Type, which SigV2 signs.)
    u = urlsplit(put)
    st, body = send(server, "PUT", f"{u.path}?{u.query}", {}, body=b"presigned v2")
    assert st == 200, body
    get = c.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre v2"}, ExpiresIn=300)
    assert urllib.request.urlopen(get, timeout=10).read() == b"presigned v2"
    # An added x-amz-* header is part of a SigV2 string to sign: it breaks the signature.
    st, body = send(server, "PUT", f"{u.path}?{u.query}", {"x-amz-tagging": "evil=1"}, body=b"x")
    assert st == 403 and elem(body, "Code") == "SignatureDoesNotMatch", body
    # Expired.
    old = c.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre v2"}, ExpiresIn=1)
    time.sleep(2.1)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(old, timeout=10)
    body = e.value.read()
    assert e.value.code == 403 and elem(body, "Code") == "AccessDenied"
    assert elem(body, "Message") == "Request has expired" and elem(body, "Expires") and elem(body, "ServerTime")
    # Missing parameters.
    u = urlsplit(get)
    q = "&".join(p for p in u.query.split("&") if not p.startswith("Signature="))
    st, body = send(server, "GET", f"{u.path}?{q}", {})
    assert st == 403 and elem(body, "Message") == (
        "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters")


def test_awscli_v1_presign(server, s3, bucket):
    out = subprocess.run([str(VENV_BIN / "aws"), "--version"], capture_output=True, text=True)
    assert "aws-cli/1." in out.stdout + out.stderr
    s3.put_object(Bucket=bucket, Key="cli/obj", Body=b"from aws s3 presign")
    env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_CONFIG_FILE": "/dev/null",
           "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}
    env.pop("AWS_PROFILE", None)
    r = subprocess.run([str(VENV_BIN / "aws"), "s3", "presign", f"s3://{bucket}/cli/obj", "--endpoint-url",
                        server.endpoint], capture_output=True, text=True, env=env, timeout=60, check=True)
    url = r.stdout.strip()
    assert "AWSAccessKeyId=" in url, url  # awscli v1 presigns with SigV2 against a custom endpoint
    assert urllib.request.urlopen(url, timeout=10).read() == b"from aws s3 presign"


def test_s3cmd_signature_v2(server, s3, bucket, tmp_path):
    host = server.endpoint.removeprefix("http://")
    cfg = tmp_path / "s3cfg"
    cfg.write_text(f"[default]\naccess_key = {ACCESS_KEY}\nsecret_key = {SECRET_KEY}\nhost_base = {host}\n"
                   f"host_bucket = {host}\nuse_https = False\nsignature_v2 = True\nbucket_location = us-east-1\n"
                   "multipart_chunk_size_mb = 5\n")
    s3cmd = [str(VENV_BIN / "s3cmd"), "-c", str(cfg), "--debug"]
    f = tmp_path / "one.bin"
    data = os.urandom(200_000)
    f.write_bytes(data)

    def run(*args):
        r = subprocess.run(s3cmd + list(args), capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-3000:]
        return r

    r = run("put", str(f), f"s3://{bucket}/s3cmd/one.bin")
    assert "Using signature v2" in r.stderr
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(11 << 20))
    run("put", str(big), f"s3://{bucket}/s3cmd/big.bin")  # multipart
    assert "one.bin" in run("ls", f"s3://{bucket}/s3cmd/").stdout
    run("get", str(f"s3://{bucket}/s3cmd/one.bin"), str(tmp_path / "back"))
    assert (tmp_path / "back").read_bytes() == data
    run("del", f"s3://{bucket}/s3cmd/one.bin", f"s3://{bucket}/s3cmd/big.bin")
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket)


def test_sigv2_post_policy(server, s3, bucket):
    import urllib3

    c = v2_client(server.endpoint)
    p = c.generate_presigned_post(bucket, "form/${filename}", Conditions=[["starts-with", "$key", "form/"]],
                                  ExpiresIn=600)
    assert "AWSAccessKeyId" in p["fields"] and "signature" in p["fields"]
    fields = list(p["fields"].items()) + [("file", ("x.txt", b"posted v2", "text/plain"))]
    body, ctype = urllib3.encode_multipart_formdata(fields)
    r = urllib3.PoolManager().request("POST", p["url"], body=body, headers={"Content-Type": ctype})
    assert r.status == 204, r.data
    assert s3.get_object(Bucket=bucket, Key="form/x.txt")["Body"].read() == b"posted v2"
    # A tampered signature.
    f2 = dict(p["fields"])
    f2["signature"] = "AAAA" + f2["signature"][4:]
    body, ctype = urllib3.encode_multipart_formdata(list(f2.items()) + [("file", ("y", b"z", "text/plain"))])
    r = urllib3.PoolManager().request("POST", p["url"], body=body, headers={"Content-Type": ctype})
    assert r.status == 403 and elem(r.data, "Code") == "SignatureDoesNotMatch", r.data


def test_sigv2_authorizes_as_the_same_account(tmp_path):
    """A SigV2 request acts as its key's account, through the same authorization as SigV4: the
    other account is refused alike, the owner is let in alike."""
    users = tmp_path / "users.toml"
    users.write_text('[[users]]\naccess_key = "ownerKey0001"\nsecret_key = "ownerSecret0001"\n'
                     '[[users]]\naccess_key = "otherKey0001"\nsecret_key = "otherSecret0001"\n')
    root = tmp_path / "root"
    root.mkdir()
    srv = Server(root, ["--config", str(users)])
    try:
        owner4 = make_client(srv.endpoint, "ownerKey0001", "ownerSecret0001")
        owner2 = v2_client(srv.endpoint, access_key="ownerKey0001", secret_key="ownerSecret0001")
        other4 = make_client(srv.endpoint, "otherKey0001", "otherSecret0001")
        other2 = v2_client(srv.endpoint, access_key="otherKey0001", secret_key="otherSecret0001")
        owner4.create_bucket(Bucket="owned")
        owner2.put_object(Bucket="owned", Key="k", Body=b"mine")
        assert owner4.get_object(Bucket="owned", Key="k")["Body"].read() == b"mine"
        assert [b["Name"] for b in owner2.list_buckets()["Buckets"]] == ["owned"]
        assert other2.list_buckets()["Buckets"] == []
        for c in (other4, other2):
            with pytest.raises(ClientError) as e:
                c.get_object(Bucket="owned", Key="k")
            assert (err_status(e.value), err_code(e.value)) == (403, "AccessDenied")
            with pytest.raises(ClientError) as e:
                c.put_object(Bucket="owned", Key="k2", Body=b"x")
            assert (err_status(e.value), err_code(e.value)) == (403, "AccessDenied")
        owner2.delete_object(Bucket="owned", Key="k")
        owner2.delete_bucket(Bucket="owned")
    finally:
        srv.stop()


def test_no_sigv2_refuses_every_form(nov2):
    msg = "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256."
    make_client(nov2.endpoint).create_bucket(Bucket="v4only")
    c = v2_client(nov2.endpoint)
    with pytest.raises(ClientError) as e:
        c.list_objects(Bucket="v4only")
    assert (err_status(e.value), err_code(e.value)) == (400, "InvalidRequest")
    assert e.value.response["Error"]["Message"] == msg
    url = c.generate_presigned_url("get_object", Params={"Bucket": "v4only", "Key": "k"}, ExpiresIn=60)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url, timeout=10)
    body = e.value.read()
    assert e.value.code == 400 and elem(body, "Code") == "InvalidRequest" and elem(body, "Message") == msg
    import urllib3

    p = c.generate_presigned_post("v4only", "f", ExpiresIn=600)
    body, ctype = urllib3.encode_multipart_formdata(list(p["fields"].items()) + [("file", ("f", b"z", "text/plain"))])
    r = urllib3.PoolManager().request("POST", p["url"], body=body, headers={"Content-Type": ctype})
    assert r.status == 400 and elem(r.data, "Message") == msg, r.data
    # SigV4 still works.
    make_client(nov2.endpoint).delete_bucket(Bucket="v4only")


def test_sigv2_wrong_key_and_clock_skew(server, bucket):
    """Header SigV2: an unknown key is InvalidAccessKeyId; a Date 20 minutes off is
    RequestTimeTooSkewed (the same 15 minutes as SigV4)."""
    from email.utils import formatdate

    st, _, body = raw_request(server, "GET", f"/{bucket}", sign=False,
                              headers={"Authorization": "AWS NOSUCHKEY:abc=", "Date": formatdate(usegmt=True)})
    assert (st, elem(body, "Code")) == (403, "InvalidAccessKeyId")
    st, _, body = raw_request(server, "GET", f"/{bucket}", sign=False,
                              headers={"Authorization": f"AWS {ACCESS_KEY}:abc=",
                                       "Date": formatdate(time.time() - 1200, usegmt=True)})
    assert (st, elem(body, "Code")) == (403, "RequestTimeTooSkewed")
    st, _, body = raw_request(server, "GET", f"/{bucket}", sign=False, headers={"Authorization": "AWS nocolon"})
    assert (st, elem(body, "Code")) == (400, "InvalidArgument")
    _ = uuid
