//! `capstan plugin run` through the real binary.

use crate::support::{capstan, example_facts, fresh_dir, plugin_wasm};

fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn prints_info_and_overrides_for_every_chart_served() {
    let out = capstan()
        .args(["plugin", "run"])
        .arg(plugin_wasm("capstan-example-storage"))
        .arg("--facts")
        .arg(example_facts("storage", "simplex.yaml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let stdout = stdout_of(&out);
    assert!(stdout.starts_with("plugin:\n"), "{stdout}");
    assert!(stdout.contains("\n  name: storage\n"), "{stdout}");
    assert!(
        stdout.contains("# overrides for chart rbd-provisioner"),
        "{stdout}"
    );
    assert!(
        stdout.contains("# overrides for chart cephfs-provisioner"),
        "{stdout}"
    );
    let docs: Vec<serde_json::Value> = stdout
        .split("\n---\n")
        .map(|doc| serde_yaml_ng::from_str(doc).unwrap())
        .collect();
    assert_eq!(docs.len(), 3);
    assert_eq!(docs[1]["provisioner"]["leaderElection"]["enabled"], false);
    assert_eq!(docs[1]["storageClass"]["pool"], "kube-rbd");
    assert_eq!(docs[2]["storageClass"]["fsName"], "kube-cephfs");
}

#[test]
fn the_same_facts_give_the_same_bytes() {
    let dir = fresh_dir("plugin-cli-same-bytes");
    let run = || {
        capstan()
            .args(["plugin", "run"])
            .arg(plugin_wasm("capstan-example-ha-replicas"))
            .arg("--facts")
            .arg(example_facts("ha-replicas", "duplex.yaml"))
            .arg("--cache")
            .arg(dir.join("cache"))
            .output()
            .unwrap()
    };
    let (first, second) = (run(), run());
    assert!(first.status.success(), "{}", stderr_of(&first));
    assert_eq!(first.stdout, second.stdout);
    assert!(stdout_of(&first).contains("replicaCount: 2"));
}

#[test]
fn a_fault_is_one_error_line_and_exit_1() {
    let out = capstan()
        .args(["plugin", "run"])
        .arg(plugin_wasm("capstan-test-hostile"))
        .arg("--facts")
        .arg(example_facts("storage", "simplex.yaml"))
        .args(["--chart", "loop", "--timeout-ms", "200"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = stderr_of(&out);
    let last = stderr.lines().last().unwrap_or_default();
    assert_eq!(
        last, "error: plugin hostile: timeout: ran past its 200 ms deadline",
        "{stderr}"
    );
}

#[test]
fn a_memory_cap_from_the_command_line_is_enforced() {
    let out = capstan()
        .args(["plugin", "run"])
        .arg(plugin_wasm("capstan-test-hostile"))
        .arg("--facts")
        .arg(example_facts("storage", "simplex.yaml"))
        .args(["--chart", "memory", "--memory-mib", "16"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out)
            .contains("error: plugin hostile: memory-limit: tried to grow its memory past 16 MiB"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn a_veto_from_a_hook_exits_1_with_the_reason() {
    let dir = fresh_dir("plugin-cli-veto");
    let facts = dir.join("no-storage.yaml");
    std::fs::write(
        &facts,
        "systemMode: simplex\ncontrollerCount: 1\nworkerCount: 1\nkubernetesVersion: 1.30.0\n",
    )
    .unwrap();
    let out = capstan()
        .args(["plugin", "run"])
        .arg(plugin_wasm("capstan-example-storage"))
        .arg("--facts")
        .arg(&facts)
        .args(["--hook", "semantic-check"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout_of(&out).contains("outcome: veto"),
        "{}",
        stdout_of(&out)
    );
    assert!(stdout_of(&out).contains("needs a Ceph storage backend"));
}

#[test]
fn unreadable_input_is_an_error_naming_the_file() {
    let out = capstan()
        .args(["plugin", "run", "/nonexistent/plugin.wasm", "--facts"])
        .arg(example_facts("storage", "simplex.yaml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).starts_with("error: reading plugin /nonexistent/plugin.wasm"),
        "{}",
        stderr_of(&out)
    );

    let dir = fresh_dir("plugin-cli-bad-facts");
    let facts = dir.join("facts.yaml");
    std::fs::write(&facts, "systemMode: simplex\nbogus: 1\n").unwrap();
    let out = capstan()
        .args(["plugin", "run"])
        .arg(plugin_wasm("capstan-example-storage"))
        .arg("--facts")
        .arg(&facts)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains("parsing facts in"),
        "{}",
        stderr_of(&out)
    );
    assert!(stderr_of(&out).contains("bogus"), "{}", stderr_of(&out));
}

#[test]
fn bad_usage_exits_2() {
    let out = capstan().args(["plugin", "run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
