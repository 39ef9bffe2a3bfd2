//! Backend-specific tests: path safety, key conflicts, files written by POSIX tools, the hidden
//! internal directory, directory pruning, sidecar fallback, listing cache, stale cleanup,
//! concurrency (many writers, create-only races, complete vs abort). Multi-process tests are in
//! `processes.rs`, planted symlinks in `symlinks.rs`, shared helpers in `common/`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use s3hpc_core::*;
use s3hpc_posix::{Durability, IoMode, MetaMode, PosixOptions, PosixStore};

mod common;
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_safety_rejects_every_escape() {
    let (dir, root, s) = setup().await;
    std::fs::write(dir.path().join("outside"), b"secret").unwrap();
    let bad: &[(&str, ErrorCode)] = &[
        ("../outside", ErrorCode::InvalidArgument),
        ("../../etc/passwd", ErrorCode::InvalidArgument),
        ("a/../../outside", ErrorCode::InvalidArgument),
        ("..", ErrorCode::InvalidArgument),
        (".", ErrorCode::InvalidArgument),
        ("./x", ErrorCode::InvalidArgument),
        ("a/./b", ErrorCode::InvalidArgument),
        ("/abs", ErrorCode::InvalidArgument),
        ("/", ErrorCode::InvalidArgument),
        ("a//b", ErrorCode::InvalidArgument),
        ("//", ErrorCode::InvalidArgument),
        ("a\0b", ErrorCode::InvalidArgument),
        (".s3hpc", ErrorCode::InvalidArgument),
        (".s3hpc/tmp/x", ErrorCode::InvalidArgument),
        (".s3hpc/", ErrorCode::InvalidArgument),
        ("x/.s3hpc/y", ErrorCode::InvalidArgument),
        ("", ErrorCode::InvalidArgument),
    ];
    let long_seg = "s".repeat(256);
    let long_key = format!("ok/{long_seg}");
    let mut all: Vec<(&str, ErrorCode)> = bad.to_vec();
    all.push((&long_key, ErrorCode::KeyTooLongError));
    for (k, code) in &all {
        let e = put(&s, k, "x").await.unwrap_err();
        assert_eq!(e.code, *code, "put {k:?}: {e}");
        assert_eq!(s.get_object("bkt", k, GetObjectRequest::default()).await.unwrap_err().code, *code, "get {k:?}");
        assert_eq!(s.head_object("bkt", k, GetObjectRequest::default()).await.unwrap_err().code, *code, "head {k:?}");
        assert_eq!(s.delete_object("bkt", k).await.unwrap_err().code, *code, "delete {k:?}");
        assert_eq!(s.get_object_tagging("bkt", k, None).await.unwrap_err().code, *code, "tagging {k:?}");
        let cr = CreateMultipartRequest::default();
        assert_eq!(s.create_multipart_upload("bkt", k, cr).await.unwrap_err().code, *code, "mpu {k:?}");
        let e = s.copy_object("bkt", k, "bkt", "dst", CopyObjectRequest::default()).await.unwrap_err();
        assert_eq!(e.code, *code, "copy from {k:?}");
        let e = s.copy_object("bkt", "dst", "bkt", k, CopyObjectRequest::default()).await.unwrap_err();
        assert_eq!(e.code, *code, "copy to {k:?}");
    }
    // 255-byte segments are fine.
    put(&s, &format!("ok/{}", "s".repeat(255)), "fine").await.unwrap();
    // Bad bucket names never reach the file system.
    for b in ["..", "../root", ".s3hpc", ".hidden", "a/b", "bkt/../bkt", "x\0y", "", "ab"] {
        let e = s.put_object(b, "k", PutObjectRequest::default(), Body::from("x")).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidBucketName, "bucket {b:?}");
        assert_eq!(s.head_bucket(b).await.unwrap_err().code, ErrorCode::InvalidBucketName, "head bucket {b:?}");
        let e = s.list_objects(b, ListObjectsRequest { max_keys: 10, ..Default::default() }).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidBucketName, "list {b:?}");
        assert_eq!(s.create_bucket(b).await.unwrap_err().code, ErrorCode::InvalidBucketName, "create {b:?}");
        assert_eq!(s.delete_bucket(b).await.unwrap_err().code, ErrorCode::InvalidBucketName, "delete bucket {b:?}");
    }
    assert_eq!(std::fs::read(dir.path().join("outside")).unwrap(), b"secret");
    assert_eq!(tree(dir.path()).iter().filter(|p| !p.starts_with("root")).count(), 1, "{:?}", tree(dir.path()));
    // Upload ids are never used as paths unless they are 32 lower-case hex digits.
    for id in ["../../x", "..", "0123", "ZZ", &"a".repeat(32).replace('a', "G")] {
        let e = s.upload_part("bkt", "k", id, 1, UploadPartRequest::default(), Body::from("x")).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NoSuchUpload, "{id}");
    }
    assert!(root.join(".s3hpc/buckets/bkt").is_dir());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_conflicts_are_clear_errors_and_lose_nothing() {
    let (_d, _root, s) = setup().await;
    put(&s, "a", "file a").await.unwrap();
    let e = put(&s, "a/b", "under a").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidRequest, "{e}");
    assert!(e.message.contains("conflicts"), "{e}");
    let e = put(&s, "a/", "").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidRequest);
    put(&s, "d/x", "in d").await.unwrap();
    let e = put(&s, "d", "file d").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidRequest);
    let cr = PutObjectRequest {
        conditions: Conditions { if_none_match: Some("*".into()), ..Default::default() },
        ..Default::default()
    };
    let e = s.put_object("bkt", "d", cr, Body::from("x")).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidRequest);
    // Copy and multipart complete hit the same rule.
    let e = s.copy_object("bkt", "a", "bkt", "a/c", CopyObjectRequest::default()).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidRequest);
    let id = s.create_multipart_upload("bkt", "d", CreateMultipartRequest::default()).await.unwrap();
    let p = s.upload_part("bkt", "d", &id, 1, UploadPartRequest::default(), Body::from("x")).await.unwrap();
    let parts = vec![CompletePart { part_number: 1, etag: p.etag, checksum: None }];
    let e = s.complete_multipart_upload("bkt", "d", &id, parts.clone(), Conditions::default()).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidRequest);
    // The failed completion left the upload in place.
    assert_eq!(s.list_parts("bkt", "d", &id, ListPartsRequest::default()).await.unwrap().parts.len(), 1);
    assert_eq!(get(&s, "a").await.unwrap().1, "file a");
    assert_eq!(get(&s, "d/x").await.unwrap().1, "in d");
    assert_eq!(keys(&s, "").await, vec!["a", "d/x"]);
    // A key under a file, and a file path read as a directory object, are simply absent.
    assert_eq!(get(&s, "a/b").await.unwrap_err().code, ErrorCode::NoSuchKey);
    assert_eq!(get(&s, "a/").await.unwrap_err().code, ErrorCode::NoSuchKey);
    assert_eq!(get(&s, "d").await.unwrap_err().code, ErrorCode::NoSuchKey);
    s.delete_object("bkt", "d").await.unwrap();
    assert_eq!(get(&s, "d/x").await.unwrap().1, "in d");
    // Once the directory is gone the name is free again.
    s.delete_object("bkt", "d/x").await.unwrap();
    s.complete_multipart_upload("bkt", "d", &id, parts, Conditions::default()).await.unwrap();
    assert_eq!(get(&s, "d").await.unwrap().1, "x");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_written_by_posix_tools_are_objects() {
    let (_d, root, s) = setup().await;
    let b = root.join("bkt");
    std::fs::create_dir_all(b.join("dir/sub")).unwrap();
    std::fs::write(b.join("dir/sub/plain.txt"), b"written by cp").unwrap();
    std::fs::write(b.join("top"), b"top").unwrap();
    assert_eq!(keys(&s, "").await, vec!["dir/sub/plain.txt", "top"]);
    let (info, data) = get(&s, "dir/sub/plain.txt").await.unwrap();
    assert_eq!(data, "written by cp");
    assert!(info.etag.contains('-'), "derived etag {}", info.etag);
    assert_eq!(info.meta.content_type.as_deref(), Some("binary/octet-stream"));
    let again = s.head_object("bkt", "dir/sub/plain.txt", GetObjectRequest::default()).await.unwrap();
    assert_eq!(again.etag, info.etag, "derived etag must be stable");
    let listed = s.list_objects("bkt", ListObjectsRequest { max_keys: 10, ..Default::default() }).await.unwrap();
    assert_eq!(listed.objects[0].etag, info.etag);

    // An object modified by a POSIX tool loses its stored ETag and metadata.
    let mut meta = ObjectMeta { content_type: Some("text/x-stored".into()), ..Default::default() };
    meta.user.insert("m".into(), "1".into());
    let req = PutObjectRequest { meta, ..Default::default() };
    let out = s.put_object("bkt", "obj", req, Body::from("original")).await.unwrap();
    assert_eq!(out.etag, s3hpc_core::checksum::md5_hex(b"original"));
    std::thread::sleep(Duration::from_millis(20));
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(b.join("obj")).unwrap();
        f.write_all(b" + appended").unwrap();
    }
    let h = s.head_object("bkt", "obj", GetObjectRequest::default()).await.unwrap();
    assert_ne!(h.etag, out.etag, "stale ETag served after a POSIX write");
    assert!(h.etag.contains('-'));
    assert_eq!(h.size, "original + appended".len() as u64);
    assert!(h.meta.user.is_empty());
    // Same size rewrite (only mtime differs) is noticed too.
    let out = put(&s, "obj2", "aaaa").await.unwrap();
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(b.join("obj2"), b"bbbb").unwrap();
    let h = s.head_object("bkt", "obj2", GetObjectRequest::default()).await.unwrap();
    assert_ne!(h.etag, out.etag);
    // Tagging a foreign file keeps its derived ETag.
    s.put_object_tagging("bkt", "top", None, vec![("t".into(), "v".into())]).await.unwrap();
    let before = info.etag.clone();
    let _ = before;
    let top = s.head_object("bkt", "top", GetObjectRequest::default()).await.unwrap();
    assert_eq!(top.tag_count, 1);
    assert!(top.etag.contains('-'));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn internal_directory_is_hidden_and_root_entries_filtered() {
    let (_d, root, s) = setup().await;
    put(&s, "k", "v").await.unwrap();
    let _ = s.create_multipart_upload("bkt", "up", CreateMultipartRequest::default()).await.unwrap();
    s.put_bucket_tagging("bkt", vec![("a".into(), "b".into())]).await.unwrap();
    assert!(root.join(".s3hpc/staging/uploads/bkt").is_dir());
    assert_eq!(keys(&s, "").await, vec!["k"]);
    assert_eq!(keys(&s, ".").await, Vec::<String>::new());
    let p = s
        .list_objects("bkt", ListObjectsRequest { delimiter: Some("/".into()), max_keys: 100, ..Default::default() })
        .await
        .unwrap();
    assert!(p.common_prefixes.is_empty(), "{:?}", p.common_prefixes);
    // Root-level config dir, stray files and invalid names are not buckets.
    std::fs::create_dir_all(root.join(".s3hpc")).unwrap();
    std::fs::write(root.join("afile"), b"x").unwrap();
    std::fs::create_dir_all(root.join("bad name")).unwrap();
    std::fs::create_dir_all(root.join("manual-bucket")).unwrap();
    let names: Vec<String> = s.list_buckets().await.unwrap().into_iter().map(|b| b.name).collect();
    assert_eq!(names, vec!["bkt", "manual-bucket"]);
    // A bucket made with mkdir works without its internal dir.
    s.put_object("manual-bucket", "x/y", PutObjectRequest::default(), Body::from("z")).await.unwrap();
    assert_eq!(std::fs::read(root.join("manual-bucket/x/y")).unwrap(), b"z");
    // Multipart uploads do not keep a bucket from being deleted; objects do.
    assert_eq!(s.delete_bucket("bkt").await.unwrap_err().code, ErrorCode::BucketNotEmpty);
    s.delete_object("bkt", "k").await.unwrap();
    s.delete_bucket("bkt").await.unwrap();
    assert!(!root.join("bkt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_prune_empty_dirs_but_keep_directory_objects() {
    let (_d, root, s) = setup().await;
    let b = root.join("bkt");
    put(&s, "e/f/g/h", "x").await.unwrap();
    s.delete_object("bkt", "e/f/g/h").await.unwrap();
    assert!(!b.join("e").exists(), "empty parents left behind");
    put(&s, "d/", "").await.unwrap();
    put(&s, "d/sub/x", "x").await.unwrap();
    s.delete_object("bkt", "d/sub/x").await.unwrap();
    assert!(!b.join("d/sub").exists());
    assert!(b.join("d").is_dir(), "directory object removed");
    assert_eq!(keys(&s, "").await, vec!["d/"]);
    s.delete_object("bkt", "d/").await.unwrap();
    assert!(!b.join("d").exists());
    assert!(tree(&b).is_empty(), "{:?}", tree(&b));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_records_fall_back_to_a_sidecar() {
    let (_d, root, s) = setup().await;
    assert_eq!(s.meta_mode(), MetaMode::Xattr);
    // 10 tags of 128 + 256 two-byte characters: ~7.7 KB, more than ext4 keeps in xattrs.
    let tags: Tags = (0..10).map(|i| (format!("{i}{}", "é".repeat(127)), "ü".repeat(256))).collect();
    let req = PutObjectRequest { tags: tags.clone(), ..Default::default() };
    let out = s.put_object("bkt", "big-meta", req, Body::from("data")).await.unwrap();
    assert_eq!(s.get_object_tagging("bkt", "big-meta", None).await.unwrap().tags, tags);
    let h = s.head_object("bkt", "big-meta", GetObjectRequest::default()).await.unwrap();
    assert_eq!(h.etag, out.etag);
    let meta_dir = root.join("bkt/.s3hpc/meta");
    let count = |d: &Path| tree(d).iter().filter(|p| p.contains('.') && !p.ends_with(".tmp")).count();
    let used_sidecar = meta_dir.exists() && count(&meta_dir) > 0;
    s.delete_object("bkt", "big-meta").await.unwrap();
    if used_sidecar {
        assert_eq!(count(&meta_dir), 0, "sidecar left after delete: {:?}", tree(&meta_dir));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sidecar_mode_keeps_metadata_off_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = PosixStore::open_with_sidecars(dir.path(), opts()).unwrap();
    s.create_bucket("bkt").await.unwrap();
    let mut meta = ObjectMeta::default();
    meta.user.insert("k".into(), "v".into());
    let req = PutObjectRequest { meta: meta.clone(), ..Default::default() };
    let out = s.put_object("bkt", "a/b", req, Body::from("hello")).await.unwrap();
    let f = dir.path().canonicalize().unwrap().join("bkt/a/b");
    let has_xattr = std::process::Command::new("getfattr").arg("-d").arg(&f).output().ok().map(|o| o.stdout);
    if let Some(out) = has_xattr {
        assert!(!String::from_utf8_lossy(&out).contains("s3hpc"), "xattr written in sidecar mode");
    }
    let h = s.head_object("bkt", "a/b", GetObjectRequest::default()).await.unwrap();
    assert_eq!((h.etag, h.meta), (out.etag.clone(), meta));
    // Overwrite: the old sidecar goes away, one remains.
    put(&s, "a/b", "again").await.unwrap();
    let n = tree(&dir.path().join("bkt/.s3hpc/meta")).iter().filter(|p| p.matches('/').count() == 1).count();
    assert_eq!(n, 1);
    s.delete_object("bkt", "a/b").await.unwrap();
    let n = tree(&dir.path().join("bkt/.s3hpc/meta")).iter().filter(|p| p.matches('/').count() == 1).count();
    assert_eq!(n, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_bodies_leave_no_temp_files() {
    let (_d, root, s) = setup().await;
    let chunks: Vec<std::io::Result<Bytes>> = vec![
        Ok(Bytes::from(vec![1u8; 3 << 20])),
        Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "client went away")),
    ];
    let body = Body::Stream(Box::pin(futures::stream::iter(chunks)));
    assert!(s.put_object("bkt", "broken", PutObjectRequest::default(), body).await.is_err());
    let req = PutObjectRequest { content_length: Some(10), ..Default::default() };
    let e = s.put_object("bkt", "short", req, Body::from("abc")).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::IncompleteBody);
    let req = PutObjectRequest { content_md5: Some([0; 16]), ..Default::default() };
    assert_eq!(s.put_object("bkt", "md5", req, Body::from("abc")).await.unwrap_err().code, ErrorCode::BadDigest);
    assert!(keys(&s, "").await.is_empty());
    let tmp: Vec<_> = std::fs::read_dir(root.join(".s3hpc/staging/tmp")).unwrap().collect();
    assert!(tmp.is_empty(), "temp files left: {tmp:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_temp_cleanup_goes_by_age_only() {
    let dir = tempfile::tempdir().unwrap();
    let o = PosixOptions { stale_temp_age: Duration::from_secs(3600), ..opts() };
    let s = PosixStore::open(dir.path(), o.clone()).unwrap();
    s.create_bucket("bkt").await.unwrap();
    let tmp = s.root().join(".s3hpc/staging/tmp");
    let old = tmp.join("otherhost.1.dead");
    let fresh = tmp.join("otherhost.2.live");
    std::fs::write(&old, b"x").unwrap();
    std::fs::write(&fresh, b"y").unwrap();
    let f = std::fs::File::options().write(true).open(&old).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(7200)).unwrap();
    drop(f);
    assert_eq!(s.cleanup_stale(), 1);
    assert!(!old.exists() && fresh.exists());
    // Opening a second store on the root runs the cleanup too, and still spares live files.
    let _s2 = PosixStore::open(dir.path(), o).unwrap();
    assert!(fresh.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_directory_listing_is_cached_and_correct() {
    let (_d, root, s) = setup().await;
    let b = root.join("bkt/big");
    std::fs::create_dir_all(&b).unwrap();
    let n = 3000;
    for i in 0..n {
        std::fs::write(b.join(format!("f{:05}{}", (i * 7919) % n, if i % 3 == 0 { "-x" } else { "" })), b"").unwrap();
    }
    std::fs::create_dir(b.join("f00010.d")).unwrap();
    std::fs::write(b.join("f00010.d/inner"), b"").unwrap();
    // Listings are cached only once the directory is 2 s past its last change (coarse mtimes).
    std::thread::sleep(Duration::from_millis(2100));
    let mut want: Vec<String> = std::fs::read_dir(&b)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| format!("big/{}", e.file_name().to_string_lossy()))
        .collect();
    want.push("big/f00010.d/inner".into());
    want.sort();
    let got = keys(&s, "").await;
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
    assert!(s.cached_dirs() >= 1, "large directory was not cached");
    // A change to the directory invalidates the cached listing.
    std::fs::write(b.join("f00000-new"), b"").unwrap();
    let got2 = keys(&s, "big/").await;
    assert_eq!(got2.len(), want.len() + 1);
    assert!(got2.contains(&"big/f00000-new".to_string()));
}

/// On a local file system with fine timestamps (ext4, xfs, btrfs, tmpfs) a large directory is
/// cached once it is 100 ms past its last change, and a later change still invalidates it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_large_directory_is_cached_on_local_file_systems() {
    let (_d, root, s) = setup_with(PosixOptions { io: IoMode::Inline, ..opts() }).await;
    // The stamp rule (inotify-watched lists need no settling: see tests/listing_cache.rs).
    s.set_listing_watch(false);
    let local =
        rustix::fs::statfs(&root).is_ok_and(|st| matches!(st.f_type, 0xEF53 | 0x5846_5342 | 0x9123_683E | 0x0102_1994));
    assert!(local, "this test needs /tmp on ext4, xfs, btrfs or tmpfs");
    for i in 0..600 {
        put(&s, &format!("d/k{i:04}"), vec![1u8; 10]).await.unwrap();
    }
    // A whole-second mtime (as on file systems with coarse timestamps) less than 2 s old: not
    // cached, whatever the file system type says.
    // The mtime is the current whole second, set early in that second, so it is well under 2 s
    // old when the listing runs (an older one would rightly be cached).
    let d = root.join("bkt/d");
    let mut now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap();
    if now.subsec_millis() > 300 {
        std::thread::sleep(Duration::from_millis(1005 - u64::from(now.subsec_millis())));
        now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap();
    }
    let whole = SystemTime::UNIX_EPOCH + Duration::from_secs(now.as_secs());
    std::fs::File::open(&d).unwrap().set_modified(whole).unwrap();
    std::thread::sleep(Duration::from_millis(250));
    assert_eq!(keys(&s, "d/").await.len(), 600);
    assert_eq!(s.cached_dirs(), 0, "a coarse, recent mtime must not be cached");
    put(&s, "d/k0599", vec![2u8; 10]).await.unwrap(); // a fresh fine-grained mtime
    std::thread::sleep(Duration::from_millis(250));
    assert_eq!(keys(&s, "d/").await.len(), 600);
    assert_eq!(s.cached_dirs(), 1, "the directory was not cached");
    put(&s, "d/k0600", vec![1u8; 10]).await.unwrap();
    let after = keys(&s, "d/").await;
    assert_eq!(after.len(), 601);
    assert_eq!(after.last().map(String::as_str), Some("d/k0600"));
}

/// Records are cached in memory once a file has settled; any change of the file's xattr (by
/// the store or by another program) or content must be seen at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_records_follow_every_change() {
    let (_d, root, s) = setup_with(PosixOptions { io: IoMode::Inline, ..opts() }).await;
    let p = root.join("bkt/obj");
    let req = PutObjectRequest { tags: vec![("a".into(), "1".into())], ..Default::default() };
    let put1 = s.put_object("bkt", "obj", req, Body::from("hello")).await.unwrap();
    std::thread::sleep(Duration::from_millis(250));
    for _ in 0..3 {
        let h = s.head_object("bkt", "obj", GetObjectRequest::default()).await.unwrap();
        assert_eq!((h.etag.as_str(), h.tag_count), (put1.etag.as_str(), 1));
    }
    // Through the store: new tags at once.
    s.put_object_tagging("bkt", "obj", None, vec![("b".into(), "2".into()), ("c".into(), "3".into())]).await.unwrap();
    assert_eq!(s.head_object("bkt", "obj", GetObjectRequest::default()).await.unwrap().tag_count, 2);
    assert_eq!(s.get_object_tagging("bkt", "obj", None).await.unwrap().tags.len(), 2);
    std::thread::sleep(Duration::from_millis(250));
    assert_eq!(s.head_object("bkt", "obj", GetObjectRequest::default()).await.unwrap().tag_count, 2);
    // Another program removes the xattr: the object loses its record (derived ETag) at once,
    // in HEAD, GET and listings.
    rustix::fs::removexattr(&p, c"user.s3hpc").unwrap();
    let h = s.head_object("bkt", "obj", GetObjectRequest::default()).await.unwrap();
    assert!(h.etag.ends_with("-1") && h.tag_count == 0, "stale cached record: {h:?}");
    let g = s.get_object("bkt", "obj", GetObjectRequest::default()).await.unwrap();
    assert_eq!(g.info.etag, h.etag);
    let page = s.list_objects("bkt", ListObjectsRequest { max_keys: 1000, ..Default::default() }).await.unwrap();
    assert_eq!(page.objects.len(), 1, "{page:?}");
    assert_eq!(page.objects[0].etag, h.etag);
    // Settled again, listed (cached by the listing), then rewritten in place by a POSIX tool.
    let put2 = put(&s, "obj", "again").await.unwrap();
    std::thread::sleep(Duration::from_millis(250));
    let page = s.list_objects("bkt", ListObjectsRequest { max_keys: 1000, ..Default::default() }).await.unwrap();
    assert_eq!(page.objects[0].etag, put2.etag);
    assert_eq!(s.head_object("bkt", "obj", GetObjectRequest::default()).await.unwrap().etag, put2.etag);
    std::fs::write(&p, b"AGAIN").unwrap();
    let h = s.head_object("bkt", "obj", GetObjectRequest::default()).await.unwrap();
    assert_ne!(h.etag, put2.etag, "a rewritten file must not keep the cached ETag");
    let page = s.list_objects("bkt", ListObjectsRequest { max_keys: 1000, ..Default::default() }).await.unwrap();
    assert_eq!(page.objects[0].etag, h.etag);
}

/// Where ctimes are exact (multigrain timestamps) a store remembers the record of what it just
/// published; a change by another process right after the PUT (within the same clock tick)
/// must still be seen by the next HEAD/GET/listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_remembered_at_publish_follow_immediate_changes() {
    let (_d, root, s) = setup_with(PosixOptions { io: IoMode::Inline, ..opts() }).await;
    let other = PosixStore::open(&root, PosixOptions { io: IoMode::Inline, ..opts() }).unwrap();
    let p = root.join("bkt/obj");
    for i in 0..20 {
        // Another store (process) tags the new object at once.
        let put1 = put(&s, "obj", format!("body {i:04}")).await.unwrap();
        other.put_object_tagging("bkt", "obj", None, vec![("t".into(), i.to_string())]).await.unwrap();
        let h = s.head_object("bkt", "obj", GetObjectRequest::default()).await.unwrap();
        assert_eq!((h.etag.as_str(), h.tag_count), (put1.etag.as_str(), 1), "round {i}: tags of another process");
        assert_eq!(
            s.get_object_tagging("bkt", "obj", None).await.unwrap().tags,
            vec![("t".to_string(), i.to_string())]
        );
        // A POSIX tool rewrites the new object in place with as many bytes.
        let put2 = put(&s, "obj", format!("BODY {i:04}")).await.unwrap();
        std::fs::write(&p, format!("body {i:04}")).unwrap();
        let (info, data) = get(&s, "obj").await.unwrap();
        assert_ne!(info.etag, put2.etag, "round {i}: a rewritten file must not keep its ETag");
        assert_eq!(data, Bytes::from(format!("body {i:04}")));
        let page = s.list_objects("bkt", ListObjectsRequest { max_keys: 10, ..Default::default() }).await.unwrap();
        assert_eq!(page.objects[0].etag, info.etag);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_writers_one_key_readers_never_see_torn_data() {
    many_writers_one_key(IoMode::Offload, 256 * 1024).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_writers_one_key_readers_never_see_torn_data_inline() {
    many_writers_one_key(IoMode::Inline, 256 * 1024).await;
}

/// Objects above the size where MD5 moves to a helper thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_writers_one_key_large_objects_both_modes() {
    many_writers_one_key(IoMode::Offload, 1200 * 1024).await;
    many_writers_one_key(IoMode::Inline, 1200 * 1024).await;
}

async fn many_writers_one_key(io: IoMode, len: usize) {
    let (_d, _root, s) = setup_with(PosixOptions { io, ..opts() }).await;
    let s = Arc::new(s);
    put(&s, "hot", vec![0u8; len]).await.unwrap();
    let mut tasks = Vec::new();
    for w in 1..=6u8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..8 {
                // Streamed in uneven chunks so writes interleave at many points.
                let chunks: Vec<std::io::Result<Bytes>> =
                    vec![w; len].chunks(10_007).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
                let body = Body::Stream(Box::pin(futures::stream::iter(chunks)));
                s.put_object("bkt", "hot", PutObjectRequest::default(), body).await.unwrap();
            }
        }));
    }
    let mut readers = Vec::new();
    for _ in 0..3 {
        let s = s.clone();
        readers.push(tokio::spawn(async move {
            let mut seen = std::collections::HashSet::new();
            for _ in 0..60 {
                let (info, data) = get(&s, "hot").await.unwrap();
                assert_eq!(data.len(), len, "short read");
                assert_eq!(info.size, len as u64);
                let b = data[0];
                assert!(data.iter().all(|x| *x == b), "torn object: mixed bytes");
                assert_eq!(info.etag, s3hpc_core::checksum::md5_hex(&data), "etag from another version");
                seen.insert(b);
            }
            seen.len()
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    for r in readers {
        assert!(r.await.unwrap() >= 1);
    }
    let (_, data) = get(&s, "hot").await.unwrap();
    assert!(data.iter().all(|x| *x == data[0]) && data[0] != 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn create_only_race_has_one_winner() {
    create_only_race(IoMode::Offload).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn create_only_race_has_one_winner_inline() {
    create_only_race(IoMode::Inline).await;
}

async fn create_only_race(io: IoMode) {
    let (_d, _root, s) = setup_with(PosixOptions { io, ..opts() }).await;
    let s = Arc::new(s);
    let mut tasks = Vec::new();
    for w in 0..8u8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let req = PutObjectRequest {
                conditions: Conditions { if_none_match: Some("*".into()), ..Default::default() },
                ..Default::default()
            };
            s.put_object("bkt", "once", req, Body::from(vec![w; 4096])).await.map(|_| w)
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            Ok(w) => winners.push(w),
            Err(e) => assert_eq!(e.code, ErrorCode::PreconditionFailed),
        }
    }
    assert_eq!(winners.len(), 1, "winners {winners:?}");
    let (_, data) = get(&s, "once").await.unwrap();
    assert!(data.iter().all(|b| *b == winners[0]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_complete_and_abort_is_safe() {
    complete_vs_abort(IoMode::Offload).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_complete_and_abort_is_safe_inline() {
    complete_vs_abort(IoMode::Inline).await;
}

async fn complete_vs_abort(io: IoMode) {
    let (_d, _root, s) = setup_with(PosixOptions { io, ..opts() }).await;
    let s = Arc::new(s);
    for round in 0..6 {
        let key = format!("mp{round}");
        let id = s.create_multipart_upload("bkt", &key, CreateMultipartRequest::default()).await.unwrap();
        let p = s.upload_part("bkt", &key, &id, 1, UploadPartRequest::default(), Body::from(vec![7u8; 5000])).await;
        let parts = vec![CompletePart { part_number: 1, etag: p.unwrap().etag, checksum: None }];
        let (s1, s2, s3) = (s.clone(), s.clone(), s.clone());
        let (k1, k2, k3, i1, i2, i3) = (key.clone(), key.clone(), key.clone(), id.clone(), id.clone(), id.clone());
        let pc = parts.clone();
        let c1 =
            tokio::spawn(async move { s1.complete_multipart_upload("bkt", &k1, &i1, pc, Conditions::default()).await });
        let c2 =
            tokio::spawn(
                async move { s2.complete_multipart_upload("bkt", &k2, &i2, parts, Conditions::default()).await },
            );
        let a = tokio::spawn(async move { s3.abort_multipart_upload("bkt", &k3, &i3).await });
        let results = [c1.await.unwrap().map(|_| ()), c2.await.unwrap().map(|_| ()), a.await.unwrap()];
        // Either the abort wins (both completes find no upload) or the completes do (both get
        // the same 200: the later one answers from the first one's record).
        let completes = results[..2].iter().filter(|r| r.is_ok()).count();
        assert!(
            (completes == 2 && results[2].is_err()) || (completes == 0 && results[2].is_ok()),
            "complete/complete/abort: {results:?}"
        );
        for r in results.iter().filter_map(|r| r.as_ref().err()) {
            assert_eq!(r.code, ErrorCode::NoSuchUpload);
        }
        match get(&s, &key).await {
            Ok((_, d)) => assert_eq!(d, vec![7u8; 5000]),
            Err(e) => assert_eq!(e.code, ErrorCode::NoSuchKey),
        }
        let ups = s.list_multipart_uploads("bkt", ListUploadsRequest::default()).await.unwrap();
        assert!(ups.uploads.is_empty());
    }
}

/// Large bodies with costly digests are hashed on a helper thread while they are written; the
/// digests must equal a one-pass hash of the same bytes, for in-memory and streamed bodies,
/// objects and parts, in both I/O modes, and a wrong Content-MD5 must still publish nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapped_hashing_gives_the_same_digests() {
    use s3hpc_core::checksum::{checksum_of, md5_hex};
    for io in [IoMode::Offload, IoMode::Inline] {
        let (_d, root, s) = setup_with(PosixOptions { io, etag_mode: EtagMode::Md5, ..opts() }).await;
        for len in [100usize, (512 << 10) - 1, 512 << 10, (3 << 20) + 12345] {
            let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let md5 = md5_hex(&data);
            let sha = checksum_of(ChecksumAlgorithm::Sha256, &data);
            let mut raw = [0u8; 16];
            hex::decode_to_slice(&md5, &mut raw).unwrap();
            let req = || PutObjectRequest {
                content_md5: Some(raw),
                checksum: Some(ChecksumRequest {
                    algorithm: ChecksumAlgorithm::Sha256,
                    expected: Some(Expected::Known(sha.value.clone())),
                }),
                content_length: Some(len as u64),
                ..Default::default()
            };
            let o = s.put_object("bkt", "mem", req(), Body::from(data.clone())).await.unwrap();
            assert_eq!(o.etag, md5, "{io:?} {len} bytes in memory");
            assert_eq!(o.checksum.as_ref(), Some(&sha));
            let chunks: Vec<std::io::Result<Bytes>> =
                data.chunks(70_001).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
            let body = Body::Stream(Box::pin(futures::stream::iter(chunks)));
            let o = s.put_object("bkt", "stream", req(), body).await.unwrap();
            assert_eq!(o.etag, md5, "{io:?} {len} bytes streamed");
            assert_eq!(get(&s, "stream").await.unwrap().1, data);
            let id = s.create_multipart_upload("bkt", "mp", CreateMultipartRequest::default()).await.unwrap();
            let chunks: Vec<std::io::Result<Bytes>> =
                data.chunks(1 << 20).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
            let body = Body::Stream(Box::pin(futures::stream::iter(chunks)));
            let p = s.upload_part("bkt", "mp", &id, 1, UploadPartRequest::default(), body).await.unwrap();
            assert_eq!(p.etag, md5, "{io:?} {len} bytes part");
            s.abort_multipart_upload("bkt", "mp", &id).await.unwrap();
            let bad = PutObjectRequest { content_md5: Some([0; 16]), ..Default::default() };
            let e = s.put_object("bkt", "bad", bad, Body::from(data.clone())).await.unwrap_err();
            assert_eq!(e.code, ErrorCode::BadDigest);
        }
        assert!(get(&s, "bad").await.is_err());
        let tmp: Vec<_> = std::fs::read_dir(root.join(".s3hpc/staging/tmp")).unwrap().collect();
        assert!(tmp.is_empty(), "temp files left: {tmp:?}");
    }
}

/// Concurrent MD5 PUTs share the multi-buffer MD5 service (their pieces hashed together in
/// SIMD lanes): every ETag is the MD5 of its own body, for bodies of different sizes and piece
/// sizes written at once, in memory and streamed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_md5_puts_get_their_own_digests() {
    use s3hpc_core::checksum::md5_hex;
    let (_d, _root, s) = setup_with(PosixOptions { etag_mode: EtagMode::Md5, ..opts() }).await;
    let s = std::sync::Arc::new(s);
    let mut tasks = Vec::new();
    for w in 0..16usize {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            for round in 0..3usize {
                let len = [(1 << 20) + 7, 128 << 10, 3 << 20, (200 << 10) + 1][(w + round) % 4];
                let data: Vec<u8> = (0..len).map(|i| ((i * 13 + w * 101 + round) % 251) as u8).collect();
                let key = format!("w{w}/r{round}");
                let o = if w % 2 == 0 {
                    put(&s, &key, data.clone()).await.unwrap()
                } else {
                    let chunks: Vec<std::io::Result<Bytes>> =
                        data.chunks(65_536 + w * 1000).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
                    let req = PutObjectRequest { content_length: Some(len as u64), ..Default::default() };
                    s.put_object("bkt", &key, req, Body::Stream(Box::pin(futures::stream::iter(chunks)))).await.unwrap()
                };
                assert_eq!(o.etag, md5_hex(&data), "{key}");
                assert_eq!(get(&s, &key).await.unwrap().1, data, "{key}");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// Inline mode runs on the calling task: with the runtime's only blocking thread busy, every
/// kind of call still completes (under Offload they would wait for that thread).
#[test]
fn inline_mode_needs_no_blocking_pool() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().max_blocking_threads(1).build().unwrap();
    let (release, wait) = std::sync::mpsc::channel::<()>();
    rt.block_on(async move {
        let busy = tokio::task::spawn_blocking(move || wait.recv());
        let dir = tempfile::tempdir().unwrap();
        let run = |io: IoMode| {
            let root = dir.path().join(format!("{io:?}"));
            async move {
                let s = PosixStore::open(&root, PosixOptions { io, etag_mode: EtagMode::Md5, ..opts() }).unwrap();
                s.create_bucket("bkt").await?;
                put(&s, "k", vec![1u8; 2 << 20]).await?;
                let chunks: Vec<std::io::Result<Bytes>> = vec![Ok(Bytes::from(vec![2u8; 3 << 20]))];
                let body = Body::Stream(Box::pin(futures::stream::iter(chunks)));
                s.put_object("bkt", "s", PutObjectRequest::default(), body).await?;
                s.head_object("bkt", "k", GetObjectRequest::default()).await?;
                // (Read the returned file here: `Body::collect` of a file body itself uses the pool.)
                let o = s.get_object("bkt", "s", GetObjectRequest::default()).await?;
                let Body::File { file, offset, len } = o.body else { panic!("a file body") };
                let mut d = vec![0u8; len as usize];
                std::os::unix::fs::FileExt::read_exact_at(&file, &mut d, offset).unwrap();
                assert!(d.len() == 3 << 20 && d.iter().all(|b| *b == 2));
                assert_eq!(keys(&s, "").await, vec!["k".to_string(), "s".to_string()]);
                s.delete_object("bkt", "k").await?;
                Ok::<_, Error>(())
            }
        };
        let t = Duration::from_secs(20);
        tokio::time::timeout(t, run(IoMode::Inline)).await.expect("inline mode waited for the blocking pool").unwrap();
        let offload = tokio::time::timeout(Duration::from_millis(300), run(IoMode::Offload)).await;
        assert!(offload.is_err(), "offload mode should need the (busy) blocking pool");
        release.send(()).unwrap();
        busy.await.unwrap().unwrap();
    });
}

#[test]
fn io_mode_parse() {
    assert_eq!(IoMode::parse("inline"), Some(IoMode::Inline));
    assert_eq!(IoMode::parse(" Offload"), Some(IoMode::Offload));
    assert_eq!(IoMode::parse("sync"), None);
    assert_eq!(IoMode::default(), IoMode::Offload);
}

#[test]
fn durability_parse() {
    assert_eq!(Durability::parse("strict"), Some(Durability::Strict));
    assert_eq!(Durability::parse("Relaxed"), Some(Durability::Relaxed));
    assert_eq!(Durability::parse("none"), Some(Durability::None));
    assert_eq!(Durability::parse("fsync"), None);
    assert_eq!(Durability::default(), Durability::Relaxed);
}

/// One listing page as (keys with size and ETag, common prefixes, truncated).
type Page = (Vec<(String, u64, String)>, Vec<String>, bool);

/// Pages of `req`, followed to the end.
async fn pages(s: &dyn Store, req: ListObjectsRequest) -> Vec<Page> {
    let mut out = Vec::new();
    let mut req = req;
    loop {
        let p = s.list_objects("bkt", req.clone()).await.unwrap();
        out.push((p.objects.into_iter().map(|o| (o.key, o.size, o.etag)).collect(), p.common_prefixes, p.is_truncated));
        if !p.is_truncated {
            return out;
        }
        req.start_after = p.next_marker;
    }
}

/// Runs of files are summarized ahead of the walk (in parallel): every page, for every prefix,
/// delimiter, page size and start marker, is the oracle's, including when a cached directory
/// listing names a file that has vanished since.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_computed_ahead_matches_the_oracle() {
    let (_d, root, s) = setup().await;
    let m = s3hpc_core::memory::MemoryStore::new();
    m.create_bucket("bkt").await.unwrap();
    let mut all: Vec<String> = (0..300).map(|i| format!("d/f{i:03}")).collect();
    all.extend(["d/f100x/inner", "d/f100x/j", "d/f200-a", "d/f250b/z", "e/a", "top"].map(String::from));
    for (i, k) in all.iter().enumerate() {
        let body = vec![i as u8; i % 50];
        put(&s, k, body.clone()).await.unwrap();
        m.put_object("bkt", k, PutObjectRequest::default(), Body::from(Bytes::from(body))).await.unwrap();
    }
    let check = async |what: &str, delimiters: &[Option<&str>], exact: bool| {
        for prefix in ["", "d/", "d/f1", "d/f100x"] {
            for &delimiter in delimiters {
                for max_keys in [1, 31, 33, 100, 1000] {
                    for start_after in [None, Some("d/f049"), Some("d/f100x/")] {
                        let req = ListObjectsRequest {
                            prefix: prefix.into(),
                            delimiter: delimiter.map(String::from),
                            max_keys,
                            start_after: start_after.map(String::from),
                        };
                        let (got, want) = (pages(&s, req.clone()).await, pages(&m, req).await);
                        let ctx = format!(
                            "{what}: prefix {prefix:?} delimiter {delimiter:?} max_keys {max_keys} start_after {start_after:?}"
                        );
                        if exact {
                            assert_eq!(got, want, "{ctx}");
                        } else {
                            // A vanished name can end a page early (it counted as the next
                            // entry): the entries, concatenated, are still the oracle's.
                            let flat = |v: Vec<Page>| {
                                assert!(v.iter().all(|p| p.0.len() + p.1.len() <= max_keys), "{ctx}");
                                v.into_iter().fold((vec![], vec![]), |(mut o, mut c), p| {
                                    o.extend(p.0);
                                    c.extend(p.1);
                                    (o, c)
                                })
                            };
                            assert_eq!(flat(got), flat(want), "{ctx}");
                        }
                    }
                }
            }
        }
    };
    check("fresh", &[None, Some("/"), Some("0")], true).await;
    // Once the directory listing is cached, remove files behind the cache's back (the directory
    // keeps its mtime): the walk offers names whose files are gone.
    std::thread::sleep(Duration::from_millis(2100));
    assert_eq!(keys(&s, "d/").await.len(), 304);
    assert!(s.cached_dirs() >= 1, "the directory was not cached");
    let d = root.join("bkt/d");
    let mtime = std::fs::metadata(&d).unwrap().modified().unwrap();
    for k in ["d/f010", "d/f040", "d/f041", "d/f150", "d/f299"] {
        std::fs::remove_file(root.join("bkt").join(k)).unwrap();
        m.delete_object("bkt", k).await.unwrap();
    }
    std::fs::File::open(&d).unwrap().set_modified(mtime).unwrap();
    assert_eq!(keys(&s, "d/").await.len(), 299);
    // (Not with delimiter "0": a name that ends up in a common prefix is not stat'ed, so a
    // vanished one still rolls up, which only a directory with a forged mtime can show.)
    check("vanished", &[None, Some("/")], false).await;
}

/// A PUT's future (boxed by the trait) stays within what the allocator serves from its
/// per-thread cache (glibc's tcache: up to 1032 bytes): the directory and streaming paths run
/// in futures of their own. At 2.6 KB, every PUT's allocation took glibc's large-chunk path and
/// a `malloc_consolidate` (~1,500 instructions of a 4 KiB PUT's ~17,500, callgrind).
#[tokio::test]
async fn the_put_future_stays_small() {
    let (_d, _root, s) = setup().await;
    let f = s.put_object("bkt", "k", PutObjectRequest::default(), Body::Bytes(Bytes::from_static(b"x")));
    let n = std::mem::size_of_val(&*f);
    assert!(n <= 1024, "the PutObject future is {n} bytes");
    f.await.unwrap();
}

/// Store calls in the servers' mode never hold up the other tasks of their worker thread, even
/// on a runtime with a single worker: a ticker task keeps ticking while one task runs a tight
/// loop of HEADs and PUTs whose every call completes at once (no await ever yields). In `Inline`
/// mode the same loop starves the ticker (checked as the control).
#[test]
fn offloaded_calls_do_not_stall_the_worker() {
    fn ticks_during_busy_loop(io: IoMode) -> u64 {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        rt.block_on(async move {
            let (_d, _root, s) = setup_with(PosixOptions { io, ..opts() }).await;
            put(&s, "k", vec![1u8; 4096]).await.unwrap();
            let ticks = Arc::new(std::sync::atomic::AtomicU64::new(0));
            let t = ticks.clone();
            let ticker = tokio::spawn(async move {
                loop {
                    t.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tokio::task::yield_now().await;
                }
            });
            // Let the ticker start, then measure only during the busy task.
            tokio::task::yield_now().await;
            let busy = tokio::spawn(async move {
                let start = ticks.load(std::sync::atomic::Ordering::Relaxed);
                let t0 = std::time::Instant::now();
                while t0.elapsed() < std::time::Duration::from_millis(300) {
                    s.head_object("bkt", "k", GetObjectRequest::default()).await.unwrap();
                    put(&s, "k", vec![2u8; 4096]).await.unwrap();
                }
                ticks.load(std::sync::atomic::Ordering::Relaxed) - start
            });
            let n = busy.await.unwrap();
            ticker.abort();
            n
        })
    }
    assert!(ticks_during_busy_loop(IoMode::Inline) < 10, "control: inline calls should starve the ticker");
    for io in [IoMode::Offload, IoMode::InPlace] {
        let n = ticks_during_busy_loop(io);
        assert!(n > 100, "{io:?}: the ticker ran only {n} times while the store was busy");
    }
}
