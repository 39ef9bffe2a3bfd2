"""Owners in listings and Object Ownership defaults, through the real gateway with accounts:
ListObjects v1/v2 (fetch-owner), ListObjectVersions, ListParts and ListMultipartUploads name the
account that owns each entry (the bucket owner where ACLs are disabled, the writer where they are
enabled), as ListBuckets and the ACL calls do; `--default-object-ownership` for new buckets; and
DeleteBucketOwnershipControls leaving no controls (GET 404), as AWS."""
from __future__ import annotations

import json
import subprocess

import pytest
from botocore.exceptions import ClientError

from conftest import Server, err_code, make_client, s3hpc_bin

ALICE = ("OWNALICE000000000001", "alice-secret/1")
BOB = ("OWNBOB00000000000001", "bob-secret/1")
ADMIN = ("OWNADMIN000000000001", "admin-secret/1")
USERS = (f'[[users]]\naccess_key = "{ALICE[0]}"\nsecret_key = "{ALICE[1]}"\nid = "alice-id"\nname = "alice"\n\n'
         f'[[users]]\naccess_key = "{BOB[0]}"\nsecret_key = "{BOB[1]}"\nid = "bob-id"\n\n'
         f'[[users]]\naccess_key = "{ADMIN[0]}"\nsecret_key = "{ADMIN[1]}"\nadmin = true\n')
ALICE_OWNER = {"ID": "alice-id", "DisplayName": "alice"}
# An account without a name shows its id as its display name (as ListBuckets does).
BOB_OWNER = {"ID": "bob-id", "DisplayName": "bob-id"}


def gateway(base, *extra):
    cfg = base / "users.toml"
    cfg.write_text(USERS)
    srv = Server(base / "root", extra=["--config", str(cfg), "--durability", "none", *extra])
    return srv, {n: make_client(srv.endpoint, *k) for n, k in [("alice", ALICE), ("bob", BOB), ("admin", ADMIN)]}


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    srv, c = gateway(tmp_path_factory.mktemp("owners"))
    try:
        yield srv, c
    finally:
        srv.stop()


def grant_bob(c, bucket):
    """Bob may list the bucket, write into it and run multipart uploads there."""
    c["alice"].put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": "bob-id"},
         "Action": ["s3:ListBucket", "s3:ListBucketVersions", "s3:ListBucketMultipartUploads"],
         "Resource": f"arn:aws:s3:::{bucket}"},
        {"Effect": "Allow", "Principal": {"AWS": "bob-id"},
         "Action": ["s3:PutObject", "s3:GetObject", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"],
         "Resource": f"arn:aws:s3:::{bucket}/*"}]}))


def owners_everywhere(c, who, bucket):
    """{key: owner} from each listing that names owners, as `who` sees them."""
    s3 = c[who]
    v1 = {o["Key"]: o["Owner"] for o in s3.list_objects(Bucket=bucket)["Contents"]}
    v2 = {o["Key"]: o["Owner"] for o in s3.list_objects_v2(Bucket=bucket, FetchOwner=True)["Contents"]}
    vers = {v["Key"]: v["Owner"] for v in s3.list_object_versions(Bucket=bucket)["Versions"]}
    assert v1 == v2 == vers, (v1, v2, vers)
    # Without fetch-owner, ListObjectsV2 names none (as AWS).
    assert all("Owner" not in o for o in s3.list_objects_v2(Bucket=bucket)["Contents"])
    return v1


def upload_owners(c, who, bucket, key, upload_id):
    s3 = c[who]
    ups = [u for u in s3.list_multipart_uploads(Bucket=bucket)["Uploads"] if u["UploadId"] == upload_id]
    parts = s3.list_parts(Bucket=bucket, Key=key, UploadId=upload_id)
    return (ups[0]["Owner"], ups[0]["Initiator"]["ID"], parts["Owner"], parts["Initiator"]["ID"])


def test_listings_name_the_bucket_owner_where_acls_are_disabled(gw):
    _, c = gw
    b = "own-enforced"
    c["alice"].create_bucket(Bucket=b)
    grant_bob(c, b)
    c["alice"].put_object(Bucket=b, Key="by-alice", Body=b"a")
    c["bob"].put_object(Bucket=b, Key="by-bob", Body=b"b")
    # BucketOwnerEnforced: the bucket owner owns every object, whoever wrote it or lists it.
    for who in ["alice", "bob", "admin"]:
        assert owners_everywhere(c, who, b) == {"by-alice": ALICE_OWNER, "by-bob": ALICE_OWNER}, who
    up = c["bob"].create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    c["bob"].upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=1, Body=b"p")
    for who in ["alice", "bob"]:
        assert upload_owners(c, who, b, "mp", up) == (ALICE_OWNER, "alice-id", ALICE_OWNER, "alice-id")
    c["bob"].abort_multipart_upload(Bucket=b, Key="mp", UploadId=up)
    # ListBuckets and GetObjectAcl name the same account.
    assert c["alice"].list_buckets()["Owner"] == ALICE_OWNER
    assert c["alice"].get_object_acl(Bucket=b, Key="by-bob")["Owner"]["ID"] == "alice-id"


def test_listings_name_the_writer_where_acls_are_enabled(gw):
    _, c = gw
    b = "own-writer"
    c["alice"].create_bucket(Bucket=b, ObjectOwnership="ObjectWriter")
    grant_bob(c, b)
    c["alice"].put_object(Bucket=b, Key="by-alice", Body=b"a")
    c["bob"].put_object(Bucket=b, Key="by-bob", Body=b"b")
    # ObjectWriter: the writer owns the object, as GetObjectAcl says.
    for who in ["alice", "bob", "admin"]:
        assert owners_everywhere(c, who, b) == {"by-alice": ALICE_OWNER, "by-bob": BOB_OWNER}, who
    assert c["bob"].get_object_acl(Bucket=b, Key="by-bob")["Owner"]["ID"] == "bob-id"
    # Bob's upload is his; so is the object it completes into.
    up = c["bob"].create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    etag = c["bob"].upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=1, Body=b"p")["ETag"]
    for who in ["alice", "bob"]:
        assert upload_owners(c, who, b, "mp", up) == (BOB_OWNER, "bob-id", BOB_OWNER, "bob-id")
    c["bob"].complete_multipart_upload(Bucket=b, Key="mp", UploadId=up,
                                       MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert owners_everywhere(c, "alice", b)["mp"] == BOB_OWNER
    # BucketOwnerPreferred with bucket-owner-full-control: the bucket owner takes it over.
    c["alice"].put_bucket_ownership_controls(
        Bucket=b, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerPreferred"}]})
    c["bob"].put_object(Bucket=b, Key="handed-over", Body=b"h", ACL="bucket-owner-full-control")
    assert owners_everywhere(c, "alice", b)["handed-over"] == ALICE_OWNER
    # Enforced again: every object is the bucket owner's.
    c["alice"].put_bucket_ownership_controls(
        Bucket=b, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    assert set(map(lambda o: o["ID"], owners_everywhere(c, "alice", b).values())) == {"alice-id"}


def test_deleted_ownership_controls_are_not_found(gw):
    _, c = gw
    b = "own-deleted"
    c["alice"].create_bucket(Bucket=b)
    c["alice"].delete_bucket_ownership_controls(Bucket=b)
    with pytest.raises(ClientError) as e:
        c["alice"].get_bucket_ownership_controls(Bucket=b)
    err = e.value.response["Error"]
    assert (e.value.response["ResponseMetadata"]["HTTPStatusCode"], err["Code"], err["Message"]) == (
        404, "OwnershipControlsNotFoundError", "The bucket ownership controls were not found")
    assert err["BucketName"] == b
    # Without controls ACLs apply, as ObjectWriter: bob's object is bob's.
    grant_bob(c, b)
    c["alice"].put_bucket_acl(Bucket=b, ACL="private")
    c["bob"].put_object(Bucket=b, Key="by-bob", Body=b"b")
    assert c["alice"].list_objects(Bucket=b)["Contents"][0]["Owner"] == BOB_OWNER
    # Put again: found again.
    c["alice"].put_bucket_ownership_controls(
        Bucket=b, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerPreferred"}]})
    rules = c["alice"].get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]["Rules"]
    assert rules == [{"ObjectOwnership": "BucketOwnerPreferred"}]


@pytest.mark.parametrize("default", ["ObjectWriter", "BucketOwnerPreferred"])
def test_default_object_ownership(tmp_path, default):
    srv, c = gateway(tmp_path, "--default-object-ownership", default)
    try:
        c["alice"].create_bucket(Bucket="own-default")
        rules = c["alice"].get_bucket_ownership_controls(Bucket="own-default")["OwnershipControls"]["Rules"]
        assert rules == [{"ObjectOwnership": default}]
        # ACLs work on new buckets: tools that set them on their own buckets keep working.
        c["alice"].put_bucket_acl(Bucket="own-default", ACL="public-read")
        c["alice"].put_object(Bucket="own-default", Key="k", Body=b"x", ACL="public-read")
        grants = c["alice"].get_object_acl(Bucket="own-default", Key="k")["Grants"]
        assert any(g["Grantee"].get("URI", "").endswith("/AllUsers") for g in grants)
        # A create with public-read succeeds too (refused where ACLs are disabled).
        c["alice"].create_bucket(Bucket="own-default-2", ACL="public-read")
        # The header still chooses.
        c["alice"].create_bucket(Bucket="own-enforced", ObjectOwnership="BucketOwnerEnforced")
        rules = c["alice"].get_bucket_ownership_controls(Bucket="own-enforced")["OwnershipControls"]["Rules"]
        assert rules == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    finally:
        srv.stop()


def test_default_object_ownership_is_aws_default_and_checked(tmp_path):
    srv, c = gateway(tmp_path)
    try:
        c["alice"].create_bucket(Bucket="own-default")
        rules = c["alice"].get_bucket_ownership_controls(Bucket="own-default")["OwnershipControls"]["Rules"]
        assert rules == [{"ObjectOwnership": "BucketOwnerEnforced"}]
        with pytest.raises(ClientError) as e:
            c["alice"].put_bucket_acl(Bucket="own-default", ACL="public-read")
        assert err_code(e.value) == "AccessControlListNotSupported"
    finally:
        srv.stop()
    r = subprocess.run([s3hpc_bin(), "serve", str(tmp_path / "root"), "--listen", "127.0.0.1:0",
                        "--default-object-ownership", "Writer"], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "--default-object-ownership" in r.stderr and "ObjectWriter" in r.stderr
