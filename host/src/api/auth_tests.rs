//! The bearer-token check on a real TCP listener (issue 13): every case a
//! careless client or a guesser sends, by raw HTTP/1.1 so that nothing in
//! between normalises the header.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Address;
use crate::kube::DirTarget;
use crate::lifecycle::{Lifecycle, Options};
use crate::trust::TrustStore;

const TOKEN: &str = "the-right-token-0123456789abcdef";

/// `capstan serve` on TCP loopback with [`TOKEN`], stopped when dropped.
struct TcpDaemon {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl TcpDaemon {
    fn start() -> TcpDaemon {
        let dir = tempfile::tempdir().unwrap();
        let target = Arc::new(DirTarget::new(dir.path().join("applied")));
        let lifecycle = Lifecycle::open(Options::new(
            dir.path().join("state"),
            TrustStore::empty(),
            target,
        ))
        .unwrap();
        // A free port: bound here, released, bound again by the server.
        let addr = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            runtime
                .block_on(super::serve(
                    lifecycle,
                    &Address::Tcp(addr),
                    Some(TOKEN.into()),
                    async {
                        let _ = stopped.await;
                    },
                ))
                .unwrap();
        });
        let started = Instant::now();
        while TcpStream::connect(addr).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "never listened"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        TcpDaemon {
            addr,
            stop: Some(stop),
            thread: Some(thread),
            _dir: dir,
        }
    }

    /// `GET path` with `authorization` as the raw header value (none when
    /// `None`); the answer's status.
    fn get(&self, path: &str, authorization: Option<&str>) -> u16 {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        let auth = authorization
            .map(|value| format!("Authorization: {value}\r\n"))
            .unwrap_or_default();
        let head =
            format!("GET {path} HTTP/1.1\r\nHost: capstan\r\n{auth}Connection: close\r\n\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status in {answer:?}"))
    }
}

impl Drop for TcpDaemon {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn same_length_wrong() -> String {
    let mut wrong: Vec<u8> = TOKEN.as_bytes().to_vec();
    let last = wrong.len() - 1;
    wrong[last] ^= 1;
    String::from_utf8(wrong).unwrap()
}

#[test]
fn the_right_token_is_admitted_and_every_near_miss_is_401() {
    let d = TcpDaemon::start();
    assert_eq!(d.get("/v1/apps", Some(&format!("Bearer {TOKEN}"))), 200);

    let wrong = same_length_wrong();
    assert_eq!(wrong.len(), TOKEN.len());
    let upper = TOKEN.to_uppercase();
    let cases: Vec<(&str, Option<String>)> = vec![
        ("no header", None),
        ("same-length wrong token", Some(format!("Bearer {wrong}"))),
        ("token with a suffix", Some(format!("Bearer {TOKEN}x"))),
        ("token's prefix", Some(format!("Bearer {}", &TOKEN[..16]))),
        ("token in other case", Some(format!("Bearer {upper}"))),
        ("empty token", Some("Bearer ".into())),
        ("scheme only", Some("Bearer".into())),
        ("empty header", Some(String::new())),
        ("token without scheme", Some(TOKEN.into())),
        ("other scheme", Some(format!("Basic {TOKEN}"))),
        ("scheme glued to token", Some(format!("Bearer{TOKEN}"))),
    ];
    for (case, header) in &cases {
        assert_eq!(d.get("/v1/apps", header.as_deref()), 401, "{case}");
        // A success forgets the failures, so this one peer is never made
        // to wait (issue 29) and each case is answered for itself.
        assert_eq!(d.get("/v1/apps", Some(&format!("Bearer {TOKEN}"))), 200);
    }
}

/// The scheme is case-insensitive (RFC 9110 §11.1); the token is not.
#[test]
fn the_bearer_scheme_is_matched_in_any_case() {
    let d = TcpDaemon::start();
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        assert_eq!(
            d.get("/v1/apps", Some(&format!("{scheme} {TOKEN}"))),
            200,
            "{scheme}"
        );
    }
}

/// Health and metrics are behind the token like every other route (see
/// docs/src/operating/security.md): an open route would tell a scanner that a
/// capstan daemon listens, and the metrics name every app.
#[test]
fn health_and_metrics_need_the_token_on_tcp() {
    let d = TcpDaemon::start();
    for path in ["/v1/health", "/metrics"] {
        assert_eq!(d.get(path, None), 401, "{path} without a token");
        assert_eq!(
            d.get(path, Some(&format!("Bearer {}", same_length_wrong()))),
            401,
            "{path} with a wrong token"
        );
        assert_eq!(
            d.get(path, Some(&format!("Bearer {TOKEN}"))),
            200,
            "{path} with the token"
        );
    }
}

#[test]
fn token_comparison_is_exact() {
    use super::session::constant_time_eq;
    assert!(constant_time_eq(b"abc", b"abc"));
    assert!(!constant_time_eq(b"abc", b"abd"));
    assert!(!constant_time_eq(b"abc", b"ab"));
    assert!(!constant_time_eq(b"", b"a"));
    assert!(constant_time_eq(b"", b""));
}

/// Issue 45: a follower that knows no leader asks the client to come back
/// (nothing was done, the CLI waits it out); one that names a leader does
/// not, as asking it again would not help.
#[test]
fn a_follower_without_a_leader_answers_retry_after_and_one_with_a_leader_does_not() {
    use axum::response::IntoResponse as _;
    let header = |leader: Option<&str>| {
        super::auth::not_leader(leader)
            .into_response()
            .headers()
            .get(axum::http::header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap_or_default().to_owned())
    };
    assert_eq!(header(None).as_deref(), Some("2"));
    assert_eq!(header(Some("capstan-0")), None);
}
