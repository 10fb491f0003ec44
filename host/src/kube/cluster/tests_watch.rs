//! Waiting for a change ([`super::watch`]) against `kube-double`: a
//! collection watched from its list's version ends at the first event
//! after it, an object watched by name only when it differs from the
//! version read (or appears), and a quiet cluster ends at the timeout.

use std::time::{Duration, Instant};

use serde_json::json;

use super::tests::fixture;
use crate::kube::ClusterView;
use crate::model::{LookupQuery, WatchEnd, WatchFrom};

fn query(kind: &str, namespace: &str, name: &str) -> LookupQuery {
    LookupQuery::new("v1", kind, namespace, name)
}

fn node(name: &str, zone: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": {"zone": zone}}})
}

#[test]
fn a_watch_ends_at_the_first_change_after_what_was_read() {
    let f = fixture();
    f.double.put_object(node("n1", "a"), "kubectl");
    let nodes = query("Node", "", "");
    let read = f.target.read_live(&nodes).unwrap();
    let from = [WatchFrom::of(nodes.clone(), &read)];
    assert!(from[0].version.is_some(), "{read}");

    // Nothing after the version read: the wait ends at its timeout.
    let began = Instant::now();
    let quiet = f
        .target
        .wait_for_change(&from, Duration::from_secs(1))
        .unwrap();
    assert_eq!(quiet, WatchEnd::Quiet);
    assert!(began.elapsed() >= Duration::from_millis(900));

    // A change made after the read, before the wait, is not lost.
    f.double.put_object(node("n1", "b"), "kubectl");
    let changed = f
        .target
        .wait_for_change(&from, Duration::from_secs(20))
        .unwrap();
    assert_eq!(changed, WatchEnd::Changed);

    // And one made during the wait ends it at once.
    let read = f.target.read_live(&nodes).unwrap();
    let from = [WatchFrom::of(nodes, &read)];
    let double = &f.double;
    let began = Instant::now();
    let changed = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            double.put_object(node("n2", "a"), "kubectl");
        });
        f.target.wait_for_change(&from, Duration::from_secs(20))
    })
    .unwrap();
    assert_eq!(changed, WatchEnd::Changed);
    assert!(began.elapsed() < Duration::from_secs(10));
}

#[test]
fn an_object_is_watched_by_name_against_the_version_read() {
    let f = fixture();
    let map = |value: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "site-facts", "namespace": "kube-system"},
               "data": {"facts.yaml": value}})
    };
    let cm = query("ConfigMap", "kube-system", "site-facts");
    // Absent: its creation is the change.
    let read = f.target.read_live(&cm).unwrap();
    let from = [WatchFrom::of(cm.clone(), &read)];
    assert_eq!(from[0].version, None);
    f.double.put_object(map("extra: {a: 1}"), "kubectl");
    assert_eq!(
        f.target
            .wait_for_change(&from, Duration::from_secs(20))
            .unwrap(),
        WatchEnd::Changed
    );

    // Present and unchanged: the server's first event is the object as
    // read, which is no change; another object changing is none either.
    let read = f.target.read_live(&cm).unwrap();
    let from = [WatchFrom::of(cm.clone(), &read)];
    f.double.put_object(
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "other", "namespace": "kube-system"}}),
        "kubectl",
    );
    assert_eq!(
        f.target
            .wait_for_change(&from, Duration::from_secs(1))
            .unwrap(),
        WatchEnd::Quiet
    );

    // Edited: a change.
    f.double.put_object(map("extra: {a: 2}"), "kubectl");
    assert_eq!(
        f.target
            .wait_for_change(&from, Duration::from_secs(20))
            .unwrap(),
        WatchEnd::Changed
    );
}

#[test]
fn several_watches_end_at_the_first_of_them_and_a_collection_needs_a_version() {
    let f = fixture();
    let nodes = query("Node", "", "");
    let maps = query("ConfigMap", "kube-system", "site-facts");
    let from = [
        WatchFrom::of(nodes.clone(), &f.target.read_live(&nodes).unwrap()),
        WatchFrom::of(maps.clone(), &f.target.read_live(&maps).unwrap()),
    ];
    f.double.put_object(node("n9", "c"), "kubectl");
    assert_eq!(
        f.target
            .wait_for_change(&from, Duration::from_secs(20))
            .unwrap(),
        WatchEnd::Changed
    );
    // A collection read without a version cannot be watched from it.
    let unversioned = [WatchFrom {
        query: nodes,
        version: None,
    }];
    let err = f
        .target
        .wait_for_change(&unversioned, Duration::from_secs(1))
        .unwrap_err();
    assert!(err.to_string().contains("changes to v1/Node"), "{err}");
    assert!(
        matches!(&err, crate::kube::Error::Live { source, .. }
            if matches!(**source, super::error::Error::NoVersion { .. })),
        "{err:?}"
    );
    // Nothing to watch is a target that cannot: the caller polls.
    assert_eq!(
        f.target
            .wait_for_change(&[], Duration::from_secs(1))
            .unwrap(),
        WatchEnd::Unsupported
    );
}
