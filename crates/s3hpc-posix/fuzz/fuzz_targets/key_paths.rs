//! Path safety of the posix store under arbitrary keys: every mutating operation (PUT of a file
//! or a directory key, DELETE, tag change, copy) with a fuzzed key, optionally behind one of the
//! symlinks POSIX users may plant in a bucket (an absolute and a relative one leading out of the
//! root, one staying inside). After each operation nothing outside the root may have changed,
//! and the store must not panic.
#![no_main]

use std::fs;
use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use s3hpc_core::{Body, CopyObjectRequest, GetObjectRequest, PutObjectRequest, Store};
use s3hpc_posix::{Durability, PosixOptions, PosixStore};

struct World {
    base: PathBuf,
    store: PosixStore,
    rt: tokio::runtime::Runtime,
}

thread_local! {
    static WORLD: World = {
        let base = std::env::temp_dir().join(format!("s3hpc-fuzz-keys-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(base.join("outside/deeper")).unwrap();
        fs::write(base.join("outside/secret"), b"secret").unwrap();
        fs::write(base.join("outside/deeper/file"), b"deeper").unwrap();
        let store = PosixStore::open(base.join("root"), PosixOptions { durability: Durability::None, ..Default::default() })
            .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(store.create_bucket("bkt")).unwrap();
        World { base, store, rt }
    };
}

/// Everything under `p`: relative paths, with file contents and the names of extended
/// attributes (a tag change would add one).
fn snapshot(p: &Path) -> Vec<(PathBuf, Vec<u8>, Vec<u8>)> {
    fn walk(base: &Path, p: &Path, out: &mut Vec<(PathBuf, Vec<u8>, Vec<u8>)>) {
        let mut entries: Vec<_> = fs::read_dir(p).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for e in entries {
            let md = fs::symlink_metadata(&e).unwrap();
            let rel = e.strip_prefix(base).unwrap().to_path_buf();
            let xattrs = xattr_names(&e);
            if md.is_dir() {
                out.push((rel, Vec::new(), xattrs));
                walk(base, &e, out);
            } else {
                out.push((rel, fs::read(&e).unwrap_or_default(), xattrs));
            }
        }
    }
    let mut out = Vec::new();
    walk(p, p, &mut out);
    out
}

fn xattr_names(p: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    let mut buf = vec![0u8; 4096];
    // SAFETY: NUL-terminated path, buffer and its length.
    let n = unsafe { libc_listxattr(c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(n.max(0) as usize);
    buf
}

unsafe extern "C" {
    #[link_name = "llistxattr"]
    fn libc_listxattr(path: *const std::ffi::c_char, list: *mut std::ffi::c_char, size: usize) -> isize;
}

/// The symlinks a POSIX user planted, re-created when an operation replaced or removed them.
fn plant(bdir: &Path, base: &Path) {
    let links: [(&str, PathBuf); 4] = [
        ("dirlink", base.join("outside")),
        ("rellink", PathBuf::from("../../outside")),
        ("filelink", base.join("outside/secret")),
        ("alias", PathBuf::from("inside")),
    ];
    let _ = fs::create_dir_all(bdir.join("inside"));
    for (name, target) in links {
        let p = bdir.join(name);
        if fs::symlink_metadata(&p).map(|m| !m.file_type().is_symlink()).unwrap_or(true) {
            let _ = fs::remove_dir_all(&p);
            let _ = fs::remove_file(&p);
            let _ = std::os::unix::fs::symlink(&target, &p);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    WORLD.with(|w| {
        let outside = w.base.join("outside");
        let before = snapshot(&outside);
        plant(&w.base.join("root/bkt"), &w.base);
        let mut rest = data;
        while rest.len() >= 2 {
            let (op, len) = (rest[0], rest[1] as usize);
            rest = &rest[2..];
            let raw = &rest[..len.min(rest.len())];
            rest = &rest[raw.len()..];
            let prefix = ["", "dirlink/", "rellink/", "filelink/", "alias/", "inside/", "dirlink/deeper/", ""]
                [(op >> 3) as usize % 8];
            let key = format!("{prefix}{}", String::from_utf8_lossy(raw));
            let s = &w.store;
            w.rt.block_on(async {
                let _ = match op % 6 {
                    0 => s.put_object("bkt", &key, PutObjectRequest::default(), Body::from("fuzz")).await.map(drop),
                    1 => s
                        .put_object("bkt", &format!("{key}/"), PutObjectRequest::default(), Body::Empty)
                        .await
                        .map(drop),
                    2 => s.delete_object("bkt", &key).await,
                    3 => s.put_object_tagging("bkt", &key, None, vec![("t".into(), "v".into())]).await.map(drop),
                    4 => {
                        let _ = s.put_object("bkt", "src", PutObjectRequest::default(), Body::from("src")).await;
                        s.copy_object("bkt", "src", "bkt", &key, CopyObjectRequest::default()).await.map(drop)
                    }
                    _ => match s.get_object("bkt", &key, GetObjectRequest::default()).await {
                        Ok(o) => {
                            let b = o.body.collect().await.unwrap_or_default();
                            assert!(&b[..] != b"secret" && &b[..] != b"deeper", "{key:?} read a file outside the root");
                            Ok(())
                        }
                        Err(e) => Err(e),
                    },
                };
            });
            assert_eq!(before, snapshot(&outside), "key {key:?} (op {}) changed something outside the root", op % 6);
        }
    })
});
