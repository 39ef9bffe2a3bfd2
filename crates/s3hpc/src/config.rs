//! `[serve]` in the `--config` TOML file: any `serve` setting as a key (the flag's long name,
//! `-` or `_`), for example `listen = "0.0.0.0:9000"`, `binary = ["unix:///run/s3hpc.sock"]`,
//! `access-log = true`. A flag given on the command line (or its environment variable) wins over
//! the file. The settings become command-line arguments before clap parses them, so they are
//! checked exactly as flags are.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{Context, bail};
use clap::ArgAction;
use clap::parser::ValueSource;

/// The `[serve]` table read at start (to tell, on SIGHUP, which changes need a restart).
static AT_START: OnceLock<(PathBuf, toml::Table)> = OnceLock::new();

/// `[serve]` keys the command line or the environment set (the file's value does not apply).
static OVERRIDDEN: OnceLock<Vec<String>> = OnceLock::new();

/// Settings SIGHUP applies from the file (the others need a restart).
const LIVE: &[&str] = &["log-level"];

fn serve_table(path: &Path) -> anyhow::Result<Option<toml::Table>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let table: toml::Table = toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    match table.get("serve") {
        None => Ok(None),
        Some(toml::Value::Table(t)) => Ok(Some(t.clone())),
        Some(_) => bail!("{}: `serve` must be a table ([serve])", path.display()),
    }
}

/// Settings whose value is a listening address (`HOST:PORT`).
const ADDRESSES: &[&str] = &["listen", "admin-listen", "console-listen"];

/// An address setting must be a `HOST:PORT` string: a bare number (`listen = 9630`) or a string
/// without a port is refused here, naming the key, rather than failing at bind time.
fn check_address(path: &Path, key: &str, v: &toml::Value) -> anyhow::Result<()> {
    match v {
        toml::Value::String(s)
            if s.rsplit_once(':').is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok()) =>
        {
            Ok(())
        }
        toml::Value::Integer(n) => bail!(
            "{}: [serve] {key}: expected an address string such as \"0.0.0.0:{n}\" (HOST:PORT), not the number {n}",
            path.display()
        ),
        other => bail!("{}: [serve] {key}: expected an address string HOST:PORT, not {other}", path.display()),
    }
}

fn scalar(path: &Path, key: &str, v: &toml::Value) -> anyhow::Result<String> {
    Ok(match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        _ => bail!("{}: [serve] {key}: expected a string, number or boolean", path.display()),
    })
}

/// `argv` with the `[serve]` settings of `serve --config FILE` appended as arguments, except the
/// ones the command line (or the environment) already sets. Any other command, or a file that
/// cannot be read, leaves `argv` as it is (`serve` reports the file's problem itself).
pub fn with_serve_table(cmd: clap::Command, argv: Vec<OsString>) -> anyhow::Result<Vec<OsString>> {
    let Ok(m) = cmd.clone().try_get_matches_from(&argv) else { return Ok(argv) };
    let Some(("serve", sm)) = m.subcommand() else { return Ok(argv) };
    let Some(path) = sm.get_one::<PathBuf>("config").cloned() else { return Ok(argv) };
    let Ok(Some(serve)) = serve_table(&path) else { return Ok(argv) };
    let scmd = cmd.find_subcommand("serve").context("no serve subcommand")?.clone();
    let mut out = argv;
    let mut root = None;
    let mut overridden = Vec::new();
    for (key, value) in &serve {
        let name = key.replace('_', "-");
        let arg = scmd
            .get_arguments()
            .find(|a| a.get_long() == Some(name.as_str()) || (a.is_positional() && a.get_id().as_str() == name))
            .with_context(|| format!("{}: [serve] has no setting `{key}` (see docs/DEPLOY.md)", path.display()))?;
        let id = arg.get_id().as_str();
        if matches!(id, "config" | "help") {
            bail!("{}: [serve] cannot set `{key}`", path.display());
        }
        // Checked even when the command line sets it: the file is wrong either way.
        if ADDRESSES.contains(&name.as_str()) {
            check_address(&path, key, value)?;
        }
        if matches!(sm.value_source(id), Some(ValueSource::CommandLine | ValueSource::EnvVariable)) {
            overridden.push(name);
            continue;
        }
        let values = match value {
            toml::Value::Array(a) => a.iter().map(|v| scalar(&path, key, v)).collect::<anyhow::Result<Vec<_>>>()?,
            v => vec![scalar(&path, key, v)?],
        };
        if arg.is_positional() {
            root = values.into_iter().next();
            continue;
        }
        match arg.get_action() {
            ArgAction::SetTrue => match value {
                toml::Value::Boolean(true) => out.push(format!("--{name}").into()),
                toml::Value::Boolean(false) => {}
                _ => bail!("{}: [serve] {key}: expected true or false", path.display()),
            },
            _ => {
                for v in values {
                    out.push(format!("--{name}").into());
                    out.push(v.into());
                }
            }
        }
    }
    if let Some(r) = root {
        out.push(r.into());
    }
    let _ = AT_START.set((path, serve));
    let _ = OVERRIDDEN.set(overridden);
    Ok(out)
}

/// On SIGHUP: apply a changed `log-level`, and name the other `[serve]` settings that changed
/// since start: they need a restart (users, TLS files and the files' contents are reloaded;
/// addresses, backend and limits are not).
pub fn warn_changes_need_restart() {
    let Some((path, start)) = AT_START.get() else { return };
    let now = match serve_table(path) {
        Ok(t) => t.unwrap_or_default(),
        Err(e) => {
            tracing::error!("[serve] of {} not read: {e:#}", path.display());
            return;
        }
    };
    let mut changed: Vec<&str> = start.keys().chain(now.keys()).map(String::as_str).collect();
    changed.sort_unstable();
    changed.dedup();
    changed.retain(|k| start.get(*k) != now.get(*k));
    let overridden = OVERRIDDEN.get().map(Vec::as_slice).unwrap_or_default();
    changed.retain(|k| {
        let name = k.replace('_', "-");
        if !LIVE.contains(&name.as_str()) {
            return true;
        }
        if overridden.contains(&name) {
            tracing::warn!("[serve] {k} changed in {}, but the command line or RUST_LOG sets it", path.display());
        } else if name == "log-level" {
            // Taken out of the file: the default comes back at the next restart.
            let Some(toml::Value::String(level)) = now.get(*k) else { return true };
            match crate::admin::set_log_level(level) {
                Ok(()) => tracing::warn!("log level now {level:?} (from {}, SIGHUP)", path.display()),
                Err(e) => tracing::error!("[serve] log-level {level:?} not applied: {e}"),
            }
        }
        false
    });
    if !changed.is_empty() {
        tracing::warn!(
            "[serve] settings changed in {} ({}): they apply at the next restart, not now",
            path.display(),
            changed.join(", ")
        );
    }
}
