//! TLS for the binary protocol over TCP (`tls://host:port`): rustls with the ring provider.
//!
//! The protocol's reader and writer work on raw socket descriptors (vectored non-blocking
//! writes, `sendfile`, peer checks with `recv(MSG_PEEK)`), which a user-space TLS stream does not
//! offer, and this kernel has no kTLS. So the TLS session runs in a relay task: it holds the TCP
//! connection and one end of a Unix socket pair, and the connection is served over the other
//! end exactly as a Unix-socket connection, except that it never passes descriptors and never
//! trusts the peer's kernel credentials (the pair's peer is the gateway itself). The cost is one
//! more copy of every byte through the pair, next to the encryption itself (measured in
//! `docs/PERFORMANCE.md`).

use std::io;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};

/// ALPN protocol name of the binary protocol over TLS.
pub const ALPN: &[u8] = b"s3hpc-wire";

/// Relay buffer per direction: a DATA frame (1 MiB by default) crosses in a few reads.
const RELAY_BUF: usize = 256 << 10;

/// The server configuration for `tls://` listeners: `base` (certificate resolver, versions) with
/// the binary protocol's ALPN name instead of HTTP's.
pub fn server_config(base: &rustls::ServerConfig) -> Arc<rustls::ServerConfig> {
    let mut cfg = base.clone();
    cfg.alpn_protocols = vec![ALPN.to_vec()];
    Arc::new(cfg)
}

/// Finish the TLS handshake of an accepted connection within `timeout` and start its relay.
pub(crate) async fn accept(
    tcp: TcpStream,
    cfg: Arc<rustls::ServerConfig>,
    timeout: Duration,
) -> io::Result<UnixStream> {
    let acceptor = tokio_rustls::TlsAcceptor::from(cfg);
    let tls = tokio::time::timeout(timeout, acceptor.accept(tcp))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))??;
    relay(tls)
}

/// Connect to `addr` (`host:port`) over TLS, checking the server's certificate against the
/// system's roots plus the PEM bundle `ca_bundle`, and start the relay.
pub(crate) async fn connect(addr: &str, ca_bundle: Option<&Path>) -> io::Result<UnixStream> {
    let cfg = client_config(ca_bundle)?;
    let name = ServerName::try_from(host_of(addr).to_string())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("tls://{addr}: {e}")))?;
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let tls = tokio_rustls::TlsConnector::from(cfg).connect(name, tcp).await?;
    relay(tls)
}

/// The host part of `host:port`, `[v6]:port` or a bare host.
fn host_of(addr: &str) -> &str {
    if let Some(rest) = addr.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match addr.rsplit_once(':') {
        Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => addr,
    }
}

/// Client configurations built so far, by CA bundle.
type ConfigCache = std::sync::Mutex<Vec<(Option<std::path::PathBuf>, Arc<rustls::ClientConfig>)>>;

/// The client configuration for `ca_bundle` (one per process in practice).
fn client_config(ca_bundle: Option<&Path>) -> io::Result<Arc<rustls::ClientConfig>> {
    static CACHE: OnceLock<ConfigCache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = ca_bundle.map(Path::to_path_buf);
    if let Some((_, c)) = cache.lock().unwrap().iter().find(|(k, _)| *k == key) {
        return Ok(c.clone());
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    if let Some(path) = ca_bundle {
        let bad = |e: &dyn std::fmt::Display| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("CA bundle {}: {e}", path.display()))
        };
        let mut n = 0;
        for cert in CertificateDer::pem_file_iter(path).map_err(|e| bad(&e))? {
            roots.add(cert.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
            n += 1;
        }
        if n == 0 {
            return Err(bad(&"no PEM certificate in it"));
        }
    }
    if roots.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no trusted CA certificates for tls://: the system has none; set AWS_CA_BUNDLE to a PEM bundle",
        ));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![ALPN.to_vec()];
    let cfg = Arc::new(cfg);
    cache.lock().unwrap().push((key, cfg.clone()));
    Ok(cfg)
}

/// Move bytes between the TLS session and a new Unix socket pair on a task of the current
/// runtime; the other end of the pair is returned. The task ends when both directions are done
/// (end of stream each way) or on the first error, which closes both.
fn relay<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(mut tls: S) -> io::Result<UnixStream> {
    let (mut near, far) = UnixStream::pair()?;
    crate::sys::tune_unix(&near);
    crate::sys::tune_unix(&far);
    tokio::spawn(async move {
        if let Err(e) = tokio::io::copy_bidirectional_with_sizes(&mut tls, &mut near, RELAY_BUF, RELAY_BUF).await {
            tracing::debug!(error = %e, "binary protocol TLS relay ended");
        }
    });
    Ok(far)
}

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn host_of_forms() {
        assert_eq!(host_of("example.org:9000"), "example.org");
        assert_eq!(host_of("127.0.0.1:1"), "127.0.0.1");
        assert_eq!(host_of("[::1]:9000"), "::1");
        assert_eq!(host_of("localhost"), "localhost");
    }
}
