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

#[test]
fn inspect_shows_info_world_imports_size_and_sha256() {
    use sha2::Digest;
    let wasm = plugin_wasm("capstan-example-kafka-placement");
    let bytes = std::fs::read(&wasm).unwrap();
    let out = capstan()
        .args(["plugin", "inspect"])
        .arg(&wasm)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    let sha = hex::encode(sha2::Sha256::digest(&bytes));
    for line in [
        "plugin:     kafka-placement 0.1.0".to_owned(),
        "charts:     zookeeper, broker".to_owned(),
        "hooks:      semantic-check".to_owned(),
        "workloads:  decides workload kinds".to_owned(),
        "world:      capstan:plugin/override-plugin@0.1.0 (this capstan speaks the same)"
            .to_owned(),
        format!("size:       {} bytes", bytes.len()),
        format!("sha256:     {sha}"),
        "exports:    info, overrides, workload-kind, lifecycle".to_owned(),
    ] {
        assert!(text.contains(&format!("{line}\n")), "{line:?} in {text}");
    }
    assert!(text.contains("\n  capstan:plugin/types@0.1.0\n"), "{text}");
    assert!(text.contains("built with: "), "{text}");

    // -o json: one object, with the same facts.
    let out = capstan()
        .args(["plugin", "inspect", "-o", "json"])
        .arg(plugin_wasm("capstan-example-storage"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json.is_object(), "{json}");
    assert_eq!(json["name"], "storage");
    assert_eq!(
        json["charts"],
        serde_json::json!(["rbd-provisioner", "cephfs-provisioner"])
    );
    assert_eq!(json["hooks"], serde_json::json!(["semantic-check"]));
    assert_eq!(json["decidesWorkloads"], false);
    assert_eq!(json["world"], "capstan:plugin/override-plugin@0.1.0");
    assert_eq!(json["witVersion"], "0.1.0");
    assert_eq!(json["hostPackage"], "capstan:plugin@0.1.0");
    let storage = std::fs::read(plugin_wasm("capstan-example-storage")).unwrap();
    assert_eq!(json["size"], storage.len() as u64);
    assert_eq!(json["sha256"], hex::encode(sha2::Sha256::digest(&storage)));
    let imports: Vec<&str> = json["imports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        imports.contains(&"capstan:plugin/host@0.1.0"),
        "{imports:?}"
    );
    assert!(
        imports
            .iter()
            .all(|i| i.starts_with("capstan:plugin/") || i.starts_with("wasi:")),
        "{imports:?}"
    );
    assert!(
        json["producers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "rustc"),
        "the Rust compiler names itself: {json}"
    );
    assert!(json.get("error").is_none(), "{json}");
}

#[test]
fn inspect_of_a_non_component_is_one_line_and_of_an_unlinkable_one_names_the_import() {
    let dir = fresh_dir("plugin-cli-inspect");
    let notes = dir.join("notes.wasm");
    std::fs::write(&notes, "not wasm at all\n").unwrap();
    let out = capstan()
        .args(["plugin", "inspect"])
        .arg(&notes)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = stderr_of(&out);
    assert_eq!(
        stderr,
        format!(
            "error: {} is not a plugin component: not a WebAssembly component (no component header)\n",
            notes.display()
        )
    );
    let core = dir.join("core.wasm");
    std::fs::write(&core, b"\0asm\x01\0\0\0").unwrap();
    let out = capstan()
        .args(["plugin", "inspect"])
        .arg(&core)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains(
            "a core WebAssembly module, not a component (build with --target wasm32-wasip2)"
        ),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    // A component the sandbox cannot link: what it is is still shown, and
    // the error names the import the host does not provide.
    let out = capstan()
        .args(["plugin", "inspect", "-o", "json"])
        .arg(plugin_wasm("capstan-test-bad-import"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        json.get("name").is_none(),
        "no info without loading: {json}"
    );
    assert!(
        json["imports"].as_array().unwrap().iter().any(|i| i
            .as_str()
            .unwrap()
            .starts_with("capstan-test:bad-import/exfiltrate")),
        "{json}"
    );
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("does not load") && stderr.contains("exfiltrate"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
