//! Object ACL records on the posix store: kept with the object's file, found by another store
//! on the same root, reset by an overwrite, kept by a rename, ignored on a copy made by a POSIX
//! tool (another inode), and refused for missing keys.

use s3hpc_core::*;
use s3hpc_posix::{Durability, PosixOptions, PosixStore};

fn open(root: &std::path::Path) -> PosixStore {
    PosixStore::open(root, PosixOptions { durability: Durability::None, ..Default::default() }).unwrap()
}

async fn put(s: &PosixStore, key: &str, data: &[u8]) {
    s.put_object("bkt", key, PutObjectRequest::default(), Body::from(data.to_vec())).await.unwrap();
}

#[tokio::test]
async fn acl_records_live_with_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.create_bucket("bkt").await.unwrap();
    put(&s, "k", b"one").await;
    assert_eq!(s.get_object_acl("bkt", "k").await.unwrap(), None);
    s.put_object_acl("bkt", "k", Some(b"{\"acl\":1}".to_vec())).await.unwrap();
    assert_eq!(s.get_object_acl("bkt", "k").await.unwrap().as_deref(), Some(&b"{\"acl\":1}"[..]));
    // Another store on the root sees it.
    assert_eq!(open(dir.path()).get_object_acl("bkt", "k").await.unwrap().as_deref(), Some(&b"{\"acl\":1}"[..]));

    // A rename carries it (same inode); an overwrite starts without one.
    s.rename_object("bkt", "k", "r", RenameObjectRequest::default()).await.unwrap();
    assert_eq!(s.get_object_acl("bkt", "r").await.unwrap().as_deref(), Some(&b"{\"acl\":1}"[..]));
    put(&s, "r", b"two").await;
    assert_eq!(s.get_object_acl("bkt", "r").await.unwrap(), None);

    // A POSIX copy that preserves xattrs has another inode: its copied record is not believed.
    s.put_object_acl("bkt", "r", Some(b"x".to_vec())).await.unwrap();
    let st = std::process::Command::new("cp")
        .args(["-a", "--preserve=xattr"])
        .arg(dir.path().join("bkt/r"))
        .arg(dir.path().join("bkt/c"))
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(s.get_object_acl("bkt", "c").await.unwrap(), None);

    // Removing it; missing keys.
    s.put_object_acl("bkt", "r", None).await.unwrap();
    assert_eq!(s.get_object_acl("bkt", "r").await.unwrap(), None);
    s.put_object_acl("bkt", "r", None).await.unwrap();
    assert_eq!(s.get_object_acl("bkt", "nope").await.unwrap_err().code, ErrorCode::NoSuchKey);
    assert_eq!(s.put_object_acl("bkt", "nope", Some(b"x".to_vec())).await.unwrap_err().code, ErrorCode::NoSuchKey);
}
