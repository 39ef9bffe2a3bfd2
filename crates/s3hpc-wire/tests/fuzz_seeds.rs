//! The connection fuzz target's seeds (and every truncation of them at a few points) replayed in
//! the normal test run: the frame decoder and the connection state machine, with requests
//! spawned and with quick requests batched, must finish each input without a panic or a hang.

use std::time::{Duration, Instant};

#[test]
fn connection_seeds_and_their_truncations_run_to_the_end() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/connection");
    let mut seeds: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    seeds.sort();
    assert!(seeds.len() >= 5, "seeds missing in {}", dir.display());
    for path in seeds {
        let data = std::fs::read(&path).unwrap();
        let cuts = [data.len(), data.len() * 3 / 4, data.len() / 2, data.len() / 3, 13];
        for cut in cuts.into_iter().filter(|&c| c <= data.len()) {
            let t = Instant::now();
            s3hpc_wire::fuzz::fuzz_connection(&data[..cut]);
            assert!(t.elapsed() < Duration::from_secs(30), "{} cut at {cut} took {:?}", path.display(), t.elapsed());
        }
    }
}
