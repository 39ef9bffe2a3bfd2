"""AWS parity found with the versitygw integration suite (issue 37, part 2; bench/versitygw_suite.sh).
Each answer is AWS's, as recorded from S3 itself in the versitygw issues named beside it."""
from __future__ import annotations

import hashlib
import html
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


# ---- issue 37, part 3: the versitygw suite's whole run ----

def _md5(body: bytes) -> str:
    import base64
    return base64.b64encode(hashlib.md5(body).digest()).decode()


def test_empty_xml_documents_are_missing_request_body(server, s3, bucket):
    """An operation whose XML document is required, sent none (versitygw issue 820, and
    aws/aws-sdk-cpp#733, S3's answers; the suite's "no payload" cases): 400
    MissingRequestBodyError "Request Body is empty", not MalformedXML."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    md5 = {"Content-MD5": _md5(b"")}
    for method, path, headers in [("PUT", f"/{bucket}?versioning", {}),
                                  ("PUT", f"/{bucket}?tagging", md5),
                                  ("PUT", f"/{bucket}?object-lock", md5),
                                  ("PUT", f"/{bucket}?website", {}),
                                  ("PUT", f"/{bucket}?cors", md5),
                                  ("POST", f"/{bucket}?delete", md5),
                                  ("PUT", f"/{bucket}/k?tagging", {})]:
        st, _, body = raw_request(server, method, path, body=b"", headers=headers)
        assert st == 400, (path, body)
        assert (_xml(body, "Code"), _xml(body, "Message")) == ("MissingRequestBodyError", "Request Body is empty"), \
            (path, body)
    # A document that is there but wrong is still MalformedXML.
    st, _, body = raw_request(server, "PUT", f"/{bucket}?versioning", body=b"<nope")
    assert st == 400 and _xml(body, "Code") == "MalformedXML", body


def test_list_parts_next_marker_and_invalid_markers(server, s3, bucket):
    """ListParts names NextPartNumberMarker in every answer, on a last page too (S3's answer in
    boto/boto3#2254; 0 when the page lists no part, as the suite records); a part-number-marker
    or max-parts that is no int32 gets S3's texts (versitygw issues 1383, 329)."""
    uid = _upload(s3, bucket, "mp")
    for n in (1, 2, 3):
        s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=n, Body=b"p")
    last = s3.list_parts(Bucket=bucket, Key="mp", UploadId=uid, PartNumberMarker=1, MaxParts=5)
    assert not last["IsTruncated"] and last["NextPartNumberMarker"] == 3
    st, _, body = raw_request(server, "GET", f"/{bucket}/mp?uploadId={uid}&part-number-marker=3")
    assert st == 200 and _xml(body, "NextPartNumberMarker") == "0" and b"<Part>" not in body, body
    page = s3.list_parts(Bucket=bucket, Key="mp", UploadId=uid, MaxParts=2)
    assert page["IsTruncated"] and page["NextPartNumberMarker"] == 2
    for arg, value, msg in [
        ("part-number-marker", "a", "Provided part-number-marker not an integer or within integer range"),
        ("part-number-marker", "-2", "Argument part-number-marker must be an integer between 0 and 2147483647"),
        ("max-parts", "x", "Provided max-parts not an integer or within integer range"),
        ("max-parts", "-1", "Argument max-parts must be an integer between 0 and 2147483647"),
    ]:
        st, _, body = raw_request(server, "GET", f"/{bucket}/mp?uploadId={uid}&{arg}={value}")
        assert st == 400 and _xml(body, "Code") == "InvalidArgument", body
        assert (_xml(body, "Message"), _xml(body, "ArgumentName"), _xml(body, "ArgumentValue")) == (msg, arg, value)
    st, _, body = raw_request(server, "GET", f"/{bucket}?uploads&max-uploads=-1")
    assert st == 400 and _xml(body, "Message") == "Argument max-uploads must be an integer between 0 and 2147483647"


def _tagging(pairs) -> bytes:
    tags = "".join(f"<Tag><Key>{k}</Key><Value>{v}</Value></Tag>" for k, v in pairs)
    return f"<Tagging><TagSet>{tags}</TagSet></Tagging>".encode()


def test_bucket_tagging_count_and_characters(server, s3, bucket):
    """PutBucketTagging: more than 50 tags is 400 BadRequest "Bucket tag count cannot be
    greater than 50"; a key or value outside S3's tag pattern (a tab, `&`) is InvalidTag
    (the suite's cases, S3's texts as other S3 implementations record them)."""
    for pairs, code, msg in [
        ([(f"k{i}", "v") for i in range(51)], "BadRequest", "Bucket tag count cannot be greater than 50"),
        ([("te\tst", "v")], "InvalidTag", "The TagKey you have provided is invalid"),
        ([("te&amp;st", "v")], "InvalidTag", "The TagKey you have provided is invalid"),
        ([("k", "val\tue")], "InvalidTag", "The TagValue you have provided is invalid"),
    ]:
        doc = _tagging(pairs)
        st, _, body = raw_request(server, "PUT", f"/{bucket}?tagging", body=doc, headers={"Content-MD5": _md5(doc)})
        assert st == 400 and (_xml(body, "Code"), _xml(body, "Message")) == (code, msg), body
    ok = [(f"k{i}", "a b_c.d:e/f=g+h-i@j") for i in range(50)]
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [{"Key": k, "Value": v} for k, v in ok]})
    assert len(s3.get_bucket_tagging(Bucket=bucket)["TagSet"]) == 50


def test_unsigned_streaming_payload_only_for_uploads(server, s3, bucket):
    """`x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER` on anything but an object
    upload (versitygw issue 1601, S3's answer): 400 InvalidRequest "The value of
    x-amz-content-sha256 header is invalid." (ListBuckets was 411, PutBucketTagging a digest
    error)."""
    from test_parity_chunked import sign_streaming
    msg = "The value of x-amz-content-sha256 header is invalid."
    hdrs = sign_streaming("GET", f"{server.endpoint}/", {}, "STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    st, _, body = raw_request(server, "GET", "/", headers=hdrs, sign=False)
    assert st == 400 and (_xml(body, "Code"), _xml(body, "Message")) == ("InvalidRequest", msg), body
    doc = _tagging([("key", "value")])
    chunked = f"{len(doc):x}\r\n".encode() + doc + b"\r\n0\r\n\r\n"
    extra = {"x-amz-decoded-content-length": str(len(doc)), "Content-Encoding": "aws-chunked"}
    for path in (f"/{bucket}?tagging", f"/{bucket}/k?tagging"):
        hdrs = sign_streaming("PUT", f"{server.endpoint}{path}", extra, "STREAMING-UNSIGNED-PAYLOAD-TRAILER")
        st, _, body = raw_request(server, "PUT", path, body=chunked, headers=hdrs, sign=False)
        assert st == 400 and (_xml(body, "Code"), _xml(body, "Message")) == ("InvalidRequest", msg), (path, body)
    # An object upload still takes it.
    body = b"hello"
    chunked = b"5\r\nhello\r\n0\r\n\r\n"
    hdrs = sign_streaming("PUT", f"{server.endpoint}/{bucket}/up", {"x-amz-decoded-content-length": "5",
                                                                    "Content-Encoding": "aws-chunked"},
                          "STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    st, _, resp = raw_request(server, "PUT", f"/{bucket}/up", body=chunked, headers=hdrs, sign=False)
    assert st == 200, resp
    assert s3.get_object(Bucket=bucket, Key="up")["Body"].read() == body


def test_if_none_match_other_than_star_is_not_implemented(server, s3, bucket):
    """PutObject / CompleteMultipartUpload with If-None-Match other than `*` (aws/aws-sdk-ruby#3144,
    S3's answer): 501 NotImplemented naming the header; the object is left as it was."""
    etag = s3.put_object(Bucket=bucket, Key="c", Body=b"one")["ETag"]
    st, _, body = raw_request(server, "PUT", f"/{bucket}/c", body=b"two", headers={"If-None-Match": etag})
    assert st == 501, body
    assert _xml(body, "Code") == "NotImplemented" and _xml(body, "Header") == "If-None-Match"
    assert _xml(body, "Message") == "A header you provided implies functionality that is not implemented."
    assert s3.get_object(Bucket=bucket, Key="c")["Body"].read() == b"one"
    uid = _upload(s3, bucket, "c")
    e = s3.upload_part(Bucket=bucket, Key="c", UploadId=uid, PartNumber=1, Body=b"p")["ETag"]
    doc = f"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{e}</ETag></Part></CompleteMultipartUpload>"
    st, _, body = raw_request(server, "POST", f"/{bucket}/c?uploadId={uid}", body=doc.encode(),
                              headers={"If-None-Match": "true"})
    assert st == 501 and _xml(body, "Header") == "If-None-Match", body
    # `*` keeps working: 412 on an existing key.
    st, _, body = raw_request(server, "PUT", f"/{bucket}/c", body=b"two", headers={"If-None-Match": "*"})
    assert st == 412, body


def test_versions_query_on_a_key_and_list_type_1(server, s3, bucket):
    """GET /bucket/key?versions is 400 InvalidRequest "There is no such thing as the ?versions
    sub-resource for a key" (S3's text, as versitygw records it), not the object; `list-type=1`
    is ListObjects v1 (it was 400 "Invalid list type")."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    st, _, body = raw_request(server, "GET", f"/{bucket}/k?versions")
    assert st == 400, body
    assert (_xml(body, "Code"), _xml(body, "Message")) == (
        "InvalidRequest", "There is no such thing as the ?versions sub-resource for a key")
    st, _, body = raw_request(server, "GET", f"/{bucket}?list-type=1&delimiter=%2F")
    assert st == 200 and b"<ListBucketResult" in body and _xml(body, "Key") == "k", body
    assert b"<KeyCount>" not in body  # v1's document, not v2's


def test_unparsable_request_gets_bad_request_document(server):
    """A request head that is no HTTP (the suite's "deformed message"): 400 with S3's error
    document, BadRequest "An error occurred when parsing the HTTP request.", then close."""
    import socket
    s = socket.create_connection(server.host_port, timeout=10)
    try:
        s.sendall(b"abcdefg\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), data
    assert body.startswith(b'<?xml version="1.0" encoding="UTF-8"?>'), data
    assert (_xml(body, "Code"), _xml(body, "Message")) == ("BadRequest", "An error occurred when parsing the HTTP request.")


def test_create_bucket_location_constraints(server, s3):
    """CreateBucket on a gateway in us-east-1, as on an S3 regional endpoint: an empty
    LocationConstraint, or `us-east-1` itself, is 400 InvalidLocationConstraint "The specified
    location-constraint is not valid"; another region is 400 IllegalLocationConstraintException
    (S3's text, e.g. aws/aws-cli#4445); nothing is created. No constraint still creates."""
    import uuid
    doc = '<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' \
          '<LocationConstraint>{}</LocationConstraint></CreateBucketConfiguration>'
    for c, code, msg in [
        ("", "InvalidLocationConstraint", "The specified location-constraint is not valid"),
        ("us-east-1", "InvalidLocationConstraint", "The specified location-constraint is not valid"),
        ("us-west-1", "IllegalLocationConstraintException",
         "The us-west-1 location constraint is incompatible for the region specific endpoint this request was sent to."),
    ]:
        name = "it-loc-" + uuid.uuid4().hex[:10]
        st, _, body = raw_request(server, "PUT", f"/{name}", body=doc.format(c).encode())
        assert st == 400 and (_xml(body, "Code"), _xml(body, "Message")) == (code, msg), (c, body)
        assert name not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    name = "it-loc-" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=name)
    s3.delete_bucket(Bucket=name)


def test_complete_with_a_malformed_checksum_value_is_invalid_request(server, s3, bucket):
    """CompleteMultipartUpload whose `x-amz-checksum-<alg>` header is no digest of the
    algorithm's size (the suite's "multipart - composite/full object - invalid <alg>"): 400
    InvalidRequest "Value for x-amz-checksum-<alg> header is invalid.", judged before the parts
    (it was EntityTooSmall for small parts); a well-formed value still completes."""
    import base64
    import zlib
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp", ChecksumAlgorithm="CRC32",
                                     ChecksumType="FULL_OBJECT")["UploadId"]
    crc = base64.b64encode(zlib.crc32(b"small").to_bytes(4, "big")).decode()
    e = s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=1, Body=b"small",
                       ChecksumCRC32=crc)["ETag"]
    doc = (f"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{e}</ETag>"
           f"<ChecksumCRC32>{crc}</ChecksumCRC32></Part></CompleteMultipartUpload>").encode()
    for name in ("x-amz-checksum-crc32", "x-amz-checksum-sha1"):
        st, _, body = raw_request(server, "POST", f"/{bucket}/mp?uploadId={uid}", body=doc,
                                  headers={name: "wrong", "x-amz-checksum-type": "FULL_OBJECT"})
        assert st == 400, body
        assert (_xml(body, "Code"), _xml(body, "Message")) == ("InvalidRequest", f"Value for {name} header is invalid.")
    st, _, body = raw_request(server, "POST", f"/{bucket}/mp?uploadId={uid}", body=doc,
                              headers={"x-amz-checksum-crc32": crc, "x-amz-checksum-type": "FULL_OBJECT"})
    assert st == 200, body
    assert s3.get_object(Bucket=bucket, Key="mp")["Body"].read() == b"small"


def test_retain_until_date_with_a_numeric_offset(server, s3):
    """PutObjectRetention's RetainUntilDate with an ISO 8601 offset, `+0000` (what `date +%z`
    writes; the suite's test_rest_retention) or `+00:00`, is a time, not MalformedXML."""
    import datetime
    import uuid
    name = "it-lock-" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
    s3.put_object(Bucket=name, Key="k", Body=b"x")
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=5)
    for stamp in (later.strftime("%Y-%m-%dT%H:%M:%S+0000"), later.strftime("%Y-%m-%dT%H:%M:%S+00:00")):
        doc = f"<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>{stamp}</RetainUntilDate></Retention>".encode()
        st, _, body = raw_request(server, "PUT", f"/{name}/k?retention", body=doc,
                                  headers={"Content-MD5": _md5(doc)})
        assert st == 200, (stamp, body)
    got = s3.get_object_retention(Bucket=name, Key="k")["Retention"]["RetainUntilDate"]
    assert abs((got - later).total_seconds()) < 2


def test_cors_actual_request_judged_with_request_method_and_headers(server, s3, bucket):
    """CORS headers on a request that is not a preflight but carries `Access-Control-Request-*`
    (the suite's "REST - CORS - allowed headers"; ceph s3-tests' test_cors_origin_response, a
    PUT with `Access-Control-Request-Method: GET` answered with the GET rule): S3 judges it as
    a preflight, with that method, every requested header allowed and echoed in
    `Access-Control-Allow-Headers` (lower case, `, ` between names)."""
    origin = "http://example.com"
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": [origin], "AllowedMethods": ["GET"],
         "AllowedHeaders": ["dummy-header-one", "dummy-header-two"]}]})
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    st, h, _ = raw_request(server, "GET", f"/{bucket}",
                           headers={"Origin": origin, "Access-Control-Request-Headers": "dummy-header-one"})
    assert st == 200 and h["access-control-allow-origin"] == origin
    assert h["access-control-allow-headers"] == "dummy-header-one"
    st, h, _ = raw_request(server, "GET", f"/{bucket}/k", headers={
        "Origin": origin, "Access-Control-Request-Headers": "Dummy-Header-One,dummy-header-two"})
    assert st == 200 and h["access-control-allow-headers"] == "dummy-header-one, dummy-header-two"
    # A requested header no rule allows: no CORS headers at all.
    st, h, _ = raw_request(server, "GET", f"/{bucket}/k",
                           headers={"Origin": origin, "Access-Control-Request-Headers": "x-other"})
    assert st == 200 and "access-control-allow-origin" not in h
    # Without Access-Control-Request-Headers: no Allow-Headers.
    st, h, _ = raw_request(server, "GET", f"/{bucket}/k", headers={"Origin": origin})
    assert h["access-control-allow-origin"] == origin and "access-control-allow-headers" not in h
    # The method judged is Access-Control-Request-Method's: a PUT naming GET gets the GET
    # rule's headers (its own answer unchanged), a GET naming PUT none.
    st, h, _ = raw_request(server, "PUT", f"/{bucket}/k2", body=b"y", sign=False,
                           headers={"Origin": origin, "Access-Control-Request-Method": "GET"})
    assert st == 403 and h["access-control-allow-origin"] == origin
    assert h["access-control-allow-methods"] == "GET"
    st, h, _ = raw_request(server, "GET", f"/{bucket}/k",
                           headers={"Origin": origin, "Access-Control-Request-Method": "PUT"})
    assert st == 200 and "access-control-allow-origin" not in h


def test_complete_checks_mp_object_size(server, s3, bucket):
    """`x-amz-mp-object-size` on CompleteMultipartUpload (the suite's "multipart -
    x-amz-mp-object-size - invalid string"; versitygw issue 1398 and PR 1400 record S3's texts):
    not an integer or negative: 400 InvalidRequest naming the value; the parts adding up to
    another size: 400 InvalidRequest, nothing completed; the right size completes."""
    uid = _upload(s3, bucket, "mp")
    etag = s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=1, Body=b"0123456789")["ETag"]
    doc = (f"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{etag}</ETag></Part>"
           f"</CompleteMultipartUpload>").encode()
    for value, message in [
        ("size", "Value for x-amz-mp-object-size header is invalid: 'size'"),
        ("-1", "Value for x-amz-mp-object-size header is less than zero: '-1'"),
        ("7", "The provided 'x-amz-mp-object-size' header value 7 does not match what was computed: 10"),
    ]:
        st, _, body = raw_request(server, "POST", f"/{bucket}/mp?uploadId={uid}", body=doc,
                                  headers={"x-amz-mp-object-size": value})
        assert st == 400, body
        assert (_xml(body, "Code"), html.unescape(_xml(body, "Message"))) == ("InvalidRequest", message)
    assert len(s3.list_parts(Bucket=bucket, Key="mp", UploadId=uid)["Parts"]) == 1
    st, _, body = raw_request(server, "POST", f"/{bucket}/mp?uploadId={uid}", body=doc,
                              headers={"x-amz-mp-object-size": "10"})
    assert st == 200, body
    assert s3.get_object(Bucket=bucket, Key="mp")["Body"].read() == b"0123456789"


def test_create_bucket_with_an_unparsable_grant_is_invalid_argument(server, s3):
    """CreateBucket with `x-amz-grant-full-control: <access key>` (the suite's "x-amz-grant-full-
    control - no ownership control change" sends versitygw's grantee form, an access key): S3
    parses the grant headers before it judges them against the bucket's BucketOwnerEnforced
    default, so a value that is not `id=`/`uri=`/`emailAddress=` is 400 InvalidArgument
    "Argument format not recognized" naming the header and the value (recorded from S3 in
    versitygw issue 1384), not InvalidBucketAclWithObjectOwnership; nothing is created."""
    import uuid
    name = "it-grant-" + uuid.uuid4().hex[:10]
    st, _, body = raw_request(server, "PUT", f"/{name}", headers={"x-amz-grant-full-control": "AKIAEXAMPLE"})
    assert st == 400, body
    assert (_xml(body, "Code"), _xml(body, "Message")) == ("InvalidArgument", "Argument format not recognized")
    assert (_xml(body, "ArgumentName"), _xml(body, "ArgumentValue")) == ("x-amz-grant-full-control", "AKIAEXAMPLE")
    assert name not in [b["Name"] for b in s3.list_buckets()["Buckets"]]


def test_policy_with_an_access_key_as_principal_is_malformed(server, s3, bucket):
    """The suite's `put_simple_bucket_policy` (GetBucketPolicyStatus, "PutBucketPolicy - success
    returns 204") names the caller's access key as the bare string `"Principal": "AKIA..."`,
    versitygw's user form. On AWS a string principal can only be `"*"` (the IAM reference's
    principal grammar) and access keys are never principals: 400 MalformedPolicy "Invalid
    principal in policy", as s3hpc answers; nothing is stored."""
    import json
    from conftest import ACCESS_KEY
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": ACCESS_KEY, "Action": "s3:*", "Resource": f"arn:aws:s3:::{bucket}"}]}
    st, _, body = raw_request(server, "PUT", f"/{bucket}?policy", body=json.dumps(policy).encode())
    assert st == 400, body
    assert (_xml(body, "Code"), _xml(body, "Message")) == ("MalformedPolicy", "Invalid principal in policy")
    st, _, _ = raw_request(server, "GET", f"/{bucket}?policy")
    assert st == 404
