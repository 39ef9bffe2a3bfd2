"""Gateway items of the HTTP issue, against the real `s3hpc serve` binary with boto3:
long CompleteMultipartUpload (200 + whitespace keep-alive, result or error in the body) and the
checksum types of multipart uploads (COMPOSITE vs FULL_OBJECT)."""
from __future__ import annotations

import base64
import hashlib
import uuid
import zlib

import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS_KEY, SECRET_KEY, Server, err_code, make_client

PART = 5 * 1024 * 1024


def crc32_raw(b: bytes) -> bytes:
    return zlib.crc32(b).to_bytes(4, "big")


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


@pytest.fixture(scope="module")
def eager_keepalive(tmp_path_factory):
    """A server whose every non-instant complete takes the keep-alive (streamed 200) path."""
    srv = Server(tmp_path_factory.mktemp("karoot"), ["--backend", "posix", "--access-key", ACCESS_KEY,
                                                     "--secret-key", SECRET_KEY, "--complete-keepalive-ms", "0"])
    yield srv
    assert srv.stop() == 0


def test_streamed_complete_result_and_error_reach_boto3(eager_keepalive):
    s3 = make_client(eager_keepalive.endpoint)
    bucket = "ka-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=bucket)
    data = [bytes([i]) * PART for i in range(2)] + [b"tail"]
    up = s3.create_multipart_upload(Bucket=bucket, Key="k")["UploadId"]
    parts = []
    for n, d in enumerate(data, 1):
        e = s3.upload_part(Bucket=bucket, Key="k", UploadId=up, PartNumber=n, Body=d)["ETag"]
        parts.append({"PartNumber": n, "ETag": e})
    out = s3.complete_multipart_upload(Bucket=bucket, Key="k", UploadId=up, MultipartUpload={"Parts": parts})
    want = hashlib.md5(b"".join(hashlib.md5(d).digest() for d in data)).hexdigest() + "-3"
    assert out["ETag"].strip('"') == want
    assert out["Key"] == "k" and out["Bucket"] == bucket
    # It took the streamed path (no Content-Length: the status went out before the result).
    assert out["ResponseMetadata"]["HTTPHeaders"].get("transfer-encoding") == "chunked"
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"".join(data)

    # The error of a streamed complete arrives in a 200 body; boto3 must still raise it.
    up = s3.create_multipart_upload(Bucket=bucket, Key="bad")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="bad", UploadId=up, PartNumber=1, Body=b"x")
    with pytest.raises(ClientError) as ei:
        s3.complete_multipart_upload(Bucket=bucket, Key="bad", UploadId=up, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": '"00000000000000000000000000000000"'}]})
    assert err_code(ei.value) == "InvalidPart"
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="bad")
    s3.abort_multipart_upload(Bucket=bucket, Key="bad", UploadId=up)
    s3.delete_object(Bucket=bucket, Key="k")
    s3.delete_bucket(Bucket=bucket)


def _upload_crc32_parts(s3, bucket, key, up, data):
    parts = []
    for n, d in enumerate(data, 1):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=n, Body=d,
                           ChecksumCRC32=b64(crc32_raw(d)))
        assert r["ChecksumCRC32"] == b64(crc32_raw(d))
        parts.append({"PartNumber": n, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
    return parts


def test_composite_crc32_multipart_checksum(s3, bucket):
    data = [b"a" * PART, b"bcd" * 1000]
    up = s3.create_multipart_upload(Bucket=bucket, Key="comp", ChecksumAlgorithm="CRC32")["UploadId"]
    parts = _upload_crc32_parts(s3, bucket, "comp", up, data)
    out = s3.complete_multipart_upload(Bucket=bucket, Key="comp", UploadId=up, MultipartUpload={"Parts": parts})
    # COMPOSITE: CRC32 of the concatenated raw part CRCs, then -N.
    want = b64(crc32_raw(b"".join(crc32_raw(d) for d in data))) + "-2"
    assert out["ChecksumCRC32"] == want
    h = s3.head_object(Bucket=bucket, Key="comp", ChecksumMode="ENABLED")
    assert h["ChecksumCRC32"] == want
    assert h.get("ChecksumType") == "COMPOSITE"


def test_full_object_crc32_multipart_checksum(s3, bucket):
    data = [b"x" * PART, b"yz" * 777]
    whole = b"".join(data)
    up = s3.create_multipart_upload(Bucket=bucket, Key="full", ChecksumAlgorithm="CRC32",
                                    ChecksumType="FULL_OBJECT")
    assert up.get("ChecksumType") == "FULL_OBJECT" and up.get("ChecksumAlgorithm") == "CRC32"
    up = up["UploadId"]
    parts = _upload_crc32_parts(s3, bucket, "full", up, data)
    lp = s3.list_parts(Bucket=bucket, Key="full", UploadId=up)
    assert lp.get("ChecksumAlgorithm") == "CRC32" and lp.get("ChecksumType") == "FULL_OBJECT"
    [listed] = [u for u in s3.list_multipart_uploads(Bucket=bucket)["Uploads"] if u["UploadId"] == up]
    assert listed.get("ChecksumAlgorithm") == "CRC32" and listed.get("ChecksumType") == "FULL_OBJECT"
    out = s3.complete_multipart_upload(Bucket=bucket, Key="full", UploadId=up, MultipartUpload={"Parts": parts},
                                       ChecksumType="FULL_OBJECT", ChecksumCRC32=b64(crc32_raw(whole)))
    # AWS: the CRC32 of the whole object, no -N suffix, type FULL_OBJECT.
    assert out["ChecksumCRC32"] == b64(crc32_raw(whole))
    assert out.get("ChecksumType") == "FULL_OBJECT"
    h = s3.head_object(Bucket=bucket, Key="full", ChecksumMode="ENABLED")
    assert h["ChecksumCRC32"] == b64(crc32_raw(whole)) and h.get("ChecksumType") == "FULL_OBJECT"
    a = s3.get_object_attributes(Bucket=bucket, Key="full", ObjectAttributes=["Checksum", "ObjectParts"])
    assert a["Checksum"] == {"ChecksumCRC32": b64(crc32_raw(whole)), "ChecksumType": "FULL_OBJECT"}
    assert s3.get_object(Bucket=bucket, Key="full")["Body"].read() == whole


# CRC32C and CRC64NVME by table, independent of the server (boto3 needs awscrt for them, and the
# test must not trust the code under test anyway).
def _crc_table(poly: int) -> list[int]:
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        t.append(c)
    return t


_CRC32C = _crc_table(0x82F63B78)
_CRC64NVME = _crc_table(0x9A6C9329AC4BC9B5)


class _Crc:
    """A reflected CRC (init and xorout all ones) fed piece by piece: each byte is hashed once."""

    def __init__(self, table: list[int], width: int, data: bytes = b""):
        self.t, self.width, self.mask = table, width, (1 << (8 * width)) - 1
        self.c = self.mask
        self.update(data)

    def update(self, data: bytes) -> "_Crc":
        c, t = self.c, self.t
        for x in data:
            c = t[(c ^ x) & 0xFF] ^ (c >> 8)
        self.c = c
        return self

    def raw(self) -> bytes:
        return (self.c ^ self.mask).to_bytes(self.width, "big")


def crc32c_raw(b: bytes) -> bytes:
    return _Crc(_CRC32C, 4, b).raw()


def crc64nvme_raw(b: bytes) -> bytes:
    return _Crc(_CRC64NVME, 8, b).raw()


def test_crc_reference_vectors():
    # The catalogued check values of CRC-32C and CRC-64/NVME.
    assert crc32c_raw(b"123456789").hex() == "e3069283"
    assert crc64nvme_raw(b"123456789").hex() == "ae8b14860a799888"


@pytest.mark.parametrize("alg,ctype,table,width", [("CRC32C", "FULL_OBJECT", _CRC32C, 4),
                                                   ("CRC64NVME", None, _CRC64NVME, 8),
                                                   ("CRC64NVME", "FULL_OBJECT", _CRC64NVME, 8)])
def test_full_object_crc32c_crc64nvme_multipart(s3, bucket, alg, ctype, table, width):
    data = [bytes(range(256)) * (PART // 256) + b"!", b"tail" * 99]
    # Part CRCs and the whole object's, each byte hashed once (pure Python is slow).
    running = _Crc(table, width, data[0])
    part_crcs = [running.raw(), _Crc(table, width, data[1]).raw()]
    whole = running.update(data[1]).raw()
    key = f"full-{alg}-{ctype}"
    extra = {"ChecksumType": ctype} if ctype else {}
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm=alg, **extra)
    # CRC64NVME multipart uploads are always FULL_OBJECT.
    assert up.get("ChecksumType") == "FULL_OBJECT"
    up = up["UploadId"]
    field = "Checksum" + alg
    parts = []
    for n, (d, c) in enumerate(zip(data, part_crcs), 1):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=n, Body=d, **{field: b64(c)})
        assert r[field] == b64(c)
        parts.append({"PartNumber": n, "ETag": r["ETag"], field: r[field]})
    out = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up, MultipartUpload={"Parts": parts},
                                       **{field: b64(whole)})
    assert out[field] == b64(whole) and out.get("ChecksumType") == "FULL_OBJECT"
    h = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    assert h[field] == b64(whole) and h.get("ChecksumType") == "FULL_OBJECT"
    assert h["ContentLength"] == sum(map(len, data))


def test_full_object_mismatch_is_bad_digest_and_publishes_nothing(s3, bucket):
    data = [b"m" * PART, b"n" * 10]
    whole = b"".join(data)
    up = s3.create_multipart_upload(Bucket=bucket, Key="mm", ChecksumAlgorithm="CRC32",
                                    ChecksumType="FULL_OBJECT")["UploadId"]
    parts = _upload_crc32_parts(s3, bucket, "mm", up, data)
    with pytest.raises(ClientError) as ei:
        s3.complete_multipart_upload(Bucket=bucket, Key="mm", UploadId=up, MultipartUpload={"Parts": parts},
                                     ChecksumType="FULL_OBJECT", ChecksumCRC32=b64(crc32_raw(whole + b"?")))
    assert err_code(ei.value) == "BadDigest"
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="mm")
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    # The composite value is not the full-object one either; another mode is refused.
    comp = b64(crc32_raw(b"".join(crc32_raw(d) for d in data))) + "-2"
    with pytest.raises(ClientError) as ei:
        s3.complete_multipart_upload(Bucket=bucket, Key="mm", UploadId=up, MultipartUpload={"Parts": parts},
                                     ChecksumCRC32=comp)
    assert err_code(ei.value) == "BadDigest"
    with pytest.raises(ClientError) as ei:
        s3.complete_multipart_upload(Bucket=bucket, Key="mm", UploadId=up, MultipartUpload={"Parts": parts},
                                     ChecksumType="COMPOSITE")
    assert err_code(ei.value) == "InvalidRequest"
    # The upload is intact: the right value completes it.
    assert len(s3.list_parts(Bucket=bucket, Key="mm", UploadId=up)["Parts"]) == 2
    out = s3.complete_multipart_upload(Bucket=bucket, Key="mm", UploadId=up, MultipartUpload={"Parts": parts},
                                       ChecksumCRC32=b64(crc32_raw(whole)))
    assert out["ChecksumCRC32"] == b64(crc32_raw(whole))
    assert s3.get_object(Bucket=bucket, Key="mm")["Body"].read() == whole


@pytest.mark.parametrize("alg,ctype", [("SHA256", "FULL_OBJECT"), ("SHA1", "FULL_OBJECT"),
                                       ("CRC64NVME", "COMPOSITE")])
def test_unsupported_checksum_type_is_refused(s3, bucket, alg, ctype):
    with pytest.raises(ClientError) as ei:
        s3.create_multipart_upload(Bucket=bucket, Key="no", ChecksumAlgorithm=alg, ChecksumType=ctype)
    assert err_code(ei.value) == "InvalidRequest"
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


@pytest.mark.parametrize("first_finishes", ["after_complete", "before_complete"])
def test_part_resent_while_its_first_copy_is_still_uploading(server, bucket, first_finishes):
    """An SDK that times out re-sends a part while the first copy is still arriving: the second
    copy finishes first and the client completes with its ETag. Completing must work whether the
    first copy ends after the Complete (it then fails, the object stays whole) or before it (it
    replaces the part with the same bytes)."""
    import http.client
    import threading
    import time
    from urllib.parse import urlsplit

    from multigw import sigv4_headers

    s3 = make_client(server.endpoint)
    key = f"resent-{first_finishes}"
    up = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    part = bytes(range(256)) * (6 * 1024 * 4)  # 6 MiB
    u = urlsplit(server.endpoint)
    path, query = f"/{bucket}/{key}", [("partNumber", "1"), ("uploadId", up)]
    hdrs = sigv4_headers("PUT", u.netloc, path, query, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    hdrs["content-length"] = str(len(part))
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.putrequest("PUT", f"{path}?partNumber=1&uploadId={up}", skip_host=True, skip_accept_encoding=True)
    for k, v in hdrs.items():
        conn.putheader(k, v)
    conn.endheaders()
    conn.send(part[: len(part) // 2])  # the first copy stalls halfway
    time.sleep(0.2)
    etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1, Body=part)["ETag"]
    first = {}

    def finish_first():
        try:
            conn.send(part[len(part) // 2:])
            r = conn.getresponse()
            first["status"], first["body"] = r.status, r.read()
        except OSError as e:
            first["error"] = e

    if first_finishes == "before_complete":
        finish_first()
        assert first.get("status") == 200, first
    done = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up,
                                        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    if first_finishes == "after_complete":
        t = threading.Thread(target=finish_first)
        t.start()
        t.join(30)
        assert first.get("status") == 404 and b"NoSuchUpload" in first["body"], first
    assert done["ETag"].strip('"').endswith("-1")
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == part
    conn.close()
