//! `posix_identity`: store calls act as the request's POSIX user, so files belong to that user
//! and the kernel decides what each user may read, write and list. Real users, made with
//! `useradd` (the test needs root, as CI has; elsewhere it says why it does not run).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use bytes::Bytes;
use s3hpc_core::identity::{Identity, scope};
use s3hpc_core::*;
use s3hpc_posix::{Durability, IoMode, PosixOptions, PosixStore};

/// The identity of the local user `name`, created (no home, no login) if missing.
fn user(name: &str) -> Identity {
    if !Command::new("id").arg("-u").arg(name).output().unwrap().status.success() {
        let st = Command::new("useradd")
            .args(["--no-create-home", "--shell", "/usr/sbin/nologin", name])
            .status()
            .expect("useradd");
        assert!(st.success(), "useradd {name} failed");
    }
    let num = |flag: &str| -> u32 {
        let o = Command::new("id").arg(flag).arg(name).output().unwrap();
        String::from_utf8(o.stdout).unwrap().trim().parse().unwrap()
    };
    let (uid, gid) = (num("-u"), num("-g"));
    Identity { uid, gid, groups: vec![gid] }
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

async fn put_as(s: &PosixStore, id: &Identity, b: &str, k: &str, data: &'static [u8]) -> Result<PutObjectOutput> {
    scope(Some(id.clone()), s.put_object(b, k, PutObjectRequest::default(), Body::from(Bytes::from_static(data)))).await
}

async fn get_as(s: &PosixStore, id: &Identity, b: &str, k: &str) -> Result<Bytes> {
    scope(Some(id.clone()), async {
        let o = s.get_object(b, k, GetObjectRequest::default()).await?;
        Ok(o.body.collect().await?)
    })
    .await
}

fn owner(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().uid()
}

fn denied<T: std::fmt::Debug>(r: Result<T>, what: &str) {
    match r {
        Err(e) => assert_eq!(e.code, ErrorCode::AccessDenied, "{what}: {e}"),
        Ok(v) => panic!("{what}: allowed, but the kernel should have refused it: {v:?}"),
    }
}

async fn check(io: IoMode) {
    let a = user("s3hpc-ta");
    let b = user("s3hpc-tb");
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = dir.path().join("root");
    let o = PosixOptions { durability: Durability::None, io, posix_identity: true, umask: 0o022, ..Default::default() };
    let s = PosixStore::open(&root, o).unwrap();
    // Who may create buckets is the root directory's business: here everyone (like /tmp).
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o1777)).unwrap();

    // A's bucket and object belong to A; the body went through A's own temp directory.
    scope(Some(a.clone()), s.create_bucket("abkt")).await.unwrap();
    assert_eq!(owner(&root.join("abkt")), a.uid);
    put_as(&s, &a, "abkt", "f", b"from a").await.unwrap();
    put_as(&s, &a, "abkt", "sub/g", b"nested").await.unwrap();
    assert_eq!(owner(&root.join("abkt/f")), a.uid);
    assert_eq!(owner(&root.join("abkt/sub")), a.uid);
    let t = root.join(format!(".s3hpc/staging/tmp/u{}", a.uid));
    assert_eq!(owner(&t), a.uid);
    assert_eq!(std::fs::metadata(&t).unwrap().mode() & 0o777, 0o700);

    // B may read what the mode bits let everyone read, and nothing more.
    assert_eq!(get_as(&s, &b, "abkt", "f").await.unwrap(), "from a");
    denied(put_as(&s, &b, "abkt", "intruder", b"x").await, "B writes into A's bucket");
    denied(scope(Some(b.clone()), s.delete_object("abkt", "f")).await, "B deletes A's object");
    denied(
        scope(Some(b.clone()), s.create_multipart_upload("abkt", "m", CreateMultipartRequest::default())).await,
        "B starts an upload in A's bucket",
    );
    std::fs::set_permissions(root.join("abkt/f"), std::fs::Permissions::from_mode(0o600)).unwrap();
    denied(get_as(&s, &b, "abkt", "f").await, "B reads A's 0600 file");
    denied(
        scope(Some(b.clone()), s.head_object("abkt", "f", GetObjectRequest::default())).await,
        "B heads A's 0600 file",
    );
    assert_eq!(get_as(&s, &a, "abkt", "f").await.unwrap(), "from a");
    std::fs::set_permissions(root.join("abkt"), std::fs::Permissions::from_mode(0o700)).unwrap();
    denied(
        scope(Some(b.clone()), s.list_objects("abkt", ListObjectsRequest { max_keys: 100, ..Default::default() }))
            .await,
        "B lists A's 0700 bucket",
    );
    let mine =
        scope(Some(a.clone()), s.list_objects("abkt", ListObjectsRequest { max_keys: 100, ..Default::default() }))
            .await
            .unwrap();
    assert_eq!(mine.objects.len(), 2);

    // B's own bucket: a multipart upload completes as B; its parts were B's alone meanwhile.
    scope(Some(b.clone()), s.create_bucket("bbkt")).await.unwrap();
    let id = scope(Some(b.clone()), s.create_multipart_upload("bbkt", "big", CreateMultipartRequest::default()))
        .await
        .unwrap();
    let updir = root.join(format!(".s3hpc/staging/uploads/bbkt/{id}"));
    assert_eq!(owner(&updir), b.uid);
    assert_eq!(std::fs::metadata(&updir).unwrap().mode() & 0o777, 0o700);
    let p = scope(
        Some(b.clone()),
        s.upload_part("bbkt", "big", &id, 1, UploadPartRequest::default(), Body::from(Bytes::from_static(b"part"))),
    )
    .await
    .unwrap();
    denied(
        scope(Some(a.clone()), s.list_parts("bbkt", "big", &id, ListPartsRequest::default())).await,
        "A lists B's parts",
    );
    let parts = vec![CompletePart { part_number: 1, etag: p.etag, checksum: None }];
    scope(Some(b.clone()), s.complete_multipart_upload("bbkt", "big", &id, parts, Conditions::default()))
        .await
        .unwrap();
    assert_eq!(owner(&root.join("bbkt/big")), b.uid);

    // Conditional writes take the shared lock files whoever created them first.
    let cond = || PutObjectRequest {
        conditions: Conditions { if_none_match: Some("*".into()), ..Default::default() },
        ..Default::default()
    };
    scope(Some(b.clone()), s.put_object("bbkt", "c", cond(), Body::from(Bytes::from_static(b"1")))).await.unwrap();
    std::fs::set_permissions(root.join("bbkt"), std::fs::Permissions::from_mode(0o777)).unwrap();
    scope(Some(a.clone()), s.put_object("bbkt", "c2", cond(), Body::from(Bytes::from_static(b"2")))).await.unwrap();
    assert_eq!(owner(&root.join("bbkt/c2")), a.uid);

    // Outside any identity a request is refused, never served as the gateway (root here)...
    denied(s.get_object("abkt", "f", GetObjectRequest::default()).await.map(|_| ()), "a GET without an identity");
    denied(
        s.put_object("abkt", "g", PutObjectRequest::default(), Body::from(Bytes::from_static(b"x"))).await,
        "a PUT without an identity",
    );
    denied(s.delete_object("abkt", "f").await, "a DELETE without an identity");
    // ... while the gateway's own work on its state says so and runs as the gateway.
    assert!(s.list_buckets().await.unwrap().iter().any(|b| b.name == "abkt"));
    s.put_bucket_config("abkt", "cors", Some(b"<x/>".to_vec())).await.unwrap();
    assert_eq!(s.get_bucket_config("abkt", "cors").await.unwrap().unwrap(), b"<x/>");
    // Its state is the gateway's alone: mode 0700, owned by the gateway, out of users' reach.
    let moat = std::fs::metadata(root.join(".s3hpc")).unwrap();
    assert_eq!((moat.uid(), moat.mode() & 0o7777), (0, 0o700));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_act_as_their_posix_user() {
    if !is_root() {
        eprintln!("skipped: needs root to create users and switch identities (CI runs as root)");
        return;
    }
    check(IoMode::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_act_as_their_posix_user_inline() {
    if !is_root() {
        eprintln!("skipped: needs root to create users and switch identities (CI runs as root)");
        return;
    }
    check(IoMode::Inline).await;
}

/// A listing cached while one user listed a large directory (above the cache threshold) is not
/// served to another who may not read it: `chmod 700` raises no name event and, on a watched
/// directory, leaves the cached list current, so only the per-listing open as the requesting
/// user keeps B out. Both ways of keeping the cache current.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_listing_is_not_served_to_a_user_who_may_not_read() {
    if !is_root() {
        eprintln!("skipped: needs root to create users and switch identities (CI runs as root)");
        return;
    }
    let a = user("s3hpc-ta");
    let b = user("s3hpc-tb");
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = dir.path().join("root");
    let o = PosixOptions {
        durability: Durability::None,
        io: IoMode::Inline,
        posix_identity: true,
        umask: 0o022,
        ..Default::default()
    };
    let s = PosixStore::open(&root, o).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let list = |id: &Identity, bucket: &'static str| {
        let req = ListObjectsRequest { max_keys: 1000, ..Default::default() };
        scope(Some(id.clone()), s.list_objects(bucket, req))
    };
    for (bucket, watch) in [("watched", true), ("stamped", false)] {
        s.set_listing_watch(watch);
        scope(Some(a.clone()), s.create_bucket(bucket)).await.unwrap();
        for i in 0..300 {
            put_as(&s, &a, bucket, &format!("k{i:04}"), b"x").await.unwrap();
        }
        // Stamped lists are cached once the directory has settled (100 ms here).
        std::thread::sleep(std::time::Duration::from_millis(250));
        assert_eq!(list(&b, bucket).await.unwrap().objects.len(), 300, "{bucket}: B may read it while 0755");
        let (hits, _) = s.listing_cache_stats();
        assert_eq!(list(&a, bucket).await.unwrap().objects.len(), 300);
        assert!(s.listing_cache_stats().0 > hits, "{bucket}: the listing was not served from the cache");
        std::fs::set_permissions(root.join(bucket), std::fs::Permissions::from_mode(0o700)).unwrap();
        denied(list(&b, bucket).await, &format!("{bucket}: B lists A's 0700 bucket while its list is cached"));
        assert_eq!(list(&a, bucket).await.unwrap().objects.len(), 300, "{bucket}: A still lists it");
    }
}
