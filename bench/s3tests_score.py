"""pytest plugin for bench/s3tests.sh: classifies each ceph/s3-tests case as "core" or not and
prints the two scores the script reports. Loaded with `-p s3tests_score` (PYTHONPATH=bench).

core: a test of s3tests/functional/test_s3.py that carries no pytest marker at all (no feature
      marker such as lifecycle/versioning/bucket_policy, no fails_on_* marker): the plain S3 API.
all:  every test of the script's selection (both files minus the markers in
      S3TESTS_EXCLUDE_MARKS, see bench/s3tests.sh); the cases ceph marks fails_on_aws (AWS
      itself answers otherwise) are counted apart as well.

A second line counts as issue 37 did ("core 206/253, all 334/587" at s3hpc c5fc130): its "all"
is reproduced by the test_s3.py cases not marked fails_on_aws, fails_on_rgw, iam_account or
iam_user (587 at suite commit 8f0ae7b; 109 of them SSE, 6 bucket logging). Its "core" (253) is
reproduced by no marker combination at this or any suite commit since 2023 (the unmarked
test_s3.py cases number 221 to 244), so the line gives the unmarked cases of that set (239) as
its core.
"""
import json
import os

import pytest

_results = {}
_core = set()
_not_aws = set()
_selected = set()  # the script's own selection ("all")
_issue37 = set()  # issue 37's "all"
_ISSUE37_OUT = {"fails_on_aws", "fails_on_rgw", "iam_account", "iam_user"}


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
    excluded = set(os.environ.get("S3TESTS_EXCLUDE_MARKS", "").split())
    for it in items:
        marks = {m.name for m in it.iter_markers()} - {"parametrize", "usefixtures", "filterwarnings"}
        if not marks & excluded:
            _selected.add(it.nodeid)
        if "/test_s3.py::" in it.nodeid and not marks & _ISSUE37_OUT:
            _issue37.add(it.nodeid)
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


def _score(names):
    names = [n for n in _results if n in names]
    return sum(1 for n in names if _results[n] == "passed"), len(names)


def pytest_sessionfinish(session, exitstatus):
    # Without S3TESTS_EXCLUDE_MARKS (the plugin run by hand) every case run is "all".
    selected = _selected if os.environ.get("S3TESTS_EXCLUDE_MARKS") else set(_results)
    core = [n for n in _results if n in _core]
    allp, alln = _score(selected)
    corep, coren = _score(_core)
    awsp, awsn = _score(selected - _not_aws)
    line = (f"s3-tests score: core {corep}/{coren}, all {allp}/{alln}"
            f" (of which not fails_on_aws: {awsp}/{awsn})")
    ip, in_ = _score(_issue37)
    icp, icn = _score(_issue37 & _core)
    line += (f"\ns3-tests score in issue 37's counting (test_s3.py minus fails_on_aws, fails_on_rgw,"
             f" iam_*): core {icp}/{icn} (issue: /253, not reproducible), all {ip}/{in_} (issue: /587)")
    out = os.environ.get("S3TESTS_RESULTS")
    if out:
        with open(out, "w") as f:
            json.dump({"core": core, "all": sorted(selected & set(_results)),
                       "issue37": sorted(_issue37 & set(_results)), "results": _results}, f, indent=0)
    session.config._s3tests_line = line


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    line = getattr(config, "_s3tests_line", None)
    if line:
        for part in line.split("\n"):
            terminalreporter.write_line(part)
