"""RenameObject and append (PutObject with x-amz-write-offset-bytes) through boto3 and raw signed
requests, against the real gateway over the posix backend."""
from __future__ import annotations

import hashlib
import http.client
import threading
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from botocore.exceptions import ClientError

from conftest import err_code, err_status, raw_request, sign_headers


def has_rename(s3) -> bool:
    return hasattr(s3, "rename_object")


def test_rename_object_boto3(s3, server, bucket):
    if not has_rename(s3):
        pytest.skip("this botocore has no rename_object (the raw test below covers the API)")
    s3.put_object(Bucket=bucket, Key="logs/a.txt", Body=b"alpha", ContentType="text/plain", Metadata={"m": "1"})
    etag = s3.head_object(Bucket=bucket, Key="logs/a.txt")["ETag"]
    s3.rename_object(Bucket=bucket, Key="done/a.txt", RenameSource=f"{bucket}/logs/a.txt")
    got = s3.get_object(Bucket=bucket, Key="done/a.txt")
    assert got["Body"].read() == b"alpha"
    assert got["ETag"] == etag
    assert got["ContentType"] == "text/plain" and got["Metadata"] == {"m": "1"}
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="logs/a.txt")
    assert err_status(e.value) == 404
    # One rename(2) on the file system: the file moved, with its record.
    root = Path(server.root)
    assert (root / bucket / "done" / "a.txt").read_bytes() == b"alpha"
    assert not (root / bucket / "logs").exists()
    # Destination exists + If-None-Match: * -> 412, nothing changes.
    s3.put_object(Bucket=bucket, Key="b", Body=b"bravo")
    with pytest.raises(ClientError) as e:
        s3.rename_object(Bucket=bucket, Key="b", RenameSource=f"/{bucket}/done/a.txt", DestinationIfNoneMatch="*")
    assert err_status(e.value) == 412
    assert s3.get_object(Bucket=bucket, Key="b")["Body"].read() == b"bravo"
    # Source conditions.
    with pytest.raises(ClientError) as e:
        s3.rename_object(Bucket=bucket, Key="c", RenameSource=f"{bucket}/done/a.txt",
                         SourceIfMatch='"0123456789abcdef0123456789abcdef"')
    assert err_status(e.value) == 412
    s3.rename_object(Bucket=bucket, Key="b", RenameSource=f"{bucket}/done/a.txt", SourceIfMatch=etag,
                     ClientToken="retry-token-1")
    assert s3.get_object(Bucket=bucket, Key="b")["Body"].read() == b"alpha"
    # Missing source.
    with pytest.raises(ClientError) as e:
        s3.rename_object(Bucket=bucket, Key="z", RenameSource=f"{bucket}/nope")
    assert err_code(e.value) == "NoSuchKey"


def test_rename_object_raw(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="src key", Body=b"data")
    st, _, body = raw_request(server, "PUT", f"/{bucket}/dst?renameObject",
                              headers={"x-amz-rename-source": f"/{bucket}/src%20key"})
    assert st == 200, body
    assert s3.get_object(Bucket=bucket, Key="dst")["Body"].read() == b"data"
    # A source in another bucket is refused.
    st, _, body = raw_request(server, "PUT", f"/{bucket}/x?renameObject",
                              headers={"x-amz-rename-source": "/other-bucket/dst"})
    assert st == 400 and b"<Code>InvalidRequest</Code>" in body
    # No source header.
    st, _, body = raw_request(server, "PUT", f"/{bucket}/x?renameObject")
    assert st == 400 and b"<Code>InvalidArgument</Code>" in body
    # Missing source.
    st, _, body = raw_request(server, "PUT", f"/{bucket}/x?renameObject",
                              headers={"x-amz-rename-source": f"{bucket}/missing"})
    assert st == 404 and b"<Code>NoSuchKey</Code>" in body


def mountpoint_rename(server, bucket, src, dst, **extra):
    """RenameObject in the shape Mountpoint for Amazon S3 1.24 sends it (mountpoint-s3-client
    `rename_object.rs`): `PUT /bucket/dst?renameObject`, `x-amz-rename-source` the bare source
    key as it is (not URL-encoded, UTF-8 on the wire), an `x-amz-client-token` UUID, and its
    optional `If-None-Match` / `If-Match` / `x-amz-rename-source-if-match`. SigV4-signed."""
    path = f"/{bucket}/{quote(dst)}?renameObject"
    hdrs = {"x-amz-rename-source": src, "x-amz-client-token": str(uuid.uuid4()), **extra}
    hdrs = sign_headers("PUT", f"{server.endpoint}{path}", b"", hdrs)
    host, port = server.host_port
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.request("PUT", path, body=b"", headers={k: v.encode() for k, v in hdrs.items()})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def test_rename_source_in_mountpoints_shape_and_every_aws_form(server, s3, bucket):
    body = lambda k: s3.get_object(Bucket=bucket, Key=k)["Body"].read()
    s3.put_object(Bucket=bucket, Key="dir/file.txt", Body=b"one")
    # Mountpoint: the bare key, with its client token and If-None-Match: *.
    st, out = mountpoint_rename(server, bucket, "dir/file.txt", "dir/renamed.txt", **{"If-None-Match": "*"})
    assert st == 200, out
    assert body("dir/renamed.txt") == b"one"
    # Keys with spaces, '+', non-ASCII: sent raw, as Mountpoint does.
    for src, dst in [("a b+c.txt", "d e+f.txt"), ("é/ü ñ.bin", "ö/ß.bin")]:
        s3.put_object(Bucket=bucket, Key=src, Body=src.encode())
        st, out = mountpoint_rename(server, bucket, src, dst)
        assert st == 200, (src, out)
        assert body(dst) == src.encode()
    # Its source condition.
    etag = s3.head_object(Bucket=bucket, Key="ö/ß.bin")["ETag"]
    st, _ = mountpoint_rename(server, bucket, "ö/ß.bin", "x.bin",
                              **{"x-amz-rename-source-if-match": '"00000000000000000000000000000000"'})
    assert st == 412
    st, out = mountpoint_rename(server, bucket, "ö/ß.bin", "x.bin", **{"x-amz-rename-source-if-match": etag})
    assert st == 200, out
    # The other forms AWS takes: /bucket/key and bucket/key, URL-encoded or not.
    chain = [(f"/{bucket}/x.bin", "r0"), (f"{bucket}/r0", "r 1"), (f"/{bucket}/r%201", "r2"),
             (f"{bucket}%2Fr2", "r3"), ("r3", "r 4"), ("r%204", "r5")]
    for src, dst in chain:
        st, _, out = raw_request(server, "PUT", f"/{bucket}/{quote(dst)}?renameObject",
                                 headers={"x-amz-rename-source": src})
        assert st == 200, (src, out)
    assert body("r5") == "é/ü ñ.bin".encode()
    # A bare key whose first segment is the bucket's name: read as that key when only it exists.
    s3.put_object(Bucket=bucket, Key=f"{bucket}/inner", Body=b"inner")
    st, out = mountpoint_rename(server, bucket, f"{bucket}/inner", "outer")
    assert st == 200, out
    assert body("outer") == b"inner"
    # ... and as bucket/key when that key exists.
    s3.put_object(Bucket=bucket, Key="plain", Body=b"plain")
    s3.put_object(Bucket=bucket, Key=f"{bucket}/plain", Body=b"prefixed")
    st, out = mountpoint_rename(server, bucket, f"{bucket}/plain", "moved-plain")
    assert st == 200, out
    assert body("moved-plain") == b"plain" and body(f"{bucket}/plain") == b"prefixed"
    # A missing bare key: 404 NoSuchKey (Mountpoint's ENOENT), another bucket named: 400.
    st, out = mountpoint_rename(server, bucket, "no/such/key", "y")
    assert st == 404 and b"<Code>NoSuchKey</Code>" in out
    st, out = mountpoint_rename(server, bucket, "/other-bucket/k", "y")
    assert st == 400 and b"<Code>InvalidRequest</Code>" in out


def test_rename_prefix_raw_and_boto3(server, s3, bucket):
    """s3hpc's RenameObject of a prefix (source and destination keys end in '/'): one rename(2)
    of the directory on the posix backend, with rename(2)'s rules as S3 errors."""
    for k in ["tree/a", "tree/sub/b", "tree-side"]:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    root = Path(server.root) / bucket
    ino = (root / "tree").stat().st_ino

    def rename(src: str, dst: str, **headers):
        return raw_request(server, "PUT", f"/{bucket}/{dst}?renameObject",
                           headers={"x-amz-rename-source": f"/{bucket}/{src}", **headers})

    st, _, body = rename("tree/", "moved/tree/")
    assert st == 200, body
    assert (root / "moved" / "tree").stat().st_ino == ino, "the directory was copied"
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"])
    assert keys == ["moved/tree/a", "moved/tree/sub/b", "tree-side"]
    assert s3.get_object(Bucket=bucket, Key="moved/tree/sub/b")["Body"].read() == b"tree/sub/b"
    s3.put_object(Bucket=bucket, Key="full/x", Body=b"x")
    st, _, body = rename("moved/tree/", "full/")
    assert st == 409 and b"<Code>PrefixNotEmpty</Code>" in body, body
    st, _, body = rename("moved/", "moved/tree/inside/")
    assert st == 400 and b"<Code>InvalidArgument</Code>" in body, body
    st, _, body = rename("moved/tree/", "other/", **{"If-None-Match": "*"})
    assert st == 400 and b"<Code>InvalidRequest</Code>" in body, body
    st, _, body = rename("moved/tree/", "other")
    assert st == 400 and b"<Code>InvalidRequest</Code>" in body, body
    st, _, body = rename("nothing/", "other/")
    assert st == 404 and b"<Code>NoSuchKey</Code>" in body, body
    assert (root / "moved" / "tree" / "a").read_bytes() == b"tree/a", "a refused rename changed the tree"
    if has_rename(s3):
        s3.rename_object(Bucket=bucket, Key="back/", RenameSource=f"{bucket}/moved/tree/")
        assert (root / "back").stat().st_ino == ino
        assert not (root / "moved").exists(), "the emptied parent of the source stays"
    # Versioned buckets: refused, as renames of objects are.
    vb = bucket + "-v"
    s3.create_bucket(Bucket=vb)
    try:
        s3.put_bucket_versioning(Bucket=vb, VersioningConfiguration={"Status": "Enabled"})
        st, _, body = raw_request(server, "PUT", f"/{vb}/b/?renameObject", headers={"x-amz-rename-source": f"/{vb}/a/"})
        assert st == 400 and b"<Code>InvalidRequest</Code>" in body, body
    finally:
        s3.delete_bucket(Bucket=vb)


def test_append_write_offset(s3, server, bucket):
    s3.put_object(Bucket=bucket, Key="log", Body=b"hello")
    e1 = s3.head_object(Bucket=bucket, Key="log")["ETag"]
    r = s3.put_object(Bucket=bucket, Key="log", Body=b" world", WriteOffsetBytes=5)
    assert r["ETag"] != e1
    assert r["ETag"].strip('"') == hashlib.md5(b"hello world").hexdigest()
    assert s3.get_object(Bucket=bucket, Key="log")["Body"].read() == b"hello world"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="log", Body=b"!", WriteOffsetBytes=5)
    assert err_code(e.value) == "InvalidWriteOffset" and err_status(e.value) == 400
    assert s3.get_object(Bucket=bucket, Key="log")["Body"].read() == b"hello world"
    # Offset 0 on a missing key creates it.
    s3.put_object(Bucket=bucket, Key="new", Body=b"x", WriteOffsetBytes=0)
    assert s3.get_object(Bucket=bucket, Key="new")["Body"].read() == b"x"
    # The bytes land in the file itself.
    assert (Path(server.root) / bucket / "log").read_bytes() == b"hello world"
    # Not a number.
    st, _, body = raw_request(server, "PUT", f"/{bucket}/log", body=b"z",
                              headers={"x-amz-write-offset-bytes": "-1"})
    assert st == 400 and b"<Code>InvalidArgument</Code>" in body


def test_concurrent_appenders_one_wins(s3, server, bucket):
    from conftest import make_client

    s3.put_object(Bucket=bucket, Key="race", Body=b"base")
    results = []

    def go(i):
        c = make_client(server.endpoint)
        try:
            c.put_object(Bucket=bucket, Key="race", Body=bytes([65 + i]) * (1000 + i), WriteOffsetBytes=4)
            results.append(("ok", i))
        except ClientError as e:
            results.append((err_code(e), i))

    ts = [threading.Thread(target=go, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    winners = [i for (r, i) in results if r == "ok"]
    assert len(winners) == 1, results
    assert all(r in ("ok", "InvalidWriteOffset") for (r, _) in results), results
    w = winners[0]
    assert s3.get_object(Bucket=bucket, Key="race")["Body"].read() == b"base" + bytes([65 + w]) * (1000 + w)
