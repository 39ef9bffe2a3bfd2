//! Upload slots (BODY_FD requests, `docs/PROTOCOL.md` "Upload slots"): on a Unix socket, PUT and
//! UploadPart bodies held in memory travel through memory files that client and server both map.
//! The bytes must land whole, a slot must never carry a new body while the server may still read
//! the previous one, a store that keeps the bytes it is given must get its own copy, and a bad
//! slot must fail cleanly.
//!
//! This file is its own test binary because it counts the slot mappings of the process
//! (`/proc/self/maps`), which other tests' clients would disturb.

mod common;

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use s3hpc_core::hooked::{Hook, HookedStore, Op};
use s3hpc_core::{Body, DynStore, ErrorCode, GetObjectRequest, PutObjectRequest, Result, Store};
use s3hpc_wire::codec::{Dec, Enc, Request, UploadFields};
use s3hpc_wire::frame::{self, flag, ty};
use s3hpc_wire::sys::{auth_proof, slot_file};
use s3hpc_wire::{ClientOptions, ServerOptions, WireClient};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

/// Mappings of upload slot files in this process (client views and server views).
fn slot_maps() -> usize {
    std::fs::read_to_string("/proc/self/maps").unwrap().lines().filter(|l| l.contains("memfd:s3hpc-upload")).count()
}

async fn client(url: &str, fd_passing: bool) -> WireClient {
    let opts = ClientOptions { connections: 1, fd_passing, ..Default::default() };
    WireClient::connect_with(url, common::creds(), opts).await.unwrap()
}

async fn get(store: &dyn Store, key: &str) -> Bytes {
    store.get_object("bkt", key, GetObjectRequest::default()).await.unwrap().body.collect().await.unwrap()
}

/// PutObject of `key`s sleeps a while before the store reads the body.
struct SlowPut;

#[async_trait]
impl Hook for SlowPut {
    async fn before(&self, op: Op, _bucket: &str, key: &str) -> Result<()> {
        if op == Op::PutObject && key.starts_with("slow") {
            tokio::time::sleep(Duration::from_millis(400)).await;
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_slots() {
    memory_store_gets_its_own_copy().await;
    a_slot_is_not_reused_before_the_server_answered(false).await;
    many_concurrent_uploads_land_whole().await;
    body_buffers_are_sent_without_a_copy().await;
    a_slot_is_not_reused_before_the_server_answered(true).await;
    bad_slots_fail_cleanly().await;
}

/// The memory store keeps the bytes it is given: bodies from a reused slot must not change
/// objects stored earlier. Also: which bodies take a slot at all.
async fn memory_store_gets_its_own_copy() {
    let store: DynStore = Arc::new(s3hpc_core::memory::MemoryStore::new());
    store.create_bucket("bkt").await.unwrap();
    let r = common::start(store.clone(), true, ServerOptions::default()).await;
    let c = client(&r.server.url, true).await;
    assert_eq!(slot_maps(), 0);
    let (a, b) = (s3hpc_conformance::pattern(1, 1 << 20), s3hpc_conformance::pattern(2, 1 << 20));
    let out = c.put_object("bkt", "a", PutObjectRequest::default(), Body::from(a.clone())).await.unwrap();
    assert_eq!(out.etag, s3hpc_core::checksum::md5_hex(&a));
    assert_eq!(slot_maps(), 2, "a 1 MiB body goes through a slot, mapped by client and server");
    c.put_object("bkt", "b", PutObjectRequest::default(), Body::from(b.clone())).await.unwrap();
    assert_eq!(slot_maps(), 2, "the slot is reused");
    assert!(get(&*store, "a").await == a, "a reused slot changed an object stored from it");
    assert!(get(&*store, "b").await == b);
    // Below the threshold bodies stream; a larger one needs a second slot.
    let small = s3hpc_conformance::pattern(3, frame::FD_BODY_MIN - 1);
    c.put_object("bkt", "small", PutObjectRequest::default(), Body::from(small.clone())).await.unwrap();
    assert_eq!(slot_maps(), 2);
    let big = s3hpc_conformance::pattern(4, (5 << 20) + 3);
    c.put_object("bkt", "big", PutObjectRequest::default(), Body::from(big.clone())).await.unwrap();
    assert_eq!(slot_maps(), 4);
    assert!(get(&*store, "small").await == small && get(&*store, "big").await == big);
    // A client that does not offer descriptor passing streams everything.
    let plain = client(&r.server.url, false).await;
    plain.put_object("bkt", "plain", PutObjectRequest::default(), Body::from(a.clone())).await.unwrap();
    assert_eq!(slot_maps(), 4);
    drop((c, plain));
    r.server.shutdown().await.unwrap();
    // Slots end with their connection, on both sides (the server's view once its connection
    // task has gone).
    for _ in 0..50 {
        if slot_maps() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(slot_maps(), 0, "slot mappings outlived their connection");
}

/// A call given up before its answer (here: cancelled by a timeout while the server holds the
/// request) leaves its slot with the server: the next body must go elsewhere, or the first
/// object would be stored with the second one's bytes. The same for a slot the caller filled
/// itself (`lent`, `Store::body_buffer`): dropped, it must not return to the pool.
async fn a_slot_is_not_reused_before_the_server_answered(lent: bool) {
    let dir = tempfile::tempdir().unwrap();
    let posix = s3hpc_posix::PosixStore::open(dir.path(), s3hpc_posix::PosixOptions::default()).unwrap();
    let store: DynStore = Arc::new(HookedStore::new(Arc::new(posix), SlowPut));
    assert!(!store.capabilities().keeps_body_bytes, "the posix store reads the slot itself: no copy");
    store.create_bucket("bkt").await.unwrap();
    let r = common::start(store.clone(), true, ServerOptions::default()).await;
    let c = client(&r.server.url, true).await;
    let (x, y) = (s3hpc_conformance::pattern(5, 2 << 20), s3hpc_conformance::pattern(6, 2 << 20));
    let body = match lent {
        true => {
            let mut buf = c.body_buffer(x.len()).unwrap();
            buf.copy_from_slice(&x);
            buf.freeze()
        }
        false => x.clone(),
    };
    let put = c.put_object("bkt", "slow-x", PutObjectRequest::default(), Body::from(body.clone()));
    assert!(tokio::time::timeout(Duration::from_millis(100), put).await.is_err(), "the slow PUT finished early");
    drop(body);
    c.put_object("bkt", "y", PutObjectRequest::default(), Body::from(y.clone())).await.unwrap();
    // The abandoned request still completes on the server, with its own bytes.
    let mut landed = None;
    for _ in 0..100 {
        if let Ok(o) = store.get_object("bkt", "slow-x", GetObjectRequest::default()).await {
            landed = Some(o.body.collect().await.unwrap());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(landed.expect("the abandoned PUT never landed") == x, "the abandoned PUT got another body's bytes");
    assert!(get(&*store, "y").await == y);
    drop(c);
    r.server.shutdown().await.unwrap();
}

/// More concurrent uploads than slots, on a posix store: each lands with exactly its bytes
/// (those without a free slot stream).
async fn many_concurrent_uploads_land_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store: DynStore =
        Arc::new(s3hpc_posix::PosixStore::open(dir.path(), s3hpc_posix::PosixOptions::default()).unwrap());
    store.create_bucket("bkt").await.unwrap();
    let r = common::start(store.clone(), true, ServerOptions::default()).await;
    let c = Arc::new(client(&r.server.url, true).await);
    for round in 0..3u64 {
        let mut tasks = Vec::new();
        for k in 0..24u64 {
            let c = c.clone();
            let data = s3hpc_conformance::pattern(round * 100 + k, (300 << 10) + (k as usize) * 4099);
            tasks.push(tokio::spawn(async move {
                let key = format!("k{k}");
                c.put_object("bkt", &key, PutObjectRequest::default(), Body::from(data.clone())).await.unwrap();
                (key, data)
            }));
        }
        for t in tasks {
            let (key, data) = t.await.unwrap();
            assert!(get(&*store, &key).await == data, "round {round}, {key}: wrong bytes");
        }
    }
    assert!(slot_maps() <= 2 * frame::MAX_SLOTS as usize);
    drop(c);
    r.server.shutdown().await.unwrap();
}

/// Until every slot mapping of the servers stopped so far is gone.
async fn no_slot_maps_left() {
    for _ in 0..100 {
        if slot_maps() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{} slot mappings outlived their connections", slot_maps());
}

/// `Store::body_buffer`: bodies written into a slot the client lends out reach the server with
/// no copy (no slot of the pool is filled for them), whole or as a prefix, many at once over
/// the connection the slot belongs to, even as the first use that attaches the slot; the slot
/// goes back to the pool when the last `Bytes` over it is dropped.
async fn body_buffers_are_sent_without_a_copy() {
    no_slot_maps_left().await;
    let dir = tempfile::tempdir().unwrap();
    let store: DynStore =
        Arc::new(s3hpc_posix::PosixStore::open(dir.path(), s3hpc_posix::PosixOptions::default()).unwrap());
    store.create_bucket("bkt").await.unwrap();
    let r = common::start(store.clone(), true, ServerOptions::default()).await;
    let opts = ClientOptions { connections: 2, ..Default::default() };
    let c = Arc::new(WireClient::connect_with(&r.server.url, common::creds(), opts).await.unwrap());
    assert!(c.body_buffer(frame::FD_BODY_MIN - 1).is_none(), "below the slot threshold");
    assert!(c.body_buffer(frame::FD_BODY_MAX as usize + 1).is_none(), "above the largest slot");
    assert!(client(&r.server.url, false).await.body_buffer(1 << 20).is_none(), "no descriptor passing");
    let tcp = common::start(store.clone(), false, ServerOptions::default()).await;
    assert!(client(&tcp.server.url, true).await.body_buffer(1 << 20).is_none(), "TCP has no slots");
    let memory = s3hpc_core::memory::MemoryStore::new();
    assert!(memory.body_buffer(1 << 20).is_none(), "stores without such memory lend none");

    // One buffer per connection (they alternate), each first used by 8 PUTs at once.
    let mut frozen = Vec::new();
    for n in 0..2u64 {
        let len = (1 << 20) + 5 + n as usize;
        let mut buf = c.body_buffer(len).expect("a body buffer");
        assert_eq!(buf.len(), len);
        buf.copy_from_slice(&s3hpc_conformance::pattern(10 + n, len));
        frozen.push(buf.freeze());
    }
    assert_eq!(slot_maps(), 2, "the client's views of the two lent slots");
    let mut tasks = Vec::new();
    for (n, body) in frozen.iter().enumerate() {
        for k in 0..8 {
            let (c, body) = (c.clone(), body.clone());
            tasks.push(tokio::spawn(async move {
                let key = format!("lent{n}-{k}");
                let out = c.put_object("bkt", &key, PutObjectRequest::default(), Body::from(body.clone())).await;
                assert_eq!(out.unwrap().etag, s3hpc_core::checksum::md5_hex(&body));
                key
            }));
        }
    }
    for (i, t) in tasks.into_iter().enumerate() {
        let key = t.await.unwrap();
        assert!(get(&*store, &key).await == frozen[i / 8], "{key}: wrong bytes");
    }
    assert_eq!(slot_maps(), 4, "each lent slot mapped once by the server, and no other slot used");
    // A prefix of a lent buffer is sent from it too.
    let prefix = frozen[0].slice(..frame::FD_BODY_MIN + 7);
    c.put_object("bkt", "prefix", PutObjectRequest::default(), Body::from(prefix.clone())).await.unwrap();
    assert!(get(&*store, "prefix").await == prefix);
    assert_eq!(slot_maps(), 4);
    // Other bodies of that size fill slots of the pool: the lent ones are not there.
    let other = s3hpc_conformance::pattern(20, 1 << 20);
    c.put_object("bkt", "other", PutObjectRequest::default(), Body::from(other.clone())).await.unwrap();
    assert_eq!(slot_maps(), 6);
    // Dropped, the lent slots return to their pools and carry plain bodies without new files.
    drop((frozen, prefix));
    for k in 0..4 {
        let key = format!("after{k}");
        c.put_object("bkt", &key, PutObjectRequest::default(), Body::from(other.clone())).await.unwrap();
        assert!(get(&*store, &key).await == other);
    }
    assert_eq!(slot_maps(), 6, "a lent slot did not return to its pool");
    // A buffer dropped before it was frozen goes back to the pool too.
    let unused = c.body_buffer(1 << 20).unwrap();
    drop(unused);
    c.put_object("bkt", "after-unused", PutObjectRequest::default(), Body::from(other.clone())).await.unwrap();
    assert_eq!(slot_maps(), 6);
    drop(c);
    tcp.server.shutdown().await.unwrap();
    r.server.shutdown().await.unwrap();
    no_slot_maps_left().await;
}

// ---- raw frames

use common::{frame_bytes, read_frame};

/// A raw, authenticated Unix socket session that offered descriptor passing.
async fn raw_session(url: &str) -> UnixStream {
    let mut s = UnixStream::connect(url.strip_prefix("unix://").unwrap()).await.unwrap();
    s.write_all(&frame::client_preamble(frame::PREAMBLE_FD_PASSING)).await.unwrap();
    let mut sp = [0u8; frame::SERVER_PREAMBLE_LEN];
    s.read_exact(&mut sp).await.unwrap();
    let flags = u16::from_le_bytes([sp[6], sp[7]]);
    assert_ne!(flags & frame::SERVER_FD_BODIES, 0, "the server does not offer upload slots");
    let nonce: [u8; 32] = sp[8..].try_into().unwrap();
    let creds = common::creds();
    let mut e = Enc::new();
    e.str(&creds.access_key);
    e.bytes(&auth_proof(&creds.secret_key, &nonce, &creds.access_key));
    s.write_all(&frame_bytes(ty::AUTH, 0, 0, &e.finish())).await.unwrap();
    assert_eq!(read_frame(&mut s).await.unwrap().0.ty, ty::AUTH_OK);
    s
}

/// Send `data` with `fd` attached to its first byte (the frames here are small: one sendmsg).
fn send_with_fd(s: &UnixStream, data: &[u8], fd: BorrowedFd<'_>) {
    assert_eq!(s3hpc_wire::sys::sendmsg_fd(s, data, fd).unwrap(), data.len());
}

/// A PutObject REQUEST whose body is `len` bytes of upload slot `slot`.
fn slot_put(id: u32, key: &str, slot: u64, attached: bool, len: u64) -> Vec<u8> {
    let mut e = Enc::new();
    Request::PutObject {
        bucket: "bkt".into(),
        key: key.into(),
        meta: Default::default(),
        tags: vec![],
        conditions: Default::default(),
        upload: UploadFields::default(),
    }
    .encode(&mut e);
    e.var(slot);
    e.u8(attached as u8);
    e.var(len);
    frame_bytes(ty::REQUEST, flag::BODY_FD, id, &e.finish())
}

/// The error of request `id`'s RESPONSE.
async fn expect_error(s: &mut UnixStream, id: u32, code: ErrorCode, needle: &str) {
    let (h, p) = read_frame(s).await.expect("connection closed instead of an error response");
    assert_eq!((h.ty, h.id, p[0]), (ty::RESPONSE, id, 1), "expected an error response");
    let e = Dec::new(&p[1..]).error().unwrap();
    assert_eq!(e.code, code, "{e}");
    assert!(e.message.contains(needle), "error says {e}, expected it to mention {needle:?}");
}

async fn expect_goaway(s: &mut UnixStream, needle: &str) {
    let (h, p) = read_frame(s).await.expect("connection closed without GOAWAY");
    assert_eq!(h.ty, ty::GOAWAY, "expected GOAWAY");
    let e = Dec::new(&p).error().unwrap();
    assert!(e.message.contains(needle), "GOAWAY says {e}, expected it to mention {needle:?}");
    let mut rest = Vec::new();
    let n = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await.expect("not closed");
    assert!(n.is_ok());
}

/// Slot files that are not sealed, too short or never attached fail the request and leave
/// the connection serving; broken framing around descriptors closes the connection; nothing is
/// published from a failed request.
async fn bad_slots_fail_cleanly() {
    let store: DynStore = Arc::new(s3hpc_core::memory::MemoryStore::new());
    store.create_bucket("bkt").await.unwrap();
    let r = common::start(store.clone(), true, ServerOptions::default()).await;
    let url = r.server.url.clone();

    let mut s = raw_session(&url).await;
    // A slot that was never attached.
    s.write_all(&slot_put(1, "n1", 3, false, 10)).await.unwrap();
    expect_error(&mut s, 1, ErrorCode::InvalidRequest, "no descriptor attached").await;
    // A memory file without the size seals, and a plain file: refused.
    let unsealed = {
        let f = tempfile::tempfile().unwrap();
        f.set_len(4096).unwrap();
        f
    };
    send_with_fd(&s, &slot_put(2, "n2", 0, true, 10), unsealed.as_fd());
    expect_error(&mut s, 2, ErrorCode::InvalidRequest, "not a memory file sealed").await;
    // A good slot: a body within it lands, one longer than it fails.
    let slot = slot_file(4096).unwrap();
    let mut view = s3hpc_wire::sys::SlotMap::writable(&slot).unwrap();
    view.fill(b"0123456789");
    send_with_fd(&s, &slot_put(3, "ok", 5, true, 10), slot.as_fd());
    let (h, p) = read_frame(&mut s).await.unwrap();
    assert_eq!((h.ty, h.id, p[0]), (ty::RESPONSE, 3, 0));
    assert_eq!(&get(&*store, "ok").await[..], b"0123456789");
    s.write_all(&slot_put(4, "n4", 5, false, 4097)).await.unwrap();
    expect_error(&mut s, 4, ErrorCode::InvalidRequest, "in a slot of 4096").await;
    // A failed attach forgets what the slot held before.
    send_with_fd(&s, &slot_put(5, "n5", 5, true, 10), unsealed.as_fd());
    expect_error(&mut s, 5, ErrorCode::InvalidRequest, "not a memory file sealed").await;
    s.write_all(&slot_put(6, "n6", 5, false, 10)).await.unwrap();
    expect_error(&mut s, 6, ErrorCode::InvalidRequest, "no descriptor attached").await;
    for k in ["n1", "n2", "n4", "n5", "n6"] {
        let e = store.head_object("bkt", k, GetObjectRequest::default()).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NoSuchKey, "{k} was published");
    }

    // Protocol errors: an attach without a descriptor, a slot id out of range, a descriptor with
    // a frame that is not a BODY_FD request.
    let mut s = raw_session(&url).await;
    s.write_all(&slot_put(1, "p1", 0, true, 10)).await.unwrap();
    expect_goaway(&mut s, "without a descriptor").await;
    let mut s = raw_session(&url).await;
    s.write_all(&slot_put(1, "p2", frame::MAX_SLOTS as u64, false, 10)).await.unwrap();
    expect_goaway(&mut s, "upload slot 16").await;
    let s2 = raw_session(&url).await;
    let mut e = Enc::new();
    Request::HeadBucket { bucket: "bkt".into() }.encode(&mut e);
    send_with_fd(&s2, &frame_bytes(ty::REQUEST, 0, 1, &e.finish()), slot.as_fd());
    let mut s2 = s2;
    // The HEAD itself may be answered before the reader notices the stray descriptor.
    loop {
        let (h, p) = read_frame(&mut s2).await.expect("closed without GOAWAY");
        if h.ty == ty::GOAWAY {
            let e = Dec::new(&p).error().unwrap();
            assert!(e.message.contains("not a BODY_FD request"), "{e}");
            break;
        }
    }
    // TCP connections are never offered slots.
    let tcp = common::start(store.clone(), false, ServerOptions::default()).await;
    let c = client(&tcp.server.url, true).await;
    let before = slot_maps();
    c.put_object("bkt", "tcp", PutObjectRequest::default(), Body::from(vec![7u8; 1 << 20])).await.unwrap();
    assert_eq!(slot_maps(), before);
    common::client(&url).await.head_bucket("bkt").await.expect("the server stopped serving");
    tcp.server.shutdown().await.unwrap();
    r.server.shutdown().await.unwrap();
}
