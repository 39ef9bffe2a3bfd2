"""AWS parity of non-ASCII user metadata (issue 37): S3 decodes RFC 2047 encoded-words before
storing and returns a value that is not printable US-ASCII as one `=?UTF-8?B?...?=`
encoded-word (AWS's user guide, "Working with object metadata": values "character decoded as per
RFC 2047 before storing and encoded as per RFC 2047 to make them mail-safe before returning";
boto/boto3 issue 3063: raw UTF-8 from an SDK comes back "UTF-8 encoded and then base64
encoded"). Before, s3hpc returned raw bytes and stored a non-UTF-8 byte as U+FFFD."""
from __future__ import annotations

import base64

import pytest


def _put_with_raw_meta(s3, bucket, key, value):
    # `value` goes on the wire as UTF-8 (urllib3), signed by botocore as such.
    def add(request, **_):
        request.headers["x-amz-meta-v"] = value

    s3.meta.events.register("before-sign.s3.PutObject", add)
    try:
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    finally:
        s3.meta.events.unregister("before-sign.s3.PutObject", add)


def _returned(s3, bucket, key):
    head = s3.head_object(Bucket=bucket, Key=key)["ResponseMetadata"]["HTTPHeaders"]["x-amz-meta-v"]
    get = s3.get_object(Bucket=bucket, Key=key)["ResponseMetadata"]["HTTPHeaders"]["x-amz-meta-v"]
    assert head == get
    return head


CAFE = "=?UTF-8?B?" + base64.b64encode("café".encode()).decode() + "?="


@pytest.mark.parametrize("sent, returned", [
    ("caf\xe9", CAFE),                       # raw UTF-8 bytes
    (CAFE, CAFE),                            # an encoded-word, decoded and encoded again
    ("=?ISO-8859-1?Q?caf=E9?=", CAFE),       # Q encoding, another charset
    ("=?utf-8?b?Y2Fm?= =?UTF-8?Q?=C3=A9?=", CAFE),  # adjacent words: the space between goes
    ("plain ascii =? not a word", "plain ascii =? not a word"),
])
def test_non_ascii_metadata_as_aws(s3, bucket, sent, returned):
    _put_with_raw_meta(s3, bucket, "meta-enc", sent)
    assert _returned(s3, bucket, "meta-enc") == returned
