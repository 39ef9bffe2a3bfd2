"""AWS parity found with the public ceph/s3-tests suite (bench/s3tests.sh), issue 37: each test
names the suite case it stands for."""
from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from conftest import err_code, err_status, make_client
from test_authz import gw  # noqa: F401  (the fixture)
from test_parity_acl import _acls_on


def _v2(server):
    return make_client(server.endpoint, signature_version="s3")


@pytest.mark.parametrize("date", ["Tue, 07 Jul 2010 21:53:04 GMT", "Tue, 07 Jul 2030 21:53:04 GMT",
                                  "Tue, 07 Jul 9999 21:53:04 GMT"])
def test_sigv2_date_with_a_wrong_weekday_is_judged_by_its_time(server, bucket, date):
    """s3-tests test_{bucket,object}_create_bad_date_{before_today,after_today,after_end}_aws2:
    S3 ignores the weekday of x-amz-date (those dates are Wednesdays and a Sunday), so a far
    date is 403 RequestTimeTooSkewed, not AccessDenied for a missing date."""
    c = _v2(server)

    def add_date(request, **kwargs):
        request.headers["x-amz-date"] = date

    c.meta.events.register("before-sign.s3.PutObject", add_date)
    with pytest.raises(ClientError) as e:
        c.put_object(Bucket=bucket, Key="k", Body=b"x")
    assert (err_status(e.value), err_code(e.value)) == (403, "RequestTimeTooSkewed")
    assert "The difference between the request time and the current time is too large." in str(e.value)


def test_acl_that_takes_grants_from_the_owner_is_kept(gw):  # noqa: F811
    """s3-tests test_object_acl_write and test_bucket_acl_revoke_all: an ACL document that
    gives the owner only WRITE, or no grant at all, is stored as sent (it was taken for the
    default private ACL and GetObjectAcl/GetBucketAcl showed FULL_CONTROL again). The owner keeps
    READ_ACP/WRITE_ACP and can put the old ACL back, as on S3. With ACLs disabled such a
    document is 400 AccessControlListNotSupported (only the owner's FULL_CONTROL is accepted)."""
    _, c = gw
    a = c["alice"]
    _acls_on(a, "suite-acl-write")
    a.put_object(Bucket="suite-acl-write", Key="foo", Body=b"bar")
    got = a.get_object_acl(Bucket="suite-acl-write", Key="foo")
    policy = {"Owner": got["Owner"], "Grants": got["Grants"]}
    policy["Grants"][0]["Permission"] = "WRITE"
    a.put_object_acl(Bucket="suite-acl-write", Key="foo", AccessControlPolicy=policy)
    grants = a.get_object_acl(Bucket="suite-acl-write", Key="foo")["Grants"]
    assert [(g["Grantee"]["ID"], g["Permission"]) for g in grants] == [("alice-id", "WRITE")]
    # The bucket ACL with every grant revoked, then restored.
    old = a.get_bucket_acl(Bucket="suite-acl-write")
    a.put_bucket_acl(Bucket="suite-acl-write", AccessControlPolicy={"Owner": old["Owner"], "Grants": []})
    assert a.get_bucket_acl(Bucket="suite-acl-write")["Grants"] == []
    a.put_bucket_acl(Bucket="suite-acl-write", AccessControlPolicy={"Owner": old["Owner"], "Grants": old["Grants"]})
    assert a.get_bucket_acl(Bucket="suite-acl-write")["Grants"] == old["Grants"]
    # ACLs disabled (the default): no grant at all is not the owner's FULL_CONTROL.
    a.create_bucket(Bucket="suite-acl-enforced")
    owner = a.get_bucket_acl(Bucket="suite-acl-enforced")["Owner"]
    with pytest.raises(ClientError) as e:
        a.put_bucket_acl(Bucket="suite-acl-enforced", AccessControlPolicy={"Owner": owner, "Grants": []})
    assert (err_status(e.value), err_code(e.value)) == (400, "AccessControlListNotSupported")
    assert "The bucket does not allow ACLs" in str(e.value)


def test_grants_by_id_show_the_accounts_display_name(gw):  # noqa: F811
    """s3-tests test_bucket_acl_grant_userid_* and test_{bucket,object}_header_acl_grants: a grant
    made by canonical id (x-amz-grant-*: id=...) is shown with the account's DisplayName, as the
    owner's grant is; an account without a name has none."""
    _, c = gw
    a = c["alice"]
    _acls_on(a, "suite-acl-names")
    a.put_bucket_acl(Bucket="suite-acl-names", GrantFullControl='id="alice-id"', GrantRead='id="bob-id"')
    grants = {g["Grantee"]["ID"]: g["Grantee"] for g in a.get_bucket_acl(Bucket="suite-acl-names")["Grants"]}
    assert grants["alice-id"].get("DisplayName") == "alice"
    assert "DisplayName" not in grants["bob-id"]
    a.put_object(Bucket="suite-acl-names", Key="k", Body=b"x", GrantFullControl='id="alice-id"',
                 GrantReadACP='id="bob-id"')
    grants = {g["Grantee"]["ID"]: g["Grantee"] for g in a.get_object_acl(Bucket="suite-acl-names", Key="k")["Grants"]}
    assert grants["alice-id"].get("DisplayName") == "alice"


def test_delete_objects_with_bypass_in_a_bucket_without_lock_is_refused_whole(s3, bucket):
    """ceph/s3-tests issue 493 (its teardown): DeleteObjects with x-amz-bypass-governance-retention
    in a bucket without Object Lock is one 400 InvalidArgument for the request, as on AWS, not
    an <Error> per key; nothing is deleted."""
    s3.put_object(Bucket=bucket, Key="asdf", Body=b"str")
    with pytest.raises(ClientError) as e:
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "asdf", "VersionId": "null"}], "Quiet": True},
                          BypassGovernanceRetention=True)
    assert (err_status(e.value), err_code(e.value)) == (400, "InvalidArgument")
    assert "x-amz-bypass-governance-retention is only applicable to Object Lock enabled buckets." in str(e.value)
    assert s3.get_object(Bucket=bucket, Key="asdf")["Body"].read() == b"str"


def test_completion_naming_a_part_twice_is_invalid_part_order(s3, bucket):
    """s3-tests test_multipart_resend_first_finishes_last lists part 1 twice, the superseded
    upload's ETag first, and expects the later upload to win; AWS refuses any completion that
    repeats a part number with 400 InvalidPartOrder (transloadit/uppy#2351: duplicated parts
    from the client, AWS's InvalidPartOrder), judging the order of the whole list before the
    ETags. s3hpc answered InvalidPart (the first entry's ETag is no longer the part's)."""
    up = s3.create_multipart_upload(Bucket=bucket, Key="twice")["UploadId"]
    old = s3.upload_part(Bucket=bucket, Key="twice", UploadId=up, PartNumber=1, Body=b"A" * 8)["ETag"]
    new = s3.upload_part(Bucket=bucket, Key="twice", UploadId=up, PartNumber=1, Body=b"B" * 8)["ETag"]
    assert old != new
    for parts in ([old, new], [new, old], [new, new]):
        with pytest.raises(ClientError) as e:
            s3.complete_multipart_upload(Bucket=bucket, Key="twice", UploadId=up, MultipartUpload={
                "Parts": [{"ETag": t, "PartNumber": 1} for t in parts]})
        assert (err_status(e.value), err_code(e.value)) == (400, "InvalidPartOrder")
        assert "The list of parts was not in ascending order. Parts must be ordered by part number." in str(e.value)
    # The part's latest upload is the one a completion takes.
    s3.complete_multipart_upload(Bucket=bucket, Key="twice", UploadId=up,
                                 MultipartUpload={"Parts": [{"ETag": new, "PartNumber": 1}]})
    assert s3.get_object(Bucket=bucket, Key="twice")["Body"].read() == b"B" * 8


def test_zero_default_retention_is_invalid_argument_naming_days(s3):
    """s3-tests test_object_lock_put_obj_lock_invalid_days expects RGW's InvalidRetentionPeriod;
    AWS answers 400 InvalidArgument "Default retention period must be a positive integer value."
    with <ArgumentName>Days</ArgumentName> (versity/versitygw#1738 quotes AWS's document)."""
    s3.create_bucket(Bucket="suite-lock-zero", ObjectLockEnabledForBucket=True)
    with pytest.raises(ClientError) as e:
        s3.put_object_lock_configuration(Bucket="suite-lock-zero", ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 0}}})
    assert (err_status(e.value), err_code(e.value)) == (400, "InvalidArgument")
    assert e.value.response["Error"]["Message"] == "Default retention period must be a positive integer value."
    assert e.value.response["Error"].get("ArgumentName") == "Days"
