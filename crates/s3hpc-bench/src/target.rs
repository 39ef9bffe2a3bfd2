//! Target specifications (`--target`) and how each is opened as a [`DynStore`].

use std::path::PathBuf;
use std::sync::Arc;

use s3hpc_core::{Credentials, DynStore};

/// Credentials and connection options for network targets.
#[derive(Debug, Clone, Default)]
pub struct TargetOpts {
    pub credentials: Option<Credentials>,
    pub region: String,
    pub virtual_host: bool,
    /// Durability of the embedded posix backend (`strict`, `relaxed`, `none`); its default if unset.
    pub durability: Option<String>,
    /// ETag mode of the embedded posix backend (`md5`, `fast`).
    pub etag: Option<String>,
    /// I/O mode of the embedded posix backend (`offload`, `inline`).
    pub io: Option<String>,
    /// TLS of `https://` targets: extra CA bundle, or no verification at all.
    pub tls: s3hpc_client::TlsOptions,
}

/// The kinds of target a spec can name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetSpec {
    /// In-process memory backend (tests of the benchmark itself).
    Memory,
    /// In-process noop backend: GETs return `n` zero bytes, PUTs are discarded.
    Noop(usize),
    /// Raw POSIX baseline ([`crate::rawfs::RawFsStore`]).
    RawPosix(PathBuf),
    /// The embedded s3hpc posix backend.
    File(PathBuf),
    /// An S3 endpoint over HTTP(S).
    Http(String),
    /// The node-local binary protocol over a unix socket or TCP.
    Wire(String),
}

impl TargetSpec {
    pub fn parse(s: &str) -> anyhow::Result<TargetSpec> {
        let (scheme, rest) = s
            .split_once("://")
            .ok_or_else(|| anyhow::anyhow!("target {s:?}: expected SCHEME://..., e.g. http://127.0.0.1:9000, file:///data, posix:///scratch, memory://"))?;
        let path = |what: &str| -> anyhow::Result<PathBuf> {
            if rest.is_empty() {
                anyhow::bail!("target {s:?}: {what}:// needs a directory");
            }
            Ok(PathBuf::from(rest))
        };
        Ok(match scheme {
            "memory" | "mem" => TargetSpec::Memory,
            "noop" => TargetSpec::Noop(if rest.is_empty() {
                4096
            } else {
                crate::cli::parse_size(rest).map_err(|e| anyhow::anyhow!("target {s:?}: {e}"))? as usize
            }),
            "posix" => TargetSpec::RawPosix(path("posix")?),
            "file" => TargetSpec::File(path("file")?),
            "http" | "https" => TargetSpec::Http(s.to_string()),
            "unix" | "tcp" | "tls" => TargetSpec::Wire(s.to_string()),
            other => anyhow::bail!(
                "target {s:?}: unknown scheme {other:?} (memory, noop, posix, file, http, https, unix, tcp, tls)"
            ),
        })
    }
}

/// Open a target.
pub async fn open(spec: &str, opts: &TargetOpts) -> anyhow::Result<DynStore> {
    let creds = || {
        opts.credentials.clone().ok_or_else(|| {
            anyhow::anyhow!(
                "target {spec}: no credentials: give --access-key/--secret-key, set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or use --profile with ~/.aws/credentials"
            )
        })
    };
    Ok(match TargetSpec::parse(spec)? {
        TargetSpec::Memory => Arc::new(s3hpc_core::memory::MemoryStore::new()),
        TargetSpec::Noop(n) => Arc::new(s3hpc_core::noop::NoopStore::new(n)),
        TargetSpec::RawPosix(dir) => {
            Arc::new(crate::rawfs::RawFsStore::open(&dir).map_err(|e| anyhow::anyhow!("target {spec}: {e}"))?)
        }
        TargetSpec::File(root) => {
            let mut po = s3hpc_posix::PosixOptions::default();
            if let Some(d) = &opts.durability {
                po.durability = s3hpc_posix::Durability::parse(d)
                    .ok_or_else(|| anyhow::anyhow!("--durability {d:?}: expected strict, relaxed or none"))?;
            }
            if let Some(e) = &opts.etag {
                po.etag_mode = s3hpc_core::EtagMode::parse(e)
                    .ok_or_else(|| anyhow::anyhow!("--etag {e:?}: expected md5 or fast"))?;
            }
            if let Some(m) = &opts.io {
                po.io = s3hpc_posix::IoMode::parse(m)
                    .ok_or_else(|| anyhow::anyhow!("--io {m:?}: expected offload, inplace or inline"))?;
            }
            std::fs::create_dir_all(&root)
                .map_err(|e| anyhow::anyhow!("target {spec}: cannot create {}: {e}", root.display()))?;
            Arc::new(s3hpc_posix::PosixStore::open(&root, po).map_err(|e| anyhow::anyhow!("target {spec}: {e}"))?)
        }
        TargetSpec::Http(endpoint) => {
            let cfg = s3hpc_client::ClientConfig {
                endpoint,
                credentials: creds()?,
                region: if opts.region.is_empty() { "us-east-1".into() } else { opts.region.clone() },
                virtual_host: opts.virtual_host,
            };
            if opts.tls.insecure && spec.starts_with("https://") {
                eprintln!(
                    "s3hpc bench: WARNING: target {spec}: --insecure: the server's TLS certificate is NOT verified"
                );
            }
            Arc::new(
                s3hpc_client::S3Client::with_tls(cfg, &opts.tls).map_err(|e| anyhow::anyhow!("target {spec}: {e}"))?,
            )
        }
        TargetSpec::Wire(url) => {
            let wo = s3hpc_wire::ClientOptions { ca_bundle: opts.tls.ca_bundle.clone(), ..Default::default() };
            let c = s3hpc_wire::client::WireClient::connect_with(&url, creds()?, wo)
                .await
                .map_err(|e| anyhow::anyhow!("target {spec}: connect failed: {e}"))?;
            Arc::new(c)
        }
    })
}

/// Credentials given on the command line.
#[derive(Debug, Clone, Default)]
pub struct CredentialFlags {
    pub access_key: Option<String>,
    pub secret_key: Option<String>,
    pub session_token: Option<String>,
    pub profile: Option<String>,
}

impl CredentialFlags {
    /// [`resolve_credentials`] from this process's environment and files.
    pub fn resolve(&self) -> Option<Credentials> {
        resolve_credentials(
            self,
            |k| std::env::var(k).ok().filter(|v| !v.is_empty()),
            |p| std::fs::read_to_string(p).ok(),
        )
    }
}

/// The AWS CLI's order: key flags, then an explicit `--profile`, then the `AWS_*` key
/// variables, then the `AWS_PROFILE` (else `default`) profile of the credentials file.
/// `env` looks up a variable (None when unset or empty); `read` reads a file.
pub fn resolve_credentials(
    flags: &CredentialFlags,
    env: impl Fn(&str) -> Option<String>,
    read: impl Fn(&std::path::Path) -> Option<String>,
) -> Option<Credentials> {
    let from_profile = |profile: &str| {
        let file = env("AWS_SHARED_CREDENTIALS_FILE")
            .map(PathBuf::from)
            .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".aws/credentials")))?;
        profile_credentials(&read(&file)?, profile)
    };
    if let (Some(a), Some(s)) = (&flags.access_key, &flags.secret_key) {
        return Some(Credentials::new(a, s).with_session_token(flags.session_token.clone()));
    }
    if let Some(p) = &flags.profile {
        return from_profile(p);
    }
    if let (Some(a), Some(s)) = (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
        return Some(Credentials::new(a, s).with_session_token(env("AWS_SESSION_TOKEN")));
    }
    from_profile(&env("AWS_PROFILE").unwrap_or_else(|| "default".into()))
}

/// Read `aws_access_key_id` / `aws_secret_access_key` (and `aws_session_token`, if any) of
/// `profile` from an AWS credentials file.
pub fn profile_credentials(text: &str, profile: &str) -> Option<Credentials> {
    let mut cur = String::new();
    let (mut ak, mut sk, mut tok) = (None, None, None);
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            cur = name.trim().trim_start_matches("profile ").trim().to_string();
            continue;
        }
        if cur != profile {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            match k.trim() {
                "aws_access_key_id" => ak = Some(v.trim().to_string()),
                "aws_secret_access_key" => sk = Some(v.trim().to_string()),
                "aws_session_token" => tok = Some(v.trim().to_string()),
                _ => {}
            }
        }
    }
    Some(Credentials::new(ak?, sk?).with_session_token(tok))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_specs() {
        assert_eq!(TargetSpec::parse("memory://").unwrap(), TargetSpec::Memory);
        assert_eq!(TargetSpec::parse("noop://1KiB").unwrap(), TargetSpec::Noop(1024));
        assert_eq!(TargetSpec::parse("posix:///tmp/x").unwrap(), TargetSpec::RawPosix("/tmp/x".into()));
        assert_eq!(TargetSpec::parse("file://data").unwrap(), TargetSpec::File("data".into()));
        assert!(matches!(TargetSpec::parse("http://127.0.0.1:9000").unwrap(), TargetSpec::Http(_)));
        assert!(TargetSpec::parse("ftp://x").is_err());
        assert!(TargetSpec::parse("nothing").is_err());
        assert!(TargetSpec::parse("posix://").is_err());
    }

    #[test]
    fn credentials_file() {
        let text = "[default]\naws_access_key_id = A1\naws_secret_access_key=S1\n\n[profile other]\naws_access_key_id=A2\naws_secret_access_key=S2\n";
        assert_eq!(profile_credentials(text, "default").unwrap(), Credentials::new("A1", "S1"));
        assert_eq!(profile_credentials(text, "other").unwrap(), Credentials::new("A2", "S2"));
        assert!(profile_credentials(text, "none").is_none());
        let t = "[tmp]\naws_access_key_id=A3\naws_secret_access_key=S3\naws_session_token=T3\n";
        assert_eq!(profile_credentials(t, "tmp").unwrap().session_token.as_deref(), Some("T3"));
    }

    #[test]
    fn credential_precedence() {
        use std::collections::HashMap;
        let file = "[default]\naws_access_key_id=FD\naws_secret_access_key=SD\n\
                    [p]\naws_access_key_id=FP\naws_secret_access_key=SP\naws_session_token=TP\n";
        let resolve = |flags: CredentialFlags, vars: &[(&str, &str)]| {
            let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            resolve_credentials(
                &flags,
                |k| vars.get(k).cloned(),
                |p| (p == std::path::Path::new("/h/.aws/credentials")).then(|| file.to_string()),
            )
        };
        let env_keys =
            [("HOME", "/h"), ("AWS_ACCESS_KEY_ID", "EA"), ("AWS_SECRET_ACCESS_KEY", "ES"), ("AWS_PROFILE", "p")];
        // Key flags beat everything.
        let flags = CredentialFlags {
            access_key: Some("KA".into()),
            secret_key: Some("KS".into()),
            profile: Some("p".into()),
            ..Default::default()
        };
        assert_eq!(resolve(flags, &env_keys).unwrap().access_key, "KA");
        // An explicit --profile beats the AWS_* key variables.
        let c = resolve(CredentialFlags { profile: Some("p".into()), ..Default::default() }, &env_keys).unwrap();
        assert_eq!((c.access_key.as_str(), c.session_token.as_deref()), ("FP", Some("TP")));
        // The key variables beat AWS_PROFILE, and carry AWS_SESSION_TOKEN.
        let mut v = env_keys.to_vec();
        v.push(("AWS_SESSION_TOKEN", "ET"));
        let c = resolve(CredentialFlags::default(), &v).unwrap();
        assert_eq!((c.access_key.as_str(), c.session_token.as_deref()), ("EA", Some("ET")));
        // No keys: AWS_PROFILE, else default; a missing profile gives nothing.
        assert_eq!(
            resolve(CredentialFlags::default(), &[("HOME", "/h"), ("AWS_PROFILE", "p")]).unwrap().access_key,
            "FP"
        );
        assert_eq!(resolve(CredentialFlags::default(), &[("HOME", "/h")]).unwrap().access_key, "FD");
        assert!(resolve(CredentialFlags::default(), &[("HOME", "/h"), ("AWS_PROFILE", "zz")]).is_none());
        // AWS_SHARED_CREDENTIALS_FILE moves the file.
        assert!(
            resolve(
                CredentialFlags::default(),
                &[("HOME", "/x"), ("AWS_SHARED_CREDENTIALS_FILE", "/h/.aws/credentials")]
            )
            .is_some()
        );
    }
}
