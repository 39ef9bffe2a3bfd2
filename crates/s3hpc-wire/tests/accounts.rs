//! Accounts on the binary protocol, through the authorizing store `s3hpc serve` uses: a
//! connection acts as its key's account, and a Unix-socket client without a key acts as the
//! account with its uid (SO_PEERCRED).

use std::sync::Arc;

use s3hpc_core::caller::Account;
use s3hpc_core::memory::MemoryStore;
use s3hpc_core::*;
use s3hpc_wire::{ServerOptions, WireClient};

const SECRET: &str = "wire-accounts-secret-0123456789";

/// alice has this process's uid; bob another one.
fn accounts() -> CredentialSet {
    let uid = rustix::process::getuid().as_raw();
    let mut set = CredentialSet::default();
    for (key, id, uid) in [("ALICEKEY", "alice", uid), ("BOBKEY", "bob", uid.wrapping_add(1))] {
        set.insert(Credentials::new(key, SECRET));
        set.set_account(key, Account { id: id.into(), name: None, admin: false, uid: Some(uid) });
    }
    set
}

async fn start(set: CredentialSet, unix: bool) -> (s3hpc_wire::ServerHandle, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let url =
        if unix { format!("unix://{}", dir.path().join("wire.sock").display()) } else { "tcp://127.0.0.1:0".into() };
    let store: DynStore = Arc::new(s3hpc_authz::Authorized::new(Arc::new(MemoryStore::new()), set.clone()));
    let server = s3hpc_wire::bind(&url, store, Arc::new(set), ServerOptions::default()).await.unwrap().spawn();
    (server, dir)
}

fn body(b: &'static [u8]) -> Body {
    Body::from(b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_peer_without_a_key_acts_as_the_account_with_its_uid() {
    let (server, _dir) = start(accounts(), true).await;
    let url = server.url.clone();
    let me = WireClient::connect(&url, Credentials::new("", "")).await.unwrap();
    let bob = WireClient::connect(&url, Credentials::new("BOBKEY", SECRET)).await.unwrap();
    me.create_bucket("alices").await.unwrap();
    me.put_object("alices", "k", PutObjectRequest::default(), body(b"mine")).await.unwrap();
    bob.create_bucket("bobs").await.unwrap();
    // The keyless connection is alice: her bucket, not bob's.
    let names: Vec<String> = me.list_buckets().await.unwrap().into_iter().map(|b| b.name).collect();
    assert_eq!(names, ["alices"]);
    let e = bob.get_object("alices", "k", GetObjectRequest::default()).await.err().unwrap();
    assert_eq!(e.code, ErrorCode::AccessDenied);
    let e = me.put_object("bobs", "x", PutObjectRequest::default(), body(b"x")).await.err().unwrap();
    assert_eq!(e.code, ErrorCode::AccessDenied);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_key_is_refused_over_tcp_and_for_an_unknown_uid() {
    let (server, _dir) = start(accounts(), false).await;
    let e = WireClient::connect(&server.url, Credentials::new("", "")).await.err().unwrap();
    assert_eq!(e.code, ErrorCode::AccessDenied, "{e}");
    server.shutdown().await.unwrap();
    // No account has this process's uid.
    let mut set = CredentialSet::default();
    set.insert(Credentials::new("BOBKEY", SECRET));
    let other = rustix::process::getuid().as_raw().wrapping_add(1);
    set.set_account("BOBKEY", Account { id: "bob".into(), name: None, admin: false, uid: Some(other) });
    let (server, _dir) = start(set, true).await;
    let e = WireClient::connect(&server.url, Credentials::new("", "")).await.err().unwrap();
    assert_eq!(e.code, ErrorCode::AccessDenied, "{e}");
    server.shutdown().await.unwrap();
}

/// The conformance suite's access cases through the binary protocol (posix behind the server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_cases_over_the_binary_protocol() {
    use s3hpc_conformance::access::{ACCOUNTS, Callers, accounts, run_access};
    let dir = tempfile::tempdir().unwrap();
    let posix: DynStore =
        Arc::new(s3hpc_posix::PosixStore::open(dir.path(), s3hpc_posix::PosixOptions::default()).unwrap());
    let set = accounts();
    let store: DynStore = Arc::new(s3hpc_authz::Authorized::new(posix, set.clone()));
    for unix in [true, false] {
        let sock = tempfile::tempdir().unwrap();
        let url = if unix {
            format!("unix://{}", sock.path().join("wire.sock").display())
        } else {
            "tcp://127.0.0.1:0".into()
        };
        let server = s3hpc_wire::bind(&url, store.clone(), Arc::new(set.clone()), ServerOptions::default())
            .await
            .unwrap()
            .spawn();
        let mut c = Vec::new();
        for (ak, sk, _, _) in ACCOUNTS {
            let client = WireClient::connect(&server.url, Credentials::new(ak, sk)).await.unwrap();
            c.push(Arc::new(client) as DynStore);
        }
        let callers = Callers { alice: c[0].clone(), bob: c[1].clone(), admin: c[2].clone(), anonymous: None };
        run_access(&callers).await;
        server.shutdown().await.unwrap();
    }
}
