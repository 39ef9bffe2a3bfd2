//! The fuzzing entry point: the frame decoder and connection state machine over a memory
//! store.

use super::*;

/// A descriptor for the fuzzer's BODY_FD requests: a 4000-byte slot file as a client makes it,
/// or (`unsealed`) one that is not a memory file.
pub(super) fn fuzz_body_file(unsealed: bool) -> std::fs::File {
    if unsealed {
        return std::fs::File::open("/dev/null").expect("/dev/null");
    }
    crate::sys::slot_file(4000).expect("memfd_create")
}

/// Fuzzing entry point: feed arbitrary bytes (as received after a successful handshake) through
/// the server's frame decoder and connection state machine, backed by a memory store, and run
/// the request handlers to completion; each input runs three times: with requests spawned one by
/// one, with quick requests batched on blocking threads (the store then reports that it offloads
/// its I/O), and with those batches run on the connection's thread as on a
/// [dedicated](ServerOptions::dedicated_threads) one. Protocol violations end the input like they
/// end a connection. Must never panic.
#[doc(hidden)]
pub fn fuzz_connection(data: &[u8]) {
    fuzz_connection_with(data, false, false);
    fuzz_connection_with(data, true, false);
    fuzz_connection_with(data, true, true);
}

/// A hook that does nothing: lets the fuzzer wrap the memory store in a `HookedStore` that
/// reports `offloads_io`.
pub(super) struct NoHook;

#[async_trait::async_trait]
impl s3hpc_core::hooked::Hook for NoHook {
    async fn before(&self, _op: s3hpc_core::hooked::Op, _bucket: &str, _key: &str) -> s3hpc_core::Result<()> {
        Ok(())
    }
}

pub(super) fn fuzz_connection_with(data: &[u8], batches: bool, dedicated: bool) {
    thread_local! {
        static RT: tokio::runtime::Runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    }
    RT.with(|rt| {
        rt.block_on(async {
            let mem: DynStore = Arc::new(s3hpc_core::memory::MemoryStore::new());
            let store: DynStore =
                if batches { Arc::new(s3hpc_core::hooked::HookedStore::new(mem, NoHook).offloading_io()) } else { mem };
            let _ = store.create_bucket("bkt").await;
            // The connection writes into one end of a socket pair; a sink drains the other.
            let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
            a.set_nonblocking(true).unwrap();
            b.set_nonblocking(true).unwrap();
            let (_, w) = Stream::Unix(tokio::net::UnixStream::from_std(a).unwrap()).split().unwrap();
            let mut peer = tokio::net::UnixStream::from_std(b).unwrap();
            let sink = tokio::spawn(async move {
                let mut junk = vec![0u8; 64 << 10];
                while matches!(peer.read(&mut junk).await, Ok(n) if n > 0) {}
            });
            let (out, drain) = crate::writer::writer(w);
            let drain = tokio::spawn(drain);
            let shared = Arc::new(ConnShared {
                active: Mutex::new(HashMap::new()),
                inflight: AtomicU32::new(0),
                observer: None,
            });
            let limits = Limits { max_data_frame: 4096, initial_window: 16384, max_inflight: 8 };
            let mut conn = Conn {
                store,
                out,
                shared: shared.clone(),
                limits,
                inbound: HashMap::new(),
                fd_ok: true,
                fds: std::collections::VecDeque::new(),
                slots: Default::default(),
                ended: true,
                batch: Vec::new(),
                dedicated,
                ident: None,
                caller: None,
                peer_uid: None,
                keys: None,
                keys_only: false,
            };
            let dec = FrameDecoder { max_data: limits.max_data_frame };
            let mut buf = BytesMut::from(data);
            'frames: loop {
                match dec.decode(&mut buf) {
                    Ok(Some((h, payload))) => {
                        if h.ty == ty::REQUEST && h.flags & flag::BODY_FD != 0 && h.id % 4 != 0 {
                            // A slot's descriptor as a client passes it, or (ids 4k+1) one that is
                            // not a memory file; none for ids 4k.
                            conn.fds.push_back(fuzz_body_file(h.id % 4 == 1).into());
                        }
                        let res = conn.on_frame(h, payload);
                        // Every other frame ends a "read": what is batched runs.
                        if res.is_err() || buf.len() % 2 == 0 {
                            conn.flush_batch();
                        }
                        if res.is_err() {
                            break 'frames;
                        }
                    }
                    _ => break 'frames,
                }
                tokio::task::yield_now().await;
            }
            conn.flush_batch();
            conn.teardown();
            drop(conn);
            for i in 0..64 {
                if shared.inflight.load(Ordering::Acquire) == 0 {
                    break;
                }
                tokio::task::yield_now().await;
                if batches && i >= 32 {
                    // Batches run on blocking threads: give them real time.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
            // Handlers still waiting (none should be, after teardown) are cut off with the runtime
            // turn; the writer and the sink end once every sender is gone.
            let _ = tokio::time::timeout(Duration::from_secs(5), drain).await;
            let _ = tokio::time::timeout(Duration::from_secs(5), sink).await;
        })
    })
}
