//! A small blocking, typed client for the API: one method per endpoint,
//! which builds the request (path segments percent-encoded), sends it on
//! one HTTP/1.1 connection over the unix socket or TCP (with the bearer
//! token when one is given) and decodes the answer into the [`wire`]
//! types. It adds no timeout beyond the connect timeout; it waits out a
//! busy daemon (`429`, or `503` with `Retry-After`) only when asked to
//! with [`Client::with_retries`] (module `retry` says when and why that is
//! safe), as the CLI does.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode, header};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;

use super::address::Address;
use super::retry::{self, Retries, Wait};
use super::wire::{self, ErrorBody, ErrorCode};

/// How long to wait for the daemon to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a request did not get an answer, or got an error answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The async runtime could not start.
    #[error("cannot start the client runtime")]
    Runtime(#[source] std::io::Error),
    /// No daemon answers at the address (no socket file, connection
    /// refused, timed out). One line on purpose: the CLI prints it alone
    /// and exits 2.
    #[error(
        "cannot reach the capstan daemon at {address} ({}); start it with 'capstan serve' or pass --server",
        reason_of(error)
    )]
    Connect {
        /// The address.
        address: String,
        /// The error.
        error: std::io::Error,
    },
    /// The TLS handshake with the daemon failed (an untrusted or
    /// mismatched certificate, or a plain-HTTP daemon).
    #[error("TLS with the daemon at {address} failed: {why}")]
    Tls {
        /// The address.
        address: String,
        /// The handshake error, or the configuration that could not load.
        why: String,
    },
    /// The HTTP exchange failed.
    #[error("talking to the daemon at {address} failed")]
    Http {
        /// The address.
        address: String,
        /// The error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The daemon refused the request or the operation failed.
    #[error("{message}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The daemon's stable code ([`ErrorCode::Unknown`] when its
        /// answer had none).
        code: ErrorCode,
        /// The daemon's one-line error.
        message: String,
    },
    /// The daemon's answer was not the JSON expected.
    #[error("the daemon's answer is not the expected JSON")]
    Decode(#[source] serde_json::Error),
}

impl ClientError {
    /// The daemon's code, for an error answer.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Status { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether no daemon answered at all (as opposed to one refusing).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, ClientError::Connect { .. })
    }
}

/// A short lowercase reason for a failed connect, e.g. `no such file`.
fn reason_of(error: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match error.kind() {
        ErrorKind::NotFound => "no such file".into(),
        ErrorKind::ConnectionRefused => "connection refused".into(),
        ErrorKind::PermissionDenied => "permission denied".into(),
        ErrorKind::TimedOut => "timed out".into(),
        _ => error.to_string(),
    }
}

/// Percent-encodes one path segment: everything but the unreserved
/// characters of RFC 3986 (`A-Z a-z 0-9 - . _ ~`), so a name with `/`,
/// `?`, `#`, `%` or spaces stays one segment; the segments `.` and `..`
/// are encoded whole so no one normalizes them away.
pub fn encode_segment(segment: &str) -> String {
    if segment == "." || segment == ".." {
        return segment.replace('.', "%2E");
    }
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `/v1/apps/{app}` and what follows it, encoded.
fn app_path(app: &str, rest: &[&str]) -> String {
    let mut path = format!("/v1/apps/{}", encode_segment(app));
    for segment in rest {
        path.push('/');
        path.push_str(&encode_segment(segment));
    }
    path
}

/// A raw answer.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status.
    pub status: StatusCode,
    /// The body.
    pub body: Bytes,
    /// The `Retry-After` of the answer, in whole seconds.
    pub retry_after: Option<Duration>,
}

/// What a waiting client tells its user.
type Notice = std::sync::Arc<dyn Fn(&Wait) + Send + Sync>;

/// A client for one daemon.
pub struct Client {
    address: Address,
    token: Option<String>,
    runtime: tokio::runtime::Runtime,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    certificate: Option<std::sync::Arc<super::tls::ClientCertificate>>,
    retries: Retries,
    notice: Option<Notice>,
}

impl Client {
    /// A client for `address`, sending `token` as a bearer token if given.
    ///
    /// # Errors
    /// [`ClientError::Runtime`].
    pub fn new(address: Address, token: Option<String>) -> Result<Client, ClientError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(ClientError::Runtime)?;
        Ok(Client {
            address,
            token,
            runtime,
            tls: None,
            certificate: None,
            retries: Retries::none(),
            notice: None,
        })
    }

    /// Waits out a busy daemon (`429`, or `503` with `Retry-After`) within
    /// `retries`, calling `notice` before each wait; without this a client
    /// answers such a status at once.
    #[must_use]
    pub fn with_retries(
        mut self,
        retries: Retries,
        notice: impl Fn(&Wait) + Send + Sync + 'static,
    ) -> Client {
        self.retries = retries;
        self.notice = Some(std::sync::Arc::new(notice));
        self
    }

    /// Speaks TLS to an `https://` address, trusting `config`'s roots
    /// ([`super::tls::client_config`]); without it an `https://` address
    /// uses the system's roots.
    #[must_use]
    pub fn with_tls(mut self, config: std::sync::Arc<rustls::ClientConfig>) -> Client {
        self.tls = Some(config);
        self
    }

    /// [`Client::with_tls`], with the client certificate it presents to a
    /// daemon that asks for one ([`super::tls::client_tls`]); a daemon
    /// that refuses the client for want of one gets a [`ClientError::Tls`]
    /// saying so.
    #[must_use]
    pub fn with_client_tls(mut self, tls: super::tls::ClientTls) -> Client {
        self.tls = Some(tls.config);
        self.certificate = Some(tls.certificate);
        self
    }

    /// The daemon's address.
    pub fn address(&self) -> &Address {
        &self.address
    }

    // ---- one method per endpoint ----

    /// `GET /v1/health`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn health(&self) -> Result<wire::Health, ClientError> {
        self.call(Method::GET, "/v1/health", None)
    }

    /// `GET /metrics`: the Prometheus text.
    ///
    /// # Errors
    /// As [`Client::call`], [`ClientError::Decode`] when it is not UTF-8.
    pub fn metrics(&self) -> Result<String, ClientError> {
        let response = self.checked(Method::GET, "/metrics", None)?;
        String::from_utf8(response.body.to_vec()).map_err(|e| {
            ClientError::Decode(serde::de::Error::custom(format!(
                "the metrics are not UTF-8: {e}"
            )))
        })
    }

    /// `GET /v1/apps`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn list_apps(&self) -> Result<Vec<wire::AppRecord>, ClientError> {
        self.call(Method::GET, "/v1/apps", None)
    }

    /// `POST /v1/apps`: uploads a bundle (`.tgz` bytes).
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn upload(&self, bundle: Vec<u8>) -> Result<wire::AppRecord, ClientError> {
        self.call(
            Method::POST,
            "/v1/apps",
            Some((wire::BUNDLE_CONTENT_TYPE, bundle)),
        )
    }

    /// `POST /v1/apps` of a bundle fetched from `source`
    /// (`oci://HOST/REPO@sha256:…`), which the app's version records.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn upload_from(
        &self,
        bundle: Vec<u8>,
        source: &str,
    ) -> Result<wire::AppRecord, ClientError> {
        self.call_with_source(
            Method::POST,
            "/v1/apps",
            (wire::BUNDLE_CONTENT_TYPE, bundle),
            source,
        )
    }

    /// `POST /v1/updates` of a bundle fetched from `source`, as
    /// [`Client::upload_from`].
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn update_from(
        &self,
        bundle: Vec<u8>,
        query: &wire::UpdateQuery,
        source: &str,
    ) -> Result<wire::Started, ClientError> {
        self.call_with_source(
            Method::POST,
            &format!("/v1/updates{}", query.to_query()),
            (wire::BUNDLE_CONTENT_TYPE, bundle),
            source,
        )
    }

    fn call_with_source<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: (&str, Vec<u8>),
        source: &str,
    ) -> Result<T, ClientError> {
        let response =
            self.runtime
                .block_on(self.exchange_with(method, path, Some(body), Some(source)))?;
        let response = self.status_checked(response)?;
        serde_json::from_slice(&response.body).map_err(ClientError::Decode)
    }

    /// `GET /v1/apps/{app}`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn show_app(&self, app: &str) -> Result<wire::AppDetails, ClientError> {
        self.call(Method::GET, &app_path(app, &[]), None)
    }

    /// `DELETE /v1/apps/{app}`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn delete(&self, app: &str) -> Result<(), ClientError> {
        self.checked(Method::DELETE, &app_path(app, &[]), None)
            .map(drop)
    }

    /// `POST /v1/apps/{app}/apply`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn apply(
        &self,
        app: &str,
        request: &wire::ApplyRequest,
    ) -> Result<wire::Started, ClientError> {
        self.call_json(Method::POST, &app_path(app, &["apply"]), request)
    }

    /// `POST /v1/apps/{app}/remove`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn remove(
        &self,
        app: &str,
        request: &wire::RemoveRequest,
    ) -> Result<wire::Started, ClientError> {
        self.call_json(Method::POST, &app_path(app, &["remove"]), request)
    }

    /// `POST /v1/updates`: updates the app the bundle names.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn update(
        &self,
        bundle: Vec<u8>,
        query: &wire::UpdateQuery,
    ) -> Result<wire::Started, ClientError> {
        self.call(
            Method::POST,
            &format!("/v1/updates{}", query.to_query()),
            Some((wire::BUNDLE_CONTENT_TYPE, bundle)),
        )
    }

    /// `POST /v1/apps/{app}/rollback`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn rollback(
        &self,
        app: &str,
        request: &wire::RollbackRequest,
    ) -> Result<wire::Started, ClientError> {
        self.call_json(Method::POST, &app_path(app, &["rollback"]), request)
    }

    /// `POST /v1/apps/{app}/abort`: the app as the abort was asked.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn abort(&self, app: &str) -> Result<wire::AppRecord, ClientError> {
        self.call(Method::POST, &app_path(app, &["abort"]), None)
    }

    /// `POST /v1/apps/{app}/pause`: the app as paused.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn pause(
        &self,
        app: &str,
        request: &wire::PauseRequest,
    ) -> Result<wire::AppRecord, ClientError> {
        self.call_json(Method::POST, &app_path(app, &["pause"]), request)
    }

    /// `POST /v1/apps/{app}/resume`: the app as resumed.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn resume(
        &self,
        app: &str,
        request: &wire::PauseRequest,
    ) -> Result<wire::AppRecord, ClientError> {
        self.call_json(Method::POST, &app_path(app, &["resume"]), request)
    }

    /// `POST /v1/apps/{app}/recover`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn recover(&self, app: &str) -> Result<wire::Started, ClientError> {
        self.call(Method::POST, &app_path(app, &["recover"]), None)
    }

    /// `GET /v1/apps/{app}/history`, oldest first.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn history(&self, app: &str) -> Result<Vec<wire::HistoryEntry>, ClientError> {
        self.call(Method::GET, &app_path(app, &["history"]), None)
    }

    /// `GET /v1/apps/{app}/operations/{id}`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn operation(
        &self,
        app: &str,
        id: wire::OperationId,
    ) -> Result<wire::HistoryEntry, ClientError> {
        let id = id.0.to_string();
        self.call(Method::GET, &app_path(app, &["operations", &id]), None)
    }

    /// `POST /v1/apps/{app}/diff` with a bundle: what an update to it
    /// would change.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn diff_bundle(
        &self,
        app: &str,
        bundle: Vec<u8>,
    ) -> Result<Vec<wire::ChartDiff>, ClientError> {
        self.call(
            Method::POST,
            &app_path(app, &["diff"]),
            Some((wire::BUNDLE_CONTENT_TYPE, bundle)),
        )
    }

    /// `GET /v1/apps/{app}/diff`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn diff(&self, app: &str) -> Result<Vec<wire::ChartDiff>, ClientError> {
        self.call(Method::GET, &app_path(app, &["diff"]), None)
    }

    /// `GET /v1/apps/{app}/overrides`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn override_list(&self, app: &str) -> Result<Vec<wire::OverrideSummary>, ClientError> {
        self.call(Method::GET, &app_path(app, &["overrides"]), None)
    }

    /// `GET /v1/apps/{app}/overrides/{chart}`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn override_show(
        &self,
        app: &str,
        chart: &str,
    ) -> Result<wire::ChartOverrides, ClientError> {
        self.call(Method::GET, &app_path(app, &["overrides", chart]), None)
    }

    /// `PUT /v1/apps/{app}/overrides/{chart}`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn override_set(
        &self,
        app: &str,
        chart: &str,
        request: &wire::OverrideSet,
    ) -> Result<wire::ChartOverrides, ClientError> {
        self.call_json(Method::PUT, &app_path(app, &["overrides", chart]), request)
    }

    /// `DELETE /v1/apps/{app}/overrides/{chart}`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn override_delete(&self, app: &str, chart: &str) -> Result<wire::Deleted, ClientError> {
        self.call(Method::DELETE, &app_path(app, &["overrides", chart]), None)
    }

    /// `POST /v1/volumes`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn volume_create(
        &self,
        request: &wire::VolumeRequest,
    ) -> Result<wire::VolumeView, ClientError> {
        self.call_json(Method::POST, "/v1/volumes", request)
    }

    /// `POST /v1/platform/events`: what the event did.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn platform_event(
        &self,
        request: &wire::PlatformEventRequest,
    ) -> Result<wire::PlatformEventOutcome, ClientError> {
        self.call_json(Method::POST, "/v1/platform/events", request)
    }

    /// `GET /v1/facts`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn facts(&self) -> Result<wire::FactsView, ClientError> {
        self.call(Method::GET, "/v1/facts", None)
    }

    /// `GET /v1/volumes`.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn volume_list(&self) -> Result<Vec<wire::VolumeView>, ClientError> {
        self.call(Method::GET, "/v1/volumes", None)
    }

    /// `DELETE /v1/volumes/{name}`: the volume as it was.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn volume_remove(
        &self,
        name: &str,
        query: &wire::VolumeRemoveQuery,
    ) -> Result<wire::VolumeView, ClientError> {
        let path = format!("/v1/volumes/{}{}", encode_segment(name), query.to_query());
        self.call(Method::DELETE, &path, None)
    }

    // ---- the generic exchange ----

    /// Sends one request and returns the answer whatever its status.
    ///
    /// # Errors
    /// [`ClientError::Connect`], [`ClientError::Http`].
    pub fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> Result<Response, ClientError> {
        self.runtime.block_on(self.exchange(method, path, body))
    }

    /// Sends a request and decodes a successful answer's JSON; an error
    /// status becomes [`ClientError::Status`] with the daemon's code and
    /// message. The typed methods above are built on this; it stays public
    /// for callers that need an endpoint's raw JSON.
    ///
    /// # Errors
    /// As [`Client::send`], [`ClientError::Status`], [`ClientError::Decode`].
    pub fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> Result<T, ClientError> {
        let response = self.checked(method, path, body)?;
        let body: &[u8] = if response.body.is_empty() {
            b"null"
        } else {
            &response.body
        };
        serde_json::from_slice(body).map_err(ClientError::Decode)
    }

    /// [`Client::send`], with an error status turned into
    /// [`ClientError::Status`].
    fn checked(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> Result<Response, ClientError> {
        let response = self.send(method, path, body)?;
        self.status_checked(response)
    }

    /// A response, or its error status as [`ClientError::Status`].
    fn status_checked(&self, response: Response) -> Result<Response, ClientError> {
        if response.status.is_success() {
            return Ok(response);
        }
        let (code, message) = match serde_json::from_slice::<ErrorBody>(&response.body) {
            Ok(body) => (body.code, body.error),
            Err(_) => (
                ErrorCode::Unknown,
                format!(
                    "daemon answered {}: {}",
                    response.status,
                    String::from_utf8_lossy(&response.body).trim()
                ),
            ),
        };
        Err(ClientError::Status {
            status: response.status.as_u16(),
            code,
            message,
        })
    }

    /// [`Client::call`] with a JSON body.
    ///
    /// # Errors
    /// As [`Client::call`].
    pub fn call_json<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: &impl serde::Serialize,
    ) -> Result<T, ClientError> {
        let bytes = serde_json::to_vec(body).map_err(ClientError::Decode)?;
        self.call(method, path, Some((wire::JSON_CONTENT_TYPE, bytes)))
    }

    async fn exchange(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> Result<Response, ClientError> {
        self.exchange_with(method, path, body, None).await
    }

    /// [`Client::exchange`] with a bundle's [`wire::SOURCE_HEADER`], sent
    /// again while the daemon is busy and [`Client::with_retries`] allows
    /// (module `retry`). Each attempt is a new request with the whole
    /// body, from this call's copy.
    async fn exchange_with(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
        source: Option<&str>,
    ) -> Result<Response, ClientError> {
        let body = body.map(|(content_type, bytes)| (content_type, Bytes::from(bytes)));
        let mut waited = Duration::ZERO;
        let mut done = 0u32;
        loop {
            let response = self
                .exchange_once(method.clone(), path, body.clone(), source)
                .await?;
            done = done.saturating_add(1);
            let Some(wait) = retry::next_wait(
                &self.retries,
                response.status,
                response.retry_after,
                done - 1,
                waited,
                retry::jitter(),
            ) else {
                return Ok(response);
            };
            if let Some(notice) = &self.notice {
                notice(&Wait {
                    status: response.status.as_u16(),
                    reason: retry::reason(response.status, &response.body),
                    wait,
                    attempt: done + 1,
                });
            }
            tokio::time::sleep(wait).await;
            waited += wait;
        }
    }

    /// One request, one answer.
    async fn exchange_once(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Bytes)>,
        source: Option<&str>,
    ) -> Result<Response, ClientError> {
        let shown = self.address.to_string();
        let http = |source: Box<dyn std::error::Error + Send + Sync>| ClientError::Http {
            address: shown.clone(),
            source,
        };
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, "capstan");
        if let Some(token) = &self.token {
            builder = builder.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        if let Some(source) = source {
            builder = builder.header(wire::SOURCE_HEADER, source);
        }
        let bytes = match body {
            Some((content_type, bytes)) => {
                builder = builder.header(header::CONTENT_TYPE, content_type);
                bytes
            }
            None => Bytes::new(),
        };
        let request = builder
            .body(Full::new(bytes))
            .map_err(|e| http(Box::new(e)))?;
        let response = match &self.address {
            Address::Unix(path) => {
                let stream =
                    tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::UnixStream::connect(path))
                        .await
                        .map_err(|_| self.connect_error(std::io::ErrorKind::TimedOut.into()))?
                        .map_err(|e| self.connect_error(e))?;
                send_on(TokioIo::new(stream), request).await
            }
            Address::Tcp(addr) => {
                let stream =
                    tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(addr))
                        .await
                        .map_err(|_| self.connect_error(std::io::ErrorKind::TimedOut.into()))?
                        .map_err(|e| self.connect_error(e))?;
                send_on(TokioIo::new(stream), request).await
            }
            Address::Https(addr) => {
                let stream =
                    tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(addr))
                        .await
                        .map_err(|_| self.connect_error(std::io::ErrorKind::TimedOut.into()))?
                        .map_err(|e| self.connect_error(e))?;
                let tls_error = |why: String| ClientError::Tls {
                    address: shown.clone(),
                    why,
                };
                let config = match &self.tls {
                    Some(config) => config.clone(),
                    None => {
                        super::tls::client_config(None).map_err(|e| tls_error(e.to_string()))?
                    }
                };
                let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
                let stream = tokio::time::timeout(
                    CONNECT_TIMEOUT,
                    tokio_rustls::TlsConnector::from(config).connect(name, stream),
                )
                .await
                .map_err(|_| tls_error("the handshake timed out".into()))?
                .map_err(|e| tls_error(self.tls_refusal(&e).unwrap_or_else(|| e.to_string())))?;
                // A daemon that requires a client certificate refuses one
                // without (or with one it does not trust) after the
                // handshake, on the first read.
                return send_on(TokioIo::new(stream), request).await.map_err(|e| {
                    match self.tls_refusal(e.as_ref()) {
                        Some(why) => tls_error(why),
                        None => http(e),
                    }
                });
            }
        };
        response.map_err(http)
    }

    /// Why a daemon refused this client's TLS, when `error` (or its
    /// causes) says, or when the daemon asked for a client certificate
    /// that this client does not have.
    fn tls_refusal(&self, error: &(dyn std::error::Error + 'static)) -> Option<String> {
        use rustls::AlertDescription as A;
        let alert = std::iter::successors(Some(error), |e| e.source()).find_map(|e| {
            let tls = e.downcast_ref::<rustls::Error>().or_else(|| {
                e.downcast_ref::<std::io::Error>()
                    .and_then(|io| io.get_ref())
                    .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            });
            match tls {
                Some(rustls::Error::AlertReceived(alert)) => Some(*alert),
                _ => None,
            }
        });
        let closed = std::iter::successors(Some(error), |e| e.source()).any(|e| {
            use std::io::ErrorKind as K;
            e.downcast_ref::<std::io::Error>().is_some_and(|io| {
                matches!(
                    io.kind(),
                    K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof
                )
            }) || e
                .downcast_ref::<hyper::Error>()
                .is_some_and(|h| h.is_incomplete_message() || h.is_closed())
        });
        let certificate = self.certificate.as_deref();
        let present = certificate.is_some_and(super::tls::ClientCertificate::present);
        let requested = certificate.is_some_and(super::tls::ClientCertificate::requested);
        let hint = "give one with --tls-cert and --tls-key (CAPSTAN_TLS_CERT, CAPSTAN_TLS_KEY)";
        match alert {
            Some(A::CertificateRequired) => {
                Some(format!("the daemon requires a client certificate; {hint}"))
            }
            Some(
                alert @ (A::BadCertificate
                | A::UnknownCA
                | A::CertificateUnknown
                | A::CertificateExpired
                | A::CertificateRevoked
                | A::UnsupportedCertificate
                | A::AccessDenied),
            ) if present => Some(format!(
                "the daemon refused the client certificate (alert {alert:?}); \
                 is it signed by the daemon's --tls-client-ca?"
            )),
            Some(alert) if requested && !present => Some(format!(
                "the daemon requires a client certificate (alert {alert:?}); {hint}"
            )),
            None if closed && requested && !present => Some(format!(
                "the daemon asked for a client certificate and closed the connection without one; {hint}"
            )),
            None if closed && requested => Some(
                "the daemon closed the connection after asking for a client certificate \
                 (is this one signed by the daemon's --tls-client-ca?)"
                    .to_owned(),
            ),
            _ => None,
        }
    }

    fn connect_error(&self, error: std::io::Error) -> ClientError {
        ClientError::Connect {
            address: self.address.to_string(),
            error,
        }
    }
}

async fn send_on<S>(
    io: TokioIo<S>,
    request: Request<Full<Bytes>>,
) -> Result<Response, Box<dyn std::error::Error + Send + Sync>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await?;
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let response = sender.send_request(request).await?;
    let status = response.status();
    let retry_after = retry::retry_after(response.headers().get(header::RETRY_AFTER));
    let body = response.into_body().collect().await?.to_bytes();
    driver.abort();
    Ok(Response {
        status,
        body,
        retry_after,
    })
}
