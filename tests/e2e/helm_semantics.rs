//! What the apply differential (`apply_differential`) cannot show by
//! comparing what is left, on the real control plane: the words of a
//! hook Job's failure when the Job controller cannot create its Pods, the
//! opt-in wait for a load balancer's address, and a remove that another
//! client races by creating an object of the same name (issue 42).

use std::time::{Duration, Instant};

use crate::control_plane::{ControlPlane, control_plane};
use crate::daemon::{Daemon, edit, text};
use crate::real_cluster::{audit_events, shop};

/// Who the daemon is on the control plane.
const DAEMON_USER: &str = "system:serviceaccount:capstan-system:capstan";

/// A hook Job whose ServiceAccount does not exist: the Job controller's
/// Pods are refused, so the Job never has a Pod; the failure says why,
/// from the Job's `FailedCreate` Event (ingress-nginx's admission Job
/// failed that way when its hook ServiceAccount was deleted too early).
#[test]
fn a_hook_job_that_cannot_create_its_pods_says_why() {
    let Some(cp) = control_plane() else { return };
    let app = "hs-hook-sa";
    let hook = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: worker-admission\n  annotations:\n    \
                helm.sh/hook: pre-install\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      \
                serviceAccountName: worker-gone\n      restartPolicy: Never\n      containers:\n        \
                - {name: create, image: registry.example/create:1.0}\n";
    let d = shop_with(&cp, app, ("worker", "timeout: 15s"), ("hook.yaml", hook));
    let message = failed_apply(&d, app);
    for needle in [
        "pre-install hook",
        "worker-admission",
        "not finished after 15s",
        "FailedCreate",
        "serviceaccount \"worker-gone\" not found",
    ] {
        assert!(message.contains(needle), "lacks {needle:?}: {message}");
    }
    clean_up(&cp, &d, app);
}

/// `wait_for_load_balancer: true` waits for the address no controller
/// gives here, and the failure names the Service and the opt-in; without
/// it (the default, kstatus's rule) the same chart applies.
#[test]
fn a_load_balancer_waits_for_its_address_only_when_asked() {
    let Some(cp) = control_plane() else { return };
    let app = "hs-lb";
    let service = "apiVersion: v1\nkind: Service\nmetadata:\n  name: worker-lb\nspec:\n  \
                   type: LoadBalancer\n  selector: {app: worker}\n  ports:\n    - {port: 80}\n";
    let d = shop_with(
        &cp,
        app,
        ("worker", "timeout: 10s, wait_for_load_balancer: true"),
        ("lb.yaml", service),
    );
    let started = Instant::now();
    let message = failed_apply(&d, app);
    assert!(
        message.contains("worker-lb") && message.contains("wait_for_load_balancer"),
        "{message}"
    );
    assert!(started.elapsed() < Duration::from_secs(120), "{message}");

    clean_up(&cp, &d, app);

    // The same chart without the opt-in: ready once it has a cluster IP.
    let app = "hs-lb-default";
    let d = shop(&cp, app, |a| {
        std::fs::write(a.join("charts/worker/templates/lb.yaml"), service).unwrap();
    });
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    let lb = cp
        .object("service", Some(app), "worker-lb")
        .expect("the Service");
    assert!(lb["status"]["loadBalancer"]["ingress"].is_null(), "{lb}");
    clean_up(&cp, &d, app);
}

/// A remove waits for what it deleted to be gone, not for a name: a
/// ConfigMap held by a finalizer is released and at once created again
/// by another client (as `helm install` of another release puts back a
/// CRD); the remove sees the new object's other uid, counts the old one
/// gone and finishes, long before its timeout. The scenario is repeated
/// until the audit log shows that the daemon did read the new object
/// while it waited (its poll may fall between the release and the
/// create, where a name alone would do).
#[test]
fn a_remove_counts_an_object_created_again_by_another_client_as_gone() {
    let Some(cp) = control_plane() else { return };
    let app = "hs-uid";
    let held = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [capstan.test/hold]\ndata: {a: b}\n";
    let d = shop_with(
        &cp,
        app,
        ("shop-config", "timeout: 60s"),
        ("held.yaml", held),
    );
    for attempt in 1..=4 {
        d.ok(&["app", "apply", app]);
        let state = d.state();
        let remove = std::thread::spawn(move || {
            let started = Instant::now();
            let out = crate::support::capstan()
                .args(["app", "remove", "hs-uid"])
                .env("CAPSTAN_STATE", state)
                .env_remove("CAPSTAN_SERVER")
                .env_remove("CAPSTAN_TOKEN")
                .output()
                .expect("running capstan");
            (out, started.elapsed())
        });
        cp.eventually(
            "the remove deletes the held ConfigMap",
            Duration::from_secs(60),
            || {
                cp.object("configmap", Some(app), "held")
                    .is_some_and(|c| !c["metadata"]["deletionTimestamp"].is_null())
            },
        );
        let patch = cp.kubectl(&[
            "patch",
            "configmap",
            "held",
            "-n",
            app,
            "--type=merge",
            "-p",
            "{\"metadata\":{\"finalizers\":null}}",
        ]);
        assert!(patch.status.success(), "{}", text(&patch.stderr));
        let created = cp.kubectl(&[
            "create",
            "configmap",
            "held",
            "-n",
            app,
            "--from-literal=by=someone-else",
        ]);
        assert!(created.status.success(), "{}", text(&created.stderr));
        let after_create = now_rfc3339_micros();
        let (out, took) = remove.join().expect("the remove thread");
        assert!(out.status.success(), "{}\n{}", text(&out.stderr), d.log());
        assert!(took < Duration::from_secs(30), "the remove took {took:?}");
        let replacement = cp
            .object("configmap", Some(app), "held")
            .expect("the new ConfigMap stays");
        assert_eq!(replacement["data"]["by"], "someone-else");
        let saw_new = audit_events(&cp).iter().any(|e| {
            e["user"]["username"] == DAEMON_USER
                && e["verb"] == "get"
                && e["objectRef"]["name"] == "held"
                && e["objectRef"]["namespace"] == app
                && e["responseStatus"]["code"] == 200
                && e["requestReceivedTimestamp"]
                    .as_str()
                    .is_some_and(|t| t > after_create.as_str())
        });
        let _ = cp.kubectl(&[
            "delete",
            "configmap",
            "held",
            "-n",
            app,
            "--ignore-not-found",
        ]);
        if saw_new {
            clean_up(&cp, &d, app);
            return;
        }
        eprintln!("attempt {attempt}: the daemon's poll fell before the new object; again");
    }
    panic!("in four attempts the daemon never read the object created again");
}

/// The shop as `app` ([`shop`]), with `settings` added to the chart whose
/// release is `release` in `capstan.yaml` and the template `file` added to
/// that chart (the shop's charts are named as their releases, but for
/// `shop-config`, the chart `config`).
fn shop_with(
    cp: &ControlPlane,
    app: &str,
    (release, settings): (&str, &str),
    (file, template): (&str, &str),
) -> Daemon {
    let chart = release.strip_prefix("shop-").unwrap_or(release);
    shop(cp, app, |a| {
        edit(
            &a.join("capstan.yaml"),
            &format!("release: {release}}}"),
            &format!("release: {release}, {settings}}}"),
        );
        std::fs::write(
            a.join("charts").join(chart).join("templates").join(file),
            template,
        )
        .unwrap();
    })
}

/// Applies `app`, which must fail; the message `app show` keeps.
fn failed_apply(d: &Daemon, app: &str) -> String {
    let out = d.cli(&["app", "apply", app]);
    assert!(!out.status.success(), "{}", d.log());
    d.show(app)["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Removes the app and deletes its namespace.
fn clean_up(cp: &ControlPlane, d: &Daemon, app: &str) {
    let _ = d.cli(&["app", "remove", app]);
    cp.delete_namespace(app);
}

/// Now in the audit log's format (`2026-12-07T13:42:10.123456Z`).
fn now_rfc3339_micros() -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%S.%6NZ"])
        .output()
        .expect("date");
    text(&out.stdout).trim().to_owned()
}
