//! The operator's verbs through the real binary and daemon (issue 12):
//! `app rollback` to each kept version with the user overrides it had,
//! `app update --force`, scriptable output (`-o json|yaml|name`, `-q`,
//! `--no-wait -o json`), `app wait` re-attaching after Ctrl-C, upload
//! hints, `app delete --force`, and shell completions.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::daemon::{Daemon, drop_worker, edit, text};
use crate::support::capstan;

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// The versions `app show` lists, and those it marks as rollback targets.
fn versions(d: &Daemon) -> (Vec<String>, Vec<String>) {
    let shown = d.show("shop");
    let all = shown["versions"].as_array().unwrap();
    let name = |v: &serde_json::Value| v["version"].as_str().unwrap().to_owned();
    (
        all.iter().map(name).collect(),
        all.iter()
            .filter(|v| v["rollback"] == true)
            .map(name)
            .collect(),
    )
}

fn replicas(d: &Daemon) -> String {
    let web = read(&d.applied().join("shop/web.yaml"));
    web.lines()
        .find(|l| l.trim_start().starts_with("replicas:"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// v1.2.0: as 1.1.0, with another currency.
fn gbp(app: &std::path::Path) {
    drop_worker(app);
    edit(
        &app.join("charts/config/values.yaml"),
        "currency: USD",
        "currency: GBP",
    );
}

#[test]
fn rollback_goes_back_to_each_kept_version_with_the_overrides_it_had() {
    let d = Daemon::start("operator_rollback");
    let shop = d.applied().join("shop");
    let v10 = d.shop_bundle("1.0.0", |_| {});
    let v11 = d.shop_bundle("1.1.0", drop_worker);
    let v12 = d.shop_bundle("1.2.0", gbp);
    let v13 = d.shop_bundle("1.3.0", gbp);

    d.ok(&["app", "upload", v10.to_str().unwrap()]);
    d.ok(&["override", "set", "shop", "web", "--set", "replicaCount=3"]);
    d.ok(&["app", "apply", "shop"]);
    let nothing = d.cli(&["app", "rollback", "shop"]);
    assert_eq!(nothing.status.code(), Some(1));
    assert!(
        text(&nothing.stderr).contains("cannot roll back shop: no earlier version is kept"),
        "{}",
        text(&nothing.stderr)
    );

    d.ok(&["app", "update", v11.to_str().unwrap()]);
    d.ok(&["override", "set", "shop", "web", "--set", "replicaCount=4"]);
    d.ok(&["app", "apply", "shop"]);
    d.ok(&["app", "update", v12.to_str().unwrap()]);
    d.ok(&["override", "set", "shop", "web", "--set", "replicaCount=5"]);
    d.ok(&["app", "apply", "shop"]);
    assert_eq!(replicas(&d), "replicas: 5");
    assert!(read(&shop.join("config.yaml")).contains("GBP"));

    let (all, kept) = versions(&d);
    assert_eq!(all, ["1.0.0", "1.1.0", "1.2.0"]);
    assert_eq!(kept, ["1.0.0", "1.1.0"]);
    let history = d.ok(&["app", "history", "shop"]);
    assert!(
        history.contains("1.1.0    can roll back to") && history.contains("1.2.0    active"),
        "{history}"
    );

    // Default: the version most recently left.
    d.ok(&["app", "rollback", "shop"]);
    let shown = d.show("shop");
    assert_eq!(shown["active_version"], "1.1.0");
    assert_eq!(shown["state"], "applied");
    assert!(
        shown["message"]
            .as_str()
            .unwrap()
            .contains("rolled back from 1.2.0 to 1.1.0"),
        "{shown}"
    );
    assert_eq!(replicas(&d), "replicas: 4", "1.1.0's user override");
    assert!(read(&shop.join("config.yaml")).contains("USD"));
    assert!(!shop.join("worker.yaml").exists());
    let layers = json(&d.ok(&["override", "show", "shop", "web", "-o", "json"]));
    assert_eq!(layers["layers"][3]["values"]["replicaCount"], 4);

    d.ok(&["app", "rollback", "shop", "1.0.0"]);
    assert_eq!(d.show("shop")["active_version"], "1.0.0");
    assert_eq!(replicas(&d), "replicas: 3", "1.0.0's user override");
    assert!(read(&shop.join("config.yaml")).contains("EUR"));
    assert!(
        shop.join("worker.yaml").exists(),
        "1.0.0's worker chart is back"
    );

    d.ok(&["app", "rollback", "shop", "1.2.0"]);
    assert_eq!(d.show("shop")["active_version"], "1.2.0");
    assert_eq!(replicas(&d), "replicas: 5", "1.2.0's user override");
    assert!(!shop.join("worker.yaml").exists(), "pruned again");

    let missing = d.cli(&["app", "rollback", "shop", "9.9.9"]);
    assert_eq!(missing.status.code(), Some(1));
    let stderr = text(&missing.stderr);
    assert!(
        stderr.contains("version 9.9.9 is not kept (kept: 1.0.0, 1.1.0)"),
        "{stderr}"
    );

    // A fourth version: the one left longest ago (1.1.0) is forgotten.
    d.ok(&["app", "update", v13.to_str().unwrap()]);
    let (all, kept) = versions(&d);
    assert_eq!(all, ["1.0.0", "1.2.0", "1.3.0"]);
    assert_eq!(kept, ["1.0.0", "1.2.0"]);
    assert!(!d.state().join("bundles/shop/1.1.0").exists());

    // A downgrade needs --force, and says so.
    let refused = d.cli(&["app", "update", v10.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("not newer"),
        "{}",
        text(&refused.stderr)
    );
    let forced = d.cli(&["app", "update", v10.to_str().unwrap(), "--force"]);
    let stderr = text(&forced.stderr);
    assert!(forced.status.success(), "{stderr}\n{}", d.log());
    assert!(
        stderr.contains("warning: forced: a downgrade from 1.3.0 to 1.0.0"),
        "{stderr}"
    );
    let shown = d.show("shop");
    assert_eq!(shown["active_version"], "1.0.0");
    assert!(
        shown["message"]
            .as_str()
            .unwrap()
            .contains("forced: a downgrade"),
        "{shown}"
    );
    assert!(d.log().contains("forced: a downgrade"), "logged loudly");
}

#[test]
fn scriptable_output_is_one_object_per_result_and_quiet_prints_nothing() {
    let d = Daemon::start("operator_output");
    let v10 = d.shop_bundle("1.0.0", |_| {});

    let wrong = d.cli(&["app", "upload", v10.to_str().unwrap(), "--name", "other"]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        text(&wrong.stderr).contains("is a bundle of app shop, not other"),
        "{}",
        text(&wrong.stderr)
    );

    let uploaded = json(&d.ok(&[
        "app",
        "upload",
        v10.to_str().unwrap(),
        "--name",
        "shop",
        "-o",
        "json",
    ]));
    assert!(uploaded.is_object(), "one object: {uploaded}");
    assert_eq!(uploaded["name"], "shop");
    assert_eq!(uploaded["state"], "uploaded");

    let again = d.cli(&["app", "upload", v10.to_str().unwrap()]);
    let stderr = text(&again.stderr);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("already exists") && stderr.contains("capstan app update"),
        "{stderr}"
    );

    let started = json(&d.ok(&["app", "apply", "shop", "--no-wait", "-o", "json"]));
    let keys: Vec<&str> = started
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["app", "operation"], "{started}");
    assert_eq!(started["app"], "shop");
    assert!(started["operation"].is_i64());

    let waited = json(&d.ok(&["app", "wait", "shop", "-o", "json"]));
    assert_eq!(waited["state"], "applied", "{waited}");
    assert_eq!(d.ok(&["app", "list", "-o", "name"]), "app/shop\n");
    assert_eq!(d.ok(&["app", "show", "shop", "-o", "name"]), "app/shop\n");
    let status: serde_json::Value =
        serde_yaml_ng::from_str(&d.ok(&["app", "status", "shop", "-o", "yaml"])).unwrap();
    assert_eq!(status["state"], "applied");

    // Stable key order: the same answer twice is the same text, in the
    // record's field order.
    let a = d.ok(&["app", "show", "shop", "-o", "json"]);
    let b = d.ok(&["app", "show", "shop", "-o", "json"]);
    assert_eq!(a, b);
    let name_at = a.find("\"name\"").unwrap();
    let state_at = a.find("\"state\"").unwrap();
    assert!(name_at < state_at, "{a}");

    let history = json(&d.ok(&["app", "history", "shop", "-o", "json"]));
    assert_eq!(history["app"], "shop");
    assert_eq!(history["operations"].as_array().unwrap().len(), 2);
    assert_eq!(history["versions"][0]["active"], true);

    let no_name = d.cli(&["app", "diff", "shop", "-o", "name"]);
    assert_eq!(no_name.status.code(), Some(1));
    assert!(text(&no_name.stderr).contains("-o name is for commands that print apps"));

    let quiet = d.cli(&["-q", "app", "apply", "shop"]);
    assert!(quiet.status.success(), "{}", text(&quiet.stderr));
    assert_eq!(text(&quiet.stdout), "");
    assert_eq!(text(&quiet.stderr), "");
    let quiet_fail = d.cli(&["-q", "app", "apply", "nosuchapp"]);
    assert_eq!(quiet_fail.status.code(), Some(1));
    assert!(text(&quiet_fail.stderr).starts_with("error: "));

    // delete --force removes an applied app first.
    let plain = d.cli(&["app", "delete", "shop"]);
    assert!(!plain.status.success());
    d.ok(&["app", "delete", "shop", "--force"]);
    assert!(!d.applied().join("shop/web.yaml").exists());
    assert_eq!(
        json(&d.ok(&["app", "list", "-o", "json"])),
        serde_json::json!([])
    );
}

#[test]
fn completions_generate_for_each_shell() {
    for (shell, marker) in [
        ("bash", "_capstan()"),
        ("zsh", "#compdef capstan"),
        ("fish", "complete -c capstan"),
    ] {
        let out = capstan().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let script = text(&out.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(script.contains("rollback"), "{shell} knows the verbs");
    }
    let bad = capstan().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the daemon's test hooks: run with --features capstan/test-hooks (cargo xtask test does)"
)]
fn ctrl_c_leaves_the_operation_running_and_app_wait_reattaches() {
    let mut d = Daemon::start("operator_reattach");
    d.kill();
    d.spawn(&[("CAPSTAN_TEST_STEP_DELAY_MS", "150")]);
    let v10 = d.shop_bundle("1.0.0", |_| {});
    d.ok(&["app", "upload", v10.to_str().unwrap()]);
    let mut child = capstan()
        .args(["app", "apply", "shop"])
        .env("CAPSTAN_STATE", d.state())
        .env_remove("CAPSTAN_SERVER")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while d.state_of("shop") != "applying" {
        assert!(started.elapsed() < Duration::from_secs(60), "{}", d.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("the operation goes on in the daemon")
            && stderr.contains("capstan app wait shop"),
        "{stderr}"
    );
    assert_eq!(d.state_of("shop"), "applying", "the apply goes on");

    let out = d.cli(&["app", "wait", "shop"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("following apply"), "{stderr}");
    assert!(
        stderr.contains("s] applying:"),
        "progress with elapsed time: {stderr}"
    );
    assert_eq!(d.state_of("shop"), "applied");
    // Nothing running: wait reports the last operation and its outcome.
    let out = d.cli(&["app", "status", "shop", "--watch"]);
    assert!(out.status.success());
    assert!(text(&out.stderr).contains("nothing is running"));
}

#[test]
fn overrides_cannot_be_lost_by_accident() {
    let d = Daemon::start("operator_overrides");
    let v10 = d.shop_bundle("1.0.0", |_| {});
    d.ok(&["app", "upload", v10.to_str().unwrap()]);
    d.ok(&["override", "set", "shop", "web", "--set", "replicaCount=3"]);

    // Nothing to set: refused by the CLI and by the API; nothing changes.
    let nothing = d.cli(&["override", "set", "shop", "web"]);
    assert_eq!(nothing.status.code(), Some(1));
    assert!(
        text(&nothing.stderr).contains("nothing to set"),
        "{}",
        text(&nothing.stderr)
    );
    let (status, body) = d.http(
        "PUT",
        "/v1/apps/shop/overrides/web",
        "application/json",
        br#"{"reuse_values": true}"#,
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("nothing to set"), "{body}");
    let empty_key = d.cli(&["override", "set", "shop", "web", "--set", "=5"]);
    assert_eq!(empty_key.status.code(), Some(1));
    assert!(
        text(&empty_key.stderr).contains("--set key is empty"),
        "{}",
        text(&empty_key.stderr)
    );
    let bad = d.dir.join("bad-values.yaml");
    std::fs::write(&bad, "replicaCount: 2\nimage: [1\n").unwrap();
    let out = d.cli(&[
        "override",
        "set",
        "shop",
        "web",
        "-f",
        bad.to_str().unwrap(),
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains(&format!("values file {}", bad.display())) && stderr.contains("line "),
        "{stderr}"
    );
    let user = json(&d.ok(&[
        "override", "show", "shop", "web", "--layer", "user", "-o", "json",
    ]));
    assert_eq!(
        user,
        serde_json::json!({"replicaCount": 3}),
        "nothing was lost"
    );

    // --set-string, --set-json and --set-file as `capstan template` has them.
    let note = d.dir.join("note.txt");
    std::fs::write(&note, "hello, world\n").unwrap();
    let out = d.cli(&[
        "override",
        "set",
        "shop",
        "web",
        "--reuse-values",
        "--set-string",
        "image.tag=0123",
        "--set-json",
        r#"env={"A":"1","B":[1,2]}"#,
        "--set-file",
        &format!("podAnnotations.note={}", note.display()),
        "--set",
        "replicaCont=2",
    ]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: user key replicaCont is not in the chart's values.yaml"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("image.tag"),
        "a known key is no typo: {stderr}"
    );
    let user = json(&d.ok(&[
        "override", "show", "shop", "web", "--layer", "user", "-o", "json",
    ]));
    assert_eq!(
        user,
        serde_json::json!({
            "replicaCount": 3,
            "replicaCont": 2,
            "image": {"tag": "0123"},
            "env": {"A": "1", "B": [1, 2]},
            "podAnnotations": {"note": "hello, world\n"}
        })
    );
    let merged = json(&d.ok(&["override", "show", "shop", "web", "--merged", "-o", "json"]));
    assert_eq!(merged["replicaCount"], 3);
    assert_eq!(
        merged["image"]["repository"],
        "registry.example.invalid/shop-web"
    );
    let defaults = d.ok(&["override", "show", "shop", "web", "--layer", "defaults"]);
    assert!(defaults.contains("replicaCount: 1"), "{defaults}");
    let system = d.ok(&["override", "show", "shop", "web", "--layer", "system"]);
    assert_eq!(system, "(not set)\n", "no apply yet: {system}");
}

#[test]
fn diff_bundle_shows_what_an_update_would_change_and_the_daemon_audits() {
    let d = Daemon::start("operator_diff");
    let v10 = d.shop_bundle("1.0.0", |_| {});
    let v11 = d.shop_bundle("1.1.0", drop_worker);
    d.ok(&["app", "upload", v10.to_str().unwrap()]);
    d.ok(&["app", "apply", "shop"]);

    let same = d.cli(&["app", "diff", "shop", "--detailed-exitcode"]);
    assert_eq!(same.status.code(), Some(0), "{}", text(&same.stderr));
    let out = d.cli(&[
        "app",
        "diff",
        "shop",
        "--bundle",
        v11.to_str().unwrap(),
        "--detailed-exitcode",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        stdout.contains("chart worker: 0 added, 0 changed,")
            && !stdout.contains("chart worker: 0 added, 0 changed, 0 removed"),
        "the dropped chart's objects go: {stdout}"
    );
    assert!(
        stdout.contains("+    currency: USD") || stdout.contains("USD"),
        "{stdout}"
    );
    assert!(!stdout.contains('\u{1b}'), "no colour off a terminal");
    let plain = d.cli(&["app", "diff", "shop", "--bundle", v11.to_str().unwrap()]);
    assert_eq!(
        plain.status.code(),
        Some(0),
        "changes exit 0 without the flag"
    );
    let missing = d.cli(&[
        "app",
        "diff",
        "shop",
        "--bundle",
        "/nonexistent.tgz",
        "--detailed-exitcode",
    ]);
    assert_eq!(missing.status.code(), Some(1));
    // Nothing was stored: the app is as it was, no bundle left behind.
    let shown = d.show("shop");
    assert_eq!(shown["active_version"], "1.0.0");
    assert_eq!(shown["versions"].as_array().unwrap().len(), 1);
    let on_disk: Vec<_> = std::fs::read_dir(d.state().join("bundles/shop"))
        .unwrap()
        .collect();
    assert_eq!(on_disk.len(), 1);
    let staging: Vec<_> = std::fs::read_dir(d.state().join("bundles/.staging"))
        .map(|r| r.collect())
        .unwrap_or_default();
    assert!(staging.is_empty(), "staging is clean");

    let log = d.log();
    assert!(
        log.contains("listening")
            && log.contains(&d.state().join("capstan.sock").display().to_string()),
        "{log}"
    );
    let audit = log
        .lines()
        .find(|l| l.contains("path=/v1/apps/shop/apply"))
        .unwrap_or_else(|| panic!("no audit line for the apply: {log}"));
    assert!(
        audit.contains("who=\"socket-owner\"") || audit.contains("who=socket-owner"),
        "{audit}"
    );
    assert!(
        audit.contains("method=POST") && audit.contains("status=202"),
        "{audit}"
    );
    assert!(!log.contains('\u{1b}'), "no colour codes in a log file");
}

#[test]
fn bundle_lint_renders_every_chart_and_build_refuses_a_broken_template() {
    let d = Daemon::start("operator_lint");
    d.shop_bundle("1.0.0", |_| {});
    let good = d.dir.join("shop-1.0.0");
    let out = capstan()
        .args(["bundle", "lint"])
        .arg(&good)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("(5 charts rendered)"),
        "{}",
        text(&out.stderr)
    );

    d.shop_bundle("1.2.0", crate::daemon::break_api);
    let broken = d.dir.join("shop-1.2.0");
    let out = capstan()
        .args(["bundle", "lint"])
        .arg(&broken)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("chart api:") && stderr.contains("this release is broken"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    let bundle = d.dir.join("broken.tgz");
    let out = capstan()
        .args(["bundle", "build"])
        .arg(&broken)
        .arg("--key")
        .arg(d.dir.join("keys/test.key"))
        .arg("--out")
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("this release is broken"));
    assert!(!bundle.exists(), "nothing built");
}

#[test]
fn plugin_new_scaffolds_a_crate_that_builds_tests_and_runs() {
    let dir = crate::support::fresh_dir("operator_scaffold");
    let crate_dir = dir.join("my-plugin");
    let sdk = crate::support::workspace_root().join("plugin-sdk");
    let out = capstan()
        .args(["plugin", "new", "my-plugin", "--dir"])
        .arg(&crate_dir)
        .arg("--sdk-path")
        .arg(&sdk)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    for file in [
        "Cargo.toml",
        "src/lib.rs",
        "facts/simplex.yaml",
        "README.md",
    ] {
        assert!(crate_dir.join(file).is_file(), "{file}");
    }
    let again = capstan()
        .args(["plugin", "new", "my-plugin", "--dir"])
        .arg(&crate_dir)
        .output()
        .unwrap();
    assert_eq!(
        again.status.code(),
        Some(1),
        "an existing folder is refused"
    );
    // The workspace's lock file: the same dependency versions, no resolving.
    std::fs::copy(
        crate::support::workspace_root().join("Cargo.lock"),
        crate_dir.join("Cargo.lock"),
    )
    .unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = crate::support::target_dir().join("scaffold");
    for args in [
        vec!["build", "--release", "--target", "wasm32-wasip2"],
        vec!["test"],
    ] {
        let out = std::process::Command::new(&cargo)
            .args(&args)
            .current_dir(&crate_dir)
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cargo {args:?}: {}",
            text(&out.stderr)
        );
        if args[0] == "test" {
            let stdout = text(&out.stdout);
            assert!(stdout.contains("test result: ok. 2 passed"), "{stdout}");
        }
    }
    let wasm = target.join("wasm32-wasip2/release/my_plugin.wasm");
    let out = capstan()
        .args(["plugin", "run"])
        .arg(&wasm)
        .arg("--facts")
        .arg(crate_dir.join("facts/simplex.yaml"))
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("name: my-plugin"), "{stdout}");
    assert!(
        stdout.contains("# overrides for chart web\nreplicaCount: 1"),
        "{stdout}"
    );
    let out = capstan()
        .args(["plugin", "run"])
        .arg(&wasm)
        .arg("--facts")
        .arg(crate_dir.join("facts/simplex.yaml"))
        .args(["--hook", "semantic-check"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("outcome: proceed"));
}
