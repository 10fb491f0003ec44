//! A registry token service for the registry tests: the bearer-token flow
//! of the distribution spec, small enough to read in one go.
//!
//! `GET /token?service=S&scope=repository:NAME:ACTIONS` with HTTP basic
//! auth answers `{"token": JWT}`. The JWT is signed ES256 by a key whose
//! certificate travels in the `x5c` header; a CA the test writes signed
//! that certificate, and the registry trusts the CA as its
//! `rootcertbundle`. The claims are the ones distribution's
//! `registry/auth/token` checks: `iss` (the issuer the registry is
//! configured with), `sub`, `aud` (the service), `exp`, `nbf`, `iat`,
//! `jti`, and `access` (what was asked for and the user may do). A wrong
//! password or no credentials get a 401 with a JSON `details` line, as
//! Docker Hub's token service answers.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use rcgen::SigningKey as _;

/// The registry's `auth.token.issuer`.
pub const ISSUER: &str = "capstan-test-tokens";
/// The registry's `auth.token.service`: the tokens' audience.
pub const SERVICE: &str = "capstan-test-registry";

/// A user, their password, and the actions they may be granted.
pub type User = (&'static str, &'static str, &'static [&'static str]);

/// What one token request got: the user (empty when anonymous), the
/// scope asked for, and the HTTP status answered.
#[derive(Debug, Clone)]
pub struct Issued {
    pub user: String,
    pub scope: String,
    pub status: u16,
}

/// A token service on a loopback port, stopped when dropped.
pub struct TokenServer {
    port: u16,
    ca: PathBuf,
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<Issued>>>,
}

struct Signer {
    key: rcgen::KeyPair,
    /// The signing certificate, DER in standard base64 (the `x5c` form).
    x5c: String,
}

impl TokenServer {
    /// Writes a CA (`dir/token-ca.pem`, for the registry's
    /// `rootcertbundle`) and a signing certificate it signed, and starts
    /// answering token requests for `users`.
    pub fn start(dir: &Path, users: &'static [User]) -> TokenServer {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "capstan test token CA");
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "capstan test token signer");
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        let cert = params.signed_by(&key, &issuer).unwrap();
        let ca = dir.join("token-ca.pem");
        std::fs::write(&ca, ca_cert.pem()).unwrap();
        let signer = Signer {
            key,
            x5c: base64::engine::general_purpose::STANDARD.encode(cert.der()),
        };

        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (thread_stop, thread_log) = (stop.clone(), log.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if thread_stop.load(Ordering::Relaxed) {
                    return;
                }
                if let Ok(stream) = stream {
                    let issued = answer(stream, &signer, users);
                    if let Some(issued) = issued {
                        thread_log.lock().unwrap().push(issued);
                    }
                }
            }
        });
        TokenServer {
            port,
            ca,
            stop,
            log,
        }
    }

    /// The registry's `auth.token.realm`.
    pub fn realm(&self) -> String {
        format!("http://127.0.0.1:{}/token", self.port)
    }

    /// The CA the registry trusts tokens of (`auth.token.rootcertbundle`).
    pub fn ca(&self) -> &Path {
        &self.ca
    }

    /// The token requests answered so far.
    pub fn issued(&self) -> Vec<Issued> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Answers one request; what it issued, when it was a token request.
fn answer(mut stream: TcpStream, signer: &Signer, users: &[User]) -> Option<Issued> {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        if stream.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let target = head.split_whitespace().nth(1).unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(key, _)| *key == name)
            .map(|(_, value)| percent_decode(value))
    };
    let basic = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        .and_then(|(_, value)| value.trim().strip_prefix("Basic ").map(str::to_owned))
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
        .and_then(|bytes| String::from_utf8(bytes).ok());
    let scope = param("scope").unwrap_or_default();
    let user = basic
        .as_deref()
        .and_then(|pair| pair.split_once(':'))
        .map(|(user, _)| user.to_owned())
        .unwrap_or_default();
    let (status, body) = if path != "/token" {
        (404, r#"{"details":"not found"}"#.to_owned())
    } else if param("service").as_deref() != Some(SERVICE) {
        (400, r#"{"details":"unknown service"}"#.to_owned())
    } else {
        let known = basic.as_deref().and_then(|pair| {
            let (name, password) = pair.split_once(':')?;
            users.iter().find(|(u, p, _)| *u == name && *p == password)
        });
        match (basic.is_some(), known) {
            (false, _) => (401, r#"{"details":"authentication required"}"#.to_owned()),
            (true, None) => (
                401,
                r#"{"details":"incorrect username or password"}"#.to_owned(),
            ),
            (true, Some((name, _, allowed))) => {
                let token = sign(signer, name, &access(&scope, allowed));
                (
                    200,
                    serde_json::json!({ "token": token, "expires_in": 300 }).to_string(),
                )
            }
        }
    };
    let reason = if status == 200 { "OK" } else { "Error" };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    (path == "/token").then_some(Issued {
        user,
        scope,
        status,
    })
}

/// The `access` claim: each `repository:NAME:ACTIONS` scope asked for,
/// with the actions the user may do.
fn access(scope: &str, allowed: &[&str]) -> serde_json::Value {
    let entries: Vec<serde_json::Value> = scope
        .split(' ')
        .filter_map(|one| {
            let (kind, rest) = one.split_once(':')?;
            let (name, actions) = rest.rsplit_once(':')?;
            let granted: Vec<&str> = actions.split(',').filter(|a| allowed.contains(a)).collect();
            Some(serde_json::json!({ "type": kind, "name": name, "actions": granted }))
        })
        .collect();
    serde_json::Value::Array(entries)
}

/// A compact JWS (ES256) of the claims distribution checks.
fn sign(signer: &Signer, subject: &str, access: &serde_json::Value) -> String {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut jti = [0u8; 16];
    getrandom::fill(&mut jti).unwrap();
    let header = serde_json::json!({ "typ": "JWT", "alg": "ES256", "x5c": [signer.x5c] });
    let claims = serde_json::json!({
        "iss": ISSUER,
        "sub": subject,
        "aud": SERVICE,
        "exp": now + 300,
        "nbf": now - 10,
        "iat": now,
        "jti": hex::encode(jti),
        "access": access,
    });
    let signing_input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let der = signer.key.sign(signing_input.as_bytes()).unwrap();
    format!("{signing_input}.{}", b64(&raw_signature(&der)))
}

/// An ECDSA P-256 signature from ASN.1 DER (`SEQUENCE { r, s }`, what ring
/// signs for certificates) to the fixed `r || s` a JWS carries.
fn raw_signature(der: &[u8]) -> Vec<u8> {
    assert_eq!(der[0], 0x30, "not a DER sequence");
    let mut at = if der[1] & 0x80 == 0 { 2 } else { 3 };
    let mut out = Vec::with_capacity(64);
    for _ in 0..2 {
        assert_eq!(der[at], 0x02, "not a DER integer");
        let len = usize::from(der[at + 1]);
        let int = &der[at + 2..at + 2 + len];
        let int = &int[int.len().saturating_sub(32)..];
        out.extend(std::iter::repeat_n(0u8, 32 - int.len()));
        out.extend_from_slice(int);
        at += 2 + len;
    }
    out
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
