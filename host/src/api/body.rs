//! Request bodies as they arrive: a guard that cuts off a body whose
//! client stops sending, and the bridge that streams a bundle upload to
//! the verifier on a blocking thread, counting bytes against the size
//! limit, so a bundle is never whole in memory.
//!
//! Must not look inside a bundle: the bytes go to
//! [`crate::lifecycle::Lifecycle`] as a [`std::io::Read`], and the bundle
//! module decides what they are.

use std::future::Future;
use std::io::{self, Read};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use http_body_util::BodyExt as _;
use hyper::body::{Body as HttpBody, Frame, SizeHint};

/// Chunks in flight between the connection and the verifier: with hyper's
/// reads of at most a few hundred KiB, an upload holds about 1 MiB here.
const CHANNEL_CHUNKS: usize = 4;

/// The most of a refused request's body read and dropped before the
/// answer ([`drain`]).
pub(super) const DRAIN_BYTES: usize = 8 << 20;

/// The longest a refused request's body is read before the answer.
pub(super) const DRAIN_TIME: Duration = Duration::from_secs(2);

/// Reads and drops up to [`DRAIN_BYTES`] of `body` within [`DRAIN_TIME`].
///
/// For an answer given from a request's head alone (a bundle of the wrong
/// content type, a source that names a tag): a client still sending its
/// body would otherwise meet a connection closed with its bytes unread,
/// which the kernel answers with a reset that discards the answer before
/// the client reads it. Apache and nginx read on a while for the same
/// reason (their lingering close). The bound keeps a refused upload cheap:
/// a larger or slower body is cut off as before.
pub(super) async fn drain(body: Body) {
    let mut stream = body.into_data_stream();
    let mut read = 0usize;
    let reading = async {
        use futures_util::StreamExt as _;
        while let Some(Ok(chunk)) = stream.next().await {
            read = read.saturating_add(chunk.len());
            if read >= DRAIN_BYTES {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, reading).await;
}

/// The error of a body whose client sent nothing for the body timeout.
#[derive(Debug, thiserror::Error)]
#[error("the request body stalled: no byte for {}s", waited.as_secs_f32())]
pub(super) struct BodyStalled {
    /// The timeout that passed.
    pub(super) waited: Duration,
}

/// Whether `error` or one of its causes is a [`BodyStalled`].
pub(super) fn stalled_in(error: &(dyn std::error::Error + 'static)) -> Option<Duration> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = cause {
        if let Some(stalled) = error.downcast_ref::<BodyStalled>() {
            return Some(stalled.waited);
        }
        cause = error.source();
    }
    None
}

/// A request body that fails with [`BodyStalled`] when its reader asks for
/// the next frame and none comes within `timeout`. The clock runs only
/// while the reader waits: a reader busy with the previous frame (a slow
/// verifier) is not the client's stall.
pub(super) struct StallGuard {
    inner: Body,
    timeout: Duration,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl StallGuard {
    pub(super) fn new(inner: Body, timeout: Duration) -> Self {
        StallGuard {
            inner,
            timeout,
            sleep: None,
        }
    }
}

impl HttpBody for StallGuard {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.sleep = None;
                Poll::Ready(frame.map(|frame| frame.map_err(axum::BoxError::from)))
            }
            Poll::Pending => {
                let timeout = this.timeout;
                let sleep = this
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        this.sleep = None;
                        Poll::Ready(Some(Err(Box::new(BodyStalled { waited: timeout }))))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Why a streamed body was cut off before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cut {
    /// More than the limit of bytes arrived.
    TooLarge {
        /// The limit.
        limit: u64,
    },
    /// The client stopped sending for the body timeout.
    Stalled {
        /// The timeout.
        waited: Duration,
    },
    /// The connection failed mid-body (the client went away).
    Broken,
}

/// A body streaming to a blocking reader: [`Streamed::reader`] is handed
/// to the verifier, and a task moves the body's chunks to it, at most
/// [`CHANNEL_CHUNKS`] ahead of it.
pub(super) struct Streamed {
    cut: Arc<Mutex<Option<Cut>>>,
    pump: tokio::task::JoinHandle<()>,
}

impl Streamed {
    /// Starts moving `body` to the returned reader, cutting it off past
    /// `limit` bytes. The caller keeps the [`Streamed`] to learn why the
    /// reader failed ([`Streamed::cut`]) and to stop the task when done.
    pub(super) fn start(body: Body, limit: u64) -> (Streamed, BodyReader) {
        let (sender, receiver) = tokio::sync::mpsc::channel(CHANNEL_CHUNKS);
        let cut = Arc::new(Mutex::new(None));
        let pump = tokio::spawn(pump(body, limit, sender, Arc::clone(&cut)));
        let reader = BodyReader {
            receiver,
            current: Bytes::new(),
        };
        (Streamed { cut, pump }, reader)
    }

    /// Why the body was cut off, if it was.
    pub(super) fn cut(&self) -> Option<Cut> {
        self.cut.lock().ok().and_then(|cut| *cut)
    }
}

impl Drop for Streamed {
    fn drop(&mut self) {
        // The reader is done (or gone): nothing waits for more of the body.
        self.pump.abort();
    }
}

async fn pump(
    mut body: Body,
    limit: u64,
    sender: tokio::sync::mpsc::Sender<io::Result<Bytes>>,
    cut: Arc<Mutex<Option<Cut>>>,
) {
    let mut received: u64 = 0;
    let stop = |why: Cut| {
        if let Ok(mut cut) = cut.lock() {
            *cut = Some(why);
        }
        io::Error::other(match why {
            Cut::TooLarge { limit } => format!("the body is larger than {limit} bytes"),
            Cut::Stalled { waited } => format!("the body stalled for {}s", waited.as_secs_f32()),
            Cut::Broken => "the connection failed mid-body".to_owned(),
        })
    };
    loop {
        let chunk = match body.frame().await {
            None => return,
            Some(Ok(frame)) => match frame.into_data() {
                Ok(chunk) => chunk,
                // Trailers carry nothing a bundle needs.
                Err(_) => continue,
            },
            Some(Err(error)) => {
                let why = match stalled_in(&error) {
                    Some(waited) => Cut::Stalled { waited },
                    None => Cut::Broken,
                };
                let _ = sender.send(Err(stop(why))).await;
                return;
            }
        };
        received = received.saturating_add(chunk.len() as u64);
        if received > limit {
            let _ = sender.send(Err(stop(Cut::TooLarge { limit }))).await;
            return;
        }
        if sender.send(Ok(chunk)).await.is_err() {
            // The reader stopped (the bundle was refused): the rest of
            // the body is not needed.
            return;
        }
    }
}

/// The blocking side of a [`Streamed`] body: reads wait for the next chunk.
/// Must be read on a blocking thread, never on the async runtime.
pub(super) struct BodyReader {
    receiver: tokio::sync::mpsc::Receiver<io::Result<Bytes>>,
    current: Bytes,
}

impl Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if !self.current.is_empty() {
                let n = buf.len().min(self.current.len());
                let chunk = self.current.split_to(n);
                buf[..n].copy_from_slice(&chunk);
                return Ok(n);
            }
            if buf.is_empty() {
                return Ok(0);
            }
            match self.receiver.blocking_recv() {
                Some(Ok(chunk)) => self.current = chunk,
                Some(Err(error)) => return Err(error),
                None => return Ok(0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_body_streams_whole_and_in_order() {
        let runtime = runtime();
        let chunks: Vec<Result<Bytes, io::Error>> = (0..100u8)
            .map(|i| Ok(Bytes::from(vec![i; 10_000])))
            .collect();
        let body = Body::from_stream(futures_util::stream::iter(chunks));
        let (streamed, mut reader) = runtime.block_on(async { Streamed::start(body, 1_000_000) });
        let read = runtime
            .block_on(async {
                tokio::task::spawn_blocking(move || {
                    let mut all = Vec::new();
                    reader.read_to_end(&mut all).map(|_| all)
                })
                .await
            })
            .unwrap()
            .unwrap();
        assert_eq!(read.len(), 1_000_000);
        assert!(read[..10_000].iter().all(|b| *b == 0));
        assert!(read[990_000..].iter().all(|b| *b == 99));
        assert_eq!(streamed.cut(), None);
    }

    #[test]
    fn a_body_past_the_limit_is_cut_and_says_so() {
        let runtime = runtime();
        let chunks: Vec<Result<Bytes, io::Error>> =
            (0..10).map(|_| Ok(Bytes::from(vec![7u8; 1000]))).collect();
        let body = Body::from_stream(futures_util::stream::iter(chunks));
        let (streamed, mut reader) = runtime.block_on(async { Streamed::start(body, 4500) });
        let result = runtime
            .block_on(async {
                tokio::task::spawn_blocking(move || {
                    let mut all = Vec::new();
                    reader.read_to_end(&mut all).map(|_| all.len())
                })
                .await
            })
            .unwrap();
        assert!(result.is_err());
        assert_eq!(streamed.cut(), Some(Cut::TooLarge { limit: 4500 }));
    }

    #[test]
    fn a_stalled_body_fails_after_the_timeout_and_not_before() {
        let runtime = runtime();
        let (stalled, waited) = runtime.block_on(async {
            let first: Result<Bytes, io::Error> = Ok(Bytes::from_static(b"abc"));
            let stream = futures_util::stream::iter([first])
                .chain(futures_util::stream::pending::<Result<Bytes, io::Error>>());
            let body = Body::new(StallGuard::new(
                Body::from_stream(stream),
                Duration::from_millis(200),
            ));
            let (streamed, mut reader) = Streamed::start(body, 1_000_000);
            let started = std::time::Instant::now();
            let read = tokio::task::spawn_blocking(move || {
                let mut all = Vec::new();
                reader.read_to_end(&mut all).map(|_| all.len())
            })
            .await
            .unwrap();
            assert!(read.is_err());
            (streamed.cut(), started.elapsed())
        });
        assert_eq!(
            stalled,
            Some(Cut::Stalled {
                waited: Duration::from_millis(200)
            })
        );
        assert!(waited >= Duration::from_millis(200), "{waited:?}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
    }

    use futures_util::StreamExt as _;
}
