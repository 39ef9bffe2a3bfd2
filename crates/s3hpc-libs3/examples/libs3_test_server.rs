//! A node-local gateway for the libs3 C tests: serves a store over the binary protocol until
//! its standard input closes (or a line is read from it).
//!
//! ```text
//! libs3_test_server LISTEN_URL STORE_URL ACCESS:SECRET [ACCESS:SECRET...]
//! libs3_test_server unix:///tmp/t/s.sock file:///tmp/t/store AKID:SECRET
//! ```
//! STORE_URL is `file:///path` (posix backend) or `memory://`. The URL clients use is printed
//! on the first line of standard output once the server listens.

use std::io::BufRead;
use std::sync::Arc;

use s3hpc_core::{CredentialSet, Credentials, DynStore};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: libs3_test_server LISTEN_URL STORE_URL ACCESS:SECRET...");
        std::process::exit(2);
    }
    let store: DynStore = if let Some(path) = args[1].strip_prefix("file://") {
        std::fs::create_dir_all(path).expect("store directory");
        Arc::new(s3hpc_posix::PosixStore::open(path, s3hpc_posix::PosixOptions::default()).expect("posix store"))
    } else {
        Arc::new(s3hpc_core::memory::MemoryStore::new())
    };
    let creds = CredentialSet::new(args[2..].iter().map(|c| {
        let (a, s) = c.split_once(':').expect("credentials are ACCESS:SECRET");
        Credentials::new(a, s)
    }));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let server = s3hpc_wire::server::bind(&args[0], store, Arc::new(creds), Default::default())
            .await
            .expect("bind the test server");
        println!("{}", server.url());
        use std::io::Write;
        std::io::stdout().flush().ok();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::stdin().lock().read_line(&mut line);
            let _ = tx.send(());
        });
        server
            .run(async move {
                let _ = rx.await;
            })
            .await
            .expect("server run");
    });
}
