//! The `kube-double` binary: writes a kubeconfig, prints its URL, serves,
//! and exits 0 on SIGTERM.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn binary_serves_until_sigterm() {
    let dir = std::env::temp_dir().join(format!("kube-double-binary-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let kubeconfig = dir.join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kube-double"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--no-controllers",
            "--token",
            "t0k",
        ])
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting kube-double: {e}"));
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    let url = line.trim().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
    let text = std::fs::read_to_string(&kubeconfig).unwrap_or_default();
    assert!(
        text.contains(&url) && text.contains("current-context: double"),
        "{text}"
    );

    let mut stream = std::net::TcpStream::connect(url.trim_start_matches("http://"))
        .unwrap_or_else(|e| panic!("connecting: {e}"));
    let _ = stream.write_all(b"GET /version HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0k\r\nConnection: close\r\n\r\n");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    assert!(
        response.starts_with("HTTP/1.1 200") && response.contains("v1.33.0"),
        "{response}"
    );

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    assert!(killed.is_ok_and(|s| s.success()));
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        status.is_some_and(|s| s.success()),
        "exit after SIGTERM: {status:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
