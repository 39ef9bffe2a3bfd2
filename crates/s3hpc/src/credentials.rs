//! `s3hpc credentials`: a local user's own S3 access keys, made by the gateway over its Unix
//! socket (`serve --binary unix://... --user-keys`), which takes the caller's uid from the
//! kernel. No administrator, no secret to start with. See docs/CREDENTIALS.md.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use s3hpc_core::Credentials;

/// The site file naming the gateway's socket (`endpoint = "unix:///run/s3hpc.sock"`).
pub const SITE_CONFIG: &str = "/etc/s3hpc/client.toml";

#[derive(clap::Args, Debug)]
pub struct CredentialsArgs {
    #[command(subcommand)]
    pub action: Action,
    /// The gateway's binary-protocol Unix socket (`unix:///run/s3hpc.sock`). Default: the
    /// environment's S3HPC_ENDPOINT, else `endpoint` in the file named by S3HPC_CONFIG, else in
    /// /etc/s3hpc/client.toml.
    #[arg(long, global = true, value_name = "URL")]
    pub endpoint: Option<String>,
}

#[derive(clap::Subcommand, Debug)]
pub enum Action {
    /// Make a new key for yourself; its secret is printed once, here.
    Create {
        /// How long the key works (`30d`, `12h`, `90m`, `45s`; default: the gateway's, 30 days
        /// unless configured).
        #[arg(long, value_name = "DURATION")]
        expires: Option<String>,
        /// A note shown by `list` (what the key is for).
        #[arg(long, default_value = "")]
        description: String,
        /// Also write the key into ~/.aws/credentials as this profile (file mode 0600).
        #[arg(long, value_name = "NAME")]
        aws_profile: Option<String>,
    },
    /// Your keys (without secrets); root and the gateway's key administrators see everyone's.
    List,
    /// Revoke one of your keys (administrators: anyone's); every gateway refuses it within a
    /// second.
    Revoke {
        #[arg(value_name = "ACCESS_KEY_ID")]
        access_key: String,
    },
}

/// The endpoint: the flag, the environment, the site file.
fn endpoint(flag: Option<String>) -> anyhow::Result<String> {
    if let Some(e) = flag {
        return Ok(e);
    }
    if let Some(e) = std::env::var("S3HPC_ENDPOINT").ok().filter(|e| !e.is_empty()) {
        return Ok(e);
    }
    let path = std::env::var_os("S3HPC_CONFIG").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(SITE_CONFIG));
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let t: toml::Table = toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
            match t.get("endpoint") {
                Some(toml::Value::String(s)) => Ok(s.clone()),
                _ => bail!("{}: no `endpoint = \"unix:///path\"`", path.display()),
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "no gateway socket: give --endpoint unix:///path, set S3HPC_ENDPOINT, or `endpoint` in {}",
            path.display()
        ),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

pub fn run(args: CredentialsArgs) -> anyhow::Result<()> {
    let url = endpoint(args.endpoint)?;
    if !url.starts_with("unix://") {
        bail!("{url}: keys are made over the gateway's Unix socket (unix:///path), where the kernel names you");
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async move {
        let opts = s3hpc_wire::ClientOptions { connections: 1, ..Default::default() };
        let c = s3hpc_wire::WireClient::connect_with(&url, Credentials::new("", ""), opts)
            .await
            .map_err(|e| anyhow::anyhow!("{url}: {}: {}", e.code, e.message))?;
        let wire = |e: s3hpc_core::Error| anyhow::anyhow!("{}: {}", e.code, e.message);
        match args.action {
            Action::Create { expires, description, aws_profile } => {
                let lifetime = expires
                    .map(|e| {
                        crate::keystore::parse_duration(&e)
                            .filter(|d| !d.is_zero())
                            .with_context(|| format!("--expires {e}: expected a duration such as 30d, 12h, 90m or 45s"))
                    })
                    .transpose()?;
                let (creds, info) = c.create_access_key(lifetime, &description).await.map_err(wire)?;
                let mut out = std::io::stdout().lock();
                writeln!(out, "AccessKeyId: {}", creds.access_key)?;
                writeln!(out, "SecretAccessKey: {}", creds.secret_key)?;
                if let Some(e) = info.expires {
                    writeln!(out, "Expiration: {}", iso8601(e))?;
                }
                writeln!(out, "User: {} (uid {})", info.user, info.uid)?;
                if let Some(p) = aws_profile {
                    let path = write_aws_profile(&p, &creds)?;
                    writeln!(out, "Written to {} as profile [{p}]", path.display())?;
                } else {
                    writeln!(out, "(the secret is not shown again)")?;
                }
            }
            Action::List => {
                let keys = c.list_access_keys().await.map_err(wire)?;
                let mut out = std::io::stdout().lock();
                writeln!(
                    out,
                    "{:<22} {:<16} {:>7}  {:<20}  {:<20}  DESCRIPTION",
                    "ACCESS_KEY_ID", "USER", "UID", "CREATED", "EXPIRES"
                )?;
                for k in keys {
                    writeln!(
                        out,
                        "{:<22} {:<16} {:>7}  {:<20}  {:<20}  {}",
                        k.access_key,
                        k.user,
                        k.uid,
                        iso8601(k.created),
                        k.expires.map(iso8601).unwrap_or_else(|| "never".into()),
                        k.description
                    )?;
                }
            }
            Action::Revoke { access_key } => {
                c.revoke_access_key(&access_key).await.map_err(wire)?;
                println!("revoked {access_key}");
            }
        }
        Ok(())
    })
}

/// `2026-01-02T03:04:05Z`.
fn iso8601(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since the epoch (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Put `creds` into ~/.aws/credentials (AWS_SHARED_CREDENTIALS_FILE if set) as `[profile]`,
/// replacing a section of that name and keeping the rest; the file is replaced atomically and
/// is mode 0600. Runs as the user who ran the command.
fn write_aws_profile(profile: &str, creds: &Credentials) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if profile.is_empty() || profile.contains(['[', ']', '\n', '\r']) {
        bail!("--aws-profile {profile:?}: not a profile name");
    }
    let path = match std::env::var_os("AWS_SHARED_CREDENTIALS_FILE") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => {
            let home = std::env::var_os("HOME").context("HOME is not set")?;
            PathBuf::from(home).join(".aws").join("credentials")
        }
    };
    let dir = path.parent().context("credentials file has no directory")?;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let old = match std::fs::read_to_string(&path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let text = replace_section(
        &old,
        profile,
        &format!("aws_access_key_id = {}\naws_secret_access_key = {}\n", creds.access_key, creds.secret_key),
    );
    let tmp = dir.join(format!(".credentials.{}.tmp", std::process::id()));
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
    let r = f.write_all(text.as_bytes()).and_then(|_| f.sync_all()).and_then(|_| std::fs::rename(&tmp, &path));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r.with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// `ini` with section `[name]` replaced by `body` (appended when absent).
fn replace_section(ini: &str, name: &str, body: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    let header = format!("[{name}]");
    for line in ini.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            skipping = t == header;
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !out.is_empty() && !out.ends_with("\n\n") {
        out.push('\n');
    }
    out.push_str(&header);
    out.push('\n');
    out.push_str(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections() {
        let ini = "[default]\naws_access_key_id = A\n\n[mine]\naws_access_key_id = OLD\n[other]\nx = 1\n";
        let got = replace_section(ini, "mine", "aws_access_key_id = NEW\n");
        assert!(got.contains("[default]\naws_access_key_id = A"));
        assert!(got.contains("[other]\nx = 1"));
        assert!(!got.contains("OLD"));
        assert!(got.ends_with("[mine]\naws_access_key_id = NEW\n"));
        assert_eq!(replace_section("", "p", "k = v\n"), "[p]\nk = v\n");
    }

    #[test]
    fn dates() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601(UNIX_EPOCH + Duration::from_secs(1_700_000_000)), "2023-11-14T22:13:20Z");
    }
}
