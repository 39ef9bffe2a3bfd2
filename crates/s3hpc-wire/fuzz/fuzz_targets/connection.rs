//! Random bytes into the server's frame decoder and connection state machine (after the
//! handshake), with request handlers running against a memory store.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    s3hpc_wire::fuzz::fuzz_connection(data);
});
