//! The floor under any request/response protocol between two threads of this machine: a 64-byte
//! ping-pong over a Unix stream socket pair with blocking reads, no framing and no runtime.
//!
//! ```text
//! cargo run --release -p s3hpc-wire --example socket_rtt -- [--rounds 50000] [--cpus 0,1]
//! ```
//!
//! `--cpus A,B` pins the two ends to these CPUs (`--cpus 0,0`: both on one CPU, so every
//! hand-off is a context switch on that CPU and no idle CPU has to be woken). Without it the
//! scheduler places them. Prints the mean round trip in microseconds: two wake-ups of a sleeping
//! thread each. PERFORMANCE.md ("Fourteenth round") uses it to tell the cost of the binary
//! protocol's round trip from the cost of waking another CPU on this machine.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Instant;

fn pin(cpu: Option<usize>) {
    let Some(cpu) = cpu else { return };
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it; the call only
    // reads the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            panic!("sched_setaffinity to CPU {cpu}: {}", std::io::Error::last_os_error());
        }
    }
}

fn main() {
    let mut rounds = 50_000usize;
    let mut cpus: (Option<usize>, Option<usize>) = (None, None);
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--rounds" => rounds = v.parse::<usize>().expect("--rounds N").max(1),
            "--cpus" => {
                let (a, b) = v.split_once(',').expect("--cpus A,B");
                cpus = (Some(a.parse().expect("CPU number")), Some(b.parse().expect("CPU number")));
            }
            _ => {
                eprintln!("usage: socket_rtt [--rounds N] [--cpus A,B]");
                std::process::exit(2);
            }
        }
    }
    let (mut a, mut b) = UnixStream::pair().expect("socketpair");
    let echo = std::thread::spawn(move || {
        pin(cpus.1);
        let mut m = [0u8; 64];
        for _ in 0..rounds {
            b.read_exact(&mut m).expect("echo read");
            b.write_all(&m).expect("echo write");
        }
    });
    pin(cpus.0);
    let mut m = [7u8; 64];
    // A few rounds first, so both threads have run on their CPUs before the clock starts.
    let warm = (rounds / 10).min(1000);
    let mut t0 = Instant::now();
    for i in 0..rounds {
        if i == warm {
            t0 = Instant::now();
        }
        a.write_all(&m).expect("write");
        a.read_exact(&mut m).expect("read");
    }
    let elapsed = t0.elapsed();
    echo.join().unwrap();
    let timed = rounds - warm;
    let us = elapsed.as_secs_f64() * 1e6 / timed as f64;
    println!("round trip {us:.2} us ({timed} rounds, cpus {:?})", cpus);
}
