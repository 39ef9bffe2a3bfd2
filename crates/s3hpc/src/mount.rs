//! `s3hpc mount`: a bucket (or a prefix of it) of any S3 store as a directory, through FUSE.
//! The file system is `s3hpc-mount`; this is its command line, the store it talks to (the same
//! targets and credentials as `s3hpc bench`), daemonizing and a clean unmount on a signal.

use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use s3hpc_bench::cli::{parse_duration, parse_size};
use s3hpc_bench::target::{CredentialFlags, TargetOpts};

/// Set in the environment of the background child that `s3hpc mount` starts: the child reports
/// "ready" (or why it failed) on its standard output, which is a pipe to the parent.
const DAEMON_ENV: &str = "S3HPC_MOUNT_DAEMON_CHILD";

#[derive(Args, Debug, Clone)]
pub struct MountArgs {
    /// The bucket to mount.
    pub bucket: String,
    /// The directory to mount it on.
    pub dir: PathBuf,
    /// The store: http(s)://host:port of any S3 endpoint, or unix:///path, tcp://host:port or
    /// tls://host:port for the s3hpc binary protocol (`s3hpc serve --binary ...`).
    #[arg(long, default_value = "http://127.0.0.1:9000")]
    pub endpoint: String,
    /// Mount only the keys under this prefix ("a/b" and "a/b/" are the same).
    #[arg(long, default_value = "")]
    pub prefix: String,
    /// Refuse every change (EROFS).
    #[arg(long)]
    pub read_only: bool,
    /// Let unlink delete objects (and rmdir delete a directory marker object).
    #[arg(long)]
    pub allow_delete: bool,
    /// Let open(O_TRUNC) of an existing file replace its object when the file is closed.
    #[arg(long)]
    pub allow_overwrite: bool,
    /// Where the store has no RenameObject (any store but s3hpc), rename a file by copying the
    /// object and deleting the source: not atomic (both names exist for a moment).
    #[arg(long)]
    pub allow_copy_rename: bool,
    /// Owner of every file and directory (default: the user who mounts).
    #[arg(long)]
    pub uid: Option<u32>,
    /// Group of every file and directory (default: the user's group).
    #[arg(long)]
    pub gid: Option<u32>,
    /// Permission bits of files, octal.
    #[arg(long, default_value = "0644", value_parser = parse_mode)]
    pub file_mode: u16,
    /// Permission bits of directories, octal.
    #[arg(long, default_value = "0755", value_parser = parse_mode)]
    pub dir_mode: u16,
    /// How long lookups, attributes and negative lookups are cached (e.g. 1s, 500ms, 0).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub metadata_ttl: Duration,
    /// FUSE threads reading requests from the kernel (S3 requests run on a separate pool).
    #[arg(long, default_value_t = 4)]
    pub max_threads: usize,
    /// Part size of multipart uploads (every file of more than one part is one multipart
    /// upload; a file can grow to 10,000 parts).
    #[arg(long, default_value = "8MiB", value_parser = parse_size)]
    pub part_size: u64,
    /// Parts (of all files being written) in flight at once; each holds one part in memory.
    #[arg(long, default_value_t = 10)]
    pub max_upload_parts: usize,
    /// Longest name of one path component, in bytes (1..=1024); longer names are refused with
    /// ENAMETOOLONG. Default: asked of the store at mount (255 where it is an s3hpc gateway over
    /// a POSIX file system, which refuses a 256-byte component; 1024, S3's key length,
    /// elsewhere).
    #[arg(long)]
    pub name_max: Option<usize>,
    /// The file system's own semantics where the store is an s3hpc gateway over POSIX (s3hpc's
    /// file-system extension): modes, owners and times are the files' own and chmod, chown,
    /// utimes and truncate change them; symlinks, hard links and mkdir are made there. The
    /// mount fails when the store does not offer the extension. See docs/MOUNT.md.
    #[arg(long)]
    pub posix_attrs: bool,
    /// Where modes, owners and times of files are kept on other stores: `none` (the default:
    /// from the options and the object's Last-Modified), or `s3fs` (in object metadata with the
    /// keys s3fs and rclone use, x-amz-meta-mode/uid/gid/mtime, so those mounts agree; chmod,
    /// chown and utimes rewrite the object's metadata). See docs/MOUNT.md.
    #[arg(long, default_value = "none", value_parser = ["none", "s3fs"])]
    pub metadata: String,
    /// Largest prefetch window of a sequential reader.
    #[arg(long, default_value = "64MiB", value_parser = parse_size)]
    pub read_window: u64,
    /// Stay in the foreground (default: go to the background once the mount is live).
    /// Ctrl-C or SIGTERM unmounts.
    #[arg(short, long)]
    pub foreground: bool,
    /// Mount options: allow_other, allow_root, auto_unmount, ro (comma-separated, repeatable).
    #[arg(short = 'o', value_name = "OPTS")]
    pub options: Vec<String>,
    /// Where a background mount writes its log (default: nowhere). Foreground mounts log to
    /// standard error. RUST_LOG sets the level (default warn).
    #[arg(long)]
    pub log_file: Option<PathBuf>,
    /// Access key (also S3HPC_ACCESS_KEY). Else, as `s3hpc bench`: --profile,
    /// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, the AWS_PROFILE (else default) profile of
    /// ~/.aws/credentials.
    #[arg(long, env = "S3HPC_ACCESS_KEY", hide_env_values = true)]
    pub access_key: Option<String>,
    /// Secret key (also S3HPC_SECRET_KEY).
    #[arg(long, env = "S3HPC_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,
    #[arg(long)]
    pub session_token: Option<String>,
    #[arg(long)]
    pub profile: Option<String>,
    #[arg(long, env = "AWS_REGION", default_value = "us-east-1")]
    pub region: String,
    /// Virtual-hosted-style addressing (bucket.host) instead of path style.
    #[arg(long)]
    pub virtual_host: bool,
    /// PEM file of CA certificates an https:// endpoint may use besides the system's roots.
    #[arg(long, env = "AWS_CA_BUNDLE")]
    pub ca_bundle: Option<PathBuf>,
    /// Do not verify the TLS certificate of an https:// endpoint (testing only).
    #[arg(long)]
    pub insecure: bool,
}

fn parse_mode(s: &str) -> Result<u16, String> {
    let v = u16::from_str_radix(s.trim_start_matches("0o"), 8)
        .map_err(|_| format!("{s:?}: expected octal bits such as 0644"))?;
    if v > 0o7777 {
        return Err(format!("{s:?}: at most 7777"));
    }
    Ok(v)
}

impl MountArgs {
    fn mount_options(&self) -> anyhow::Result<s3hpc_mount::MountOptions> {
        let mut o = s3hpc_mount::MountOptions::new(&self.bucket);
        o.prefix = self.prefix.clone();
        o.read_only = self.read_only;
        o.allow_delete = self.allow_delete;
        o.allow_overwrite = self.allow_overwrite;
        o.allow_copy_rename = self.allow_copy_rename;
        if let Some(u) = self.uid {
            o.uid = u;
        }
        if let Some(g) = self.gid {
            o.gid = g;
        }
        o.file_mode = self.file_mode;
        o.dir_mode = self.dir_mode;
        o.metadata_ttl = self.metadata_ttl;
        o.fuse_threads = self.max_threads;
        o.part_size = self.part_size;
        o.max_upload_parts = self.max_upload_parts;
        o.max_read_window = self.read_window;
        if let Some(n) = self.name_max {
            o.name_max = n;
        }
        o.posix_attrs = self.posix_attrs;
        o.s3fs_metadata = self.metadata == "s3fs";
        if o.s3fs_metadata && o.posix_attrs {
            anyhow::bail!(
                "--metadata s3fs and --posix-attrs exclude each other (the file system keeps the attributes there)"
            );
        }
        for opt in self.options.iter().flat_map(|s| s.split(',')).map(str::trim).filter(|s| !s.is_empty()) {
            match opt {
                "allow_other" => o.allow_other = true,
                "allow_root" => o.allow_root = true,
                "auto_unmount" => o.auto_unmount = true,
                "ro" => o.read_only = true,
                "rw" => {}
                other => anyhow::bail!("-o {other}: unknown mount option (allow_other, allow_root, auto_unmount, ro)"),
            }
        }
        o.validate().map_err(|e| anyhow::anyhow!(e))?;
        Ok(o)
    }

    fn target_opts(&self) -> TargetOpts {
        let credentials = CredentialFlags {
            access_key: self.access_key.clone(),
            secret_key: self.secret_key.clone(),
            session_token: self.session_token.clone(),
            profile: self.profile.clone(),
        }
        .resolve();
        TargetOpts {
            credentials,
            region: self.region.clone(),
            virtual_host: self.virtual_host,
            tls: s3hpc_client::TlsOptions {
                ca_bundle: self.ca_bundle.clone().filter(|p| !p.as_os_str().is_empty()),
                insecure: self.insecure,
            },
            ..Default::default()
        }
    }
}

pub fn run(args: MountArgs) -> anyhow::Result<()> {
    // Check what can be checked before going to the background, so mistakes show at once.
    let opts = args.mount_options()?;
    if !args.dir.is_dir() {
        anyhow::bail!("{}: not a directory", args.dir.display());
    }
    let child = std::env::var_os(DAEMON_ENV).is_some();
    if !args.foreground && !child {
        return daemonize(&args);
    }
    init_logging(&args, child)?;
    match mount_and_wait(&args, opts, child) {
        Ok(()) => Ok(()),
        Err(e) => {
            if child {
                // Tell the waiting parent why.
                let mut out = std::io::stdout();
                let _ = writeln!(out, "error: {e:#}");
                let _ = out.flush();
            }
            Err(e)
        }
    }
}

fn init_logging(args: &MountArgs, child: bool) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let b = tracing_subscriber::fmt().with_env_filter(filter).with_target(false);
    if let Some(path) = &args.log_file {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| anyhow::anyhow!("--log-file {}: {e}", path.display()))?;
        let _ = b.with_ansi(false).with_writer(std::sync::Mutex::new(f)).try_init();
    } else if child {
        let _ = b.with_writer(std::io::sink).try_init();
    } else {
        let _ = b.with_writer(std::io::stderr).try_init();
    }
    Ok(())
}

/// Start this command again in the background (as the mount's own session) and wait until it
/// reports that the mount is live, or why it is not.
fn daemonize(_args: &MountArgs) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe()?;
    let (mut rd, wr) = std::io::pipe()?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(std::env::args_os().skip(1))
        .env(DAEMON_ENV, "1")
        .stdin(std::process::Stdio::null())
        .stdout(wr)
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid is async-signal-safe; the child leaves our session and terminal.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    drop(cmd);
    let mut line = String::new();
    {
        let mut r = std::io::BufReader::new(&mut rd);
        r.read_line(&mut line)?;
        if line.trim() != "ready" {
            let mut rest = String::new();
            let _ = r.read_to_string(&mut rest);
            line.push_str(&rest);
        }
    }
    if line.trim() == "ready" {
        return Ok(());
    }
    let status = child.wait()?;
    let msg = line.trim().trim_start_matches("error: ");
    if msg.is_empty() {
        anyhow::bail!("s3hpc mount: the background process ended ({status}) before the mount was live");
    }
    anyhow::bail!("{msg}")
}

fn mount_and_wait(args: &MountArgs, mut opts: s3hpc_mount::MountOptions, child: bool) -> anyhow::Result<()> {
    crate::serve::limit_malloc_arenas(MOUNT_MALLOC_ARENAS);
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(2, 8);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("s3hpc-mount")
        .enable_all()
        .build()?;
    let store = rt.block_on(async {
        let store = s3hpc_bench::target::open(&args.endpoint, &args.target_opts()).await?;
        store.head_bucket(&args.bucket).await.map_err(|e| {
            anyhow::anyhow!("bucket {:?} at {}: {} ({})", args.bucket, args.endpoint, e.message, e.code.as_str())
        })?;
        if args.name_max.is_none() {
            opts.name_max = s3hpc_mount::probe_name_max(&*store, &args.bucket, &opts.prefix).await;
        }
        if opts.posix_attrs && !s3hpc_mount::probe_posix_attrs(&*store, &args.bucket, &opts.prefix).await {
            anyhow::bail!(
                "--posix-attrs: {} does not offer s3hpc's file-system extension (an s3hpc gateway over POSIX does)",
                args.endpoint
            );
        }
        anyhow::Ok(store)
    })?;
    let session = s3hpc_mount::mount(store, opts, &args.dir, rt.handle().clone())
        .map_err(|e| anyhow::anyhow!("mount on {}: {e}", args.dir.display()))?;
    if child {
        let mut out = std::io::stdout();
        writeln!(out, "ready")?;
        out.flush()?;
        // Nobody reads our standard output any more.
        if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
            use std::os::fd::AsRawFd;
            // SAFETY: dup2 onto our own standard output.
            unsafe { libc::dup2(null.as_raw_fd(), 1) };
        }
    } else {
        eprintln!("s3hpc mount: {} on {} ({}); Ctrl-C unmounts", args.bucket, args.dir.display(), args.endpoint);
    }
    // Until a signal (then unmount) or an external unmount (the session thread ends).
    let signalled = rt.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let mut hup = signal(SignalKind::hangup())?;
        loop {
            tokio::select! {
                _ = term.recv() => return anyhow::Ok(true),
                _ = int.recv() => return anyhow::Ok(true),
                _ = hup.recv() => return anyhow::Ok(true),
                _ = tokio::time::sleep(Duration::from_millis(200)) => {
                    if session.guard.is_finished() {
                        return anyhow::Ok(false);
                    }
                }
            }
        }
    })?;
    let r = if signalled { session.umount_and_join() } else { session.join() };
    // Let uploads of files closed just before the unmount finish their last requests.
    rt.shutdown_timeout(Duration::from_secs(5));
    r.map_err(|e| anyhow::anyhow!("unmount {}: {e}", args.dir.display()))
}

/// The mount's malloc arenas. glibc gives each contending thread its own arena (up to 8 per
/// core), each keeping the part buffers and read windows freed in it: writing 1 GiB over HTTP
/// peaked at 195-233 MiB with 16 arenas, 72-168 MiB with one, for no more CPU (docs/MOUNT.md,
/// "Performance"). Large buffers are few per second, and small allocations come
/// from each thread's cache without the arena lock. An explicit MALLOC_ARENA_MAX wins.
const MOUNT_MALLOC_ARENAS: usize = 1;
