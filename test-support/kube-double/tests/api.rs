//! In-process tests of the double's wire protocol, through a plain HTTP
//! client (tests/common): discovery, CRUD with selectors, server-side apply
//! and managed fields, validation, deletion, garbage collection, CRDs,
//! watches, controllers, faults, the request record and the token.

mod common;

use common::{apply, delete, eventually, get, post, send};
use kube_double::{Fault, FaultKind, KubeDouble, Options};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn double() -> KubeDouble {
    KubeDouble::start(Options::default()).unwrap_or_else(|e| panic!("starting the double: {e}"))
}

fn quiet_double() -> KubeDouble {
    KubeDouble::start(Options {
        simulate_controllers: false,
        ..Options::default()
    })
    .unwrap_or_else(|e| panic!("starting the double: {e}"))
}

const CM: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOY: &str = "/apis/apps/v1/namespaces/default/deployments";

fn deployment(replicas: u32, image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    app: web\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: {image}\n"
    )
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn resource_names(doc: &Value) -> Vec<String> {
    doc["resources"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn discovery_documents() {
    let d = double();
    let url = d.url();
    assert_eq!(get(&url, "/api").json()["versions"], json!(["v1"]));
    let core = get(&url, "/api/v1").json();
    assert_eq!(core["groupVersion"], "v1");
    for r in [
        "namespaces",
        "configmaps",
        "secrets",
        "services",
        "pods",
        "persistentvolumes",
        "events",
    ] {
        assert!(
            resource_names(&core).contains(&r.to_string()),
            "{r} missing"
        );
    }
    let groups = get(&url, "/apis").json();
    let group_names: Vec<&str> = groups["groups"]
        .as_array()
        .map(|g| g.iter().filter_map(|g| g["name"].as_str()).collect())
        .unwrap_or_default();
    for g in [
        "apps",
        "batch",
        "rbac.authorization.k8s.io",
        "apiextensions.k8s.io",
        "networking.k8s.io",
        "policy",
        "autoscaling",
    ] {
        assert!(group_names.contains(&g), "{g} missing from {groups}");
    }
    let apps = get(&url, "/apis/apps/v1").json();
    let deploy = apps["resources"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["name"] == "deployments"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(deploy["kind"], "Deployment");
    assert_eq!(deploy["namespaced"], true);
    assert_eq!(deploy["shortNames"], json!(["deploy"]));
    let pv = core["resources"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["name"] == "persistentvolumes"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(pv["namespaced"], false);
    assert_eq!(get(&url, "/version").json()["gitVersion"], "v1.33.0");
    let missing = get(&url, "/apis/nope.example.com/v1");
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["kind"], "Status");
}

#[test]
fn create_get_and_list_with_selectors() {
    let d = quiet_double();
    let url = d.url();
    for (name, app, tier) in [("a", "x", "web"), ("b", "x", "db"), ("c", "y", "web")] {
        let r = post(
            &url,
            CM,
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"app": app, "tier": tier}}, "data": {"k": name}}),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        assert_eq!(r.json()["metadata"]["generation"], 1);
        assert!(
            r.json()["metadata"]["uid"]
                .as_str()
                .is_some_and(|u| !u.is_empty())
        );
    }
    let again = post(
        &url,
        CM,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
    );
    assert_eq!(again.status, 409);
    assert_eq!(again.json()["reason"], "AlreadyExists");

    let one = get(&url, &format!("{CM}/a")).json();
    assert_eq!(one["data"]["k"], "a");
    assert_eq!(one["kind"], "ConfigMap");
    let missing = get(&url, &format!("{CM}/zzz"));
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["message"], "configmaps \"zzz\" not found");
    assert_eq!(missing.json()["reason"], "NotFound");
    assert_eq!(missing.json()["details"]["name"], "zzz");

    for (query, want) in [
        ("labelSelector=app%3Dx", vec!["a", "b"]),
        ("labelSelector=app%3D%3Dx,tier!%3Ddb", vec!["a"]),
        (
            "labelSelector=tier%20in%20(web),app%20notin%20(x)",
            vec!["c"],
        ),
        ("labelSelector=!tier", vec![]),
        ("labelSelector=tier", vec!["a", "b", "c"]),
        ("fieldSelector=metadata.name%3Db", vec!["b"]),
        (
            "fieldSelector=metadata.namespace%3Ddefault,metadata.name!%3Db",
            vec!["a", "c"],
        ),
    ] {
        let list = get(&url, &format!("{CM}?{query}")).json();
        assert_eq!(names(&list), want, "{query}");
        assert_eq!(list["kind"], "ConfigMapList");
    }
    let across = get(&url, "/api/v1/configmaps?labelSelector=app%3Dx").json();
    assert_eq!(names(&across), vec!["a", "b"]);
    let bad = get(&url, &format!("{CM}?labelSelector=app%20in%20(x"));
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["reason"], "BadRequest");

    let page1 = get(&url, &format!("{CM}?limit=2")).json();
    assert_eq!(names(&page1), vec!["a", "b"]);
    let token = page1["metadata"]["continue"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!token.is_empty());
    let page2 = get(&url, &format!("{CM}?limit=2&continue={token}")).json();
    assert_eq!(names(&page2), vec!["c"]);
    assert!(page2["metadata"].get("continue").is_none());
}

#[test]
fn server_side_apply_creates_then_updates_and_tracks_generation() {
    let d = quiet_double();
    let url = d.url();
    let path = format!("{DEPLOY}/web");
    let created = apply(
        &url,
        &path,
        "fieldManager=capstan&fieldValidation=Strict",
        &deployment(1, "nginx:1"),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let c = created.json();
    assert_eq!(c["metadata"]["generation"], 1);
    let rv1: u64 = c["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mf = &c["metadata"]["managedFields"][0];
    assert_eq!(mf["manager"], "capstan");
    assert_eq!(mf["operation"], "Apply");
    assert_eq!(mf["fieldsType"], "FieldsV1");
    assert_eq!(mf["apiVersion"], "apps/v1");
    assert!(mf["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert_eq!(
        mf["fieldsV1"]["f:metadata"],
        json!({"f:labels": {"f:app": {}}})
    );
    assert_eq!(mf["fieldsV1"]["f:spec"]["f:replicas"], json!({}));
    let container =
        &mf["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"];
    assert_eq!(container["f:image"], json!({}));

    let same = apply(
        &url,
        &path,
        "fieldManager=capstan",
        &deployment(1, "nginx:1"),
    );
    assert_eq!(same.status, 200);
    assert_eq!(
        same.json()["metadata"]["generation"],
        1,
        "an unchanged apply keeps the generation"
    );
    assert_eq!(
        same.json()["metadata"]["resourceVersion"],
        c["metadata"]["resourceVersion"],
        "and writes nothing"
    );

    let updated = apply(
        &url,
        &path,
        "fieldManager=capstan",
        &deployment(1, "nginx:2"),
    );
    assert_eq!(updated.status, 200);
    let u = updated.json();
    assert_eq!(u["metadata"]["generation"], 2);
    assert_eq!(
        u["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:2"
    );
    let rv2: u64 = u["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    assert!(rv2 > rv1);
    assert_eq!(u["metadata"]["uid"], c["metadata"]["uid"]);

    // Labels this manager stops applying are removed.
    let without_labels = deployment(1, "nginx:2").replace("  labels:\n    app: web\n", "");
    let r = apply(&url, &path, "fieldManager=capstan", &without_labels).json();
    assert!(r["metadata"].get("labels").is_none(), "{r}");
    assert_eq!(r["metadata"]["generation"], 2, "labels are metadata");
}

#[test]
fn conflicting_managers_get_409_naming_the_field_until_forced() {
    let d = quiet_double();
    let url = d.url();
    let path = format!("{DEPLOY}/web");
    assert_eq!(
        apply(&url, &path, "fieldManager=a", &deployment(1, "nginx:1")).status,
        201
    );
    let conflict = apply(&url, &path, "fieldManager=b", &deployment(3, "nginx:1"));
    assert_eq!(conflict.status, 409, "{}", conflict.body);
    let s = conflict.json();
    assert_eq!(s["kind"], "Status");
    assert_eq!(s["reason"], "Conflict");
    assert_eq!(
        s["message"],
        "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"
    );
    assert_eq!(
        s["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"a\"", "field": ".spec.replicas"}])
    );

    let two = apply(&url, &path, "fieldManager=b", &deployment(3, "nginx:9"));
    assert_eq!(two.status, 409);
    let msg = two.json()["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        msg.starts_with("Apply failed with 2 conflicts: conflicts with \"a\":"),
        "{msg}"
    );
    assert!(
        msg.contains(".spec.template.spec.containers[name=\"web\"].image"),
        "{msg}"
    );

    // The same values are shared, not a conflict.
    assert_eq!(
        apply(&url, &path, "fieldManager=c", &deployment(1, "nginx:1")).status,
        200
    );

    let forced = apply(
        &url,
        &path,
        "fieldManager=b&force=true",
        &deployment(3, "nginx:1"),
    );
    assert_eq!(forced.status, 200, "{}", forced.body);
    let f = forced.json();
    assert_eq!(f["spec"]["replicas"], 3);
    let owners_of_replicas: Vec<&str> = f["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|m| m["fieldsV1"]["f:spec"].get("f:replicas").is_some())
                .filter_map(|m| m["manager"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(owners_of_replicas, vec!["b"]);
    // Now a is the one in conflict.
    let back = apply(&url, &path, "fieldManager=a", &deployment(1, "nginx:1"));
    assert_eq!(back.status, 409);
    assert!(
        back.body.contains("conflict with \\\"b\\\""),
        "{}",
        back.body
    );
}

#[test]
fn dry_run_stores_nothing() {
    let d = quiet_double();
    let url = d.url();
    let path = format!("{DEPLOY}/web");
    let dry = apply(
        &url,
        &path,
        "fieldManager=capstan&dryRun=All",
        &deployment(2, "nginx:1"),
    );
    assert_eq!(dry.status, 201);
    assert_eq!(dry.json()["spec"]["replicas"], 2);
    assert_eq!(get(&url, &path).status, 404);
    assert!(
        d.object("apps/v1", "Deployment", Some("default"), "web")
            .is_none()
    );
    apply(
        &url,
        &path,
        "fieldManager=capstan",
        &deployment(2, "nginx:1"),
    );
    let live_rv = get(&url, &path).json()["metadata"]["resourceVersion"].clone();
    let dry = apply(
        &url,
        &path,
        "fieldManager=capstan&dryRun=All",
        &deployment(5, "nginx:1"),
    );
    assert_eq!(dry.json()["metadata"]["resourceVersion"], live_rv);
    assert_eq!(dry.status, 200);
    assert_eq!(dry.json()["spec"]["replicas"], 5);
    assert_eq!(get(&url, &path).json()["spec"]["replicas"], 2);
    let del = delete(&url, &path, r#"{"dryRun":["All"]}"#);
    assert_eq!(del.status, 200);
    assert_eq!(get(&url, &path).status, 200);
}

#[test]
fn strict_validation_refuses_unknown_fields() {
    let d = quiet_double();
    let url = d.url();
    let body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata: {a: b}\nfoo: 1\n";
    let strict = apply(
        &url,
        &format!("{CM}/c"),
        "fieldManager=m&fieldValidation=Strict",
        body,
    );
    assert_eq!(strict.status, 400);
    let msg = strict.json()["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(msg.ends_with(".foo: field not declared in schema"), "{msg}");
    assert_eq!(strict.json()["reason"], "BadRequest");
    let meta = apply(
        &url,
        &format!("{CM}/c"),
        "fieldManager=m&fieldValidation=Strict",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  colour: red\n",
    );
    assert_eq!(meta.status, 400);
    assert!(
        meta.body
            .contains(".metadata.colour: field not declared in schema"),
        "{}",
        meta.body
    );
    let warn = apply(
        &url,
        &format!("{CM}/c"),
        "fieldManager=m&fieldValidation=Warn",
        body,
    );
    assert_eq!(warn.status, 201);
    assert!(
        warn.header("Warning")
            .is_some_and(|w| w.contains("unknown field \\\"foo\\\"")),
        "{:?}",
        warn.headers
    );
    assert!(warn.json().get("foo").is_none());
    let post_strict = send(
        &url,
        "POST",
        &format!("{CM}?fieldValidation=Strict"),
        &[("Content-Type", "application/json")],
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"},"bogus":true}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(post_strict.status, 400);
    assert!(
        post_strict
            .body
            .contains("strict decoding error: unknown field \\\"bogus\\\""),
        "{}",
        post_strict.body
    );
}

#[test]
fn immutable_fields_are_invalid() {
    let d = quiet_double();
    let url = d.url();
    let sts = |service: &str, replicas: u32| {
        format!(
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  serviceName: {service}\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: db}}\n  template:\n    metadata:\n      labels: {{app: db}}\n    spec:\n      containers:\n      - name: db\n        image: pg\n"
        )
    };
    let path = "/apis/apps/v1/namespaces/default/statefulsets/db";
    assert_eq!(
        apply(&url, path, "fieldManager=m", &sts("db", 1)).status,
        201
    );
    assert_eq!(
        apply(&url, path, "fieldManager=m", &sts("db", 3)).status,
        200,
        "replicas may change"
    );
    let bad = apply(&url, path, "fieldManager=m", &sts("other", 3));
    assert_eq!(bad.status, 422);
    let s = bad.json();
    assert_eq!(s["reason"], "Invalid");
    assert_eq!(
        s["message"],
        "StatefulSet.apps \"db\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
    );
    assert_eq!(s["details"]["causes"][0]["field"], "spec");

    let cm = |v: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\nimmutable: true\ndata:\n  a: \"{v}\"\n"
        )
    };
    assert_eq!(
        apply(&url, &format!("{CM}/frozen"), "fieldManager=m", &cm("1")).status,
        201
    );
    assert_eq!(
        apply(&url, &format!("{CM}/frozen"), "fieldManager=m", &cm("2")).status,
        422
    );

    let svc = |ip: &str| {
        format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  {ip}ports:\n  - port: 80\n"
        )
    };
    let created = apply(
        &url,
        "/api/v1/namespaces/default/services/s",
        "fieldManager=m",
        &svc(""),
    );
    assert!(
        created.json()["spec"]["clusterIP"]
            .as_str()
            .is_some_and(|ip| ip.starts_with("10.96.")),
        "{}",
        created.body
    );
    assert_eq!(
        apply(
            &url,
            "/api/v1/namespaces/default/services/s",
            "fieldManager=m",
            &svc("")
        )
        .status,
        200
    );
    let moved = apply(
        &url,
        "/api/v1/namespaces/default/services/s",
        "fieldManager=m&force=true",
        &svc("clusterIP: 10.0.0.1\n  "),
    );
    assert_eq!(moved.status, 422, "{}", moved.body);

    let nameless = post(
        &url,
        CM,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
    );
    assert_eq!(nameless.status, 422);
    assert_eq!(nameless.json()["reason"], "Invalid");
}

#[test]
fn writes_need_the_namespace_and_apply_needs_a_manager() {
    let d = quiet_double();
    let url = d.url();
    let body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
    let r = apply(
        &url,
        "/api/v1/namespaces/nowhere/configmaps/c",
        "fieldManager=m",
        body,
    );
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["message"], "namespaces \"nowhere\" not found");
    let r = apply(&url, &format!("{CM}/c"), "force=true", body);
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(r.body.contains("fieldManager"));
    let ns = apply(
        &url,
        "/api/v1/namespaces/nowhere",
        "fieldManager=m",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: nowhere\n",
    );
    assert_eq!(ns.status, 201);
    assert_eq!(ns.json()["status"]["phase"], "Active");
    assert_eq!(
        apply(
            &url,
            "/api/v1/namespaces/nowhere/configmaps/c",
            "fieldManager=m",
            body
        )
        .status,
        201
    );
}

#[test]
fn bad_requests_are_status_objects() {
    let d = quiet_double();
    let url = d.url();
    type Case<'a> = (&'a str, String, Vec<(&'a str, &'a str)>, String, u16);
    let cases: Vec<Case> = vec![
        (
            "PATCH",
            format!("{CM}/x?fieldManager=m"),
            vec![("Content-Type", "application/apply-patch+yaml")],
            "{not: [valid".into(),
            400,
        ),
        (
            "PATCH",
            format!("{CM}/x?fieldManager=m"),
            vec![("Content-Type", "application/apply-patch+yaml")],
            "- a list".into(),
            400,
        ),
        (
            "POST",
            CM.to_string(),
            vec![("Content-Type", "application/json")],
            "{".into(),
            400,
        ),
        (
            "POST",
            CM.to_string(),
            vec![("Content-Type", "text/plain")],
            "{}".into(),
            415,
        ),
        (
            "PATCH",
            format!("{CM}/x"),
            vec![("Content-Type", "application/x-weird")],
            "{}".into(),
            415,
        ),
        ("PUT", CM.to_string(), vec![], "{}".into(), 405),
        (
            "POST",
            "/api/v1/configmaps".into(),
            vec![("Content-Type", "application/json")],
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"z"}}"#.into(),
            405,
        ),
        (
            "GET",
            "/api/v1/namespaces/default/widgets".into(),
            vec![],
            String::new(),
            404,
        ),
        ("GET", format!("{CM}?limit=abc"), vec![], String::new(), 400),
        (
            "POST",
            CM.to_string(),
            vec![("Content-Type", "application/json")],
            format!("{{\"a\":\"{}\"}}", "x".repeat(3 * 1024 * 1024 + 10)),
            413,
        ),
        (
            "PATCH",
            format!("{CM}/x?fieldManager=m"),
            vec![("Content-Type", "application/apply-patch+yaml")],
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: [a]\n".into(),
            400,
        ),
        (
            "POST",
            CM.to_string(),
            vec![("Content-Type", "application/json")],
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"y","finalizers":"f"}}"#
                .into(),
            400,
        ),
        (
            "DELETE",
            format!("{CM}/x"),
            vec![],
            "{\"propagationPolicy\":\"Sideways\"}".into(),
            400,
        ),
    ];
    for (method, path, headers, body, want) in cases {
        let r = send(&url, method, &path, &headers, &body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        assert_eq!(r.status, want, "{method} {path}: {}", r.body);
        assert_eq!(r.json()["kind"], "Status", "{method} {path}");
        assert_eq!(r.json()["code"], want);
    }
    // Still serving.
    assert_eq!(get(&url, "/api").status, 200);
}

#[test]
fn delete_waits_for_finalizers() {
    let d = quiet_double();
    let url = d.url();
    d.put_object(
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "held", "namespace": "default", "finalizers": ["example.com/keep"]}}),
        "someone",
    );
    let r = delete(
        &url,
        &format!("{CM}/held"),
        r#"{"propagationPolicy":"Foreground"}"#,
    );
    assert_eq!(r.status, 200);
    assert!(r.json()["metadata"]["deletionTimestamp"].as_str().is_some());
    let still = get(&url, &format!("{CM}/held"));
    assert_eq!(still.status, 200);
    assert_eq!(
        still.json()["metadata"]["finalizers"],
        json!(["example.com/keep"])
    );
    assert!(d.remove_finalizers("v1", "ConfigMap", Some("default"), "held"));
    assert_eq!(get(&url, &format!("{CM}/held")).status, 404);
    assert_eq!(delete(&url, &format!("{CM}/held"), "").status, 404);

    // A merge patch that empties the finalizers also lets it go.
    d.put_object(
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "held2", "namespace": "default", "finalizers": ["x"]}}),
        "someone",
    );
    assert_eq!(delete(&url, &format!("{CM}/held2"), "").status, 200);
    let p = send(
        &url,
        "PATCH",
        &format!("{CM}/held2"),
        &[("Content-Type", "application/merge-patch+json")],
        r#"{"metadata":{"finalizers":null}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.status, 200, "{}", p.body);
    assert_eq!(get(&url, &format!("{CM}/held2")).status, 404);

    // Preconditions.
    post(
        &url,
        CM,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}}),
    );
    let r = delete(
        &url,
        &format!("{CM}/p"),
        r#"{"preconditions":{"uid":"not-it"}}"#,
    );
    assert_eq!(r.status, 409);
    assert_eq!(delete(&url, &format!("{CM}/p"), "").status, 200);
}

#[test]
fn garbage_collection_follows_owner_uids() {
    let d = quiet_double();
    let url = d.url();
    let owner = post(
        &url,
        CM,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}),
    )
    .json();
    let uid = owner["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for name in ["dep1", "dep2"] {
        let r = post(
            &url,
            "/api/v1/namespaces/default/secrets",
            &json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]},
            "stringData": {"k": "v"}}),
        );
        assert_eq!(r.status, 201);
        assert_eq!(r.json()["data"]["k"], "dg==");
    }
    assert_eq!(
        delete(
            &url,
            &format!("{CM}/owner"),
            r#"{"propagationPolicy":"Background"}"#
        )
        .status,
        200
    );
    assert_eq!(
        get(&url, "/api/v1/namespaces/default/secrets/dep1").status,
        404
    );
    assert_eq!(
        get(&url, "/api/v1/namespaces/default/secrets/dep2").status,
        404
    );

    let owner = post(
        &url,
        CM,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}),
    )
    .json();
    let uid = owner["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    post(
        &url,
        "/api/v1/namespaces/default/secrets",
        &json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "kept", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}}),
    );
    assert_eq!(
        delete(&url, &format!("{CM}/owner?propagationPolicy=Orphan"), "").status,
        200
    );
    let kept = get(&url, "/api/v1/namespaces/default/secrets/kept");
    assert_eq!(kept.status, 200);
    assert!(
        kept.json()["metadata"].get("ownerReferences").is_none(),
        "{}",
        kept.body
    );
}

#[test]
fn a_crd_adds_its_kind_to_discovery_once_established() {
    let d = double();
    let url = d.url();
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names:\n    plural: widgets\n    singular: widget\n    kind: Widget\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n";
    let r = apply(
        &url,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
        "fieldManager=m",
        crd,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(
        eventually(5, || get(&url, "/apis/example.com/v1").status == 200),
        "never served"
    );
    let doc = get(&url, "/apis/example.com/v1").json();
    let widget = doc["resources"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["name"] == "widgets"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(widget["kind"], "Widget");
    assert_eq!(widget["namespaced"], true);
    let crd_obj = d
        .object(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            None,
            "widgets.example.com",
        )
        .unwrap_or_default();
    let conds = crd_obj["status"]["conditions"].to_string();
    assert!(
        conds.contains("Established") && conds.contains("NamesAccepted"),
        "{conds}"
    );
    let w = apply(
        &url,
        "/apis/example.com/v1/namespaces/default/widgets/w1",
        "fieldManager=m&fieldValidation=Strict",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\nextra: anything\n",
    );
    assert_eq!(
        w.status, 201,
        "custom resources are not validated: {}",
        w.body
    );
    assert_eq!(
        delete(
            &url,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
            ""
        )
        .status,
        200
    );
    assert_eq!(get(&url, "/apis/example.com/v1").status, 404);
    assert_eq!(
        get(&url, "/apis/example.com/v1/namespaces/default/widgets/w1").status,
        404
    );
}

#[test]
fn controllers_make_workloads_ready_unless_a_test_pins_the_status() {
    let d = double();
    let url = d.url();
    apply(
        &url,
        &format!("{DEPLOY}/web"),
        "fieldManager=m",
        &deployment(3, "nginx:1"),
    );
    let ready = || {
        let o = get(&url, &format!("{DEPLOY}/web")).json();
        o["status"]["readyReplicas"] == 3
            && o["status"]["observedGeneration"] == o["metadata"]["generation"]
    };
    assert!(eventually(5, ready));
    let o = get(&url, &format!("{DEPLOY}/web")).json();
    assert!(
        o["status"]["conditions"]
            .to_string()
            .contains("NewReplicaSetAvailable")
    );
    assert!(d.set_status(
        "apps/v1",
        "Deployment",
        Some("default"),
        "web",
        json!({"observedGeneration": 1, "readyReplicas": 0})
    ));
    apply(
        &url,
        &format!("{DEPLOY}/web"),
        "fieldManager=m",
        &deployment(4, "nginx:1"),
    );
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        get(&url, &format!("{DEPLOY}/web")).json()["status"]["readyReplicas"],
        0,
        "pinned status stays"
    );

    let sts = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  replicas: 2\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n      containers: [{name: db, image: pg}]\n  volumeClaimTemplates:\n  - metadata: {name: data}\n    spec:\n      accessModes: [ReadWriteOnce]\n      resources: {requests: {storage: 1Gi}}\n";
    apply(
        &url,
        "/apis/apps/v1/namespaces/default/statefulsets/db",
        "fieldManager=m",
        sts,
    );
    assert!(eventually(5, || get(
        &url,
        "/api/v1/namespaces/default/persistentvolumeclaims/data-db-1"
    )
    .json()["status"]["phase"]
        == "Bound"));
    let s = get(&url, "/apis/apps/v1/namespaces/default/statefulsets/db").json();
    assert_eq!(s["status"]["readyReplicas"], 2);
    assert_eq!(
        s["status"]["currentRevision"],
        s["status"]["updateRevision"]
    );

    let job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: j, image: busybox}]\n";
    apply(
        &url,
        "/apis/batch/v1/namespaces/default/jobs/j",
        "fieldManager=m",
        job,
    );
    assert!(eventually(5, || get(
        &url,
        "/apis/batch/v1/namespaces/default/jobs/j"
    )
    .json()["status"]["conditions"]
        .to_string()
        .contains("\"Complete\"")));

    d.set_simulate_controllers(false);
    apply(
        &url,
        &format!("{DEPLOY}/quiet"),
        "fieldManager=m",
        &deployment(1, "x").replace("name: web\n  labels", "name: quiet\n  labels"),
    );
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        get(&url, &format!("{DEPLOY}/quiet"))
            .json()
            .get("status")
            .is_none()
    );
}

#[test]
fn watch_streams_events_from_a_resource_version() {
    let d = quiet_double();
    let url = d.url();
    let rv = get(&url, CM).json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let writer_url = url.clone();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        post(
            &writer_url,
            CM,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w", "labels": {"app": "x"}}}),
        );
        post(
            &writer_url,
            CM,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}}),
        );
        delete(&writer_url, &format!("{CM}/w"), "");
    });
    let started = Instant::now();
    let r = get(
        &url,
        &format!("{CM}?watch=true&resourceVersion={rv}&timeoutSeconds=1&labelSelector=app%3Dx"),
    );
    let _ = writer.join();
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "ends at timeoutSeconds"
    );
    let events: Vec<Value> = r
        .body
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types, vec!["ADDED", "DELETED"], "{}", r.body);
    assert_eq!(events[0]["object"]["metadata"]["name"], "w");
    assert_eq!(events[0]["object"]["kind"], "ConfigMap");

    // Without a resourceVersion, the current objects come first.
    let r = get(&url, &format!("{CM}?watch=1&timeoutSeconds=1"));
    assert!(
        r.body
            .lines()
            .next()
            .is_some_and(|l| l.contains("\"ADDED\"") && l.contains("other")),
        "{}",
        r.body
    );
}

#[test]
fn faults_fail_the_next_matching_requests() {
    let d = quiet_double();
    let url = d.url();
    d.inject_fault(Fault {
        method: Some("GET".into()),
        path_contains: "/configmaps".into(),
        times: 1,
        kind: FaultKind::Status(500),
    });
    let r = get(&url, CM);
    assert_eq!(r.status, 500);
    assert_eq!(r.json()["reason"], "InternalError");
    assert_eq!(get(&url, CM).status, 200, "used up");

    d.inject_fault(Fault {
        method: None,
        path_contains: "/secrets".into(),
        times: 2,
        kind: FaultKind::TooManyRequests {
            retry_after_secs: 7,
        },
    });
    assert_eq!(get(&url, CM).status, 200, "other paths are not affected");
    for _ in 0..2 {
        let r = get(&url, "/api/v1/namespaces/default/secrets");
        assert_eq!(r.status, 429);
        assert_eq!(r.header("Retry-After"), Some("7"));
        assert_eq!(r.json()["reason"], "TooManyRequests");
    }
    assert_eq!(get(&url, "/api/v1/namespaces/default/secrets").status, 200);

    d.inject_fault(Fault {
        method: None,
        path_contains: "/api/v1".into(),
        times: 1,
        kind: FaultKind::Delay(Duration::from_millis(300)),
    });
    let started = Instant::now();
    assert_eq!(get(&url, CM).status, 200);
    assert!(started.elapsed() >= Duration::from_millis(300));

    d.inject_fault(Fault {
        method: Some("POST".into()),
        path_contains: "/configmaps".into(),
        times: 1,
        kind: FaultKind::DropConnection,
    });
    let dropped = send(
        &url,
        "POST",
        CM,
        &[("Content-Type", "application/json")],
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#,
    );
    assert!(
        dropped.is_err() || dropped.as_ref().is_ok_and(|r| r.status == 0),
        "connection not dropped"
    );
    assert_eq!(
        get(&url, &format!("{CM}/x")).status,
        404,
        "a dropped request writes nothing"
    );
}

#[test]
fn every_request_is_recorded_in_order() {
    let d = quiet_double();
    let url = d.url();
    d.clear_requests();
    get(&url, "/api/v1?x=1");
    apply(
        &url,
        &format!("{CM}/r"),
        "fieldManager=capstan&force=true",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\n",
    );
    let reqs = d.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        (
            reqs[0].method.as_str(),
            reqs[0].path.as_str(),
            reqs[0].query.as_str()
        ),
        ("GET", "/api/v1", "x=1")
    );
    assert_eq!(reqs[1].method, "PATCH");
    assert_eq!(reqs[1].path, format!("{CM}/r"));
    assert_eq!(reqs[1].query, "fieldManager=capstan&force=true");
    assert_eq!(
        reqs[1].content_type.as_deref(),
        Some("application/apply-patch+yaml")
    );
    assert!(reqs[1].body.contains("name: r"));
    d.clear_requests();
    assert!(d.requests().is_empty());
}

#[test]
fn a_token_is_required_when_set() {
    let d = KubeDouble::start(Options {
        token: Some("s3cret".into()),
        ..Options::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let url = d.url();
    let r = get(&url, "/api");
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["reason"], "Unauthorized");
    let wrong = send(&url, "GET", "/api", &[("Authorization", "Bearer nope")], "")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(wrong.status, 401);
    let ok = send(
        &url,
        "GET",
        "/api",
        &[("Authorization", "Bearer s3cret")],
        "",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok.status, 200);
    let dir = std::env::temp_dir().join(format!("kube-double-token-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let kc = dir.join("kubeconfig");
    d.write_kubeconfig(&kc).unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(&kc).unwrap_or_default();
    assert!(
        text.contains("token: \"s3cret\"") && text.contains(&url),
        "{text}"
    );
}

#[test]
fn put_object_and_objects_for_tests() {
    let d = quiet_double();
    d.put_object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "theirs", "labels": {"app": "x"}}, "data": {"a": "1"}}), "helm");
    let o = d
        .object("v1", "ConfigMap", Some("default"), "theirs")
        .unwrap_or_default();
    assert_eq!(o["metadata"]["managedFields"][0]["manager"], "helm");
    assert_eq!(o["metadata"]["managedFields"][0]["operation"], "Update");
    assert!(
        d.objects()
            .iter()
            .any(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == "theirs")
    );
    assert!(
        d.objects()
            .iter()
            .all(|o| o["apiVersion"].is_string() && o["kind"].is_string())
    );
    // An applier taking a field helm set conflicts with helm.
    let r = apply(
        &d.url(),
        &format!("{CM}/theirs"),
        "fieldManager=capstan",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: theirs\ndata:\n  a: \"2\"\n",
    );
    assert_eq!(r.status, 409);
    assert!(
        r.body.contains("conflict with \\\"helm\\\": .data.a"),
        "{}",
        r.body
    );
    assert!(!d.set_status("v1", "ConfigMap", Some("default"), "nope", json!({})));
}

#[test]
fn aggregated_discovery_when_asked_for() {
    let d = quiet_double();
    let url = d.url();
    let accept =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let apis =
        send(&url, "GET", "/apis", &[("Accept", accept)], "").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(apis.status, 200);
    assert_eq!(
        apis.header("Content-Type"),
        Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    );
    let doc = apis.json();
    assert_eq!(doc["kind"], "APIGroupDiscoveryList");
    let apps = doc["items"]
        .as_array()
        .and_then(|a| a.iter().find(|g| g["metadata"]["name"] == "apps"))
        .cloned()
        .unwrap_or_default();
    let deploy = apps["versions"][0]["resources"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["resource"] == "deployments"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        deploy["responseKind"],
        json!({"group": "apps", "version": "v1", "kind": "Deployment"})
    );
    assert_eq!(deploy["scope"], "Namespaced");
    assert_eq!(deploy["subresources"][0]["subresource"], "status");
    let core = send(&url, "GET", "/api", &[("Accept", accept)], "")
        .unwrap_or_else(|e| panic!("{e}"))
        .json();
    assert_eq!(core["items"][0]["metadata"]["name"], "");
    assert_eq!(core["items"][0]["versions"][0]["version"], "v1");
    // Plain JSON for everyone else.
    assert_eq!(get(&url, "/apis").json()["kind"], "APIGroupList");
}

#[test]
fn patches_and_scale() {
    let d = quiet_double();
    let url = d.url();
    post(
        &url,
        CM,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}, "data": {"a": "1", "b": "2"}}),
    );
    let patch = |ct: &str, body: &str| {
        send(
            &url,
            "PATCH",
            &format!("{CM}/p?fieldManager=patcher"),
            &[("Content-Type", ct)],
            body,
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let r = patch(
        "application/json-patch+json",
        r#"[{"op":"replace","path":"/data/a","value":"9"},{"op":"remove","path":"/data/b"}]"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"], json!({"a": "9"}));
    let managers: Vec<String> = r.json()["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| m["manager"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert!(managers.contains(&"patcher".to_string()), "{managers:?}");
    assert_eq!(
        patch(
            "application/json-patch+json",
            r#"[{"op":"remove","path":"/data/nope"}]"#
        )
        .status,
        422
    );
    assert_eq!(
        patch("application/json-patch+json", r#"{"op":"add"}"#).status,
        400
    );
    let r = patch(
        "application/strategic-merge-patch+json",
        r#"{"data":{"c":"3","a":null}}"#,
    );
    assert_eq!(r.json()["data"], json!({"c": "3"}));

    apply(
        &url,
        &format!("{DEPLOY}/web"),
        "fieldManager=m",
        &deployment(2, "nginx:1"),
    );
    let s = get(&url, &format!("{DEPLOY}/web/scale")).json();
    assert_eq!(
        (
            s["kind"].as_str(),
            s["spec"]["replicas"].as_i64(),
            s["status"]["selector"].as_str()
        ),
        (Some("Scale"), Some(2), Some("app=web"))
    );
    let r = send(
        &url,
        "PATCH",
        &format!("{DEPLOY}/web/scale"),
        &[("Content-Type", "application/merge-patch+json")],
        r#"{"spec":{"replicas":5}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status, 200, "{}", r.body);
    let dep = get(&url, &format!("{DEPLOY}/web")).json();
    assert_eq!(dep["spec"]["replicas"], 5);
    assert_eq!(dep["metadata"]["generation"], 2);
    assert_eq!(
        get(&url, "/api/v1/namespaces/default/configmaps/p/scale").status,
        404
    );
}
