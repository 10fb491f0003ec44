//! TLS on the TCP listener, with certificates the test generates (rcgen):
//! the CLI verifies the daemon against `--tls-ca` / `CAPSTAN_TLS_CA`, an
//! unknown CA and plain HTTP are refused, a client CA demands client
//! certificates (the CLI presents one with `--tls-cert`/`--tls-key`), and
//! plain HTTP off loopback is refused at start.

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use crate::daemon::text;
use crate::support::{capstan, fresh_dir};

const TOKEN: &str = "tls-test-token-of-32-characters-x";

/// A CA, and a server certificate for 127.0.0.1 it signed: (ca.pem,
/// server.pem, server.key) in `dir`.
fn certificates(dir: &Path, name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("{name} test CA"));
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "capstan");
    let cert = params.signed_by(&key, &issuer).unwrap();
    let paths = (
        dir.join(format!("{name}-ca.pem")),
        dir.join(format!("{name}-server.pem")),
        dir.join(format!("{name}-server.key")),
    );
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

fn keys(dir: &Path) -> PathBuf {
    let keys = dir.join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let out = capstan()
        .args(["keygen", "--name", "t", "--out"])
        .arg(&keys)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    keys
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(dir: &Path, port: u16, extra: &[&Path], flags: &[&str]) -> Serve {
    let token = dir.join("token");
    write_private(&token, &format!("{TOKEN}\n"));
    let mut command = capstan();
    command
        .args([
            "serve",
            "--listen",
            &format!("tcp:127.0.0.1:{port}"),
            "--token-file",
        ])
        .arg(&token)
        .arg("--state")
        .arg(dir.join(format!("state-{port}")))
        .arg("--trust")
        .arg(keys(dir));
    for (flag, path) in flags.iter().zip(extra) {
        command.arg(flag).arg(path);
    }
    let log = std::fs::File::create(dir.join(format!("daemon-{port}.log"))).unwrap();
    Serve(command.stdout(Stdio::null()).stderr(log).spawn().unwrap())
}

fn list(server: &str, ca: Option<&Path>, env_ca: Option<&Path>) -> Output {
    let mut command = capstan();
    command
        .args(["app", "list", "--server", server])
        .env("CAPSTAN_TOKEN", TOKEN)
        .env_remove("CAPSTAN_TLS_CA");
    if let Some(ca) = ca {
        command.arg("--tls-ca").arg(ca);
    }
    if let Some(ca) = env_ca {
        command.env("CAPSTAN_TLS_CA", ca);
    }
    command.output().unwrap()
}

fn wait_for_port(port: u16) {
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "daemon did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_cli_verifies_a_tls_daemon_and_refuses_another_ca_or_plain_http() {
    let dir = fresh_dir("tls_listener");
    let (ca, cert, key) = certificates(&dir, "good");
    let (other_ca, _, _) = certificates(&dir, "other");
    let port = free_port();
    let _daemon = serve(&dir, port, &[&cert, &key], &["--tls-cert", "--tls-key"]);
    wait_for_port(port);
    let https = format!("https://127.0.0.1:{port}");

    let out = list(&https, Some(&ca), None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The environment variable, and `http://` upgraded by a CA.
    let out = list(&https, None, Some(&ca));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = list(&format!("http://127.0.0.1:{port}"), Some(&ca), None);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let out = list(&https, Some(&other_ca), None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("TLS with the daemon at https://127.0.0.1"),
        "{err}"
    );
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    // Plain HTTP to the TLS port gets no API answer.
    let out = list(&format!("http://127.0.0.1:{port}"), None, None);
    assert!(!out.status.success());
    // A CA file that is not PEM: one line naming it.
    let junk = dir.join("junk.pem");
    std::fs::write(&junk, "not a certificate").unwrap();
    let out = list(&https, Some(&junk), None);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("junk.pem"),
        "{}",
        text(&out.stderr)
    );
}

/// A CA for clients and a client certificate it signed: (ca.pem,
/// client.pem, client.key) in `dir`.
fn client_certificate(dir: &Path, name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("{name} client CA"));
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("{name} operator"));
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &issuer).unwrap();
    let paths = (
        dir.join(format!("{name}-client-ca.pem")),
        dir.join(format!("{name}-client.pem")),
        dir.join(format!("{name}-client.key")),
    );
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

#[test]
fn a_client_ca_refuses_clients_without_a_certificate_and_admits_one_it_signed() {
    let dir = fresh_dir("tls_client_ca");
    let (ca, cert, key) = certificates(&dir, "server");
    let (client_ca, client_cert, client_key) = client_certificate(&dir, "ops");
    let (_, stranger_cert, stranger_key) = client_certificate(&dir, "stranger");
    let port = free_port();
    let _daemon = serve(
        &dir,
        port,
        &[&cert, &key, &client_ca],
        &["--tls-cert", "--tls-key", "--tls-client-ca"],
    );
    wait_for_port(port);
    let https = format!("https://127.0.0.1:{port}");
    let with = |identity: Option<(&Path, &Path)>, env: bool| {
        let mut command = capstan();
        command
            .args(["app", "list", "-o", "json", "--server", &https, "--tls-ca"])
            .arg(&ca)
            .env("CAPSTAN_TOKEN", TOKEN)
            .env_remove("CAPSTAN_TLS_CERT")
            .env_remove("CAPSTAN_TLS_KEY");
        match identity {
            Some((cert, key)) if env => {
                command
                    .env("CAPSTAN_TLS_CERT", cert)
                    .env("CAPSTAN_TLS_KEY", key);
            }
            Some((cert, key)) => {
                command
                    .arg("--tls-cert")
                    .arg(cert)
                    .arg("--tls-key")
                    .arg(key);
            }
            None => {}
        }
        command.output().unwrap()
    };

    // No certificate: one line that says what is missing and how to give it.
    let out = with(None, false);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: TLS with the daemon at https://127.0.0.1"),
        "{err}"
    );
    assert!(err.contains("requires a client certificate"), "{err}");
    assert!(err.contains("--tls-cert and --tls-key"), "{err}");

    // A certificate the client CA signed: by flags and by the environment.
    let out = with(Some((&client_cert, &client_key)), false);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "[]");
    let out = with(Some((&client_cert, &client_key)), true);
    assert!(out.status.success(), "{}", text(&out.stderr));

    // One another CA signed: refused, on one line.
    let out = with(Some((&stranger_cert, &stranger_key)), false);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("TLS with the daemon at"), "{err}");
    assert!(err.contains("--tls-client-ca"), "{err}");

    // A key that is not the certificate's, and a certificate without its key.
    let out = with(Some((&client_cert, &stranger_key)), false);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("stranger-client.key"), "{err}");
    let out = capstan()
        .args(["app", "list", "--server", &https, "--tls-cert"])
        .arg(&client_cert)
        .env_remove("CAPSTAN_TLS_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--tls-key"),
        "{}",
        text(&out.stderr)
    );

    let log = std::fs::read_to_string(dir.join(format!("daemon-{port}.log"))).unwrap();
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn plain_http_off_loopback_is_refused_and_a_bad_key_is_one_line() {
    let dir = fresh_dir("tls_refusals");
    let token = dir.join("token");
    write_private(&token, &format!("{TOKEN}\n"));
    let keys = keys(&dir);
    let start = |listen: &str, extra: &[&str]| {
        capstan()
            .args(["serve", "--listen", listen, "--token-file"])
            .arg(&token)
            .arg("--state")
            .arg(dir.join("state"))
            .arg("--trust")
            .arg(&keys)
            .args(extra)
            .output()
            .unwrap()
    };
    // 0.0.0.0 is refused before anything binds.
    let out = start("tcp:0.0.0.0:0", &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("without TLS would send the token in clear"),
        "{err}"
    );
    assert!(err.contains("--insecure-plain-http"), "{err}");

    let (_, cert, _) = certificates(&dir, "k");
    let out = start(
        "tcp:127.0.0.1:0",
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            cert.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("key") && err.contains("k-server.pem"), "{err}");
    assert!(err.contains("holds no PEM private key"), "{err}");
}

/// Writes a token file readable by its owner only (the daemon refuses
/// one open to others).
fn write_private(path: &std::path::Path, text: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}
