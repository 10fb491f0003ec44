//! `cargo xtask api-fuzz [SECONDS]`: schemathesis against a live daemon.
//!
//! Builds `capstan` (with the test features, as the tests do), starts
//! `capstan serve` on TCP loopback with a bearer token and the directory
//! target, and runs schemathesis from the daemon's own OpenAPI document
//! (`GET /v1/openapi.json`) for SECONDS (default 120): every generated
//! request must get an answer the document allows (status, content type,
//! headers, body schema), never a 5xx, and bad input must be refused.
//! After the run the daemon must still answer `/v1/health`.
//!
//! schemathesis comes from PyPI, pinned, into a virtualenv under the
//! target folder that later runs reuse. `tests/api-fuzz/hooks.py` teaches
//! it to send a bundle body (`application/gzip`) as raw bytes.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{TEST_FEATURES, cargo, run, target_dir, workspace_root};

/// The schemathesis release the check is pinned to.
const SCHEMATHESIS: &str = "4.32.5";

const TOKEN: &str = "api-fuzz-token-0123456789abcdef";

/// Checks that do not apply: `positive_data_acceptance` expects a 2xx for
/// any schema-valid request, but most name apps that do not exist (404 is
/// the right answer); the stateful checks need links the document does
/// not declare.
const EXCLUDED_CHECKS: &str =
    "positive_data_acceptance,use_after_free,ensure_resource_availability";

/// Kills the daemon when dropped.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn api_fuzz(args: &[String]) -> Result<(), String> {
    let seconds: u64 = match args.first() {
        Some(text) => text
            .parse()
            .map_err(|_| format!("{text:?} is not a number of seconds"))?,
        None => 120,
    };
    let schemathesis = install()?;
    let mut build = cargo();
    build
        .args(["build", "-p", "capstan", "--bin", "capstan"])
        .args(TEST_FEATURES);
    run(build, "building capstan")?;
    let capstan = target_dir().join("debug/capstan");
    let dir = target_dir().join("api-fuzz/run");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("keys"))
        .map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let mut keygen = Command::new(&capstan);
    keygen
        .args(["keygen", "--name", "fuzz", "--out"])
        .arg(dir.join("keys"))
        .stdout(Stdio::null());
    run(keygen, "capstan keygen")?;
    let token = dir.join("token");
    write_private(&token, TOKEN)?;
    let port = free_port()?;
    let log = std::fs::File::create(dir.join("daemon.log"))
        .map_err(|e| format!("creating the daemon log: {e}"))?;
    let child = Command::new(&capstan)
        .arg("serve")
        .arg("--state")
        .arg(dir.join("state"))
        .arg("--trust")
        .arg(dir.join("keys"))
        .arg("--target")
        .arg(format!("dir:{}", dir.join("applied").display()))
        .arg("--listen")
        .arg(format!("tcp:127.0.0.1:{port}"))
        .arg("--token-file")
        .arg(&token)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("starting capstan serve: {e}"))?;
    let mut daemon = Daemon(child);
    wait_for(port, &mut daemon)?;
    let base = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let mut fuzz = Command::new(&schemathesis);
    fuzz.arg("run")
        .arg(format!("{base}/v1/openapi.json"))
        .args(["--header", &format!("Authorization: Bearer {TOKEN}")])
        .args(["--checks", "all", "--exclude-checks", EXCLUDED_CHECKS])
        .args(["--phases", "examples,coverage,fuzzing"])
        .args(["--max-time", &seconds.to_string()])
        .args(["--workers", "2", "--request-timeout", "20"])
        .args(["--generation-database", "none"])
        .arg("--no-color")
        .current_dir(&dir)
        .env(
            "SCHEMATHESIS_HOOKS",
            workspace_root().join("tests/api-fuzz/hooks.py"),
        )
        .env("NO_COLOR", "1");
    let fuzzed = run(fuzz, "schemathesis");
    eprintln!("api-fuzz: schemathesis ran {:?}", started.elapsed());
    let alive = health(port);
    if let Ok(Some(status)) = daemon.0.try_wait() {
        return Err(format!(
            "the daemon exited during the run ({status}); its log is {}",
            dir.join("daemon.log").display()
        ));
    }
    alive.map_err(|e| format!("the daemon stopped answering after the run: {e}"))?;
    fuzzed
}

/// The pinned schemathesis in a virtualenv under the target folder.
fn install() -> Result<PathBuf, String> {
    let venv = target_dir().join("api-fuzz/venv");
    let bin = super::python::ensure_venv(&venv, &[&format!("schemathesis=={SCHEMATHESIS}")])?;
    Ok(bin.join("schemathesis"))
}

fn write_private(path: &Path, text: &str) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    file.write_all(text.as_bytes())
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("finding a free port: {e}"))
}

fn wait_for(port: u16, daemon: &mut Daemon) -> Result<(), String> {
    let started = Instant::now();
    while health(port).is_err() {
        if let Ok(Some(status)) = daemon.0.try_wait() {
            return Err(format!("capstan serve exited at start ({status})"));
        }
        if started.elapsed() > Duration::from_secs(60) {
            return Err("capstan serve did not answer within 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// `GET /v1/health` with the token: Ok on a 200 within 10 s.
fn health(port: u16) -> Result<(), String> {
    use std::io::Read as _;
    let mut stream =
        std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    write!(
        stream,
        "GET /v1/health HTTP/1.1\r\nHost: capstan\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .map_err(|e| e.to_string())?;
    if answer.starts_with("HTTP/1.1 200") {
        Ok(())
    } else {
        Err(answer.lines().next().unwrap_or_default().to_owned())
    }
}
