"""AWS parity of bucket-policy condition keys taken from request headers (issue 37): a policy may
test `s3:x-amz-copy-source`, `s3:x-amz-metadata-directive`, `s3:x-amz-grant-*`,
`s3:x-amz-storage-class` and the other header keys AWS documents; before, only `s3:x-amz-acl`
had a value, so an Allow conditioned on another one never matched (ceph s3-tests
test_bucket_policy_put_obj_copy_source, ..._copy_source_meta, test_bucket_policy_put_obj_grant)."""
from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from conftest import err_status
from test_authz import gw  # noqa: F401  (the fixture)


def _allow(action, resource, condition=None):
    st = {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::bob-id:root"}, "Action": action,
          "Resource": resource}
    if condition:
        st["Condition"] = condition
    return json.dumps({"Version": "2012-10-17", "Statement": [st]})


def _denied(call, **kw):
    with pytest.raises(ClientError) as e:
        call(**kw)
    assert err_status(e.value) == 403, e.value.response


def test_copy_source_and_metadata_directive_condition_keys(gw):  # noqa: F811
    _, c = gw
    a, b = c["alice"], c["bob"]
    a.create_bucket(Bucket="pk-src")
    for k in ("public/foo", "public/b r", "private/foo"):
        a.put_object(Bucket="pk-src", Key=k, Body=k.encode())
    a.put_bucket_policy(Bucket="pk-src", Policy=_allow("s3:GetObject", "arn:aws:s3:::pk-src/*"))
    a.create_bucket(Bucket="pk-dst")
    a.put_bucket_policy(Bucket="pk-dst", Policy=_allow(
        "s3:PutObject", "arn:aws:s3:::pk-dst/*", {"StringLike": {"s3:x-amz-copy-source": "pk-src/public/*"}}))
    # boto3 sends the source as `pk-src/public/b%20r`: the key is decoded before the match.
    for k in ("public/foo", "public/b r"):
        b.copy_object(Bucket="pk-dst", Key="copy", CopySource={"Bucket": "pk-src", "Key": k})
    _denied(b.copy_object, Bucket="pk-dst", Key="copy", CopySource={"Bucket": "pk-src", "Key": "private/foo"})
    # A plain PUT has no copy source: the condition does not hold.
    _denied(b.put_object, Bucket="pk-dst", Key="plain", Body=b"x")

    a.create_bucket(Bucket="pk-meta")
    a.put_bucket_policy(Bucket="pk-meta", Policy=_allow(
        "s3:PutObject", "arn:aws:s3:::pk-meta/*", {"StringEquals": {"s3:x-amz-metadata-directive": "COPY"}}))
    b.copy_object(Bucket="pk-meta", Key="c", CopySource={"Bucket": "pk-src", "Key": "public/foo"},
                  MetadataDirective="COPY")
    _denied(b.copy_object, Bucket="pk-meta", Key="c2", CopySource={"Bucket": "pk-src", "Key": "public/foo"},
            MetadataDirective="REPLACE", Metadata={"foo": "bar"})


def test_grant_and_storage_class_condition_keys(gw):  # noqa: F811
    _, c = gw
    a, b = c["alice"], c["bob"]
    a.create_bucket(Bucket="pk-grant")
    a.put_bucket_ownership_controls(Bucket="pk-grant",
                                    OwnershipControls={"Rules": [{"ObjectOwnership": "ObjectWriter"}]})
    a.put_bucket_policy(Bucket="pk-grant", Policy=_allow(
        "s3:PutObject", "arn:aws:s3:::pk-grant/*",
        {"StringEquals": {"s3:x-amz-grant-full-control": 'id="alice-id"'}}))
    b.put_object(Bucket="pk-grant", Key="granted", Body=b"x", GrantFullControl='id="alice-id"')
    _denied(b.put_object, Bucket="pk-grant", Key="ungranted", Body=b"x")

    a.create_bucket(Bucket="pk-class")
    a.put_bucket_policy(Bucket="pk-class", Policy=_allow(
        "s3:PutObject", "arn:aws:s3:::pk-class/*", {"StringEquals": {"s3:x-amz-storage-class": "STANDARD"}}))
    b.put_object(Bucket="pk-class", Key="std", Body=b"x", StorageClass="STANDARD")
    _denied(b.put_object, Bucket="pk-class", Key="none", Body=b"x")
