//! Bundles through a real OCI registry: the CNCF distribution registry
//! (Debian's `docker-registry`), started by each test on a loopback port
//! with a config file the test writes. Push, pull by tag and by digest,
//! upload and update into the daemon from the registry, a tampered blob, a
//! foreign artifact, htpasswd auth.
//!
//! Without the binary a test prints why and passes, except under CI
//! (`CI` set), where `.ci/run` installs the package and a missing binary
//! fails the test.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use crate::daemon::{Daemon, text};
use crate::token_server::TokenServer;

const BINARY: &str = "docker-registry";

/// A registry process, killed when dropped.
pub(crate) struct Registry {
    child: Child,
    port: u16,
    root: PathBuf,
}

impl Registry {
    /// Starts a registry storing under `dir/registry`; with `users`, behind
    /// htpasswd basic auth. `None` (after printing why) when the binary is
    /// not installed and this is not CI.
    pub(crate) fn start(dir: &Path, users: &[(&str, &str)]) -> Option<Registry> {
        Registry::start_with(dir, |root| {
            if users.is_empty() {
                return String::new();
            }
            let lines: Vec<String> = users
                .iter()
                .map(|(user, password)| format!("{user}:{}", bcrypt::hash(password, 5).unwrap()))
                .collect();
            let htpasswd = root.join("htpasswd");
            std::fs::write(&htpasswd, lines.join("\n") + "\n").unwrap();
            format!(
                "auth:\n  htpasswd:\n    realm: capstan-test\n    path: {}\n",
                htpasswd.display()
            )
        })
    }

    /// A registry that takes bearer tokens from `tokens` (`auth: token`).
    fn start_with_tokens(dir: &Path, tokens: &TokenServer) -> Option<Registry> {
        Registry::start_with(dir, |_| {
            format!(
                "auth:\n  token:\n    realm: {}\n    service: {}\n    issuer: {}\n    rootcertbundle: {}\n",
                tokens.realm(),
                crate::token_server::SERVICE,
                crate::token_server::ISSUER,
                tokens.ca().display()
            )
        })
    }

    /// Starts a registry whose config's `auth` section is what `auth`
    /// writes (given the registry's folder).
    fn start_with(dir: &Path, auth: impl FnOnce(&Path) -> String) -> Option<Registry> {
        let found = Command::new(BINARY)
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success());
        if !found {
            assert!(
                std::env::var_os("CI").is_none(),
                "{BINARY} is not installed; .ci/run installs Debian's docker-registry"
            );
            eprintln!("skipped: {BINARY} is not installed (apt-get install docker-registry)");
            return None;
        }
        let root = dir.join("registry");
        std::fs::create_dir_all(&root).unwrap();
        let port = free_port();
        let auth = auth(&root);
        let config = root.join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n\
                 http:\n  addr: 127.0.0.1:{port}\n{auth}",
                root.join("data").display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(root.join("registry.log")).unwrap();
        let child = Command::new(BINARY)
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut registry = Registry { child, port, root };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = registry.child.try_wait() {
                panic!("registry exited with {status}: {}", registry.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "registry did not start: {}",
                registry.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(registry)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.root.join("registry.log")).unwrap_or_default()
    }

    pub(crate) fn reference(&self, repo_and_target: &str) -> String {
        format!("oci://127.0.0.1:{}/{repo_and_target}", self.port)
    }

    /// The file the registry stores a blob in.
    fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.root
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// A raw HTTP request to the registry: (status, body).
    fn http(&self, method: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, String) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.port,
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let status = answer
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, answer)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Runs `capstan ARGS` against the daemon and the registry (plain HTTP).
fn cli(daemon: &Daemon, args: &[&str]) -> std::process::Output {
    let mut all: Vec<&str> = args.to_vec();
    all.push("--plain-http");
    daemon.cli(&all)
}

fn ok(daemon: &Daemon, args: &[&str]) -> String {
    let out = cli(daemon, args);
    assert!(
        out.status.success(),
        "capstan {args:?} failed: {}\ndaemon log:\n{}",
        text(&out.stderr),
        daemon.log()
    );
    text(&out.stdout)
}

/// The error of a command that must fail with exit 1: one `error:` line.
fn refused(daemon: &Daemon, args: &[&str]) -> String {
    one_error_line(&cli(daemon, args))
}

#[test]
fn push_then_pull_by_tag_and_by_digest_gives_the_same_bundle() {
    let daemon = Daemon::start("registry_push_pull");
    let Some(registry) = Registry::start(&daemon.dir, &[]) else {
        return;
    };
    let bundle = daemon.shop_bundle("1.0.0", |_| {});
    let bundle_text = bundle.to_str().unwrap();
    let tag = registry.reference("apps/shop:1.0.0");
    let digest = ok(&daemon, &["bundle", "push", bundle_text, &tag]);
    let digest = digest.trim();
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    // The manifest is deterministic: the same bundle pushed again (under
    // another tag) has the same digest.
    let again = ok(
        &daemon,
        &[
            "bundle",
            "push",
            bundle_text,
            &registry.reference("apps/shop:latest"),
        ],
    );
    assert_eq!(again.trim(), digest);

    let original = std::fs::read(&bundle).unwrap();
    let by_tag = daemon.dir.join("by-tag.tgz");
    let out = ok(
        &daemon,
        &["bundle", "pull", &tag, "-o", by_tag.to_str().unwrap()],
    );
    assert!(out.contains(digest), "{out}");
    assert_eq!(std::fs::read(&by_tag).unwrap(), original);
    let pinned = registry.reference(&format!("apps/shop@{digest}"));
    let by_digest = daemon.dir.join("by-digest.tgz");
    ok(
        &daemon,
        &["bundle", "pull", &pinned, "-o", by_digest.to_str().unwrap()],
    );
    assert_eq!(std::fs::read(&by_digest).unwrap(), original);
    // Without -o: NAME-VERSION.tgz from the bundle's own metadata.
    let out = capstan_in(&daemon.dir, &["bundle", "pull", &tag, "--plain-http"]);
    assert!(out.contains("shop-1.0.0.tgz"), "{out}");
    assert_eq!(
        std::fs::read(daemon.dir.join("shop-1.0.0.tgz")).unwrap(),
        original
    );

    // One line for each bad input.
    let unknown = refused(
        &daemon,
        &["bundle", "pull", &registry.reference("apps/shop:9.9.9")],
    );
    assert!(
        unknown.contains("apps/shop:9.9.9 is not in the registry"),
        "{unknown}"
    );
    let absent = format!("sha256:{}", "0".repeat(64));
    let missing = refused(
        &daemon,
        &[
            "bundle",
            "pull",
            &registry.reference(&format!("apps/shop@{absent}")),
        ],
    );
    assert!(missing.contains("is not in the registry"), "{missing}");
    let bad = refused(&daemon, &["bundle", "pull", "oci://127.0.0.1/Shop"]);
    assert!(bad.contains("names no tag or digest"), "{bad}");
    let not_bundle = daemon.dir.join("not-a-bundle.tgz");
    std::fs::write(&not_bundle, b"plain text").unwrap();
    let err = refused(
        &daemon,
        &["bundle", "push", not_bundle.to_str().unwrap(), &tag],
    );
    assert!(err.contains("not a capstan bundle"), "{err}");
    // HTTPS unless plain HTTP is asked for: the same registry over TLS fails.
    let out = daemon.cli(&["bundle", "pull", &tag]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("https://"),
        "{}",
        text(&out.stderr)
    );
}

fn capstan_in(dir: &Path, args: &[&str]) -> String {
    let out = crate::support::capstan()
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn upload_and_update_from_the_registry_record_the_resolved_digest() {
    let daemon = Daemon::start("registry_upload_update");
    let Some(registry) = Registry::start(&daemon.dir, &[]) else {
        return;
    };
    let v1 = daemon.shop_bundle("1.0.0", |_| {});
    let tag = registry.reference("apps/shop:stable");
    let d1 = ok(&daemon, &["bundle", "push", v1.to_str().unwrap(), &tag]);
    let d1 = d1.trim();
    ok(&daemon, &["app", "upload", &tag]);
    let shown = daemon.show("shop");
    let pinned1 = registry.reference(&format!("apps/shop@{d1}"));
    assert_eq!(shown["versions"][0]["source"], pinned1.as_str(), "{shown}");
    assert_eq!(
        shown["versions"][0]["bundle_digest"],
        sha256(&std::fs::read(&v1).unwrap()).trim_start_matches("sha256:"),
    );
    let table = daemon.ok(&["app", "show", "shop"]);
    assert!(table.contains(&pinned1), "{table}");
    daemon.ok(&["app", "apply", "shop"]);

    // The tag moves; the update takes what it names now, and records it.
    let v2 = daemon.shop_bundle("1.1.0", crate::daemon::drop_worker);
    let d2 = ok(&daemon, &["bundle", "push", v2.to_str().unwrap(), &tag]);
    let d2 = d2.trim();
    assert_ne!(d1, d2);
    ok(&daemon, &["app", "update", &tag]);
    assert_eq!(daemon.state_of("shop"), "applied");
    let shown = daemon.show("shop");
    let pinned2 = registry.reference(&format!("apps/shop@{d2}"));
    assert_eq!(shown["active_version"], "1.1.0");
    let sources: Vec<&str> = shown["versions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["source"].as_str())
        .collect();
    assert!(sources.contains(&pinned2.as_str()), "{shown}");
    let history = daemon.ok(&["app", "history", "shop"]);
    assert!(history.contains(&format!("from {pinned1}")), "{history}");
    assert!(history.contains(&format!("from {pinned2}")), "{history}");

    // A source the daemon is sent must be pinned to a digest.
    let (status, body) = daemon.http_with_header(
        "/v1/apps",
        ("capstan-source", &tag),
        &std::fs::read(&v1).unwrap(),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("names a tag"), "{body}");
}

#[test]
fn a_tampered_blob_and_a_foreign_artifact_are_refused() {
    let daemon = Daemon::start("registry_tampered");
    let Some(registry) = Registry::start(&daemon.dir, &[]) else {
        return;
    };
    let bundle = daemon.shop_bundle("1.0.0", |_| {});
    let bytes = std::fs::read(&bundle).unwrap();
    let tag = registry.reference("apps/shop:1.0.0");
    ok(&daemon, &["bundle", "push", bundle.to_str().unwrap(), &tag]);

    // Flip one byte of the stored bundle blob, as a compromised or broken
    // registry would serve it.
    let blob = registry.blob_file(&sha256(&bytes));
    let mut stored = std::fs::read(&blob).unwrap();
    assert_eq!(stored, bytes);
    stored[100] ^= 0x01;
    std::fs::write(&blob, &stored).unwrap();
    let out_file = daemon.dir.join("tampered.tgz");
    let err = refused(
        &daemon,
        &["bundle", "pull", &tag, "-o", out_file.to_str().unwrap()],
    );
    assert!(err.contains("bundle blob of"), "{err}");
    assert!(err.contains("does not match its digest"), "{err}");
    assert!(!out_file.exists());
    let err = refused(&daemon, &["app", "upload", &tag]);
    assert!(err.contains("does not match its digest"), "{err}");
    let list = daemon.ok(&["app", "list", "-o", "json"]);
    assert_eq!(list.trim(), "[]");

    // A container image manifest under a tag: not a capstan bundle. Its
    // config is any blob already stored (the registry checks it exists).
    std::fs::write(&blob, &bytes).unwrap();
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{}","size":{}}},"layers":[]}}"#,
        sha256(&bytes),
        bytes.len()
    );
    let (status, answer) = registry.http(
        "PUT",
        "/v2/apps/shop/manifests/image",
        "application/vnd.oci.image.manifest.v1+json",
        manifest.as_bytes(),
    );
    assert_eq!(status, 201, "{answer}");
    let err = refused(
        &daemon,
        &["bundle", "pull", &registry.reference("apps/shop:image")],
    );
    assert!(
        err.contains(
            "is not a capstan bundle: its artifact type is application/vnd.oci.image.config.v1+json"
        ),
        "{err}"
    );
}

#[test]
fn htpasswd_auth_takes_credentials_from_a_docker_config() {
    let daemon = Daemon::start("registry_htpasswd");
    let Some(registry) = Registry::start(&daemon.dir, &[("ci", "s3cret-pass")]) else {
        return;
    };
    let bundle = daemon.shop_bundle("1.0.0", |_| {});
    let bundle = bundle.to_str().unwrap();
    let tag = registry.reference("apps/shop:1.0.0");
    let config = |dir: &str, user: &str, password: &str| -> PathBuf {
        let dir = daemon.dir.join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        let file = dir.join("config.json");
        std::fs::write(
            &file,
            format!(
                r#"{{"auths":{{"127.0.0.1:{}":{{"auth":"{auth}"}}}}}}"#,
                registry.port
            ),
        )
        .unwrap();
        file
    };
    let empty_home = daemon.dir.join("home");
    std::fs::create_dir_all(&empty_home).unwrap();
    let anonymous = crate::support::capstan()
        .args(["bundle", "push", bundle, &tag, "--plain-http"])
        .env("HOME", &empty_home)
        .env_remove("DOCKER_CONFIG")
        .output()
        .unwrap();
    assert_eq!(anonymous.status.code(), Some(1));
    let err = text(&anonymous.stderr);
    assert!(err.contains("refused access"), "{err}");
    assert!(err.contains("no credentials for 127.0.0.1"), "{err}");

    let wrong = config("wrong", "ci", "not-the-password");
    let err = refused(
        &daemon,
        &[
            "bundle",
            "push",
            bundle,
            &tag,
            "--registry-config",
            wrong.to_str().unwrap(),
        ],
    );
    assert!(err.contains("refused access"), "{err}");
    assert!(!err.contains("not-the-password"), "{err}");

    let right = config("right", "ci", "s3cret-pass");
    ok(
        &daemon,
        &[
            "bundle",
            "push",
            bundle,
            &tag,
            "--registry-config",
            right.to_str().unwrap(),
        ],
    );
    // The default file: $DOCKER_CONFIG/config.json, as docker login writes it.
    let pulled = daemon.dir.join("pulled.tgz");
    let out = crate::support::capstan()
        .args(["bundle", "pull", &tag, "--plain-http", "-o"])
        .arg(&pulled)
        .env("DOCKER_CONFIG", daemon.dir.join("right"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read(&pulled).unwrap(),
        std::fs::read(bundle).unwrap()
    );
}

/// A Docker config file `dir/config.json` with `user:password` for the
/// registry, as `docker login` writes it; returns its folder.
fn docker_config(
    daemon: &Daemon,
    registry: &Registry,
    dir: &str,
    user: &str,
    password: &str,
) -> PathBuf {
    let dir = daemon.dir.join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    std::fs::write(
        dir.join("config.json"),
        format!(
            r#"{{"auths":{{"127.0.0.1:{}":{{"auth":"{auth}"}}}}}}"#,
            registry.port
        ),
    )
    .unwrap();
    dir
}

/// `capstan ARGS --plain-http` with `DOCKER_CONFIG` set to `config` (or
/// unset, with an empty home, for no credentials at all).
fn with_docker_config(
    daemon: &Daemon,
    config: Option<&Path>,
    args: &[&str],
) -> std::process::Output {
    let empty_home = daemon.dir.join("empty-home");
    std::fs::create_dir_all(&empty_home).unwrap();
    let mut command = crate::support::capstan();
    command
        .args(args)
        .arg("--plain-http")
        .env("CAPSTAN_STATE", daemon.state())
        .env_remove("CAPSTAN_SERVER")
        .env_remove("CAPSTAN_TOKEN")
        .env("HOME", &empty_home);
    match config {
        Some(dir) => command.env("DOCKER_CONFIG", dir),
        None => command.env_remove("DOCKER_CONFIG"),
    };
    command.output().unwrap()
}

/// The one `error:` line of a command that must fail with exit 1.
fn one_error_line(out: &std::process::Output) -> String {
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.starts_with("error: "), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    err
}

#[test]
fn bearer_tokens_from_the_registrys_token_service() {
    static USERS: &[crate::token_server::User] = &[
        ("ci", "s3cret-pass", &["pull", "push"]),
        ("reader", "read-only-pass", &["pull"]),
    ];
    let daemon = Daemon::start("registry_token");
    let tokens = TokenServer::start(&daemon.dir, USERS);
    let Some(registry) = Registry::start_with_tokens(&daemon.dir, &tokens) else {
        return;
    };
    let bundle = daemon.shop_bundle("1.0.0", |_| {});
    let bundle_text = bundle.to_str().unwrap();
    let tag = registry.reference("apps/shop:1.0.0");
    // The registry itself asks for a bearer token from the realm.
    let (status, answer) = registry.http("GET", "/v2/", "text/plain", b"");
    assert_eq!(status, 401, "{answer}");
    assert!(
        answer.contains(&format!("Bearer realm=\"{}\"", tokens.realm())),
        "{answer}"
    );

    // No credentials: the token service wants some.
    let err = one_error_line(&with_docker_config(
        &daemon,
        None,
        &["bundle", "push", bundle_text, &tag],
    ));
    assert!(err.contains("refused access to"), "{err}");
    assert!(err.contains("authentication required"), "{err}");
    assert!(err.contains("no credentials for 127.0.0.1"), "{err}");

    // A wrong password: the token service's own word, and no password.
    let wrong = docker_config(&daemon, &registry, "wrong", "ci", "not-the-password");
    let err = one_error_line(&with_docker_config(
        &daemon,
        Some(&wrong),
        &["bundle", "push", bundle_text, &tag],
    ));
    assert!(err.contains("refused access to"), "{err}");
    assert!(err.contains("incorrect username or password"), "{err}");
    assert!(!err.contains("not-the-password"), "{err}");
    assert!(
        !err.contains('{'),
        "the token service's JSON is read, not quoted: {err}"
    );

    // The right one: a token for pull and push, then push and pull with it.
    let ci = docker_config(&daemon, &registry, "ci", "ci", "s3cret-pass");
    let out = with_docker_config(&daemon, Some(&ci), &["bundle", "push", bundle_text, &tag]);
    assert!(
        out.status.success(),
        "{}\nregistry log:\n{}",
        text(&out.stderr),
        registry.log()
    );
    let digest = text(&out.stdout).trim().to_owned();
    assert!(digest.starts_with("sha256:"), "{digest}");
    let issued = tokens.issued();
    assert!(
        issued.iter().any(|t| t.user == "ci"
            && t.status == 200
            && t.scope == "repository:apps/shop:pull,push"),
        "{issued:?}"
    );

    // A user who may only pull: pulls (by tag and by digest), and uploads
    // from the registry into the daemon; a push is refused.
    let reader = docker_config(&daemon, &registry, "reader", "reader", "read-only-pass");
    let pulled = daemon.dir.join("pulled.tgz");
    let pulled_text = pulled.to_str().unwrap();
    let out = with_docker_config(
        &daemon,
        Some(&reader),
        &["bundle", "pull", &tag, "-o", pulled_text],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read(&pulled).unwrap(),
        std::fs::read(&bundle).unwrap()
    );
    let pinned = registry.reference(&format!("apps/shop@{digest}"));
    let out = with_docker_config(
        &daemon,
        Some(&reader),
        &["bundle", "pull", &pinned, "-o", pulled_text],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = with_docker_config(&daemon, Some(&reader), &["app", "upload", &tag]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        daemon.show("shop")["versions"][0]["source"],
        pinned.as_str()
    );
    assert!(
        tokens.issued().iter().any(|t| t.user == "reader"
            && t.status == 200
            && t.scope == "repository:apps/shop:pull"),
        "{:?}",
        tokens.issued()
    );
    let err = one_error_line(&with_docker_config(
        &daemon,
        Some(&reader),
        &[
            "bundle",
            "push",
            bundle_text,
            &registry.reference("apps/shop:2.0.0"),
        ],
    ));
    assert!(err.contains("refused access to"), "{err}");
}

#[test]
fn oversized_and_mismatched_manifests_are_refused_with_one_line() {
    let daemon = Daemon::start("registry_limits");
    let Some(registry) = Registry::start(&daemon.dir, &[]) else {
        return;
    };
    let bundle = daemon.shop_bundle("1.0.0", |_| {});
    let bytes = std::fs::read(&bundle).unwrap();
    let tag = registry.reference("apps/shop:1.0.0");
    let digest = ok(&daemon, &["bundle", "push", bundle.to_str().unwrap(), &tag]);
    let digest = digest.trim();
    let put = |tag: &str, manifest: &str| {
        let (status, answer) = registry.http(
            "PUT",
            &format!("/v2/apps/shop/manifests/{tag}"),
            "application/vnd.oci.image.manifest.v1+json",
            manifest.as_bytes(),
        );
        assert_eq!(status, 201, "{answer}");
    };
    let manifest = |layer_size: u64, padding: usize| {
        format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.capstan.bundle.v1","config":{{"mediaType":"application/vnd.capstan.bundle.config.v1+json","digest":"{d}","size":{n}}},"layers":[{{"mediaType":"application/vnd.capstan.bundle.v1.tar+gzip","digest":"{d}","size":{layer_size}}}],"annotations":{{"padding":"{}"}}}}"#,
            "x".repeat(padding),
            d = sha256(&bytes),
            n = bytes.len(),
        )
    };

    // A manifest over 256 KiB (the registry itself takes up to 4 MiB).
    put("huge", &manifest(bytes.len() as u64, 300 * 1024));
    let err = one_error_line(&cli(
        &daemon,
        &["bundle", "pull", &registry.reference("apps/shop:huge")],
    ));
    assert!(err.contains("manifest of"), "{err}");
    assert!(err.contains("over the limit of 262144"), "{err}");

    // A bundle layer declared larger than the daemon takes: refused before
    // a byte of it is fetched.
    let limit = capstan::api::MAX_BUNDLE_BYTES as u64;
    put("big-blob", &manifest(limit + 1, 0));
    let err = one_error_line(&cli(
        &daemon,
        &["app", "upload", &registry.reference("apps/shop:big-blob")],
    ));
    assert!(err.contains("bundle blob of"), "{err}");
    assert!(
        err.contains(&format!(
            "is {} bytes, over the limit of {limit}",
            limit + 1
        )),
        "{err}"
    );
    assert_eq!(daemon.ok(&["app", "list", "-o", "json"]).trim(), "[]");

    // The stored manifest changed under its digest: pulled by digest or by
    // tag, what arrives is not what the digest names.
    let stored = registry.blob_file(digest);
    let original = std::fs::read_to_string(&stored).unwrap();
    let changed = original.replace("\"1.0.0\"", "\"6.6.6\"");
    assert_ne!(changed, original);
    std::fs::write(&stored, changed).unwrap();
    for reference in [
        registry.reference(&format!("apps/shop@{digest}")),
        tag.clone(),
    ] {
        let err = one_error_line(&cli(&daemon, &["bundle", "pull", &reference]));
        assert!(err.contains("manifest of"), "{reference}: {err}");
        assert!(
            err.contains("does not match its digest"),
            "{reference}: {err}"
        );
        assert!(
            err.contains(&format!("expected {digest}")),
            "{reference}: {err}"
        );
    }
}
