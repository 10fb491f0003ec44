//! The listener's connections: accepting them up to a cap, the TLS
//! handshake, HTTP/1.1 with hyper, and the timeouts that close a
//! connection which sends its request head too slowly or sits idle.
//!
//! One loop serves a unix socket, plain TCP and TLS alike. A connection
//! past [`Limits::max_connections`] is closed as soon as it is accepted,
//! and the first refusal logs one warning (the next line says when the
//! listener is below the cap again), so a flood is visible without a
//! line per connection. A watchdog per connection applies
//! [`Limits::header_timeout`] (from the first byte of a request, or from
//! the accept, to the end of its head) and [`Limits::idle_timeout`] (no
//! request running and no byte moving); hyper's own header timeout, set to
//! the sum of both, stands behind it. Bodies get
//! [`Limits::body_timeout`] through [`super::body::StallGuard`].
//!
//! On shutdown, idle connections close at once and busy ones after their
//! answer, within [`DRAIN_TIMEOUT`].
//!
//! Must not know the routes: it serves the router it is handed.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tower::ServiceExt as _;

use super::body::StallGuard;
use super::limits::Limits;
use super::peer::Peer;

/// How long shutdown waits for connections with a request in progress.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// A bound socket, ready to accept.
pub(super) enum Accepting {
    /// A unix socket.
    Unix(tokio::net::UnixListener),
    /// TCP, with TLS when an acceptor is given.
    Tcp(tokio::net::TcpListener, Option<tokio_rustls::TlsAcceptor>),
}

enum Stream {
    Unix(tokio::net::UnixStream),
    Tcp(tokio::net::TcpStream),
}

impl Accepting {
    async fn accept(&self) -> std::io::Result<(Stream, Peer)> {
        match self {
            Accepting::Unix(listener) => {
                let (stream, _) = listener.accept().await?;
                let peer = Peer::of_unix(&stream);
                Ok((Stream::Unix(stream), peer))
            }
            Accepting::Tcp(listener, _) => {
                let (stream, addr) = listener.accept().await?;
                Ok((Stream::Tcp(stream), Peer::Tcp(addr)))
            }
        }
    }

    fn tls(&self) -> Option<tokio_rustls::TlsAcceptor> {
        match self {
            Accepting::Tcp(_, tls) => tls.clone(),
            Accepting::Unix(_) => None,
        }
    }
}

/// Serves `app` on `accepting` until `shutdown` completes, then drains.
pub(super) async fn serve(
    accepting: Accepting,
    app: Router,
    limits: Limits,
    shown: &str,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let cap = limits.max_connections.max(1);
    let slots = Arc::new(tokio::sync::Semaphore::new(cap));
    let (closing, closed) = tokio::sync::watch::channel(false);
    let limits = Arc::new(limits);
    let tls = accepting.tls();
    let mut refused: u64 = 0;
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = accepting.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors or a connection reset before accept:
                // wait a moment rather than spin.
                tracing::warn!(address = shown, error = %e, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            if refused == 0 {
                tracing::warn!(target: "capstan::audit", address = shown, limit = cap, peer = %peer.describe(),
                    "connection limit reached: {cap} connections are open; new ones are closed until some end");
            }
            refused += 1;
            drop(stream);
            continue;
        };
        if refused > 0 {
            tracing::warn!(target: "capstan::audit", address = shown, limit = cap, refused,
                "below the connection limit again; {refused} connections were refused");
            refused = 0;
        }
        let app = app.clone();
        let limits = Arc::clone(&limits);
        let closed = closed.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            match (stream, tls) {
                (Stream::Unix(stream), _) => {
                    connection(stream, peer, app, &limits, closed).await;
                }
                (Stream::Tcp(stream), None) => {
                    let _ = stream.set_nodelay(true);
                    connection(stream, peer, app, &limits, closed).await;
                }
                (Stream::Tcp(stream), Some(acceptor)) => {
                    let _ = stream.set_nodelay(true);
                    let handshake = tokio::time::timeout(
                        super::tls::HANDSHAKE_TIMEOUT,
                        acceptor.accept(stream),
                    );
                    match handshake.await {
                        Ok(Ok(stream)) => connection(stream, peer, app, &limits, closed).await,
                        Ok(Err(e)) => {
                            tracing::info!(peer = %peer.describe(), error = %e, "TLS handshake failed");
                        }
                        Err(_) => {
                            tracing::info!(peer = %peer.describe(), "TLS handshake timed out");
                        }
                    }
                }
            }
            drop(slot);
        });
    }
    drop(accepting);
    let _ = closing.send(true);
    let all = u32::try_from(cap).unwrap_or(u32::MAX);
    if tokio::time::timeout(DRAIN_TIMEOUT, slots.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!(
            address = shown,
            "connections still open after the drain timeout"
        );
    }
}

/// What a connection's watchdog needs to know, updated by its socket
/// ([`Watched`]) and its requests: milliseconds since `start`, with 0 for
/// "not now" where a time may be absent.
struct Activity {
    start: Instant,
    /// The last byte read or written.
    last_io: AtomicU64,
    /// When the head of the next request began (its first byte, or the
    /// accept), plus one; 0 while a request runs or the connection idles.
    head_since: AtomicU64,
    /// When the last answer was handed over.
    idle_since: AtomicU64,
    /// Requests being handled.
    in_flight: AtomicUsize,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            start: Instant::now(),
            last_io: AtomicU64::new(0),
            head_since: AtomicU64::new(1),
            idle_since: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn read(&self) {
        let now = self.now();
        self.last_io.store(now, Ordering::Relaxed);
        if self.in_flight.load(Ordering::Acquire) == 0 {
            let _ = self.head_since.compare_exchange(
                0,
                now.saturating_add(1),
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
    }

    fn wrote(&self) {
        self.last_io.store(self.now(), Ordering::Relaxed);
    }

    fn begin(&self) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.head_since.store(0, Ordering::Release);
    }

    fn end(&self) {
        self.idle_since.store(self.now(), Ordering::Release);
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }

    /// Which timeout has passed, if any.
    fn expired(&self, limits: &Limits) -> Option<&'static str> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let now = self.now();
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let head = self.head_since.load(Ordering::Acquire);
        if head > 0 {
            return (now.saturating_sub(head - 1) > millis(limits.header_timeout))
                .then_some("the request head did not arrive within the header timeout");
        }
        let quiet = self
            .idle_since
            .load(Ordering::Acquire)
            .max(self.last_io.load(Ordering::Relaxed));
        (now.saturating_sub(quiet) > millis(limits.idle_timeout))
            .then_some("the connection was idle past the idle timeout")
    }
}

/// Ends a request in [`Activity`] when dropped, answered or not.
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.end();
    }
}

async fn connection<I>(
    io: I,
    peer: Peer,
    app: Router,
    limits: &Limits,
    mut closed: tokio::sync::watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Arc::new(Activity::new());
    let watched = Watched {
        inner: io,
        activity: Arc::clone(&activity),
    };
    let body_timeout = limits.body_timeout;
    let service_activity = Arc::clone(&activity);
    let service =
        hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
            service_activity.begin();
            let in_flight = InFlight(Arc::clone(&service_activity));
            let mut request =
                request.map(|body| Body::new(StallGuard::new(Body::new(body), body_timeout)));
            request.extensions_mut().insert(ConnectInfo(peer));
            let app = app.clone();
            async move {
                let response = app.oneshot(request).await;
                drop(in_flight);
                response
            }
        });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout.saturating_add(limits.idle_timeout));
    let conn = builder.serve_connection(TokioIo::new(watched), service);
    tokio::pin!(conn);
    let tick = (limits.header_timeout.min(limits.idle_timeout) / 4)
        .clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut ticks = tokio::time::interval(tick);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut draining = *closed.borrow();
    if draining {
        conn.as_mut().graceful_shutdown();
    }
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(peer = %peer.describe(), error = %e, "connection ended with an error");
                }
                return;
            }
            changed = closed.changed(), if !draining => {
                draining = true;
                if changed.is_ok() {
                    conn.as_mut().graceful_shutdown();
                }
            }
            _ = ticks.tick() => {
                if let Some(why) = activity.expired(limits) {
                    tracing::debug!(peer = %peer.describe(), "closing a connection: {why}");
                    return;
                }
            }
        }
    }
}

/// A socket that reports its reads and writes to an [`Activity`].
struct Watched<I> {
    inner: I,
    activity: Arc<Activity>,
}

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.read();
        }
        polled
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Watched<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.wrote();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.wrote();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            header_timeout: Duration::from_millis(50),
            idle_timeout: Duration::from_millis(200),
            ..Limits::default()
        }
    }

    #[test]
    fn a_silent_new_connection_gets_the_header_timeout() {
        let activity = Activity::new();
        assert_eq!(activity.expired(&limits()), None);
        std::thread::sleep(Duration::from_millis(80));
        assert!(activity.expired(&limits()).unwrap().contains("header"));
    }

    #[test]
    fn a_running_request_is_never_timed_out_and_idleness_counts_from_its_answer() {
        let activity = Arc::new(Activity::new());
        activity.read();
        activity.begin();
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(activity.expired(&limits()), None);
        drop(InFlight(Arc::clone(&activity)));
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(activity.expired(&limits()), None);
        std::thread::sleep(Duration::from_millis(150));
        assert!(activity.expired(&limits()).unwrap().contains("idle"));
        // A byte of the next request starts its header clock.
        activity.read();
        assert_eq!(activity.expired(&limits()), None);
        std::thread::sleep(Duration::from_millis(80));
        assert!(activity.expired(&limits()).unwrap().contains("header"));
    }
}
