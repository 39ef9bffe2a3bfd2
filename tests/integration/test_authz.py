"""S3 authorization through the real gateway and real clients: bucket owners, ListBuckets per
caller, bucket policies (with anonymous access), ownership controls, Block Public Access and
x-amz-expected-bucket-owner. Accounts come from a users file; `--identity gateway`, so every
decision here is S3's (test_identity.py covers the kernel's part)."""
from __future__ import annotations

import json
import subprocess

import pytest
from botocore import UNSIGNED
from botocore.exceptions import ClientError

from conftest import REGION, Server, err_code, make_client, s3hpc_bin

ALICE = ("AUTHZALICE0000000001", "alice-secret/1")
BOB = ("AUTHZBOB000000000001", "bob-secret/1")
ADMIN = ("AUTHZADMIN0000000001", "admin-secret/1")


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    base = tmp_path_factory.mktemp("authz")
    cfg = base / "users.toml"
    cfg.write_text(
        f'[[users]]\naccess_key = "{ALICE[0]}"\nsecret_key = "{ALICE[1]}"\nid = "alice-id"\nname = "alice"\n\n'
        f'[[users]]\naccess_key = "{BOB[0]}"\nsecret_key = "{BOB[1]}"\nid = "bob-id"\n\n'
        f'[[users]]\naccess_key = "{ADMIN[0]}"\nsecret_key = "{ADMIN[1]}"\nadmin = true\n')
    srv = Server(base / "root", extra=["--config", str(cfg), "--durability", "none"])
    try:
        yield srv, {n: make_client(srv.endpoint, *k) for n, k in
                    [("alice", ALICE), ("bob", BOB), ("admin", ADMIN)]}
    finally:
        srv.stop()


def anonymous(endpoint):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=endpoint, region_name=REGION,
                        config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


def denied(call):
    with pytest.raises(ClientError) as e:
        call()
    return err_code(e.value)


def test_owners_and_list_buckets(gw):
    srv, c = gw
    c["alice"].create_bucket(Bucket="az-alice")
    c["bob"].create_bucket(Bucket="az-bob")
    c["alice"].put_object(Bucket="az-alice", Key="k", Body=b"alice's")
    names = lambda who: [b["Name"] for b in c[who].list_buckets()["Buckets"]]
    assert "az-alice" in names("alice") and "az-bob" not in names("alice")
    assert "az-bob" in names("bob") and "az-alice" not in names("bob")
    assert {"az-alice", "az-bob"} <= set(names("admin"))
    assert c["alice"].list_buckets()["Owner"]["ID"] == "alice-id"
    for what, call in [
        ("get", lambda: c["bob"].get_object(Bucket="az-alice", Key="k")),
        ("put", lambda: c["bob"].put_object(Bucket="az-alice", Key="x", Body=b"x")),
        ("delete", lambda: c["bob"].delete_object(Bucket="az-alice", Key="k")),
        ("list", lambda: c["bob"].list_objects_v2(Bucket="az-alice")),
        ("copy", lambda: c["bob"].copy_object(Bucket="az-bob", Key="stolen",
                                              CopySource={"Bucket": "az-alice", "Key": "k"})),
        ("policy", lambda: c["bob"].put_bucket_policy(Bucket="az-alice", Policy="{}")),
        ("delete bucket", lambda: c["bob"].delete_bucket(Bucket="az-alice")),
    ]:
        assert denied(call) == "AccessDenied", what
    # DeleteObjects answers 200 with a per-key AccessDenied, and deletes nothing.
    r = c["bob"].delete_objects(Bucket="az-alice", Delete={"Objects": [{"Key": "k"}]})
    assert [e["Code"] for e in r.get("Errors", [])] == ["AccessDenied"]
    assert c["alice"].get_object(Bucket="az-alice", Key="k")["Body"].read() == b"alice's"
    # The name is taken: someone else's bucket is BucketAlreadyExists; one's own answers 200 in
    # us-east-1 (as S3 there) and changes nothing.
    assert denied(lambda: c["bob"].create_bucket(Bucket="az-alice")) == "BucketAlreadyExists"
    c["alice"].create_bucket(Bucket="az-alice")
    assert c["alice"].get_object(Bucket="az-alice", Key="k")["Body"].read() == b"alice's"
    # Admins act as every owner.
    assert c["admin"].get_object(Bucket="az-alice", Key="k")["Body"].read() == b"alice's"
    # Unsigned requests get nothing by default.
    anon = anonymous(srv.endpoint)
    assert denied(lambda: anon.get_object(Bucket="az-alice", Key="k")) == "AccessDenied"
    assert denied(lambda: anon.list_buckets()) == "AccessDenied"


def test_public_read_policy(gw):
    srv, c = gw
    a, b, anon = c["alice"], c["bob"], anonymous(srv.endpoint)
    a.create_bucket(Bucket="az-pub")
    a.put_object(Bucket="az-pub", Key="data/x", Body=b"shared")
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::az-pub/data/*"}]}
    with pytest.raises(ClientError) as e:
        a.get_bucket_policy(Bucket="az-pub")
    assert err_code(e.value) == "NoSuchBucketPolicy"
    a.put_bucket_policy(Bucket="az-pub", Policy=json.dumps(policy))
    assert json.loads(a.get_bucket_policy(Bucket="az-pub")["Policy"]) == policy
    assert a.get_bucket_policy_status(Bucket="az-pub")["PolicyStatus"]["IsPublic"] is True
    for who in (b, anon):
        assert who.get_object(Bucket="az-pub", Key="data/x")["Body"].read() == b"shared"
        assert denied(lambda: who.put_object(Bucket="az-pub", Key="data/y", Body=b"y")) == "AccessDenied"
        assert denied(lambda: who.delete_object(Bucket="az-pub", Key="data/x")) == "AccessDenied"
        assert denied(lambda: who.list_objects_v2(Bucket="az-pub")) == "AccessDenied"
    # A key the policy does not cover, and a missing key (no s3:ListBucket: 403, not 404).
    a.put_object(Bucket="az-pub", Key="private", Body=b"p")
    assert denied(lambda: b.get_object(Bucket="az-pub", Key="private")) == "AccessDenied"
    assert denied(lambda: b.get_object(Bucket="az-pub", Key="data/missing")) == "AccessDenied"
    assert denied(lambda: a.get_object(Bucket="az-pub", Key="data/missing")) == "NoSuchKey"
    # Malformed policies are refused with AWS's code.
    assert denied(lambda: a.put_bucket_policy(Bucket="az-pub", Policy="not json")) == "MalformedPolicy"
    # Block Public Access: a public policy can no longer be put.
    a.delete_bucket_policy(Bucket="az-pub")
    assert denied(lambda: anon.get_object(Bucket="az-pub", Key="data/x")) == "AccessDenied"
    a.put_public_access_block(Bucket="az-pub", PublicAccessBlockConfiguration={
        "BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True, "RestrictPublicBuckets": True})
    got = a.get_public_access_block(Bucket="az-pub")["PublicAccessBlockConfiguration"]
    assert got["BlockPublicPolicy"] is True
    assert denied(lambda: a.put_bucket_policy(Bucket="az-pub", Policy=json.dumps(policy))) == "AccessDenied"
    a.delete_public_access_block(Bucket="az-pub")
    assert denied(lambda: a.get_public_access_block(Bucket="az-pub")) == "NoSuchPublicAccessBlockConfiguration"


def test_policy_granting_one_account(gw):
    _, c = gw
    a, b = c["alice"], c["bob"]
    a.create_bucket(Bucket="az-share")
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::bob-id:root"},
         "Action": ["s3:ListBucket", "s3:PutObject"], "Resource": ["arn:aws:s3:::az-share", "arn:aws:s3:::az-share/*"]}]}
    a.put_bucket_policy(Bucket="az-share", Policy=json.dumps(policy))
    b.put_object(Bucket="az-share", Key="from-bob", Body=b"b")
    assert [o["Key"] for o in b.list_objects_v2(Bucket="az-share")["Contents"]] == ["from-bob"]
    # A principal that names no account is refused (AWS: Invalid principal in policy).
    bad = json.loads(json.dumps(policy))
    bad["Statement"][0]["Principal"] = {"AWS": "arn:aws:iam::nobody-here:root"}
    assert denied(lambda: a.put_bucket_policy(Bucket="az-share", Policy=json.dumps(bad))) == "MalformedPolicy"


def test_policy_condition_on_existing_object_tags(gw):
    _, c = gw
    a, b = c["alice"], c["bob"]
    a.create_bucket(Bucket="az-tags")
    a.put_object(Bucket="az-tags", Key="open", Body=b"o", Tagging="Share=yes")
    a.put_object(Bucket="az-tags", Key="closed", Body=b"c", Tagging="Share=no")
    a.put_object(Bucket="az-tags", Key="untagged", Body=b"u")
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::bob-id:root"}, "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::az-tags/*",
         "Condition": {"StringEquals": {"s3:ExistingObjectTag/Share": "yes"}}}]}
    a.put_bucket_policy(Bucket="az-tags", Policy=json.dumps(policy))
    assert b.get_object(Bucket="az-tags", Key="open")["Body"].read() == b"o"
    assert denied(lambda: b.get_object(Bucket="az-tags", Key="closed")) == "AccessDenied"
    assert denied(lambda: b.get_object(Bucket="az-tags", Key="untagged")) == "AccessDenied"
    # The tag key is case-sensitive, as on AWS.
    a.put_object_tagging(Bucket="az-tags", Key="untagged", Tagging={"TagSet": [{"Key": "share", "Value": "yes"}]})
    assert denied(lambda: b.get_object(Bucket="az-tags", Key="untagged")) == "AccessDenied"
    # The object's tags at request time decide: retagging closes it at once.
    a.put_object_tagging(Bucket="az-tags", Key="open", Tagging={"TagSet": [{"Key": "Share", "Value": "no"}]})
    assert denied(lambda: b.get_object(Bucket="az-tags", Key="open")) == "AccessDenied"
    a.put_object_tagging(Bucket="az-tags", Key="closed", Tagging={"TagSet": [{"Key": "Share", "Value": "yes"}]})
    assert b.get_object(Bucket="az-tags", Key="closed")["Body"].read() == b"c"
    # The grant is for reads only: bob still may not write there.
    assert denied(lambda: b.put_object(Bucket="az-tags", Key="closed", Body=b"x")) == "AccessDenied"


def test_object_acls_in_an_object_writer_bucket(gw):
    srv, c = gw
    a, b, admin = c["alice"], c["bob"], c["admin"]
    anon = anonymous(srv.endpoint)
    bkt = "az-objacl"
    a.create_bucket(Bucket=bkt)
    a.put_bucket_ownership_controls(Bucket=bkt, OwnershipControls={"Rules": [{"ObjectOwnership": "ObjectWriter"}]})
    a.put_bucket_policy(Bucket=bkt, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::bob-id:root"}, "Action": "s3:PutObject",
         "Resource": f"arn:aws:s3:::{bkt}/*"}]}))

    # An ACL given at upload is kept with the object, and an overwrite without one resets it.
    a.put_object(Bucket=bkt, Key="pub", Body=b"p", ACL="public-read")
    assert anon.get_object(Bucket=bkt, Key="pub")["Body"].read() == b"p"
    grants = a.get_object_acl(Bucket=bkt, Key="pub")["Grants"]
    assert {"Grantee": {"Type": "Group", "URI": "http://acs.amazonaws.com/groups/global/AllUsers"},
            "Permission": "READ"} in grants, grants
    a.put_object(Bucket=bkt, Key="pub", Body=b"p2")
    assert denied(lambda: anon.get_object(Bucket=bkt, Key="pub")) == "AccessDenied"
    assert len(a.get_object_acl(Bucket=bkt, Key="pub")["Grants"]) == 1

    # An object bob writes is bob's: alice, the bucket owner, reads it only once bob grants it.
    b.put_object(Bucket=bkt, Key="bobs", Body=b"b")
    assert b.get_object_acl(Bucket=bkt, Key="bobs")["Owner"]["ID"] == "bob-id"
    assert denied(lambda: a.get_object(Bucket=bkt, Key="bobs")) == "AccessDenied"
    assert denied(lambda: a.get_object_acl(Bucket=bkt, Key="bobs")) == "AccessDenied"
    assert admin.get_object(Bucket=bkt, Key="bobs")["Body"].read() == b"b"
    b.put_object_acl(Bucket=bkt, Key="bobs", GrantRead='id="alice-id"', GrantFullControl='id="bob-id"')
    assert a.get_object(Bucket=bkt, Key="bobs")["Body"].read() == b"b"
    assert denied(lambda: a.put_object_acl(Bucket=bkt, Key="bobs", ACL="public-read")) == "AccessDenied"
    # bucket-owner-full-control hands alice full control of what bob writes.
    b.put_object(Bucket=bkt, Key="bobs2", Body=b"c", ACL="bucket-owner-full-control")
    assert a.get_object(Bucket=bkt, Key="bobs2")["Body"].read() == b"c"

    # PutObjectAcl on an existing object; the record lives with the file.
    a.put_object(Bucket=bkt, Key="later", Body=b"l")
    assert denied(lambda: anon.get_object(Bucket=bkt, Key="later")) == "AccessDenied"
    a.put_object_acl(Bucket=bkt, Key="later", ACL="public-read")
    assert anon.get_object(Bucket=bkt, Key="later")["Body"].read() == b"l"
    a.put_object_acl(Bucket=bkt, Key="later", ACL="private")
    assert denied(lambda: anon.get_object(Bucket=bkt, Key="later")) == "AccessDenied"

    # A multipart upload gets the ACL it was created with, at completion.
    up = a.create_multipart_upload(Bucket=bkt, Key="mp", ACL="public-read")["UploadId"]
    etag = a.upload_part(Bucket=bkt, Key="mp", UploadId=up, PartNumber=1, Body=b"m" * 10)["ETag"]
    assert not (srv.root / bkt / "mp").exists()
    a.complete_multipart_upload(Bucket=bkt, Key="mp", UploadId=up,
                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert anon.get_object(Bucket=bkt, Key="mp")["Body"].read() == b"m" * 10

    # Back to BucketOwnerEnforced: the records are ignored, alice owns everything again.
    a.put_bucket_ownership_controls(Bucket=bkt,
                                    OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    assert a.get_object(Bucket=bkt, Key="bobs")["Body"].read() == b"b"
    assert denied(lambda: anon.get_object(Bucket=bkt, Key="mp")) == "AccessDenied"


def test_ownership_controls_and_acls(gw):
    _, c = gw
    a = c["alice"]
    a.create_bucket(Bucket="az-own")
    rules = a.get_bucket_ownership_controls(Bucket="az-own")["OwnershipControls"]["Rules"]
    assert rules == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    assert denied(lambda: a.put_object(Bucket="az-own", Key="k", Body=b"x", ACL="public-read")) \
        == "AccessControlListNotSupported"
    acl = a.get_bucket_acl(Bucket="az-own")
    assert acl["Owner"]["ID"] == "alice-id" and acl["Grants"][0]["Permission"] == "FULL_CONTROL"
    a.put_bucket_ownership_controls(Bucket="az-own", OwnershipControls={"Rules": [{"ObjectOwnership": "ObjectWriter"}]})
    a.put_bucket_acl(Bucket="az-own", ACL="public-read")
    grants = a.get_bucket_acl(Bucket="az-own")["Grants"]
    assert any(g["Grantee"].get("URI", "").endswith("AllUsers") and g["Permission"] == "READ" for g in grants)
    assert [o["Key"] for o in c["bob"].list_objects_v2(Bucket="az-own").get("Contents", [])] == []
    # Back to BucketOwnerEnforced is refused while the ACL grants others.
    assert denied(lambda: a.put_bucket_ownership_controls(
        Bucket="az-own", OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})) \
        == "InvalidBucketAclWithObjectOwnership"


def test_expected_bucket_owner(gw):
    _, c = gw
    a = c["alice"]
    a.create_bucket(Bucket="az-exp")
    a.put_object(Bucket="az-exp", Key="k", Body=b"x", ExpectedBucketOwner="alice-id")
    assert denied(lambda: a.get_object(Bucket="az-exp", Key="k", ExpectedBucketOwner="bob-id")) == "AccessDenied"
    a.create_bucket(Bucket="az-exp2")
    assert denied(lambda: a.copy_object(Bucket="az-exp2", Key="c", CopySource={"Bucket": "az-exp", "Key": "k"},
                                        ExpectedSourceBucketOwner="bob-id")) == "AccessDenied"
    a.copy_object(Bucket="az-exp2", Key="c", CopySource={"Bucket": "az-exp", "Key": "k"},
                  ExpectedSourceBucketOwner="alice-id")


def test_aws_cli_sees_only_its_buckets(gw, tmp_path):
    srv, c = gw
    c["bob"].create_bucket(Bucket="az-cli-bob")
    import os
    import shutil
    aws = shutil.which("aws") or os.path.join(os.path.dirname(os.path.realpath(__import__("sys").executable)), "aws")
    env = {**os.environ, "AWS_ACCESS_KEY_ID": ALICE[0], "AWS_SECRET_ACCESS_KEY": ALICE[1],
           "AWS_DEFAULT_REGION": REGION, "AWS_CONFIG_FILE": str(tmp_path / "none")}
    out = subprocess.run([aws, "--endpoint-url", srv.endpoint, "s3", "ls"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "az-cli-bob" not in out.stdout


def test_anonymous_chunked_upload_is_refused(gw):
    """An unsigned request's aws-chunked framing is verified by nothing: refused, never stored."""
    srv, c = gw
    a = c["alice"]
    a.create_bucket(Bucket="az-anon-put")
    a.put_bucket_policy(Bucket="az-anon-put", Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": ["s3:PutObject", "s3:GetObject"],
         "Resource": "arn:aws:s3:::az-anon-put/*"}]}))
    from conftest import raw_request
    body = b"5\r\nhello\r\n0\r\n\r\n"
    st, _, out = raw_request(srv, "PUT", "/az-anon-put/chunked", body, sign=False, headers={
        "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "x-amz-decoded-content-length": "5",
        "content-encoding": "aws-chunked"})
    assert st == 400 and b"InvalidRequest" in out, out
    # A plain anonymous PUT, which the policy allows, is stored as sent.
    st, _, out = raw_request(srv, "PUT", "/az-anon-put/plain", b"hello", sign=False)
    assert st == 200, out
    assert a.get_object(Bucket="az-anon-put", Key="plain")["Body"].read() == b"hello"
    with pytest.raises(ClientError):
        a.head_object(Bucket="az-anon-put", Key="chunked")
