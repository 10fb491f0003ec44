//! The API under load and under abuse (issue 29), printed, not criterion:
//! `app list` (`GET /v1/apps`) and `app show` (`GET /v1/apps/{app}`) at a
//! fixed rate while 20 apps apply, latency measured from each request's
//! scheduled start (so a stalled daemon cannot hide behind a slow
//! client), p50/p99 and errors; then the same while abusive clients run:
//! half-open connections re-opened as the header timeout closes them,
//! stalled uploads, large uploads streaming, and a peer guessing tokens.
//!
//! The daemon runs in process on TCP loopback with a token and the
//! directory target, under the default limits; the apps are plugin-free
//! (five ConfigMap charts each), so nothing needs building first.
//!
//! `cargo bench -p capstan --bench api_load` (`CAPSTAN_LOAD_SECS` sets each
//! phase's length, default 10).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use capstan::api::{self, Address};
use capstan::bundle::{self, Digest, Manifest, ManifestEntry};
use capstan::kube::DirTarget;
use capstan::lifecycle::{Lifecycle, Options};
use capstan::trust::{SigningKey, TrustStore};

const TOKEN: &str = "api-load-token-0123456789abcdef";
const APPS: usize = 20;
const CHARTS: usize = 5;
/// Requests per second of the measured client.
const RATE: u64 = 50;
/// Half-open connections the abuse keeps open.
const HALF_OPEN: usize = 300;

fn main() {
    let secs: u64 = std::env::var("CAPSTAN_LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let phase = Duration::from_secs(secs);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let key = SigningKey::generate("load").unwrap();
    let mut trust = TrustStore::empty();
    trust
        .add_openssh(&key.public_key_line().unwrap(), Path::new("load.pub"))
        .unwrap();
    let lifecycle = Lifecycle::open(Options::new(
        root.join("state"),
        trust,
        Arc::new(DirTarget::new(root.join("applied"))),
    ))
    .unwrap();
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime
            .block_on(api::serve(
                lifecycle,
                &Address::Tcp(addr),
                Some(TOKEN.into()),
                std::future::pending(),
            ))
            .unwrap();
    });
    while TcpStream::connect(addr).is_err() {
        std::thread::sleep(Duration::from_millis(5));
    }
    for n in 0..APPS {
        let bundle = app_bundle(&root, &key, &format!("app{n}"));
        let (status, text) = request(addr, "POST", "/v1/apps", Some(&bundle), TOKEN);
        assert_eq!(status, 201, "{text}");
    }
    println!("| phase | requests | errors | p50 ms | p99 ms | max ms |");
    println!("|---|---|---|---|---|---|");
    report("idle", &measure(addr, phase, None));
    report("20 apps applying", &measure(addr, phase, Some(APPS)));
    let stop = Arc::new(AtomicBool::new(false));
    let abusers = abuse(addr, &key, &stop);
    std::thread::sleep(Duration::from_secs(1));
    report("idle, under abuse", &measure(addr, phase, None));
    report(
        "20 apps applying, under abuse",
        &measure(addr, phase, Some(APPS)),
    );
    stop.store(true, Ordering::Relaxed);
    for abuser in abusers {
        let _ = abuser.join();
    }
}

/// Latencies (ms) and errors of one phase.
struct Phase {
    latencies: Vec<f64>,
    errors: usize,
}

fn report(name: &str, phase: &Phase) {
    let mut sorted = phase.latencies.clone();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| {
        if sorted.is_empty() {
            return f64::NAN;
        }
        let index = ((sorted.len() - 1) as f64 * q).round() as usize;
        sorted[index]
    };
    println!(
        "| {name} | {} | {} | {:.1} | {:.1} | {:.1} |",
        sorted.len() + phase.errors,
        phase.errors,
        at(0.5),
        at(0.99),
        sorted.last().copied().unwrap_or(f64::NAN)
    );
}

/// `RATE` requests a second for `length`, alternating list and show,
/// from 4 client threads; with `applying`, that many apps are re-applied
/// at the start and again whenever their operation ends.
fn measure(addr: SocketAddr, length: Duration, applying: Option<usize>) -> Phase {
    let start = Instant::now() + Duration::from_millis(50);
    let stop = Arc::new(AtomicBool::new(false));
    let appliers: Vec<_> = (0..applying.unwrap_or(0))
        .map(|n| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let (status, text) =
                        request(addr, "POST", &format!("/v1/apps/app{n}/apply"), None, TOKEN);
                    if status != 202 {
                        // Busy from the previous one: wait a little.
                        let _ = text;
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    }
                    // Poll until it ends.
                    loop {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        let (_, text) =
                            request(addr, "GET", &format!("/v1/apps/app{n}"), None, TOKEN);
                        if !text.contains("\"state\":\"applying\"") {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            })
        })
        .collect();
    const CLIENTS: u64 = 4;
    let interval = Duration::from_micros(1_000_000 * CLIENTS / RATE);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            std::thread::spawn(move || {
                let mut latencies = Vec::new();
                let mut errors = 0;
                let offset = interval / CLIENTS as u32 * c as u32;
                let mut k: u32 = 0;
                loop {
                    let due = start + offset + interval * k;
                    if due > start + length {
                        break;
                    }
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    }
                    let path = if (k + c as u32).is_multiple_of(2) {
                        "/v1/apps".to_owned()
                    } else {
                        format!("/v1/apps/app{}", k as usize % APPS)
                    };
                    let (status, _) = request(addr, "GET", &path, None, TOKEN);
                    if status == 200 {
                        latencies.push(due.elapsed().as_secs_f64() * 1000.0);
                    } else {
                        errors += 1;
                    }
                    k += 1;
                }
                (latencies, errors)
            })
        })
        .collect();
    let mut phase = Phase {
        latencies: Vec::new(),
        errors: 0,
    };
    for client in clients {
        let (latencies, errors) = client.join().unwrap();
        phase.latencies.extend(latencies);
        phase.errors += errors;
    }
    stop.store(true, Ordering::Relaxed);
    for applier in appliers {
        let _ = applier.join();
    }
    phase
}

/// The abusive clients, until `stop`.
fn abuse(
    addr: SocketAddr,
    key: &SigningKey,
    stop: &Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<()>> {
    let mut threads = Vec::new();
    // Half-open connections: half a request line, re-opened when closed.
    {
        let stop = Arc::clone(stop);
        threads.push(std::thread::spawn(move || {
            let mut held: Vec<TcpStream> = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                // Still open while a read would block; closed (EOF or a
                // reset) once the daemon's header timeout passed.
                held.retain(|stream| {
                    let mut buf = [0u8; 1];
                    matches!((&*stream).read(&mut buf), Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock)
                });
                while held.len() < HALF_OPEN {
                    match TcpStream::connect(addr) {
                        Ok(mut stream) => {
                            let _ = stream.write_all(b"GET /v1/app");
                            let _ = stream.set_nonblocking(true);
                            held.push(stream);
                        }
                        Err(_) => break,
                    }
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }));
    }
    // Large uploads streaming, one after another, from two clients.
    let large = Arc::new(noise_bundle(key, 64));
    for _ in 0..2 {
        let stop = Arc::clone(stop);
        let large = Arc::clone(&large);
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = request(addr, "POST", "/v1/apps", Some(&large), TOKEN);
            }
        }));
    }
    // Stalled uploads: a head and a few bytes, then nothing.
    {
        let stop = Arc::clone(stop);
        let large = Arc::clone(&large);
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let stalled: Vec<TcpStream> = (0..2)
                    .filter_map(|_| {
                        let mut stream = TcpStream::connect(addr).ok()?;
                        let head = format!(
                            "POST /v1/apps HTTP/1.1\r\nHost: load\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/gzip\r\nContent-Length: {}\r\n\r\n",
                            large.len()
                        );
                        stream.write_all(head.as_bytes()).ok()?;
                        stream.write_all(&large[..4096]).ok()?;
                        Some(stream)
                    })
                    .collect();
                for _ in 0..50 {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                drop(stalled);
            }
        }));
    }
    // A token guesser, from another loopback address (the daemon slows
    // down failed authentications per address: one on the measured
    // client's own address would slow that client, by design).
    {
        let stop = Arc::clone(stop);
        threads.push(std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let connected = runtime.block_on(async {
                    let socket = tokio::net::TcpSocket::new_v4().ok()?;
                    socket.bind(SocketAddr::from(([127, 0, 0, 2], 0))).ok()?;
                    socket.connect(addr).await.ok()
                });
                let Some(stream) = connected.and_then(|s| s.into_std().ok()) else {
                    continue;
                };
                let _ = stream.set_nonblocking(false);
                let _ = exchange(stream, "GET", "/v1/apps", None, &format!("guess-{n}"));
            }
        }));
    }
    threads
}

/// One request on a new connection: (status, body).
fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    bundle: Option<&[u8]>,
    token: &str,
) -> (u16, String) {
    let Ok(stream) = TcpStream::connect(addr) else {
        return (0, String::new());
    };
    exchange(stream, method, path, bundle, token)
}

/// One request and its answer on `stream`: (status, body).
fn exchange(
    mut stream: TcpStream,
    method: &str,
    path: &str,
    bundle: Option<&[u8]>,
    token: &str,
) -> (u16, String) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let (kind, body): (&str, &[u8]) = match bundle {
        Some(bytes) => ("application/gzip", bytes),
        None => ("application/json", b""),
    };
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: load\r\nAuthorization: Bearer {token}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if stream.write_all(head.as_bytes()).is_err() {
        return (0, String::new());
    }
    let _ = stream.write_all(body);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

/// A plugin-free app of [`CHARTS`] ConfigMap charts, built and signed.
fn app_bundle(root: &Path, key: &SigningKey, name: &str) -> Vec<u8> {
    let app = root.join(format!("src-{name}"));
    let mut meta = format!("name: {name}\nversion: 1.0.0\ncharts:\n");
    let mut charts = Vec::new();
    for c in 0..CHARTS {
        let chart = format!("c{c}");
        let dir = app.join("charts").join(&chart);
        std::fs::create_dir_all(dir.join("templates")).unwrap();
        std::fs::write(
            dir.join("Chart.yaml"),
            format!("apiVersion: v2\nname: {chart}\nversion: 1.0.0\n"),
        )
        .unwrap();
        std::fs::write(dir.join("values.yaml"), "greeting: hi\n").unwrap();
        std::fs::write(
            dir.join("templates/cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n",
        )
        .unwrap();
        meta.push_str(&format!(
            "  - {{name: {chart}, path: charts/{chart}, namespace: {name}, release: {chart}}}\n"
        ));
        charts.push(chart);
    }
    meta.push_str(&format!(
        "chart_groups:\n  - {{name: all, mode: sequential, charts: [{}]}}\n",
        charts.join(", ")
    ));
    std::fs::write(app.join("capstan.yaml"), meta).unwrap();
    let out = root.join(format!("{name}.tgz"));
    bundle::build(&app, key, &out, &|_, _| Ok(())).unwrap();
    std::fs::read(out).unwrap()
}

/// A signed bundle of a tiny chart and `mib` MiB of incompressible bytes,
/// gzipped without compression (its size on the wire is its size).
fn noise_bundle(key: &SigningKey, mib: usize) -> Vec<u8> {
    let mut blob = Vec::with_capacity((mib << 20) + 8);
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    while blob.len() < mib << 20 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        blob.extend_from_slice(&state.to_le_bytes());
    }
    blob.truncate(mib << 20);
    let files: Vec<(&str, Vec<u8>)> = vec![
        (
            "capstan.yaml",
            b"name: noise\nversion: 1.0.0\ncharts:\n  - {name: tiny, path: charts/tiny, namespace: noise, release: tiny}\nchart_groups:\n  - {name: all, mode: sequential, charts: [tiny]}\n".to_vec(),
        ),
        (
            "charts/tiny/Chart.yaml",
            b"apiVersion: v2\nname: tiny\nversion: 0.1.0\n".to_vec(),
        ),
        (
            "charts/tiny/templates/cm.yaml",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tiny\n".to_vec(),
        ),
        ("blobs/noise.bin", blob),
    ];
    let manifest = Manifest::from_entries(files.iter().map(|(path, data)| ManifestEntry {
        path: (*path).to_owned(),
        digest: Digest::of(data),
    }))
    .unwrap()
    .render();
    let signature = key.sign(manifest.as_bytes()).unwrap();
    let mut tar = Vec::new();
    let mut add = |name: &str, data: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_path(name).unwrap();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        tar.extend_from_slice(header.as_bytes());
        tar.extend_from_slice(data);
        while !tar.len().is_multiple_of(512) {
            tar.push(0);
        }
    };
    add("MANIFEST", manifest.as_bytes());
    add("MANIFEST.sig", signature.as_bytes());
    for (path, data) in &files {
        add(path, data);
    }
    tar.extend_from_slice(&[0u8; 1024]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}
