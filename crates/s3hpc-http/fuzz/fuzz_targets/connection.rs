//! Arbitrary bytes into the gateway's own HTTP/1.1 engine over a real loopback connection (heads,
//! framing, chunked bodies, 100-continue, pipelining), with the S3 layer behind it on a memory
//! store. A panic in any server task aborts the process (found by the fuzzer); after every input
//! the server must still answer a well-formed request on a new connection.
#![no_main]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;

fn server() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        std::panic::set_hook(Box::new(|info| {
            eprintln!("panic: {info}");
            std::process::abort();
        }));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                let store = std::sync::Arc::new(s3hpc_core::memory::MemoryStore::new());
                let mut cfg = s3hpc_http::Config::new(store, Default::default());
                cfg.auth = s3hpc_http::Auth::DisabledForTests;
                cfg.header_timeout = Duration::from_millis(500);
                cfg.body_idle_timeout = Duration::from_millis(500);
                s3hpc_http::serve(listener, cfg, std::future::pending()).await.unwrap();
            });
        });
        rx.recv().unwrap()
    })
}

fn exchange(addr: SocketAddr, data: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).expect("the server accepts connections");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(data);
    let _ = s.shutdown(Shutdown::Write);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

fuzz_target!(|data: &[u8]| {
    let addr = server();
    let out = exchange(addr, data);
    // Whatever was answered starts with a status line (or nothing at all).
    assert!(
        out.is_empty() || out.starts_with(b"HTTP/1.1 "),
        "{:?}",
        String::from_utf8_lossy(&out[..out.len().min(200)])
    );
    let ok = exchange(addr, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(ok.starts_with(b"HTTP/1.1 200"), "the server still answers: {:?}", String::from_utf8_lossy(&ok));
});
