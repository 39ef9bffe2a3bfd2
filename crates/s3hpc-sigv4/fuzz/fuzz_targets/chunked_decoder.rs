//! The aws-chunked decoder on arbitrary and on mutated valid bodies, split at arbitrary points.
//!
//! Input bytes: [mode, chunk, mutate_pos(2), mutate_xor, n_cuts, cuts(2 each)..., payload...]
//! - mode & 3 == 0: the payload itself is the wire body (random bytes), decoded in all modes:
//!   must not panic, and a clean end means the decoder reached its end state.
//! - otherwise a valid body is built (signed, signed+trailer, unsigned+trailer); unmutated it
//!   must decode to exactly the payload whatever the split points; mutated it must either fail
//!   or still yield exactly the payload (never different bytes).
#![no_main]

use std::collections::VecDeque;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use s3hpc_sigv4::chunked::Decoder;
use s3hpc_sigv4::{ChunkContext, Credentials, testing};

fn run(dec: &mut Decoder, wire: &[u8], cuts: &[usize]) -> Result<Vec<u8>, ()> {
    let wire = Bytes::copy_from_slice(wire);
    let mut out = VecDeque::new();
    let mut start = 0;
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
    points.sort_unstable();
    points.push(wire.len());
    for p in points {
        if p < start {
            continue;
        }
        dec.feed(wire.slice(start..p), &mut out).map_err(|_| ())?;
        start = p;
    }
    dec.finish().map_err(|_| ())?;
    assert!(dec.is_done(), "finish() succeeded before the end state");
    Ok(out.into_iter().flat_map(|b| b.to_vec()).collect())
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 6 {
        return;
    }
    let mode = data[0] & 3;
    let chunk = 1 + data[1] as usize * 7;
    let mpos = u16::from_le_bytes([data[2], data[3]]) as usize;
    let mxor = data[4];
    let ncuts = (data[5] & 15) as usize;
    let rest = &data[6..];
    if rest.len() < ncuts * 2 {
        return;
    }
    let cuts: Vec<usize> = rest[..ncuts * 2].chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]]) as usize).collect();
    let payload = &rest[ncuts * 2..];
    let creds = Credentials::new("AKIAFUZZ", "fuzzsecret");
    let ctx = ChunkContext::new(&creds, "us-east-1", "20240101T000000Z", &"ab".repeat(32), None);
    if mode == 0 {
        let _ = run(&mut Decoder::new(Some(ctx.clone()), false, None), payload, &cuts);
        let _ = run(&mut Decoder::new(Some(ctx), true, None), payload, &cuts);
        let _ = run(&mut Decoder::new(None, true, None), payload, &cuts);
        return;
    }
    let (mut wire, mut dec) = match mode {
        1 => (testing::signed_chunked_body(&ctx, payload, chunk, None), Decoder::new(Some(ctx.clone()), false, None)),
        2 => (
            testing::signed_chunked_body(&ctx, payload, chunk, Some(&[("x-amz-checksum-crc32", "AAAAAA==")])),
            Decoder::new(Some(ctx.clone()), true, None),
        ),
        _ => (
            testing::unsigned_chunked_body(payload, chunk, &[("x-amz-checksum-crc32", "AAAAAA==")]),
            Decoder::new(None, true, None),
        ),
    };
    let mutated = mxor != 0 && !wire.is_empty();
    if mutated {
        let i = mpos % wire.len();
        wire[i] ^= mxor;
    }
    match run(&mut dec, &wire, &cuts) {
        Ok(out) => {
            // Unsigned bodies can be altered undetectably (that is what the trailer checksum is for):
            // only signed modes promise the payload.
            if !mutated || mode != 3 {
                assert_eq!(out, payload, "decoded bytes differ (mode {mode}, mutated {mutated})");
            }
        }
        Err(()) => assert!(mutated, "valid body rejected (mode {mode}, chunk {chunk})"),
    }
});
