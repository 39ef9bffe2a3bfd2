"""Bucket lifecycle against the real binary: the configuration API (AWS's validation, codes and
messages), the background runner expiring objects and aborting uploads within seconds (the test
knob S3HPC_LIFECYCLE_DAY_SECONDS makes a "day" one second), its metrics and log line, and several
gateways on one root running a bucket once (the lease under ROOT/.s3hpc/lifecycle/)."""
from __future__ import annotations

import base64
import datetime
import fcntl
import hashlib
import os
import re
import shutil
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS_KEY, SECRET_KEY, Server, err_code, err_status, make_client, raw_request, wait_until

CREDS = ["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY]
KNOB = {"S3HPC_LIFECYCLE_DAY_SECONDS": "1"}


def name():
    return "lc-" + uuid.uuid4().hex[:12]


def admin_url(srv) -> str:
    assert wait_until(lambda: any("admin on" in line for line in srv.output), 10), "".join(srv.output)
    line = next(line for line in srv.output if "admin on" in line)
    return re.search(r"admin on (http://\S+)", line).group(1)


def metric(srv, metric_name, **labels) -> float:
    with urllib.request.urlopen(admin_url(srv) + "/metrics", timeout=10) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)", line)
        if not m or m.group(1) != metric_name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3) or ""))
        if all(got.get(k) == str(v) for k, v in labels.items()):
            total += float(m.group(4))
    return total


def keys(s3, bucket):
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []))


def put_raw(server, bucket, xml: bytes, headers=None):
    md5 = base64.b64encode(hashlib.md5(xml).digest()).decode()
    return raw_request(server, "PUT", f"/{bucket}?lifecycle", body=xml, headers={"Content-MD5": md5, **(headers or {})})


def rule(inner: str, rid="r1", filt="<Filter><Prefix>tmp/</Prefix></Filter>") -> bytes:
    return (f"<LifecycleConfiguration><Rule><ID>{rid}</ID>{filt}<Status>Enabled</Status>{inner}</Rule>"
            f"</LifecycleConfiguration>").encode()


# ---- the configuration API ----

def test_put_get_delete_lifecycle(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert err_code(e.value) == "NoSuchLifecycleConfiguration" and err_status(e.value) == 404
    rules = [
        {"ID": "scratch", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled", "Expiration": {"Days": 30}},
        {"ID": "dated", "Filter": {"And": {"Prefix": "old/", "Tags": [{"Key": "k", "Value": "v"}],
                                           "ObjectSizeGreaterThan": 10}},
         "Status": "Disabled", "Expiration": {"Date": datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)}},
        {"ID": "mpu", "Filter": {}, "Status": "Enabled", "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7}},
        {"ID": "versions", "Filter": {"ObjectSizeLessThan": 1000}, "Status": "Enabled",
         "NoncurrentVersionExpiration": {"NoncurrentDays": 5, "NewerNoncurrentVersions": 2}},
    ]
    out = s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": rules})
    assert out["TransitionDefaultMinimumObjectSize"] == "all_storage_classes_128K"
    got = s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert got["TransitionDefaultMinimumObjectSize"] == "all_storage_classes_128K"
    by_id = {r["ID"]: r for r in got["Rules"]}
    assert by_id["scratch"]["Expiration"] == {"Days": 30} and by_id["scratch"]["Filter"] == {"Prefix": "tmp/"}
    assert by_id["dated"]["Status"] == "Disabled"
    assert by_id["dated"]["Expiration"]["Date"] == datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)
    assert by_id["dated"]["Filter"]["And"]["Tags"] == [{"Key": "k", "Value": "v"}]
    assert by_id["dated"]["Filter"]["And"]["ObjectSizeGreaterThan"] == 10
    assert by_id["mpu"]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 7}
    assert by_id["versions"]["NoncurrentVersionExpiration"] == {"NoncurrentDays": 5, "NewerNoncurrentVersions": 2}
    # The header is kept.
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": rules[:1]},
                                          TransitionDefaultMinimumObjectSize="varies_by_storage_class")
    got = s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert got["TransitionDefaultMinimumObjectSize"] == "varies_by_storage_class" and len(got["Rules"]) == 1
    s3.delete_bucket_lifecycle(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert err_code(e.value) == "NoSuchLifecycleConfiguration"


@pytest.mark.parametrize("xml,code,message", [
    (rule("<Expiration><Days>0</Days></Expiration>"), "InvalidArgument",
     "'Days' for Expiration action must be a positive integer"),
    (rule("<Expiration><Date>2030-01-01T10:00:00Z</Date></Expiration>"), "InvalidArgument",
     "'Date' must be at midnight GMT"),
    (rule(""), "InvalidArgument", "At least one action needs to be specified in a rule"),
    (rule("<Expiration><Days>1</Days></Expiration>", rid="x" * 256), "InvalidArgument",
     "ID length should not exceed allowed limit of 255"),
    (b"<LifecycleConfiguration>" + b"<Rule><ID>a</ID><Filter/><Status>Enabled</Status><Expiration><Days>1</Days>"
     b"</Expiration></Rule>" * 2 + b"</LifecycleConfiguration>", "InvalidArgument",
     "Rule ID must be unique. Found same ID for more than one rule"),
    (rule("<AbortIncompleteMultipartUpload><DaysAfterInitiation>0</DaysAfterInitiation>"
          "</AbortIncompleteMultipartUpload>"), "InvalidArgument",
     "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer"),
    (rule("<Expiration><Days>1</Days></Expiration>", filt=""), "MalformedXML", None),
    (rule("<Expiration><Days>1</Days></Expiration>", filt="<Prefix>a</Prefix><Filter/>"), "MalformedXML", None),
    (rule("<Expiration><Days>1</Days><Date>2030-01-01T00:00:00Z</Date></Expiration>"), "MalformedXML", None),
    (b"<LifecycleConfiguration></LifecycleConfiguration>", "MalformedXML", None),
    (b"<LifecycleConfiguration><Rule>", "MalformedXML", None),
    (rule("<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition>"), "NotImplemented", None),
    (rule("<Transition><Days>1</Days><StorageClass>BOGUS</StorageClass></Transition>"), "InvalidStorageClass", None),
])
def test_invalid_configurations(server, bucket, xml, code, message):
    st, _, body = put_raw(server, bucket, xml)
    text = body.decode()
    assert f"<Code>{code}</Code>" in text, text
    assert st == (501 if code == "NotImplemented" else 400)
    if message:
        assert f"<Message>{message}</Message>" in text.replace("&apos;", "'"), text
    # Nothing was stored.
    st, _, _ = raw_request(server, "GET", f"/{bucket}?lifecycle")
    assert st == 404


def test_put_needs_a_digest_and_a_valid_header(server, bucket):
    xml = rule("<Expiration><Days>1</Days></Expiration>")
    st, _, body = raw_request(server, "PUT", f"/{bucket}?lifecycle", body=xml)
    assert st == 400 and b"Content-MD5" in body
    st, _, body = put_raw(server, bucket, xml, {"x-amz-transition-default-minimum-object-size": "tiny"})
    assert st == 400 and b"InvalidArgument" in body


# ---- the runner ----

@pytest.fixture
def fast(tmp_path):
    """A gateway whose lifecycle day is one second, running every second."""
    srv = Server(tmp_path / "root", [*CREDS, "--lifecycle-interval", "1", "--admin-listen", "127.0.0.1:0"], env=KNOB)
    yield srv
    srv.stop()


def test_expiration_and_abort_run_in_the_background(fast):
    s3 = make_client(fast.endpoint)
    b = name()
    s3.create_bucket(Bucket=b)
    for k in ["tmp/a", "tmp/b", "tmp/sub/c", "keep/a", "tmp/big", "tagged/x", "tagged/y", "old/z"]:
        s3.put_object(Bucket=b, Key=k, Body=b"x" * (5000 if k == "tmp/big" else 10))
    s3.put_object_tagging(Bucket=b, Key="tagged/x", Tagging={"TagSet": [{"Key": "purge", "Value": "yes"}]})
    up = s3.create_multipart_upload(Bucket=b, Key="uploads/u")["UploadId"]
    keep_up = s3.create_multipart_upload(Bucket=b, Key="keep/u")["UploadId"]
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "tmp", "Filter": {"And": {"Prefix": "tmp/", "ObjectSizeLessThan": 1000}}, "Status": "Enabled",
         "Expiration": {"Days": 1}},
        {"ID": "tag", "Filter": {"Tag": {"Key": "purge", "Value": "yes"}}, "Status": "Enabled",
         "Expiration": {"Days": 1}},
        {"ID": "date", "Filter": {"Prefix": "old/"}, "Status": "Enabled",
         "Expiration": {"Date": datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)}},
        {"ID": "off", "Filter": {"Prefix": "keep/"}, "Status": "Disabled", "Expiration": {"Days": 1}},
        {"ID": "mpu", "Filter": {"Prefix": "uploads/"}, "Status": "Enabled",
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}},
    ]})
    want = ["keep/a", "tagged/y", "tmp/big"]
    assert wait_until(lambda: keys(s3, b) == want, 15), keys(s3, b)
    uploads = lambda: [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=b).get("Uploads", [])]
    assert wait_until(lambda: uploads() == [keep_up], 10), uploads()
    assert up not in uploads()
    # Counted when the run that did it completes.
    assert wait_until(lambda: metric(fast, "s3hpc_lifecycle_uploads_aborted_total") == 1, 5)
    assert wait_until(lambda: metric(fast, "s3hpc_lifecycle_objects_expired_total") == 5, 5), \
        metric(fast, "s3hpc_lifecycle_objects_expired_total")
    assert metric(fast, "s3hpc_lifecycle_runs_total") >= 1
    assert metric(fast, "s3hpc_lifecycle_run_duration_seconds_count") >= 1
    line = re.compile(rf"lifecycle run: bucket {b}: \d+ objects expired, \d+ uploads aborted")
    assert wait_until(lambda: line.search("".join(fast.output)), 5), "".join(fast.output)[-2000:]
    # Without a configuration nothing more goes.
    s3.delete_bucket_lifecycle(Bucket=b)
    s3.put_object(Bucket=b, Key="tmp/new", Body=b"1")
    time.sleep(3)
    assert "tmp/new" in keys(s3, b)


def test_noncurrent_versions_and_lone_delete_markers_expire(fast):
    """On a versioned bucket (posix backend: older versions in the hidden versions area) the
    runner removes noncurrent versions a day after they stopped being current, keeping the
    NewerNoncurrentVersions newest, and then a delete marker left alone."""
    s3 = make_client(fast.endpoint)
    b = name()
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    ids = [s3.put_object(Bucket=b, Key="v/k", Body=f"{i}".encode())["VersionId"] for i in range(3)]
    s3.put_object(Bucket=b, Key="gone/x", Body=b"x")
    s3.delete_object(Bucket=b, Key="gone/x")
    s3.put_object(Bucket=b, Key="other/y", Body=b"1")
    s3.put_object(Bucket=b, Key="other/y", Body=b"2")

    def versions():
        r = s3.list_object_versions(Bucket=b)
        out = [(v["Key"], v["VersionId"]) for v in r.get("Versions", [])]
        return sorted(out + [(m["Key"], "marker") for m in r.get("DeleteMarkers", [])])

    assert len(versions()) == 7
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "v", "Filter": {"Prefix": "v/"}, "Status": "Enabled",
         "NoncurrentVersionExpiration": {"NoncurrentDays": 1, "NewerNoncurrentVersions": 1}},
        {"ID": "gone", "Filter": {"Prefix": "gone/"}, "Status": "Enabled",
         "Expiration": {"ExpiredObjectDeleteMarker": True}, "NoncurrentVersionExpiration": {"NoncurrentDays": 1}},
    ]})
    want = sorted([("v/k", ids[2]), ("v/k", ids[1])] + [("other/y", v) for k, v in versions() if k == "other/y"])
    assert wait_until(lambda: versions() == want, 20), versions()
    assert s3.get_object(Bucket=b, Key="v/k")["Body"].read() == b"2"
    assert s3.get_object(Bucket=b, Key="v/k", VersionId=ids[1])["Body"].read() == b"1"


def test_a_held_lease_stops_the_run(fast):
    """Another gateway holding the bucket's lease (flock on ROOT/.s3hpc/lifecycle/BUCKET): this
    one does not run the bucket until it is released."""
    s3 = make_client(fast.endpoint)
    b = name()
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="tmp/a", Body=b"1")
    lease_dir = fast.root / ".s3hpc" / "lifecycle"
    lease_dir.mkdir(parents=True, exist_ok=True)
    with open(lease_dir / b, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
            {"ID": "tmp", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled", "Expiration": {"Days": 1}}]})
        assert wait_until(lambda: metric(fast, "s3hpc_lifecycle_runs_skipped_total", reason="busy") >= 3, 10)
        assert keys(s3, b) == ["tmp/a"]
    assert wait_until(lambda: keys(s3, b) == [], 10)
    # The run is recorded in the lease file once it completes.
    assert wait_until(lambda: "last_run_started_ms=" in (lease_dir / b).read_text(), 5)


def test_two_gateways_on_one_root_run_a_bucket_once(tmp_path):
    root = tmp_path / "root"
    args = [*CREDS, "--lifecycle-interval", "2", "--lifecycle-ops", "50", "--admin-listen", "127.0.0.1:0"]
    gws = [Server(root, args, env=KNOB), Server(root, args, env=KNOB)]
    try:
        s3 = make_client(gws[0].endpoint)
        b = name()
        s3.create_bucket(Bucket=b)
        n = 40
        for i in range(n):
            s3.put_object(Bucket=b, Key=f"tmp/{i:03}", Body=b"x")
        s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
            {"ID": "tmp", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled", "Expiration": {"Days": 1}}]})
        assert wait_until(lambda: keys(s3, b) == [], 20), keys(s3, b)
        time.sleep(5)
        expired = sum(metric(g, "s3hpc_lifecycle_objects_expired_total") for g in gws)
        assert expired == n, f"{expired} deletes for {n} objects: a bucket ran twice"
        runs = sum(metric(g, "s3hpc_lifecycle_runs_total") for g in gws)
        recent = sum(metric(g, "s3hpc_lifecycle_runs_skipped_total", reason="recent") for g in gws)
        # Each interval one gateway runs the bucket and the other finds it done: the record of
        # the last run (in the lease file) is shared.
        assert runs >= 1 and recent >= 1, (runs, recent)
    finally:
        for g in gws:
            g.stop()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("useradd") is None,
                    reason="needs root and useradd to create the test user")
def test_with_posix_identities_the_runner_acts_as_the_bucket_owner(tmp_path):
    """The runner deletes as the bucket owner's POSIX user: a file in a directory the owner may
    not write stays (the gateway itself, root, could remove it)."""
    from test_identity import USERS, ensure_user

    login = "s3hpc-ia"
    user = ensure_user(login)
    ak, sk = USERS[login]
    base = Path(tempfile.mkdtemp(prefix="s3hpc-lc-ident-", dir="/tmp"))
    try:
        base.chmod(0o755)
        root = base / "root"
        root.mkdir()
        root.chmod(0o1777)
        cfg = base / "users.toml"
        cfg.write_text(f'[[users]]\naccess_key = "{ak}"\nsecret_key = "{sk}"\nuser = "{login}"\n')
        srv = Server(root, ["--identity", "posix", "--config", str(cfg), "--lifecycle-interval", "1",
                            "--admin-listen", "127.0.0.1:0"], env=KNOB)
        try:
            s3 = make_client(srv.endpoint, ak, sk)
            b = name()
            s3.create_bucket(Bucket=b)
            s3.put_object(Bucket=b, Key="tmp/mine", Body=b"1")
            locked = root / b / "tmp" / "locked"
            locked.mkdir()
            (locked / "f").write_bytes(b"root's")
            os.chmod(locked, 0o755)  # owned by root: the bucket owner may not unlink in it
            assert os.stat(root / b / "tmp" / "mine").st_uid == user.pw_uid
            s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
                {"ID": "tmp", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled", "Expiration": {"Days": 1}}]})
            assert wait_until(lambda: keys(s3, b) == ["tmp/locked/f"], 15), keys(s3, b)
            assert wait_until(lambda: metric(srv, "s3hpc_lifecycle_errors_total") >= 1, 10)
            assert (locked / "f").exists()
        finally:
            srv.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
