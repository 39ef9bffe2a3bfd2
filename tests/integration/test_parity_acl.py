"""AWS parity of ACL decisions (issue 37 leftovers): an anonymous GET of a missing key is 404 to a
caller who may list the bucket (public-read ACL or a policy granting s3:ListBucket) and 403
otherwise; FULL_CONTROL grants allow CopyObject and GetObjectTagging as on AWS."""
from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from conftest import err_code, err_status
from test_authz import anonymous, gw  # noqa: F401  (the fixture)


def _acls_on(c, bucket):
    c.create_bucket(Bucket=bucket)
    c.put_bucket_ownership_controls(Bucket=bucket, OwnershipControls={"Rules": [{"ObjectOwnership": "ObjectWriter"}]})
    c.delete_public_access_block(Bucket=bucket)


def test_anonymous_get_of_missing_key_is_404_when_listing_is_public(gw):  # noqa: F811
    srv, c = gw
    a, anon = c["alice"], anonymous(srv.endpoint)
    _acls_on(a, "acl-pub-read")
    a.put_bucket_acl(Bucket="acl-pub-read", ACL="public-read")
    a.create_bucket(Bucket="acl-pol-list")
    a.delete_public_access_block(Bucket="acl-pol-list")
    a.put_bucket_policy(Bucket="acl-pol-list", Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::acl-pol-list"},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::acl-pol-list/*"}]}))
    a.create_bucket(Bucket="acl-private")
    for bkt in ("acl-pub-read", "acl-pol-list"):
        for call in (anon.get_object, anon.head_object):
            with pytest.raises(ClientError) as e:
                call(Bucket=bkt, Key="missing")
            assert err_status(e.value) == 404, (bkt, call)
        with pytest.raises(ClientError) as e:
            anon.get_object(Bucket=bkt, Key="missing")
        assert err_code(e.value) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        anon.get_object(Bucket="acl-private", Key="missing")
    assert err_status(e.value) == 403 and err_code(e.value) == "AccessDenied"


def test_full_control_grants_allow_copy_and_get_tagging(gw):  # noqa: F811
    srv, c = gw
    a, b = c["alice"], c["bob"]
    _acls_on(a, "acl-fc-src")
    a.put_object(Bucket="acl-fc-src", Key="obj", Body=b"data", Tagging="k=v")
    a.put_object_acl(Bucket="acl-fc-src", Key="obj", GrantFullControl='id="bob-id"')
    # FULL_CONTROL on the object: GetObject, GetObjectTagging and GetObjectAcl as AWS allows.
    assert b.get_object(Bucket="acl-fc-src", Key="obj")["Body"].read() == b"data"
    assert b.get_object_tagging(Bucket="acl-fc-src", Key="obj")["TagSet"] == [{"Key": "k", "Value": "v"}]
    b.get_object_acl(Bucket="acl-fc-src", Key="obj")
    # FULL_CONTROL on the destination bucket: WRITE included, so CopyObject into it works.
    _acls_on(a, "acl-fc-dst")
    a.put_bucket_acl(Bucket="acl-fc-dst", GrantFullControl='id="bob-id"')
    b.copy_object(Bucket="acl-fc-dst", Key="copy", CopySource={"Bucket": "acl-fc-src", "Key": "obj"})
    assert b.get_object(Bucket="acl-fc-dst", Key="copy")["Body"].read() == b"data"
    # Without a grant, bob is refused.
    a.put_object(Bucket="acl-fc-src", Key="private", Body=b"x")
    with pytest.raises(ClientError) as e:
        b.copy_object(Bucket="acl-fc-dst", Key="copy2", CopySource={"Bucket": "acl-fc-src", "Key": "private"})
    assert err_status(e.value) == 403
    with pytest.raises(ClientError) as e:
        b.get_object_tagging(Bucket="acl-fc-src", Key="private")
    assert err_status(e.value) == 403
