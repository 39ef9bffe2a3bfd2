//! `Store::fs` on the posix backend (s3hpc's file-system extension, `attrs`): the conformance
//! case, the containment rules (no symlink is ever followed, whoever made it), what is refused
//! without `--identity posix`, and the kernel deciding with it (root only: real users).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Command;
use std::sync::Arc;

use bytes::Bytes;
use s3hpc_core::fsattr::{FsKind, FsOp, SetFsAttr, errno_of};
use s3hpc_core::identity::{Identity, scope};
use s3hpc_core::*;
use s3hpc_posix::{Durability, PosixOptions, PosixStore};

fn set(f: impl FnOnce(&mut SetFsAttr)) -> FsOp {
    let mut a = SetFsAttr::default();
    f(&mut a);
    FsOp::SetAttr(a)
}

fn errno<T: std::fmt::Debug>(r: Result<T>) -> Option<i32> {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => errno_of(&e).or_else(|| panic!("no errno in {e}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_attributes_conformance() {
    let dir = tempfile::tempdir().unwrap();
    let s = PosixStore::open(dir.path(), PosixOptions { durability: Durability::None, ..Default::default() }).unwrap();
    let s: DynStore = Arc::new(s);
    assert!(!s3hpc_conformance::lacks_fs(&s).await);
    s3hpc_conformance::run_selected(s, s3hpc_conformance::Caps::default(), |n| n == "fs_attributes").await;
}

#[tokio::test]
async fn symlinks_are_never_followed_and_gateway_rights_are_not_lent() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let s = PosixStore::open(&root, PosixOptions { durability: Durability::None, ..Default::default() }).unwrap();
    s.create_bucket("bkt").await.unwrap();
    s.put_object("bkt", "d/f", PutObjectRequest::default(), Body::from(Bytes::from_static(b"data"))).await.unwrap();
    // Outside the root: a file and a directory that POSIX users' symlinks in the bucket point to.
    let outside = dir.path().join("outside");
    std::fs::write(&outside, b"secret").unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o600)).unwrap();
    let outdir = dir.path().join("outdir");
    std::fs::create_dir(&outdir).unwrap();
    std::fs::write(outdir.join("g"), b"other").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("bkt/d/evil")).unwrap();
    std::os::unix::fs::symlink(&outdir, root.join("bkt/d/evildir")).unwrap();

    // The symlink itself is what the call sees and acts on.
    let a = s.fs("bkt", "d/evil", FsOp::GetAttr).await.unwrap();
    assert_eq!((a.kind, a.target.as_deref()), (FsKind::Symlink, Some(outside.to_str().unwrap())));
    assert_eq!(errno(s.fs("bkt", "d/evil", set(|a| a.mode = Some(0o666))).await), Some(libc::EOPNOTSUPP));
    assert_eq!(errno(s.fs("bkt", "d/evil", set(|a| a.size = Some(0))).await), Some(libc::ELOOP));
    let t = s3hpc_core::fsattr::SetTime::At(s3hpc_core::fsattr::FsTime { sec: 1000, nsec: 0 });
    s.fs("bkt", "d/evil", set(|a| a.mtime = Some(t))).await.unwrap();
    // Nothing through a symlinked directory.
    for op in [FsOp::GetAttr, set(|a| a.mode = Some(0o777)), set(|a| a.size = Some(0)), FsOp::Link("d/f".into())] {
        assert_eq!(errno(s.fs("bkt", "d/evildir/g", op).await), Some(libc::ELOOP));
    }
    assert_eq!(errno(s.fs("bkt", "d/x", FsOp::Link("d/evildir/g".into())).await), Some(libc::ELOOP));
    // A hard link of the symlink is a second symlink, not a link to what it points to.
    assert_eq!(s.fs("bkt", "d/evil2", FsOp::Link("d/evil".into())).await.unwrap().kind, FsKind::Symlink);
    let m = std::fs::metadata(&outside).unwrap();
    assert_eq!((m.mode() & 0o7777, m.len(), m.nlink()), (0o600, 6, 1), "the outside file was touched");
    assert_ne!(std::fs::metadata(&outside).unwrap().mtime(), 1000, "the outside file's time was set");
    assert_eq!(std::fs::read(outdir.join("g")).unwrap(), b"other");
    // Keys that leave the bucket or name the internal directory are refused before any call.
    for k in ["../x", "d/../../x", ".s3hpc/x", "/etc"] {
        assert_eq!(errno(s.fs("bkt", k, FsOp::GetAttr).await), Some(libc::EINVAL), "{k}");
    }
    assert_eq!(s.fs("nobucket", "x", FsOp::GetAttr).await.unwrap_err().code, ErrorCode::NoSuchBucket);

    // Without --identity posix the gateway would lend its own rights: no new owners, no set-id
    // bits, no symlinks.
    let f = s.fs("bkt", "d/f", FsOp::GetAttr).await.unwrap();
    assert_eq!(errno(s.fs("bkt", "d/f", set(|a| a.uid = Some(f.uid + 1))).await), Some(libc::EPERM));
    assert_eq!(errno(s.fs("bkt", "d/f", set(|a| a.gid = Some(f.gid + 1))).await), Some(libc::EPERM));
    assert_eq!(errno(s.fs("bkt", "d/f", set(|a| a.mode = Some(0o4755))).await), Some(libc::EPERM));
    assert_eq!(errno(s.fs("bkt", "d/s", FsOp::Symlink("f".into())).await), Some(libc::EPERM));
    assert!(std::fs::symlink_metadata(root.join("bkt/d/s")).is_err());
    let fifo = FsOp::Mknod { kind: FsKind::Fifo, mode: 0o600, rdev: 0, owner: None };
    assert_eq!(errno(s.fs("bkt", "d/p", fifo).await), Some(libc::EPERM));
    let dev = FsOp::Mknod { kind: FsKind::BlockDevice, mode: 0o600, rdev: 0x801, owner: None };
    assert_eq!(errno(s.fs("bkt", "d/sda1", dev).await), Some(libc::EPERM));
    assert_eq!(s.fs("bkt", "d/f", set(|a| a.mode = Some(0o750))).await.unwrap().mode, 0o750);
}

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

#[tokio::test]
async fn the_kernel_decides_under_identity_posix() {
    // SAFETY: a plain getter.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to act as other users");
        return;
    }
    let a = user("s3hpc-ta");
    let b = user("s3hpc-tb");
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = dir.path().join("root");
    let o = PosixOptions { durability: Durability::None, posix_identity: true, umask: 0o022, ..Default::default() };
    let s = PosixStore::open(&root, o).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let rootid = Identity { uid: 0, gid: 0, groups: vec![0] };
    let as_ = |id: &Identity, k: &'static str, op: FsOp| scope(Some(id.clone()), s.fs("fsb", k, op));

    scope(Some(a.clone()), s.create_bucket("fsb")).await.unwrap();
    let put = s.put_object("fsb", "f", PutObjectRequest::default(), Body::from(Bytes::from_static(b"x")));
    scope(Some(a.clone()), put).await.unwrap();
    // A owns f: chmod and times are A's to change, and set-id bits too (the kernel allows them).
    assert_eq!(as_(&a, "f", set(|x| x.mode = Some(0o4700))).await.unwrap().mode, 0o4700);
    // B may not chmod A's file, nor may A give it away: the kernel says EPERM.
    assert_eq!(errno(as_(&b, "f", set(|x| x.mode = Some(0o777))).await), Some(libc::EPERM));
    assert_eq!(errno(as_(&a, "f", set(|x| x.uid = Some(b.uid))).await), Some(libc::EPERM));
    // B may not even look into A's 0700 bucket... unless the mode lets it: here it is 0755 (umask 022).
    assert_eq!(as_(&b, "f", FsOp::GetAttr).await.unwrap().uid, a.uid);
    // Symlinks are made, as A, and belong to A.
    let l = as_(&a, "l", FsOp::Symlink("/etc/passwd".into())).await.unwrap();
    assert_eq!((l.kind, l.uid), (FsKind::Symlink, a.uid));
    assert_eq!(std::fs::read_link(root.join("fsb/l")).unwrap().to_str(), Some("/etc/passwd"));
    // B cannot make one in A's bucket (no write permission on the directory).
    assert_eq!(errno(as_(&b, "m", FsOp::Symlink("x".into())).await), Some(libc::EACCES));
    // Special files: a FIFO as A; a device needs CAP_MKNOD, which A's identity does not have.
    let p = as_(&a, "p", FsOp::Mknod { kind: FsKind::Fifo, mode: 0o640, rdev: 0, owner: None }).await.unwrap();
    assert_eq!((p.kind, p.mode, p.uid), (FsKind::Fifo, 0o640, a.uid));
    let dev = FsOp::Mknod { kind: FsKind::CharDevice, mode: 0o600, rdev: 0x103, owner: None };
    assert_eq!(errno(as_(&a, "null2", dev).await), Some(libc::EPERM));
    // An account mapped to root may give files away, as root may.
    let c = as_(&rootid, "f", set(|x| (x.uid, x.gid) = (Some(b.uid), Some(b.gid)))).await.unwrap();
    assert_eq!((c.uid, c.gid), (b.uid, b.gid));
    assert_eq!(std::fs::metadata(root.join("fsb/f")).unwrap().uid(), b.uid);
}
