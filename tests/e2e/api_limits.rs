//! The daemon under load and abuse (issue 29), through the real binary
//! with its limits set low so each is reached in seconds: a large upload
//! streams with bounded memory (peak RSS from /proc), a stalled body is
//! cut off, uploads past the bound get 429, half-open connections are
//! closed after the header timeout, the connection cap refuses and logs,
//! a peer guessing tokens is slowed down without slowing another, and
//! operations past `--max-operations` wait their turn.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::bundle::{Digest, Manifest, ManifestEntry};
use capstan::trust::SigningKey;

use crate::support::{capstan, fresh_dir};

const TOKEN: &str = "an-abuse-test-token-0123456789";

/// `capstan serve` with limit flags, killed when dropped.
struct Served {
    dir: PathBuf,
    key: SigningKey,
    child: Child,
    tcp: Option<SocketAddr>,
}

impl Served {
    /// A daemon on its unix socket (or on TCP loopback with [`TOKEN`] when
    /// `tcp`), with `flags` added to `serve`.
    fn start(name: &str, tcp: bool, flags: &[&str]) -> Served {
        Served::start_env(name, tcp, flags, &[])
    }

    /// [`Served::start`] with variables added to the daemon's environment.
    fn start_env(name: &str, tcp: bool, flags: &[&str], env: &[(&str, &str)]) -> Served {
        let dir = fresh_dir(name);
        std::fs::create_dir_all(dir.join("keys")).unwrap();
        let key = SigningKey::generate("test").unwrap();
        std::fs::write(dir.join("keys/test.pub"), key.public_key_line().unwrap()).unwrap();
        let mut command = capstan();
        command
            .arg("serve")
            .arg("--state")
            .arg(dir.join("state"))
            .arg("--trust")
            .arg(dir.join("keys"))
            .arg("--target")
            .arg(format!("dir:{}", dir.join("applied").display()))
            .args(flags)
            .envs(env.iter().copied())
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("daemon.log")).unwrap());
        let addr = tcp.then(|| {
            let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            free.local_addr().unwrap()
        });
        if let Some(addr) = addr {
            let token = dir.join("token");
            std::fs::write(&token, TOKEN).unwrap();
            std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .unwrap();
            command
                .arg("--listen")
                .arg(format!("tcp:{addr}"))
                .arg("--token-file")
                .arg(&token);
        }
        let mut child = command.spawn().unwrap();
        let served = Instant::now();
        loop {
            let up = match addr {
                Some(addr) => TcpStream::connect(addr).is_ok(),
                None => UnixStream::connect(dir.join("state/capstan.sock")).is_ok(),
            };
            if up {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "daemon exited with {status}: {}",
                    std::fs::read_to_string(dir.join("daemon.log")).unwrap_or_default()
                );
            }
            assert!(
                served.elapsed() < Duration::from_secs(30),
                "daemon did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Served {
            dir,
            key,
            child,
            tcp: addr,
        }
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("state/capstan.sock")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("daemon.log")).unwrap_or_default()
    }

    /// The daemon's peak resident set (VmHWM), in KiB.
    fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads an answer to its end (the requests ask `Connection: close`):
/// (status, the whole answer).
fn answer(stream: &mut impl Read) -> (u16, String) {
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

fn upload_head(length: usize, token: Option<&str>) -> String {
    let auth = token.map_or_else(String::new, |t| format!("Authorization: Bearer {t}\r\n"));
    format!(
        "POST /v1/apps HTTP/1.1\r\nHost: capstan\r\n{auth}Content-Type: application/gzip\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
    )
}

// ---- a large bundle, made here ----

const METADATA: &str = "\
name: big
version: 1.0.0
charts:
  - name: tiny
    path: charts/tiny
    namespace: tiny
    release: tiny
chart_groups:
  - name: all
    mode: sequential
    charts: [tiny]
";

/// Incompressible bytes, the same on every call.
fn noise(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The files of a tiny app, and `blobs` copies of `blob` beside them.
fn app_files(blob: &[u8], blobs: usize) -> Vec<(String, &[u8])> {
    let mut files: Vec<(String, &[u8])> = vec![
        ("capstan.yaml".into(), METADATA.as_bytes()),
        (
            "charts/tiny/Chart.yaml".into(),
            b"apiVersion: v2\nname: tiny\nversion: 0.1.0\n",
        ),
        (
            "charts/tiny/templates/cm.yaml".into(),
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tiny\n",
        ),
        ("charts/tiny/values.yaml".into(), b"a: 1\n"),
    ];
    for n in 0..blobs {
        files.push((format!("blobs/noise-{n}.bin"), blob));
    }
    files
}

/// Writes the signed bundle of `files` to `out`, gzipped without
/// compression (its size on the wire is its size), tar entry by entry, so
/// a bundle larger than memory can be sent.
fn write_bundle(out: impl Write, key: &SigningKey, files: &[(String, &[u8])]) {
    // Copies of one blob are hashed once.
    let mut digests: Vec<(&str, &[u8], Digest)> = Vec::new();
    for (path, data) in files {
        let known = digests
            .iter()
            .find(|(_, seen, _)| std::ptr::eq(*seen, *data))
            .map(|(_, _, digest)| *digest);
        let digest = known.unwrap_or_else(|| Digest::of(data));
        digests.push((path, data, digest));
    }
    let manifest = Manifest::from_entries(digests.iter().map(|(path, _, digest)| ManifestEntry {
        path: (*path).to_owned(),
        digest: *digest,
    }))
    .unwrap()
    .render();
    let signature = key.sign(manifest.as_bytes()).unwrap();
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::none());
    let mut entry = |name: &str, data: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_path(name).unwrap();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        gz.write_all(header.as_bytes()).unwrap();
        for piece in data.chunks(256 * 1024) {
            gz.write_all(piece).unwrap();
        }
        let pad = (512 - data.len() % 512) % 512;
        gz.write_all(&vec![0u8; pad]).unwrap();
    };
    entry("MANIFEST", manifest.as_bytes());
    entry("MANIFEST.sig", signature.as_bytes());
    for (path, data) in files {
        entry(path, data);
    }
    gz.write_all(&[0u8; 1024]).unwrap();
    gz.finish().unwrap();
}

/// A signed bundle of a tiny app and `blob_mib` MiB of noise, in memory.
fn big_bundle(key: &SigningKey, blob_mib: usize) -> Vec<u8> {
    let blob = noise(blob_mib << 20);
    let mut out = Vec::new();
    write_bundle(&mut out, key, &app_files(&blob, 1));
    out
}

// ---- uploads ----

#[test]
fn large_uploads_stream_and_the_daemon_stays_small() {
    let served = Served::start(
        "large_uploads_stream_and_the_daemon_stays_small",
        false,
        &["--max-uploads", "4", "--max-bundle-size", "64"],
    );
    const BLOB_MIB: usize = 24;
    const UPLOADS: usize = 4;
    let bundle = Arc::new(big_bundle(&served.key, BLOB_MIB));
    let before = served.peak_rss_kib();
    let started = Instant::now();
    let threads: Vec<_> = (0..UPLOADS)
        .map(|_| {
            let bundle = Arc::clone(&bundle);
            let socket = served.socket();
            std::thread::spawn(move || {
                let mut stream = UnixStream::connect(socket).unwrap();
                stream
                    .write_all(upload_head(bundle.len(), None).as_bytes())
                    .unwrap();
                // In pieces, as a network would deliver it.
                for piece in bundle.chunks(256 * 1024) {
                    stream.write_all(piece).unwrap();
                }
                answer(&mut stream)
            })
        })
        .collect();
    let answers: Vec<(u16, String)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let elapsed = started.elapsed();
    // One upload creates the app; the others, verified in full, find the
    // name taken.
    let created = answers.iter().filter(|(status, _)| *status == 201).count();
    let taken = answers.iter().filter(|(status, _)| *status == 409).count();
    assert_eq!((created, taken), (1, UPLOADS - 1), "{answers:?}");
    let peak = served.peak_rss_kib();
    let buffered_kib = (UPLOADS * bundle.len() / 1024) as u64;
    eprintln!(
        "{UPLOADS} uploads of {} MiB in {elapsed:?}: daemon peak RSS {} MiB (before {} MiB; buffering would need over {} MiB)",
        bundle.len() >> 20,
        peak / 1024,
        before / 1024,
        buffered_kib / 1024
    );
    // Streaming holds about 1 MiB per upload; buffering would hold all
    // of each body (96 MiB) on top of what the daemon already had.
    assert!(
        peak < before + 48 * 1024,
        "peak RSS {peak} KiB (before {before} KiB)"
    );
}

/// Counts what is written.
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Issue 29's measure, too slow for every run (3.3 GB through a debug
/// build): eight concurrent 400 MB uploads, the daemon's peak RSS printed
/// and held under 150 MiB. `cargo test -p capstan --test e2e
/// api_limits::eight -- --ignored --nocapture`.
#[test]
#[ignore = "streams 3.3 GB; run by hand"]
fn eight_uploads_of_400_mb_keep_the_daemon_under_150_mib() {
    let served = Served::start(
        "eight_uploads_of_400_mb_keep_the_daemon_under_150_mib",
        false,
        &["--max-uploads", "8", "--max-bundle-size", "512"],
    );
    // Seven files of 57 MiB (a file may have 64): 399 MiB of content.
    let blob = noise(57 << 20);
    let files = app_files(&blob, 7);
    let mut counter = Counter(0);
    write_bundle(&mut counter, &served.key, &files);
    let length = counter.0;
    let before = served.peak_rss_kib();
    let started = Instant::now();
    let answers: Vec<(u16, String)> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| {
                    let mut stream = UnixStream::connect(served.socket()).unwrap();
                    stream
                        .write_all(upload_head(length as usize, None).as_bytes())
                        .unwrap();
                    write_bundle(&mut stream, &served.key, &files);
                    answer(&mut stream)
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let peak = served.peak_rss_kib();
    eprintln!(
        "8 uploads of {} MB in {:?}: daemon peak RSS {} MiB (before {} MiB)",
        length / 1_000_000,
        started.elapsed(),
        peak / 1024,
        before / 1024
    );
    let created = answers.iter().filter(|(status, _)| *status == 201).count();
    assert_eq!(created, 1, "{answers:?}");
    assert!(peak < 150 * 1024, "peak RSS {peak} KiB");
}

#[test]
fn a_bundle_past_the_limit_is_refused_with_413_declared_or_streamed() {
    let served = Served::start(
        "a_bundle_past_the_limit_is_refused_with_413_declared_or_streamed",
        false,
        &["--max-bundle-size", "1"],
    );
    let bundle = big_bundle(&served.key, 2);
    // Declared: refused before a byte of the body is read.
    let mut stream = UnixStream::connect(served.socket()).unwrap();
    stream
        .write_all(upload_head(bundle.len(), None).as_bytes())
        .unwrap();
    let (status, text) = answer(&mut stream);
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("\"code\":\"payload-too-large\""), "{text}");
    // Chunked, so only the count as it streams can tell.
    let mut stream = UnixStream::connect(served.socket()).unwrap();
    stream
        .write_all(b"POST /v1/apps HTTP/1.1\r\nHost: capstan\r\nContent-Type: application/gzip\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        .unwrap();
    for piece in bundle.chunks(64 * 1024) {
        let sent = write!(stream, "{:x}\r\n", piece.len())
            .and_then(|()| stream.write_all(piece))
            .and_then(|()| stream.write_all(b"\r\n"));
        if sent.is_err() {
            // The daemon answered and closed: the rest is not wanted.
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    let (status, text) = answer(&mut stream);
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("payload-too-large"), "{text}");
    // Nothing was kept.
    let staging = served.dir.join("state/staging");
    let left = std::fs::read_dir(&staging).map_or(0, |d| d.count());
    assert_eq!(left, 0, "staging folders left in {}", staging.display());
}

/// Sends the head and the first `prefix` bytes of `bundle`, then stops.
fn stall(socket: &Path, bundle: &[u8], prefix: usize) -> UnixStream {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream
        .write_all(upload_head(bundle.len(), None).as_bytes())
        .unwrap();
    stream.write_all(&bundle[..prefix]).unwrap();
    stream
}

#[test]
fn a_stalled_upload_is_cut_off_and_frees_its_slot() {
    let served = Served::start(
        "a_stalled_upload_is_cut_off_and_frees_its_slot",
        false,
        &["--body-timeout", "0.5", "--max-uploads", "1"],
    );
    let bundle = big_bundle(&served.key, 1);
    let started = Instant::now();
    let mut stalled = stall(&served.socket(), &bundle, 64 * 1024);
    stalled
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    // While it holds the one upload slot, another upload is told to wait.
    std::thread::sleep(Duration::from_millis(100));
    let mut second = UnixStream::connect(served.socket()).unwrap();
    second
        .write_all(upload_head(bundle.len(), None).as_bytes())
        .unwrap();
    let _ = second.write_all(&bundle);
    let (status, text) = answer(&mut second);
    assert_eq!(status, 429, "{text}");
    assert!(text.contains("\"code\":\"too-many-requests\""), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("retry-after: 5"),
        "{text}"
    );
    // The stalled one is cut off after the body timeout, with 408.
    let (status, text) = answer(&mut stalled);
    let waited = started.elapsed();
    assert_eq!(status, 408, "{text}");
    assert!(text.contains("request-timeout"), "{text}");
    assert!(waited >= Duration::from_millis(500), "{waited:?}");
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    // Its slot is free again: the bundle uploads.
    let mut again = UnixStream::connect(served.socket()).unwrap();
    again
        .write_all(upload_head(bundle.len(), None).as_bytes())
        .unwrap();
    again.write_all(&bundle).unwrap();
    let (status, text) = answer(&mut again);
    assert_eq!(status, 201, "{text}");
}

// ---- connections ----

#[test]
fn half_open_connections_are_closed_after_the_header_timeout() {
    let served = Served::start(
        "half_open_connections_are_closed_after_the_header_timeout",
        false,
        &["--header-timeout", "0.5", "--idle-timeout", "30"],
    );
    let mut held: Vec<UnixStream> = (0..50)
        .map(|_| {
            let mut stream = UnixStream::connect(served.socket()).unwrap();
            stream.write_all(b"GET /v1/hea").unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            stream
        })
        .collect();
    // A silent connection gets the same timeout.
    let silent = UnixStream::connect(served.socket()).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    held.push(silent);
    let started = Instant::now();
    for stream in &mut held {
        let mut buf = [0u8; 64];
        // Closed without an answer: EOF (or a reset).
        let read = stream.read(&mut buf);
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        if let Err(e) = &read {
            assert_ne!(e.kind(), std::io::ErrorKind::WouldBlock, "still open");
        }
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    // A client that sends its request is served as before.
    let mut stream = UnixStream::connect(served.socket()).unwrap();
    stream
        .write_all(b"GET /v1/health HTTP/1.1\r\nHost: capstan\r\nConnection: close\r\n\r\n")
        .unwrap();
    assert_eq!(answer(&mut stream).0, 200);
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let served = Served::start(
        "an_idle_keep_alive_connection_is_closed_after_the_idle_timeout",
        false,
        &["--header-timeout", "5", "--idle-timeout", "0.5"],
    );
    let mut stream = UnixStream::connect(served.socket()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(b"GET /v1/health HTTP/1.1\r\nHost: capstan\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 4096];
    let n = stream.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let started = Instant::now();
    let read = stream.read(&mut buf);
    assert!(matches!(read, Ok(0)), "{read:?}");
    let idle = started.elapsed();
    assert!(idle >= Duration::from_millis(400), "{idle:?}");
    assert!(idle < Duration::from_secs(4), "{idle:?}");
}

#[test]
fn the_connection_cap_refuses_past_it_logs_once_and_recovers() {
    let served = Served::start(
        "the_connection_cap_refuses_past_it_logs_once_and_recovers",
        false,
        &["--max-connections", "8", "--header-timeout", "30"],
    );
    // The start-up probe's connection must have ended and freed its slot
    // before the eight are opened.
    std::thread::sleep(Duration::from_millis(500));
    let held: Vec<UnixStream> = (0..8)
        .map(|_| UnixStream::connect(served.socket()).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    for _ in 0..5 {
        let mut extra = UnixStream::connect(served.socket()).unwrap();
        extra
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let _ = extra.write_all(b"GET /v1/health HTTP/1.1\r\nHost: capstan\r\n\r\n");
        let mut buf = [0u8; 64];
        let read = extra.read(&mut buf);
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        if let Err(e) = &read {
            assert_ne!(
                e.kind(),
                std::io::ErrorKind::WouldBlock,
                "served past the cap"
            );
        }
    }
    let log = served.log();
    assert_eq!(log.matches("connection limit reached").count(), 1, "{log}");
    drop(held);
    std::thread::sleep(Duration::from_millis(200));
    let mut stream = UnixStream::connect(served.socket()).unwrap();
    stream
        .write_all(b"GET /v1/health HTTP/1.1\r\nHost: capstan\r\nConnection: close\r\n\r\n")
        .unwrap();
    assert_eq!(answer(&mut stream).0, 200);
    let log = served.log();
    assert!(
        log.contains("below the connection limit again; 5 connections were refused"),
        "{log}"
    );
}

// ---- authentication ----

/// A TCP connection to `to` from the loopback address `from`.
fn connect_from(from: [u8; 4], to: SocketAddr) -> TcpStream {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::from((from, 0))).unwrap();
        socket.connect(to).await.unwrap()
    });
    let stream = stream.into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    stream
}

fn get_health(from: [u8; 4], to: SocketAddr, token: &str) -> (u16, String, Duration) {
    let started = Instant::now();
    let mut stream = connect_from(from, to);
    write!(
        stream,
        "GET /v1/health HTTP/1.1\r\nHost: capstan\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let (status, text) = answer(&mut stream);
    (status, text, started.elapsed())
}

#[test]
fn a_peer_guessing_tokens_is_slowed_down_and_another_is_not() {
    let served = Served::start(
        "a_peer_guessing_tokens_is_slowed_down_and_another_is_not",
        true,
        &[],
    );
    let addr = served.tcp.unwrap();
    let guesser = [127, 0, 0, 2];
    let operator = [127, 0, 0, 1];
    for n in 1..=6 {
        let (status, text, _) = get_health(guesser, addr, &format!("guess-{n}"));
        assert_eq!(status, 401, "guess {n}: {text}");
    }
    // The sixth failure began a wait: the next guess is not even compared.
    let (status, text, took) = get_health(guesser, addr, "guess-7");
    assert_eq!(status, 429, "{text}");
    assert!(text.contains("too-many-requests"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("retry-after: 1"),
        "{text}"
    );
    assert!(
        took < Duration::from_secs(1),
        "the refusal itself is quick: {took:?}"
    );
    // Even the right token waits, from that peer.
    assert_eq!(get_health(guesser, addr, TOKEN).0, 429);
    // Another peer is answered at once, right or wrong.
    let (status, _, took) = get_health(operator, addr, TOKEN);
    assert_eq!(status, 200);
    assert!(took < Duration::from_millis(500), "{took:?}");
    assert_eq!(get_health(operator, addr, "wrong").0, 401);
    // After the wait, the guesser's right token is accepted.
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(get_health(guesser, addr, TOKEN).0, 200);
    let log = served.log();
    assert!(
        log.contains("request with a wrong bearer token refused") && log.contains("127.0.0.2"),
        "{log}"
    );
}

// ---- operations ----

/// A request over the unix socket: (status, body).
fn request(socket: &Path, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = UnixStream::connect(socket).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: capstan\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let (status, text) = answer(&mut stream);
    let body = text
        .split_once("\r\n\r\n")
        .map_or_else(String::new, |(_, body)| body.to_owned());
    (status, body)
}

/// A signed bundle of the tiny app, named `name`.
fn tiny_bundle(key: &SigningKey, name: &str) -> Vec<u8> {
    // Each app in a namespace of its own: two releases may not hold one
    // object (the directory target refuses it as a cluster does).
    let metadata = METADATA
        .replacen("name: big", &format!("name: {name}"), 1)
        .replacen("namespace: tiny", &format!("namespace: {name}"), 1);
    let mut files = app_files(&[], 0);
    files[0].1 = metadata.as_bytes();
    let mut out = Vec::new();
    write_bundle(&mut out, key, &files);
    out
}

/// Issue 45: thirty `capstan app upload` at once against a daemon with
/// the default four upload slots all succeed: those refused `429` wait
/// out its `Retry-After` (saying so on stderr) and send the whole bundle
/// again. Before, 26 of 30 failed with "4 bundle uploads are already
/// streaming".
#[test]
fn thirty_concurrent_cli_uploads_wait_their_turn_and_all_succeed() {
    let served = Served::start("thirty_concurrent_cli_uploads", false, &[]);
    // Some MiB each, so an upload holds its slot while others arrive.
    let blob = noise(4 << 20);
    let paths: Vec<PathBuf> = (0..30)
        .map(|n| {
            let name = format!("crowd-{n}");
            let metadata = METADATA
                .replacen("name: big", &format!("name: {name}"), 1)
                .replacen("namespace: tiny", &format!("namespace: {name}"), 1);
            let mut files = app_files(&blob, 1);
            files[0].1 = metadata.as_bytes();
            let path = served.dir.join(format!("{name}.tgz"));
            write_bundle(std::fs::File::create(&path).unwrap(), &served.key, &files);
            path
        })
        .collect();
    let started = Instant::now();
    let children: Vec<Child> = paths
        .iter()
        .map(|path| {
            capstan()
                .args(["app", "upload"])
                .arg(path)
                .arg("--state")
                .arg(served.dir.join("state"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut waited = 0;
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        // (A broken pipe to the daemon once exited 0 with nothing said.)
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("crowd-"),
            "{stderr}"
        );
        if stderr.contains("waiting") {
            assert!(
                stderr.contains("the daemon answered 429 (4 bundle uploads are already streaming"),
                "{stderr}"
            );
            waited += 1;
        }
    }
    let took = started.elapsed();
    eprintln!("30 uploads took {took:?}; {waited} waited at least once");
    // The limit was reached (else this tests nothing), and waited out.
    assert!(waited > 0, "no upload was ever refused");
    let refused = served.log().matches("path=/v1/apps status=429").count();
    assert!(refused >= waited, "{refused} refusals logged");
    let (status, body) = request(&served.socket(), "GET", "/v1/apps", "");
    assert_eq!(status, 200, "{body}");
    let list: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap();
    assert_eq!(list.len(), 30, "{body}");
}

/// The value of an unlabelled metric in `/metrics`.
fn gauge(socket: &Path, name: &str) -> u64 {
    let (status, text) = request(socket, "GET", "/metrics", "");
    assert_eq!(status, 200, "{text}");
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// Issue 29, concurrent operations' memory: past `--max-operations`, an
/// apply is accepted at once (202) and waits its turn, its progress
/// saying so; at most the bound run at once, and all finish.
#[test]
fn operations_past_max_operations_wait_their_turn_and_all_finish() {
    let served = Served::start_env(
        "operations_past_max_operations_wait_their_turn_and_all_finish",
        false,
        &["--max-operations", "1"],
        // Each step takes a moment, so the operations overlap.
        &[("CAPSTAN_TEST_STEP_DELAY_MS", "100")],
    );
    let socket = served.socket();
    let apps = ["queue-a", "queue-b", "queue-c"];
    for app in apps {
        let bundle = tiny_bundle(&served.key, app);
        let mut stream = UnixStream::connect(&socket).unwrap();
        stream
            .write_all(upload_head(bundle.len(), None).as_bytes())
            .unwrap();
        stream.write_all(&bundle).unwrap();
        let (status, text) = answer(&mut stream);
        assert_eq!(status, 201, "{text}");
    }
    assert_eq!(gauge(&socket, "capstan_operations_max"), 1);
    let started = Instant::now();
    for app in apps {
        let (status, body) = request(&socket, "POST", &format!("/v1/apps/{app}/apply"), "{}");
        assert_eq!(status, 202, "{body}");
    }
    // Every app accepted at once, whatever runs.
    assert!(started.elapsed() < Duration::from_secs(5));
    let mut saw_queued = false;
    let mut peak_running = 0;
    let mut peak_queued = 0;
    loop {
        let (status, body) = request(&socket, "GET", "/v1/apps", "");
        assert_eq!(status, 200, "{body}");
        let list: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap();
        let busy: Vec<&serde_json::Value> = list
            .iter()
            .filter(|app| app["state"] == "applying")
            .collect();
        // Those past their first step and not queued run: never more
        // than one (an operation just begun has no progress yet).
        let queued = busy
            .iter()
            .filter(|app| {
                app["progress"]
                    .as_str()
                    .is_some_and(|p| p.starts_with("queued"))
            })
            .count();
        let running = busy
            .iter()
            .filter(|app| {
                app["progress"]
                    .as_str()
                    .is_some_and(|p| !p.starts_with("queued"))
            })
            .count();
        saw_queued |= queued > 0;
        assert!(running <= 1, "{body}");
        peak_running = peak_running.max(gauge(&socket, "capstan_operations_running"));
        peak_queued = peak_queued.max(gauge(&socket, "capstan_operations_queued"));
        if list.iter().all(|app| app["state"] == "applied") {
            break;
        }
        assert!(
            list.iter().all(|app| matches!(
                app["state"].as_str(),
                Some("applying" | "applied" | "uploaded")
            )),
            "{body}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "not all applied: {body}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(saw_queued, "no apply was ever queued");
    assert_eq!(peak_running, 1);
    assert!(peak_queued >= 1, "{peak_queued}");
    assert_eq!(gauge(&socket, "capstan_operations_running"), 0);
    assert_eq!(gauge(&socket, "capstan_operations_queued"), 0);
}

// ---- what the API fuzzer found (`cargo xtask api-fuzz`) ----

/// Issue 29, found by schemathesis on the kube-double target: a forced
/// update to the version the app is already on (a "reinstall") failed to
/// stage and, cleaning up, removed the active version's stored bundle;
/// every later read of the app answered `409 stored bundle ... is
/// damaged`. It is now refused before anything is touched.
#[test]
fn a_forced_update_to_the_active_version_is_refused_and_keeps_its_bundle() {
    // (A shorter folder name: the socket's path has a length limit.)
    let served = Served::start("forced_update_to_the_active_version", false, &[]);
    let socket = served.socket();
    let bundle = tiny_bundle(&served.key, "again");
    let send = |path: &str| {
        let mut stream = UnixStream::connect(&socket).unwrap();
        let head =
            upload_head(bundle.len(), None).replacen("POST /v1/apps ", &format!("POST {path} "), 1);
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(&bundle).unwrap();
        answer(&mut stream)
    };
    let wait_applied = || {
        let started = Instant::now();
        loop {
            let (_, body) = request(&socket, "GET", "/v1/apps/again", "");
            if body.contains("\"state\":\"applied\"") {
                break;
            }
            assert!(!body.contains("failed"), "{body}");
            assert!(started.elapsed() < Duration::from_secs(30), "{body}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let (status, text) = send("/v1/apps");
    assert_eq!(status, 201, "{text}");
    let (status, body) = request(&socket, "POST", "/v1/apps/again/apply", "{}");
    assert_eq!(status, 202, "{body}");
    wait_applied();
    for path in ["/v1/updates?force=true", "/v1/updates"] {
        let (status, text) = send(path);
        assert!(status == 409 || status == 422, "{path}: {text}");
        // Nothing was touched: the app reads, its bundle is whole.
        let (status, body) = request(&socket, "GET", "/v1/apps/again/overrides", "");
        assert_eq!(status, 200, "after {path}: {body}");
        let (status, body) = request(&socket, "GET", "/v1/apps/again", "");
        assert_eq!(status, 200, "after {path}: {body}");
        assert!(body.contains("\"state\":\"applied\""), "{body}");
    }
    let (status, text) = send("/v1/updates?force=true");
    assert!(text.contains("already-exists"), "{status} {text}");
    // And it applies again.
    let (status, body) = request(&socket, "POST", "/v1/apps/again/apply", "{}");
    assert_eq!(status, 202, "{body}");
    wait_applied();
}
