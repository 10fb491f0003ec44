//! TLS for the TCP listener and the client (rustls with ring): loading PEM
//! certificates and keys, the server and client configurations, and a
//! listener that runs each handshake on its own task so a slow or silent
//! client never holds up the others.

use std::net::SocketAddr;
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
        /// `certificate`, `key` or `CA bundle`.
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

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = std::fs::read(path).map_err(|e| TlsError::File {
        what: "key",
        path: path.to_path_buf(),
        why: e.to_string(),
    })?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| TlsError::File {
        what: "key",
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
    let key = private_key(key)?;
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
/// given, else the system's roots.
///
/// # Errors
/// [`TlsError`] naming the file; no usable system roots.
pub fn client_config(ca: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, TlsError> {
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
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A TCP listener that hands out TLS streams. Handshakes run on their own
/// tasks with [`HANDSHAKE_TIMEOUT`]; a failed one is logged and dropped.
pub struct TlsListener {
    streams: tokio::sync::mpsc::Receiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        SocketAddr,
    )>,
    local: SocketAddr,
}

impl TlsListener {
    /// Starts accepting on `listener` (call inside the runtime).
    ///
    /// # Errors
    /// The listener's address cannot be read.
    pub fn new(
        listener: tokio::net::TcpListener,
        config: Arc<rustls::ServerConfig>,
    ) -> std::io::Result<TlsListener> {
        let local = listener.local_addr()?;
        let (sender, streams) = tokio::sync::mpsc::channel(64);
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        tokio::spawn(async move {
            loop {
                let (tcp, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::warn!(error = %e, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                if sender.is_closed() {
                    return;
                }
                let acceptor = acceptor.clone();
                let sender = sender.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(stream)) => {
                            let _ = sender.send((stream, peer)).await;
                        }
                        Ok(Err(e)) => {
                            tracing::info!(peer = %peer, error = %e, "TLS handshake failed");
                        }
                        Err(_) => {
                            tracing::info!(peer = %peer, "TLS handshake timed out");
                        }
                    }
                });
            }
        });
        Ok(TlsListener { streams, local })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.streams.recv().await {
            Some(accepted) => accepted,
            // The accept task ended (it never does while the listener
            // lives); wait for shutdown.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
