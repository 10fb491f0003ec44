//! The directory target's tests: writes, reads, the index, and every
//! refusal an API server would make.

use super::*;
use crate::kube::plan_apply;

const CHART: &str = "---
# Source: web/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 2}
---
# Source: web/templates/service.yaml
apiVersion: v1
kind: Service
metadata: {name: web}
---
# Source: web/templates/config.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: shop}
data: {mode: fast}
";

fn release(app: &str, chart: &str) -> Release {
    Release {
        app: app.into(),
        chart: chart.into(),
        namespace: "shop".into(),
        release_name: format!("{app}-{chart}"),
    }
}

fn apply(target: &dyn ApplyTarget, release: &Release, desired: &[Resource]) -> Applied {
    let plan = plan_apply(&target.applied(release).unwrap(), desired).unwrap();
    target.apply(release, &plan).unwrap()
}

/// Each `(apiVersion, kind, scope)` as `target.kind_scope` answers it.
fn assert_scopes(target: &DirTarget, expected: &[(&str, &str, Option<bool>)]) {
    for (api_version, kind, scope) in expected {
        assert_eq!(
            target.kind_scope(api_version, kind).unwrap(),
            *scope,
            "{kind} in {api_version}"
        );
    }
}

/// A directory target in a temporary folder, which lives as long as the
/// first.
fn fresh() -> (tempfile::TempDir, DirTarget) {
    let root = tempfile::tempdir().unwrap();
    let target = DirTarget::new(root.path());
    (root, target)
}

#[test]
fn apply_prune_and_remove_round_trip() {
    let root = tempfile::tempdir().unwrap();
    let target: Box<dyn ApplyTarget> = Box::new(DirTarget::new(root.path().join("out")));
    let web = release("shop", "web");
    let desired = parse_manifests(CHART).unwrap();

    let first = apply(target.as_ref(), &web, &desired);
    assert_eq!(first.applied.len(), 3);
    assert_eq!(first.applied[0].kind, "ConfigMap");
    assert!(first.pruned.is_empty());
    let path = root.path().join("out/shop/web.yaml");
    assert_eq!(
        DirTarget::new(root.path().join("out"))
            .path_of(&web)
            .unwrap(),
        path
    );
    let back = target.applied(&web).unwrap();
    let objects: Vec<_> = back.iter().map(Resource::object).collect();
    let expected: Vec<_> = plan_apply(&[], &desired).unwrap().to_apply().to_vec();
    let expected: Vec<_> = expected.iter().map(Resource::object).collect();
    assert_eq!(objects, expected);

    let again = apply(target.as_ref(), &web, &desired);
    assert_eq!(again.unchanged, 3);

    let fewer: Vec<Resource> = desired
        .into_iter()
        .filter(|r| r.id().kind != "Service")
        .collect();
    let second = apply(target.as_ref(), &web, &fewer);
    assert_eq!(second.pruned.len(), 1);
    assert_eq!(second.pruned[0].kind, "Service");
    assert_eq!(second.unchanged, 2);
    let text = fs::read_to_string(&path).unwrap();
    assert!(!text.contains("kind: Service"));
    assert_eq!(target.applied(&web).unwrap().len(), 2);

    let removed = target.remove(&web).unwrap();
    let kinds: Vec<&str> = removed.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["Deployment", "ConfigMap"]);
    assert!(!path.exists());
    assert!(!root.path().join("out/shop").exists());
    assert!(target.applied(&web).unwrap().is_empty());
    assert!(target.remove(&web).unwrap().is_empty());
}

#[test]
fn removing_one_chart_keeps_the_others() {
    let (root, target) = fresh();
    let desired = parse_manifests(CHART).unwrap();
    apply(&target, &release("shop", "web"), &desired);
    let db = parse_manifests(&CHART.replace("name: web", "name: db")).unwrap();
    apply(&target, &release("shop", "db"), &db);
    target.remove(&release("shop", "web")).unwrap();
    assert!(root.path().join("shop/db.yaml").exists());
    assert!(!root.path().join("shop/web.yaml").exists());
    assert_eq!(target.applied(&release("shop", "db")).unwrap().len(), 3);
}

#[test]
fn bytes_are_deterministic() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    let web = release("shop", "web");
    apply(
        &DirTarget::new(first.path()),
        &web,
        &parse_manifests(CHART).unwrap(),
    );
    let mut reversed = parse_manifests(CHART).unwrap();
    reversed.reverse();
    apply(&DirTarget::new(second.path()), &web, &reversed);
    let a = fs::read(first.path().join("shop/web.yaml")).unwrap();
    let b = fs::read(second.path().join("shop/web.yaml")).unwrap();
    assert_eq!(a, b);
    assert_eq!(
        String::from_utf8(a).unwrap(),
        "# capstan release shop-web of app shop, chart web, namespace shop
---
apiVersion: v1
data:
  mode: fast
kind: ConfigMap
metadata:
  name: web
  namespace: shop
---
apiVersion: v1
kind: Service
metadata:
  name: web
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
"
    );
}

#[test]
fn hostile_names_are_refused_and_nothing_is_written() {
    let root = tempfile::tempdir().unwrap();
    let target = DirTarget::new(root.path().join("out"));
    let plan = plan_apply(&[], &parse_manifests(CHART).unwrap()).unwrap();
    let long = "a".repeat(64);
    let hostile = [
        ("..", "web"),
        ("shop", ".."),
        ("../escape", "web"),
        ("shop", "../../escape"),
        ("/etc", "web"),
        ("shop", "a/b"),
        ("", "web"),
        ("shop", ""),
        ("Shop", "web"),
        ("-shop", "web"),
        ("shop", "web-"),
        ("shop", "web.yaml"),
        (long.as_str(), "web"),
    ];
    for (app, chart) in hostile {
        let r = release(app, chart);
        assert!(
            matches!(target.apply(&r, &plan), Err(Error::InvalidName { .. })),
            "{app}/{chart}"
        );
        assert!(matches!(target.remove(&r), Err(Error::InvalidName { .. })));
        assert!(matches!(target.applied(&r), Err(Error::InvalidName { .. })));
    }
    let err = target.apply(&release("shop", "../x"), &plan).unwrap_err();
    assert_eq!(
        err.to_string(),
        "chart name \"../x\" is not a DNS-1123 label"
    );
    assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0);
    assert!(target.path_of(&release(&"a".repeat(63), "0")).is_ok());
}

#[cfg(unix)]
#[test]
fn a_linked_app_folder_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), root.path().join("shop")).unwrap();
    let target = DirTarget::new(root.path());
    let plan = plan_apply(&[], &parse_manifests(CHART).unwrap()).unwrap();
    let err = target.apply(&release("shop", "web"), &plan).unwrap_err();
    assert!(matches!(err, Error::NotADirectory { .. }));
    assert!(matches!(
        target.applied(&release("shop", "web")),
        Err(Error::NotADirectory { .. })
    ));
    assert_eq!(fs::read_dir(elsewhere.path()).unwrap().count(), 0);
}

#[test]
fn a_corrupt_file_is_a_typed_error_naming_it() {
    let root = tempfile::tempdir().unwrap();
    fs::create_dir(root.path().join("shop")).unwrap();
    fs::write(root.path().join("shop/web.yaml"), "---\n- not an object\n").unwrap();
    let target = DirTarget::new(root.path());
    let err = target.applied(&release("shop", "web")).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }));
    assert!(
        err.to_string()
            .starts_with("applied manifests of shop/web at ")
    );
    assert!(target.remove(&release("shop", "web")).is_err());
    assert!(root.path().join("shop/web.yaml").exists());
}

#[test]
fn remove_clears_temp_files_a_crash_left() {
    let (root, target) = fresh();
    let web = release("shop", "web");
    apply(&target, &web, &parse_manifests(CHART).unwrap());
    fs::write(root.path().join("shop/.web.yaml.tmpAbC123"), "partial").unwrap();
    target.remove(&web).unwrap();
    assert!(!root.path().join("shop").exists());
}

fn resource(object: serde_json::Value) -> Resource {
    Resource::from_value(object, "test").unwrap()
}

fn config_map(namespace: Option<&str>, name: &str) -> Resource {
    let mut object = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
        "data": {"k": "v"},
    });
    if let Some(namespace) = namespace {
        object["metadata"]["namespace"] = namespace.into();
    }
    resource(object)
}

fn crd(name: &str, group: &str, kind: &str, scope: &str) -> Resource {
    resource(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {"group": group, "scope": scope,
                 "names": {"kind": kind, "plural": name.split('.').next().unwrap_or("")},
                 "versions": [{"name": "v1", "served": true, "storage": true}]},
    }))
}

fn try_apply(
    target: &DirTarget,
    release: &Release,
    desired: &[Resource],
    options: &ApplyOptions,
) -> Result<Applied, Error> {
    let plan = plan_apply(&target.applied(release)?, desired)?;
    target.apply_with(release, &plan, options, &NoProgress)
}

/// Every file under `root` with its bytes.
fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for app in fs::read_dir(root).into_iter().flatten().flatten() {
        for file in fs::read_dir(app.path()).into_iter().flatten().flatten() {
            out.push((file.path(), fs::read(file.path()).unwrap()));
        }
    }
    out.sort();
    out
}

/// A ConfigMap whose `data` nests `depth` maps deep.
fn nested(depth: usize) -> Resource {
    let mut inner = serde_json::json!("leaf");
    for _ in 0..depth {
        inner = serde_json::json!({ "x": inner });
    }
    resource(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "deep", "namespace": "shop"}, "data": inner,
    }))
}

#[test]
fn a_definition_cannot_claim_a_builtin_kind() {
    let (root, target) = fresh();
    let ops = release("ops", "crds");
    let refused = [
        (
            crd("secrets", "", "Secret", "Cluster"),
            "spec.group is empty",
        ),
        (
            crd("secrets.apps", "apps", "Secret", "Cluster"),
            "has no dot",
        ),
        (
            crd(
                "widgets.networking.k8s.io",
                "networking.k8s.io",
                "Widget",
                "Cluster",
            ),
            "is a built-in API group",
        ),
        (
            crd("widgets.example.com", "example.com", "Widget", ""),
            "spec.scope is missing",
        ),
        (
            crd("widgets.example.com", "example.com", "Widget", "Global"),
            "not Namespaced",
        ),
        (
            crd("widgets.example.com", "example.com", "", "Cluster"),
            "spec.names.kind",
        ),
        (
            crd(".example.com", "example.com", "Widget", "Cluster"),
            "spec.names.plural",
        ),
        (
            crd("gadgets.example.com", "other.com", "Widget", "Cluster"),
            "its name must be",
        ),
    ];
    for (definition, reason) in refused {
        let admitted = target.admit(
            &ops,
            std::slice::from_ref(&definition),
            &ApplyOptions::default(),
        );
        assert!(
            matches!(admitted, Err(Error::InvalidDefinition { .. })),
            "{reason}"
        );
        let err = try_apply(&target, &ops, &[definition], &ApplyOptions::default()).unwrap_err();
        assert!(matches!(err, Error::InvalidDefinition { .. }), "{err}");
        assert!(err.to_string().contains(reason), "{err}");
    }
    assert!(snapshot(root.path()).is_empty(), "nothing written");

    // Planted by hand, such definitions still change no answer.
    fs::create_dir(root.path().join("evil")).unwrap();
    let planted: Vec<Resource> = vec![
        crd("secrets", "", "Secret", "Cluster"),
        crd("secrets.apps", "apps", "Deployment", "Cluster"),
        crd("widgets.apps", "apps", "Widget", "Cluster"),
        crd(
            "widgets.networking.k8s.io",
            "networking.k8s.io",
            "Widget",
            "Cluster",
        ),
    ];
    let documents: Vec<String> = planted.iter().map(|r| r.to_yaml().unwrap()).collect();
    fs::write(
        root.path().join("evil/x.yaml"),
        file_text(&release("evil", "x"), &documents),
    )
    .unwrap();
    assert_scopes(
        &target,
        &[
            ("v1", "Secret", Some(true)),
            ("apps/v1", "Deployment", Some(true)),
            ("apps/v1", "Widget", None),
            ("networking.k8s.io/v1", "Widget", None),
        ],
    );

    // A valid definition serves its kind, in its group only.
    try_apply(
        &target,
        &ops,
        &[crd(
            "widgets.example.com",
            "example.com",
            "Widget",
            "Cluster",
        )],
        &ApplyOptions::default(),
    )
    .unwrap();
    assert_scopes(
        &target,
        &[
            ("example.com/v1", "Widget", Some(false)),
            ("example.com/v1", "Gadget", None),
            ("other.com/v1", "Widget", None),
        ],
    );
}

#[test]
fn list_kinds_are_refused() {
    let (root, target) = fresh();
    let web = release("shop", "web");
    let item = config_map(Some("shop"), "a").into_object();
    let lists = [
        serde_json::json!({"apiVersion": "v1", "kind": "List", "metadata": {"name": "l"}, "items": [item]}),
        serde_json::json!({"apiVersion": "v1", "kind": "List", "metadata": {"name": "l"}}),
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"name": "l"}, "items": []}),
        serde_json::json!({"apiVersion": "v1", "kind": "SecretList", "metadata": {"name": "l"}}),
        serde_json::json!({"apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {"name": "l"}}),
        serde_json::json!({"apiVersion": "example.com/v1", "kind": "WidgetList", "metadata": {"name": "l"}, "items": []}),
    ];
    for list in lists {
        let list = resource(list);
        let err = try_apply(
            &target,
            &web,
            &[config_map(Some("shop"), "b"), list.clone()],
            &ApplyOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(err, Error::ListKind { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "{} is a list, which an API server does not store; apply its items one by one",
                list.id()
            )
        );
        assert!(
            target
                .admit(&web, &[list], &ApplyOptions::default())
                .is_err()
        );
    }
    assert!(snapshot(root.path()).is_empty(), "nothing written");
    // A custom kind that only ends in List, without items, is no list.
    let wish = resource(serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "WishList", "metadata": {"name": "w", "namespace": "shop"},
    }));
    try_apply(&target, &web, &[wish], &ApplyOptions::default()).unwrap();
}

#[test]
fn newer_cluster_scoped_kinds_are_cluster_scoped() {
    let (_root, target) = fresh();
    for (api_version, kind) in [
        ("storage.k8s.io/v1", "VolumeAttributesClass"),
        ("networking.k8s.io/v1", "ServiceCIDR"),
        ("networking.k8s.io/v1", "IPAddress"),
        ("resource.k8s.io/v1", "DeviceClass"),
        ("resource.k8s.io/v1", "ResourceSlice"),
        ("certificates.k8s.io/v1beta1", "ClusterTrustBundle"),
        ("storagemigration.k8s.io/v1beta1", "StorageVersionMigration"),
        ("internal.apiserver.k8s.io/v1alpha1", "StorageVersion"),
    ] {
        assert_eq!(
            target.kind_scope(api_version, kind).unwrap(),
            Some(false),
            "{kind}"
        );
    }
    assert_scopes(
        &target,
        &[
            ("v1", "ConfigMap", Some(true)),
            ("v1", "Widget", None),
            ("apps/v1", "Secret", None),
            ("example.com/v1", "Widget", None),
        ],
    );
}

#[test]
fn an_object_too_deep_to_read_back_is_refused_and_nothing_written() {
    let (root, target) = fresh();
    let web = release("shop", "web");
    apply(&target, &web, &parse_manifests(CHART).unwrap());
    apply(
        &target,
        &release("other", "app"),
        &[config_map(Some("other"), "o")],
    );
    let before = snapshot(root.path());

    let mut desired = parse_manifests(CHART).unwrap();
    desired.push(nested(120));
    let err = try_apply(&target, &web, &desired, &ApplyOptions::default()).unwrap_err();
    assert!(matches!(err, Error::Unreadable { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("ConfigMap shop/deep (v1) cannot be written"),
        "{err}"
    );
    assert!(matches!(
        target.admit(
            &release("new", "app"),
            &[nested(120)],
            &ApplyOptions::default()
        ),
        Err(Error::Unreadable { .. })
    ));
    assert_eq!(snapshot(root.path()), before, "files unchanged");
    assert_eq!(target.applied(&web).unwrap().len(), 3);
    assert_eq!(target.kind_scope("example.com/v1", "Widget").unwrap(), None);

    // Within the reader's limit, it is written and reads back.
    desired.pop();
    desired.push(nested(90));
    try_apply(&target, &web, &desired, &ApplyOptions::default()).unwrap();
    assert_eq!(target.applied(&web).unwrap().len(), 4);
}

#[test]
fn an_object_another_release_holds_needs_adopt_or_take_over() {
    let (root, target) = fresh();
    let (a, b) = (release("a", "x"), release("b", "y"));
    let shared = config_map(Some("shop"), "shared");
    apply(&target, &a, std::slice::from_ref(&shared));
    let before = snapshot(root.path());

    let err = try_apply(
        &target,
        &b,
        std::slice::from_ref(&shared),
        &ApplyOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "ConfigMap shop/shared (v1) already exists and is owned by capstan release a/x; pass --adopt to take it over"
    );
    // Placed in the release's namespace, the same object.
    let unplaced = config_map(None, "shared");
    assert!(matches!(
        try_apply(&target, &b, &[unplaced], &ApplyOptions::default()),
        Err(Error::Ownership { .. })
    ));
    // apply, and the default apply_some, do not adopt.
    let plan = plan_apply(&[], std::slice::from_ref(&shared)).unwrap();
    assert!(matches!(
        target.apply(&b, &plan),
        Err(Error::Ownership { .. })
    ));
    assert!(matches!(
        target.apply_some(&b, std::slice::from_ref(&shared), &[]),
        Err(Error::Ownership { .. })
    ));
    let err = target
        .admit(&b, std::slice::from_ref(&shared), &ApplyOptions::default())
        .unwrap_err();
    assert!(matches!(err, Error::Ownership { ref release, .. } if release == "a/x"));
    assert_eq!(snapshot(root.path()), before, "nothing written");

    // The holder itself may apply it again; another object is free.
    apply(&target, &a, std::slice::from_ref(&shared));
    apply(&target, &b, &[config_map(Some("shop"), "mine")]);

    let adopt = ApplyOptions {
        adopt: true,
        ..ApplyOptions::default()
    };
    target
        .admit(&b, std::slice::from_ref(&shared), &adopt)
        .unwrap();
    try_apply(&target, &b, std::slice::from_ref(&shared), &adopt).unwrap();
    // Once held, b re-applies it without adopting (as a cluster's
    // inventory allows), and so may a.
    try_apply(
        &target,
        &b,
        std::slice::from_ref(&shared),
        &ApplyOptions::default(),
    )
    .unwrap();
    apply(&target, &a, std::slice::from_ref(&shared));

    let c = release("c", "z");
    let take_a = ApplyOptions {
        take_over: vec!["a/x".into()],
        ..ApplyOptions::default()
    };
    // b holds it as well now: taking a over is not enough.
    assert!(matches!(
        try_apply(&target, &c, std::slice::from_ref(&shared), &take_a),
        Err(Error::Ownership { ref release, .. }) if release == "b/y"
    ));
    target.remove(&b).unwrap();
    target
        .admit(&c, std::slice::from_ref(&shared), &take_a)
        .unwrap();
    try_apply(&target, &c, std::slice::from_ref(&shared), &take_a).unwrap();

    // An update renaming a chart hands its objects over in one app.
    let (old, new) = (release("shop", "web"), release("shop", "web2"));
    apply(&target, &old, &parse_manifests(CHART).unwrap());
    assert!(
        try_apply(
            &target,
            &new,
            &parse_manifests(CHART).unwrap(),
            &ApplyOptions::default()
        )
        .is_err()
    );
    let take_old = ApplyOptions {
        take_over: vec!["shop/web".into()],
        ..ApplyOptions::default()
    };
    try_apply(&target, &new, &parse_manifests(CHART).unwrap(), &take_old).unwrap();
    target.remove(&old).unwrap();
    try_apply(
        &target,
        &new,
        &parse_manifests(CHART).unwrap(),
        &ApplyOptions::default(),
    )
    .unwrap();
}

#[test]
fn cluster_scoped_objects_conflict_across_namespaces() {
    let (_root, target) = fresh();
    let class = |namespace: &str| {
        resource(serde_json::json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "fast", "namespace": namespace},
        }))
    };
    apply(&target, &release("a", "x"), &[class("one")]);
    let mut b = release("b", "y");
    b.namespace = "two".into();
    assert!(matches!(
        try_apply(&target, &b, &[class("two")], &ApplyOptions::default()),
        Err(Error::Ownership { .. })
    ));
    // A namespaced object of the same name in another namespace is not.
    apply(&target, &release("a", "x"), &[config_map(None, "cm")]);
    try_apply(
        &target,
        &b,
        &[config_map(None, "cm")],
        &ApplyOptions::default(),
    )
    .unwrap();
}

#[test]
fn the_index_sees_a_file_changed_behind_its_back() {
    let (_root, target) = fresh();
    let ops = release("ops", "crds");
    apply(
        &target,
        &ops,
        &[crd(
            "widgets.example.com",
            "example.com",
            "Widget",
            "Namespaced",
        )],
    );
    assert_eq!(
        target.kind_scope("example.com/v1", "Widget").unwrap(),
        Some(true)
    );
    assert_eq!(target.parses(), 0, "the write filled the index");

    // Another process rewrites the file: longer, and cluster-scoped.
    let path = target.path_of(&ops).unwrap();
    let old = fs::read_to_string(&path).unwrap();
    let documents = [
        crd("widgets.example.com", "example.com", "Widget", "Cluster")
            .to_yaml()
            .unwrap(),
        config_map(Some("ops"), "planted").to_yaml().unwrap(),
    ];
    let new = file_text(&ops, &documents);
    assert_ne!(old.len(), new.len());
    fs::write(&path, new).unwrap();
    assert_eq!(
        target.kind_scope("example.com/v1", "Widget").unwrap(),
        Some(false)
    );
    assert_eq!(target.parses(), 1);
    // Its objects now count for ownership and lookups.
    let err = try_apply(
        &target,
        &release("b", "y"),
        &[config_map(Some("ops"), "planted")],
        &ApplyOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::Ownership { ref release, .. } if release == "ops/crds"));
    let query = LookupQuery {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: "ops".into(),
        name: "planted".into(),
    };
    assert_eq!(
        target.read_live(&query).unwrap()["metadata"]["name"],
        "planted"
    );
    assert_eq!(target.parses(), 1, "parsed once");

    // A clone shares the index; a removed file leaves it.
    let clone = target.clone();
    fs::remove_file(&path).unwrap();
    assert_eq!(clone.kind_scope("example.com/v1", "Widget").unwrap(), None);
    assert_eq!(target.read_live(&query).unwrap(), serde_json::json!({}));
    try_apply(
        &target,
        &release("b", "y"),
        &[config_map(Some("ops"), "planted")],
        &ApplyOptions::default(),
    )
    .unwrap();
}

#[test]
fn scopes_and_lookups_do_not_parse_the_folder_again() {
    let (root, target) = fresh();
    let big: Vec<Resource> = (0..2000)
        .map(|i| config_map(Some("big"), &format!("cm-{i}")))
        .collect();
    apply(&target, &release("big", "all"), &big);
    apply(
        &target,
        &release("ops", "crds"),
        &[crd(
            "widgets.example.com",
            "example.com",
            "Widget",
            "Namespaced",
        )],
    );
    // Written by another process: parsed once.
    let fresh = DirTarget::new(root.path());
    for i in 0..100 {
        assert_eq!(fresh.kind_scope("v1", "Secret").unwrap(), Some(true));
        assert_eq!(
            fresh.kind_scope("example.com/v1", "Widget").unwrap(),
            Some(true)
        );
        let mine = release("small", "app");
        try_apply(
            &fresh,
            &mine,
            &[config_map(Some("small"), &format!("s-{i}"))],
            &ApplyOptions::default(),
        )
        .unwrap();
    }
    assert_eq!(fresh.parses(), 2, "each file parsed once");
    let query = LookupQuery {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: "small".into(),
        name: String::new(),
    };
    assert_eq!(
        fresh.read_live(&query).unwrap()["items"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(fresh.parses(), 2);
}

#[test]
fn kind_scope_reads_no_file_for_a_builtin_kind() {
    let (root, target) = fresh();
    fs::create_dir(root.path().join("shop")).unwrap();
    fs::write(root.path().join("shop/web.yaml"), "a: [unclosed\n").unwrap();
    assert_scopes(
        &target,
        &[("v1", "Secret", Some(true)), ("apps/v1", "Widget", None)],
    );
    assert_eq!(target.parses(), 0);
}

#[test]
fn another_apps_corrupt_file_is_named_and_does_not_stop_this_one() {
    let (root, target) = fresh();
    let web = release("shop", "web");
    apply(&target, &web, &parse_manifests(CHART).unwrap());
    apply(
        &target,
        &release("ops", "crds"),
        &[crd(
            "widgets.example.com",
            "example.com",
            "Widget",
            "Cluster",
        )],
    );
    fs::create_dir(root.path().join("other")).unwrap();
    let bad = root.path().join("other/bad.yaml");
    fs::write(&bad, "---\n- not an object\n").unwrap();

    apply(&target, &web, &parse_manifests(CHART).unwrap());
    assert_scopes(
        &target,
        &[
            ("v1", "Secret", Some(true)),
            ("example.com/v1", "Widget", Some(false)),
        ],
    );
    let query = LookupQuery {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: "shop".into(),
        name: "web".into(),
    };
    assert_eq!(target.read_live(&query).unwrap()["data"]["mode"], "fast");

    // Answers the bad file could change are errors naming it.
    let err = target.kind_scope("example.com/v1", "Gadget").unwrap_err();
    assert!(
        matches!(err, Error::Corrupt { ref path, .. } if *path == bad),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("applied manifests of other/bad at ")
    );
    let missing = LookupQuery {
        name: "nope".into(),
        ..query.clone()
    };
    assert!(
        matches!(target.read_live(&missing), Err(Error::Corrupt { ref path, .. }) if *path == bad)
    );
    let list = LookupQuery {
        name: String::new(),
        ..query
    };
    assert!(matches!(
        target.read_live(&list),
        Err(Error::Corrupt { .. })
    ));

    // Repaired, it is read again.
    fs::write(&bad, "# empty\n").unwrap();
    assert_eq!(target.kind_scope("example.com/v1", "Gadget").unwrap(), None);
    assert_eq!(target.read_live(&missing).unwrap(), serde_json::json!({}));
}
