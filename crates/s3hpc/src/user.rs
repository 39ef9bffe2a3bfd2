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
    cmd: Cmd,
}

#[derive(clap::Subcommand, Debug)]
enum Cmd {
    /// Add an account with a new key pair (printed).
    Add {
        #[command(flatten)]
        file: FileArg,
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
    /// List the accounts (never their secrets).
    List {
        #[command(flatten)]
        file: FileArg,
    },
    /// Remove the account with this access key.
    Remove {
        #[command(flatten)]
        file: FileArg,
        access_key: String,
    },
    /// Give the account a new secret key (printed); the old one stops working at the next reload.
    Rotate {
        #[command(flatten)]
        file: FileArg,
        access_key: String,
    },
}

#[derive(clap::Args, Debug)]
struct FileArg {
    /// The users file (`s3hpc serve --config`); created by `add` if missing.
    #[arg(long, default_value = "users.toml")]
    config: PathBuf,
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

fn find(f: &mut UsersFile, ak: &str, path: &Path) -> anyhow::Result<usize> {
    f.users.iter().position(|u| u.access_key == ak).with_context(|| format!("{}: no user {ak}", path.display()))
}

pub fn run(args: UserArgs) -> anyhow::Result<()> {
    let out = &mut std::io::stdout();
    match args.cmd {
        Cmd::Add { file, account, user, uid, gid, groups, admin, id, name, access_key } => {
            let name = name.or(account);
            let mut f = load(&file.config)?;
            let mut c = Credentials::generate();
            if let Some(ak) = access_key {
                if ak.is_empty() || ak.len() > 128 || !ak.bytes().all(|b| b.is_ascii_alphanumeric()) {
                    bail!("--access-key: 1 to 128 letters and digits");
                }
                c.access_key = ak;
            }
            if f.users.iter().any(|u| u.access_key == c.access_key) {
                bail!("{}: access key {} exists already", file.config.display(), c.access_key);
            }
            let u = User {
                access_key: c.access_key.clone(),
                secret_key: c.secret_key.clone(),
                uid,
                gid,
                groups,
                user,
                admin: admin.then_some(true),
                id,
                name,
            };
            posix_identity(&u).with_context(|| format!("user {}", u.access_key))?;
            f.users.push(u);
            store(&file.config, &f)?;
            writeln!(out, "access key: {}\nsecret key: {}", c.access_key, c.secret_key)?;
        }
        Cmd::List { file } => {
            let f = load(&file.config)?;
            for u in &f.users {
                let ident = match posix_identity(u) {
                    Ok(Some(i)) => format!("uid={} gid={} groups={:?}", i.uid, i.gid, i.groups),
                    Ok(None) => "-".into(),
                    Err(e) => format!("unresolved: {e:#}"),
                };
                let login = u.user.as_deref().map(|l| format!(" ({l})")).unwrap_or_default();
                let admin = if u.admin == Some(true) { " admin" } else { "" };
                let id = u.id.as_deref().unwrap_or(&u.access_key);
                let name = u.name.as_deref().map(|n| format!(" name={n:?}")).unwrap_or_default();
                writeln!(out, "{}\t{ident}{login}\tid={id}{name}{admin}", u.access_key)?;
            }
        }
        Cmd::Remove { file, access_key } => {
            let mut f = load(&file.config)?;
            let i = find(&mut f, &access_key, &file.config)?;
            f.users.remove(i);
            store(&file.config, &f)?;
            writeln!(out, "removed {access_key}")?;
        }
        Cmd::Rotate { file, access_key } => {
            let mut f = load(&file.config)?;
            let i = find(&mut f, &access_key, &file.config)?;
            let secret = Credentials::generate().secret_key;
            f.users[i].secret_key = secret.clone();
            store(&file.config, &f)?;
            writeln!(out, "access key: {access_key}\nsecret key: {secret}")?;
        }
    }
    Ok(())
}
