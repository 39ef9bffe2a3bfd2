"""Many `s3hpc serve` gateways on ONE shared root behave as one S3 service.

Variants of the `cluster` fixture:
  loopback  three gateways on 127.0.0.1, different ports;
  netns     three gateways in three network-namespace "hosts" made by scripts/netns-hosts
            (10.77.x.11-13), driven from the root namespace. Skipped (with the reason) only if
            namespaces cannot be created here; the loopback variant runs regardless.
Plus nginx and HAProxy (deploy/nginx.conf, deploy/haproxy.cfg) in front of three gateways.
"""
from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import threading
import time
import tomllib
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest
from botocore.exceptions import ClientError

import multigw
from conftest import err_code, err_status
from multigw import Cluster, Gateway, NetnsHosts, NetnsUnavailable, PartialUpload, raw_request

MiB = 1 << 20


@pytest.fixture(scope="module", params=["loopback", "netns"])
def cluster(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"shared-root-{request.param}")
    if request.param == "loopback":
        with Cluster(root, n=3) as c:
            yield c
        return
    try:
        hosts = NetnsHosts(3).__enter__()
    except NetnsUnavailable as e:
        msg = f"network namespaces unavailable ({e}); the multi-gateway tests ran on loopback only"
        warnings.warn(msg)
        pytest.skip(msg)
    try:
        with Cluster(root, n=3, hosts=hosts.hosts) as c:
            print(f"netns hosts: {c.describe()}")
            yield c
    finally:
        hosts.down()


@pytest.fixture
def bucket(cluster):
    name = f"mg-{uuid.uuid4().hex[:12]}"
    cluster.gateways[0].client().create_bucket(Bucket=name)
    return name


def test_bucket_created_on_one_gateway_is_seen_by_all(cluster, bucket):
    for i, c in enumerate(cluster.clients()):
        c.head_bucket(Bucket=bucket)
        names = [b["Name"] for b in c.list_buckets()["Buckets"]]
        assert bucket in names, f"gateway {i} does not list bucket {bucket}"
    # A second create through another gateway sees the first one: the owner's answer in
    # us-east-1 is 200 (as S3 there), and the bucket is the same one.
    cluster.gateways[0].client().put_object(Bucket=bucket, Key="first", Body=b"1")
    cluster.gateways[1].client().create_bucket(Bucket=bucket)
    assert cluster.gateways[1].client().get_object(Bucket=bucket, Key="first")["Body"].read() == b"1"
    cluster.gateways[0].client().delete_object(Bucket=bucket, Key="first")


def test_read_after_write_overwrite_delete_across_gateways(cluster, bucket):
    cls = cluster.clients()
    n = len(cls)
    for rnd in range(3):
        key = f"raw/obj-{rnd}"
        for w in range(n):
            # Write through gateway w, then read through every gateway at once (no sleeps).
            body = os.urandom(1000 + 4096 * w + rnd)
            put = cls[w].put_object(Bucket=bucket, Key=key, Body=body, Metadata={"writer": str(w)})
            for r in range(n):
                got = cls[r].get_object(Bucket=bucket, Key=key)
                assert got["Body"].read() == body, f"gw{r} read stale/partial body after put via gw{w}"
                assert got["ETag"] == put["ETag"], f"gw{r} ETag {got['ETag']} != put's {put['ETag']}"
                assert got["Metadata"].get("writer") == str(w)
                head = cls[(r + 1) % n].head_object(Bucket=bucket, Key=key)
                assert head["ContentLength"] == len(body) and head["ETag"] == put["ETag"]
        # Delete through one gateway: gone through all of them at once.
        cls[rnd % n].delete_object(Bucket=bucket, Key=key)
        for r in range(n):
            with pytest.raises(ClientError) as ei:
                cls[r].get_object(Bucket=bucket, Key=key)
            assert err_code(ei.value) == "NoSuchKey", f"gw{r} still serves {key} after delete"
            listed = cls[r].list_objects_v2(Bucket=bucket, Prefix=key).get("Contents", [])
            assert listed == [], f"gw{r} still lists {key} after delete"


def test_listings_agree_across_gateways(cluster, bucket):
    cls = cluster.clients()
    keys = sorted([f"a/{i:02d}" for i in range(9)] + [f"b/c/{i}" for i in range(5)]
                  + [f"top{i}" for i in range(7)] + ["a/", "z.dot", "sp ace", "ü-ni", "plus+%25"])
    with ThreadPoolExecutor(6) as ex:
        list(ex.map(lambda ik: cls[ik[0] % len(cls)].put_object(Bucket=bucket, Key=ik[1], Body=ik[1].encode()),
                    enumerate(keys)))

    def pages(c, **kw):
        out, token = [], None
        while True:
            args = dict(Bucket=bucket, MaxKeys=4, **kw)
            if token:
                args["ContinuationToken"] = token
            r = c.list_objects_v2(**args)
            out.append(([o["Key"] for o in r.get("Contents", [])],
                        [p["Prefix"] for p in r.get("CommonPrefixes", [])],
                        [(o["Key"], o["ETag"], o["Size"]) for o in r.get("Contents", [])]))
            if not r["IsTruncated"]:
                return out
            token = r["NextContinuationToken"]

    for kw in ({}, {"Delimiter": "/"}, {"Prefix": "a/"}, {"Prefix": "b/", "Delimiter": "/"}):
        results = [pages(c, **kw) for c in cls]
        for i, res in enumerate(results[1:], 1):
            assert res == results[0], f"gw{i} pages differ from gw0 for {kw}"
    flat = [k for p in pages(cls[0]) for k in p[0]]
    assert flat == keys

    # Pagination hopping between gateways (a load balancer sends each page anywhere): a
    # continuation token from one gateway must work on the next one.
    got, token, hop = [], None, 0
    while True:
        args = dict(Bucket=bucket, MaxKeys=3)
        if token:
            args["ContinuationToken"] = token
        r = cls[hop % len(cls)].list_objects_v2(**args)
        hop += 1
        got += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    assert got == keys and hop > 3

    # ListObjects v1 with markers, hopping too.
    got, marker, hop = [], "", 0
    while True:
        r = cls[hop % len(cls)].list_objects(Bucket=bucket, MaxKeys=5, Marker=marker)
        hop += 1
        ks = [o["Key"] for o in r.get("Contents", [])]
        got += ks
        if not r["IsTruncated"]:
            break
        marker = r.get("NextMarker") or ks[-1]
    assert got == keys


def test_list_right_after_write_on_another_gateway(cluster, bucket):
    """Tight put/list/delete/list alternation between two gateways: a gateway's listing must show
    the other gateway's change at once, even when both land within one file-system timestamp tick
    (a directory-listing cache keyed on the directory's mtime would miss it)."""
    cls = cluster.clients()
    misses = []
    expect: list[str] = []
    for i in range(60):
        w, r = cls[i % 2], cls[1 + i % 2]
        key = f"d/k{i:03d}"
        w.put_object(Bucket=bucket, Key=key, Body=b"x")
        expect.append(key)
        got = [o["Key"] for o in r.list_objects_v2(Bucket=bucket, Prefix="d/").get("Contents", [])]
        if got != expect:
            misses.append(("after put", key, sorted(set(expect) ^ set(got))))
        if i % 3 == 2:
            gone = expect.pop(0)
            w.delete_object(Bucket=bucket, Key=gone)
            got = [o["Key"] for o in r.list_objects_v2(Bucket=bucket, Prefix="d/").get("Contents", [])]
            if got != expect:
                misses.append(("after delete", gone, sorted(set(expect) ^ set(got))))
    assert not misses, f"{len(misses)} stale listings, e.g. {misses[:3]}"


@pytest.fixture
def coarse_fs(tmp_path):
    """A loop-mounted ext4 with 128-byte inodes: 1-second timestamps, like ext3, older NFS servers
    and the coarse clocks of many parallel file systems."""
    if os.geteuid() != 0:
        pytest.skip("mounting a loop file system needs root")
    img, mnt = tmp_path / "coarse.img", tmp_path / "mnt"
    mnt.mkdir()
    with open(img, "wb") as f:
        f.truncate(64 * MiB)
    r = subprocess.run(["mkfs.ext4", "-q", "-F", "-I", "128", str(img)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"mkfs.ext4 unavailable: {r.stderr.strip()}")
    r = subprocess.run(["mount", "-o", "loop", str(img), str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot loop-mount here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_listing_not_stale_on_coarse_timestamp_fs(coarse_fs):
    """A large directory (>= 256 entries: the listing cache threshold) on a file system with
    1-second timestamps: a key added by one gateway in the same second as an earlier listing must
    still appear in the next listing through any gateway."""
    root = coarse_fs / "root"
    root.mkdir()
    with Cluster(root, n=2) as c:
        a, b = c.clients()
        a.create_bucket(Bucket="coarse")
        with ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda i: a.put_object(Bucket="coarse", Key=f"d/base{i:03d}", Body=b"x"), range(300)))

        def keys(cl):
            out, tok = [], None
            while True:
                kw = {"ContinuationToken": tok} if tok else {}
                r = cl.list_objects_v2(Bucket="coarse", Prefix="d/", **kw)
                out += [o["Key"] for o in r.get("Contents", [])]
                if not r["IsTruncated"]:
                    return out
                tok = r["NextContinuationToken"]

        stale = []
        for i in range(3):
            time.sleep(1.05 - time.time() % 1)         # start of a second
            a.put_object(Bucket="coarse", Key=f"d/new{i}a", Body=b"x")
            time.sleep(0.3)
            keys(b)                                     # both gateways list: may cache
            keys(a)
            a.put_object(Bucket="coarse", Key=f"d/new{i}b", Body=b"x")   # same second
            for name, cl in (("gw0 (writer)", a), ("gw1", b)):
                if f"d/new{i}b" not in keys(cl):
                    stale.append(f"round {i}: {name} lists no d/new{i}b")
        assert not stale, stale


def test_multipart_parts_through_different_gateways(cluster, bucket):
    cls = cluster.clients()
    key = "mpu/big.bin"
    parts_data = [os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(MiB + 17)]
    up = cls[0].create_multipart_upload(Bucket=bucket, Key=key, Metadata={"via": "gw0"})["UploadId"]
    # The upload is visible from the others before any part arrives.
    for c in cls[1:]:
        ups = c.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
        assert (key, up) in [(u["Key"], u["UploadId"]) for u in ups]
    etags = []
    for pn, data in enumerate(parts_data, 1):
        via = cls[pn % 2]                 # parts through gw1, gw0, gw1
        etags.append(via.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=pn, Body=data)["ETag"])
    lp = cls[2].list_parts(Bucket=bucket, Key=key, UploadId=up)
    assert [(p["PartNumber"], p["ETag"], p["Size"]) for p in lp["Parts"]] == \
        [(i + 1, e, len(d)) for i, (e, d) in enumerate(zip(etags, parts_data))]
    # Not visible as an object before completion.
    with pytest.raises(ClientError):
        cls[1].head_object(Bucket=bucket, Key=key)
    done = cls[2].complete_multipart_upload(   # completed through the third gateway
        Bucket=bucket, Key=key, UploadId=up,
        MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    assert done["ETag"].strip('"').endswith("-3")
    whole = b"".join(parts_data)
    for i, c in enumerate(cls):
        g = c.get_object(Bucket=bucket, Key=key)
        assert g["ETag"] == done["ETag"] and g["Metadata"].get("via") == "gw0"
        assert hashlib.md5(g["Body"].read()).digest() == hashlib.md5(whole).digest(), f"gw{i} body differs"
        assert up not in [u["UploadId"] for u in c.list_multipart_uploads(Bucket=bucket).get("Uploads", [])]
        # Ranged read of a part boundary through each gateway.
        rg = c.get_object(Bucket=bucket, Key=key, Range=f"bytes={5 * MiB - 10}-{5 * MiB + 9}")
        assert rg["Body"].read() == whole[5 * MiB - 10:5 * MiB + 10]


def test_multipart_parallel_parts_and_abort_across_gateways(cluster, bucket):
    cls = cluster.clients()
    n = len(cls)
    key = "mpu/parallel"
    up = cls[1].create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    datas = {pn: bytes([pn]) * (5 * MiB if pn < 6 else 1234) for pn in range(1, 7)}

    def put_part(pn):
        return pn, cls[pn % n].upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=pn,
                                           Body=datas[pn])["ETag"]

    with ThreadPoolExecutor(6) as ex:
        etags = dict(ex.map(put_part, datas))
    cls[0].complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": pn, "ETag": etags[pn]} for pn in sorted(etags)]})
    whole = b"".join(datas[pn] for pn in sorted(datas))
    for c in cls:
        assert c.get_object(Bucket=bucket, Key=key)["Body"].read() == whole

    # Abort through one gateway: the others reject further parts and do not list it.
    up2 = cls[0].create_multipart_upload(Bucket=bucket, Key="mpu/aborted")["UploadId"]
    cls[1].upload_part(Bucket=bucket, Key="mpu/aborted", UploadId=up2, PartNumber=1, Body=b"x" * 100)
    cls[2].abort_multipart_upload(Bucket=bucket, Key="mpu/aborted", UploadId=up2)
    with pytest.raises(ClientError) as ei:
        cls[0].upload_part(Bucket=bucket, Key="mpu/aborted", UploadId=up2, PartNumber=2, Body=b"y")
    assert err_code(ei.value) == "NoSuchUpload"
    with pytest.raises(ClientError) as ei:
        cls[1].complete_multipart_upload(Bucket=bucket, Key="mpu/aborted", UploadId=up2,
                                         MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"x"'}]})
    assert err_code(ei.value) == "NoSuchUpload"
    for c in cls:
        assert up2 not in [u["UploadId"] for u in c.list_multipart_uploads(Bucket=bucket).get("Uploads", [])]
        with pytest.raises(ClientError):
            c.head_object(Bucket=bucket, Key="mpu/aborted")


def test_concurrent_completes_and_creates_across_gateways(cluster, bucket):
    """Completing one upload through every gateway at once: every completion gets the same 200
    (as on AWS; the later ones answer from the first one's record on the shared root), and the
    object is whole; a retry through any gateway answers the same. If-None-Match: * creates of
    one key through every gateway at once: exactly one succeeds (412 for the rest)."""
    cls = cluster.clients()
    n = len(cls)
    for rnd in range(3):
        key = f"race/mpu{rnd}"
        up = cls[0].create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        parts = [bytes([rnd + 1]) * (5 * MiB), bytes([rnd + 101]) * 999]
        etags = [cls[i % n].upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=i + 1, Body=p)["ETag"]
                 for i, p in enumerate(parts)]
        spec = {"Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]}
        barrier = threading.Barrier(n)

        def complete(i):
            barrier.wait()
            try:
                return cls[i].complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up,
                                                        MultipartUpload=spec)["ETag"]
            except ClientError as e:
                return err_code(e)

        with ThreadPoolExecutor(n) as ex:
            res = list(ex.map(complete, range(n)))
        ok = [r for r in res if r.startswith('"')]
        assert len(ok) == n and len(set(ok)) == 1, res
        for c in cls:
            again = c.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up, MultipartUpload=spec)
            assert again["ETag"] == ok[0]
        for c in cls:
            g = c.get_object(Bucket=bucket, Key=key)
            assert g["ETag"] == ok[0] and g["Body"].read() == b"".join(parts)

        ckey = f"race/create{rnd}"
        barrier2 = threading.Barrier(n)

        def create(i):
            barrier2.wait()
            try:
                cls[i].put_object(Bucket=bucket, Key=ckey, Body=bytes([i + 1]) * 100_000, IfNoneMatch="*")
                return i
            except ClientError as e:
                return err_code(e)

        with ThreadPoolExecutor(n) as ex:
            res = list(ex.map(create, range(n)))
        winners = [r for r in res if isinstance(r, int)]
        assert len(winners) == 1, f"If-None-Match:* creates through {n} gateways: {res}"
        assert all(r in ("PreconditionFailed", "ConditionalRequestConflict") for r in res if not isinstance(r, int))
        for c in cls:
            assert c.get_object(Bucket=bucket, Key=ckey)["Body"].read() == bytes([winners[0] + 1]) * 100_000


@pytest.mark.parametrize("cluster", ["loopback"], indirect=True)
def test_renames_with_one_client_token_across_gateways(cluster, bucket):
    """RenameObject with one x-amz-client-token through every gateway at once (a retry racing
    the first attempt, as SDKs send it): all get 200, the object moved once; a later retry
    through any gateway answers 200 too (the token's record is on the shared root)."""
    cls = cluster.clients()
    n = len(cls)
    for rnd in range(3):
        src, dst, token = f"ren/src{rnd}", f"ren/dst{rnd}", f"tok-{uuid.uuid4().hex}"
        cls[0].put_object(Bucket=bucket, Key=src, Body=f"round {rnd}".encode())
        barrier = threading.Barrier(n)

        def rename(i):
            barrier.wait()
            try:
                cls[i].rename_object(Bucket=bucket, Key=dst, RenameSource=f"{bucket}/{src}", ClientToken=token)
                return "ok"
            except ClientError as e:
                return err_code(e)

        with ThreadPoolExecutor(n) as ex:
            res = list(ex.map(rename, range(n)))
        assert res == ["ok"] * n, res
        for c in cls:
            c.rename_object(Bucket=bucket, Key=dst, RenameSource=f"{bucket}/{src}", ClientToken=token)
            assert c.get_object(Bucket=bucket, Key=dst)["Body"].read() == f"round {rnd}".encode()
            with pytest.raises(ClientError) as ei:
                c.head_object(Bucket=bucket, Key=src)
            assert err_status(ei.value) == 404


@pytest.mark.parametrize("cluster", ["loopback"], indirect=True)   # tightest timing: most collisions
def test_concurrent_if_match_puts_across_gateways_have_one_winner(cluster, bucket):
    """Optimistic concurrency across gateways: of concurrent PUTs with If-Match: <current ETag>,
    through different gateways, at most one may succeed (AWS: 412 or 409 for the others).
    Up to 200 rounds of 3 simultaneous PUTs; stops at the first round with several winners (the
    race was hit within 6-33 rounds in 5 runs here, so a fixed backend passes all 200 and XPASSes)."""
    cls = cluster.clients()
    n = len(cls)
    etag = cls[0].put_object(Bucket=bucket, Key="cas", Body=b"v0")["ETag"]
    for rnd in range(200):
        barrier = threading.Barrier(n)

        def put(i):
            barrier.wait()
            try:
                return cls[i].put_object(Bucket=bucket, Key="cas", Body=f"r{rnd}g{i}".encode() * 1000,
                                         IfMatch=etag)["ETag"]
            except ClientError as e:
                return err_code(e)

        with ThreadPoolExecutor(n) as ex:
            res = list(ex.map(put, range(n)))
        ok = [r for r in res if r.startswith('"')]
        assert all(r in ("PreconditionFailed", "ConditionalRequestConflict") for r in res if r not in ok), res
        assert len(ok) <= 1, f"round {rnd}: {len(ok)} If-Match PUTs with the same ETag succeeded: {res}"
        etag = cls[0].head_object(Bucket=bucket, Key="cas")["ETag"]


def test_concurrent_puts_to_one_key_have_one_whole_winner(cluster, bucket):
    """Writers on every gateway overwrite one key with bodies of one repeated byte; readers on every
    gateway must only ever see a whole body of one value, with the ETag its put returned."""
    cls = cluster.clients()
    n = len(cls)
    key = "contended"
    size = 1 * MiB + 3
    rounds = 5
    cls[0].put_object(Bucket=bucket, Key=key, Body=bytes([0]) * size)
    put_etag = {0: cls[0].head_object(Bucket=bucket, Key=key)["ETag"]}
    etag_lock = threading.Lock()
    done = threading.Event()
    problems: list[str] = []
    reads = [0] * n
    seen: list[tuple[int, int, str]] = []   # (reader gateway, value, ETag served with it)
    last_value = {}

    def writer(w):
        c = multigw.s3_client(cluster.gateways[w].endpoint)
        try:
            for r in range(rounds):
                v = 1 + w * rounds + r
                e = c.put_object(Bucket=bucket, Key=key, Body=bytes([v]) * size)["ETag"]
                with etag_lock:
                    put_etag[v] = e
                last_value[w] = v
        except Exception as ex:  # noqa: BLE001
            problems.append(f"writer gw{w}: {ex!r}")

    def reader(r):
        c = multigw.s3_client(cluster.gateways[r].endpoint)
        while not done.is_set():
            try:
                g = c.get_object(Bucket=bucket, Key=key)
                body = g["Body"].read()
            except Exception as ex:  # noqa: BLE001
                problems.append(f"reader gw{r}: {ex!r}")
                return
            reads[r] += 1
            if len(body) != size or body.count(body[:1]) != len(body) or g["ContentLength"] != size:
                problems.append(f"reader gw{r}: mixed/partial body: len {len(body)} (Content-Length "
                                f"{g['ContentLength']}) values {sorted(set(body))[:8]}")
                return
            seen.append((r, body[0], g["ETag"]))

    readers = [threading.Thread(target=reader, args=(r,)) for r in range(n)]
    writers = [threading.Thread(target=writer, args=(w,)) for w in range(n)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    for t in readers:
        t.join()
    assert not problems, problems[:5]
    assert min(reads) > 0, f"a reader never completed a read: {reads}"
    # The ETag served with a body is the one its put returned (metadata and data of one version).
    wrong = [(r, v, e, put_etag.get(v)) for r, v, e in seen if e != put_etag.get(v)]
    assert not wrong, f"{len(wrong)} reads served an ETag of another version, e.g. {wrong[:3]}"
    finals = []
    for c in cls:
        g = c.get_object(Bucket=bucket, Key=key)
        body = g["Body"].read()
        assert len(body) == size and body.count(body[:1]) == size
        finals.append((body[0], g["ETag"]))
    assert len(set(finals)) == 1, f"gateways disagree on the winner: {finals}"
    v, etag = finals[0]
    # Each writer's puts are sequential, so the winner is the last put of some writer.
    assert v in last_value.values(), f"winner {v} is not any writer's last put {last_value}"
    assert etag == put_etag[v]
    assert len(cls[1].list_objects_v2(Bucket=bucket, Prefix=key)["Contents"]) == 1


@pytest.fixture
def own_cluster(request, tmp_path_factory, cluster):
    """A fresh cluster of the same kind as `cluster` (its gateways get killed)."""
    root = tmp_path_factory.mktemp("kill-root")
    with Cluster(root, n=3, hosts=cluster.hosts) as c:
        yield c


def _bucket_files(root, bucket):
    return sorted(p.relative_to(root / bucket).as_posix() for p in (root / bucket).rglob("*") if p.is_file())


def test_gateway_killed_mid_upload_leaves_no_partial_object(own_cluster):
    c = own_cluster
    g0, g1, g2 = c.gateways
    cl1, cl2 = g1.client(), g2.client()
    bucket = "killtest"
    cl1.create_bucket(Bucket=bucket)
    old = os.urandom(300_000)
    cl1.put_object(Bucket=bucket, Key="overwritten", Body=old)
    size = 64 * MiB
    chunk = os.urandom(MiB)

    # Two uploads through gw0, half-sent: a new key and an overwrite of an existing one.
    ups = [PartialUpload(g0.addr, bucket, k, size) for k in ("fresh/large.bin", "overwritten")]
    try:
        for _ in range(20):
            for u in ups:
                u.send(chunk)
        # gw0 streams into temp files on the shared root (the gateways' staging area): wait until
        # the partial data is really there, so the kill below lands mid-upload.
        def staged():
            return sum(p.stat().st_size for p in (c.root / ".s3hpc" / "staging" / "tmp").rglob("*")
                       if p.is_file())
        deadline = time.monotonic() + 10
        while staged() < 20 * MiB and time.monotonic() < deadline:
            time.sleep(0.05)
        assert staged() >= 20 * MiB, f"gw0 staged only {staged()} bytes of the two half-sent uploads"
        # Mid-upload: nothing partial is visible through the other gateways.
        for cl in (cl1, cl2):
            with pytest.raises(ClientError) as ei:
                cl.head_object(Bucket=bucket, Key="fresh/large.bin")
            assert err_status(ei.value) == 404
            assert cl.get_object(Bucket=bucket, Key="overwritten")["Body"].read() == old
        g0.kill(signal.SIGKILL)
        assert g0.proc.returncode == -signal.SIGKILL
    finally:
        for u in ups:
            u.close()

    for cl in (cl1, cl2):
        with pytest.raises(ClientError) as ei:
            cl.head_object(Bucket=bucket, Key="fresh/large.bin")
        assert err_status(ei.value) == 404, "partial object visible after the gateway died"
        g = cl.get_object(Bucket=bucket, Key="overwritten")
        assert g["Body"].read() == old and g["ContentLength"] == len(old)
        keys = [o["Key"] for o in cl.list_objects_v2(Bucket=bucket).get("Contents", [])]
        assert keys == ["overwritten"], keys
    # POSIX view: no file at the key's path (temporary files may remain under the internal dir).
    files = _bucket_files(c.root, bucket)
    assert "fresh/large.bin" not in files, files

    # Retry through another gateway succeeds, and everyone sees the whole new object.
    full = chunk * (size // MiB)
    cl2.put_object(Bucket=bucket, Key="fresh/large.bin", Body=full)
    new = os.urandom(777_777)
    cl1.put_object(Bucket=bucket, Key="overwritten", Body=new)
    for cl in (cl1, cl2):
        assert hashlib.md5(cl.get_object(Bucket=bucket, Key="fresh/large.bin")["Body"].read()).digest() == \
            hashlib.md5(full).digest()
        assert cl.get_object(Bucket=bucket, Key="overwritten")["Body"].read() == new

    # A killed multipart part upload: the upload survives, the part can be re-sent elsewhere.
    up = cl1.create_multipart_upload(Bucket=bucket, Key="mpu-after-kill")["UploadId"]
    e1 = cl2.upload_part(Bucket=bucket, Key="mpu-after-kill", UploadId=up, PartNumber=1, Body=chunk * 5)["ETag"]
    g1.kill(signal.SIGKILL)
    e2 = cl2.upload_part(Bucket=bucket, Key="mpu-after-kill", UploadId=up, PartNumber=2, Body=b"tail")["ETag"]
    cl2.complete_multipart_upload(Bucket=bucket, Key="mpu-after-kill", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    assert cl2.get_object(Bucket=bucket, Key="mpu-after-kill")["Body"].read() == chunk * 5 + b"tail"


def test_shared_credentials_and_signature_for_another_host(cluster, bucket):
    gws = cluster.gateways
    # Same keys everywhere: a wrong secret is refused by every gateway, the right one accepted.
    for g in gws:
        bad = multigw.s3_client(g.endpoint, secret_key="not-the-secret")
        with pytest.raises(ClientError) as ei:
            bad.put_object(Bucket=bucket, Key="nope", Body=b"x")
        assert err_status(ei.value) == 403 and err_code(ei.value) == "SignatureDoesNotMatch"
        unknown = multigw.s3_client(g.endpoint, access_key="UNKNOWNKEY", secret_key="x")
        with pytest.raises(ClientError) as ei:
            unknown.list_objects_v2(Bucket=bucket)
        assert err_status(ei.value) == 403 and err_code(ei.value) == "InvalidAccessKeyId"
    # What a load balancer does: a request signed for one Host (here gw0's address) is sent to a
    # different gateway with that Host header. Any gateway with the shared secret accepts it.
    s, _, _ = raw_request(gws[1].addr, "PUT", f"/{bucket}/lb-signed", b"hello", host_header=gws[0].addr)
    assert s == 200
    s, _, body = raw_request(gws[2].addr, "GET", f"/{bucket}/lb-signed", host_header="s3.example.org:9000")
    assert s == 200 and body == b"hello"
    # ...but a signature does not survive a changed Host (SigV4 signs it): proxies must keep it.
    host, port = gws[2].addr.rsplit(":", 1)
    hdrs = multigw.sigv4_headers("GET", "s3.example.org:9000", f"/{bucket}/lb-signed")
    hdrs["host"] = "s3.example.org"
    import http.client
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.putrequest("GET", f"/{bucket}/lb-signed", skip_host=True, skip_accept_encoding=True)
    for k, v in hdrs.items():
        conn.putheader(k, v)
    conn.endheaders()
    assert conn.getresponse().status == 403
    conn.close()


def test_generated_credentials_agree_when_gateways_start_together(tmp_path):
    """Gateways started at the same moment on a fresh root without --access-key/--secret-key:
    the root key they generate and store in ROOT/.s3hpc/credentials.toml must be one key that
    every gateway accepts (else a load balancer in front of them fails requests at random)."""
    for attempt in range(4):
        root = tmp_path / f"root{attempt}"
        gws = [Gateway(root, access_key=None, name=f"gen{i}") for i in range(4)]
        try:
            for g in gws:
                g.launch()
            for g in gws:
                g.wait_ready()
            users = tomllib.loads((root / ".s3hpc" / "credentials.toml").read_text())["users"]
            assert len(users) == 1, users
            ak, sk = users[0]["access_key"], users[0]["secret_key"]
            refused = []
            for g in gws:
                try:
                    multigw.s3_client(g.endpoint, access_key=ak, secret_key=sk).list_buckets()
                except ClientError as e:
                    printed = [ln.strip() for ln in g.output if "access key" in ln]
                    refused.append(f"{g.name} refused the stored key ({err_code(e)}); it printed {printed}")
            assert not refused, f"attempt {attempt}: {refused}"
        finally:
            for g in gws:
                g.stop()


# ---------------------------------------------------------------------------------------------
# Standard load balancers in front of the gateways (loopback only).

@pytest.fixture(scope="module")
def lb_cluster(tmp_path_factory):
    with Cluster(tmp_path_factory.mktemp("lb-root"), n=3) as c:
        yield c


def _drive_through_proxy(proxy_addr, lb_cluster, bucket):
    """put/get/list/multipart/delete through the proxy; returns the set of upstreams seen."""
    cl = multigw.s3_client(f"http://{proxy_addr}")
    seen = set()

    def up(resp):
        seen.add(resp["ResponseMetadata"]["HTTPHeaders"].get("x-s3hpc-upstream"))
        return resp

    up(cl.create_bucket(Bucket=bucket))
    objs = {f"k/{i}": os.urandom(random.randint(0, 200_000)) for i in range(12)}
    objs["k/empty"] = b""
    objs["k/sp ace+plus%pct"] = b"odd key"
    for k, v in objs.items():
        up(cl.put_object(Bucket=bucket, Key=k, Body=v, Metadata={"my_meta": "1"}))
    for k, v in objs.items():
        g = up(cl.get_object(Bucket=bucket, Key=k))
        assert g["Body"].read() == v, k
    big = os.urandom(12 * MiB)     # streamed through the proxy (no request buffering)
    up(cl.put_object(Bucket=bucket, Key="big", Body=big))
    assert hashlib.md5(up(cl.get_object(Bucket=bucket, Key="big"))["Body"].read()).digest() == \
        hashlib.md5(big).digest()
    # Listing with pagination through the proxy (each page may hit another gateway).
    keys, token = [], None
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = up(cl.list_objects_v2(Bucket=bucket, Prefix="k/", MaxKeys=5, **kw))
        keys += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    assert keys == sorted(objs)
    # Multipart through the proxy, and the same data read directly from every gateway.
    mid = up(cl.create_multipart_upload(Bucket=bucket, Key="mp"))["UploadId"]
    parts = [os.urandom(5 * MiB), os.urandom(100)]
    etags = [up(cl.upload_part(Bucket=bucket, Key="mp", UploadId=mid, PartNumber=i + 1, Body=p))["ETag"]
             for i, p in enumerate(parts)]
    up(cl.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=mid, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]}))
    for c in lb_cluster.clients():
        assert c.get_object(Bucket=bucket, Key="mp")["Body"].read() == b"".join(parts)
        assert c.get_object(Bucket=bucket, Key="k/sp ace+plus%pct")["Body"].read() == b"odd key"
    # High-level transfer manager (threads, parallel multipart) through the proxy.
    from boto3.s3.transfer import TransferConfig
    import io
    data = os.urandom(21 * MiB)
    cl.upload_fileobj(io.BytesIO(data), bucket, "tm", Config=TransferConfig(
        multipart_threshold=8 * MiB, multipart_chunksize=8 * MiB, max_concurrency=4))
    out = io.BytesIO()
    cl.download_fileobj(bucket, "tm", out)
    assert out.getvalue() == data
    for k in objs:
        up(cl.delete_object(Bucket=bucket, Key=k))
    assert "Contents" not in up(cl.list_objects_v2(Bucket=bucket, Prefix="k/"))
    seen.discard(None)
    return seen


def test_nginx_load_balancer(lb_cluster, tmp_path):
    """deploy/nginx.conf, run for real on loopback in front of three gateways."""
    addrs = [g.addr for g in lb_cluster.gateways]
    with multigw.run_nginx(addrs, tmp_path) as proxy:
        seen = _drive_through_proxy(proxy, lb_cluster, "via-nginx")
    assert len(seen) >= 2 and seen <= set(addrs), f"nginx used upstreams {seen}, gateways {addrs}"
    log = (tmp_path / "access.log").read_text()
    assert "upstream=" in log and " 403 " not in log, log[-2000:]


def test_haproxy_load_balancer(lb_cluster, tmp_path):
    """deploy/haproxy.cfg, run for real on loopback in front of three gateways."""
    addrs = [g.addr for g in lb_cluster.gateways]
    with multigw.run_haproxy(addrs, tmp_path) as proxy:
        seen = _drive_through_proxy(proxy, lb_cluster, "via-haproxy")
    assert len(seen) >= 2 and seen <= {"gw1", "gw2", "gw3"}, f"haproxy used servers {seen}"


def test_netns_hosts_script_round_trip():
    """scripts/netns-hosts up/list/down leaves nothing behind (root only; loopback tests cover the rest)."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root; the multi-gateway tests ran on loopback only")
    h = NetnsHosts(2)
    try:
        h.__enter__()
    except NetnsUnavailable as e:
        pytest.skip(f"network namespaces unavailable ({e}); the multi-gateway tests ran on loopback only")
    try:
        listed = subprocess.run([str(multigw.NETNS_SCRIPT), "list", "--tag", h.tag], capture_output=True,
                                text=True, check=True).stdout.split("\n")
        assert [tuple(x.split()) for x in listed if x] == h.hosts
        # Each host has its own stack: a listener in host 2 is reachable from the root namespace
        # at host 2's address only.
        ns2, addr2 = h.hosts[1]
        srv = subprocess.Popen(["ip", "netns", "exec", ns2, "python3", "-c",
                                "import socket,sys;s=socket.socket();s.bind((sys.argv[1],0));s.listen();"
                                "print(s.getsockname()[1],flush=True);c,_=s.accept();c.sendall(b'hi')", addr2],
                               stdout=subprocess.PIPE, text=True)
        try:
            port = int(srv.stdout.readline())
            import socket
            with socket.create_connection((addr2, port), timeout=5) as s:
                assert s.recv(2) == b"hi"
            srv.wait(5)
        finally:
            if srv.poll() is None:
                srv.kill()
                srv.wait()
    finally:
        h.down()
    assert h.tag not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"{h.tag}br" not in subprocess.run(["ip", "link", "show"], capture_output=True, text=True).stdout
