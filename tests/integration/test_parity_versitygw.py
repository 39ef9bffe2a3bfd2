"""AWS parity found with the versitygw integration suite (issue 37, part 2; bench/versitygw_suite.sh).
Each answer is AWS's, as recorded from S3 itself in the versitygw issues named beside it."""
from __future__ import annotations

import hashlib
import re

from conftest import raw_request, sign_headers


def _xml(body: bytes, name: str) -> str | None:
    m = re.search(rf"<{name}>(.*?)</{name}>".encode(), body)
    return m.group(1).decode() if m else None


def _upload(s3, bucket, key):
    return s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]


def test_upload_part_without_upload_id_is_invalid_argument(server, s3, bucket):
    """PUT ?partNumber=1 without uploadId (versitygw issues 1237, 1226: AWS's answer, with the
    odd ArgumentValue): 400 InvalidArgument, not a PutObject."""
    st, _, body = raw_request(server, "PUT", f"/{bucket}/k?partNumber=1", body=b"data")
    assert st == 400, body
    assert _xml(body, "Code") == "InvalidArgument"
    assert _xml(body, "Message") == "This operation does not accept partNumber without uploadId"
    assert _xml(body, "ArgumentName") == "partNumber" and _xml(body, "ArgumentValue") == "partNumber"
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket)
    # UploadPartCopy the same
    s3.put_object(Bucket=bucket, Key="src", Body=b"x")
    st, _, body = raw_request(server, "PUT", f"/{bucket}/k?partNumber=1",
                              headers={"x-amz-copy-source": f"/{bucket}/src"})
    assert st == 400 and _xml(body, "Message") == "This operation does not accept partNumber without uploadId"


def test_upload_part_without_part_number_is_method_not_allowed(server, s3, bucket):
    """PUT ?uploadId=X without partNumber (versitygw issue 1236: AWS's answer): the upload has
    no PUT, 405 MethodNotAllowed naming the method and the resource type UPLOAD."""
    uid = _upload(s3, bucket, "k")
    for headers in ({}, {"x-amz-copy-source": f"/{bucket}/k"}):
        st, _, body = raw_request(server, "PUT", f"/{bucket}/k?uploadId={uid}", body=b"data", headers=headers)
        assert st == 405, body
        assert _xml(body, "Code") == "MethodNotAllowed"
        assert _xml(body, "Message") == "The specified method is not allowed against this resource."
        assert _xml(body, "Method") == "PUT" and _xml(body, "ResourceType") == "UPLOAD"
    assert s3.list_parts(Bucket=bucket, Key="k", UploadId=uid).get("Parts", []) == []


def test_unknown_checksum_header_message(server, bucket):
    """An `x-amz-checksum-<unknown>` header (versitygw issue 1104: AWS's text)."""
    body = b"hello"
    st, _, resp = raw_request(server, "PUT", f"/{bucket}/k", body=body,
                              headers={"x-amz-checksum-sha256a": "dummy"},
                              payload_hash=hashlib.sha256(body).hexdigest())
    assert st == 400, resp
    assert _xml(resp, "Code") == "InvalidRequest"
    assert _xml(resp, "Message") == "The algorithm type you specified in x-amz-checksum- header is invalid."


def test_signed_chunked_put_without_decoded_length_is_411(server, s3, bucket):
    """An aws-chunked PUT whose signature names x-amz-decoded-content-length but which does not
    send it (versitygw suite "chunked upload, no content length", AWS's answer): 411
    MissingContentLength, not a signature error."""
    from test_parity_chunked import sign_streaming
    body = b"5\r\nhello\r\n0\r\n\r\n"
    hdrs = sign_streaming("PUT", f"{server.endpoint}/{bucket}/k",
                          {"x-amz-decoded-content-length": "5", "Content-Encoding": "aws-chunked"},
                          "STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    assert "x-amz-decoded-content-length" in hdrs["Authorization"]
    del hdrs["x-amz-decoded-content-length"]
    st, _, resp = raw_request(server, "PUT", f"/{bucket}/k", body=body, headers=hdrs, sign=False)
    assert st == 411, resp
    assert _xml(resp, "Code") == "MissingContentLength"
    assert _xml(resp, "Message") == "You must provide the Content-Length HTTP header."
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket)


def test_response_header_names_in_aws_case(server, s3, bucket):
    """Header names on the wire as S3 writes them (`Content-Length`, `ETag`, `Last-Modified`,
    `x-amz-request-id`): scripts reading `curl -i` output look for these spellings."""
    import http.client
    s3.put_object(Bucket=bucket, Key="k", Body=b"hello", Metadata={"Mixed": "v"})
    host, port = server.host_port
    path = f"/{bucket}/k"
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.request("GET", path, headers=sign_headers("GET", f"{server.endpoint}{path}"))
        r = conn.getresponse()
        r.read()
        names = [k for k, _ in r.getheaders()]
    finally:
        conn.close()
    assert r.status == 200
    for want in ("Content-Length", "Content-Type", "ETag", "Last-Modified", "Accept-Ranges", "Date", "Server",
                 "x-amz-request-id", "x-amz-id-2", "x-amz-meta-mixed"):
        assert want in names, names


def test_reduced_redundancy_is_stored_unknown_class_is_invalid(server, s3, bucket):
    """REDUCED_REDUNDANCY (sent by AWS's own aws-chunked example request, which the versitygw
    suite replays) is stored (as STANDARD: it promises less); a class AWS does not know is 400
    InvalidStorageClass; AWS's archive classes stay 501."""
    s3.put_object(Bucket=bucket, Key="rr", Body=b"x", StorageClass="REDUCED_REDUNDANCY")
    assert s3.get_object(Bucket=bucket, Key="rr")["Body"].read() == b"x"
    uid = s3.create_multipart_upload(Bucket=bucket, Key="rr-mp", StorageClass="REDUCED_REDUNDANCY")["UploadId"]
    s3.abort_multipart_upload(Bucket=bucket, Key="rr-mp", UploadId=uid)
    st, _, body = raw_request(server, "PUT", f"/{bucket}/bad", body=b"x", headers={"x-amz-storage-class": "FOO"})
    assert st == 400, body
    assert _xml(body, "Code") == "InvalidStorageClass"
    assert _xml(body, "Message") == "The storage class you specified is not valid."
    st, _, body = raw_request(server, "PUT", f"/{bucket}/gl", body=b"x", headers={"x-amz-storage-class": "GLACIER"})
    assert st == 501 and _xml(body, "Code") == "NotImplemented", body


def test_copy_with_a_body_is_invalid_request(server, s3, bucket):
    """CopyObject and UploadPartCopy take no body (versitygw issue 1242: AWS's answer)."""
    msg = "The request included a body. Requests of this type must not include a non-empty body."
    s3.put_object(Bucket=bucket, Key="src", Body=b"source")
    st, _, body = raw_request(server, "PUT", f"/{bucket}/dst", body=b"payload",
                              headers={"x-amz-copy-source": f"/{bucket}/src"})
    assert st == 400, body
    assert _xml(body, "Code") == "InvalidRequest" and _xml(body, "Message") == msg
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket, Prefix="dst")
    uid = _upload(s3, bucket, "mp")
    st, _, body = raw_request(server, "PUT", f"/{bucket}/mp?partNumber=1&uploadId={uid}", body=b"payload",
                              headers={"x-amz-copy-source": f"/{bucket}/src"})
    assert st == 400 and _xml(body, "Message") == msg, body
    # an empty body, as every SDK sends, copies
    s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"})
    assert s3.get_object(Bucket=bucket, Key="dst")["Body"].read() == b"source"


def test_malformed_trailer_checksum_value_is_invalid_request(server, s3, bucket):
    """An aws-chunked trailer whose checksum value is no digest of the algorithm's size
    (versitygw suite "chunked upload - <alg> trailer - invalid", AWS's answer): 400 InvalidRequest
    naming the trailing header; a well-formed wrong value stays BadDigest."""
    from test_parity_chunked import _chunked_put
    for alg in ("sha1", "sha256", "crc32", "crc32c", "crc64nvme"):
        body = b"5\r\nhello\r\n0\r\nx-amz-checksum-" + alg.encode() + b":a\r\n\r\n"
        st, resp = _chunked_put(server, f"/{bucket}/bad-{alg}", body, 5, trailer=f"x-amz-checksum-{alg}")
        assert st == 400, resp[:400]
        assert _xml(resp, "Code") == "InvalidRequest", resp[:400]
        assert _xml(resp, "Message") == f"Value for x-amz-checksum-{alg} trailing header is invalid."
    body = b"5\r\nhello\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"
    st, resp = _chunked_put(server, f"/{bucket}/wrong", body, 5, trailer="x-amz-checksum-crc32")
    assert st == 400 and _xml(resp, "Code") == "BadDigest", resp[:400]
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket)
