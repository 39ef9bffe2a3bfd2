"""Two "nodes" sharing one distributed file system (issue 36): one GlusterFS volume
(scripts/gluster-bed) or one MooseFS file system (scripts/moosefs-bed) mounted twice with its FUSE
client, one `s3hpc serve` per mount, same access keys. Unlike tests/integration/test_multigateway.py
(all gateways on one kernel and one local file system, where caches and locks are coherent for
free), each mount here has its own client caches (dentries, attributes, xattrs, pages), like two
hosts of a cluster.

Run on four setups (module parametrization), each file system with:
  default   its default options (GlusterFS: md-cache, quick-read, io-cache, open-behind,
            write-behind, readdir-ahead, nl-cache on, 1 s FUSE attribute/entry timeouts;
            MooseFS: mfsmount's attribute, entry, directory-entry and xattr caches);
  coherent  the bed script's --coherent: those caches off, timeouts 0.
What holds is asserted outright in every setup. A failure that is still open on a setup, and
shows in some runs and not in others, is listed in KNOWN with what was measured: when it shows,
that test is an xfail carrying this run's numbers; when it does not, the test passes. Anything
else that fails, fails.

Skipped (with the reason) when a file system is not installed (scripts/install-test-deps installs
both from Debian) or its bed cannot come up (no root, no FUSE).
Each test prints its counts (run with -s to see them).
"""
from __future__ import annotations

import http.client
import os
import re
import shutil
import subprocess
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS_KEY, REPO, SECRET_KEY, Server, err_code, err_status, make_client
from multigw import sigv4_headers

BED = REPO / "scripts" / "gluster-bed"
STALE_WINDOW = 2.0  # seconds a node may answer from its caches after another node's change

# (test name, setup) -> a measured failure that is still open. Each test asserts outright what
# holds (one winner, no 5xx, every PUT acknowledged), and only the part named here, which shows in
# some runs and not in others, turns into an xfail (pytest.xfail) when it shows; a test not listed
# here must pass whole.
# Measured on main 8321824, b27ac19 and after (GlusterFS 10.3, Debian 12, 1-brick volume), see docs/DEPLOY.md.
KNOWN: dict[tuple[str, str], str] = {
    # Empty now. Fixed on main 2026-11-29: on moosefs-coherent 1-2 of 28 If-Match losers answered
    # 404 (in 1 of 3 runs): the condition check opened a file without a valid record as `/KEY`
    # (containment.rs::write_conditions_read_the_buckets_file_not_the_hosts).
    # Fixed on main after 105e76e: If-Match losers answering 404 (1-3 of 28 losers)
    # and 4-5 of 20 acknowledged versions lost on the default setup: both came from this node's
    # cached directory entry of the key, which a read of the key's directory now refreshes under
    # the key's lock (sys::refresh_entry); with that read disabled both fail again.
}


def known_failure(request, mode):
    """No-op kept for the tests' shape: known failures are decided at the end of each test by
    `open_failure`."""


def open_failure(request, mode, ok, measured):
    """The part of a test that KNOWN lists for this setup: an xfail when it fails (with what was
    measured now), a pass when it holds; for setups not listed, a failure when it fails."""
    if ok:
        return
    reason = KNOWN.get((request.node.originalname, mode))
    if reason:
        pytest.xfail(f"{reason}; this run: {measured}")
    pytest.fail(measured)


class Bed:
    def __init__(self, mode, base: Path):
        self.mode = mode
        self.dir = base
        self.gateways: list[Server] = []

    def client(self, i):
        return make_client(self.gateways[i].endpoint, max_pool_connections=16)


# The distributed file systems of the beds: (script, tools it needs, packages to install).
FILE_SYSTEMS = {
    "gluster": (BED, ("glusterd", "gluster", "mount.glusterfs"), "glusterfs-server glusterfs-client"),
    "moosefs": (REPO / "scripts" / "moosefs-bed", ("mfsmaster", "mfschunkserver", "mfsmount"),
                "moosefs-master moosefs-chunkserver moosefs-client"),
}


@pytest.fixture(scope="module", params=["gluster-default", "gluster-coherent", "moosefs-default", "moosefs-coherent"])
def bed(request, tmp_path_factory):
    fs, options = request.param.split("-")
    script, tools, packages = FILE_SYSTEMS[fs]
    missing = [t for t in tools
               if not (shutil.which(t) or Path("/usr/sbin", t).exists() or Path("/sbin", t).exists())]
    if missing:
        msg = f"{fs} not installed ({', '.join(missing)} missing): apt-get install {packages}"
        print(msg)
        pytest.skip(msg)
    base = tmp_path_factory.mktemp(request.param)
    args = [str(script), "up", str(base)] + (["--coherent"] if options == "coherent" else [])
    t0 = time.monotonic()
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        subprocess.run([str(script), "down", str(base)], capture_output=True, timeout=120)
        msg = f"{fs} test bed did not come up: {(r.stderr or r.stdout).strip()[-500:]}"
        print(msg)
        pytest.skip(msg)
    print(f"\n{fs} bed ({options}) up in {time.monotonic() - t0:.1f}s: {r.stdout.split()}")
    b = Bed(request.param, base)
    try:
        for mnt in r.stdout.split():
            b.gateways.append(Server(Path(mnt), ["--backend", "posix", "--durability", "none",
                                                 "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY]))
        print(b.gateways[0].output[:3])
        # The start-up line names the file system as shared, and warns about its client caches.
        startup = "".join(b.gateways[0].output)
        kind = {"gluster": "fuse.glusterfs", "moosefs": "fuse.moosefs"}[fs]
        assert f"{kind} (shared by nodes)" in startup and "(docs/DEPLOY.md)" in startup, startup[:2000]
        yield b
    finally:
        for g in b.gateways:
            g.stop()
        subprocess.run([str(script), "down", str(base)], capture_output=True, timeout=120)


@pytest.fixture
def bucket(bed):
    name = f"mn-{uuid.uuid4().hex[:12]}"
    bed.client(0).create_bucket(Bucket=name)
    return name


def status_of(fn):
    """(HTTP status, error code, response) of one boto3 call."""
    try:
        return 200, "", fn()
    except ClientError as e:
        return err_status(e), err_code(e), e.response.get("Error", {}).get("Message", "")


def race(calls):
    """Runs the callables at once (after a barrier); returns their status_of results."""
    barrier = threading.Barrier(len(calls))

    def go(fn):
        barrier.wait()
        return status_of(fn)

    with ThreadPoolExecutor(len(calls)) as ex:
        return list(ex.map(go, calls))


PAUSES = (0, 0.3, 1.5, 0.3)


def test_if_match_race(bed, bucket, request):
    """8 concurrent PutObject If-Match: <etag of the base> (4 per gateway): exactly one 200."""
    known_failure(request, bed.mode)
    a, b = bed.client(0), bed.client(1)
    rounds, bad_rounds, fives, wrong, winners_hist = len(PAUSES), 0, 0, 0, []
    for r in range(rounds):
        key = f"race-{r}"
        etag = a.put_object(Bucket=bucket, Key=key, Body=b"base")["ETag"]
        assert a.get_object(Bucket=bucket, Key=key)["Body"].read() == b"base"
        assert b.get_object(Bucket=bucket, Key=key)["Body"].read() == b"base"
        # The race starts at once, while the nodes' cached entries of the base are fresh, or
        # after they have aged a little or past the 1 s FUSE timeouts.
        time.sleep(PAUSES[r % len(PAUSES)])
        calls = [(lambda c=c, i=i: c.put_object(Bucket=bucket, Key=key, Body=f"w{i}".encode(), IfMatch=etag))
                 for i, c in enumerate([a, b] * 4)]
        res = race(calls)
        winners = sum(1 for s, _, _ in res if s == 200)
        fives += sum(1 for s, _, _ in res if s >= 500)
        # A loser's answer: 412 PreconditionFailed (or 409 ConditionalRequestConflict); the key
        # exists all along, so never 404 NoSuchKey.
        wrong += sum(1 for s, c, _ in res if s != 200 and (s, c) not in
                     ((412, "PreconditionFailed"), (409, "ConditionalRequestConflict")))
        winners_hist.append(winners)
        bad_rounds += winners != 1
        others = sorted({f"{s} {c}" for s, c, _ in res if s != 200})
        print(f"if-match round {r}: {winners} winners, others {others}")
    print(f"IF-MATCH {bed.mode}: {bad_rounds}/{rounds} rounds without exactly one winner "
          f"(winners per round {winners_hist}, pauses {PAUSES}), {wrong} losers answered other than "
          f"412/409, {fives} 5xx")
    assert bad_rounds == 0 and fives == 0, f"winners per round {winners_hist}, {fives} 5xx"
    open_failure(request, bed.mode, wrong == 0, f"{wrong} losers answered other than 412/409")


def test_if_none_match_race(bed, bucket, request):
    """8 concurrent PutObject If-None-Match: * of a new key (4 per gateway): exactly one 200."""
    known_failure(request, bed.mode)
    a, b = bed.client(0), bed.client(1)
    rounds, bad_rounds, fives, winners_hist = 5, 0, 0, []
    for r in range(rounds):
        key = f"inm-{r}"
        # Both nodes look the key up first (a cached negative entry is the risk here).
        for c in (a, b):
            assert status_of(lambda c=c: c.head_object(Bucket=bucket, Key=key))[0] == 404
        calls = [(lambda c=c, i=i: c.put_object(Bucket=bucket, Key=key, Body=f"w{i}".encode(), IfNoneMatch="*"))
                 for i, c in enumerate([a, b] * 4)]
        res = race(calls)
        winners = sum(1 for s, _, _ in res if s == 200)
        fives += sum(1 for s, _, _ in res if s >= 500)
        winners_hist.append(winners)
        bad_rounds += winners != 1
        others = sorted({f"{s} {c}" for s, c, _ in res if s != 200})
        print(f"if-none-match round {r}: {winners} winners, others {others}")
    print(f"IF-NONE-MATCH {bed.mode}: {bad_rounds}/{rounds} rounds without exactly one winner "
          f"(winners per round {winners_hist}), {fives} 5xx")
    assert bad_rounds == 0 and fives == 0, f"winners per round {winners_hist}, {fives} 5xx"


def poll(fn, done, window=STALE_WINDOW):
    """Calls fn until done(status, code, resp) or the window has passed; returns (statuses seen,
    seconds until done or None)."""
    seen, t0 = [], time.monotonic()
    while True:
        s, c, resp = status_of(fn)
        seen.append(f"{s} {c}".strip() + (f" ({resp})" if s >= 500 else ""))
        if done(s, c, resp):
            return seen, time.monotonic() - t0
        if time.monotonic() - t0 > window:
            return seen, None
        time.sleep(0.05)


def test_overwrite_then_get_other_node(bed, bucket, request):
    """PUT v2 through A over v1 (read through B first), then GET through B: the new bytes within
    the staleness window, never a 500."""
    known_failure(request, bed.mode)
    a, b = bed.client(0), bed.client(1)
    rounds, fives, late, stale_s = 5, 0, 0, []
    for r in range(rounds):
        key = f"ow-{r}"
        a.put_object(Bucket=bucket, Key=key, Body=b"v1")
        assert b.get_object(Bucket=bucket, Key=key)["Body"].read() == b"v1"
        a.put_object(Bucket=bucket, Key=key, Body=b"v2-longer")
        seen, t = poll(lambda: b.get_object(Bucket=bucket, Key=key)["Body"].read(),
                       lambda s, c, body: s == 200 and body == b"v2-longer")
        fives += sum(1 for x in seen if x.startswith("5"))
        late += t is None
        stale_s.append(round(t, 2) if t is not None else None)
        print(f"overwrite round {r}: {len(seen)} GETs, {sorted(set(seen))}, fresh after {t}")
    print(f"OVERWRITE {bed.mode}: {fives} 5xx, {late}/{rounds} not fresh within {STALE_WINDOW}s, "
          f"seconds to fresh {stale_s}")
    assert fives == 0 and late == 0, f"{fives} 5xx, {late}/{rounds} stale past {STALE_WINDOW}s ({stale_s})"


def test_tagging_of_a_settled_object(bed, bucket, request):
    """PutObjectTagging of an object whose record a gateway may have cached (read more than the
    2 s settling window after its PUT): both gateways answer the new tags (A at once, B within the
    staleness window). GlusterFS's ctime does not move on an xattr change, so a cached record
    validated by the ctime outlived the change on the node that made it, for good."""
    a, b = bed.client(0), bed.client(1)
    a.put_object(Bucket=bucket, Key="t", Body=b"tagged", Tagging="v=1")
    time.sleep(2.5)
    for c in (a, b):
        c.head_object(Bucket=bucket, Key="t")
        c.get_object(Bucket=bucket, Key="t")["Body"].read()
        assert c.get_object_tagging(Bucket=bucket, Key="t")["TagSet"] == [{"Key": "v", "Value": "1"}]
    a.put_object_tagging(Bucket=bucket, Key="t", Tagging={"TagSet": [{"Key": "v", "Value": "2"}]})
    assert a.get_object_tagging(Bucket=bucket, Key="t")["TagSet"] == [{"Key": "v", "Value": "2"}]
    assert a.head_object(Bucket=bucket, Key="t").get("TagCount", 0) == 1
    # MooseFS's client keeps xattrs for mfsxattrcacheto (30 s by default; DEPLOY.md says so): on
    # that setup B may answer the old tags that long. Everywhere else within the usual window.
    window = 31.0 if bed.mode == "moosefs-default" else STALE_WINDOW
    seen, t = poll(lambda: b.get_object_tagging(Bucket=bucket, Key="t")["TagSet"],
                   lambda s, c, tags: s == 200 and tags == [{"Key": "v", "Value": "2"}], window=window)
    print(f"TAGGING {bed.mode}: B saw the new tags after {t}s ({len(seen)} reads)")
    assert t is not None, f"B still answers the old tags {window}s after the change: {seen[-3:]}"


def slow_put(server, path, body: bytes, query=()):
    """PUT `body` to `path` through `server` in two halves 1.2 s apart, so the data is written in
    a later second than the one the gateway created its file in. Returns the response's ETag."""
    host, port = server.host_port
    hdrs = sigv4_headers("PUT", f"{host}:{port}", path, query, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    hdrs["content-length"] = str(len(body))
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        qs = "&".join(f"{k}={v}" for k, v in query)
        conn.putrequest("PUT", path + (f"?{qs}" if qs else ""), skip_host=True, skip_accept_encoding=True)
        for k, v in hdrs.items():
            conn.putheader(k, v)
        conn.endheaders()
        half = len(body) // 2
        conn.send(body[:half])
        time.sleep(1.2)
        conn.send(body[half:])
        r = conn.getresponse()
        r.read()
        assert r.status == 200, r.status
        return r.getheader("ETag")
    finally:
        conn.close()


def test_slow_write_is_one_object_on_every_node(bed, bucket, request):
    """An object and a part whose bodies arrive over more than a second (written a second after
    their files were created), read through the other gateway right after: the same ETag, If-Match
    with it holds, the part is listed and completes. A MooseFS 3.0 client shows a write's mtime to
    its own node at once and tells the master up to ~0.5 s later, so the other node saw the
    file's creation mtime and took the record as stale (another ETag, 412, a part missing) until
    the writer pinned the mtime (`Inner::written_metadata`). Without that the part's half fails on
    moosefs-coherent every time; the object's only when its file's creation and its write
    straddle a second (the HTTP path's PUT took none of the pause in the runs measured). On the
    default setups the other node may answer from its caches for the staleness window."""
    a, b = bed.client(0), bed.client(1)
    window = 0.0 if bed.mode.endswith("coherent") else STALE_WINDOW
    body = os.urandom(8 << 20)
    etag = slow_put(bed.gateways[0], f"/{bucket}/slow", body)
    seen, t = poll(lambda: b.head_object(Bucket=bucket, Key="slow")["ETag"],
                   lambda s, c, e: s == 200 and e == etag, window=window)
    assert t is not None, f"B's ETag {b.head_object(Bucket=bucket, Key='slow')['ETag']} is not the PUT's {etag}"
    got = b.get_object(Bucket=bucket, Key="slow", IfMatch=etag)["Body"].read()
    assert got == body
    up = a.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    part = os.urandom(5 << 20)
    petag = slow_put(bed.gateways[0], f"/{bucket}/mp", part, query=(("partNumber", "1"), ("uploadId", up)))
    seen, t = poll(lambda: [(p["PartNumber"], p["ETag"]) for p in b.list_parts(Bucket=bucket, Key="mp",
                                                                              UploadId=up).get("Parts", [])],
                   lambda s, c, parts: s == 200 and parts == [(1, petag)], window=window)
    assert t is not None, f"B lists {b.list_parts(Bucket=bucket, Key='mp', UploadId=up).get('Parts')}, not part 1 {petag}"
    b.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up,
                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": petag}]})
    assert b.get_object(Bucket=bucket, Key="mp")["Body"].read() == part
    print(f"SLOW WRITE {bed.mode}: object and part agree across nodes")


def test_delete_then_get_other_node(bed, bucket, request):
    """DELETE through A (read through B first), then GET through B: 404 within the staleness
    window, never a 500."""
    known_failure(request, bed.mode)
    a, b = bed.client(0), bed.client(1)
    rounds, fives, late, stale_s = 5, 0, 0, []
    for r in range(rounds):
        key = f"del-{r}"
        a.put_object(Bucket=bucket, Key=key, Body=b"doomed")
        assert b.get_object(Bucket=bucket, Key=key)["Body"].read() == b"doomed"
        a.delete_object(Bucket=bucket, Key=key)
        seen, t = poll(lambda: b.get_object(Bucket=bucket, Key=key)["Body"].read(),
                       lambda s, c, _: s == 404 and c == "NoSuchKey")
        fives += sum(1 for x in seen if x.startswith("5"))
        late += t is None
        stale_s.append(round(t, 2) if t is not None else None)
        print(f"delete round {r}: {len(seen)} GETs, {sorted(set(seen))}, 404 after {t}")
    print(f"DELETE {bed.mode}: {fives} 5xx, {late}/{rounds} no 404 within {STALE_WINDOW}s, seconds to 404 {stale_s}")
    assert fives == 0 and late == 0, f"{fives} 5xx, {late}/{rounds} not 404 past {STALE_WINDOW}s ({stale_s})"


def test_concurrent_versioned_puts(bed, request):
    """Versioning on; rounds of 4 concurrent PUTs of one key (2 per gateway): every acknowledged
    VersionId is listed by ListObjectVersions and GET-able through both gateways; no 5xx."""
    known_failure(request, bed.mode)
    a, b = bed.client(0), bed.client(1)
    name = f"mnv-{uuid.uuid4().hex[:12]}"
    a.create_bucket(Bucket=name)
    a.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    # Each gateway keeps the bucket's configuration for a while: wait until B versions too.
    t0, unversioned = time.monotonic(), 0
    while "VersionId" not in b.put_object(Bucket=name, Key="probe", Body=b"p"):
        unversioned += 1
        if time.monotonic() - t0 > STALE_WINDOW + 1:
            break
        time.sleep(0.1)
    print(f"gateway B: {unversioned} unversioned PUTs in {time.monotonic() - t0:.2f}s after A enabled versioning")
    rounds, acked, fives, nover = 5, {}, 0, 0
    for r in range(rounds):
        calls = [(lambda c=c, i=i: c.put_object(Bucket=name, Key="k", Body=f"r{r}w{i}".encode()))
                 for i, c in enumerate([a, b, a, b])]
        for i, (s, c, resp) in enumerate(race(calls)):
            if s == 200 and "VersionId" in resp:
                acked[resp["VersionId"]] = f"r{r}w{i}".encode()
            nover += s == 200 and "VersionId" not in resp
            fives += s >= 500
    time.sleep(STALE_WINDOW)  # let both nodes' caches expire before checking
    listed = {v["VersionId"] for v in a.list_object_versions(Bucket=name)["Versions"]}
    listed_b = {v["VersionId"] for v in b.list_object_versions(Bucket=name)["Versions"]}
    unlisted = [v for v in acked if v not in listed or v not in listed_b]
    unreadable = []
    for vid, body in acked.items():
        for c in (a, b):
            s, code, resp = status_of(lambda c=c: c.get_object(Bucket=name, Key="k", VersionId=vid)["Body"].read())
            if s != 200 or resp != body:
                unreadable.append((vid, s, code))
    print(f"VERSIONED {bed.mode}: {len(acked)}/{rounds * 4} PUTs acknowledged, {nover} without VersionId, {fives} 5xx, "
          f"{len(unlisted)} acknowledged versions not listed, {len(unreadable)} failed version GETs "
          f"{unreadable[:4]}")
    assert fives == 0 and nover == 0, f"{fives}/{rounds * 4} PUTs 5xx, {nover} without a VersionId"
    open_failure(request, bed.mode, not unlisted and not unreadable,
                 f"{len(unlisted)}/{len(acked)} acknowledged versions not listed, unreadable {unreadable[:4]}")


def test_bucket_config_shared(bed, request):
    """Versioning enabled through A: B reports it within the staleness window, and it stays
    enabled (through A too) once B has read it."""
    known_failure(request, bed.mode)
    a, b = bed.client(0), bed.client(1)
    name = f"mnc-{uuid.uuid4().hex[:12]}"
    a.create_bucket(Bucket=name)
    a.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    seen, t = poll(lambda: b.get_bucket_versioning(Bucket=name).get("Status"),
                   lambda s, c, st: s == 200 and st == "Enabled", window=STALE_WINDOW + 1)
    time.sleep(1.1)  # past the gateways' 1 s bucket-state cache
    after_a = a.get_bucket_versioning(Bucket=name).get("Status")
    print(f"CONFIG {bed.mode}: B saw Enabled after {t} ({len(seen)} reads), A reads {after_a} afterwards")
    assert t is not None and after_a == "Enabled", f"B: Enabled after {t}s; A afterwards: {after_a}"


def test_double_complete_both_nodes(bed, bucket, request):
    """One multipart upload completed through both gateways at once: one object with the parts'
    bytes, the other answer 200 (same completion) or 404 NoSuchUpload; never a 5xx."""
    known_failure(request, bed.mode)
    a, b = bed.client(0), bed.client(1)
    rounds, fives, bad = 3, 0, []
    for r in range(rounds):
        key = f"mpu-{r}"
        up = a.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        part = f"part-{r}-".encode() * 1000
        etag = a.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1, Body=part)["ETag"]
        mpu = {"Parts": [{"PartNumber": 1, "ETag": etag}]}
        res = race([(lambda c=c: c.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up, MultipartUpload=mpu))
                    for c in (a, b)])
        codes = [f"{s} {c}".strip() for s, c, _ in res]
        fives += sum(1 for s, _, _ in res if s >= 500)
        ok = sum(1 for s, _, _ in res if s == 200)
        if ok == 0 or any(s not in (200, 404) for s, _, _ in res):
            bad.append(codes)
        gets = []
        for c in (a, b):
            seen, t = poll(lambda c=c: c.get_object(Bucket=bucket, Key=key)["Body"].read(),
                           lambda s, c_, body: s == 200 and body == part)
            fives += sum(1 for x in seen if x.startswith("5"))
            gets.append(seen[-1] if t is None else "200")
        print(f"double complete round {r}: {codes}, GET through A/B {gets}")
        if gets != ["200", "200"]:
            bad.append(codes + [f"GET {gets}"])
    print(f"DOUBLE-COMPLETE {bed.mode}: {fives} 5xx, bad rounds {bad}")
    assert fives == 0 and not bad, f"{fives} 5xx; rounds {bad}"


def test_rename_then_get_other_node(bed, bucket, request):
    """RenameObject through A (source and destination read through B first), then through B: the
    source answers 404 and the destination the moved bytes within the staleness window; never a
    500, and never the source's bytes after it."""
    a, b = bed.client(0), bed.client(1)
    rounds, fives, late, stale_s = 4, 0, 0, []
    for r in range(rounds):
        src, dst = f"mv-src-{r}", f"mv-dst-{r}"
        a.put_object(Bucket=bucket, Key=src, Body=b"moving")
        a.put_object(Bucket=bucket, Key=dst, Body=b"old destination")
        assert b.get_object(Bucket=bucket, Key=src)["Body"].read() == b"moving"
        assert b.get_object(Bucket=bucket, Key=dst)["Body"].read() == b"old destination"
        a.rename_object(Bucket=bucket, Key=dst, RenameSource=f"{bucket}/{src}")
        seen_s, t_s = poll(lambda: b.get_object(Bucket=bucket, Key=src)["Body"].read(),
                           lambda s, c, _: s == 404 and c == "NoSuchKey")
        seen_d, t_d = poll(lambda: b.get_object(Bucket=bucket, Key=dst)["Body"].read(),
                           lambda s, c, body: s == 200 and body == b"moving")
        fives += sum(1 for x in seen_s + seen_d if x.startswith("5"))
        late += t_s is None or t_d is None
        stale_s.append((t_s and round(t_s, 2), t_d and round(t_d, 2)))
        # Once fresh, stays fresh: the source never comes back.
        assert status_of(lambda: b.head_object(Bucket=bucket, Key=src))[0] == 404
        print(f"rename round {r}: source {sorted(set(seen_s))} -> 404 after {t_s}; destination "
              f"{sorted(set(seen_d))} fresh after {t_d}")
    print(f"RENAME {bed.mode}: {fives} 5xx, {late}/{rounds} not fresh within {STALE_WINDOW}s, seconds {stale_s}")
    assert fives == 0 and late == 0, f"{fives} 5xx, {late}/{rounds} stale past {STALE_WINDOW}s ({stale_s})"


def test_prune_then_put_other_node(bed, bucket, request):
    """A deletes the only object under a prefix (its empty directories are pruned) right after B
    read it; B then PUTs another key under that prefix at once: 200, and the object readable
    through both gateways; never a 5xx (B's cached handles of the pruned directories are stale)."""
    a, b = bed.client(0), bed.client(1)
    rounds, fives, bad = 5, 0, []
    for r in range(rounds):
        old, new = f"pr-{r}/x/y/old", f"pr-{r}/x/y/new"
        a.put_object(Bucket=bucket, Key=old, Body=b"old")
        assert b.get_object(Bucket=bucket, Key=old)["Body"].read() == b"old"
        a.delete_object(Bucket=bucket, Key=old)
        s, c, msg = status_of(lambda: b.put_object(Bucket=bucket, Key=new, Body=b"new"))
        fives += s >= 500
        if s != 200:
            bad.append(f"round {r}: PUT through B {s} {c} {msg if s >= 500 else ''}")
            continue
        for name, cl in (("A", a), ("B", b)):
            seen, t = poll(lambda cl=cl: cl.get_object(Bucket=bucket, Key=new)["Body"].read(),
                           lambda s_, c_, body: s_ == 200 and body == b"new")
            fives += sum(1 for x in seen if x.startswith("5"))
            if t is None:
                bad.append(f"round {r}: GET through {name} {seen[-3:]}")
    print(f"PRUNE-THEN-PUT {bed.mode}: {fives} 5xx, {bad}")
    assert fives == 0 and not bad, f"{fives} 5xx; {bad}"


def test_list_after_changes_other_node(bed, bucket, request):
    """A changes a prefix (deletes half its keys, adds new ones) after B listed it: B's listing
    equals the truth within the staleness window; never a 5xx."""
    a, b = bed.client(0), bed.client(1)
    keys = [f"ls/k{i:03d}" for i in range(20)]
    for k in keys:
        a.put_object(Bucket=bucket, Key=k, Body=b"x")
    first = [o["Key"] for o in b.list_objects_v2(Bucket=bucket, Prefix="ls/").get("Contents", [])]
    assert first == keys
    for k in keys[::2]:
        a.delete_object(Bucket=bucket, Key=k)
    added = [f"ls/n{i:03d}" for i in range(5)]
    for k in added:
        a.put_object(Bucket=bucket, Key=k, Body=b"y")
    truth = sorted(keys[1::2] + added)

    def listed():
        return [o["Key"] for o in b.list_objects_v2(Bucket=bucket, Prefix="ls/").get("Contents", [])]

    seen, t = poll(listed, lambda s, c, got: s == 200 and got == truth)
    fives = sum(1 for x in seen if x.startswith("5"))
    print(f"LIST {bed.mode}: {len(seen)} listings, {fives} 5xx, equal to the truth after {t}")
    assert fives == 0 and t is not None, f"{fives} 5xx; B lists the truth after {t} (last {seen[-1:]})"


def test_writes_after_other_node_changes(bed, bucket, request):
    """Writes through B right after A overwrote or deleted the key B had just read (B's cached
    entries lead to the old inode): DELETE answers 204, tagging lands on the new object,
    RenameObject moves the new bytes, CopyObject copies a whole object; never a 5xx."""
    a, b = bed.client(0), bed.client(1)
    fives, bad = 0, []

    def seen_by_b(k):
        """B reads the key (waiting out its caches' window for a key new to it)."""
        seen, t = poll(lambda: b.head_object(Bucket=bucket, Key=k), lambda s, c, _: s == 200)
        assert t is not None, f"B never saw {k}: {seen[-3:]}"

    def check(what, fn):
        nonlocal fives
        s, c, msg = status_of(fn)
        fives += s >= 500
        if s not in (200, 204):
            bad.append(f"{what}: {s} {c} {msg if s >= 500 else ''}")
        return s

    for r in range(3):
        k = f"w-del/{r}"
        a.put_object(Bucket=bucket, Key=k, Body=b"1")
        seen_by_b(k)
        a.put_object(Bucket=bucket, Key=k, Body=b"22")
        check("delete after overwrite", lambda: b.delete_object(Bucket=bucket, Key=k))
        k = f"w-deldel/{r}"
        a.put_object(Bucket=bucket, Key=k, Body=b"1")
        seen_by_b(k)
        a.delete_object(Bucket=bucket, Key=k)
        check("delete after delete", lambda: b.delete_object(Bucket=bucket, Key=k))
        k = f"w-tag/{r}"
        a.put_object(Bucket=bucket, Key=k, Body=b"1")
        seen_by_b(k)
        new_etag = a.put_object(Bucket=bucket, Key=k, Body=b"2")["ETag"]
        tagset = {"TagSet": [{"Key": "round", "Value": str(r)}]}
        if check("tagging after overwrite", lambda: b.put_object_tagging(Bucket=bucket, Key=k, Tagging=tagset)) == 200:
            # Read back through B, the writer (A's xattr cache may hold the untagged record for
            # its timeout, 30 s on MooseFS by default): the tags are on the new object, not on
            # the inode B's cache named before the write took the key's lock.
            h = b.head_object(Bucket=bucket, Key=k)
            if h["ETag"] != new_etag or h.get("TagCount") != 1:
                bad.append(f"tagging after overwrite: the object through B is {h['ETag']} with {h.get('TagCount')} tags")
        k = f"w-mv/{r}"
        a.put_object(Bucket=bucket, Key=k, Body=b"1")
        seen_by_b(k)
        a.put_object(Bucket=bucket, Key=k, Body=b"2")
        if check("rename after overwrite", lambda: b.rename_object(Bucket=bucket, Key=k + "-moved",
                                                                    RenameSource=f"{bucket}/{k}")) == 200:
            got = a.get_object(Bucket=bucket, Key=k + "-moved")["Body"].read()
            if got != b"2":
                bad.append(f"rename after overwrite moved {got!r}, not the new bytes")
        k = f"w-cp/{r}"
        a.put_object(Bucket=bucket, Key=k, Body=b"1")
        seen_by_b(k)
        a.put_object(Bucket=bucket, Key=k, Body=b"2")
        if check("copy after overwrite", lambda: b.copy_object(Bucket=bucket, Key=k + "-copy",
                                                                CopySource=f"{bucket}/{k}")) == 200:
            got = a.get_object(Bucket=bucket, Key=k + "-copy")["Body"].read()
            if got not in (b"1", b"2"):
                bad.append(f"copy after overwrite holds {got!r}")
    print(f"WRITES {bed.mode}: {fives} 5xx, {bad}")
    assert fives == 0 and not bad, f"{fives} 5xx; {bad}"


def test_conformance_two_gateways(bed, request):
    """The conformance suite (crates/s3hpc-conformance) with the two gateways as one store: every
    request goes to the other gateway than the one before (a new connection each,
    `S3Client::alternating`), so each case's write and the read after it cross nodes. On the
    default setup a read may be served from the reading node's caches for up to the staleness
    window, which the suite (read-after-write at once) does not allow: it needs the coherent
    setup. Three cases change a bucket's configuration (versioning, object lock) and write at
    once; each gateway reads a bucket's configuration at most once a second (docs/SEMANTICS.md,
    as AWS propagates such changes eventually), so those three run through one gateway."""
    exe = REPO / "target" / "debug" / "examples" / "conformance_remote"
    if not exe.exists():
        pytest.fail(f"{exe} missing: cargo build -p s3hpc --examples")
    if not bed.mode.endswith("coherent"):
        pytest.skip("read-after-write across nodes at once needs the coherent setup (docs/DEPLOY.md); "
                    "the races and cross-node reads above cover the default one")
    env = dict(os.environ, S3HPC_ACCESS_KEY=ACCESS_KEY, S3HPC_SECRET_KEY=SECRET_KEY)
    config_cases = ["versioning_suspended", "version_tagging", "object_lock"]
    # MooseFS keeps file times in whole seconds: the fs extension's nanosecond utimes case
    # cannot hold there (a property of the file system, not of the gateways).
    not_here = ["fs_attributes"] if bed.mode.startswith("moosefs") else []
    both = ",".join(g.endpoint for g in bed.gateways)
    for endpoints, cases in ((both, [f"-{c}" for c in config_cases + not_here]),
                             (bed.gateways[0].endpoint, [f"+{c}" for c in config_cases])):
        t0 = time.monotonic()
        r = subprocess.run([str(exe), endpoints, *cases], capture_output=True, text=True, timeout=900, env=env)
        out = r.stdout + r.stderr
        print(f"CONFORMANCE {bed.mode} over {endpoints} {cases}: rc {r.returncode} in {time.monotonic() - t0:.0f}s")
        if r.returncode == 0:
            continue
        # The names of the failed cases ("NAME: why" lines after "N conformance case(s) failed:").
        # (Up to the panic's backtrace, whose "note:" line would read as a case.)
        listed = re.split(r"\n\s*(?:stack backtrace:|note: )", out.split("case(s) failed:", 1)[-1], maxsplit=1)[0]
        failed = sorted({line.split(":", 1)[0].strip() for line in listed.splitlines()
                         if ":" in line and line.split(":", 1)[0].strip().isidentifier()})
        intermittent = CONFORMANCE_INTERMITTENT.get(bed.mode, lambda name: False)
        if failed and all(intermittent(f) for f in failed):
            pytest.xfail(f"intermittent on {bed.mode} (see CONFORMANCE_INTERMITTENT): {failed}; {out[-1500:]}")
        pytest.fail(out[-4000:])


# Conformance cases seen failing in some runs on a setup and not when run alone (20-50 runs
# each); an xfail when only these fail, with the output. Measured after 105e76e. Still open.
CONFORMANCE_INTERMITTENT = {
    # 1 of about 50 runs, through one gateway: GetObjectTagging right after PutObjectTagging of
    # the current version named by its id returned the previous tags.
    "gluster-coherent": lambda name: name == "version_tagging",
    # moosefs-coherent's multipart, append and If-Match cases failed in some runs until the
    # writer pinned the mtime it records (docs/DEPLOY.md; test_slow_write_is_one_object_on_every_node).
}
