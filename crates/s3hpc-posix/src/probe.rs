//! What the root's file system offers, probed once at start and reported in one log line
//! (`s3hpc serve`): its type and mount options, user xattrs and how large, `O_TMPFILE`,
//! `renameat2(RENAME_NOREPLACE)`, open-file-description locks; and, for file systems whose
//! client caches are not coherent across nodes by default, what DEPLOY.md says to mount with.

use std::os::fd::AsRawFd;

use super::*;

/// The probe's findings.
#[derive(Debug, Clone)]
pub struct RootReport {
    /// The mount's type as the kernel names it (`ext4`, `nfs4`, `fuse.glusterfs`, `lustre`, ...)
    /// and its options, from `/proc/self/mountinfo`.
    pub fs_type: String,
    pub mount_options: String,
    /// The largest `user.*` xattr value that fit (of 255, 4000 and 60000 bytes); `None`: none.
    pub xattr_max: Option<usize>,
    pub o_tmpfile: bool,
    pub rename_noreplace: bool,
    pub ofd_locks: bool,
    /// Several nodes may mount this file system (network, cluster or FUSE).
    pub shared: bool,
    /// What a multi-node deployment should check, if anything (docs/DEPLOY.md).
    pub warning: Option<String>,
}

impl std::fmt::Display for RootReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let yn = |b: bool| if b { "yes" } else { "no" };
        write!(
            f,
            "{} ({}), user xattrs {}, O_TMPFILE {}, RENAME_NOREPLACE {} (else link + unlink), OFD locks {}",
            self.fs_type,
            if self.shared { "shared by nodes" } else { "local" },
            self.xattr_max.map_or("none (sidecar records)".to_string(), |n| format!("up to {n} bytes")),
            yn(self.o_tmpfile),
            yn(self.rename_noreplace),
            yn(self.ofd_locks),
        )
    }
}

/// The mount holding `path`: (type, options) of the longest mount point that prefixes it.
fn mount_of(path: &Path) -> (String, String) {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else { return ("unknown".into(), String::new()) };
    let mut best: Option<(usize, String, String)> = None;
    for line in text.lines() {
        // id parent major:minor root mountpoint options [optional...] - type source superoptions
        let f: Vec<&str> = line.split(' ').collect();
        let Some(dash) = f.iter().position(|x| *x == "-") else { continue };
        if f.len() < dash + 3 || f.len() < 6 {
            continue;
        }
        let mp = f[4].replace("\\040", " ");
        if path.starts_with(&mp) && best.as_ref().is_none_or(|b| mp.len() >= b.0) {
            // FUSE file systems without a subtype show as plain `fuse`: name MooseFS by its
            // source (`mfs#HOST:PORT`, its `#` escaped as `\043` in mountinfo).
            let t = match (f[dash + 1], f[dash + 2]) {
                ("fuse", src) if src.starts_with("mfs#") || src.starts_with("mfs\\043") => "fuse.moosefs".to_string(),
                (t, _) => t.to_string(),
            };
            best = Some((mp.len(), t, format!("{},{}", f[5], f[dash + 3])));
        }
    }
    best.map(|(_, t, o)| (t, o)).unwrap_or(("unknown".into(), String::new()))
}

impl PosixStore {
    /// Probe the root (in the gateway's staging area; nothing is left behind).
    pub fn probe_root(&self) -> RootReport {
        let s = &self.inner;
        let (fs_type, mount_options) = mount_of(&s.root);
        let dir = &*s.state.tmp_fd;
        let name = |w: &str| format!(".probe-{w}.{}", s.temp_name());
        let mut xattr_max = None;
        let a = name("x");
        if let Ok(f) = sys::create_at(dir, &a) {
            for n in [255usize, 4000, 60000] {
                if sys::fset_xattr(&f, &vec![b'x'; n]).is_err() {
                    break;
                }
                xattr_max = Some(n);
            }
            // The whole file, as `sys::lock_until` takes it (rustix has no OFD locks).
            let fl = libc::flock {
                l_type: libc::F_WRLCK as libc::c_short,
                l_whence: libc::SEEK_SET as libc::c_short,
                l_start: 0,
                l_len: 0,
                l_pid: 0,
            };
            // SAFETY: plain fcntl on a descriptor we own, with a pointer to a live flock.
            let ofd_locks = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_SETLK, &fl as *const libc::flock) == 0 };
            let b = name("y");
            let rename_noreplace = match sys::create_at(dir, &b) {
                Ok(_) => {
                    use rustix::fs::{RenameFlags, renameat_with};
                    let r = renameat_with(dir, a.as_str(), dir, b.as_str(), RenameFlags::NOREPLACE);
                    let _ = sys::unlink_at(dir, &b);
                    r == Err(rustix::io::Errno::EXIST)
                }
                Err(_) => false,
            };
            let _ = sys::unlink_at(dir, &a);
            let o_tmpfile = sys::open_at(dir, ".", libc::O_TMPFILE | libc::O_RDWR, 0o600).is_ok();
            let t = fs_type.as_str();
            let shared = t.starts_with("nfs")
                || t.starts_with("fuse")
                || matches!(
                    t,
                    "lustre" | "gpfs" | "ceph" | "beegfs" | "cifs" | "smb3" | "glusterfs" | "ocfs2" | "gfs2"
                );
            let opts = mount_options.split(',').collect::<Vec<_>>();
            let warning = if t.starts_with("nfs") && !opts.iter().any(|o| *o == "noac" || o.starts_with("actimeo=0")) {
                Some(
                    "NFS with attribute caching: another node's change may be seen late; for several gateways \
                     mount with actimeo=0 (or noac) and lookupcache=positive (docs/DEPLOY.md)"
                        .to_string(),
                )
            } else if t == "fuse.glusterfs" {
                Some(
                    "GlusterFS over FUSE: the client caches are per node; for several gateways turn off \
                     md-cache, quick-read, io-cache, open-behind, write-behind, readdir-ahead and nl-cache and mount \
                     with attribute-timeout=0,entry-timeout=0,negative-timeout=0 (docs/DEPLOY.md)"
                        .to_string(),
                )
            } else if t == "fuse.moosefs" {
                Some(
                    "MooseFS: mfsmount caches attributes, directory entries and xattrs per node (xattrs 30 s by \
                     default); for several gateways mount with mfsattrcacheto=0, mfsentrycacheto=0, \
                     mfsdirentrycacheto=0, mfsnegentrycacheto=0, mfsxattrcacheto=0 (docs/DEPLOY.md)"
                        .to_string(),
                )
            } else if t == "lustre" && !opts.contains(&"flock") {
                Some("Lustre without -o flock: locks are node-local; mount with -o flock (docs/DEPLOY.md)".to_string())
            } else {
                None
            };
            return RootReport {
                fs_type,
                mount_options,
                xattr_max,
                o_tmpfile,
                rename_noreplace,
                ofd_locks,
                shared,
                warning,
            };
        }
        RootReport {
            fs_type,
            mount_options,
            xattr_max,
            o_tmpfile: false,
            rename_noreplace: false,
            ofd_locks: false,
            shared: false,
            warning: Some("the staging area could not be written to probe the root".into()),
        }
    }
}
