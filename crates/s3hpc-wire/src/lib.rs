//! s3hpc-wire: the node-local binary protocol.
//!
//! A framed, versioned, authenticated protocol that carries every [`s3hpc_core::Store`]
//! operation, with many requests in flight per connection, per-request flow control, large DATA
//! frames, zero-copy (`sendfile`) file bodies on the server side and, on Unix sockets, object files
//! handed to the client as descriptors (SCM_RIGHTS) and upload bodies passed through memory files
//! both sides map (upload slots). `docs/PROTOCOL.md` is the specification.
//!
//! * [`server::serve`] / [`server::bind`]: serve a [`s3hpc_core::DynStore`] on `unix:///path` or
//!   `tcp://host:port`.
//! * [`WireClient`]: a [`s3hpc_core::Store`] that talks to such a server. Its
//!   [`body_buffer`](s3hpc_core::Store::body_buffer) lends an upload slot to write a body into,
//!   which then reaches the server's store without any copy.
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod client;
pub mod codec;
pub mod field;
pub mod frame;
#[cfg(test)]
mod golden_tests;
pub mod ops;
pub mod server;
pub mod sys;
pub mod tls;
mod writer;

pub use client::{ClientOptions, WireClient};
pub use server::{Observer, ServerHandle, ServerOptions, WireServer, bind, serve};

/// Entry points of the fuzz targets (`crates/s3hpc-wire/fuzz`).
#[doc(hidden)]
pub mod fuzz {
    pub use crate::server::fuzz_connection;

    /// The handshake and frame decoders over arbitrary bytes.
    pub fn decoders(data: &[u8]) {
        use crate::{codec, frame};
        if data.len() >= frame::CLIENT_PREAMBLE_LEN {
            let _ = frame::parse_client_preamble(data[..frame::CLIENT_PREAMBLE_LEN].try_into().unwrap());
        }
        let dec = frame::FrameDecoder { max_data: frame::MAX_DATA_FRAME_HARD };
        let mut buf = bytes::BytesMut::from(data);
        while let Ok(Some((h, payload))) = dec.decode(&mut buf) {
            let mut d = codec::Dec::new(&payload);
            match h.ty {
                frame::ty::REQUEST => {
                    if codec::Request::decode(&mut d).is_ok() {
                        let _ = d.end();
                    }
                }
                frame::ty::RESPONSE => {
                    let _ = d.get_output();
                    let _ = d.list_page();
                }
                frame::ty::ABORT | frame::ty::GOAWAY => {
                    let _ = d.error();
                }
                frame::ty::AUTH_OK => {
                    let _ = frame::Limits::decode(&payload);
                }
                _ => {
                    let _ = d.str();
                    let _ = d.bytes(64);
                }
            }
        }
    }
}
