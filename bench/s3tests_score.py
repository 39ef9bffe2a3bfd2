"""pytest plugin for bench/s3tests.sh: classifies each ceph/s3-tests case as "core" or not and
prints the two scores the script reports. Loaded with `-p s3tests_score` (PYTHONPATH=bench).

core: a test of s3tests/functional/test_s3.py that carries no pytest marker at all (no feature
      marker such as lifecycle/versioning/bucket_policy, no fails_on_* marker): the plain S3 API.
all:  every test the script selected (see bench/s3tests.sh for the -m expression); the cases
      ceph marks fails_on_aws (AWS itself answers otherwise) are counted apart as well.
"""
import json
import os

import pytest

_results = {}
_core = set()
_not_aws = set()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """The suite's teardown deletes every version with x-amz-bypass-governance-retention, which
    AWS refuses on a bucket without Object Lock (400 InvalidArgument "x-amz-bypass-governance-
    retention is only applicable to Object Lock enabled buckets.", ceph/s3-tests issue 493), so
    on AWS and on s3hpc one leftover object fails every later test. Send the header only to
    buckets with Object Lock, as a client that works on AWS must."""
    try:
        import s3tests.functional as f
    except ImportError:
        return
    orig = f.nuke_bucket

    def nuke_bucket(client, bucket):
        try:
            lock = client.get_object_lock_configuration(Bucket=bucket)
            enabled = lock.get("ObjectLockConfiguration", {}).get("ObjectLockEnabled") == "Enabled"
        except Exception:
            enabled = False
        if enabled:
            return orig(client, bucket)
        for objects in f.list_versions(client, bucket, 128):
            client.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})
        client.delete_bucket(Bucket=bucket)

    f.nuke_bucket = nuke_bucket


def pytest_collection_modifyitems(session, config, items):
    for it in items:
        marks = {m.name for m in it.iter_markers()} - {"parametrize", "usefixtures", "filterwarnings"}
        if not marks and "/test_s3.py::" in it.nodeid:
            _core.add(it.nodeid)
        if "fails_on_aws" in marks:
            _not_aws.add(it.nodeid)


def pytest_runtest_logreport(report):
    nid = report.nodeid
    if report.when == "call":
        _results[nid] = report.outcome
    elif report.failed:  # setup/teardown errors count as failures
        _results[nid] = "error" if _results.get(nid) != "failed" else "failed"
    elif report.when == "setup" and report.skipped:
        _results[nid] = "skipped"


def pytest_sessionfinish(session, exitstatus):
    allp = sum(1 for o in _results.values() if o == "passed")
    core = [n for n in _results if n in _core]
    corep = sum(1 for n in core if _results[n] == "passed")
    aws = [n for n in _results if n not in _not_aws]
    awsp = sum(1 for n in aws if _results[n] == "passed")
    line = (f"s3-tests score: core {corep}/{len(core)}, all {allp}/{len(_results)}"
            f" (of which not fails_on_aws: {awsp}/{len(aws)})")
    out = os.environ.get("S3TESTS_RESULTS")
    if out:
        with open(out, "w") as f:
            json.dump({"core": core, "results": _results}, f, indent=0)
    session.config._s3tests_line = line


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    line = getattr(config, "_s3tests_line", None)
    if line:
        terminalreporter.write_line(line)
