//! TLS for the TCP listener and the client (rustls with ring): loading PEM
//! certificates and keys, the server and client configurations (the
//! client's certificate for a daemon that demands one, and whether one
//! did). The listener runs each handshake on its connection's own task
//! (`api::conn`), so a slow or silent client never holds up the others.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// How long a client has to finish its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A certificate, key or CA file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The file cannot be read or holds no PEM item of the kind needed.
    #[error("{what} {}: {why}", path.display())]
    File {
        /// `certificate`, `key`, `client certificate`, `client key` or
        /// `CA bundle`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// rustls refused the combination (a key that does not match the
    /// certificate, an unusable CA).
    #[error("TLS configuration: {0}")]
    Config(String),
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certificates(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bad = |why: String| TlsError::File {
        what,
        path: path.to_path_buf(),
        why,
    };
    let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("is not PEM: {e}")))?;
    if certs.is_empty() {
        return Err(bad("holds no PEM CERTIFICATE".into()));
    }
    Ok(certs)
}

fn private_key(what: &'static str, path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = std::fs::read(path).map_err(|e| TlsError::File {
        what,
        path: path.to_path_buf(),
        why: e.to_string(),
    })?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| TlsError::File {
        what,
        path: path.to_path_buf(),
        why: format!("holds no PEM private key: {e}"),
    })
}

fn roots(path: &Path) -> Result<rustls::RootCertStore, TlsError> {
    let mut store = rustls::RootCertStore::empty();
    for cert in certificates("CA bundle", path)? {
        store.add(cert).map_err(|e| TlsError::File {
            what: "CA bundle",
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
    }
    Ok(store)
}

/// The server's TLS configuration: `cert` (PEM chain, leaf first) and
/// `key` (PEM, PKCS#8, PKCS#1 or SEC1); with `client_ca`, clients must
/// present a certificate that CA signed. HTTP/1.1 only, TLS 1.2 and 1.3.
///
/// # Errors
/// [`TlsError`] naming the file, or a key that does not match.
pub fn server_config(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let chain = certificates("certificate", cert)?;
    let key = private_key("key", key)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let builder = match client_ca {
        Some(ca) => {
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots(ca)?),
                provider(),
            )
            .build()
            .map_err(|e| TlsError::Config(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The client's TLS configuration: trusts the certificates in `ca` when
/// given, else the system's roots; presents no client certificate.
///
/// # Errors
/// [`TlsError`] naming the file; no usable system roots.
pub fn client_config(ca: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    client_tls(ca, None).map(|tls| tls.config)
}

/// The client's certificate for a daemon that asks for one
/// (`serve --tls-client-ca`), and whether a daemon asked: a daemon that
/// requires a certificate refuses a client without one only after the
/// client's side of the handshake is done, often by closing the
/// connection, so what the client saw alone cannot say why.
#[derive(Debug)]
pub struct ClientCertificate {
    key: Option<Arc<rustls::sign::CertifiedKey>>,
    requested: std::sync::atomic::AtomicBool,
}

impl ClientCertificate {
    /// Whether a certificate is configured.
    pub fn present(&self) -> bool {
        self.key.is_some()
    }

    /// Whether a daemon asked this client for a certificate.
    pub fn requested(&self) -> bool {
        self.requested.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl rustls::client::ResolvesClientCert for ClientCertificate {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        self.requested
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.key.clone()
    }

    fn has_certs(&self) -> bool {
        self.key.is_some()
    }
}

/// A client's TLS: the configuration and the certificate it presents.
#[derive(Debug, Clone)]
pub struct ClientTls {
    /// The rustls configuration.
    pub config: Arc<rustls::ClientConfig>,
    /// The client certificate (maybe none) and whether a daemon asked.
    pub certificate: Arc<ClientCertificate>,
}

/// The client's TLS: trusts `ca` (else the system's roots) and, with
/// `identity` (certificate chain PEM, leaf first; private key PEM),
/// presents that certificate to a daemon that asks for one.
///
/// # Errors
/// [`TlsError`] naming the file; a key that does not match the
/// certificate; no usable system roots.
pub fn client_tls(
    ca: Option<&Path>,
    identity: Option<(&Path, &Path)>,
) -> Result<ClientTls, TlsError> {
    let key =
        match identity {
            Some((cert, key)) => {
                let chain = certificates("client certificate", cert)?;
                let der = private_key("client key", key)?;
                let certified = rustls::sign::CertifiedKey::from_der(chain, der, &provider())
                    .map_err(|e| TlsError::File {
                        what: "client key",
                        path: key.to_path_buf(),
                        why: format!("cannot be used with {}: {e}", cert.display()),
                    })?;
                Some(Arc::new(certified))
            }
            None => None,
        };
    let certificate = Arc::new(ClientCertificate {
        key,
        requested: std::sync::atomic::AtomicBool::new(false),
    });
    let store = match ca {
        Some(path) => roots(path)?,
        None => {
            let mut store = rustls::RootCertStore::empty();
            let found = rustls_native_certs::load_native_certs();
            for cert in found.certs {
                let _ = store.add(cert);
            }
            if store.is_empty() {
                return Err(TlsError::Config(
                    "no system root certificates found; pass --tls-ca".into(),
                ));
            }
            store
        }
    };
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_root_certificates(store)
        .with_client_cert_resolver(certificate.clone());
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(ClientTls {
        config: Arc::new(config),
        certificate,
    })
}
