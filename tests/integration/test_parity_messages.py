"""AWS's exact error messages (issue 37 leftovers), as real AWS answers them: the texts carry
AWS's own spelling, spacing and (missing) trailing periods."""
from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from conftest import make_client
from test_authz import gw  # noqa: F401  (the fixture)


def _err(call, **kw):
    with pytest.raises(ClientError) as e:
        call(**kw)
    return e.value.response["ResponseMetadata"]["HTTPStatusCode"], e.value.response["Error"]


def test_error_messages_are_aws_texts(server, s3, bucket):
    st, e = _err(make_client(server.endpoint, "NOSUCHKEY0000000000X", "whatever").list_buckets)
    assert (st, e["Code"]) == (403, "InvalidAccessKeyId")
    assert e["Message"] == "The AWS Access Key Id you provided does not exist in our records."
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    st, e = _err(s3.get_object, Bucket=bucket, Key="k", IfMatch='"0123456789abcdef0123456789abcdef"')
    assert (st, e["Code"]) == (412, "PreconditionFailed")
    assert e["Message"] == "At least one of the pre-conditions you specified did not hold"
    st, e = _err(s3.get_bucket_tagging, Bucket=bucket)
    assert (st, e["Code"], e["Message"]) == (404, "NoSuchTagSet", "The TagSet does not exist")
    st, e = _err(s3.abort_multipart_upload, Bucket=bucket, Key="k", UploadId="nosuchupload")
    assert (st, e["Code"]) == (404, "NoSuchUpload")
    assert e["Message"] == ("The specified upload does not exist. The upload ID may be invalid, "
                            "or the upload may have been aborted or completed.")
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    st, e = _err(s3.complete_multipart_upload, Bucket=bucket, Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": '"0123456789abcdef0123456789abcdef"'}]})
    assert (st, e["Code"]) == (400, "InvalidPart")
    assert e["Message"] == ("One or more of the specified parts could not be found.  The part may not have been "
                            "uploaded, or the specified entity tag may not match the part's entity tag.")


def test_bucket_already_exists_message(gw):  # noqa: F811
    _, c = gw
    c["alice"].create_bucket(Bucket="msg-taken")
    st, e = _err(c["bob"].create_bucket, Bucket="msg-taken")
    assert (st, e["Code"]) == (409, "BucketAlreadyExists")
    assert e["Message"] == ("The requested bucket name is not available. The bucket namespace is shared by all "
                            "users of the system. Please select a different name and try again.")
