//! Known-answer tests (AWS's documented SigV4 examples) and round trips.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures::StreamExt;
use s3hpc_core::ErrorCode;

use super::*;
use crate::chunked::Decoder;
use crate::encode::parse_amz_date;

const AK: &str = "AKIAIOSFODNN7EXAMPLE";
const SK: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

fn creds() -> Credentials {
    Credentials::new(AK, SK)
}

fn set() -> CredentialSet {
    CredentialSet::new([creds()])
}

/// [`super::verify`] as a gateway in us-east-1 with SigV2 on.
fn verify(p: &http::request::Parts, c: &CredentialSet, now: SystemTime) -> Result<Verified, Error> {
    super::verify(p, c, now, &Accept::new("us-east-1"))
}

fn t0() -> SystemTime {
    parse_amz_date("20130524T000000Z").unwrap()
}

fn parts(method: &str, uri: &str, headers: &[(&str, &str)]) -> http::request::Parts {
    let mut b = http::Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(()).unwrap().into_parts().0
}

#[test]
fn aws_example_get_object() {
    let p = parts(
        "GET",
        "/test.txt",
        &[
            ("host", "examplebucket.s3.amazonaws.com"),
            ("range", "bytes=0-9"),
            ("x-amz-content-sha256", EMPTY_SHA256),
            ("x-amz-date", "20130524T000000Z"),
            (
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
            ),
        ],
    );
    let v = verify(&p, &set(), t0()).expect("AWS example verifies");
    assert_eq!(v.access_key, AK);
    assert_eq!(v.payload, Payload::Sha256(EMPTY_SHA256.into()));

    // The same request signed by `sign` gives the documented signature.
    let mut h = http::HeaderMap::new();
    h.insert("host", "examplebucket.s3.amazonaws.com".parse().unwrap());
    h.insert("range", "bytes=0-9".parse().unwrap());
    let uri: http::Uri = "/test.txt".parse().unwrap();
    sign(&http::Method::GET, &uri, &mut h, &creds(), "us-east-1", EMPTY_SHA256, t0());
    let auth = h["authorization"].to_str().unwrap();
    assert!(auth.ends_with("Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"), "{auth}");
}

#[test]
fn aws_example_put_object_with_dollar_in_key() {
    let body = "Welcome to Amazon S3.";
    let p = parts(
        "PUT",
        "/test$file.text",
        &[
            ("host", "examplebucket.s3.amazonaws.com"),
            ("date", "Fri, 24 May 2013 00:00:00 GMT"),
            ("x-amz-date", "20130524T000000Z"),
            ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            ("x-amz-content-sha256", "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"),
            (
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
            ),
        ],
    );
    let v = verify(&p, &set(), t0()).expect("AWS PUT example verifies");
    assert_eq!(signer::sha256_hex(body.as_bytes()), "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    // Good body passes; a different body of the same length fails at the end.
    let ok = rt.block_on(collect(verified_body(&v, one(body.as_bytes()), None)));
    assert_eq!(ok.unwrap(), body.as_bytes());
    let bad = rt.block_on(collect(verified_body(&v, one(b"Welcome to Amazon S4."), None)));
    assert_eq!(bad.unwrap_err().code, ErrorCode::XAmzContentSHA256Mismatch);
}

#[test]
fn aws_example_list_objects_query() {
    let p = parts(
        "GET",
        "/?max-keys=2&prefix=J",
        &[
            ("host", "examplebucket.s3.amazonaws.com"),
            ("x-amz-date", "20130524T000000Z"),
            ("x-amz-content-sha256", EMPTY_SHA256),
            (
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
            ),
        ],
    );
    verify(&p, &set(), t0()).expect("AWS list example verifies");
}

#[test]
fn aws_example_presigned() {
    let url = "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
    let uri: http::Uri = url.parse().unwrap();
    let pq = uri.path_and_query().unwrap().as_str();
    let p = parts("GET", pq, &[("host", "examplebucket.s3.amazonaws.com")]);
    let v = verify(&p, &set(), t0() + Duration::from_secs(3600)).expect("presigned example verifies");
    assert_eq!(v.payload, Payload::Unsigned);
    // presign() reproduces the URL.
    let base: http::Uri = "https://examplebucket.s3.amazonaws.com/test.txt".parse().unwrap();
    let mine = presign(&http::Method::GET, &base, &creds(), "us-east-1", Duration::from_secs(86400), t0());
    assert_eq!(mine, url);
    // Expired one second after the window.
    let e = verify(&p, &set(), t0() + Duration::from_secs(86401)).unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (ErrorCode::AccessDenied, "Request has expired."));
    // Tampered path.
    let p2 = parts("GET", &pq.replace("test.txt", "test.txu"), &[("host", "examplebucket.s3.amazonaws.com")]);
    assert_eq!(verify(&p2, &set(), t0()).unwrap_err().code, ErrorCode::SignatureDoesNotMatch);
}

#[test]
fn presign_expires_bounds() {
    use ErrorCode::{AccessDenied, AuthorizationQueryParametersError as QueryError, SignatureDoesNotMatch};
    let week = "X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds";
    for (exp, code, msg) in [
        ("0", AccessDenied, "Request has expired."),
        ("1", SignatureDoesNotMatch, ""),
        ("604800", SignatureDoesNotMatch, ""),
        ("604801", QueryError, week),
        ("-1", QueryError, "X-Amz-Expires must be non-negative"),
        ("x", QueryError, "X-Amz-Expires should be a number"),
    ] {
        let q = format!(
            "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={AK}%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires={exp}&X-Amz-SignedHeaders=host&X-Amz-Signature={}",
            "0".repeat(64)
        );
        let e = verify(&parts("GET", &q, &[("host", "h")]), &set(), t0() + Duration::from_secs(1)).unwrap_err();
        assert_eq!(e.code, code, "{exp}");
        if !msg.is_empty() {
            assert_eq!(e.message, msg, "{exp}");
        }
    }
    // Missing parameters and malformed credentials, in AWS's words.
    let q = "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=00";
    let e = verify(&parts("GET", q, &[("host", "h")]), &set(), t0()).unwrap_err();
    assert_eq!(e.code, QueryError);
    assert!(
        e.message.starts_with("Query-string authentication version 4 requires the X-Amz-Algorithm"),
        "{}",
        e.message
    );
    for (cred, want) in [
        ("AK%2F20130524%2Fus-east-1%2Fs4%2Faws4_request", "incorrect service \"s4\". This endpoint belongs to \"s3\"."),
        (
            "AK%2F20130524%2Fus-east-1%2Fs3%2Faws5_request",
            "incorrect terminal \"aws5_request\". This endpoint uses \"aws4_request\".",
        ),
        (
            "AK%2F2013-05-24%2Fus-east-1%2Fs3%2Faws4_request",
            "incorrect date format \"2013-05-24\". This date in the credential must be in the format \"yyyyMMdd\".",
        ),
    ] {
        let q = format!(
            "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={cred}&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=00"
        );
        let e = verify(&parts("GET", &q, &[("host", "h")]), &set(), t0()).unwrap_err();
        assert_eq!((e.code, e.message), (QueryError, format!("Error parsing the X-Amz-Credential parameter; {want}")));
    }
    // A round trip through presign() with an awkward key and an existing query.
    let base: http::Uri =
        "http://127.0.0.1:9000/bucket/a%20b%2Bc/%E2%82%AC?partNumber=1&uploadId=x%2By".parse().unwrap();
    let now = SystemTime::now();
    let url = presign(&http::Method::PUT, &base, &creds(), "us-east-1", Duration::from_secs(60), now);
    let uri: http::Uri = url.parse().unwrap();
    let p = parts("PUT", uri.path_and_query().unwrap().as_str(), &[("host", "127.0.0.1:9000")]);
    verify(&p, &set(), now).expect("own presigned URL verifies");
    assert_eq!(verify(&p, &set(), now + Duration::from_secs(61)).unwrap_err().message, "Request has expired.");
    let p = parts("PUT", uri.path_and_query().unwrap().as_str(), &[("host", "127.0.0.1:9001")]);
    assert_eq!(verify(&p, &set(), now).unwrap_err().code, ErrorCode::SignatureDoesNotMatch);
}

fn signed_parts(
    method: &str,
    uri: &str,
    extra: &[(&str, &str)],
    payload: &str,
    now: SystemTime,
) -> http::request::Parts {
    let u: http::Uri = uri.parse().unwrap();
    let mut h = http::HeaderMap::new();
    h.insert("host", "127.0.0.1:9000".parse().unwrap());
    for (k, v) in extra {
        h.append(http::header::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
    }
    sign(&method.parse().unwrap(), &u, &mut h, &creds(), "us-east-1", payload, now);
    let mut p = parts(method, uri, &[]);
    p.headers = h;
    p
}

#[test]
fn sign_verify_roundtrip_and_tampering() {
    let now = SystemTime::now();
    let uri = "/bucket/dir/%E2%82%AC%20x+y?list-type=2&prefix=a%2Fb&delimiter=%2F";
    let p = signed_parts(
        "GET",
        uri,
        &[("x-amz-meta-a", "  two   spaces "), ("x-amz-meta-a", "second")],
        UNSIGNED_PAYLOAD,
        now,
    );
    let v = verify(&p, &set(), now).unwrap();
    assert_eq!(v.payload, Payload::Unsigned);

    // A client that sends '+' encoded as %2B and '/' unencoded signs the same canonical request.
    let mut p2 = p.clone();
    p2.uri = "/bucket/dir/%E2%82%AC%20x%2By?list-type=2&prefix=a%2Fb&delimiter=%2F".parse().unwrap();
    verify(&p2, &set(), now).expect("equivalent encoding verifies");

    let mut t = p.clone();
    t.uri = "/bucket/dir/other?list-type=2&prefix=a%2Fb&delimiter=%2F".parse().unwrap();
    assert_eq!(verify(&t, &set(), now).unwrap_err().code, ErrorCode::SignatureDoesNotMatch);
    let mut t = p.clone();
    t.method = http::Method::DELETE;
    assert_eq!(verify(&t, &set(), now).unwrap_err().code, ErrorCode::SignatureDoesNotMatch);
    let mut t = p.clone();
    t.headers.insert("x-amz-meta-a", "changed".parse().unwrap());
    assert_eq!(verify(&t, &set(), now).unwrap_err().code, ErrorCode::SignatureDoesNotMatch);
    let mut t = p.clone();
    t.uri = "/bucket/dir/%E2%82%AC%20x+y?list-type=2&prefix=a%2Fc&delimiter=%2F".parse().unwrap();
    assert_eq!(verify(&t, &set(), now).unwrap_err().code, ErrorCode::SignatureDoesNotMatch);
    // Unsigned extra headers don't matter.
    let mut t = p.clone();
    t.headers.insert("user-agent", "x".parse().unwrap());
    verify(&t, &set(), now).unwrap();
    // Unknown key, wrong secret.
    let other = CredentialSet::new([Credentials::new("OTHER", SK)]);
    assert_eq!(verify(&p, &other, now).unwrap_err().code, ErrorCode::InvalidAccessKeyId);
    let wrong = CredentialSet::new([Credentials::new(AK, "nope")]);
    assert_eq!(verify(&p, &wrong, now).unwrap_err().code, ErrorCode::SignatureDoesNotMatch);
    // Skew.
    assert_eq!(
        verify(&p, &set(), now + Duration::from_secs(16 * 60)).unwrap_err().code,
        ErrorCode::RequestTimeTooSkewed
    );
    verify(&p, &set(), now + Duration::from_secs(14 * 60)).unwrap();
    assert_eq!(
        verify(&p, &set(), now - Duration::from_secs(16 * 60)).unwrap_err().code,
        ErrorCode::RequestTimeTooSkewed
    );
}

#[test]
fn session_token_is_sent_and_signed() {
    let now = SystemTime::now();
    let tok = "FwoGZXIvYXdzE/token+with=odd/chars";
    let c = creds().with_session_token(Some(tok.into()));
    let u: http::Uri = "/bucket/key".parse().unwrap();
    let mut h = http::HeaderMap::new();
    h.insert("host", "127.0.0.1:9000".parse().unwrap());
    sign(&http::Method::GET, &u, &mut h, &c, "us-east-1", UNSIGNED_PAYLOAD, now);
    assert_eq!(h.get("x-amz-security-token").unwrap(), tok);
    let auth = h.get("authorization").unwrap().to_str().unwrap().to_string();
    assert!(auth.contains("x-amz-security-token"), "{auth}");
    let mut p = parts("GET", "/bucket/key", &[]);
    p.headers = h;
    verify(&p, &set(), now).expect("a signed token header verifies");
    let mut t = p.clone();
    t.headers.insert("x-amz-security-token", "other".parse().unwrap());
    assert_eq!(verify(&t, &set(), now).unwrap_err().code, ErrorCode::SignatureDoesNotMatch);
    // Without a token nothing is added.
    let mut h = http::HeaderMap::new();
    sign(&http::Method::GET, &u, &mut h, &creds(), "us-east-1", UNSIGNED_PAYLOAD, now);
    assert!(h.get("x-amz-security-token").is_none());

    // Presigned: the token is a signed query parameter.
    let base: http::Uri = "http://127.0.0.1:9000/bucket/key".parse().unwrap();
    let url = presign(&http::Method::GET, &base, &c, "us-east-1", Duration::from_secs(60), now);
    assert!(url.contains("X-Amz-Security-Token=FwoGZXIvYXdzE%2Ftoken%2Bwith%3Dodd%2Fchars"), "{url}");
    let pq = url.parse::<http::Uri>().unwrap().path_and_query().unwrap().as_str().to_string();
    verify(&parts("GET", &pq, &[("host", "127.0.0.1:9000")]), &set(), now).expect("presigned with token verifies");
    let bad = pq.replace("X-Amz-Security-Token=FwoG", "X-Amz-Security-Token=XwoG");
    assert_eq!(
        verify(&parts("GET", &bad, &[("host", "127.0.0.1:9000")]), &set(), now).unwrap_err().code,
        ErrorCode::SignatureDoesNotMatch
    );
}

#[test]
fn auth_errors() {
    let now = t0();
    let base = [("host", "h"), ("x-amz-date", "20130524T000000Z"), ("x-amz-content-sha256", UNSIGNED_PAYLOAD)];
    let with = |auth: &str| {
        let mut h = base.to_vec();
        h.push(("authorization", auth));
        verify(&parts("GET", "/b/k", &h), &set(), now).unwrap_err().code
    };
    assert_eq!(verify(&parts("GET", "/b/k", &base), &set(), now).unwrap_err().code, ErrorCode::AccessDenied);
    let sig = "0".repeat(64);
    let good_cred = format!("{AK}/20130524/us-east-1/s3/aws4_request");
    assert_eq!(
        with(&format!(
            "AWS4-HMAC-SHA256 Credential={good_cred}, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature={sig}"
        )),
        ErrorCode::SignatureDoesNotMatch
    );
    for bad in [
        "AWS4-HMAC-SHA256".to_string(),
        "AWS4-HMAC-SHA512 Credential=x".to_string(),
        format!("AWS4-HMAC-SHA256 Credential={good_cred}, SignedHeaders=host"),
        format!("AWS4-HMAC-SHA256 Credential={good_cred}, Signature={sig}"),
        format!("AWS4-HMAC-SHA256 Credential={AK}/20130524/us-east-1/s3, SignedHeaders=host, Signature={sig}"),
        format!(
            "AWS4-HMAC-SHA256 Credential={AK}/20130524/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature={sig}"
        ),
        format!(
            "AWS4-HMAC-SHA256 Credential={AK}/20130525/us-east-1/s3/aws4_request, SignedHeaders=host, Signature={sig}"
        ),
        format!("AWS4-HMAC-SHA256 Credential={good_cred}, SignedHeaders=Host, Signature={sig}"),
        format!("AWS4-HMAC-SHA256 Credential={good_cred}, SignedHeaders=x-amz-date, Signature={sig}"),
        format!("AWS4-HMAC-SHA256 Credential={good_cred}, Credential={good_cred}, SignedHeaders=host, Signature={sig}"),
        format!("AWS4-HMAC-SHA256 Credential={good_cred}, SignedHeaders=host, Signature={sig}, Foo=1"),
        format!("AWS4-HMAC-SHA256 Credential={good_cred} SignedHeaders=host Signature={sig}"),
    ] {
        assert_eq!(with(&bad), ErrorCode::AuthorizationHeaderMalformed, "{bad}");
    }
    // SigV2: an unknown key with SigV2 on; AWS's "Please use AWS4-HMAC-SHA256" with it off.
    assert_eq!(with("AWS AKID:sig"), ErrorCode::InvalidAccessKeyId);
    let mut h = base.to_vec();
    h.push(("authorization", "AWS AKID:sig"));
    let off = Accept { sigv2: false, ..Accept::new("us-east-1") };
    let e = super::verify(&parts("GET", "/b/k", &h), &set(), now, &off).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            ErrorCode::InvalidRequest,
            "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256."
        )
    );
    assert_eq!(
        with(&format!(
            "AWS4-HMAC-SHA256 Credential=NOPE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, Signature={sig}"
        )),
        ErrorCode::InvalidAccessKeyId
    );
    // Bad x-amz-content-sha256.
    let mut h = base.to_vec();
    h[2] = ("x-amz-content-sha256", "nonsense");
    let a = format!(
        "AWS4-HMAC-SHA256 Credential={good_cred}, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature={sig}"
    );
    h.push(("authorization", &a));
    assert_eq!(verify(&parts("GET", "/b/k", &h), &set(), now).unwrap_err().code, ErrorCode::InvalidArgument);
}

// ---- aws-chunked ----

fn one(b: &'static [u8]) -> ByteStream {
    Box::pin(futures::stream::once(async move { Ok(Bytes::from_static(b)) }))
}

fn pieces(data: Vec<u8>, cuts: &[usize]) -> ByteStream {
    let mut v = Vec::new();
    let mut start = 0;
    for &c in cuts {
        let c = c.min(data.len()).max(start);
        v.push(Ok(Bytes::copy_from_slice(&data[start..c])));
        start = c;
    }
    v.push(Ok(Bytes::copy_from_slice(&data[start..])));
    Box::pin(futures::stream::iter(v))
}

async fn collect(mut s: ByteStream) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    while let Some(c) = s.next().await {
        out.extend_from_slice(&c.map_err(Error::from)?);
    }
    Ok(out)
}

/// AWS's chunked-upload example: 66560 bytes of 'a' in a 64 KiB chunk, a 1 KiB chunk and the
/// final empty chunk, with the documented seed and chunk signatures.
fn aws_chunked_example() -> (http::request::Parts, Vec<u8>) {
    let p = parts(
        "PUT",
        "/examplebucket/chunkObject.txt",
        &[
            ("host", "s3.amazonaws.com"),
            ("x-amz-date", "20130524T000000Z"),
            ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            ("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
            ("content-encoding", "aws-chunked"),
            ("x-amz-decoded-content-length", "66560"),
            ("content-length", "66824"),
            (
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
            ),
        ],
    );
    let mut body = Vec::new();
    body.extend_from_slice(
        b"10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n",
    );
    body.extend(std::iter::repeat_n(b'a', 65536));
    body.extend_from_slice(
        b"\r\n400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n",
    );
    body.extend(std::iter::repeat_n(b'a', 1024));
    body.extend_from_slice(
        b"\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n",
    );
    assert_eq!(body.len(), 66824);
    (p, body)
}

#[tokio::test]
async fn aws_chunked_example_decodes_split_anywhere() {
    let (p, body) = aws_chunked_example();
    let v = verify(&p, &set(), t0()).expect("seed signature verifies");
    assert_eq!(v.payload, Payload::Streaming { signed_chunks: true, trailer: false });
    // The testing encoder reproduces the documented body from the seed.
    let enc = testing::signed_chunked_body(v.chunk_ctx.as_ref().unwrap(), &vec![b'a'; 66560], 65536, None);
    assert_eq!(enc, body);
    for cuts in [vec![], vec![1], vec![5, 90, 91, 65626, 65627, 65628], vec![66700, 66822, 66823]] {
        let out = collect(verified_body(&v, pieces(body.clone(), &cuts), None)).await.unwrap();
        assert_eq!(out.len(), 66560);
        assert!(out.iter().all(|&b| b == b'a'));
    }
    // Every one-byte split point.
    for cut in (0..body.len()).step_by(97).chain(body.len() - 120..body.len()) {
        let out = collect(verified_body(&v, pieces(body.clone(), &[cut]), None)).await.unwrap();
        assert_eq!(out.len(), 66560, "cut {cut}");
    }
}

#[tokio::test]
async fn aws_chunked_corruption_is_an_error() {
    let (p, body) = aws_chunked_example();
    let v = verify(&p, &set(), t0()).unwrap();
    // Flip a data byte of the first chunk: its signature fails and no byte of it is released.
    let mut bad = body.clone();
    bad[1000] = b'b';
    let mut s = verified_body(&v, pieces(bad, &[2000]), None);
    let first = s.next().await.unwrap();
    assert_eq!(Error::from(first.unwrap_err()).code, ErrorCode::SignatureDoesNotMatch);
    // Every truncation fails.
    for len in [0, 1, 50, 86, 87, 65623, 65624, 66000, 66819, 66822, 66823] {
        let r = collect(verified_body(&v, pieces(body[..len].to_vec(), &[len / 2]), None)).await;
        assert!(r.is_err(), "truncated at {len} decoded cleanly");
    }
    // Trailing garbage.
    let mut extra = body.clone();
    extra.extend_from_slice(b"x");
    assert_eq!(collect(verified_body(&v, pieces(extra, &[]), None)).await.unwrap_err().code, ErrorCode::InvalidRequest);
    // Wrong chunk signature on the final chunk.
    let mut bad = body.clone();
    let n = bad.len();
    bad[n - 5] ^= 1;
    assert_eq!(
        collect(verified_body(&v, pieces(bad, &[]), None)).await.unwrap_err().code,
        ErrorCode::SignatureDoesNotMatch
    );
    // Chunks swapped in order cannot verify (signatures chain).
    let c = v.chunk_ctx.as_ref().unwrap();
    let mut reordered = Vec::new();
    let s1 = c.chunk_signature(c.seed_signature(), &[b'a'; 1024]);
    reordered.extend_from_slice(format!("400;chunk-signature={s1}\r\n").as_bytes());
    reordered.extend(std::iter::repeat_n(b'a', 1024));
    reordered.extend_from_slice(b"\r\n");
    reordered.extend_from_slice(&body[..]);
    assert!(collect(verified_body(&v, pieces(reordered, &[]), None)).await.is_err());
    // Over-long size line.
    let long = format!("{}\r\n", "1".repeat(2000)).into_bytes();
    assert_eq!(collect(verified_body(&v, pieces(long, &[3]), None)).await.unwrap_err().code, ErrorCode::InvalidRequest);
}

#[tokio::test]
async fn signed_trailer_roundtrip() {
    let now = SystemTime::now();
    let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7) as u8).collect();
    let crc = s3hpc_core::checksum::checksum_of(s3hpc_core::ChecksumAlgorithm::Crc32, &data).value;
    let p = signed_parts(
        "PUT",
        "/b/k",
        &[("x-amz-trailer", "x-amz-checksum-crc32"), ("x-amz-decoded-content-length", "200000")],
        STREAMING_SIGNED_TRAILER,
        now,
    );
    let v = verify(&p, &set(), now).unwrap();
    assert_eq!(v.payload, Payload::Streaming { signed_chunks: true, trailer: true });
    let ctx = v.chunk_ctx.clone().unwrap();
    let body = testing::signed_chunked_body(&ctx, &data, 65536, Some(&[("x-amz-checksum-crc32", &crc)]));
    for cuts in [vec![], vec![3, 100, 70_000, body.len() - 3]] {
        let sink = TrailerSink { name: "x-amz-checksum-crc32".into(), value: Default::default() };
        let out = collect(verified_body(&v, pieces(body.clone(), &cuts), Some(sink.clone()))).await.unwrap();
        assert_eq!(out, data);
        assert_eq!(sink.value.get(), Some(&crc));
    }
    // minio-go's form: each trailer line as signed (`name:value\n`), then `\r\n` and the
    // signature line; an empty line ending in a bare LF is still refused.
    let crlf = format!("x-amz-checksum-crc32:{crc}\r\nx-amz-trailer-signature");
    let swap = |with: &str| {
        let at = body.windows(crlf.len()).position(|w| w == crlf.as_bytes()).expect("the trailer line");
        [&body[..at], with.as_bytes(), &body[at + crlf.len()..]].concat()
    };
    let minio = swap(&format!("x-amz-checksum-crc32:{crc}\n\r\nx-amz-trailer-signature"));
    for cuts in [vec![], vec![minio.len() - 90, minio.len() - 88, minio.len() - 3]] {
        let sink = TrailerSink { name: "x-amz-checksum-crc32".into(), value: Default::default() };
        let out = collect(verified_body(&v, pieces(minio.clone(), &cuts), Some(sink.clone()))).await;
        assert_eq!(out.unwrap(), data);
        assert_eq!(sink.value.get(), Some(&crc));
    }
    let bare = swap(&format!("x-amz-checksum-crc32:{crc}\n\nx-amz-trailer-signature"));
    let e = collect(verified_body(&v, pieces(bare, &[]), None)).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidRequest);
    // A tampered trailer value fails the trailer signature and sets nothing.
    let tampered = String::from_utf8_lossy(&body).replace(&crc, "AAAAAA==").into_bytes();
    let sink = TrailerSink { name: "x-amz-checksum-crc32".into(), value: Default::default() };
    let e = collect(verified_body(&v, pieces(tampered, &[]), Some(sink.clone()))).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::SignatureDoesNotMatch);
    assert!(sink.value.get().is_none());
    // Wrong decoded length.
    let p = signed_parts("PUT", "/b/k", &[("x-amz-decoded-content-length", "199999")], STREAMING_SIGNED_TRAILER, now);
    let v = verify(&p, &set(), now).unwrap();
    let body = testing::signed_chunked_body(v.chunk_ctx.as_ref().unwrap(), &data, 65536, Some(&[]));
    assert_eq!(collect(verified_body(&v, pieces(body, &[]), None)).await.unwrap_err().code, ErrorCode::IncompleteBody);
}

#[tokio::test]
async fn unsigned_trailer_decoding() {
    let now = SystemTime::now();
    let p = signed_parts("PUT", "/b/k", &[("x-amz-trailer", "x-amz-checksum-crc32c")], STREAMING_UNSIGNED_TRAILER, now);
    let v = verify(&p, &set(), now).unwrap();
    assert_eq!(v.payload, Payload::Streaming { signed_chunks: false, trailer: true });
    let data = b"hello world, this is aws-chunked".repeat(1000);
    let body = testing::unsigned_chunked_body(&data, 8192, &[("x-amz-checksum-crc32c", "yZRlqg==")]);
    let sink = TrailerSink { name: "x-amz-checksum-crc32c".into(), value: Default::default() };
    let out =
        collect(verified_body(&v, pieces(body.clone(), &[1, 2, 3, 8195, 8197]), Some(sink.clone()))).await.unwrap();
    assert_eq!(out, data);
    assert_eq!(sink.value.get().map(String::as_str), Some("yZRlqg=="));
    // Missing announced trailer: AWS's MalformedTrailerError.
    let body2 = testing::unsigned_chunked_body(&data, 8192, &[]);
    let sink = TrailerSink { name: "x-amz-checksum-crc32c".into(), value: Default::default() };
    assert_eq!(
        collect(verified_body(&v, pieces(body2, &[]), Some(sink))).await.unwrap_err().code,
        ErrorCode::MalformedTrailerError
    );
    // Truncated inside the trailer line, inside data, before the zero chunk.
    for cut in [body.len() - 5, body.len() - 30, 100, 8192 + 8] {
        let r = collect(verified_body(&v, pieces(body[..cut].to_vec(), &[]), None)).await;
        assert!(r.is_err(), "cut {cut}");
    }
    // Huge trailer.
    let mut big = testing::unsigned_chunked_body(b"x", 1, &[]);
    big.truncate(big.len() - 2);
    big.extend_from_slice(format!("x-amz-meta:{}\r\n\r\n", "v".repeat(17 * 1024)).as_bytes());
    assert_eq!(collect(verified_body(&v, pieces(big, &[]), None)).await.unwrap_err().code, ErrorCode::InvalidRequest);
}

#[test]
fn decoder_is_zero_copy() {
    let data = vec![7u8; 100_000];
    let body = Bytes::from(testing::unsigned_chunked_body(&data, 50_000, &[]));
    let mut d = Decoder::new(None, true, None);
    let mut out = VecDeque::new();
    d.feed(body.clone(), &mut out).unwrap();
    d.finish().unwrap();
    assert_eq!(out.len(), 2);
    let base = body.as_ptr() as usize;
    for piece in &out {
        let p = piece.as_ptr() as usize;
        assert!(p >= base && p < base + body.len(), "payload was copied");
    }
}

#[test]
fn amz_dates_of_sign_match() {
    let mut h = http::HeaderMap::new();
    h.insert("host", "x".parse().unwrap());
    sign(
        &http::Method::GET,
        &"/".parse().unwrap(),
        &mut h,
        &creds(),
        "r",
        UNSIGNED_PAYLOAD,
        t0() + Duration::from_secs(3723),
    );
    assert_eq!(h["x-amz-date"], "20130524T010203Z");
    assert_eq!(h["x-amz-content-sha256"], UNSIGNED_PAYLOAD);
}

// ---- strict SigV4: region and unsigned x-amz-* headers ----

#[test]
fn credential_scope_must_name_the_servers_region() {
    let now = SystemTime::now();
    let mut h = http::HeaderMap::new();
    h.insert("host", "h".parse().unwrap());
    let uri: http::Uri = "/b/k".parse().unwrap();
    sign(&http::Method::GET, &uri, &mut h, &creds(), "eu-west-1", UNSIGNED_PAYLOAD, now);
    let mut p = parts("GET", "/b/k", &[]);
    p.headers = h;
    let e = verify(&p, &set(), now).unwrap_err();
    assert_eq!(e.code, ErrorCode::AuthorizationHeaderMalformed);
    assert_eq!(
        e.message,
        "The authorization header is malformed; the region 'eu-west-1' is wrong; expecting 'us-east-1'"
    );
    assert_eq!(e.detail("Region"), Some("us-east-1"));
    super::verify(&p, &set(), now, &Accept::new("eu-west-1")).expect("the server's own region verifies");

    let base: http::Uri = "http://h/b/k".parse().unwrap();
    let url = presign(&http::Method::GET, &base, &creds(), "eu-west-1", Duration::from_secs(60), now);
    let pq = url.parse::<http::Uri>().unwrap().path_and_query().unwrap().as_str().to_string();
    let e = verify(&parts("GET", &pq, &[("host", "h")]), &set(), now).unwrap_err();
    assert_eq!(e.code, ErrorCode::AuthorizationQueryParametersError);
    assert_eq!(
        e.message,
        "Error parsing the X-Amz-Credential parameter; the region 'eu-west-1' is wrong; expecting 'us-east-1'"
    );
    assert_eq!(e.detail("Region"), Some("us-east-1"));
}

#[test]
fn unsigned_amz_headers_are_refused() {
    let now = SystemTime::now();
    let uri: http::Uri = "/b/k".parse().unwrap();
    let mut h = http::HeaderMap::new();
    h.insert("host", "h".parse().unwrap());
    h.insert("x-amz-meta-a", "signed".parse().unwrap());
    sign(&http::Method::PUT, &uri, &mut h, &creds(), "us-east-1", UNSIGNED_PAYLOAD, now);
    let mut p = parts("PUT", "/b/k", &[]);
    p.headers = h.clone();
    verify(&p, &set(), now).expect("every header signed");
    p.headers.insert("x-amz-copy-source", "/b/other".parse().unwrap());
    p.headers.insert("x-amz-tagging", "a=b".parse().unwrap());
    p.headers.insert("content-type", "text/plain".parse().unwrap()); // not x-amz-*: allowed
    let e = verify(&p, &set(), now).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (ErrorCode::AccessDenied, "There were headers present in the request which were not signed")
    );
    assert_eq!(e.detail("HeadersNotSigned"), Some("x-amz-copy-source, x-amz-tagging"));

    // Presigned: the same, except x-amz-content-sha256.
    let base: http::Uri = "http://h/b/k".parse().unwrap();
    let url = presign(&http::Method::PUT, &base, &creds(), "us-east-1", Duration::from_secs(60), now);
    let pq = url.parse::<http::Uri>().unwrap().path_and_query().unwrap().as_str().to_string();
    verify(&parts("PUT", &pq, &[("host", "h"), ("x-amz-content-sha256", UNSIGNED_PAYLOAD)]), &set(), now)
        .expect("an unsigned UNSIGNED-PAYLOAD is accepted on a presigned URL");
    let e = verify(&parts("PUT", &pq, &[("host", "h"), ("x-amz-acl", "public-read")]), &set(), now).unwrap_err();
    assert_eq!((e.code, e.detail("HeadersNotSigned")), (ErrorCode::AccessDenied, Some("x-amz-acl")));
}

// ---- SigV2 ----

#[test]
fn sigv2_aws_examples() {
    // AWS's documented examples (RESTAuthentication): header auth of a virtual-host GET, and the
    // query-string form of the same object.
    let date = httpdate::parse_http_date("Tue, 27 Mar 2007 19:36:42 GMT").unwrap();
    let accept = Accept { domain: Some("s3.amazonaws.com".into()), ..Accept::new("us-east-1") };
    let p = parts(
        "GET",
        "/photos/puppy.jpg",
        &[
            ("host", "johnsmith.s3.amazonaws.com"),
            ("date", "Tue, 27 Mar 2007 19:36:42 +0000"),
            ("authorization", "AWS AKIAIOSFODNN7EXAMPLE:bWq2s1WEIj+Ydj0vQ697zp+IXMU="),
        ],
    );
    let v = super::verify(&p, &set(), date, &accept).expect("AWS's SigV2 example verifies");
    assert_eq!((v.access_key.as_str(), v.payload), (AK, Payload::Unsigned));
    // Off by 20 minutes: skewed.
    let e = super::verify(&p, &set(), date + Duration::from_secs(1200), &accept).unwrap_err();
    assert_eq!(e.code, ErrorCode::RequestTimeTooSkewed);
    // Path style: the same bytes under /johnsmith.
    let p = parts(
        "GET",
        "/johnsmith/photos/puppy.jpg",
        &[
            ("host", "localhost"),
            ("date", "Tue, 27 Mar 2007 19:36:42 +0000"),
            ("authorization", "AWS AKIAIOSFODNN7EXAMPLE:bWq2s1WEIj+Ydj0vQ697zp+IXMU="),
        ],
    );
    super::verify(&p, &set(), date, &accept).expect("path style");
    let q = "/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires=1175139620";
    let p = parts("GET", q, &[("host", "johnsmith.s3.amazonaws.com")]);
    super::verify(&p, &set(), date, &accept).expect("AWS's SigV2 query example verifies");
    let late = SystemTime::UNIX_EPOCH + Duration::from_secs(1_175_139_621);
    let e = super::verify(&p, &set(), late, &accept).unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (ErrorCode::AccessDenied, "Request has expired"));
    // An x-amz-* header added to the URL changes the string to sign.
    let p = parts("GET", q, &[("host", "johnsmith.s3.amazonaws.com"), ("x-amz-tagging", "a=b")]);
    let e = super::verify(&p, &set(), date, &accept).unwrap_err();
    assert_eq!(e.code, ErrorCode::SignatureDoesNotMatch);
    assert!(e.detail("StringToSign").unwrap().contains("x-amz-tagging:a=b\n"));
    // SigV2 turned off.
    let off = Accept { sigv2: false, ..accept };
    let p = parts("GET", q, &[("host", "johnsmith.s3.amazonaws.com")]);
    assert_eq!(super::verify(&p, &set(), date, &off).unwrap_err().code, ErrorCode::InvalidRequest);
}

#[test]
fn sigv2_string_to_sign() {
    let mut h = http::HeaderMap::new();
    h.insert("content-type", "text/plain".parse().unwrap());
    h.insert("content-md5", "4gJE4saaMU4BqNR0kLY+lw==".parse().unwrap());
    h.insert("date", "ignored".parse().unwrap());
    h.insert("x-amz-date", "Tue, 27 Mar 2007 21:06:08 +0000".parse().unwrap());
    h.append("x-amz-meta-b", " two ".parse().unwrap());
    h.append("X-Amz-Meta-B", "three".parse().unwrap());
    h.insert("x-amz-acl", "public-read".parse().unwrap());
    let sts = sigv2::string_to_sign(&sigv2::StringToSignInput {
        method: "PUT",
        raw_path: "/b/a%20b",
        raw_query: Some("uploadId=x%2By&partNumber=2&foo=1&acl"),
        headers: &h,
        vhost_bucket: None,
        expires: None,
        decode_values: true,
        bucket_slash: true,
    });
    assert_eq!(
        sts,
        "PUT\n4gJE4saaMU4BqNR0kLY+lw==\ntext/plain\n\nx-amz-acl:public-read\nx-amz-date:Tue, 27 Mar 2007 21:06:08 +0000\nx-amz-meta-b:two,three\n/b/a%20b?acl&partNumber=2&uploadId=x+y"
    );
}
