//! Self-service key operations (opcodes 96-98, docs/CREDENTIALS.md): answered for the peer's
//! uid as the kernel gives it, and a peer without an account may connect for them only.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use s3hpc_core::creds::{AccessKeyInfo, KeyAdmin};
use s3hpc_core::memory::MemoryStore;
use s3hpc_core::*;
use s3hpc_wire::{ServerOptions, WireClient};

/// Records the uid each call was made for.
#[derive(Debug, Default)]
struct Keys {
    calls: Mutex<Vec<(String, u32)>>,
}

fn info(uid: u32) -> AccessKeyInfo {
    AccessKeyInfo {
        access_key: "S3HPCTESTKEY00000001".into(),
        uid,
        user: "me".into(),
        description: "d".into(),
        created: SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        expires: None,
    }
}

impl KeyAdmin for Keys {
    fn create(&self, uid: u32, lifetime: Option<Duration>, description: &str) -> Result<(Credentials, AccessKeyInfo)> {
        self.calls.lock().unwrap().push((format!("create {lifetime:?} {description}"), uid));
        Ok((Credentials::new("S3HPCTESTKEY00000001", "the-secret"), info(uid)))
    }
    fn list(&self, uid: u32) -> Result<Vec<AccessKeyInfo>> {
        self.calls.lock().unwrap().push(("list".into(), uid));
        Ok(vec![info(uid)])
    }
    fn revoke(&self, uid: u32, access_key: &str) -> Result<()> {
        self.calls.lock().unwrap().push((format!("revoke {access_key}"), uid));
        Err(Error::new(ErrorCode::AccessDenied, "not yours"))
    }
}

/// A store that does not authorize (so only the server stands between a keys-only connection
/// and the data).
async fn start(keys: Option<Arc<Keys>>, unix: bool) -> (s3hpc_wire::ServerHandle, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let url =
        if unix { format!("unix://{}", dir.path().join("wire.sock").display()) } else { "tcp://127.0.0.1:0".into() };
    let store: DynStore = Arc::new(MemoryStore::new());
    store.create_bucket("data").await.unwrap();
    let opts = ServerOptions { keys: keys.map(|k| k as Arc<dyn KeyAdmin>), ..Default::default() };
    let server = s3hpc_wire::bind(&url, store, Arc::new(CredentialSet::new([Credentials::new("KEY", "SECRET")])), opts)
        .await
        .unwrap()
        .spawn();
    (server, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_operations_are_for_the_kernel_named_uid_and_nothing_else() {
    let keys = Arc::new(Keys::default());
    let (server, _dir) = start(Some(keys.clone()), true).await;
    let me = rustix::process::getuid().as_raw();
    // No account has this uid: accepted, for key operations only.
    let c = WireClient::connect(&server.url, Credentials::new("", "")).await.unwrap();
    let (creds, got) = c.create_access_key(Some(Duration::from_secs(60)), "laptop").await.unwrap();
    assert_eq!((creds.access_key.as_str(), creds.secret_key.as_str()), ("S3HPCTESTKEY00000001", "the-secret"));
    assert_eq!(got, info(me));
    assert_eq!(c.list_access_keys().await.unwrap(), vec![info(me)]);
    let e = c.revoke_access_key("S3HPCOTHER").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::AccessDenied);
    assert_eq!(
        *keys.calls.lock().unwrap(),
        [("create Some(60s) laptop".to_string(), me), ("list".to_string(), me), ("revoke S3HPCOTHER".to_string(), me)]
    );
    // The store is out of reach on that connection, even behind a store that would answer.
    let e = c.list_buckets().await.unwrap_err();
    assert_eq!(e.code, ErrorCode::AccessDenied);
    let e = c.get_object("data", "k", GetObjectRequest::default()).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::AccessDenied);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_key_service_or_a_unix_socket_nobody_gets_in() {
    // No key service: a peer without an account is refused at the handshake, as before.
    let (server, _dir) = start(None, true).await;
    let e = WireClient::connect(&server.url, Credentials::new("", "")).await.err().unwrap();
    assert_eq!(e.code, ErrorCode::AccessDenied);
    server.shutdown().await.unwrap();
    // Over TCP the kernel names nobody: refused even with a key service, and a connection with
    // a key may not make keys there either.
    let keys = Arc::new(Keys::default());
    let (server, _dir) = start(Some(keys.clone()), false).await;
    let e = WireClient::connect(&server.url, Credentials::new("", "")).await.err().unwrap();
    assert_eq!(e.code, ErrorCode::AccessDenied);
    let c = WireClient::connect(&server.url, Credentials::new("KEY", "SECRET")).await.unwrap();
    let e = c.create_access_key(None, "").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::AccessDenied);
    assert!(keys.calls.lock().unwrap().is_empty());
    server.shutdown().await.unwrap();
}
