//! `s3hpc user add|list|remove|rotate`: edit the `[[users]]` file that `s3hpc serve --config`
//! reads. Every change is checked (an entry's POSIX identity must resolve) and written as a new
//! file (fsynced) renamed over the old one, so a gateway reloading it never reads half a file.
//! The new file keeps the old one's owner, group and mode (a root-run `user add` leaves the
//! file readable by the gateway's service user); a file created by `add` gets mode 0600 and,
//! when run as root, the owner and group of its directory. New keys are printed once; the file
//! is the only other place that holds them.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use s3hpc_core::Credentials;

use crate::serve::{User, UsersFile, posix_identity};

#[derive(clap::Args, Debug)]
pub struct UserArgs {
    #[command(subcommand)]
    pub(crate) cmd: Cmd,
}

#[derive(clap::Subcommand, Debug)]
pub(crate) enum Cmd {
    /// Add an account with a new key pair (printed).
    Add {
        #[command(flatten)]
        file: FileArg,
        #[command(flatten)]
        remote: Remote,
        /// The account's name (its display name, as --name).
        #[arg(value_name = "NAME", conflicts_with = "name")]
        account: Option<String>,
        /// The POSIX login it acts as with `serve --identity posix` (resolved through NSS).
        #[arg(long, conflicts_with_all = ["uid", "gid"])]
        user: Option<String>,
        /// Numeric identity instead of a login (with --gid).
        #[arg(long, requires = "gid")]
        uid: Option<u32>,
        #[arg(long, requires = "uid")]
        gid: Option<u32>,
        /// Supplementary groups (comma-separated gids).
        #[arg(long, value_delimiter = ',')]
        groups: Option<Vec<u32>>,
        /// Administrator: sees and manages every bucket.
        #[arg(long)]
        admin: bool,
        /// Canonical user id shown as Owner (default: the access key).
        #[arg(long)]
        id: Option<String>,
        /// Display name.
        #[arg(long)]
        name: Option<String>,
        /// Use this access key instead of a generated one.
        #[arg(long)]
        access_key: Option<String>,
    },
    /// List the accounts (never their secrets); with --endpoint also the self-service keys.
    List {
        #[command(flatten)]
        file: FileArg,
        #[command(flatten)]
        remote: Remote,
    },
    /// Remove the account with this access key (with --endpoint: or the self-service key).
    Remove {
        #[command(flatten)]
        file: FileArg,
        #[command(flatten)]
        remote: Remote,
        access_key: String,
    },
    /// Give the account a new secret key (printed); the old one stops working at the next reload.
    Rotate {
        #[command(flatten)]
        file: FileArg,
        #[command(flatten)]
        remote: Remote,
        access_key: String,
    },
    /// Disable the account (kept in the file with `disabled = true`, refused by the gateway) or,
    /// with --endpoint, a self-service key.
    Disable {
        #[command(flatten)]
        file: FileArg,
        #[command(flatten)]
        remote: Remote,
        access_key: String,
    },
    /// Enable a disabled account or self-service key again.
    Enable {
        #[command(flatten)]
        file: FileArg,
        #[command(flatten)]
        remote: Remote,
        access_key: String,
    },
    /// Objects and bytes per bucket and per account, from the gateway's last usage walk
    /// (--endpoint only).
    Usage {
        #[command(flatten)]
        remote: Remote,
    },
    /// Make a self-service key for a POSIX user, as `s3hpc credentials create` run by that user
    /// would (--endpoint only; the secret is printed once).
    AddKey {
        #[command(flatten)]
        remote: Remote,
        /// The user's login.
        login: String,
        /// Lifetime (`30d`, `12h`, ...; default the gateway's).
        #[arg(long, value_name = "DURATION")]
        expires: Option<String>,
        #[arg(long, default_value = "")]
        description: String,
    },
}

impl Cmd {
    fn remote(&self) -> Option<&Remote> {
        match self {
            Cmd::Add { remote, .. }
            | Cmd::List { remote, .. }
            | Cmd::Remove { remote, .. }
            | Cmd::Rotate { remote, .. }
            | Cmd::Disable { remote, .. }
            | Cmd::Enable { remote, .. }
            | Cmd::Usage { remote }
            | Cmd::AddKey { remote, .. } => Some(remote),
        }
    }
}

/// Where the admin API is and whose key signs for it (`user ... --endpoint URL`).
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct Remote {
    /// Edit the accounts through the gateway's admin API on its admin listener
    /// (`serve --admin-listen`), e.g. `http://10.0.0.5:9001`, instead of a local users file.
    #[arg(long, env = "S3HPC_ADMIN_ENDPOINT", value_name = "URL")]
    pub endpoint: Option<String>,
    /// An administrator's access key, which signs the requests (SigV4).
    #[arg(long, env = "S3HPC_ADMIN_ACCESS_KEY", value_name = "KEY")]
    pub admin_access_key: Option<String>,
    /// Its secret key.
    #[arg(long, env = "S3HPC_ADMIN_SECRET_KEY", hide_env_values = true, value_name = "SECRET")]
    pub admin_secret_key: Option<String>,
    /// The gateway's region (`serve --region`).
    #[arg(long, default_value = "us-east-1")]
    pub region: String,
}

#[derive(clap::Args, Debug)]
pub(crate) struct FileArg {
    /// The users file (`s3hpc serve --config`); created by `add` if missing.
    #[arg(long, default_value = "users.toml")]
    pub(crate) config: PathBuf,
}

fn load(path: &Path) -> anyhow::Result<UsersFile> {
    match std::fs::read_to_string(path) {
        Ok(text) => toml::from_str(&text).with_context(|| format!("parsing {}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(UsersFile::default()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Owner, group and mode the written file gets: the replaced file's; for a new file 0600 and,
/// as root, its directory's owner and group (else the caller's).
fn file_attrs(path: &Path, dir: &Path) -> anyhow::Result<(Option<(u32, u32)>, u32)> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(m) => Ok((Some((m.uid(), m.gid())), m.mode() & 0o7777)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // SAFETY: geteuid has no preconditions.
            let root = unsafe { libc::geteuid() } == 0;
            let d = std::fs::metadata(dir).with_context(|| format!("reading {}", dir.display()))?;
            Ok((root.then(|| (d.uid(), d.gid())), 0o600))
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Write `f` to `path` atomically: a new file in the same directory with the old file's owner,
/// group and mode ([`file_attrs`]), fsynced, renamed over the old one, then the directory
/// fsynced.
fn store(path: &Path, f: &UsersFile) -> anyhow::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let text = toml::to_string(f)?;
    let name = path.file_name().context("the users file needs a file name")?.to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let (owner, mode) = file_attrs(path, dir)?;
    let write = || -> anyhow::Result<()> {
        let mut o = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
        if let Some((uid, gid)) = owner
            && let Err(e) = std::os::unix::fs::fchown(&o, Some(uid), Some(gid))
        {
            // Not root and not its owner: the edit goes on (as before), with the reason the
            // gateway's user may no longer read the file.
            eprintln!(
                "warning: {}: its owner {uid}:{gid} could not be kept ({e}); run as root or as that user",
                path.display()
            );
        }
        // After the chown, which clears set-id bits.
        o.set_permissions(std::fs::Permissions::from_mode(mode))?;
        o.write_all(format!("# s3hpc users (s3hpc serve --config); keep this file private\n{text}").as_bytes())?;
        o.sync_all()?;
        std::fs::rename(&tmp, path)?;
        Ok(std::fs::File::open(dir)?.sync_all()?)
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    Ok(())
}

fn find(f: &UsersFile, ak: &str) -> Option<usize> {
    f.users.iter().position(|u| u.access_key == ak)
}

/// A new account of the users file (`user add`, or the admin API's `POST /admin/v1/accounts`).
#[derive(Debug, Default, Clone, serde::Deserialize, serde::Serialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct NewAccount {
    pub name: Option<String>,
    pub user: Option<String>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub groups: Option<Vec<u32>>,
    pub admin: bool,
    pub id: Option<String>,
    pub access_key: Option<String>,
}

/// Why an edit of the users file failed: the key is not there, it is there already, or the
/// entry is not valid (the message says why).
#[derive(Debug)]
pub(crate) enum EditError {
    NoSuchKey(String),
    Exists(String),
    Invalid(String),
    Io(anyhow::Error),
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditError::NoSuchKey(ak) => write!(f, "no user {ak}"),
            EditError::Exists(ak) => write!(f, "access key {ak} exists already"),
            EditError::Invalid(why) => f.write_str(why),
            EditError::Io(e) => write!(f, "{e:#}"),
        }
    }
}

impl std::error::Error for EditError {}

/// Add an account with a new key pair (returned; the file is the only other place holding it).
pub(crate) fn add_account(path: &Path, n: NewAccount) -> Result<Credentials, EditError> {
    let mut f = load(path).map_err(EditError::Io)?;
    let mut c = Credentials::generate();
    if let Some(ak) = n.access_key {
        if ak.is_empty() || ak.len() > 128 || !ak.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(EditError::Invalid("the access key must be 1 to 128 letters and digits".into()));
        }
        c.access_key = ak;
    }
    if find(&f, &c.access_key).is_some() {
        return Err(EditError::Exists(c.access_key));
    }
    if let Some(id) = &n.id
        && (id.is_empty() || id.contains(':'))
    {
        return Err(EditError::Invalid("`id` must be non-empty and may not contain ':'".into()));
    }
    let u = User {
        access_key: c.access_key.clone(),
        secret_key: c.secret_key.clone(),
        uid: n.uid,
        gid: n.gid,
        groups: n.groups,
        user: n.user,
        admin: n.admin.then_some(true),
        id: n.id,
        name: n.name,
        disabled: None,
    };
    posix_identity(&u).map_err(|e| EditError::Invalid(format!("user {}: {e:#}", u.access_key)))?;
    f.users.push(u);
    store(path, &f).map_err(EditError::Io)?;
    Ok(c)
}

/// Remove the account with access key `ak`.
pub(crate) fn remove_account(path: &Path, ak: &str) -> Result<(), EditError> {
    let mut f = load(path).map_err(EditError::Io)?;
    let i = find(&f, ak).ok_or_else(|| EditError::NoSuchKey(ak.into()))?;
    if let Some(r) = f.roles.iter().find(|r| r.account == ak) {
        return Err(EditError::Invalid(format!("role {} acts as account {ak}: remove the role first", r.name)));
    }
    f.users.remove(i);
    store(path, &f).map_err(EditError::Io)
}

/// Give the account a new secret (returned).
pub(crate) fn rotate_account(path: &Path, ak: &str) -> Result<String, EditError> {
    let mut f = load(path).map_err(EditError::Io)?;
    let i = find(&f, ak).ok_or_else(|| EditError::NoSuchKey(ak.into()))?;
    let secret = Credentials::generate().secret_key;
    f.users[i].secret_key = secret.clone();
    store(path, &f).map_err(EditError::Io)?;
    Ok(secret)
}

/// Disable (`disabled = true`: the gateway does not load it) or enable an account.
pub(crate) fn set_account_disabled(path: &Path, ak: &str, disabled: bool) -> Result<(), EditError> {
    let mut f = load(path).map_err(EditError::Io)?;
    let i = find(&f, ak).ok_or_else(|| EditError::NoSuchKey(ak.into()))?;
    if disabled && let Some(r) = f.roles.iter().find(|r| r.account == ak) {
        return Err(EditError::Invalid(format!("role {} acts as account {ak}: remove the role first", r.name)));
    }
    f.users[i].disabled = disabled.then_some(true);
    store(path, &f).map_err(EditError::Io)
}

/// One account as `user list` shows it.
pub(crate) fn describe(u: &User) -> String {
    let ident = match posix_identity(u) {
        Ok(Some(i)) => format!("uid={} gid={} groups={:?}", i.uid, i.gid, i.groups),
        Ok(None) => "-".into(),
        Err(e) => format!("unresolved: {e:#}"),
    };
    let login = u.user.as_deref().map(|l| format!(" ({l})")).unwrap_or_default();
    let admin = if u.admin == Some(true) { " admin" } else { "" };
    let disabled = if u.disabled == Some(true) { " disabled" } else { "" };
    let id = u.id.as_deref().unwrap_or(&u.access_key);
    let name = u.name.as_deref().map(|n| format!(" name={n:?}")).unwrap_or_default();
    format!("{}\t{ident}{login}\tid={id}{name}{admin}{disabled}", u.access_key)
}

pub(crate) fn load_users(path: &Path) -> anyhow::Result<UsersFile> {
    load(path)
}

pub fn run(args: UserArgs) -> anyhow::Result<()> {
    if let Some(r) = args.cmd.remote().filter(|r| r.endpoint.is_some()) {
        let r = r.clone();
        return crate::adminapi::client::run_user(r, args.cmd);
    }
    let out = &mut std::io::stdout();
    let e = |e: EditError| anyhow::anyhow!("{e}");
    match args.cmd {
        Cmd::Add { file, account, user, uid, gid, groups, admin, id, name, access_key, .. } => {
            let n = NewAccount { name: name.or(account), user, uid, gid, groups, admin, id, access_key };
            let c = add_account(&file.config, n).map_err(|x| e(x).context(file.config.display().to_string()))?;
            writeln!(out, "access key: {}\nsecret key: {}", c.access_key, c.secret_key)?;
        }
        Cmd::List { file, .. } => {
            let f = load(&file.config)?;
            for u in &f.users {
                writeln!(out, "{}", describe(u))?;
            }
        }
        Cmd::Remove { file, access_key, .. } => {
            remove_account(&file.config, &access_key).map_err(|x| e(x).context(file.config.display().to_string()))?;
            writeln!(out, "removed {access_key}")?;
        }
        Cmd::Rotate { file, access_key, .. } => {
            let secret = rotate_account(&file.config, &access_key)
                .map_err(|x| e(x).context(file.config.display().to_string()))?;
            writeln!(out, "access key: {access_key}\nsecret key: {secret}")?;
        }
        Cmd::Disable { file, access_key, .. } => disable(out, &file, &access_key, true)?,
        Cmd::Enable { file, access_key, .. } => disable(out, &file, &access_key, false)?,
        Cmd::Usage { .. } | Cmd::AddKey { .. } => {
            bail!("this needs the gateway's admin API: give --endpoint http://ADMIN-LISTEN-ADDRESS")
        }
    }
    Ok(())
}

fn disable(out: &mut impl Write, file: &FileArg, access_key: &str, off: bool) -> anyhow::Result<()> {
    set_account_disabled(&file.config, access_key, off)
        .map_err(|x| anyhow::anyhow!("{}: {x}", file.config.display()))?;
    writeln!(out, "{} {access_key}", if off { "disabled" } else { "enabled" })?;
    Ok(())
}
