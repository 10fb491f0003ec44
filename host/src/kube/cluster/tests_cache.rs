//! The apply cache ([`super::cache`]) against `kube-double`: a first
//! apply into a namespace it creates reads no object, and a re-apply
//! after the drift watches are in step sends nothing for objects as
//! capstan left them (nor reads the release's inventory Secret), while
//! an edited one is read, compared and taken back.

use std::time::{Duration, Instant};

use serde_json::json;

use super::tests::{apply_text, cluster_error, fixture, release};
use crate::kube::ClusterView;
use crate::kube::target::ApplyOptions;
use crate::model::FieldPolicy;

const THREE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: one}\n---\n\
                     apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: two}\n---\n\
                     apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: three}\n";

fn object_requests(f: &super::tests::Fixture) -> Vec<String> {
    f.double
        .requests()
        .iter()
        .filter(|r| r.path.contains("/configmaps/"))
        .map(|r| format!("{} {}?{}", r.method, r.path, r.query))
        .collect()
}

#[test]
fn a_first_apply_into_a_namespace_it_creates_reads_no_object() {
    let f = fixture();
    apply_text(&f, THREE, &ApplyOptions::default()).unwrap();
    let sent = object_requests(&f);
    // One write each; no GET, no dry run, and no wait: the answers show
    // each ConfigMap Current.
    assert_eq!(sent.len(), 3, "{sent:#?}");
    assert!(
        sent.iter()
            .all(|r| r.starts_with("PATCH") && !r.contains("dryRun")),
        "{sent:#?}"
    );
}

#[test]
fn a_reapply_from_the_cache_sends_nothing_for_objects_as_capstan_left_them() {
    let f = fixture();
    let applied = apply_text(&f, THREE, &ApplyOptions::default()).unwrap();
    f.target
        .follow(&release(), &applied.held, &FieldPolicy::default())
        .unwrap();
    // The watch lists, then watches: from then on a re-apply asks nothing.
    let began = Instant::now();
    loop {
        f.double.clear_requests();
        let again = apply_text(&f, THREE, &ApplyOptions::default()).unwrap();
        assert_eq!(again.unchanged, 3);
        // Nor the release's inventory Secret, which its watch holds as
        // this process last read it.
        let secret_reads = f
            .double
            .requests()
            .iter()
            .filter(|r| r.method == "GET" && r.path.contains("/secrets/"))
            .count();
        if object_requests(&f).is_empty() && secret_reads == 0 {
            break;
        }
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "the re-apply still reads: {:#?}",
            object_requests(&f)
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // An edit: that object alone is read, compared and taken back.
    f.double.put_object(
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "b", "namespace": "shop",
                            "labels": {"app.capstan.dev/app": "shop"}},
               "data": {"k": "edited"}}),
        "kubectl-edit",
    );
    let began = Instant::now();
    loop {
        f.double.clear_requests();
        let again = apply_text(&f, THREE, &ApplyOptions::default()).unwrap();
        let sent = object_requests(&f);
        if again.unchanged == 2 {
            assert!(
                sent.iter().all(|r| r.contains("/configmaps/b")),
                "{sent:#?}"
            );
            assert!(sent.iter().any(|r| r.starts_with("GET")), "{sent:#?}");
            break;
        }
        // The watch had not delivered the edit yet: the drift watch
        // reports it when it does, and the next re-apply reads it.
        assert!(began.elapsed() < Duration::from_secs(20), "{sent:#?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let b = f
        .double
        .object("v1", "ConfigMap", Some("shop"), "b")
        .unwrap();
    assert_eq!(b["data"]["k"], "two");
}

#[test]
fn a_first_apply_into_an_existing_namespace_lists_each_kind_once() {
    let f = fixture();
    f.double.put_object(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
        "kubectl",
    );
    apply_text(&f, THREE, &ApplyOptions::default()).unwrap();
    let sent: Vec<String> = f
        .double
        .requests()
        .iter()
        .filter(|r| r.path.contains("/configmaps"))
        .map(|r| format!("{} {}?{}", r.method, r.path, r.query))
        .collect();
    let lists = sent
        .iter()
        .filter(|r| r.starts_with("GET") && r.contains("/configmaps?"))
        .count();
    let gets = sent
        .iter()
        .filter(|r| r.starts_with("GET") && r.contains("/configmaps/"))
        .count();
    assert_eq!((lists, gets), (1, 0), "{sent:#?}");

    // One that exists, not capstan's: it is read, and refused.
    let g = fixture();
    g.double.put_object(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
        "kubectl",
    );
    g.double.put_object(
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "b", "namespace": "shop"}, "data": {"k": "theirs"}}),
        "kubectl",
    );
    let err = cluster_error(apply_text(&g, THREE, &ApplyOptions::default()).unwrap_err());
    assert!(
        err.to_string().contains("is not created by capstan"),
        "{err}"
    );
    let theirs = g
        .double
        .object("v1", "ConfigMap", Some("shop"), "b")
        .unwrap();
    assert_eq!(theirs["data"]["k"], "theirs");
}
