//! The API in process: [`super::serve`] on a temporary unix socket over a
//! real [`Lifecycle`] (plugin-free bundles, the directory target), driven
//! by raw HTTP to pin the JSON of every endpoint to its [`wire`] type, and
//! by the typed [`Client`] as the CLI drives it. Every error answer is
//! checked for its stable code. The daemon binary itself (plugins,
//! crashes, the CLI's output) is tested end to end in `tests/e2e/daemon.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::wire::{self, ErrorBody, ErrorCode};
use super::{Address, Client, ClientError, encode_segment};
use crate::bundle;
use crate::kube::DirTarget;
use crate::lifecycle::{self, ErrorClass, Lifecycle, Options};
use crate::model::AppName;
use crate::store::{AppState, Operation, Outcome};
use crate::trust::{SigningKey, TrustStore};

const TOKEN: &str = "a-test-token-of-enough-length";
const JSON: &str = wire::JSON_CONTENT_TYPE;
const GZIP: &str = wire::BUNDLE_CONTENT_TYPE;

/// A lifecycle on a temporary state folder, served on two sockets: one
/// open (`client`), one that needs [`TOKEN`] (`guarded`).
struct Daemon {
    dir: tempfile::TempDir,
    key: SigningKey,
    client: Client,
    guarded: Address,
    stop: Vec<tokio::sync::oneshot::Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Daemon {
    fn start() -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let key = SigningKey::generate("test").unwrap();
        let mut trust = TrustStore::empty();
        trust
            .add_openssh(&key.public_key_line().unwrap(), Path::new("test.pub"))
            .unwrap();
        let target = Arc::new(DirTarget::new(dir.path().join("applied")));
        let lifecycle =
            Lifecycle::open(Options::new(dir.path().join("state"), trust, target)).unwrap();
        let open = Address::Unix(dir.path().join("state/capstan.sock"));
        let guarded = Address::Unix(dir.path().join("state/guarded.sock"));
        let mut daemon = Daemon {
            client: Client::new(open.clone(), None).unwrap(),
            guarded: guarded.clone(),
            dir,
            key,
            stop: Vec::new(),
            threads: Vec::new(),
        };
        daemon.serve(lifecycle.clone(), open, None);
        daemon.serve(lifecycle, guarded, Some(TOKEN.into()));
        daemon
    }

    fn serve(&mut self, lifecycle: Lifecycle, address: Address, token: Option<String>) {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shown = address.clone();
        self.threads.push(std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            runtime
                .block_on(super::serve(lifecycle, &shown, token, async {
                    let _ = stopped.await;
                }))
                .unwrap();
        }));
        self.stop.push(stop);
        let Address::Unix(socket) = &address else {
            unreachable!("tests serve on unix sockets")
        };
        let started = Instant::now();
        while std::os::unix::net::UnixStream::connect(socket).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "never listened"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// A signed bundle of app `name` at `version` with one ConfigMap chart
    /// per entry of `charts`.
    fn bundle(&self, name: &str, version: &str, charts: &[&str]) -> Vec<u8> {
        let app = self.path(&format!("src-{name}-{version}"));
        let _ = std::fs::remove_dir_all(&app);
        let mut meta = format!("name: {name}\nversion: {version}\ncharts:\n");
        for chart in charts {
            let dir = app.join("charts").join(chart);
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
        }
        meta.push_str(&format!(
            "chart_groups:\n  - {{name: all, mode: sequential, charts: [{}]}}\n",
            charts.join(", ")
        ));
        std::fs::write(app.join("capstan.yaml"), meta).unwrap();
        let out = self.path(&format!("{name}-{version}.tgz"));
        bundle::build(&app, &self.key, &out, &|_, _| Ok(())).unwrap();
        std::fs::read(out).unwrap()
    }

    /// Sends one raw request and checks its status; the answer must decode
    /// into `T` and encode back to the same JSON, so `T` drops nothing.
    fn raw<T: DeserializeOwned + Serialize>(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
        want: StatusCode,
    ) -> T {
        let response = self.client.send(method.clone(), path, body).unwrap();
        let text = String::from_utf8_lossy(&response.body).into_owned();
        assert_eq!(response.status, want, "{method} {path}: {text}");
        let value: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{method} {path}: {text:?} is not JSON: {e}"));
        let typed: T = serde_json::from_value(value.clone())
            .unwrap_or_else(|e| panic!("{method} {path}: {text} is not the wire type: {e}"));
        assert_eq!(
            serde_json::to_value(&typed).unwrap(),
            value,
            "{method} {path}: the wire type loses part of the answer"
        );
        typed
    }

    /// A request body from a wire type.
    fn body(request: &impl Serialize) -> Option<(&'static str, Vec<u8>)> {
        Some((JSON, serde_json::to_vec(request).unwrap()))
    }

    /// Polls the operation until it has ended.
    fn wait(&self, app: &str, started: &wire::Started) -> wire::HistoryEntry {
        let begun = Instant::now();
        loop {
            let entry = self.client.operation(app, started.operation).unwrap();
            if entry.outcome != Outcome::Running {
                return entry;
            }
            assert!(begun.elapsed() < Duration::from_secs(30), "{entry:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        for stop in self.stop.drain(..) {
            let _ = stop.send(());
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// The error a typed call ended with, as (status, code, message).
fn refused<T: std::fmt::Debug>(result: Result<T, ClientError>) -> (u16, ErrorCode, String) {
    match result {
        Err(ClientError::Status {
            status,
            code,
            message,
        }) => (status, code, message),
        other => panic!("expected an error answer, got {other:?}"),
    }
}

/// Every endpoint once, by raw HTTP: request bodies are wire types
/// encoded, answers decode into wire types without losing a field.
#[test]
fn every_endpoint_round_trips_through_the_wire_types() {
    let d = Daemon::start();
    let health: wire::Health = d.raw(Method::GET, "/v1/health", None, StatusCode::OK);
    assert_eq!(health, wire::Health::ok());

    let v1 = d.bundle("demo", "1.0.0", &["a", "b"]);
    let app: wire::AppRecord = d.raw(
        Method::POST,
        "/v1/apps",
        Some((GZIP, v1)),
        StatusCode::CREATED,
    );
    assert_eq!(app.state, AppState::Uploaded);
    let apps: Vec<wire::AppRecord> = d.raw(Method::GET, "/v1/apps", None, StatusCode::OK);
    assert_eq!(apps, vec![app.clone()]);
    let details: wire::AppDetails = d.raw(Method::GET, "/v1/apps/demo", None, StatusCode::OK);
    assert_eq!(details.app, app);
    assert_eq!(details.versions.len(), 1);
    let charts: Vec<&str> = details.charts.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(charts, ["a", "b"]);

    let set = wire::OverrideSet {
        set: vec!["greeting=hello".into()],
        ..Default::default()
    };
    let shown: wire::ChartOverrides = d.raw(
        Method::PUT,
        "/v1/apps/demo/overrides/a",
        Daemon::body(&set),
        StatusCode::OK,
    );
    assert_eq!(shown.merged["greeting"], "hello");
    let again: wire::ChartOverrides = d.raw(
        Method::GET,
        "/v1/apps/demo/overrides/a",
        None,
        StatusCode::OK,
    );
    assert_eq!(again, shown);
    let list: Vec<wire::OverrideSummary> =
        d.raw(Method::GET, "/v1/apps/demo/overrides", None, StatusCode::OK);
    assert!(list.iter().any(|o| o.chart == "a" && o.user));

    let started: wire::Started = d.raw(
        Method::POST,
        "/v1/apps/demo/apply",
        Daemon::body(&wire::ApplyRequest::default()),
        StatusCode::ACCEPTED,
    );
    assert_eq!(started.app.state, AppState::Applying);
    let entry = d.wait("demo", &started);
    assert_eq!(entry.outcome, Outcome::Succeeded, "{:?}", entry.message);
    let path = format!("/v1/apps/demo/operations/{}", started.operation.0);
    let polled: wire::HistoryEntry = d.raw(Method::GET, &path, None, StatusCode::OK);
    assert_eq!(polled, entry);
    let history: Vec<wire::HistoryEntry> =
        d.raw(Method::GET, "/v1/apps/demo/history", None, StatusCode::OK);
    assert_eq!(history.last(), Some(&entry));
    let diffs: Vec<wire::ChartDiff> =
        d.raw(Method::GET, "/v1/apps/demo/diff", None, StatusCode::OK);
    assert!(diffs.iter().all(|c| c.added + c.changed + c.removed == 0));

    let deleted: wire::Deleted = d.raw(
        Method::DELETE,
        "/v1/apps/demo/overrides/a",
        None,
        StatusCode::OK,
    );
    assert!(deleted.deleted);

    let v2 = d.bundle("demo", "1.1.0", &["a"]);
    let query = wire::UpdateQuery {
        reuse_user_overrides: Some(false),
        force: false,
        on_failure: None,
    };
    let started: wire::Started = d.raw(
        Method::POST,
        &format!("/v1/updates{}", query.to_query()),
        Some((GZIP, v2)),
        StatusCode::ACCEPTED,
    );
    assert_eq!(started.app.state, AppState::Updating);
    assert_eq!(d.wait("demo", &started).outcome, Outcome::Succeeded);

    let started: wire::Started = d.raw(
        Method::POST,
        "/v1/apps/demo/remove",
        Daemon::body(&wire::RemoveRequest {
            force: false,
            keep_secrets: false,
        }),
        StatusCode::ACCEPTED,
    );
    assert_eq!(d.wait("demo", &started).outcome, Outcome::Succeeded);
    let response = d
        .client
        .send(Method::DELETE, "/v1/apps/demo", None)
        .unwrap();
    assert_eq!(response.status, StatusCode::NO_CONTENT);
    assert!(response.body.is_empty());

    let request = wire::VolumeRequest {
        name: "data".into(),
        node: "node-0".into(),
        path: "/srv/data".into(),
        size: "1Gi".into(),
        storage_class: None,
        namespace: Some("demo".into()),
    };
    let created: wire::VolumeView = d.raw(
        Method::POST,
        "/v1/volumes",
        Daemon::body(&request),
        StatusCode::CREATED,
    );
    assert_eq!(created.claim, "demo/data");
    let views: Vec<wire::VolumeView> = d.raw(Method::GET, "/v1/volumes", None, StatusCode::OK);
    assert_eq!(views, vec![created.clone()]);
    let removed: wire::VolumeView = d.raw(
        Method::DELETE,
        &format!(
            "/v1/volumes/data{}",
            wire::VolumeRemoveQuery::default().to_query()
        ),
        None,
        StatusCode::OK,
    );
    assert_eq!(removed, created);

    // abort and recover answer a running or failed app, which a
    // plugin-free app never is: their answers are errors here, and the
    // typed client test pins their bodies.
    let metrics = d.client.send(Method::GET, "/metrics", None).unwrap();
    assert_eq!(metrics.status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&metrics.body).contains("capstan_operations_total"));
}

/// The typed client through a whole life, as the CLI uses it.
#[test]
fn the_typed_client_drives_the_real_server() {
    let d = Daemon::start();
    let c = &d.client;
    assert_eq!(c.health().unwrap(), wire::Health::ok());
    assert!(c.list_apps().unwrap().is_empty());

    let app = c.upload(d.bundle("demo", "1.0.0", &["a", "b"])).unwrap();
    assert_eq!(app.name.as_str(), "demo");
    let (status, code, message) = refused(c.upload(d.bundle("demo", "1.0.0", &["a"])));
    assert_eq!((status, code), (409, ErrorCode::AlreadyExists), "{message}");
    assert!(message.contains("already exists"), "{message}");
    assert_eq!(c.list_apps().unwrap(), vec![app.clone()]);
    assert_eq!(c.show_app("demo").unwrap().app, app);

    let (status, code, _) = refused(c.recover("demo"));
    assert_eq!((status, code), (409, ErrorCode::IllegalTransition));
    let (status, code, _) = refused(c.abort("demo"));
    assert_eq!((status, code), (409, ErrorCode::IllegalTransition));

    let set = wire::OverrideSet {
        values: vec!["greeting: hey\n".into()],
        ..Default::default()
    };
    let shown = c.override_set("demo", "a", &set).unwrap();
    assert_eq!(shown.merged["greeting"], "hey");
    assert_eq!(c.override_show("demo", "a").unwrap(), shown);
    let summary = c.override_list("demo").unwrap();
    assert_eq!(summary.len(), 2);
    assert!(summary.iter().any(|o| o.chart == "a" && o.user));

    let rekind = wire::ApplyRequest {
        rekind: vec!["nope".into()],
        ..wire::ApplyRequest::default()
    };
    let (status, code, message) = refused(c.apply("demo", &rekind));
    assert_eq!((status, code), (400, ErrorCode::Invalid), "{message}");
    let started = c.apply("demo", &wire::ApplyRequest::default()).unwrap();
    assert_eq!(d.wait("demo", &started).outcome, Outcome::Succeeded);
    let applied = std::fs::read_to_string(d.path("applied/demo/a.yaml")).unwrap();
    assert!(applied.contains("greeting: hey"), "{applied}");
    let history = c.history("demo").unwrap();
    let operations: Vec<Operation> = history.iter().map(|h| h.operation).collect();
    assert_eq!(operations, [Operation::Upload, Operation::Apply]);
    assert_eq!(c.operation("demo", started.operation).unwrap(), history[1]);
    assert_eq!(c.diff("demo").unwrap().len(), 2);

    let (status, code, _) =
        refused(c.update(d.bundle("demo", "0.9.0", &["a"]), &Default::default()));
    assert_eq!((status, code), (409, ErrorCode::UpgradeNotAllowed));
    let keep = wire::UpdateQuery {
        reuse_user_overrides: Some(true),
        force: false,
        on_failure: None,
    };
    let started = c.update(d.bundle("demo", "1.1.0", &["a"]), &keep).unwrap();
    assert_eq!(d.wait("demo", &started).outcome, Outcome::Succeeded);
    let details = c.show_app("demo").unwrap();
    assert_eq!(details.app.active_version, "1.1.0");
    assert_eq!(details.charts.len(), 1);
    assert!(c.override_delete("demo", "a").unwrap().deleted);
    assert!(!c.override_delete("demo", "a").unwrap().deleted);

    let (status, code, _) = refused(c.delete("demo"));
    assert_eq!((status, code), (409, ErrorCode::IllegalTransition));
    let started = c.remove("demo", &wire::RemoveRequest::default()).unwrap();
    assert_eq!(d.wait("demo", &started).outcome, Outcome::Succeeded);
    c.delete("demo").unwrap();
    let (status, code, message) = refused(c.show_app("demo"));
    assert_eq!((status, code), (404, ErrorCode::NotFound));
    assert_eq!(message, "unknown app \"demo\"");

    let request = wire::VolumeRequest {
        name: "data".into(),
        node: "node-0".into(),
        path: "/srv/data".into(),
        size: "1Gi".into(),
        storage_class: Some("fast".into()),
        namespace: None,
    };
    let view = c.volume_create(&request).unwrap();
    assert_eq!(view.volume.storage_class, "fast");
    let (status, code, _) = refused(c.volume_create(&request));
    assert_eq!((status, code), (409, ErrorCode::AlreadyExists));
    assert_eq!(c.volume_list().unwrap(), vec![view.clone()]);
    let force = wire::VolumeRemoveQuery { force: true };
    assert_eq!(c.volume_remove("data", &force).unwrap(), view);
    let (status, code, _) = refused(c.volume_remove("data", &force));
    assert_eq!((status, code), (404, ErrorCode::NotFound));
    let bad = wire::VolumeRequest {
        path: "relative".into(),
        ..request
    };
    let (status, code, _) = refused(c.volume_create(&bad));
    assert_eq!((status, code), (400, ErrorCode::Invalid));

    let metrics = c.metrics().unwrap();
    assert!(metrics.contains("capstan_operations_total"), "{metrics}");
}

/// Issue 45: `app pause` and `app resume` through the API: the record says
/// who paused and why, `app show` says so, the history keeps both, and a
/// reason past its bound or an unknown app is refused.
#[test]
fn pause_and_resume_are_kept_with_who_and_why() {
    let d = Daemon::start();
    let c = &d.client;
    c.upload(d.bundle("demo", "1.0.0", &["a"])).unwrap();
    let request = wire::PauseRequest {
        reason: Some("maintenance window".into()),
    };
    let paused = c.pause("demo", &request).unwrap();
    let pause = paused.automatic_pause.clone().unwrap();
    assert_eq!(pause.reason.as_deref(), Some("maintenance window"));
    assert!(!pause.by.is_empty() && pause.by != "unknown", "{pause:?}");
    let shown = c
        .show_app("demo")
        .unwrap()
        .automatic_paused
        .unwrap_or_default();
    assert!(shown.contains("maintenance window"), "{shown}");
    let long = wire::PauseRequest {
        reason: Some("x".repeat(300)),
    };
    let (status, code, message) = refused(c.pause("demo", &long));
    assert_eq!((status, code), (400, ErrorCode::Invalid), "{message}");
    let (status, code, _) = refused(c.pause("ghost", &request));
    assert_eq!((status, code), (404, ErrorCode::NotFound));
    let resumed = c.resume("demo", &wire::PauseRequest::default()).unwrap();
    assert_eq!(resumed.automatic_pause, None);
    assert_eq!(c.show_app("demo").unwrap().automatic_paused, None);
    let operations: Vec<Operation> = c
        .history("demo")
        .unwrap()
        .iter()
        .map(|h| h.operation)
        .collect();
    assert_eq!(
        operations,
        [Operation::Upload, Operation::Pause, Operation::Resume]
    );
}

/// A name with characters that mean something in a URL reaches the daemon
/// as one segment, and is refused by name.
#[test]
fn path_segments_are_percent_encoded() {
    assert_eq!(encode_segment("demo-1.0_x~"), "demo-1.0_x~");
    assert_eq!(encode_segment("a/b c?d#e%"), "a%2Fb%20c%3Fd%23e%25");
    assert_eq!(encode_segment(".."), "%2E%2E");
    assert_eq!(encode_segment("é"), "%C3%A9");
    let d = Daemon::start();
    for name in ["a/b", "x?force=true", "..", "Bad Name"] {
        let (status, code, message) = refused(d.client.show_app(name));
        assert_eq!(
            (status, code),
            (400, ErrorCode::BadRequest),
            "{name}: {message}"
        );
        assert!(message.contains(&format!("{name:?}")), "{name}: {message}");
    }
    let (status, code, message) = refused(d.client.override_show("nope", "a/b"));
    assert_eq!((status, code), (404, ErrorCode::NotFound), "{message}");
}

/// Every kind of refusal, by raw HTTP: the status, the stable code, and a
/// one-line message.
#[test]
fn every_error_answer_has_a_code() {
    let d = Daemon::start();
    d.client.upload(d.bundle("demo", "1.0.0", &["a"])).unwrap();
    let big = vec![b' '; super::MAX_JSON_BYTES + 1];
    let cases: Vec<(Method, &str, &str, Vec<u8>, ErrorCode)> = vec![
        (
            Method::POST,
            "/v1/apps",
            GZIP,
            b"not a gzip".to_vec(),
            ErrorCode::InvalidBundle,
        ),
        (
            Method::POST,
            "/v1/apps",
            JSON,
            b"{}".to_vec(),
            ErrorCode::UnsupportedMediaType,
        ),
        (
            Method::POST,
            "/v1/updates?reuse_user_overrides=maybe",
            GZIP,
            b"x".to_vec(),
            ErrorCode::BadRequest,
        ),
        (
            Method::POST,
            "/v1/updates?other=1",
            GZIP,
            b"x".to_vec(),
            ErrorCode::BadRequest,
        ),
        (
            Method::POST,
            "/v1/apps/demo/apply",
            JSON,
            b"{not json".to_vec(),
            ErrorCode::BadRequest,
        ),
        (
            Method::POST,
            "/v1/apps/demo/apply",
            JSON,
            b"{\"unknown\": 1}".to_vec(),
            ErrorCode::BadRequest,
        ),
        // An array of fields, which serde would read as the struct
        // (schemathesis, ST201).
        (
            Method::POST,
            "/v1/apps/demo/apply",
            JSON,
            b"[]".to_vec(),
            ErrorCode::BadRequest,
        ),
        // A body of only whitespace is not "no body" (schemathesis, ST201).
        (
            Method::POST,
            "/v1/apps/demo/apply",
            JSON,
            b"\r".to_vec(),
            ErrorCode::BadRequest,
        ),
        (
            Method::PUT,
            "/v1/apps/demo/overrides/a",
            JSON,
            b"[[], []]".to_vec(),
            ErrorCode::BadRequest,
        ),
        (
            Method::POST,
            "/v1/apps/demo/apply",
            JSON,
            b"{\"rekind\": [\"x\"]}".to_vec(),
            ErrorCode::Invalid,
        ),
        (
            Method::POST,
            "/v1/apps/demo/apply",
            JSON,
            big,
            ErrorCode::PayloadTooLarge,
        ),
        (
            Method::POST,
            "/v1/apps/demo/remove",
            JSON,
            b"{}".to_vec(),
            ErrorCode::IllegalTransition,
        ),
        (
            Method::POST,
            "/v1/apps/demo/recover",
            JSON,
            Vec::new(),
            ErrorCode::IllegalTransition,
        ),
        (
            Method::POST,
            "/v1/apps/demo/abort",
            JSON,
            Vec::new(),
            ErrorCode::IllegalTransition,
        ),
        (
            Method::PUT,
            "/v1/apps/demo/overrides/a",
            JSON,
            b"{\"values\": [\"a: [1\"]}".to_vec(),
            ErrorCode::Invalid,
        ),
        (
            Method::PUT,
            "/v1/apps/demo/overrides/a",
            JSON,
            b"{\"set\": [\"noequals\"]}".to_vec(),
            ErrorCode::Invalid,
        ),
        (
            Method::PUT,
            "/v1/apps/demo/overrides/a",
            JSON,
            Vec::new(),
            ErrorCode::BadRequest,
        ),
        (
            Method::PUT,
            "/v1/apps/demo/overrides/nochart",
            JSON,
            b"{\"set\": [\"a=1\"]}".to_vec(),
            ErrorCode::NotFound,
        ),
        (
            Method::GET,
            "/v1/apps/nope",
            JSON,
            Vec::new(),
            ErrorCode::NotFound,
        ),
        (
            Method::GET,
            "/v1/apps/Bad_Name",
            JSON,
            Vec::new(),
            ErrorCode::BadRequest,
        ),
        (
            Method::GET,
            "/v1/apps/%FF",
            JSON,
            Vec::new(),
            ErrorCode::BadRequest,
        ),
        (
            Method::GET,
            "/v1/apps/demo/operations/x",
            JSON,
            Vec::new(),
            ErrorCode::BadRequest,
        ),
        (
            Method::GET,
            "/v1/apps/demo/operations/999",
            JSON,
            Vec::new(),
            ErrorCode::NotFound,
        ),
        (
            Method::DELETE,
            "/v1/volumes/nope?force=yes",
            JSON,
            Vec::new(),
            ErrorCode::BadRequest,
        ),
        (
            Method::DELETE,
            "/v1/volumes/nope",
            JSON,
            Vec::new(),
            ErrorCode::NotFound,
        ),
        (
            Method::POST,
            "/v1/volumes",
            JSON,
            b"{\"name\": \"v\"}".to_vec(),
            ErrorCode::BadRequest,
        ),
        (
            Method::GET,
            "/v1/nothing-here",
            JSON,
            Vec::new(),
            ErrorCode::UnknownEndpoint,
        ),
        (
            Method::PATCH,
            "/v1/apps/demo",
            JSON,
            Vec::new(),
            ErrorCode::MethodNotAllowed,
        ),
        (
            Method::GET,
            "/v1/apps/demo/apply",
            JSON,
            Vec::new(),
            ErrorCode::MethodNotAllowed,
        ),
    ];
    for (method, path, content_type, body, want) in cases {
        let response = d
            .client
            .send(method.clone(), path, Some((content_type, body)))
            .unwrap();
        let text = String::from_utf8_lossy(&response.body).into_owned();
        let error: ErrorBody = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{method} {path}: {text:?} is not an error body: {e}"));
        assert_eq!(error.code, want, "{method} {path}: {text}");
        assert_eq!(response.status, want.status(), "{method} {path}: {text}");
        assert!(
            !error.error.is_empty() && !error.error.contains('\n'),
            "{method} {path}: {text}"
        );
    }

    // The token-guarded socket: reads too need the token.
    for token in [None, Some("wrong")] {
        let client = Client::new(d.guarded.clone(), token.map(String::from)).unwrap();
        let (status, code, message) = refused(client.list_apps());
        assert_eq!((status, code), (401, ErrorCode::Unauthorized));
        assert_eq!(message, "missing or wrong bearer token");
    }
    let client = Client::new(d.guarded.clone(), Some(TOKEN.into())).unwrap();
    assert_eq!(client.list_apps().unwrap().len(), 1);
}

/// The code of each lifecycle error has the status of its class, so the
/// codes refine the statuses the API always had and never change them.
#[test]
fn lifecycle_errors_keep_their_status_under_their_code() {
    use crate::model::Hook;
    use crate::store::Error as S;
    let app = AppName::new("demo").unwrap();
    let errors = [
        lifecycle::Error::Store(S::UnknownApp { app: app.clone() }),
        lifecycle::Error::Store(S::AppExists { app: app.clone() }),
        lifecycle::Error::Store(S::Busy {
            app: app.clone(),
            state: AppState::Applying,
            operation: Operation::Apply,
        }),
        lifecycle::Error::Store(S::IllegalTransition {
            app: app.clone(),
            state: AppState::Uploaded,
            operation: Operation::Remove,
        }),
        lifecycle::Error::Store(S::VersionInUse {
            app,
            version: "1.0.0".into(),
        }),
        lifecycle::Error::Busy {
            app: "demo".into(),
            state: AppState::Applying,
        },
        lifecycle::Error::NothingToAbort { app: "demo".into() },
        lifecycle::Error::Vetoed {
            plugin: "p".into(),
            hook: Hook::SemanticCheck,
            reason: "no".into(),
        },
        lifecycle::Error::AppName { name: "X".into() },
        lifecycle::Error::InvalidOverrides { reason: "x".into() },
        lifecycle::Error::UnknownComponent {
            app: "demo".into(),
            component: "c".into(),
        },
        lifecycle::Error::UnknownChart {
            app: "demo".into(),
            chart: "c".into(),
        },
        lifecycle::Error::UnknownVolume { name: "v".into() },
        lifecycle::Error::VolumeInUse {
            name: "v".into(),
            users: "demo/c".into(),
        },
        lifecycle::Error::Volume {
            name: "v".into(),
            reason: "x".into(),
        },
        lifecycle::Error::Aborted,
        lifecycle::Error::StateLocked { path: "/s".into() },
        lifecycle::Error::Io {
            what: "reading x".into(),
            source: std::io::Error::other("x"),
        },
    ];
    for error in &errors {
        let status = match error.class() {
            ErrorClass::BadRequest => StatusCode::BAD_REQUEST,
            ErrorClass::NotFound => StatusCode::NOT_FOUND,
            ErrorClass::Conflict => StatusCode::CONFLICT,
            ErrorClass::Failed => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorClass::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let code = super::error::code_of(error);
        assert_eq!(code.status(), status, "{error:?} as {code}");
        assert!(ErrorCode::ALL.contains(&code), "{code}");
    }
}

/// No daemon at the address: one line naming where the client looked.
#[test]
fn an_unreachable_daemon_is_one_line_naming_the_address() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.sock");
    let client = Client::new(Address::Unix(missing.clone()), None).unwrap();
    let error = client.list_apps().unwrap_err();
    assert!(error.is_unreachable());
    assert_eq!(
        error.to_string(),
        format!(
            "cannot reach the capstan daemon at unix:{} (no such file); start it with 'capstan serve' or pass --server",
            missing.display()
        )
    );
    assert!(
        std::error::Error::source(&error).is_none(),
        "one line, no causes"
    );

    // A socket file nobody listens on any more.
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    let client = Client::new(Address::Unix(stale), None).unwrap();
    let error = client.health().unwrap_err();
    assert!(error.is_unreachable());
    assert!(
        error.to_string().contains("(connection refused)"),
        "{error}"
    );
}
