//! A small blocking client for the API: one HTTP/1.1 connection a request,
//! over the unix socket or TCP, with the bearer token when one is given.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode, header};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;

use super::{Address, ErrorBody};

/// How long to wait for the daemon to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a request did not get an answer, or got an error answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The async runtime could not start.
    #[error("cannot start the client runtime")]
    Runtime(#[source] std::io::Error),
    /// No daemon answers at the address.
    #[error("cannot reach the capstan daemon at {address} (is `capstan serve` running?)")]
    Connect {
        /// The address.
        address: String,
        /// The error.
        #[source]
        source: std::io::Error,
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
        /// The daemon's one-line error.
        message: String,
    },
    /// The daemon's answer was not the JSON expected.
    #[error("the daemon's answer is not the expected JSON")]
    Decode(#[source] serde_json::Error),
}

/// A raw answer.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status.
    pub status: StatusCode,
    /// The body.
    pub body: Bytes,
}

/// A client for one daemon.
pub struct Client {
    address: Address,
    token: Option<String>,
    runtime: tokio::runtime::Runtime,
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
        })
    }

    /// The daemon's address.
    pub fn address(&self) -> &Address {
        &self.address
    }

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
    /// status becomes [`ClientError::Status`] with the daemon's message.
    ///
    /// # Errors
    /// As [`Client::send`], [`ClientError::Status`], [`ClientError::Decode`].
    pub fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> Result<T, ClientError> {
        let response = self.send(method, path, body)?;
        if !response.status.is_success() {
            let message = serde_json::from_slice::<ErrorBody>(&response.body)
                .map(|e| e.error)
                .unwrap_or_else(|_| {
                    format!(
                        "daemon answered {}: {}",
                        response.status,
                        String::from_utf8_lossy(&response.body).trim()
                    )
                });
            return Err(ClientError::Status {
                status: response.status.as_u16(),
                message,
            });
        }
        let body: &[u8] = if response.body.is_empty() {
            b"null"
        } else {
            &response.body
        };
        serde_json::from_slice(body).map_err(ClientError::Decode)
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
        self.call(method, path, Some(("application/json", bytes)))
    }

    async fn exchange(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
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
        let bytes = match body {
            Some((content_type, bytes)) => {
                builder = builder.header(header::CONTENT_TYPE, content_type);
                bytes
            }
            None => Vec::new(),
        };
        let request = builder
            .body(Full::new(Bytes::from(bytes)))
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
        };
        response.map_err(http)
    }

    fn connect_error(&self, source: std::io::Error) -> ClientError {
        ClientError::Connect {
            address: self.address.to_string(),
            source,
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
    let body = response.into_body().collect().await?.to_bytes();
    driver.abort();
    Ok(Response { status, body })
}
