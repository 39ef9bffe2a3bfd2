//! Random bytes into the preamble, frame, request and response decoders.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    s3hpc_wire::fuzz::decoders(data);
});
