//! Rendering conformance.
//!
//! - `helm_conformance_cases`: real `helm template` output for the charts of
//!   `../shared/helm-conformance` (third-party charts kept outside the
//!   repository). Every case must be identical; a missing set is a failure
//!   unless `CAPSTAN_HELM_CONFORMANCE=off`. Random values are masked on both
//!   sides exactly as the set's `check` script does.
//! - `capstan_chart_cases`: the charts under `tests/charts/`, written for
//!   capstan, each with the output Helm's documented behaviour gives, or
//!   the real Helm's output when the case has an `expected.cmd` (the
//!   command that made it). `CAPSTAN_BLESS=1` rewrites the others'
//!   `expected.yaml` (review the diff!).
//!
//! Every case renders with release `rel`, `--kube-version 1.30.0`,
//! `--namespace apps` and the flags in its `args.json`.

use std::path::{Path, PathBuf};

use capstan::render::{self, TemplateOptions, ValueSource};
use regex::Regex;

/// `CAPSTAN_HELM_CONFORMANCE`, or `shared/helm-conformance` beside the repository.
fn conformance_dir() -> Option<PathBuf> {
    let candidates = [
        std::env::var("CAPSTAN_HELM_CONFORMANCE")
            .ok()
            .map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/helm-conformance")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.join("cases.txt").is_file())
}

pub(crate) fn mask(text: &str) -> String {
    let random = Regex::new(
        r#"(?i)^(\s*-?\s*"?[\w./-]*(password|passwd|secret|token|cookie|checksum|crt|key|jwt|pem|cert|cluster-id|-id)[\w./-]*"?:\s*)(\S.*)$"#,
    )
    .expect("static regex");
    let blob = Regex::new(r"^(\s+)[A-Za-z0-9+/=]{40,}$").expect("static regex");
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            if let Some(c) = random.captures(line) {
                format!("{}<random>", &c[1])
            } else if let Some(c) = blob.captures(line) {
                format!("{}<blob>", &c[1])
            } else {
                line.to_string()
            }
        })
        .collect();
    lines.join("\n").trim_end_matches('\n').to_string()
}

fn options(case_dir: &Path) -> TemplateOptions {
    let chart_file = case_dir.join("chart");
    let chart = if chart_file.is_dir() {
        chart_file
    } else {
        let rel = std::fs::read_to_string(&chart_file).unwrap_or_default();
        case_dir.join(rel.trim())
    };
    let args: Vec<String> = std::fs::read_to_string(case_dir.join("args.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let mut opts = TemplateOptions {
        chart,
        release_name: "rel".into(),
        namespace: "apps".into(),
        kube_version: Some("1.30.0".into()),
        ..TemplateOptions::default()
    };
    // These cases check output, not the deadline (tests/e2e/render_limits.rs
    // does): a debug build generating 4096-bit keys while the whole suite
    // runs on two cores can pass the default 10 s.
    opts.limits.deadline = std::time::Duration::from_secs(120);
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--include-crds" => opts.include_crds = true,
            "--skip-tests" => opts.skip_tests = true,
            "--is-upgrade" => opts.is_upgrade = true,
            _ => {
                let Some(value) = it.next() else { break };
                match flag.as_str() {
                    "--set" => opts.values.push(ValueSource::Set(value)),
                    "--set-string" => opts.values.push(ValueSource::SetString(value)),
                    "--set-json" => opts.values.push(ValueSource::SetJson(value)),
                    "--set-file" => opts.values.push(ValueSource::SetFile(value)),
                    "-f" | "--values" => opts.values.push(ValueSource::File(case_dir.join(value))),
                    "--api-versions" | "-a" => opts.api_versions.push(value),
                    "--show-only" | "-s" => opts.show_only.push(value),
                    "--namespace" | "-n" => opts.namespace = value,
                    "--kube-version" => opts.kube_version = Some(value),
                    other => panic!("unsupported flag {other} in case {}", case_dir.display()),
                }
            }
        }
    }
    opts
}

/// Renders every case; returns (identical, total, report lines).
fn run_all(dir: &Path) -> (usize, usize, Vec<String>) {
    let cases: Vec<String> = std::fs::read_to_string(dir.join("cases.txt"))
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let mut same = 0;
    let mut report = Vec::new();
    for case in &cases {
        let case_dir = dir.join("cases").join(case);
        let expected =
            mask(&std::fs::read_to_string(case_dir.join("expected.yaml")).unwrap_or_default());
        match render::template(&options(&case_dir)) {
            Ok(out) => {
                let got = mask(&out);
                if got == expected {
                    same += 1;
                } else {
                    let first = expected
                        .lines()
                        .zip(got.lines())
                        .enumerate()
                        .find(|(_, (e, g))| e != g)
                        .map(|(i, (e, g))| format!("line {}: want {e:?} got {g:?}", i + 1))
                        .unwrap_or_else(|| {
                            format!(
                                "lengths differ: want {} lines got {}",
                                expected.lines().count(),
                                got.lines().count()
                            )
                        });
                    report.push(format!("differs {case}: {first}"));
                }
            }
            Err(e) => report.push(format!("differs {case}: error: {e}")),
        }
    }
    (same, cases.len(), report)
}

#[test]
fn helm_conformance_cases() {
    // CI puts a read-only copy of `shared/` beside the clone, so the set is
    // expected; only an explicit `CAPSTAN_HELM_CONFORMANCE=off` skips it.
    if std::env::var("CAPSTAN_HELM_CONFORMANCE").as_deref() == Ok("off") {
        eprintln!("CAPSTAN_HELM_CONFORMANCE=off: helm conformance set skipped");
        return;
    }
    let dir = conformance_dir().unwrap_or_else(|| {
        panic!(
            "helm conformance set not found at ../shared/helm-conformance beside the repository \
             (or $CAPSTAN_HELM_CONFORMANCE); set CAPSTAN_HELM_CONFORMANCE=off to skip it"
        )
    });
    let (same, total, report) = run_all(&dir);
    eprintln!("{same}/{total} cases identical to Helm v4.3");
    assert!(
        total > 0,
        "no cases listed in {}",
        dir.join("cases.txt").display()
    );
    assert!(
        report.is_empty() && same == total,
        "{same}/{total} conformance cases identical to Helm v4.3:\n{}",
        report.join("\n")
    );
}

#[test]
fn capstan_chart_cases() {
    // `CAPSTAN_TEST_CHARTS` lets a crate outside the repository run these.
    let root = std::env::var("CAPSTAN_TEST_CHARTS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/charts"));
    let bless = std::env::var_os("CAPSTAN_BLESS").is_some();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/charts exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("chart").is_dir())
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "no chart cases under {}", root.display());
    let mut failures = Vec::new();
    for case in &cases {
        let expected_path = case.join("expected.yaml");
        let got = match render::template(&options(case)) {
            Ok(out) => out,
            Err(e) => format!("error: {e}\n"),
        };
        if bless {
            // Cases whose expected output came from the real Helm (the
            // command beside it in `expected.cmd`) are never rewritten
            // from capstan's.
            if !case.join("expected.cmd").is_file() {
                std::fs::write(&expected_path, &got).expect("write expected.yaml");
            }
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if got != expected {
            failures.push(format!(
                "{}:\n--- expected\n{expected}\n--- got\n{got}",
                case.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
