//! The hashing floor of a PUT: CPU time of only the hashes each upload encoding makes mandatory,
//! over the same bytes, in ms per MiB (`bench/put_cpu.sh` prints it beside the gateway's CPU).
//!
//!     cargo run --release -p s3hpc-bench --example put_floor -- [SIZE_MIB] [ROUNDS]
//!
//! Each hash runs over a SIZE_MIB (default 1) buffer of random bytes, repeated for at least
//! 0.3 s, ROUNDS times (default 3) interleaved; the minimum CPU time (getrusage, this process) per
//! MiB is kept, since other load only ever adds. Measured: SHA-256 (the payload hash of signed
//! bodies and chunks), MD5 single-stream (an MD5 ETag) and MD5 over 8 bodies at once through the
//! shared multi-buffer service (`md5lanes`, what concurrent PUTs use), CRC32/CRC32C/CRC64NVME
//! (trailers), and one `memcpy` (a user-space copy of the body, for scale). Then per encoding:
//! the sum of its mandatory hashes, with MD5 ETags (lanes) and with fast ETags. The kernel's two
//! copies of every PUT byte (socket -> user, user -> page cache) are not in the floor.
//! Prints a table and one JSON line (`floor_ms_per_mib`).

use std::collections::BTreeMap;
use std::time::Instant;

use bytes::Bytes;
use s3hpc_core::checksum::{ChecksumHasher, md5};
use s3hpc_core::md5lanes::Lane;
use s3hpc_core::types::ChecksumAlgorithm;

fn cpu_s() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// CPU ms per MiB of `f` over `mib` MiB, repeated for at least 0.3 s.
fn measure(mib: f64, mut f: impl FnMut()) -> f64 {
    f(); // warm up
    let (c0, t0) = (cpu_s(), Instant::now());
    let mut n = 0u64;
    while n < 3 || t0.elapsed().as_secs_f64() < 0.3 {
        f();
        n += 1;
    }
    (cpu_s() - c0) * 1e3 / (n as f64 * mib)
}

fn hash(alg: ChecksumAlgorithm, data: &[u8]) {
    let mut h = ChecksumHasher::new(alg);
    h.update(data);
    std::hint::black_box(h.finish_raw());
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let size_mib: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let rounds: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let len = size_mib << 20;
    let data: Vec<u8> = (0..len).map(|_| rand::random::<u8>()).collect();
    let bytes = Bytes::from(data.clone());
    let mib = size_mib as f64;
    let mut dst = vec![0u8; len];

    let mut best: BTreeMap<&str, f64> = BTreeMap::new();
    for _ in 0..rounds {
        let mut m: Vec<(&str, f64)> = vec![
            ("sha256", measure(mib, || hash(ChecksumAlgorithm::Sha256, &data))),
            (
                "md5_1stream",
                measure(mib, || {
                    std::hint::black_box(md5(&data));
                }),
            ),
            (
                // 8 bodies at once through the shared service, fed in 128 KiB pieces as the
                // posix writer does; CPU of all threads of the process, per MiB of all bodies.
                "md5_lanes8",
                measure(mib * 8.0, || {
                    let mut lanes: Vec<Lane> = (0..8).map(|_| Lane::new()).collect();
                    for off in (0..len).step_by(128 << 10) {
                        for l in &mut lanes {
                            l.feed(bytes.slice(off..(off + (128 << 10)).min(len)));
                        }
                    }
                    for l in lanes {
                        std::hint::black_box(l.finish());
                    }
                }),
            ),
            ("crc32", measure(mib, || hash(ChecksumAlgorithm::Crc32, &data))),
            ("crc32c", measure(mib, || hash(ChecksumAlgorithm::Crc32c, &data))),
            ("crc64nvme", measure(mib, || hash(ChecksumAlgorithm::Crc64Nvme, &data))),
            (
                "memcpy",
                measure(mib, || {
                    dst.copy_from_slice(&data);
                    std::hint::black_box(&dst);
                }),
            ),
        ];
        for (k, v) in m.drain(..) {
            let e = best.entry(k).or_insert(f64::MAX);
            *e = e.min(v);
        }
    }
    let b = |k: &str| best[k];
    println!("hash floor, {size_mib} MiB buffers, min of {rounds} rounds, CPU ms per MiB:");
    for (k, v) in &best {
        println!("  {k:<12} {v:7.3}");
    }
    // Mandatory hashes per encoding: (name, payload hashes without the ETag's MD5).
    let encodings: [(&str, f64); 7] = [
        ("unsigned", 0.0),
        ("signed", b("sha256")),
        ("chunked", b("sha256")),
        ("chunked-trailer", b("sha256") + b("crc32c")),
        ("trailer-crc32", b("crc32")),
        ("trailer-crc32c", b("crc32c")),
        ("trailer-crc64nvme", b("crc64nvme")),
    ];
    println!("floor per encoding (ms/MiB): etag=md5 uses md5_lanes8, etag=fast no MD5");
    let mut json = serde_json::Map::new();
    for (name, h) in encodings {
        let md5_floor = h + b("md5_lanes8");
        println!("  {name:<18} md5 {md5_floor:6.3}   fast {h:6.3}");
        json.insert(format!("{name}/md5"), serde_json::json!((md5_floor * 1e3).round() / 1e3));
        json.insert(format!("{name}/fast"), serde_json::json!((h * 1e3).round() / 1e3));
    }
    let hashes: serde_json::Map<String, serde_json::Value> =
        best.iter().map(|(k, v)| (k.to_string(), serde_json::json!((v * 1e3).round() / 1e3))).collect();
    println!("{}", serde_json::json!({"size_mib": size_mib, "hash_ms_per_mib": hashes, "floor_ms_per_mib": json}));
}
