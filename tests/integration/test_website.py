"""The website endpoint (`s3hpc serve --website-domain DOMAIN`), as AWS's S3 website endpoints
answer: requests with `Host: BUCKET.DOMAIN` (plain http.client, no signature), configuration and
objects set up with boto3 on the S3 endpoint. Index and error documents, RedirectAllRequestsTo,
routing rules, `x-amz-website-redirect-location`, HTML error pages, method refusal, anonymous
authorization (policy-judged, as an unsigned REST GET), and that S3 requests are unaffected."""
from __future__ import annotations

import http.client
import json
import uuid

import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS_KEY, SECRET_KEY, Server, empty_bucket, err_code, make_client

DOMAIN = "web.test"


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    root = tmp_path_factory.mktemp("website")
    srv = Server(root, ["--backend", "posix", "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY,
                        "--durability", "none", "--website-domain", f"other.example,{DOMAIN}"])
    try:
        yield srv, make_client(srv.endpoint)
    finally:
        srv.stop()


@pytest.fixture
def site(gw):
    """A bucket with public-read objects (policy: s3:GetObject for everyone)."""
    srv, s3 = gw
    name = "web-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=name)
    public(s3, name)
    yield name
    empty_bucket(s3, name)
    s3.delete_bucket(Bucket=name)


def public(s3, bucket, resource="*", list_bucket=False):
    st = [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
           "Resource": f"arn:aws:s3:::{bucket}/{resource}"}]
    if list_bucket:
        st.append({"Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket",
                   "Resource": f"arn:aws:s3:::{bucket}"})
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": st}))


def web(srv, bucket, path, method="GET", headers=None, host=None):
    """One website request: (status, headers lower-cased, body)."""
    h, port = srv.host_port
    conn = http.client.HTTPConnection(h, port, timeout=30)
    try:
        conn.request(method, path, headers={"Host": host or f"{bucket}.{DOMAIN}:{port}", **(headers or {})})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def put(s3, bucket, key, body, **kw):
    s3.put_object(Bucket=bucket, Key=key, Body=body, **kw)


def error_page(status, code, message, body, headers, **fields):
    """The body is AWS's HTML error page for this error (not an XML document)."""
    reason = {400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed"}[status]
    text = body.decode()
    assert headers["content-type"] == "text/html; charset=utf-8", headers
    assert text.startswith(f"<html>\n<head><title>{status} {reason}</title></head>\n<body>\n"
                           f"<h1>{status} {reason}</h1>\n<ul>\n<li>Code: {code}</li>\n"
                           f"<li>Message: {message or headers['x-amz-error-message']}</li>\n"), text
    for k, v in fields.items():
        assert f"<li>{k}: {v}</li>" in text, (k, text)
    rid = headers["x-amz-request-id"]
    assert f"<li>RequestId: {rid}</li>" in text and text.endswith("<hr/>\n</body>\n</html>\n"), text
    assert headers["x-amz-error-code"] == code and headers["x-amz-error-message"] == (message or
                                                                                  headers["x-amz-error-message"])
    return text


def test_index_document(gw, site):
    srv, s3 = gw
    s3.put_bucket_website(Bucket=site, WebsiteConfiguration={"IndexDocument": {"Suffix": "index.html"}})
    put(s3, site, "index.html", b"<p>home</p>", ContentType="text/html")
    put(s3, site, "docs/index.html", b"<p>docs</p>", ContentType="text/html")
    put(s3, site, "page.html", b"<p>page</p>", ContentType="text/html")
    st, h, body = web(srv, site, "/")
    assert (st, body, h["content-type"]) == (200, b"<p>home</p>", "text/html")
    assert web(srv, site, "/docs/")[::2] == (200, b"<p>docs</p>")
    assert web(srv, site, "/page.html")[::2] == (200, b"<p>page</p>")
    # A query string does not change the object read; the port and case of the Host do not matter.
    assert web(srv, site, "/?x=1")[::2] == (200, b"<p>home</p>")
    assert web(srv, site, "/", host=f"{site}.WEB.Test")[::2] == (200, b"<p>home</p>")
    assert web(srv, site, "/", host=f"{site}.other.example:80")[::2] == (200, b"<p>home</p>")
    # A "folder" asked for without its slash: 302 Found to KEY/ (AWS's answer).
    st, h, body = web(srv, site, "/docs")
    assert (st, h["location"], body) == (302, "/docs/", b"")
    # HEAD: the object's headers, no body; Range and conditional headers as on the REST endpoint.
    st, h, body = web(srv, site, "/", method="HEAD")
    assert (st, h["content-length"], body) == (200, "11", b"")
    st, h, body = web(srv, site, "/page.html", headers={"Range": "bytes=3-6"})
    assert (st, body, h["content-range"]) == (206, b"page", "bytes 3-6/11")
    etag = h["etag"]
    assert web(srv, site, "/page.html", headers={"If-None-Match": etag})[0] == 304
    # No index object (anonymous users may not list): 403, as an unsigned REST GET of a missing key.
    st, h, body = web(srv, site, "/nothing/")
    error_page(403, "AccessDenied", "Access Denied", body, h)
    # With s3:ListBucket granted, a missing key is 404 NoSuchKey naming the key read.
    public(s3, site, list_bucket=True)
    st, h, body = web(srv, site, "/nothing/")
    error_page(404, "NoSuchKey", "The specified key does not exist.", body, h, Key="nothing/index.html")
    assert h["x-amz-error-detail-key"] == "nothing/index.html"
    st, h, body = web(srv, site, "/nothing", method="HEAD")
    assert (st, h["x-amz-error-code"], body) == (404, "NoSuchKey", b"")


def test_error_document(gw, site):
    srv, s3 = gw
    s3.put_bucket_website(Bucket=site, WebsiteConfiguration={
        "IndexDocument": {"Suffix": "index.html"}, "ErrorDocument": {"Key": "error.html"}})
    # The error document is missing: AWS's page says so in a second list.
    st, h, body = web(srv, site, "/missing.html")
    text = error_page(403, "AccessDenied", "Access Denied", body, h)
    assert ("<h3>An Error Occurred While Attempting to Retrieve a Custom Error Document</h3>\n<ul>\n"
            "<li>Code: AccessDenied</li>\n<li>Message: Access Denied</li>\n</ul>\n<hr/>") in text, text
    put(s3, site, "error.html", b"<p>oops</p>", ContentType="text/html")
    # Served with the error's status: 403 for a missing key anonymous users may not list...
    st, h, body = web(srv, site, "/missing.html")
    assert (st, body, h["content-type"]) == (403, b"<p>oops</p>", "text/html")
    # ...404 once they may.
    public(s3, site, list_bucket=True)
    st, h, body = web(srv, site, "/missing.html")
    assert (st, body) == (404, b"<p>oops</p>")
    assert web(srv, site, "/missing.html", method="HEAD")[::2] == (404, b"")
    # A Range on the request does not cut the error document.
    assert web(srv, site, "/missing.html", headers={"Range": "bytes=0-1"})[::2] == (404, b"<p>oops</p>")
    s3.delete_object(Bucket=site, Key="error.html")
    st, h, body = web(srv, site, "/missing.html")
    text = error_page(404, "NoSuchKey", "The specified key does not exist.", body, h, Key="missing.html")
    assert ("<h3>An Error Occurred While Attempting to Retrieve a Custom Error Document</h3>\n<ul>\n"
            "<li>Code: NoSuchKey</li>\n<li>Message: The specified key does not exist.</li>\n"
            "<li>Key: error.html</li>\n</ul>\n") in text, text


def test_redirect_all_requests(gw, site):
    srv, s3 = gw
    s3.put_bucket_website(Bucket=site, WebsiteConfiguration={"RedirectAllRequestsTo": {"HostName": "www.example.org"}})
    st, h, body = web(srv, site, "/")
    assert (st, h["location"], body) == (301, "http://www.example.org/", b"")
    assert web(srv, site, "/a%20b/c.html?x=1")[1]["location"] == "http://www.example.org/a%20b/c.html?x=1"
    s3.put_bucket_website(Bucket=site, WebsiteConfiguration={
        "RedirectAllRequestsTo": {"HostName": "www.example.org", "Protocol": "https"}})
    st, h, _ = web(srv, site, "/x", method="HEAD")
    assert (st, h["location"]) == (301, "https://www.example.org/x")


def test_routing_rules(gw, site):
    srv, s3 = gw
    port = srv.host_port[1]
    public(s3, site, list_bucket=True)
    s3.put_bucket_website(Bucket=site, WebsiteConfiguration={
        "IndexDocument": {"Suffix": "index.html"}, "ErrorDocument": {"Key": "error.html"},
        "RoutingRules": [
            {"Condition": {"KeyPrefixEquals": "docs/"}, "Redirect": {"ReplaceKeyPrefixWith": "documents/"}},
            {"Condition": {"KeyPrefixEquals": "images/"},
             "Redirect": {"ReplaceKeyWith": "folderdeleted.html", "HttpRedirectCode": "302", "Protocol": "https"}},
            {"Condition": {"KeyPrefixEquals": "old/", "HttpErrorCodeReturnedEquals": "404"},
             "Redirect": {"HostName": "archive.example.com", "ReplaceKeyPrefixWith": "new/"}},
            {"Condition": {"HttpErrorCodeReturnedEquals": "404"},
             "Redirect": {"HostName": "ec2.example.com", "ReplaceKeyPrefixWith": "report-404/"}},
        ]})
    put(s3, site, "index.html", b"home")
    put(s3, site, "docs/here.html", b"never served")
    put(s3, site, "old/kept.html", b"kept")
    # KeyPrefixEquals alone: redirected before any read, to the request's own host by default.
    st, h, _ = web(srv, site, "/docs/here.html")
    assert (st, h["location"]) == (301, f"http://{site}.{DOMAIN}:{port}/documents/here.html")
    st, h, _ = web(srv, site, "/images/a.png")
    assert (st, h["location"]) == (302, f"https://{site}.{DOMAIN}:{port}/folderdeleted.html")
    # HttpErrorCodeReturnedEquals: only when the read fails with that status (and prefix, if given).
    assert web(srv, site, "/old/kept.html")[::2] == (200, b"kept")
    st, h, _ = web(srv, site, "/old/gone.html")
    assert (st, h["location"]) == (301, "http://archive.example.com/new/gone.html")
    st, h, _ = web(srv, site, "/x/y")
    assert (st, h["location"]) == (301, "http://ec2.example.com/report-404/x/y")
    assert web(srv, site, "/")[::2] == (200, b"home")


def test_object_website_redirect_location(gw, site):
    srv, s3 = gw
    s3.put_bucket_website(Bucket=site, WebsiteConfiguration={"IndexDocument": {"Suffix": "index.html"}})
    put(s3, site, "moved.html", b"old", WebsiteRedirectLocation="/new.html")
    put(s3, site, "away.html", b"old", WebsiteRedirectLocation="https://example.com/x")
    st, h, body = web(srv, site, "/moved.html")
    assert (st, h["location"], body) == (301, "/new.html", b"")
    assert web(srv, site, "/away.html", method="HEAD")[:2][1]["location"] == "https://example.com/x"
    # On the REST endpoint the object is the object.
    assert s3.get_object(Bucket=site, Key="moved.html")["Body"].read() == b"old"


def test_methods_other_than_get_and_head_refused(gw, site):
    srv, s3 = gw
    s3.put_bucket_website(Bucket=site, WebsiteConfiguration={"IndexDocument": {"Suffix": "index.html"}})
    put(s3, site, "index.html", b"home")
    for method in ("PUT", "POST", "DELETE", "OPTIONS", "PATCH"):
        st, h, body = web(srv, site, "/index.html", method=method)
        error_page(405, "MethodNotAllowed", "The specified method is not allowed against this resource.", body, h,
                   Method=method, ResourceType="OBJECT")
        assert h["allow"] == "GET, HEAD"
    assert s3.get_object(Bucket=site, Key="index.html")["Body"].read() == b"home"


def test_private_objects_refused(gw):
    srv, s3 = gw
    name = "web-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=name)
    try:
        s3.put_bucket_website(Bucket=name, WebsiteConfiguration={"IndexDocument": {"Suffix": "index.html"}})
        put(s3, name, "index.html", b"private home")
        put(s3, name, "pub/page.html", b"public page")
        put(s3, name, "secret.html", b"secret", WebsiteRedirectLocation="/elsewhere")
        # No policy: nothing is anonymous-readable, as for an unsigned REST GET.
        for path in ("/", "/index.html", "/pub/page.html"):
            st, h, body = web(srv, name, path)
            error_page(403, "AccessDenied", "Access Denied", body, h)
            assert b"private" not in body and b"public page" not in body
        public(s3, name, resource="pub/*")
        assert web(srv, name, "/pub/page.html")[::2] == (200, b"public page")
        # Outside the policy's resource: 403, and a private object's redirect is not revealed.
        for path in ("/", "/secret.html"):
            st, h, body = web(srv, name, path)
            error_page(403, "AccessDenied", "Access Denied", body, h)
            assert "location" not in h
        # A signed request gets no more than an anonymous one: the website endpoint is anonymous.
        from conftest import sign_headers
        url = f"http://{name}.{DOMAIN}:{srv.host_port[1]}/index.html"
        signed = {k: v for k, v in sign_headers("GET", url).items() if k.lower() != "host"}
        assert web(srv, name, "/index.html", headers=signed)[0] == 403
        # Block Public Access ignoring public policies: refused here as on the REST endpoint.
        s3.put_public_access_block(Bucket=name, PublicAccessBlockConfiguration={
            "BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": False,
            "RestrictPublicBuckets": True})
        assert web(srv, name, "/pub/page.html")[0] == 403
    finally:
        empty_bucket(s3, name)
        s3.delete_bucket(Bucket=name)


def test_bucket_without_configuration(gw, site):
    srv, s3 = gw
    put(s3, site, "index.html", b"home")
    st, h, body = web(srv, site, "/index.html")
    error_page(404, "NoSuchWebsiteConfiguration", "The specified bucket does not have a website configuration",
               body, h, BucketName=site)
    assert h["x-amz-error-detail-bucketname"] == site
    s3.put_bucket_website(Bucket=site, WebsiteConfiguration={"IndexDocument": {"Suffix": "index.html"}})
    assert web(srv, site, "/index.html")[::2] == (200, b"home")
    s3.delete_bucket_website(Bucket=site)
    assert web(srv, site, "/index.html")[0] == 404
    missing = "web-none-" + uuid.uuid4().hex[:8]
    st, h, body = web(srv, missing, "/")
    # (The message is the REST endpoint's NoSuchBucket text.)
    error_page(404, "NoSuchBucket", None, body, h, BucketName=missing)


def test_s3_requests_unaffected(gw, site):
    srv, s3 = gw
    s3.put_bucket_website(Bucket=site, WebsiteConfiguration={
        "IndexDocument": {"Suffix": "index.html"}, "ErrorDocument": {"Key": "error.html"}})
    put(s3, site, "index.html", b"home")
    put(s3, site, "error.html", b"oops")
    # The S3 endpoint (Host 127.0.0.1): a bucket GET lists, a missing key is XML NoSuchKey (signed)
    # or AccessDenied (anonymous, no s3:ListBucket), no error document.
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=site)["Contents"]] == ["error.html", "index.html"]
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=site, Key="missing.html")
    assert err_code(e.value) == "NoSuchKey"
    h, port = srv.host_port
    conn = http.client.HTTPConnection(h, port, timeout=30)
    conn.request("GET", f"/{site}/missing.html")
    r = conn.getresponse()
    body = r.read()
    conn.close()
    assert r.status == 403 and r.getheader("content-type") == "application/xml", body
    assert b"<Code>AccessDenied</Code>" in body and b"oops" not in body
    # Signed S3 writes work as before.
    s3.put_object(Bucket=site, Key="new.html", Body=b"n")
    assert s3.get_object(Bucket=site, Key="new.html")["Body"].read() == b"n"


def test_cors_headers_are_the_website_buckets(gw, site):
    """An `Origin` on a website request gets the CORS headers of the Host's bucket (not of a
    bucket named by the path, which the S3 endpoint would read)."""
    srv, s3 = gw
    s3.put_bucket_website(Bucket=site, WebsiteConfiguration={"IndexDocument": {"Suffix": "index.html"}})
    put(s3, site, "index.html", b"home")
    s3.put_bucket_cors(Bucket=site, CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": ["https://app.example"], "AllowedMethods": ["GET"]}]})
    st, h, body = web(srv, site, "/", headers={"Origin": "https://app.example"})
    assert (st, body, h.get("access-control-allow-origin")) == (200, b"home", "https://app.example")
    st, h, _ = web(srv, site, "/", headers={"Origin": "https://other.example"})
    assert st == 200 and "access-control-allow-origin" not in h
