"""AWS parity of configuration validation (issue 37 leftovers): bucket policies with unknown
condition operators or keys or malformed IP addresses, and CORS rules with invalid header names or
methods, are refused with AWS's status, code and message."""
from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from conftest import err_code, err_status


def _policy(bucket, condition):
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
        "Resource": f"arn:aws:s3:::{bucket}/*", "Condition": condition}]})


@pytest.mark.parametrize("condition,message", [
    ({"StringEqualsFoo": {"aws:SourceIp": "1.2.3.4"}}, "Invalid Condition type : StringEqualsFoo"),
    ({"NotAnOperator": {"s3:prefix": "x"}}, "Invalid Condition type : NotAnOperator"),
    ({"StringEquals": {"s3:NoSuchKey": "x"}}, "Policy has an invalid condition key"),
    ({"StringEquals": {"foo:bar": "x"}}, "Policy has an invalid condition key"),
    ({"IpAddress": {"aws:SourceIp": "123"}}, "Invalid IP address in Conditions"),
    ({"NotIpAddress": {"aws:SourceIp": "10.0.0.300/8"}}, "Invalid IP address in Conditions"),
    ({"IpAddress": {"aws:SourceIp": ["1.2.3.4/33"]}}, "Invalid IP address in Conditions"),
])
def test_policy_with_bad_condition_is_malformed_policy(s3, bucket, condition, message):
    with pytest.raises(ClientError) as e:
        s3.put_bucket_policy(Bucket=bucket, Policy=_policy(bucket, condition))
    assert err_status(e.value) == 400 and err_code(e.value) == "MalformedPolicy"
    assert e.value.response["Error"]["Message"] == message
    with pytest.raises(ClientError) as e:
        s3.get_bucket_policy(Bucket=bucket)
    assert err_code(e.value) == "NoSuchBucketPolicy"


def test_policy_with_unknown_aws_key_and_good_ip_is_accepted(s3, bucket):
    """AWS accepts any `aws:` key (global keys grow) and IPv4/IPv6 CIDRs."""
    s3.put_bucket_policy(Bucket=bucket, Policy=_policy(bucket, {
        "IpAddress": {"aws:SourceIp": ["10.0.0.0/8", "2001:db8::/32", "1.2.3.4"]},
        "StringEqualsIfExists": {"aws:SomeFutureKey": "x"}}))
    assert json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"])["Statement"]


@pytest.mark.parametrize("bad", ["invalid header", "X-Custom:Header", "X(Custom)", "Bad/Header", "X[Key]",
                                 "Bad=Name", 'X"Quote"'])
def test_cors_invalid_header_names_are_invalid_request(s3, bucket, bad):
    for allowed, expose in [(["X-Amz-Date", bad], ["Authorization"]), (["X-Amz-Date"], ["Authorization", bad])]:
        with pytest.raises(ClientError) as e:
            s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [{
                "AllowedOrigins": ["http://origin.com"], "AllowedMethods": ["POST"],
                "AllowedHeaders": allowed, "ExposeHeaders": expose}]})
        assert err_status(e.value) == 400 and err_code(e.value) == "InvalidRequest", (allowed, expose)
        assert e.value.response["Error"]["Message"] == f'AllowedHeader "{bad}" contains invalid character.'
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=bucket)
    assert err_code(e.value) == "NoSuchCORSConfiguration"


@pytest.mark.parametrize("methods,bad", [(["get"], "get"), (["GET", "PATCH"], "PATCH"), (["POST", "OPTIONS"], "OPTIONS")])
def test_cors_unsupported_method_is_invalid_request(s3, bucket, methods, bad):
    with pytest.raises(ClientError) as e:
        s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [{
            "AllowedOrigins": ["http://origin.com"], "AllowedMethods": methods}]})
    assert err_status(e.value) == 400 and err_code(e.value) == "InvalidRequest"
    assert e.value.response["Error"]["Message"] == (
        f"Found unsupported HTTP method in CORS config. Unsupported method is {bad}")


def test_cors_valid_headers_and_wildcards_are_accepted(s3, bucket):
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [{
        "AllowedOrigins": ["*"], "AllowedMethods": ["GET", "HEAD"],
        "AllowedHeaders": ["x-amz-*", "Content-MD5", "*"], "ExposeHeaders": ["ETag", "x-amz-meta-custom"]}]})
    got = s3.get_bucket_cors(Bucket=bucket)["CORSRules"][0]
    assert got["AllowedHeaders"] == ["x-amz-*", "Content-MD5", "*"]
