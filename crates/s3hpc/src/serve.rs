//! `s3hpc serve`: the S3 HTTP gateway over a directory (or the memory / noop backends).

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use s3hpc_core::identity::Identity;
use s3hpc_core::{CredentialSet, Credentials, DynStore, EtagMode};
use s3hpc_http::tls::TlsFiles;

#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Directory holding the buckets (posix backend); also where generated credentials are kept.
    #[arg(default_value = "./data")]
    pub root: PathBuf,
    /// Address to listen on; port 0 picks a free port (the bound address is printed).
    #[arg(long, default_value = "127.0.0.1:9000")]
    pub listen: String,
    /// Storage backend.
    #[arg(long, default_value = "posix", value_parser = ["posix", "memory", "noop"])]
    pub backend: String,
    /// posix backend durability: strict (fsync file and directory), relaxed (fdatasync), none.
    #[arg(long, default_value = "relaxed")]
    pub durability: String,
    /// ETag of single PUTs: md5 (as AWS) or fast (a random version tag per write, opaque to clients).
    #[arg(long, default_value = "md5")]
    pub etag: String,
    /// Checksum the gateway computes for new objects uploaded without one: crc64nvme (as AWS:
    /// returned as x-amz-checksum-crc64nvme, FULL_OBJECT) or none.
    #[arg(long, default_value = "crc64nvme", value_parser = ["crc64nvme", "none"])]
    pub default_checksum: String,
    /// Object Ownership of buckets created without `x-amz-object-ownership`:
    /// BucketOwnerEnforced (ACLs disabled, AWS's default since 2023), BucketOwnerPreferred or
    /// ObjectWriter (ACLs enabled, as buckets were before; for tools that set ACLs).
    #[arg(long, default_value = "BucketOwnerEnforced",
          value_parser = ["BucketOwnerEnforced", "BucketOwnerPreferred", "ObjectWriter"])]
    pub default_object_ownership: String,
    /// posix backend file-system calls: offload (Tokio's blocking pool: a thread hand-off each
    /// way) or inplace (on the request's thread, its worker's other requests moved away first:
    /// lower latency with few requests in flight, more CPU per request when busy).
    #[arg(long, default_value = "offload")]
    pub io: String,
    /// Access key of a user (with --secret-key).
    #[arg(long, env = "S3HPC_ACCESS_KEY")]
    pub access_key: Option<String>,
    /// Secret key of that user.
    #[arg(long, env = "S3HPC_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,
    /// TOML file with users: `[[users]]` tables with `access_key` and `secret_key`.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Whose identity file-system calls run with: `gateway` (the gateway's own user) or `posix`
    /// (each request as its account's POSIX user, with `uid`/`gid`/`groups` or `user` in the
    /// --config users file; needs CAP_SETUID and CAP_SETGID and a kernel with openat2).
    #[arg(long, default_value = "gateway", value_parser = ["gateway", "posix"])]
    pub identity: String,
    /// With `--identity posix`: the umask new files and directories get (octal). The default
    /// keeps what S3 calls private private on the file system too; share through POSIX groups and
    /// default ACLs (docs/SECURITY.md, "Threat model").
    #[arg(long, default_value = "077")]
    pub umask: String,
    /// How conditional writes, versioned writes, completes and renames exclude each other across
    /// gateways on the root: `fcntl` (POSIX byte-range locks, cluster-wide on NFS, GPFS, Lustre
    /// with -o flock, BeeGFS, CephFS, GlusterFS), `flock`, `local` (one gateway only) or `none`
    /// (those writes answer NotImplemented). See docs/DEPLOY.md.
    #[arg(long, default_value = "fcntl", value_parser = ["fcntl", "flock", "local", "none"])]
    pub lock_mode: String,
    /// Longest wait for such a lock, in seconds; past it the request answers 503 SlowDown.
    #[arg(long, default_value_t = 10.0)]
    pub lock_timeout: f64,
    /// On a root shared by nodes (network and parallel file systems, which raise no local
    /// event for other nodes' changes): how long, in seconds, a listing of a large directory
    /// may be served from this gateway's copy with its own changes applied before the directory
    /// is read again, so other nodes' changes show in listings at most this late. 0: read
    /// again after every change (exact, O(N) per change). Local roots are exact either way.
    #[arg(long, default_value_t = 1.0)]
    pub listing_staleness: f64,
    /// Base domain for virtual-host-style requests (BUCKET.DOMAIN); path style always works.
    #[arg(long)]
    pub domain: Option<String>,
    /// Serve static websites as AWS's S3 website endpoints do: a GET or HEAD whose Host is
    /// BUCKET.DOMAIN (any port) reads BUCKET by its website configuration (PutBucketWebsite):
    /// index and error documents, redirects, routing rules, HTML error pages. Requests are
    /// anonymous and judged as unsigned REST GETs (bucket policy, ACLs): only what anonymous
    /// users may read is served. Repeatable or comma-separated; off by default (no website
    /// requests). See docs/SEMANTICS.md, "Website endpoint".
    #[arg(long = "website-domain", value_name = "DOMAIN", value_delimiter = ',')]
    pub website_domain: Vec<String>,
    /// The gateway's region: reported to clients (GetBucketLocation, HeadBucket), and the one
    /// SigV4 credential scopes must name (others are refused, as AWS does, naming this one).
    #[arg(long, default_value = "us-east-1")]
    pub region: String,
    /// Refuse Signature Version 2 (`Authorization: AWS ...`, presigned URLs with
    /// `AWSAccessKeyId`/`Signature`/`Expires`, SigV2 POST policies), as AWS does today: 400
    /// InvalidRequest "Please use AWS4-HMAC-SHA256". By default they are accepted, as MinIO and
    /// Ceph RGW accept them (awscli v1 `aws s3 presign`, boto3 `signature_version='s3'`, s3cmd).
    #[arg(long)]
    pub no_sigv2: bool,
    /// Log one line per request (tracing target s3hpc::access).
    #[arg(long)]
    pub access_log: bool,
    /// Seconds a connection may wait for a request head: an idle keep-alive connection (or one
    /// that sent only part of a head) is closed after this long. Shorter frees sockets of idle
    /// clients sooner; longer keeps slow clients' connections.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub idle_timeout: f64,
    /// Async worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Large uploads streamed at once (more wait, their bytes held back by TCP). Each costs about
    /// 2 MiB while it streams; default one per worker thread, at least 16.
    #[arg(long)]
    pub max_uploads: Option<usize>,
    /// Keep the heap memory freed after a busy spell. By default the gateway hands it back to
    /// the system once it is idle (`malloc_trim` after a second with under 2% of a core busy),
    /// so the RSS falls back after a burst of uploads instead of staying near its peak.
    #[arg(long)]
    pub no_idle_trim: bool,
    /// A CompleteMultipartUpload running longer than this (milliseconds) answers 200 at once and
    /// sends whitespace until its result or error document follows (as AWS does).
    #[arg(long, default_value_t = 1000, hide = true)]
    pub complete_keepalive_ms: u64,
    /// Object size the noop backend serves on GET.
    #[arg(long, default_value_t = 0)]
    pub noop_object_size: usize,
    /// Also serve the node-local binary protocol here (repeatable): `unix:///run/s3hpc.sock`,
    /// `tcp://127.0.0.1:PORT` (port 0 picks one; the bound URL is printed), or `tls://HOST:PORT`
    /// (TCP with TLS, the certificate of --tls-cert/--tls-key). See docs/PROTOCOL.md.
    #[arg(long = "binary", value_name = "URL")]
    pub binary: Vec<String>,
    /// On binary-protocol Unix sockets, peers running as this uid (kernel peer credentials) may
    /// authenticate with their access key alone, without proving the secret (repeatable).
    #[arg(long = "binary-trusted-uid", value_name = "UID")]
    pub binary_trusted_uid: Vec<u32>,
    /// Binary-protocol connections served each on a thread of its own (lowest latency: no
    /// hand-off between threads per request); connections beyond this share the server's
    /// runtime. 0: all share it.
    #[arg(long = "binary-threads", value_name = "N", default_value_t = s3hpc_wire::server::DEDICATED_THREADS)]
    pub binary_threads: usize,
    /// Seconds between lifecycle runs of each bucket (across every gateway on the root; the
    /// first pass runs at start). 0: this gateway runs no lifecycle rules.
    #[arg(long, value_name = "SECS", default_value_t = 3600)]
    pub lifecycle_interval: u64,
    /// Store calls per second at most of the lifecycle runner (listing pages, deletes, aborts).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub lifecycle_ops: u32,
    /// Serve the web console (docs/CONSOLE.md) on this address (`HOST:PORT`; port 0 picks one,
    /// the bound URL is printed): log in with an access key and secret, browse, upload, share,
    /// bucket settings. Over HTTPS with --tls-cert/--tls-key.
    #[arg(long, value_name = "ADDR")]
    pub console_listen: Option<String>,
    /// Base URL of the S3 endpoint the console's share links (presigned URLs) point to, as
    /// users reach it (`https://s3.example.org`). Default: the host name the console was
    /// reached by, with the port of --listen.
    #[arg(long, value_name = "URL")]
    pub console_s3_url: Option<String>,
    /// Self-service access keys: on the binary protocol's Unix sockets (`--binary unix://`) any
    /// local user may create, list and revoke keys of their own (`s3hpc credentials`), the
    /// kernel naming the caller (SO_PEERCRED). Posix backend only. See docs/CREDENTIALS.md.
    #[arg(long)]
    pub user_keys: bool,
    /// uid that lists and revokes every user's keys (repeatable; root and the users file's
    /// administrators always may).
    #[arg(long = "user-keys-admin", value_name = "UID")]
    pub user_keys_admin: Vec<u32>,
    /// Lifetime of a key created without `--expires` (`30d`, `12h`, `90m`, `45s`).
    #[arg(long, value_name = "DURATION", default_value = "30d")]
    pub user_keys_lifetime: String,
    /// Longest lifetime a key may be given.
    #[arg(long, value_name = "DURATION", default_value = "365d")]
    pub user_keys_max_lifetime: String,
    /// Most live keys one user may hold.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub user_keys_max: usize,
    /// Shortest DurationSeconds STS GetSessionToken accepts (AWS: 900; lower only for tests).
    #[arg(long, value_name = "SECS", default_value_t = 900, hide = true)]
    pub sts_min_duration: u64,
    /// Serve only the binary protocol (with --binary), no HTTP.
    #[arg(long, requires = "binary")]
    pub no_http: bool,
    #[command(flatten)]
    pub ops: crate::admin::OpsArgs,
}

#[derive(serde::Deserialize, serde::Serialize, Default)]
pub(crate) struct UsersFile {
    #[serde(default)]
    pub(crate) users: Vec<User>,
    /// `serve` settings (crate::config), kept as they are when the users are rewritten.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) serve: Option<toml::Table>,
    /// Roles for STS AssumeRole (`[[roles]]`), kept as they are when the users are rewritten.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) roles: Vec<RoleEntry>,
}

/// One `[[roles]]` entry (docs/CREDENTIALS.md, "Roles").
#[derive(serde::Deserialize, serde::Serialize, Default, Clone)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RoleEntry {
    pub(crate) name: String,
    /// The access key of the `[[users]]` account the role's sessions act as.
    pub(crate) account: String,
    /// Who may assume it: canonical account ids (self-service keys: the login), access keys, `*`.
    pub(crate) trusted: Vec<String>,
    /// Longest session in seconds (default 3600, at most 43200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_session_duration: Option<u64>,
}

/// The roles of the users file, checked: names as IAM's (`[\w+=,.@-]`, 1 to 64), each acting
/// as an account the file lists, trusted by someone.
pub(crate) fn read_roles(path: &Path) -> anyhow::Result<Vec<s3hpc_http::roles::Role>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let f: UsersFile = toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let mut out: Vec<s3hpc_http::roles::Role> = Vec::new();
    for r in f.roles {
        let what = || format!("{}: role {:?}", path.display(), r.name);
        if r.name.is_empty()
            || r.name.len() > 64
            || !r.name.chars().all(|c| c.is_ascii_alphanumeric() || "_+=,.@-".contains(c))
        {
            bail!("{}: a role name is 1 to 64 letters, digits and _+=,.@-", what());
        }
        if out.iter().any(|o| o.name == r.name) {
            bail!("{}: named twice", what());
        }
        if !f.users.iter().any(|u| u.access_key == r.account && u.disabled != Some(true)) {
            bail!("{}: `account` {} is not an (enabled) access key of [[users]]", what(), r.account);
        }
        if r.trusted.is_empty() {
            bail!("{}: `trusted` is empty: nobody could assume it", what());
        }
        let max = r.max_session_duration.unwrap_or(3600);
        if !(900..=43_200).contains(&max) {
            bail!("{}: max-session-duration must be 900 to 43200 seconds", what());
        }
        out.push(s3hpc_http::roles::Role {
            name: r.name.clone(),
            account: r.account.clone(),
            trusted: r.trusted.clone(),
            max_session: Duration::from_secs(max),
        });
    }
    Ok(out)
}

/// One `[[users]]` entry. Unknown fields are refused (toml names the line).
#[derive(serde::Deserialize, serde::Serialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct User {
    pub(crate) access_key: String,
    pub(crate) secret_key: String,
    /// POSIX identity: `uid` + `gid` (+ `groups`), or `user` (a login resolved through NSS:
    /// getpwnam + getgrouplist, so LDAP/SSSD accounts work).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) uid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) gid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) groups: Option<Vec<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) user: Option<String>,
    /// Administrator (sees and manages every bucket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) admin: Option<bool>,
    /// Canonical user id shown as Owner (default: the access key), and a display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    /// Disabled by an administrator (`s3hpc user disable`): kept in the file, not loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) disabled: Option<bool>,
}

/// An account from the users file: its key pair and the POSIX identity it acts as, if any.
struct Account {
    creds: Credentials,
    identity: Option<Identity>,
    /// The S3 account (owner id, name, admin).
    account: s3hpc_core::caller::Account,
}

fn read_users(path: &Path) -> anyhow::Result<Vec<Account>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let f: UsersFile = toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let mut out = Vec::new();
    for (i, u) in f.users.into_iter().enumerate() {
        if u.disabled == Some(true) {
            continue;
        }
        let what = || format!("{}: user {} ({})", path.display(), i + 1, u.access_key);
        let identity = posix_identity(&u).with_context(what)?;
        let id = u.id.clone().unwrap_or_else(|| u.access_key.clone());
        if id.is_empty() || id.contains(':') {
            return Err(anyhow::anyhow!("`id` must be non-empty and may not contain ':'")).with_context(what);
        }
        let account = s3hpc_core::caller::Account {
            id,
            name: u.name.clone(),
            admin: u.admin.unwrap_or(false),
            uid: identity.as_ref().map(|i| i.uid),
        };
        out.push(Account { creds: Credentials::new(u.access_key, u.secret_key), identity, account });
    }
    Ok(out)
}

/// The POSIX identity a users-file entry names, if any.
pub(crate) fn posix_identity(u: &User) -> anyhow::Result<Option<Identity>> {
    match (&u.user, u.uid, u.gid) {
        (None, None, None) => {
            if u.groups.is_some() {
                bail!("`groups` needs `uid` and `gid` (or `user`)");
            }
            Ok(None)
        }
        (Some(login), None, None) => {
            let (uid, gid, groups) = lookup_login(login)?;
            Ok(Some(Identity { uid, gid, groups: u.groups.clone().unwrap_or(groups) }))
        }
        (None, Some(uid), Some(gid)) => Ok(Some(Identity { uid, gid, groups: u.groups.clone().unwrap_or_default() })),
        (Some(_), _, _) => bail!("give either `user` or `uid` + `gid`, not both"),
        (None, _, _) => bail!("`uid` and `gid` go together"),
    }
}

/// uid, gid and groups of a login through NSS (getpwnam_r + getgrouplist).
pub(crate) fn lookup_login(login: &str) -> anyhow::Result<(u32, u32, Vec<u32>)> {
    let name = std::ffi::CString::new(login).context("a login name with a NUL byte")?;
    // SAFETY: all-zero is a valid passwd; the buffer outlives the call and the returned
    // pointers are read only while it lives.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16384];
    let mut res: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: `name` is NUL-terminated; `pw`, `buf` (of `buf.len()` bytes) and `res` are live locals.
    let rc = unsafe { libc::getpwnam_r(name.as_ptr(), &mut pw, buf.as_mut_ptr(), buf.len(), &mut res) };
    if rc != 0 || res.is_null() {
        bail!("no such user `{login}` (getpwnam)");
    }
    let (uid, gid) = (pw.pw_uid, pw.pw_gid);
    let mut n: libc::c_int = 64;
    loop {
        let mut groups = vec![0 as libc::gid_t; n as usize];
        // SAFETY: `groups` holds `n` entries; getgrouplist writes at most that many and sets n.
        let rc = unsafe { libc::getgrouplist(name.as_ptr(), gid, groups.as_mut_ptr(), &mut n) };
        if rc >= 0 {
            groups.truncate(n as usize);
            return Ok((uid, gid, groups));
        }
        if n as usize <= groups.len() {
            n = n.saturating_mul(2);
        }
    }
}

/// Store a generated key create-only: the file is written under a unique temp name and linked
/// into place, so gateways starting together on one root agree on one key. Returns false when
/// another process stored its key first (the caller then reads that one).
fn write_credentials(path: &Path, c: &Credentials) -> anyhow::Result<bool> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().expect("credentials path has a parent");
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let text = toml::to_string(&UsersFile {
        users: vec![User { access_key: c.access_key.clone(), secret_key: c.secret_key.clone(), ..Default::default() }],
        ..Default::default()
    })?;
    let tmp = dir.join(format!(".credentials.{}.{}.tmp", std::process::id(), Credentials::generate().access_key));
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
    let written = f
        .write_all(format!("# s3hpc credentials (generated); keep this file private\n{text}").as_bytes())
        .and_then(|_| f.sync_all())
        .and_then(|_| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    match written {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Users from flags/env and the config file; without any, the stored (or a newly generated)
/// root key under `<root>/.s3hpc/credentials.toml`. Returns the set and, when a key was just
/// generated, that key (to print).
pub(crate) fn credentials(args: &ServeArgs) -> anyhow::Result<(CredentialSet, Option<Credentials>, Vec<String>)> {
    let mut set = CredentialSet::default();
    let mut keys = Vec::new();
    let nonempty = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
    match (nonempty(&args.access_key), nonempty(&args.secret_key)) {
        (Some(a), Some(s)) => {
            keys.push(a.clone());
            set.insert(Credentials::new(a, s));
        }
        (None, None) => {}
        _ => bail!("--access-key and --secret-key (S3HPC_ACCESS_KEY / S3HPC_SECRET_KEY) go together"),
    }
    if let Some(cfg) = &args.config {
        for a in read_users(cfg)? {
            keys.push(a.creds.access_key.clone());
            if let Some(id) = a.identity {
                set.set_identity(&a.creds.access_key, id);
            }
            set.set_account(&a.creds.access_key, a.account);
            set.insert(a.creds);
        }
    }
    if !set.is_empty() {
        return Ok((set, None, keys));
    }
    let path = args.root.join(".s3hpc").join("credentials.toml");
    if !path.exists() {
        let c = Credentials::generate();
        let stored =
            write_credentials(&path, &c).with_context(|| format!("storing credentials in {}", path.display()))?;
        if stored {
            keys.push(c.access_key.clone());
            set.insert(c.clone());
            return Ok((set, Some(c), keys));
        }
    }
    {
        for a in read_users(&path)? {
            keys.push(a.creds.access_key.clone());
            set.insert(a.creds);
        }
        if set.is_empty() {
            bail!("{} lists no users", path.display());
        }
        Ok((set, None, keys))
    }
}

/// The store, and (posix backend) the key store's directory, held open.
fn open_store(args: &ServeArgs) -> anyhow::Result<(DynStore, Option<std::fs::File>)> {
    Ok(match args.backend.as_str() {
        "memory" => (Arc::new(s3hpc_core::memory::MemoryStore::new()), None),
        "noop" => (Arc::new(s3hpc_core::noop::NoopStore::new(args.noop_object_size)), None),
        _ => {
            let durability = s3hpc_posix::Durability::parse(&args.durability)
                .with_context(|| format!("--durability {}: expected strict, relaxed or none", args.durability))?;
            let etag_mode =
                EtagMode::parse(&args.etag).with_context(|| format!("--etag {}: expected md5 or fast", args.etag))?;
            let io = match s3hpc_posix::IoMode::parse(&args.io) {
                Some(m @ (s3hpc_posix::IoMode::Offload | s3hpc_posix::IoMode::InPlace)) => m,
                _ => anyhow::bail!("--io {}: expected offload or inplace", args.io),
            };
            let posix_identity = args.identity == "posix";
            let umask = u32::from_str_radix(&args.umask, 8)
                .ok()
                .filter(|m| *m <= 0o777)
                .with_context(|| format!("--umask {}: expected an octal mode such as 022", args.umask))?;
            if posix_identity && !s3hpc_posix::ident::can_switch() {
                bail!(
                    "--identity posix needs CAP_SETUID and CAP_SETGID to act as each request's user \
                     (run as root, or grant them, e.g. systemd AmbientCapabilities=CAP_SETUID CAP_SETGID)"
                );
            }
            let lock_mode = s3hpc_posix::LockMode::parse(&args.lock_mode).context("--lock-mode")?;
            if !(args.lock_timeout > 0.0 && args.lock_timeout < 86_400.0) {
                bail!("--lock-timeout {}: expected seconds between 0 and 86400", args.lock_timeout);
            }
            let lock_timeout = std::time::Duration::from_secs_f64(args.lock_timeout);
            if !(args.listing_staleness >= 0.0 && args.listing_staleness <= 3600.0) {
                bail!("--listing-staleness {}: expected seconds between 0 and 3600", args.listing_staleness);
            }
            let listing_staleness = std::time::Duration::from_secs_f64(args.listing_staleness);
            let opts = s3hpc_posix::PosixOptions {
                durability,
                etag_mode,
                io,
                posix_identity,
                umask,
                lock_mode,
                lock_timeout,
                listing_staleness,
                ..Default::default()
            };
            let store = s3hpc_posix::PosixStore::open(&args.root, opts)
                .map_err(|e| anyhow::anyhow!("opening {}: {e}", args.root.display()))?;
            if posix_identity && !store.resolves_beneath() {
                bail!(
                    "--identity posix needs openat2 (Linux 5.6+, not blocked by seccomp) to keep every \
                     file-system call beneath the root"
                );
            }
            if posix_identity && store.meta_mode() == s3hpc_posix::MetaMode::Sidecar {
                bail!("--identity posix needs a file system with user.* extended attributes under the root");
            }
            // One line of what the root offers and what the gateway will do with it.
            let report = store.probe_root();
            println!(
                "s3hpc: root {}: {report}; lock mode {} (wait at most {}s)",
                args.root.display(),
                args.lock_mode,
                args.lock_timeout
            );
            if let Some(w) = &report.warning {
                tracing::warn!("root {}: {w}", args.root.display());
            }
            if report.shared && lock_mode == s3hpc_posix::LockMode::Local {
                tracing::warn!(
                    "root {}: --lock-mode local on a file system other nodes may mount: gateways on other nodes \
                     are not excluded",
                    args.root.display()
                );
            }
            let keys_dir = store
                .credentials_dir()
                .with_context(|| format!("{}/.s3hpc/credentials (the key store)", args.root.display()))?;
            (Arc::new(store), Some(keys_dir))
        }
    })
}

/// The key store over the posix root's state area, answering the keys the users file does not
/// list (and issuing STS sessions).
fn open_key_store(
    args: &ServeArgs,
    dir: Option<std::fs::File>,
    creds: &CredentialSet,
) -> anyhow::Result<Option<Arc<crate::keystore::KeyStore>>> {
    let Some(dir) = dir else {
        if args.user_keys {
            bail!("--user-keys needs the posix backend (the keys live in ROOT/.s3hpc/credentials)");
        }
        return Ok(None);
    };
    let dur = |flag: &str, v: &str| {
        crate::keystore::parse_duration(v)
            .filter(|d| !d.is_zero())
            .with_context(|| format!("--{flag} {v}: expected a duration such as 30d, 12h, 90m or 45s"))
    };
    let opts = crate::keystore::KeyStoreOptions {
        admins: args.user_keys_admin.clone(),
        default_lifetime: dur("user-keys-lifetime", &args.user_keys_lifetime)?,
        max_lifetime: dur("user-keys-max-lifetime", &args.user_keys_max_lifetime)?,
        max_per_user: args.user_keys_max.max(1),
    };
    if opts.default_lifetime > opts.max_lifetime {
        bail!("--user-keys-lifetime is longer than --user-keys-max-lifetime");
    }
    let ks = crate::keystore::KeyStore::open(dir, opts, creds.clone())
        .with_context(|| format!("reading the key store {}/.s3hpc/credentials", args.root.display()))?;
    ks.watch();
    creds.set_source(ks.clone());
    Ok(Some(ks))
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    crate::admin::init_logging(&args.ops.log_format, args.access_log, args.ops.log_level.as_deref());
    if !(args.idle_timeout > 0.0 && args.idle_timeout <= 86_400.0) {
        bail!("--idle-timeout {}: expected seconds above 0, at most 86400", args.idle_timeout);
    }
    if let Err(e) = crate::admin::raise_nofile_limit() {
        tracing::warn!("could not raise the open-file limit to its hard limit: {e}");
    }

    limit_malloc_arenas(MALLOC_ARENAS);
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all().thread_name("s3hpc-serve");
    if let Some(n) = args.threads {
        rt.worker_threads(n.max(1));
    }
    let rt = rt.build()?;
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if !args.no_idle_trim {
        rt.spawn(trim_when_idle());
    }
    rt.block_on(serve(args))
}

/// The process's user + system CPU time so far, in microseconds.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn cpu_time_us() -> u64 {
    // SAFETY: rusage is plain integers, for which all-zero bytes are a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage we own.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(ru.ru_utime) + us(ru.ru_stime)
}

/// Checked every this often: the CPU the gateway used since the last check tells busy from idle.
const TRIM_TICK: Duration = Duration::from_secs(1);
/// Less CPU than this per tick (2% of a core) is idle.
const IDLE_CPU_US: u64 = 20_000;

/// Give the heap memory freed after a busy spell back to the system once the gateway is idle.
/// glibc keeps what was freed inside its arenas (only the top of each can shrink, and each
/// worker's arena keeps its own), so without this the RSS stays near its peak after a burst of
/// uploads. `malloc_trim(0)` releases every free page of every arena; it runs once per busy ->
/// idle edge (a tick with less than [`IDLE_CPU_US`] of CPU after one with more), never under
/// load, where it would only cost page faults when the memory is taken again.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
async fn trim_when_idle() {
    let mut tick = tokio::time::interval(TRIM_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last = cpu_time_us();
    let mut busy = false;
    loop {
        tick.tick().await;
        let now = cpu_time_us();
        let used = now.saturating_sub(last);
        last = now;
        if used >= IDLE_CPU_US {
            busy = true;
        } else if busy {
            busy = false;
            // SAFETY: malloc_trim only releases free memory of the allocator's own arenas.
            let _ = tokio::task::spawn_blocking(|| unsafe { libc::malloc_trim(0) }).await;
            last = cpu_time_us(); // the trim's own CPU is not work
        }
    }
}

/// Uploads admitted at once by default: one per worker (each admitted upload keeps a core busy
/// hashing and writing; MD5 runs at a few hundred MB/s per core), at least 16, so their buffers
/// (about 2 MiB each) stay bounded by the cores, not by the clients: peak RSS under 64
/// concurrent 1 MiB PUTs with 16 workers was 124 MB with 8 per worker, 65 MB with 16
/// (docs/perf/scale.md). Earlier, on 2 cores: 174 MB with 64 admitted, 74-85 MB with 16, at the
/// same MiB/s (docs/perf/http.md).
fn default_max_uploads(threads: Option<usize>) -> usize {
    let workers = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    workers.max(16)
}

/// glibc malloc arenas, whatever the worker count. Each arena keeps what was freed in it, so
/// RSS grew with the arena count: under 64 concurrent 1 MiB PUTs with 16 workers, 8 arenas
/// held 64 MB, 4 (the worker count, capped at 4, until issue 39) 54-60 MB, 2 43-49 MB
/// (docs/perf/scale.md, "Memory"). Small allocations come from each thread's cache without
/// taking an arena lock; what takes one (bodies' 128 KiB pieces, larger headers and documents)
/// is a few calls per request.
const MALLOC_ARENAS: usize = 2;

/// glibc gives each contending thread its own malloc arena (up to 8 per core), and each arena
/// keeps what was freed in it. With dozens of blocking-pool threads writing uploads, that memory
/// piles up: capping the arenas lowered peak RSS under 256 concurrent 1 MiB PUTs by about a
/// fifth (docs/perf/http.md), and keeps it from growing with the core count
/// ([`MALLOC_ARENAS`]). An explicit MALLOC_ARENA_MAX wins.
pub(crate) fn limit_malloc_arenas(n: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only changes a malloc tunable; called before the runtime's threads start.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, n.min(64) as libc::c_int);
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = n;
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.root).with_context(|| format!("creating {}", args.root.display()))?;
    let (creds, generated, keys) = credentials(&args)?;
    if args.identity == "posix" && args.backend != "posix" {
        bail!("--identity posix needs the posix backend");
    }
    check_identities(&args, &creds)?;
    // Every front end serves through S3 authorization (owners, ACLs, policies); keys given
    // without an account (--access-key, the generated root key) are administrators.
    let ownership = s3hpc_authz::ObjectOwnership::parse(&args.default_object_ownership)
        .context("--default-object-ownership: BucketOwnerEnforced, BucketOwnerPreferred or ObjectWriter")?;
    let (inner, keys_dir) = open_store(&args)?;
    let key_store = open_key_store(&args, keys_dir, &creds)?;
    let store: DynStore =
        Arc::new(s3hpc_authz::Authorized::new(inner, creds.clone()).with_default_ownership(ownership));
    let creds = Arc::new(creds);
    let roles = s3hpc_http::roles::Roles::default();
    if let Some(cfg) = &args.config {
        roles.replace(read_roles(cfg)?);
    }
    let tls = crate::admin::tls_files(&args.ops)?;
    if args.config.is_some() || tls.is_some() {
        tokio::spawn(reload_accounts(args.clone(), args.config.clone(), (*creds).clone(), tls.clone(), roles.clone()));
    }
    let listener = if args.no_http {
        None
    } else {
        Some(
            tokio::net::TcpListener::bind(&args.listen)
                .await
                .with_context(|| format!("listening on {}", args.listen))?,
        )
    };
    let console = match &args.console_listen {
        Some(a) => Some(tokio::net::TcpListener::bind(a).await.with_context(|| format!("--console-listen {a}"))?),
        None => None,
    };
    let (metrics, admin) =
        match crate::admin::start(&args.ops, (args.backend == "posix").then(|| args.root.clone()), console.is_some())
            .await?
        {
            Some((m, a)) => (Some(m), Some(a)),
            None => (None, None),
        };
    if let Some(a) = &admin {
        // The admin API (accounts, keys, usage) on the admin listener.
        a.set_api(crate::adminapi::AdminApi::start(&args, (*creds).clone(), key_store.clone(), store.clone()));
    }
    let http_metrics = metrics.as_ref().map(|m| m.http.clone());
    let mut wire = Vec::new();
    // `tls://` binary listeners share the HTTPS certificate (reloaded with it on SIGHUP).
    let wire_tls = tls.as_ref().map(|t| t.server_config()).transpose()?.map(|c| s3hpc_wire::tls::server_config(&c));
    for url in &args.binary {
        let opts = s3hpc_wire::ServerOptions {
            trusted_uids: (!args.binary_trusted_uid.is_empty()).then(|| args.binary_trusted_uid.clone()),
            dedicated_threads: args.binary_threads,
            tls: wire_tls.clone(),
            observer: metrics.as_ref().map(|m| m.wire.clone() as Arc<dyn s3hpc_wire::Observer>),
            keys: if args.user_keys {
                key_store.clone().map(|k| k as Arc<dyn s3hpc_core::creds::KeyAdmin>)
            } else {
                None
            },
            ..Default::default()
        };
        let server = s3hpc_wire::bind(url, store.clone(), creds.clone(), opts)
            .await
            .with_context(|| format!("binary protocol on {url}"))?;
        if args.user_keys
            && let Some(path) = url.strip_prefix("unix://")
        {
            // Every local user may come for keys of their own (the kernel names them; what
            // they may do beyond that is what their account may).
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))
                .with_context(|| format!("--user-keys: opening {path} to local users"))?;
        }
        wire.push(server);
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    let shown = listener.as_ref().map(|l| l.local_addr()).transpose()?.map(|a: SocketAddr| format!("{scheme}://{a}"));
    let endpoint = shown.clone().unwrap_or_else(|| wire[0].url().to_string());
    let mut out = std::io::stdout().lock();
    if let Some(http) = &shown {
        writeln!(out, "s3hpc: listening on {http} (backend {}, root {})", args.backend, args.root.display())?;
    }
    if let Some(c) = &console {
        writeln!(out, "s3hpc: console on {scheme}://{}", c.local_addr()?)?;
    }
    for w in &wire {
        writeln!(
            out,
            "s3hpc: binary protocol on {} (backend {}, root {})",
            w.url(),
            args.backend,
            args.root.display()
        )?;
    }
    match &generated {
        Some(c) => {
            writeln!(out, "s3hpc: generated credentials (stored in {}/.s3hpc/credentials.toml):", args.root.display())?;
            writeln!(out, "  access key: {}", c.access_key)?;
            writeln!(out, "  secret key: {}", c.secret_key)?;
            if shown.is_some() {
                writeln!(
                    out,
                    "  try: AWS_ACCESS_KEY_ID={} AWS_SECRET_ACCESS_KEY='{}' aws --endpoint-url {endpoint} s3 ls",
                    c.access_key, c.secret_key
                )?;
            }
        }
        None => writeln!(out, "s3hpc: {} user(s): {}", keys.len(), keys.join(", "))?,
    }
    out.flush()?;
    drop(out);

    // One signal stops every front end.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    if args.lifecycle_interval > 0 {
        let leases: Arc<dyn s3hpc_http::lifecycle::runner::Leases> = if args.backend == "posix" {
            Arc::new(GatewayLeases(s3hpc_http::lifecycle::runner::FileLeases::new(
                args.root.join(".s3hpc").join("lifecycle"),
            )))
        } else {
            Arc::new(s3hpc_http::lifecycle::runner::LocalLeases::default())
        };
        let runner = Arc::new(s3hpc_http::lifecycle::runner::Runner {
            store: store.clone(),
            leases,
            opts: s3hpc_http::lifecycle::runner::Options {
                interval: Duration::from_secs(args.lifecycle_interval),
                ops_per_sec: args.lifecycle_ops.max(1),
                day: s3hpc_http::lifecycle::runner::day_seconds(),
            },
            metrics: http_metrics.clone(),
            posix_accounts: (args.identity == "posix").then(|| (*creds).clone()),
        });
        // Not joined: it stops with the process (a run in progress is cut between two store calls).
        tokio::spawn(runner.run(stopped(stop_rx.clone())));
    }
    let mut tasks = tokio::task::JoinSet::new();
    for w in wire {
        let stop = stopped(stop_rx.clone());
        tasks.spawn(async move { w.run(stop).await.context("binary protocol server") });
    }
    let s3_port = listener.as_ref().map(|l| l.local_addr()).transpose()?.map(|a| a.port());
    {
        let mut cfg = s3hpc_http::Config::new(store, (*creds).clone());
        cfg.region = args.region.clone();
        cfg.sigv2 = !args.no_sigv2;
        cfg.domain = args.domain.clone();
        cfg.website_domains = args.website_domain.clone();
        cfg.access_log = args.access_log;
        cfg.header_timeout = Duration::from_secs_f64(args.idle_timeout);
        cfg.default_checksum =
            (args.default_checksum == "crc64nvme").then_some(s3hpc_core::ChecksumAlgorithm::Crc64Nvme);
        cfg.max_concurrent_uploads = args.max_uploads.unwrap_or_else(|| default_max_uploads(args.threads));
        cfg.complete_keepalive_after = Duration::from_millis(args.complete_keepalive_ms);
        cfg.shutdown_grace = Duration::from_secs(20);
        cfg.anonymous = true;
        if args.identity == "posix" {
            // Anonymous requests (where a policy or ACL lets them in) act as nobody.
            cfg.anonymous_identity = Some(s3hpc_core::identity::Identity { uid: 65534, gid: 65534, groups: vec![] });
        }
        cfg.metrics = http_metrics;
        cfg.sts_min_duration = Duration::from_secs(args.sts_min_duration);
        cfg.roles = roles;
        cfg.tls = tls.as_ref().map(|t| t.server_config()).transpose()?;
        if let Some(console) = console {
            let opts = s3hpc_http::console::ConsoleOptions {
                s3_url: args.console_s3_url.clone(),
                s3_port,
                admin: admin.map(|a| a as Arc<dyn s3hpc_http::console::AdminView>),
                keys: key_store.clone().filter(|_| args.user_keys).map(|k| k as Arc<dyn s3hpc_core::creds::KeyAdmin>),
                ..Default::default()
            };
            let (cfg, stop) = (cfg.clone(), stopped(stop_rx.clone()));
            tasks.spawn(async move { s3hpc_http::console::serve(console, cfg, opts, stop).await.context("console") });
        }
        if let Some(listener) = listener {
            let stop = stopped(stop_rx.clone());
            tasks.spawn(async move { s3hpc_http::serve(listener, cfg, stop).await.context("HTTP server") });
        }
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    println!("s3hpc: stopped");
    Ok(())
}

/// With `--identity posix` every access key needs a POSIX identity.
pub(crate) fn check_identities(args: &ServeArgs, creds: &CredentialSet) -> anyhow::Result<()> {
    if args.identity != "posix" {
        return Ok(());
    }
    if let Some(k) = creds.access_keys().into_iter().find(|k| creds.identity_for(k).is_none()) {
        bail!(
            "--identity posix: access key {k} has no POSIX identity (give it `user = \"login\"` or `uid` and `gid` \
             in the --config users file)"
        );
    }
    Ok(())
}

/// Reload the accounts on SIGHUP and when the users file changes (checked every second): the
/// new set replaces the old one whole for requests verified from then on (requests in flight
/// keep going). A file that does not parse, or names an identity that does not resolve, is
/// refused with the reason in the log, and the old set stays in force. SIGHUP also reloads the
/// TLS certificate and key (`--tls-cert`, `--tls-key`) for new connections.
async fn reload_accounts(
    args: ServeArgs,
    cfg: Option<PathBuf>,
    live: CredentialSet,
    tls: Option<Arc<TlsFiles>>,
    roles: s3hpc_http::roles::Roles,
) {
    use std::os::unix::fs::MetadataExt;
    use tokio::signal::unix::{SignalKind, signal};
    let stamp = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.ino(), m.mtime(), m.mtime_nsec(), m.len()));
    let mut seen = cfg.as_deref().and_then(stamp);
    let mut hup = match signal(SignalKind::hangup()) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!("no SIGHUP handler ({e}); the users file is still reloaded when it changes");
            None
        }
    };
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        let why = tokio::select! {
            Some(()) = async { match hup.as_mut() { Some(h) => h.recv().await, None => std::future::pending().await } } => "SIGHUP",
            _ = tick.tick() => {
                let now = cfg.as_deref().and_then(stamp);
                if now == seen { continue; }
                seen = now;
                "the users file changed"
            }
        };
        if why == "SIGHUP" {
            crate::admin::reload_tls(tls.as_deref());
            crate::config::warn_changes_need_restart();
        }
        let Some(cfg) = &cfg else { continue };
        let loaded = credentials(&args)
            .and_then(|(set, _, _)| check_identities(&args, &set).map(|_| set))
            .and_then(|set| read_roles(cfg).map(|r| (set, r)));
        match loaded {
            Ok((set, r)) => {
                live.replace(&set);
                roles.replace(r);
                tracing::warn!(users = set.len(), "accounts reloaded from {} ({why})", cfg.display());
            }
            Err(e) => tracing::error!("accounts NOT reloaded from {} ({why}), the old set stays: {e:#}", cfg.display()),
        }
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// The lifecycle leases are the gateway's own files (`ROOT/.s3hpc/lifecycle/`): taken as the
/// gateway whatever identity the blocking-pool thread last acted as.
struct GatewayLeases(s3hpc_http::lifecycle::runner::FileLeases);

impl s3hpc_http::lifecycle::runner::Leases for GatewayLeases {
    fn try_lease(&self, bucket: &str) -> std::io::Result<Option<Box<dyn s3hpc_http::lifecycle::runner::Lease>>> {
        let lease = s3hpc_posix::ident::as_gateway(|| self.0.try_lease(bucket))??;
        Ok(lease.map(|l| Box::new(GatewayLease(l)) as Box<dyn s3hpc_http::lifecycle::runner::Lease>))
    }
}

struct GatewayLease(Box<dyn s3hpc_http::lifecycle::runner::Lease>);

impl s3hpc_http::lifecycle::runner::Lease for GatewayLease {
    fn last_run(&mut self) -> Option<u64> {
        s3hpc_posix::ident::as_gateway(|| self.0.last_run()).ok().flatten()
    }
    fn record(&mut self, started: u64) -> std::io::Result<()> {
        s3hpc_posix::ident::as_gateway(|| self.0.record(started))?
    }
}
