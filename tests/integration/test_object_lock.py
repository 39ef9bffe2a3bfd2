"""S3 Object Lock through the real gateway with boto3: buckets created with object lock, the
configuration API and its validation, default retention, retention and legal hold per version,
deletes refused while a version is protected (COMPLIANCE, GOVERNANCE, legal hold), the GOVERNANCE
bypass with and without s3:BypassGovernanceRetention (a second account from a users file), the
lifecycle runner skipping locked versions, and versioning that can no longer be suspended."""
from __future__ import annotations

import datetime
import json
import time
import uuid

import pytest
from botocore.exceptions import ClientError

from conftest import Server, err_code, err_status, make_client, raw_request, wait_until

OWNER = ("LOCKOWNER00000000001", "owner-secret/1")
OTHER = ("LOCKOTHER00000000001", "other-secret/1")
LOCKED_MSG = "Access Denied because object protected by object lock."


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    base = tmp_path_factory.mktemp("lock")
    cfg = base / "users.toml"
    cfg.write_text(
        f'[[users]]\naccess_key = "{OWNER[0]}"\nsecret_key = "{OWNER[1]}"\nid = "owner-id"\n\n'
        f'[[users]]\naccess_key = "{OTHER[0]}"\nsecret_key = "{OTHER[1]}"\nid = "other-id"\n')
    srv = Server(base / "root", extra=["--config", str(cfg), "--durability", "none", "--lifecycle-interval", "1",
                                       "--lifecycle-ops", "1000"],
                 env={"S3HPC_LIFECYCLE_DAY_SECONDS": "1"})
    try:
        yield srv, make_client(srv.endpoint, *OWNER), make_client(srv.endpoint, *OTHER)
    finally:
        srv.stop()


def name():
    return "lk-" + uuid.uuid4().hex[:12]


def later(seconds):
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)


def lock_bucket(s3, default=None):
    b = name()
    s3.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    if default:
        s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": default}})
    return b


def error(call):
    with pytest.raises(ClientError) as e:
        call()
    r = e.value.response
    return err_status(e.value), err_code(e.value), r["Error"].get("Message")


def test_create_with_lock_and_configuration_roundtrip(gw):
    _, s3, _ = gw
    b = lock_bucket(s3)
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == {"ObjectLockEnabled": "Enabled"}
    for rule in [{"Mode": "GOVERNANCE", "Days": 3}, {"Mode": "COMPLIANCE", "Years": 2}]:
        s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": rule}})
        got = s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
        assert got == {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": rule}}
    # Suspending versioning is refused; the state stays Enabled.
    assert error(lambda: s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})) == (
        409, "InvalidBucketState",
        "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed.")
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"


def test_configuration_validation_and_plain_buckets(gw):
    srv, s3, _ = gw
    b = name()
    s3.create_bucket(Bucket=b)
    assert error(lambda: s3.get_object_lock_configuration(Bucket=b))[:2] == (404, "ObjectLockConfigurationNotFoundError")
    cfg = {"ObjectLockEnabled": "Enabled"}
    assert error(lambda: s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=cfg)) == (
        409, "InvalidBucketState", "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration")
    # Enabling on an existing bucket once versioning is Enabled.
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=cfg)
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == cfg
    bad = [
        ({"ObjectLockEnabled": "Disabled"}, "MalformedXML"),
        ({"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1, "Years": 1}}},
         "MalformedXML"),
        ({"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "governance", "Days": 1}}},
         "MalformedXML"),
        ({"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE"}}}, "MalformedXML"),
        ({"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 0}}},
         "InvalidArgument"),
    ]
    for doc, code in bad:
        assert error(lambda: s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=doc))[1] == code, doc
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == cfg
    # Lock headers and lock operations on a bucket without object lock.
    plain = name()
    s3.create_bucket(Bucket=plain)
    s3.put_object(Bucket=plain, Key="k", Body=b"x")
    missing = (400, "InvalidRequest", "Bucket is missing Object Lock Configuration")
    assert error(lambda: s3.put_object(Bucket=plain, Key="k", Body=b"x", ObjectLockLegalHoldStatus="ON")) == missing
    assert error(lambda: s3.get_object_retention(Bucket=plain, Key="k")) == missing
    assert error(lambda: s3.put_object_legal_hold(Bucket=plain, Key="k", LegalHold={"Status": "ON"})) == missing
    status, _, data = raw_request(srv, "DELETE", f"/{plain}/k", headers={"x-amz-bypass-governance-retention": "true"},
                                  access_key=OWNER[0], secret_key=OWNER[1])
    assert status == 400 and b"only applicable to Object Lock enabled buckets" in data, data


def test_put_headers_defaults_and_get_head(gw):
    _, s3, _ = gw
    b = lock_bucket(s3, {"Mode": "GOVERNANCE", "Days": 1})
    # Default retention: about a day from now.
    v = s3.put_object(Bucket=b, Key="d", Body=b"x")["VersionId"]
    h = s3.head_object(Bucket=b, Key="d")
    assert h["ObjectLockMode"] == "GOVERNANCE"
    assert abs((h["ObjectLockRetainUntilDate"] - later(86_400)).total_seconds()) < 120
    assert "ObjectLockLegalHoldStatus" not in h
    r = s3.get_object_retention(Bucket=b, Key="d", VersionId=v)["Retention"]
    assert r["Mode"] == "GOVERNANCE" and r["RetainUntilDate"] == h["ObjectLockRetainUntilDate"]
    # Explicit headers win over the default.
    until = later(3600).replace(microsecond=0)
    s3.put_object(Bucket=b, Key="e", Body=b"x", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until,
                  ObjectLockLegalHoldStatus="ON")
    g = s3.get_object(Bucket=b, Key="e")
    assert (g["ObjectLockMode"], g["ObjectLockRetainUntilDate"], g["ObjectLockLegalHoldStatus"]) == (
        "COMPLIANCE", until, "ON")
    # Multipart and copy take the headers too (a copy never takes its source's lock).
    up = s3.create_multipart_upload(Bucket=b, Key="m", ObjectLockLegalHoldStatus="ON")
    etag = s3.upload_part(Bucket=b, Key="m", UploadId=up["UploadId"], PartNumber=1, Body=b"p")["ETag"]
    s3.complete_multipart_upload(Bucket=b, Key="m", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert s3.get_object_legal_hold(Bucket=b, Key="m")["LegalHold"]["Status"] == "ON"
    s3.copy_object(Bucket=b, Key="c", CopySource={"Bucket": b, "Key": "e"})
    c = s3.head_object(Bucket=b, Key="c")
    assert c["ObjectLockMode"] == "GOVERNANCE" and "ObjectLockLegalHoldStatus" not in c
    # Header validation, in AWS's words.
    cases = [
        (dict(ObjectLockMode="GOVERNANCE"),
         "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied"),
        (dict(ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=later(-60)),
         "The retain until date must be in the future!"),
        (dict(ObjectLockMode="WORM", ObjectLockRetainUntilDate=later(60)), "Unknown wormMode directive."),
    ]
    for kw, msg in cases:
        assert error(lambda: s3.put_object(Bucket=b, Key="bad", Body=b"x", **kw)) == (400, "InvalidArgument", msg)


def test_integrity_header_required_for_locked_puts(gw):
    srv, s3, _ = gw
    b = lock_bucket(s3, {"Mode": "GOVERNANCE", "Days": 1})
    status, _, data = raw_request(srv, "PUT", f"/{b}/plain", body=b"no digest", access_key=OWNER[0],
                                  secret_key=OWNER[1])
    assert status == 400 and b"Content-MD5 OR x-amz-checksum- HTTP header is required" in data, data
    # With a checksum (boto3 sends one) the default applies.
    s3.put_object(Bucket=b, Key="plain", Body=b"digest")
    assert s3.head_object(Bucket=b, Key="plain")["ObjectLockMode"] == "GOVERNANCE"


def test_retention_and_legal_hold_roundtrip(gw):
    _, s3, _ = gw
    b = lock_bucket(s3)
    v1 = s3.put_object(Bucket=b, Key="k", Body=b"1")["VersionId"]
    v2 = s3.put_object(Bucket=b, Key="k", Body=b"2")["VersionId"]
    nolock = ("NoSuchObjectLockConfiguration", "The specified object does not have a ObjectLock configuration")
    assert error(lambda: s3.get_object_retention(Bucket=b, Key="k"))[1:] == nolock
    assert error(lambda: s3.get_object_legal_hold(Bucket=b, Key="k", VersionId=v1))[:2] == (404, nolock[0])
    until = later(600).replace(microsecond=0)
    s3.put_object_retention(Bucket=b, Key="k", VersionId=v1, Retention={"Mode": "GOVERNANCE", "RetainUntilDate": until})
    s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "OFF"})
    assert s3.get_object_retention(Bucket=b, Key="k", VersionId=v1)["Retention"] == {
        "Mode": "GOVERNANCE", "RetainUntilDate": until}
    assert error(lambda: s3.get_object_retention(Bucket=b, Key="k", VersionId=v2))[1] == nolock[0]
    assert s3.get_object_legal_hold(Bucket=b, Key="k")["LegalHold"]["Status"] == "OFF"
    assert s3.get_object_legal_hold(Bucket=b, Key="k", VersionId=v2)["LegalHold"]["Status"] == "OFF"
    # Extending is always allowed; shortening GOVERNANCE needs the bypass.
    s3.put_object_retention(Bucket=b, Key="k", VersionId=v1,
                            Retention={"Mode": "GOVERNANCE", "RetainUntilDate": later(1200)})
    assert error(lambda: s3.put_object_retention(Bucket=b, Key="k", VersionId=v1, Retention={
        "Mode": "GOVERNANCE", "RetainUntilDate": later(300)})) == (403, "AccessDenied", LOCKED_MSG)
    s3.put_object_retention(Bucket=b, Key="k", VersionId=v1, BypassGovernanceRetention=True,
                            Retention={"Mode": "GOVERNANCE", "RetainUntilDate": until})
    assert s3.get_object_retention(Bucket=b, Key="k", VersionId=v1)["Retention"]["RetainUntilDate"] == until
    # The version keeps its lock once noncurrent (v1 is), and a delete marker has none.
    m = s3.delete_object(Bucket=b, Key="k")["VersionId"]
    assert error(lambda: s3.get_object_retention(Bucket=b, Key="k", VersionId=m))[:2] == (405, "MethodNotAllowed")
    assert error(lambda: s3.get_object_retention(Bucket=b, Key="k"))[:2] == (404, "NoSuchKey")


def test_deletes_of_locked_versions_are_refused(gw):
    _, s3, _ = gw
    b = lock_bucket(s3)
    comp = s3.put_object(Bucket=b, Key="comp", Body=b"c", ObjectLockMode="COMPLIANCE",
                         ObjectLockRetainUntilDate=later(600))["VersionId"]
    gov = s3.put_object(Bucket=b, Key="gov", Body=b"g", ObjectLockMode="GOVERNANCE",
                        ObjectLockRetainUntilDate=later(600))["VersionId"]
    held = s3.put_object(Bucket=b, Key="held", Body=b"h", ObjectLockLegalHoldStatus="ON")["VersionId"]
    for key, vid in [("comp", comp), ("gov", gov), ("held", held)]:
        assert error(lambda: s3.delete_object(Bucket=b, Key=key, VersionId=vid)) == (403, "AccessDenied", LOCKED_MSG)
        assert s3.get_object(Bucket=b, Key=key, VersionId=vid)["Body"].read()
    # COMPLIANCE: not even with the bypass; it cannot be shortened or weakened either.
    assert error(lambda: s3.delete_object(Bucket=b, Key="comp", VersionId=comp, BypassGovernanceRetention=True))[1] \
        == "AccessDenied"
    for ret in [{"Mode": "COMPLIANCE", "RetainUntilDate": later(60)},
                {"Mode": "GOVERNANCE", "RetainUntilDate": later(6000)}]:
        assert error(lambda: s3.put_object_retention(Bucket=b, Key="comp", VersionId=comp, Retention=ret,
                                                     BypassGovernanceRetention=True))[1] == "AccessDenied"
    # A legal hold is not bypassed either; released, the version goes.
    assert error(lambda: s3.delete_object(Bucket=b, Key="held", VersionId=held, BypassGovernanceRetention=True))[1] \
        == "AccessDenied"
    s3.put_object_legal_hold(Bucket=b, Key="held", VersionId=held, LegalHold={"Status": "OFF"})
    s3.delete_object(Bucket=b, Key="held", VersionId=held)
    # A delete without a version id makes a marker; overwrites make new versions.
    r = s3.delete_object(Bucket=b, Key="comp")
    assert r["DeleteMarker"] is True
    s3.put_object(Bucket=b, Key="gov", Body=b"new")
    assert s3.get_object(Bucket=b, Key="gov", VersionId=gov)["Body"].read() == b"g"
    # DeleteObjects answers per key.
    d = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "comp", "VersionId": comp},
                                                        {"Key": "comp", "VersionId": r["VersionId"]}]})
    assert [(e["Key"], e["VersionId"], e["Code"], e["Message"]) for e in d.get("Errors", [])] == [
        ("comp", comp, "AccessDenied", LOCKED_MSG)]
    assert [x["VersionId"] for x in d["Deleted"]] == [r["VersionId"]]
    # GOVERNANCE with the bypass (the owner may bypass).
    s3.delete_object(Bucket=b, Key="gov", VersionId=gov, BypassGovernanceRetention=True)
    assert error(lambda: s3.head_object(Bucket=b, Key="gov", VersionId=gov))[0] == 404


def test_bypass_needs_the_permission(gw):
    """The second account may delete versions (a bucket policy) but bypass GOVERNANCE only once
    the policy also grants s3:BypassGovernanceRetention."""
    _, s3, other = gw
    b = lock_bucket(s3)
    vids = [s3.put_object(Bucket=b, Key=f"g{i}", Body=b"g", ObjectLockMode="GOVERNANCE",
                          ObjectLockRetainUntilDate=later(600))["VersionId"] for i in range(2)]

    def policy(actions):
        s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"AWS": ["other-id"]}, "Action": actions,
            "Resource": [f"arn:aws:s3:::{b}/*"]}]}))

    policy(["s3:DeleteObjectVersion", "s3:PutObjectRetention", "s3:GetObjectRetention"])
    assert error(lambda: other.delete_object(Bucket=b, Key="g0", VersionId=vids[0], BypassGovernanceRetention=True)) \
        == (403, "AccessDenied", LOCKED_MSG)
    assert error(lambda: other.put_object_retention(Bucket=b, Key="g0", VersionId=vids[0],
                                                    BypassGovernanceRetention=True, Retention={}))[1] == "AccessDenied"
    assert other.get_object_retention(Bucket=b, Key="g0", VersionId=vids[0])["Retention"]["Mode"] == "GOVERNANCE"
    # Without s3:GetObjectLegalHold the legal hold is not shown (nor asked for).
    assert error(lambda: other.get_object_legal_hold(Bucket=b, Key="g0"))[:2] == (403, "AccessDenied")
    policy(["s3:DeleteObjectVersion", "s3:PutObjectRetention", "s3:BypassGovernanceRetention"])
    other.delete_object(Bucket=b, Key="g0", VersionId=vids[0], BypassGovernanceRetention=True)
    other.put_object_retention(Bucket=b, Key="g1", VersionId=vids[1], BypassGovernanceRetention=True, Retention={})
    assert error(lambda: s3.get_object_retention(Bucket=b, Key="g1", VersionId=vids[1]))[1] == \
        "NoSuchObjectLockConfiguration"
    other.delete_object(Bucket=b, Key="g1", VersionId=vids[1])


def test_lifecycle_skips_locked_versions(gw):
    srv, s3, _ = gw
    b = lock_bucket(s3)
    locked = s3.put_object(Bucket=b, Key="k", Body=b"1", ObjectLockMode="COMPLIANCE",
                           ObjectLockRetainUntilDate=later(600))["VersionId"]
    free = s3.put_object(Bucket=b, Key="k", Body=b"2")["VersionId"]
    current = s3.put_object(Bucket=b, Key="k", Body=b"3")["VersionId"]
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "nc", "Filter": {"Prefix": ""}, "Status": "Enabled", "NoncurrentVersionExpiration": {"NoncurrentDays": 1}}]})

    def vids():
        return sorted(v["VersionId"] for v in s3.list_object_versions(Bucket=b).get("Versions", []))

    assert wait_until(lambda: vids() == sorted([locked, current]), 20), vids()
    assert free not in vids()
    assert wait_until(lambda: any(f"bucket {b}:" in line and "1 locked" in line for line in srv.output), 10)
    time.sleep(2.5)
    assert vids() == sorted([locked, current])
    assert not any(f"bucket {b}:" in line and " 0 errors" not in line for line in srv.output
                   if "lifecycle run" in line)
