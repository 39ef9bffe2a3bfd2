//! Containment: a POSIX user who can write inside the root (make a bucket directory, or write in
//! one) must never make the store read, list, create, change or remove anything outside the
//! root, whatever symlinks they plant and whenever they swap them in.
//!
//! The victim is a second store's bucket outside the root, holding objects with valid s3hpc
//! records and a pending multipart upload, so every fast path that trusts a record is tried too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use s3hpc_core::*;
use s3hpc_posix::{Durability, PosixOptions, PosixStore};

fn opts() -> PosixOptions {
    PosixOptions { durability: Durability::None, stale_temp_age: Duration::ZERO, ..Default::default() }
}

/// Every file and directory below `dir` (symlinks not followed) with its size and mtime.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let md = std::fs::symlink_metadata(e.path()).unwrap();
            out.insert(e.path(), (if md.is_dir() { 0 } else { md.len() }, md.modified().unwrap()));
            if md.is_dir() {
                stack.push(e.path());
            }
        }
    }
    out
}

/// A victim bucket outside the root: objects `v1`, `d/v2` with valid records, an upload.
/// Returns (temp dir, root of the store under test, the store, victim bucket dir, upload id).
async fn with_victim() -> (tempfile::TempDir, PathBuf, PosixStore, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let vroot = dir.path().join("victim-root");
    let v = PosixStore::open(&vroot, opts()).unwrap();
    v.create_bucket("vbk").await.unwrap();
    for k in ["v1", "d/v2"] {
        v.put_object("vbk", k, PutObjectRequest::default(), Body::from(Bytes::from_static(b"victim data")))
            .await
            .unwrap();
    }
    let id = v.create_multipart_upload("vbk", "up", CreateMultipartRequest::default()).await.unwrap();
    let root = dir.path().join("root");
    let s = PosixStore::open(&root, opts()).unwrap();
    s.create_bucket("bkt").await.unwrap();
    (dir, root, s, vroot.join("vbk"), id)
}

/// Fails listing what appeared, vanished or changed below the victim directory.
fn assert_unchanged(before: &BTreeMap<PathBuf, (u64, std::time::SystemTime)>, victim: &Path) {
    let after = snapshot(victim);
    let changed: Vec<&PathBuf> = before
        .keys()
        .chain(after.keys())
        .filter(|p| before.get(*p) != after.get(*p))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(changed.is_empty(), "outside the root, {} entries changed: {changed:?}", changed.len());
}

fn denied_or_missing<T: std::fmt::Debug>(r: Result<T>, what: &str) {
    match r {
        Err(e) => assert!(
            matches!(e.code, ErrorCode::AccessDenied | ErrorCode::NoSuchBucket | ErrorCode::NoSuchUpload),
            "{what}: {e}"
        ),
        Ok(v) => panic!("{what}: succeeded through a symlink out of the root: {v:?}"),
    }
}

/// A bucket that is a symlink to a directory outside the root (any user who can create bucket
/// directories can plant one): every operation is refused, nothing outside changes or shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_symlinked_out_of_the_root_is_not_followed() {
    let (_dir, root, s, victim, id) = with_victim().await;
    std::os::unix::fs::symlink(&victim, root.join("linkbkt")).unwrap();
    let before = snapshot(&victim);

    denied_or_missing(s.delete_object("linkbkt", "v1").await, "delete v1");
    denied_or_missing(s.delete_object("linkbkt", "d/v2").await, "delete d/v2");
    denied_or_missing(s.delete_object("linkbkt", "d/").await, "delete d/");
    denied_or_missing(s.abort_multipart_upload("linkbkt", "up", &id).await, "abort");
    denied_or_missing(
        s.create_multipart_upload("linkbkt", "new", CreateMultipartRequest::default()).await,
        "create upload",
    );
    denied_or_missing(
        s.list_multipart_uploads("linkbkt", ListUploadsRequest { max_uploads: 1000, ..Default::default() }).await,
        "list uploads",
    );
    denied_or_missing(
        s.list_objects("linkbkt", ListObjectsRequest { max_keys: 1000, ..Default::default() }).await,
        "list",
    );
    denied_or_missing(s.get_object("linkbkt", "v1", GetObjectRequest::default()).await.map(|o| o.info), "get");
    denied_or_missing(s.head_object("linkbkt", "v1", GetObjectRequest::default()).await, "head");
    denied_or_missing(
        s.put_object("linkbkt", "new", PutObjectRequest::default(), Body::from(Bytes::from_static(b"x"))).await,
        "put",
    );
    denied_or_missing(s.put_bucket_tagging("linkbkt", vec![("k".into(), "v".into())]).await, "bucket tagging");
    denied_or_missing(s.delete_bucket("linkbkt").await, "delete bucket");
    denied_or_missing(s.copy_object("linkbkt", "v1", "bkt", "copy", CopyObjectRequest::default()).await, "copy from");
    let names: Vec<String> = s.list_buckets().await.unwrap().into_iter().map(|b| b.name).collect();
    assert_eq!(names, vec!["bkt".to_string()], "ListBuckets shows a directory outside the root");
    s.cleanup_stale();
    assert_unchanged(&before, &victim);
}

/// `BUCKET/.s3hpc` replaced by a symlink to a directory outside the root (write access to one
/// bucket suffices): the gateway keeps no state there any more (it is in `ROOT/.s3hpc`), so
/// uploads, PUTs and bucket tags work as usual and nothing outside is created, listed or removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_internal_directory_symlinked_out_of_the_root_is_not_followed() {
    let (_dir, root, s, victim, id) = with_victim().await;
    let internal = root.join("bkt/.s3hpc");
    let _ = std::fs::remove_dir_all(&internal);
    std::os::unix::fs::symlink(victim.join(".s3hpc"), &internal).unwrap();
    let before = snapshot(&victim);

    // The victim's upload id is no upload of this root.
    denied_or_missing(s.list_parts("bkt", "up", &id, ListPartsRequest::default()).await, "list parts");
    denied_or_missing(
        s.upload_part("bkt", "up", &id, 1, UploadPartRequest::default(), Body::from(Bytes::from_static(b"p"))).await,
        "upload part",
    );
    denied_or_missing(s.abort_multipart_upload("bkt", "up", &id).await, "abort");
    let new = s.create_multipart_upload("bkt", "new", CreateMultipartRequest::default()).await.unwrap();
    let ups = s.list_multipart_uploads("bkt", ListUploadsRequest { max_uploads: 1000, ..Default::default() }).await;
    assert_eq!(ups.unwrap().uploads.iter().map(|u| u.upload_id.clone()).collect::<Vec<_>>(), vec![new]);
    s.put_object("bkt", "k", PutObjectRequest::default(), Body::from(Bytes::from_static(b"x"))).await.unwrap();
    s.put_bucket_tagging("bkt", vec![("k".into(), "v".into())]).await.unwrap();
    assert_eq!(s.get_bucket_tagging("bkt").await.unwrap().len(), 1);
    s.cleanup_stale();
    assert_unchanged(&before, &victim);
}

/// A POSIX user flips a directory of the bucket between a real directory and a symlink out of
/// the root while PUTs, multipart uploads and deletes into it run: no byte lands outside, nothing
/// there is removed. (Before containment went fd-relative, about 5% of such PUTs wrote outside.)
#[test]
fn racing_symlink_swaps_never_redirect_writes_out_of_the_root() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (_dir, root, s, victim, _id) = rt.block_on(with_victim());
    let before = snapshot(&victim);
    let stop = Arc::new(AtomicBool::new(false));
    let flips = Arc::new(AtomicUsize::new(0));
    let bdir = root.join("bkt");
    let flipper = {
        let (stop, flips, victim, bdir) = (stop.clone(), flips.clone(), victim.clone(), bdir.clone());
        std::thread::spawn(move || {
            let d = bdir.join("d");
            while !stop.load(Ordering::Relaxed) {
                // A real directory (maybe holding objects by now) goes away; a symlink out comes in.
                let aside = bdir.join(format!("aside{}", flips.load(Ordering::Relaxed)));
                if std::fs::rename(&d, &aside).is_ok() {
                    let _ = std::fs::remove_dir_all(&aside);
                }
                let _ = std::os::unix::fs::symlink(&victim, &d);
                std::thread::yield_now();
                let _ = std::fs::remove_file(&d);
                let _ = std::fs::create_dir(&d);
                std::thread::yield_now();
                // The internal directory too.
                let internal = bdir.join(".s3hpc");
                let aside = bdir.join(format!("internal-aside{}", flips.load(Ordering::Relaxed)));
                if flips.load(Ordering::Relaxed).is_multiple_of(8) && std::fs::rename(&internal, &aside).is_ok() {
                    let _ = std::os::unix::fs::symlink(victim.join(".s3hpc"), &internal);
                    std::thread::yield_now();
                    let _ = std::fs::remove_file(&internal);
                    let _ = std::fs::rename(&aside, &internal);
                }
                flips.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let ok = Arc::new(AtomicUsize::new(0));
    let tried = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(3);
    rt.block_on(async {
        let mut tasks = Vec::new();
        for w in 0..4 {
            let (s, ok, tried) = (s.clone(), ok.clone(), tried.clone());
            tasks.push(tokio::spawn(async move {
                let mut i = 0u64;
                while Instant::now() < deadline {
                    i += 1;
                    let key = match i % 4 {
                        0 => format!("d/w{w}-{i}"),
                        1 => format!("d/sub/w{w}-{i}"),
                        2 => "d/v1".to_string(),
                        _ => format!("d/dir{w}-{i}/"),
                    };
                    tried.fetch_add(1, Ordering::Relaxed);
                    let body = Body::from(Bytes::from(if key.ends_with('/') { Vec::new() } else { vec![b'x'; 64] }));
                    if s.put_object("bkt", &key, PutObjectRequest::default(), body).await.is_ok() {
                        ok.fetch_add(1, Ordering::Relaxed);
                    }
                    let _ = s.delete_object("bkt", "d/v1").await;
                    let _ = s.delete_object("bkt", "d/d/v2").await;
                    let _ = s.delete_object("bkt", &key).await;
                    if i.is_multiple_of(16)
                        && let Ok(id) = s
                            .create_multipart_upload("bkt", &format!("d/m{w}"), CreateMultipartRequest::default())
                            .await
                    {
                        let p = s
                            .upload_part(
                                "bkt",
                                &format!("d/m{w}"),
                                &id,
                                1,
                                UploadPartRequest::default(),
                                Body::from(Bytes::from_static(b"part")),
                            )
                            .await;
                        if let Ok(p) = p {
                            let parts = vec![CompletePart { part_number: 1, etag: p.etag, checksum: None }];
                            let _ = s
                                .complete_multipart_upload("bkt", &format!("d/m{w}"), &id, parts, Conditions::default())
                                .await;
                        }
                        let _ = s.abort_multipart_upload("bkt", &format!("d/m{w}"), &id).await;
                    }
                    if i.is_multiple_of(32) {
                        let _ =
                            s.list_objects("bkt", ListObjectsRequest { max_keys: 1000, ..Default::default() }).await;
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    stop.store(true, Ordering::Relaxed);
    flipper.join().unwrap();
    s.cleanup_stale();
    let (ok, tried, flips) = (ok.load(Ordering::Relaxed), tried.load(Ordering::Relaxed), flips.load(Ordering::Relaxed));
    eprintln!("{tried} PUTs tried, {ok} succeeded, {flips} flips");
    assert!(flips > 100 && ok > 100, "the race did not run: {tried} PUTs tried, {ok} succeeded, {flips} flips");
    assert_unchanged(&before, &victim);
}

/// `BUCKET/.s3hpc/versions` replaced by a symlink to another root's versions area: tagging a
/// noncurrent version (whose record is written by path, as object lock's are) neither reads
/// nor changes a version file there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_tagging_does_not_follow_a_versions_area_symlinked_out_of_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let versioned = |s: &PosixStore, b: &'static str| {
        let s = s.clone();
        async move {
            s.create_bucket(b).await.unwrap();
            s.put_bucket_config(b, "versioning", Some(b"Enabled".to_vec())).await.unwrap();
            let mut ids = Vec::new();
            for body in [&b"one"[..], &b"two"[..]] {
                let out =
                    s.put_object(b, "k", PutObjectRequest::default(), Body::from(Bytes::from(body))).await.unwrap();
                ids.push(out.version_id.unwrap());
            }
            ids
        }
    };
    let v = PosixStore::open(dir.path().join("victim-root"), opts()).unwrap();
    let vids = versioned(&v, "vbk").await;
    let old = vids[0].clone();
    v.put_object_tagging("vbk", "k", Some(&old), vec![("victim".into(), "1".into())]).await.unwrap();
    let root = dir.path().join("root");
    let s = PosixStore::open(&root, opts()).unwrap();
    versioned(&s, "bkt").await;
    let area = root.join("bkt/.s3hpc/versions");
    std::fs::remove_dir_all(&area).unwrap();
    std::os::unix::fs::symlink(dir.path().join("victim-root/vbk/.s3hpc/versions"), &area).unwrap();

    let tags = vec![("t".to_string(), "v".to_string())];
    let r = s.get_object_tagging("bkt", "k", Some(&old)).await;
    assert!(r.is_err(), "read a version's tags through a symlink out of the root: {r:?}");
    let r = s.put_object_tagging("bkt", "k", Some(&old), tags).await;
    assert!(r.is_err(), "tagged a version through a symlink out of the root: {r:?}");
    let r = s.delete_object_tagging("bkt", "k", Some(&old)).await;
    assert!(r.is_err(), "untagged a version through a symlink out of the root: {r:?}");
    let kept = v.get_object_tagging("vbk", "k", Some(&old)).await.unwrap().tags;
    assert_eq!(kept, vec![("victim".to_string(), "1".to_string())]);
}

/// Write conditions on a file without a record (written by a POSIX tool) are checked against
/// that file, never against the host's file of the same path: the condition check once opened
/// `/KEY` (an empty bucket name before the key), so If-Match compared with the host's file and a
/// key with no host counterpart answered NoSuchKey.
#[tokio::test]
async fn write_conditions_read_the_buckets_file_not_the_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let s = PosixStore::open(&root, opts()).unwrap();
    s.create_bucket("bkt").await.unwrap();
    // A host file, and a file at the same path as a key of the bucket (the key is the host
    // file's absolute path without its leading '/').
    let host = dir.path().join("host.txt");
    std::fs::write(&host, b"the host's file").unwrap();
    let key = host.to_str().unwrap().trim_start_matches('/').to_string();
    let mirrored = root.join("bkt").join(&key);
    std::fs::create_dir_all(mirrored.parent().unwrap()).unwrap();
    std::fs::write(&mirrored, b"written by a POSIX tool").unwrap();
    std::fs::write(root.join("bkt/posix-only.txt"), b"written by a POSIX tool").unwrap();
    for k in [key.as_str(), "posix-only.txt"] {
        let etag = s.head_object("bkt", k, GetObjectRequest::default()).await.unwrap().etag;
        let req = PutObjectRequest {
            conditions: Conditions { if_match: Some(format!("\"{etag}\"")), ..Default::default() },
            ..Default::default()
        };
        s.put_object("bkt", k, req, Body::from(Bytes::from_static(b"new")))
            .await
            .unwrap_or_else(|e| panic!("{k}: {e}"));
        let o = s.get_object("bkt", k, GetObjectRequest::default()).await.unwrap();
        assert_eq!(o.body.collect().await.unwrap(), Bytes::from_static(b"new"));
    }
    assert_eq!(std::fs::read(&host).unwrap(), b"the host's file");
}
