//! Symlinks a POSIX user plants in a bucket: never followed out of the root, for reads, writes
//! or the store's internal directory.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use s3hpc_core::*;
use s3hpc_posix::{PosixOptions, PosixStore};

fn xattr_names(p: &Path) -> Vec<String> {
    let mut buf = vec![0u8; 4096];
    let n = rustix::fs::listxattr(p, &mut buf[..]).unwrap();
    buf[..n].split(|b| *b == 0).filter(|s| !s.is_empty()).map(|s| String::from_utf8_lossy(s).into()).collect()
}

/// A store whose bucket holds symlinks a POSIX user planted: `dirlink` to a directory outside the
/// root (holding `secret`) and `filelink` to that file. Returns the temp dir, the store, the
/// outside directory and the bucket directory.
async fn with_planted_symlinks() -> (tempfile::TempDir, PosixStore, PathBuf, PathBuf) {
    let (dir, root, s) = setup().await;
    let outside = dir.path().join("secret-dir");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret"), b"secret").unwrap();
    let b = root.join("bkt");
    std::os::unix::fs::symlink(&outside, b.join("dirlink")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret"), b.join("filelink")).unwrap();
    (dir, s, outside, b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlinks_cannot_leak_files_outside_the_root() {
    let (_dir, s, _outside, b) = with_planted_symlinks().await;
    std::os::unix::fs::symlink("../../secret-dir/secret", b.join("rellink")).unwrap();
    for k in ["dirlink/secret", "filelink", "rellink"] {
        let e = s.get_object("bkt", k, GetObjectRequest::default()).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::AccessDenied, "{k}: {e}");
        let e = s.copy_object("bkt", k, "bkt", "copy", CopyObjectRequest::default()).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::AccessDenied, "copy {k}: {e}");
        let e = s.head_object("bkt", k, GetObjectRequest::default()).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::AccessDenied, "head {k}: {e}");
        let e = s.get_object_tagging("bkt", k, None).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::AccessDenied, "get tagging {k}: {e}");
    }
    // A symlink that stays inside the root is served.
    put(&s, "real", "inside").await.unwrap();
    std::os::unix::fs::symlink("real", b.join("alias")).unwrap();
    assert_eq!(get(&s, "alias").await.unwrap().1, "inside");
    // So is a key that passes through a symlinked directory inside the root, at any depth.
    put(&s, "sub/deep/f", "deep").await.unwrap();
    std::os::unix::fs::symlink("sub", b.join("subalias")).unwrap();
    std::os::unix::fs::symlink("../sub/deep", b.join("sub/deeplink")).unwrap();
    assert_eq!(get(&s, "subalias/deep/f").await.unwrap().1, "deep");
    assert_eq!(get(&s, "sub/deeplink/f").await.unwrap().1, "deep");
    // Symlinked directories are not walked by listings.
    assert!(!keys(&s, "").await.iter().any(|k| k.starts_with("dirlink")));
}

/// Writes, deletes and tag changes never go through a symlinked directory that leads out of the
/// root (a POSIX user who can create symlinks in a bucket must not be able to make the gateway
/// write, delete or tag files elsewhere with its own permissions); symlinks that stay inside the
/// root behave as for reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlinks_cannot_redirect_writes_outside_the_root() {
    let (_dir, s, outside, b) = with_planted_symlinks().await;
    std::os::unix::fs::symlink("../../secret-dir", b.join("reldirlink")).unwrap();
    std::fs::create_dir_all(b.join("sub")).unwrap();
    std::os::unix::fs::symlink(&outside, b.join("sub/deeplink")).unwrap();
    let denied = |r: Result<()>, what: &str| match r {
        Err(e) => assert_eq!(e.code, ErrorCode::AccessDenied, "{what}: {e}"),
        Ok(()) => panic!("{what}: went through a symlink out of the root"),
    };
    for d in ["dirlink", "reldirlink", "sub/deeplink"] {
        denied(put(&s, &format!("{d}/new"), "x").await.map(|_| ()), &format!("put {d}/new"));
        denied(put(&s, &format!("{d}/a/b/new"), "x").await.map(|_| ()), &format!("put {d}/a/b/new"));
        denied(put(&s, &format!("{d}/dir/"), "").await.map(|_| ()), &format!("put {d}/dir/"));
        denied(s.delete_object("bkt", &format!("{d}/secret")).await, &format!("delete {d}/secret"));
        let tags = vec![("k".to_string(), "v".to_string())];
        denied(
            s.put_object_tagging("bkt", &format!("{d}/secret"), None, tags).await.map(|_| ()),
            &format!("tag {d}/secret"),
        );
        denied(
            s.delete_object_tagging("bkt", &format!("{d}/secret"), None).await.map(|_| ()),
            &format!("untag {d}/secret"),
        );
        put(&s, "src", "source").await.unwrap();
        let r = s.copy_object("bkt", "src", "bkt", &format!("{d}/copy"), CopyObjectRequest::default()).await;
        denied(r.map(|_| ()), &format!("copy to {d}/copy"));
        let id = s.create_multipart_upload("bkt", &format!("{d}/mpu"), CreateMultipartRequest::default()).await;
        if let Ok(id) = id {
            let p = s
                .upload_part("bkt", &format!("{d}/mpu"), &id, 1, UploadPartRequest::default(), Body::from("part"))
                .await
                .unwrap();
            let parts = vec![CompletePart { part_number: 1, etag: p.etag, checksum: None }];
            let r = s.complete_multipart_upload("bkt", &format!("{d}/mpu"), &id, parts, Conditions::default()).await;
            denied(r.map(|_| ()), &format!("complete {d}/mpu"));
        }
    }
    // A tag on a key that is a symlink to a file outside: refused like a GET of it.
    let tags = vec![("k".to_string(), "v".to_string())];
    denied(s.put_object_tagging("bkt", "filelink", None, tags).await.map(|_| ()), "tag filelink");
    // Nothing outside changed.
    let mut names: Vec<String> =
        std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names, vec!["secret".to_string()]);
    assert_eq!(std::fs::read(outside.join("secret")).unwrap(), b"secret");
    assert_eq!(xattr_names(&outside.join("secret")), Vec::<String>::new());
    // Replacing or deleting the symlink itself stays inside the bucket.
    put(&s, "filelink", "now an object").await.unwrap();
    assert_eq!(get(&s, "filelink").await.unwrap().1, "now an object");
    s.delete_object("bkt", "dirlink").await.unwrap();
    assert_eq!(std::fs::read(outside.join("secret")).unwrap(), b"secret");
    // Symlinked directories that stay inside the root are written through, as they are read.
    std::fs::create_dir_all(b.join("real")).unwrap();
    std::os::unix::fs::symlink("real", b.join("alias")).unwrap();
    put(&s, "alias/f", "via alias").await.unwrap();
    assert_eq!(std::fs::read(b.join("real/f")).unwrap(), b"via alias");
    s.delete_object("bkt", "alias/f").await.unwrap();
    assert!(!b.join("real/f").exists());
}

/// The bucket's internal directory replaced by a symlink to somewhere else: the gateway's state
/// is not there (it is in `ROOT/.s3hpc`), so a PUT works, no temp file is created there, and
/// stale-file cleanup does not delete anything there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlinked_internal_directory_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let s = PosixStore::open(&root, PosixOptions { stale_temp_age: Duration::ZERO, ..opts() }).unwrap();
    s.create_bucket("bkt").await.unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("tmp")).unwrap();
    std::fs::write(elsewhere.join("tmp/precious"), b"keep").unwrap();
    let internal = root.join("bkt/.s3hpc");
    std::fs::remove_dir_all(&internal).ok();
    std::os::unix::fs::symlink(&elsewhere, &internal).unwrap();
    put(&s, "k", "data").await.unwrap();
    s.cleanup_stale();
    let names: Vec<_> = std::fs::read_dir(elsewhere.join("tmp")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("precious")]);
}
