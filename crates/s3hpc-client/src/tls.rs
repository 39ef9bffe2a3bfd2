//! TLS for `https://` endpoints: rustls (ring provider), HTTP/1.1, keep-alive through the same pool.
//!
//! Trust: the system's root certificates (`rustls-native-certs`: `SSL_CERT_FILE` / `SSL_CERT_DIR`
//! or the distribution's bundle) plus the certificates of an optional PEM CA bundle, the way the
//! AWS CLI takes `--ca-bundle` / `AWS_CA_BUNDLE`. `insecure` turns verification off entirely.
//!
//! Virtual-host style over TLS names the bucket host (`bucket.host`) in the request URI, so the
//! SNI and the certificate check use it (as S3 clients do: a `*.host` certificate); the
//! connection still goes to the endpoint's address ([`VhostResolver`]), so no wildcard DNS is
//! needed. Names under `.localhost` resolve to the loopback addresses (RFC 6761, as curl and
//! browsers do), so `https://s3.localhost:PORT` with a `*.s3.localhost` certificate works locally.

use std::future::Future;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use s3hpc_core::{Error, Result};

/// TLS options of an `https://` endpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// A PEM file of CA certificates trusted in addition to the system's roots.
    pub ca_bundle: Option<PathBuf>,
    /// Accept any server certificate (no verification at all): for tests only.
    pub insecure: bool,
}

impl TlsOptions {
    /// The defaults plus `AWS_CA_BUNDLE` from the environment, as the AWS CLI reads it.
    pub fn from_env() -> TlsOptions {
        TlsOptions {
            ca_bundle: std::env::var_os("AWS_CA_BUNDLE").filter(|v| !v.is_empty()).map(PathBuf::from),
            insecure: false,
        }
    }
}

pub(crate) type Connector = hyper_rustls::HttpsConnector<crate::spread::Spread<HttpConnector<VhostResolver>>>;

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Read every certificate of a PEM bundle.
fn read_bundle(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let bad = |e: &dyn std::fmt::Display| Error::invalid_argument(format!("CA bundle {}: {e}", path.display()));
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(&e))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no PEM certificate in it"));
    }
    Ok(certs)
}

/// The rustls configuration for `opts`; `https` false builds one that is never used (no roots).
fn client_config(opts: &TlsOptions, https: bool) -> Result<rustls::ClientConfig> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::internal(format!("TLS setup: {e}")))?;
    let cfg = if opts.insecure {
        builder.dangerous().with_custom_certificate_verifier(Arc::new(NoVerify(provider()))).with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        if https {
            // Unreadable entries of the system store are skipped, as other clients do; an
            // unusable explicit bundle is an error.
            let native = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(native.certs);
            if let Some(p) = &opts.ca_bundle {
                let (added, ignored) = roots.add_parsable_certificates(read_bundle(p)?);
                if added == 0 {
                    return Err(Error::invalid_argument(format!(
                        "CA bundle {}: none of its {ignored} certificates is usable",
                        p.display()
                    )));
                }
            }
            if roots.is_empty() {
                return Err(Error::invalid_argument(
                    "no trusted CA certificates: the system has none; give a CA bundle (--ca-bundle or AWS_CA_BUNDLE)",
                ));
            }
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    Ok(cfg)
}

/// The connector of a client: plain TCP for `http://`, rustls over it for `https://` (ALPN
/// `http/1.1`, set by the builder).
pub(crate) fn connector(
    tcp: crate::spread::Spread<HttpConnector<VhostResolver>>,
    opts: &TlsOptions,
    https: bool,
) -> Result<Connector> {
    let cfg = client_config(opts, https)?;
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(cfg)
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp))
}

/// DNS for the client: `bucket.HOST` (virtual-host style) resolves as the endpoint's `HOST`;
/// `*.localhost` is loopback (RFC 6761 section 6.3).
#[derive(Clone, Debug)]
pub(crate) struct VhostResolver {
    /// `.host`, lower case; None when the client is not virtual-host style.
    suffix: Option<Arc<str>>,
    base: Arc<str>,
}

impl VhostResolver {
    pub(crate) fn new(host: &str, virtual_host: bool) -> Self {
        let host = host.to_ascii_lowercase();
        VhostResolver { suffix: virtual_host.then(|| format!(".{host}").into()), base: host.into() }
    }
}

type Addrs = std::vec::IntoIter<SocketAddr>;

impl tower_service::Service<Name> for VhostResolver {
    type Response = Addrs;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Addrs>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let name = name.as_str().to_ascii_lowercase();
        let host: String = match &self.suffix {
            Some(s) if name.ends_with(&**s) => self.base.to_string(),
            _ => name,
        };
        if host.ends_with(".localhost") {
            let port = 0;
            let v =
                vec![SocketAddr::from(([127, 0, 0, 1], port)), SocketAddr::from(([0u16, 0, 0, 0, 0, 0, 0, 1], port))];
            return Box::pin(std::future::ready(Ok(v.into_iter())));
        }
        Box::pin(async move {
            let h = host.clone();
            tokio::task::spawn_blocking(move || (h.as_str(), 0).to_socket_addrs().map(|a| a.collect::<Vec<_>>()))
                .await
                .map_err(io::Error::other)?
                .map(|v| v.into_iter())
                .map_err(|e| io::Error::new(e.kind(), format!("cannot resolve {host}: {e}")))
        })
    }
}

/// A hint for a TLS failure found in an error's source chain, or None when it is not one.
pub(crate) fn failure_hint(e: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    // io::Error hides what it wraps from `source()` (it returns the inner error's source), and
    // the connector wraps the handshake's io::Error in another: look inside each layer.
    let mut src = Some(e);
    while let Some(s) = src {
        let mut cur: &(dyn std::error::Error + 'static) = s;
        while let Some(inner) = cur.downcast_ref::<io::Error>().and_then(|io| io.get_ref()) {
            cur = inner;
        }
        if let Some(t) = cur.downcast_ref::<rustls::Error>() {
            return Some(match t {
                rustls::Error::InvalidCertificate(_) => {
                    "TLS: the server's certificate is not trusted for this name (trust its CA with a CA bundle: \
                     --ca-bundle or AWS_CA_BUNDLE)"
                }
                rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
                    "TLS: the server did not answer in TLS (is it a plain http:// endpoint?)"
                }
                _ => "TLS handshake failed",
            });
        }
        src = s.source();
    }
    None
}

/// `insecure`: accepts every certificate, still checks the handshake signatures.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl NoVerify {
    fn algs(&self) -> &WebPkiSupportedAlgorithms {
        &self.0.signature_verification_algorithms
    }
}

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, self.algs())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, self.algs())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs().supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_bundles_are_clear_errors() {
        let dir = std::env::temp_dir().join(format!("s3hpc-client-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.pem");
        let e = client_config(&TlsOptions { ca_bundle: Some(missing.clone()), insecure: false }, true).unwrap_err();
        assert!(e.to_string().contains("missing.pem"), "{e}");
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = client_config(&TlsOptions { ca_bundle: Some(empty), insecure: false }, true).unwrap_err();
        assert!(e.to_string().contains("no PEM certificate"), "{e}");
        // Not read for http:// endpoints.
        assert!(client_config(&TlsOptions { ca_bundle: Some(missing), insecure: false }, false).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tls_failures_get_a_hint() {
        let cert = io::Error::other(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer));
        assert!(failure_hint(&cert).unwrap().contains("CA bundle"));
        let plain = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
        );
        assert!(failure_hint(&plain).unwrap().contains("plain http://"));
        assert!(failure_hint(&io::Error::other("connection refused")).is_none());
        // Nested as the connector does.
        assert!(failure_hint(&io::Error::other(cert)).unwrap().contains("CA bundle"));
    }

    #[test]
    fn vhost_resolver_maps_bucket_hosts() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let resolve = |base: &str, vhost: bool, name: &str| -> io::Result<Vec<SocketAddr>> {
            let mut r = VhostResolver::new(base, vhost);
            rt.block_on(tower_service::Service::call(&mut r, name.parse::<Name>().unwrap())).map(|a| a.collect())
        };
        let loopback = |v: Vec<SocketAddr>| !v.is_empty() && v.iter().all(|a| a.ip().is_loopback());
        assert!(loopback(resolve("LOCALHOST", true, "bkt.localhost").unwrap()));
        assert!(loopback(resolve("s3.localhost", true, "bkt.s3.localhost").unwrap()));
        assert!(loopback(resolve("s3.localhost", false, "s3.localhost").unwrap()));
        // Only the endpoint's own subdomains are mapped.
        let e = resolve("localhost", true, "bkt.invalid").unwrap_err();
        assert!(e.to_string().contains("bkt.invalid"), "{e}");
    }
}
