//! The listing cache under changes by others. A thread changes the bucket directory with plain
//! `std::fs` (creates, unlinks, renames) while the store deletes its own keys and lists with
//! each key as prefix, as IOR's delete phase does; at every quiescent moment (both stopped at a
//! barrier) each listing through the store must equal a fresh read of the directory. The
//! directory is large enough to be cached, and the test checks that the cache served most
//! listings (else it would prove nothing). Run with the cache kept current by inotify (local
//! file systems) and by stamps alone (the rule for network file systems).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use s3hpc_core::*;
use s3hpc_posix::{Durability, IoMode, PosixOptions, PosixStore};

const KEYS: usize = 600;
const ROUNDS: usize = 25;
const SETTLE: std::time::Duration = std::time::Duration::from_millis(250);

/// The file names of `d` starting with `prefix`, in key order: what a listing must return.
fn fresh(d: &Path, prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| e.file_name().into_string().unwrap())
        .filter(|n| n.starts_with(prefix))
        .collect();
    v.sort();
    v
}

async fn list(s: &PosixStore, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start_after = None;
    loop {
        let req = ListObjectsRequest { prefix: prefix.into(), start_after, max_keys: 250, ..Default::default() };
        let p = s.list_objects("bkt", req).await.unwrap();
        out.extend(p.objects.into_iter().map(|o| o.key));
        if !p.is_truncated {
            return out;
        }
        start_after = out.last().cloned();
    }
}

/// The outside writer's work in round `r`: new files, unlinks of its own older files and of
/// keys the store also has, a rename, all with plain `std::fs`.
fn outside_round(d: &Path, r: usize) {
    for j in 0..40 {
        std::fs::write(d.join(format!("o{r:03}-{j:02}")), b"x").unwrap();
        if r > 0 && j % 2 == 0 {
            let _ = std::fs::remove_file(d.join(format!("o{:03}-{j:02}", r - 1)));
        }
        // Keys 300.. are the outsider's to delete (the store deletes 0..300).
        let _ = std::fs::remove_file(d.join(format!("k{:05}", 300 + r * 12 + j % 12)));
        if j == 20 {
            let _ = std::fs::rename(d.join(format!("o{r:03}-00")), d.join(format!("p{r:03}")));
        }
    }
}

fn run(watch: bool) {
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = dir.path().join("root");
    let o = PosixOptions { durability: Durability::None, io: IoMode::Inline, ..Default::default() };
    let s = PosixStore::open(&root, o).unwrap();
    s.set_listing_watch(watch);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(s.create_bucket("bkt")).unwrap();
    let d = root.join("bkt");
    for i in 0..KEYS {
        std::fs::write(d.join(format!("k{i:05}")), b"x").unwrap();
    }
    if !watch {
        // Stamped lists are cached only once the directory has settled (100 ms on a local file
        // system with fine timestamps, else 2 s).
        std::thread::sleep(SETTLE);
    }
    assert_eq!(rt.block_on(list(&s, "")), fresh(&d, ""));

    let start = Arc::new(Barrier::new(2));
    let stop = Arc::new(Barrier::new(2));
    let outsider = {
        let (d, start, stop) = (d.clone(), start.clone(), stop.clone());
        std::thread::spawn(move || {
            for r in 0..ROUNDS {
                start.wait();
                outside_round(&d, r);
                stop.wait();
            }
        })
    };
    let mut listings = 0u64;
    for r in 0..ROUNDS {
        start.wait();
        rt.block_on(async {
            // IOR's delete phase, concurrent with the outsider: the store's own delete is
            // seen by its next listing at once.
            for i in r * 12..r * 12 + 12 {
                let k = format!("k{i:05}");
                s.delete_object("bkt", &k).await.unwrap();
                assert_eq!(list(&s, &k).await, Vec::<String>::new(), "round {r}: deleted {k} still listed");
                listings += 1;
            }
        });
        stop.wait();
        if !watch && r % 2 == 1 {
            // Let the directory settle now and then, so stamped lists get cached.
            std::thread::sleep(SETTLE);
        }
        // Quiescent: nobody changes the directory now.
        rt.block_on(async {
            for p in ["", "o", &format!("o{r:03}"), "p", "k", &format!("k{:05}", 300 + r * 12)] {
                assert_eq!(list(&s, p).await, fresh(&d, p), "round {r}, prefix {p:?} (watch {watch})");
                listings += 1;
            }
        });
    }
    outsider.join().unwrap();
    let (hits, scans) = s.listing_cache_stats();
    eprintln!("watch {watch}: {listings} listings, {hits} from the cache, {scans} directory reads");
    if watch {
        // Every listing but the first few came from the (event-patched) cache.
        assert!(scans <= 5 && hits >= listings - 5, "cache not used: {hits} hits, {scans} reads, {listings} listings");
    } else {
        assert!(hits > 0, "stamped cache never used");
    }
}

#[test]
fn listings_follow_concurrent_outside_changes_watched() {
    run(true);
}

#[test]
fn listings_follow_concurrent_outside_changes_stamped() {
    run(false);
}
