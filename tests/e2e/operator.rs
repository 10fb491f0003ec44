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
    // The version is forgotten right after the operation's end is
    // recorded (which is what the CLI waits for), its files just after that.
    let forgotten = d.state().join("bundles/shop/1.1.0");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while forgotten.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!forgotten.exists(), "1.1.0's files are removed");

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

/// The index of the first line of `lines` holding `text`.
fn line_of(lines: &[&str], text: &str) -> usize {
    lines
        .iter()
        .position(|l| l.contains(text))
        .unwrap_or_else(|| panic!("no line with {text:?} in:\n{}", lines.join("\n")))
}

#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the daemon's test hooks: run with --features capstan/test-hooks (cargo xtask test does)"
)]
fn progress_shows_every_chart_of_a_parallel_group_start_and_finish() {
    let mut d = Daemon::start("operator_progress");
    d.kill();
    d.spawn(&[("CAPSTAN_TEST_STEP_DELAY_MS", "150")]);
    let v10 = d.shop_bundle("1.0.0", |_| {});
    d.ok(&["app", "upload", v10.to_str().unwrap()]);

    // Not a terminal: plain lines, one per chart start and finish.
    let out = d.cli(&["app", "apply", "shop"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "no escape codes off a terminal: {stderr}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    for chart in ["config", "db", "api", "web", "worker"] {
        let started = line_of(&lines, &format!("chart {chart} started ("));
        let done = line_of(&lines, &format!("chart {chart} done in "));
        assert!(started < done, "{chart}: {stderr}");
        assert!(lines[started].contains("s] applying: group "), "{stderr}");
    }
    // The sequential group: db starts after config is done.
    assert!(line_of(&lines, "chart config done") < line_of(&lines, "chart db started"));
    // The parallel group: all three run at once, each with its own lines.
    let last_start = ["api", "web", "worker"]
        .iter()
        .map(|c| line_of(&lines, &format!("chart {c} started")))
        .max()
        .unwrap();
    let first_done = ["api", "web", "worker"]
        .iter()
        .map(|c| line_of(&lines, &format!("chart {c} done")))
        .min()
        .unwrap();
    assert!(last_start < first_done, "parallel charts overlap: {stderr}");
    assert!(
        lines[line_of(&lines, "chart db started")].contains("(1 of 5 charts)"),
        "{stderr}"
    );
    let counts: Vec<usize> = lines
        .iter()
        .filter_map(|l| l.rsplit_once(" of 5 charts)"))
        .filter_map(|(head, _)| head.rsplit_once('(')?.1.parse().ok())
        .collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    assert_eq!(counts.last(), Some(&5), "{stderr}");
    assert_eq!(
        lines.iter().filter(|l| l.contains(" done in ")).count(),
        5,
        "each chart ends once: {stderr}"
    );

    // -o json: the result on stdout, plain lines on stderr; a remove
    // lists its charts in reverse.
    let out = d.cli(&["app", "remove", "shop", "-o", "json"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(json(&text(&out.stdout))["state"], "uploaded");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        line_of(&lines, "chart db done") < line_of(&lines, "chart config started"),
        "{stderr}"
    );
    assert!(lines[line_of(&lines, "chart config done")].contains("(5 of 5 charts)"));
    let shown = d.show("shop");
    let board = &shown["chart_progress"];
    assert_eq!(board["charts"].as_array().unwrap().len(), 5, "{shown}");
    assert!(
        board["charts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["state"] == "done"),
        "{shown}"
    );

    // -q: nothing but errors.
    let out = d.cli(&["app", "apply", "shop", "-q"]);
    assert!(out.status.success());
    assert_eq!(text(&out.stderr), "", "quiet");
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
    // Who: the kernel's word for the socket peer (SO_PEERCRED), this
    // test's own uid, and the CLI's pid.
    let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(d.state()).unwrap());
    assert!(audit.contains(&format!("who=\"uid={uid} pid=")), "{audit}");
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

/// The `sh` blocks of `docs/src/getting-started/first-plugin-rust.md`, in order.
/// The `sh` blocks of the book's page `page` (under `docs/src`), in order.
pub(crate) fn walkthrough_blocks(page: &str) -> Vec<String> {
    let doc = read(&crate::support::workspace_root().join("docs/src").join(page));
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(current.is_none(), "an sh block is not closed");
    blocks
}

/// docs/src/getting-started/first-plugin-rust.md, every `sh` block run as written, in one shell:
/// scaffold, unit test, build, `plugin run` on the fixture, `plugin
/// inspect`, an app around the plugin, `bundle lint` and `build`, the
/// daemon, upload, apply to the directory target. The test adds only what
/// the environment needs between the blocks: the workspace's lock file
/// (the same dependency versions, no resolving) and a shared, persistent
/// target folder for the scaffolded crate (cheap when warm).
#[test]
fn the_plugin_author_walkthrough_runs_as_written() {
    use std::os::unix::process::CommandExt;
    let root = crate::support::fresh_dir("operator_walkthrough");
    // The doc's layout: a capstan checkout beside the working folder.
    std::os::unix::fs::symlink(crate::support::workspace_root(), root.join("capstan")).unwrap();
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let target = crate::support::target_dir().join("scaffold");
    std::fs::create_dir_all(&target).unwrap();

    let blocks = walkthrough_blocks("getting-started/first-plugin-rust.md");
    assert!(blocks.len() >= 6, "{blocks:?}");
    assert!(
        blocks[0].contains("capstan plugin new my-plugin"),
        "{}",
        blocks[0]
    );
    let mut script = String::from("set -eu\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n");
    for (i, block) in blocks.iter().enumerate() {
        script.push_str(&format!("echo '### block {i}'\n{block}"));
        if i == 0 {
            script.push_str(&format!(
                "cp '{}' my-plugin/Cargo.lock\nln -s '{}' my-plugin/target\n",
                crate::support::workspace_root()
                    .join("Cargo.lock")
                    .display(),
                target.display()
            ));
        }
    }
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_capstan"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let log = root.join("walkthrough.log");
    let mut child = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&work)
        .env("PATH", path)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CAPSTAN_STATE")
        .env_remove("CAPSTAN_SERVER")
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(root.join("walkthrough.err")).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        // Generous: a cold first build of the crate, twice (native, wasm).
        if started.elapsed() > Duration::from_secs(1800) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // The shell and anything it left running (the daemon) are one group.
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.wait();
    let stdout = read(&log);
    let stderr = read(&root.join("walkthrough.err"));
    let status = status.unwrap_or_else(|| panic!("timed out\n{stdout}\n{stderr}"));
    assert!(status.success(), "{stdout}\n{stderr}");

    // Step 2: both unit tests of the scaffold ran and passed.
    assert!(stdout.contains("test result: ok. 2 passed"), "{stdout}");
    // Step 3: the plugin's info, its override, its hook, its inspection.
    assert!(stdout.contains("name: my-plugin"), "{stdout}");
    assert!(
        stdout.contains("# overrides for chart web\nreplicaCount: 1"),
        "{stdout}"
    );
    assert!(stdout.contains("outcome: proceed"), "{stdout}");
    assert!(
        stdout.contains("world:      capstan:plugin/override-plugin@0.1.0"),
        "{stdout}"
    );
    // Step 5: signed by the key the doc made.
    assert!(work.join("keys/me.pub").is_file());
    assert!(work.join("my-app-1.0.0.tgz").is_file());
    // Step 6: the daemon applied the plugin's value over the chart's 3.
    let system = stdout
        .split("### block 5")
        .nth(1)
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(system.contains("replicaCount: 1"), "{system}");
    let web = read(&work.join("applied/my-app/web.yaml"));
    assert!(web.contains("kind: Deployment"), "{web}");
    assert!(web.contains("replicas: 1"), "{web}");
    assert!(!web.contains("replicas: 3"), "{web}");

    // `plugin new` refuses a folder that exists.
    let again = capstan()
        .args(["plugin", "new", "my-plugin", "--dir"])
        .arg(work.join("my-plugin"))
        .output()
        .unwrap();
    assert_eq!(
        again.status.code(),
        Some(1),
        "an existing folder is refused"
    );
}
