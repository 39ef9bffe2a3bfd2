//! Micro-benchmark of the SigV4 hot paths: `cargo run --release -p s3hpc-sigv4 --example sigv4_bench`.
//! Prints operations per second for sign/verify and MB/s for the aws-chunked decoder.

use std::collections::VecDeque;
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use s3hpc_sigv4::chunked::Decoder;
use s3hpc_sigv4::*;

fn main() {
    let creds = Credentials::new("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
    let set = CredentialSet::new([creds.clone()]);
    let now = SystemTime::now();
    let uri: http::Uri = "/bench-bucket/some/object/key-000123?partNumber=3&uploadId=abcdef0123456789".parse().unwrap();
    let n = 200_000;
    let accept = Accept::new("us-east-1");

    let t = Instant::now();
    let mut headers = http::HeaderMap::new();
    for _ in 0..n {
        headers.clear();
        headers.insert("host", "127.0.0.1:9000".parse().unwrap());
        headers.insert("content-type", "application/octet-stream".parse().unwrap());
        sign(&http::Method::PUT, &uri, &mut headers, &creds, "us-east-1", UNSIGNED_PAYLOAD, now);
    }
    let sign_rate = n as f64 / t.elapsed().as_secs_f64();

    let mut parts = http::Request::builder().method("PUT").uri(uri.clone()).body(()).unwrap().into_parts().0;
    parts.headers = headers;
    let t = Instant::now();
    for _ in 0..n {
        verify(&parts, &set, now, &accept).unwrap();
    }
    let verify_rate = n as f64 / t.elapsed().as_secs_f64();

    let data = vec![0x5au8; 64 << 20];
    let ctx = ChunkContext::new(&creds, "us-east-1", "20240101T000000Z", &"ab".repeat(32), None);
    let mut rates = Vec::new();
    for (name, wire, signed) in [
        ("signed 64KiB chunks", testing::signed_chunked_body(&ctx, &data, 64 << 10, None), true),
        (
            "unsigned+trailer 1MiB chunks",
            testing::unsigned_chunked_body(&data, 1 << 20, &[("x-amz-checksum-crc32", "x")]),
            false,
        ),
    ] {
        let wire = Bytes::from(wire);
        let t = Instant::now();
        let mut dec =
            if signed { Decoder::new(Some(ctx.clone()), false, None) } else { Decoder::new(None, true, None) };
        let mut out = VecDeque::new();
        // Network-sized reads of 256 KiB.
        let mut off = 0;
        let mut total = 0usize;
        while off < wire.len() {
            let end = (off + (256 << 10)).min(wire.len());
            dec.feed(wire.slice(off..end), &mut out).unwrap();
            total += out.drain(..).map(|b| b.len()).sum::<usize>();
            off = end;
        }
        dec.finish().unwrap();
        assert_eq!(total, data.len());
        rates.push((name, data.len() as f64 / t.elapsed().as_secs_f64() / 1e6));
    }
    println!("sign (PUT, 4 headers):    {sign_rate:>10.0} ops/s");
    println!("verify (header auth):     {verify_rate:>10.0} ops/s");
    for (name, r) in rates {
        println!("decode {name:<28} {r:>8.0} MB/s");
    }
}
