//! A minimal HTTP/1.1 client over `std::net::TcpStream`, so the tests speak
//! to the double without a client library deciding anything for them.

#![allow(dead_code)]

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One response.
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    /// The body as JSON (Null if it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// A header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = body.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&body[..end]);
        let Ok(size) = usize::from_str_radix(size_text.split(';').next().unwrap_or("0").trim(), 16)
        else {
            break;
        };
        if size == 0 || body.len() < end + 2 + size {
            break;
        }
        out.extend_from_slice(&body[end + 2..end + 2 + size]);
        body = &body[(end + 4 + size).min(body.len())..];
    }
    out
}

/// Sends one request (`Connection: close`) and reads the whole response.
pub fn send(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<Resp> {
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(20)))?;
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes())?;
    // A server that refuses a body (413) may answer and close before the
    // body is all written: the answer is still there to read.
    let written = stream.write_all(body.as_bytes());
    let mut raw = Vec::new();
    let read = stream.read_to_end(&mut raw);
    if raw.is_empty() {
        written?;
        read?;
    }
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "no response head")
        })?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Ok(Resp {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// GET.
pub fn get(base: &str, path: &str) -> Resp {
    send(base, "GET", path, &[], "").unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// POST a JSON body.
pub fn post(base: &str, path: &str, body: &Value) -> Resp {
    send(
        base,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        &body.to_string(),
    )
    .unwrap_or_else(|e| panic!("POST {path}: {e}"))
}

/// Server-side apply (`PATCH` with `application/apply-patch+yaml`); `query` is appended.
pub fn apply(base: &str, path: &str, query: &str, body: &str) -> Resp {
    let full = format!("{path}?{query}");
    send(
        base,
        "PATCH",
        &full,
        &[("Content-Type", "application/apply-patch+yaml")],
        body,
    )
    .unwrap_or_else(|e| panic!("PATCH {full}: {e}"))
}

/// DELETE with a JSON body (may be empty).
pub fn delete(base: &str, path: &str, body: &str) -> Resp {
    send(
        base,
        "DELETE",
        path,
        &[("Content-Type", "application/json")],
        body,
    )
    .unwrap_or_else(|e| panic!("DELETE {path}: {e}"))
}

/// Polls `check` every 20ms until it holds or `secs` pass.
pub fn eventually(secs: u64, mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    check()
}
