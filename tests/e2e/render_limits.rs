//! Hostile charts against the render limits (`render::limits`).
//!
//! Every chart here is written by the test into a fresh folder, rendered by
//! the real `capstan template`, and must end in its limit's error, within
//! the deadline plus a margin, with a bounded peak RSS (read from the
//! child's `rusage` by `wait4`, in a small Python process that starts it:
//! see [`template`]). A few cases also render in process to check the
//! typed error kind (`render::Error::Limit`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use capstan::render::{self, LimitKind, RenderLimits, TemplateOptions, ValueSource};

use crate::support::{capstan, fresh_dir};

/// The deadline given to the hostile renders.
const DEADLINE_SECS: u64 = 3;
/// Slack on top of the deadline: process start, the last check interval,
/// a loaded 2-core machine and a debug build.
const MARGIN: Duration = Duration::from_secs(10);
/// Peak RSS a hostile render may reach (the caps are 64 MiB each; the
/// debug binary itself takes some 30 MiB).
const MAX_RSS_KIB: i64 = 640 * 1024;

/// Writes a chart `name` with the given templates (and extra files).
fn chart(dir: &Path, templates: &[(&str, &str)], files: &[(&str, &[u8])]) -> PathBuf {
    let root = dir.join("chart");
    std::fs::create_dir_all(root.join("templates")).expect("templates folder");
    std::fs::write(
        root.join("Chart.yaml"),
        "apiVersion: v2\nname: hostile\nversion: 0.1.0\n",
    )
    .expect("Chart.yaml");
    for (name, text) in templates {
        std::fs::write(root.join("templates").join(name), text).expect("template");
    }
    for (name, data) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("folder");
        std::fs::write(path, data).expect("file");
    }
    root
}

struct Run {
    code: i32,
    stderr: String,
    elapsed: Duration,
    max_rss_kib: i64,
}

/// Starts `argv[3:]`, waits for it with `wait4` and writes its exit code,
/// peak RSS in KiB and wall time in seconds to `argv[1]`.
const WAIT4: &str = "\
import os, sys, time
started = time.monotonic()
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
elapsed = time.monotonic() - started
code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
open(sys.argv[1], 'w').write(f'{code} {usage.ru_maxrss} {elapsed}')
";

/// Runs `capstan template ARGS` and reads its exit code, wall time and
/// peak RSS from `wait4`'s `rusage`, the only exact record of a child's
/// peak RSS. The child is started by a small Python process, not by this
/// one: Linux counts into a child's `ru_maxrss` the peak RSS of the memory
/// it was spawned from (`exec` keeps the larger of the two), and this test
/// process, with the sandbox and render tests running beside it, can peak
/// at hundreds of MiB; Python's own peak is some 10 MiB.
fn template(dir: &Path, args: &[&str]) -> Run {
    let out = std::fs::File::create(dir.join("stdout")).expect("stdout file");
    let err = std::fs::File::create(dir.join("stderr")).expect("stderr file");
    let report = dir.join("wait4");
    let capstan = capstan();
    let mut helper = Command::new("python3");
    for (key, value) in capstan.get_envs() {
        if let Some(value) = value {
            helper.env(key, value);
        }
    }
    let status = helper
        .arg("-c")
        .arg(WAIT4)
        .arg(&report)
        .arg(capstan.get_program())
        .arg("template")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .status()
        .expect("python3, which the test command installs, to run");
    let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    assert!(status.success(), "the wait4 helper failed: {stderr}");
    let report = std::fs::read_to_string(&report).expect("the wait4 report");
    let mut fields = report.split(' ');
    let mut field = || fields.next().expect("three fields in the wait4 report");
    Run {
        code: field().parse().expect("an exit code"),
        max_rss_kib: field().parse().expect("a peak RSS"),
        elapsed: Duration::from_secs_f64(field().parse().expect("seconds")),
        stderr,
    }
}

/// Renders a hostile chart through the binary and checks the bounds.
fn hostile(name: &str, templates: &[(&str, &str)], extra: &[&str], want: &str) -> Run {
    let dir = fresh_dir(&format!("render_limits_{name}"));
    let root = chart(&dir, templates, &[]);
    let timeout = DEADLINE_SECS.to_string();
    let mut args = vec!["--render-timeout", timeout.as_str()];
    args.extend_from_slice(extra);
    let root = root.display().to_string();
    args.push(&root);
    let run = template(&dir, &args);
    assert_eq!(run.code, 1, "{name}: exit code; stderr: {}", run.stderr);
    assert!(
        run.stderr.contains(want),
        "{name}: want {want:?} in stderr: {}",
        run.stderr
    );
    assert_eq!(
        run.stderr
            .lines()
            .filter(|l| l.starts_with("error:"))
            .count(),
        1,
        "{name}: one error line: {}",
        run.stderr
    );
    assert!(
        run.elapsed < Duration::from_secs(DEADLINE_SECS) + MARGIN,
        "{name}: took {:?}",
        run.elapsed
    );
    assert!(
        run.max_rss_kib < MAX_RSS_KIB,
        "{name}: peak RSS {} KiB",
        run.max_rss_kib
    );
    run
}

/// The error of rendering `chart_dir` in process under `limits`.
fn limit_kind(chart_dir: &Path, values: Vec<ValueSource>, limits: RenderLimits) -> LimitKind {
    let opts = TemplateOptions {
        chart: chart_dir.to_path_buf(),
        values,
        limits,
        ..TemplateOptions::default()
    };
    match render::template(&opts) {
        Err(render::Error::Limit { kind, .. }) => kind,
        other => panic!("want a limit error, got {other:?}"),
    }
}

#[test]
fn nested_ranges_without_output_end_at_the_deadline() {
    let run = hostile(
        "nested_ranges_deadline",
        &[(
            "loop.yaml",
            "{{ range until 1000000 }}{{ range until 1000000 }}{{ end }}{{ end }}\n",
        )],
        &[],
        "render ran past its deadline of 3s",
    );
    // It ran until the deadline, not less.
    assert!(run.elapsed >= Duration::from_secs(DEADLINE_SECS));
    assert!(
        run.stderr.contains("hostile/templates/loop.yaml:1:"),
        "{}",
        run.stderr
    );
}

#[test]
fn nested_ranges_with_output_end_at_the_output_cap() {
    hostile(
        "nested_ranges_output",
        &[(
            "loop.yaml",
            "{{ range until 1000000 }}{{ range until 1000000 }}{{ repeat 4096 \"x\" }}{{ end }}{{ end }}\n",
        )],
        &["--render-max-output-mib", "16"],
        "rendered output is over the limit of 16 MiB",
    );
}

#[test]
fn output_spread_over_templates_is_capped_per_chart() {
    let body = "{{ range until 3000 }}{{ repeat 1024 \"y\" }}{{ end }}\n";
    hostile(
        "output_per_chart",
        &[
            ("a.yaml", body),
            ("b.yaml", body),
            ("c.yaml", body),
            ("d.yaml", body),
        ],
        &["--render-max-output-mib", "8"],
        "rendered output is over the limit of 8 MiB",
    );
}

#[test]
fn huge_repeat_printf_and_join_are_refused() {
    hostile(
        "repeat",
        &[("r.yaml", "{{ repeat 1000000000 \"ab\" }}\n")],
        &[],
        "repeat result of 2000000000 bytes is over the limit of 64 MiB",
    );
    hostile(
        "printf",
        &[(
            "p.yaml",
            "{{ $s := repeat 40000000 \"a\" }}{{ printf \"%s%s\" $s $s }}\n",
        )],
        &[],
        "printf result of",
    );
    hostile(
        "join",
        &[(
            "j.yaml",
            "{{ $s := repeat 20000000 \"a\" }}{{ join \",\" (list $s $s $s $s) }}\n",
        )],
        &[],
        "join result of",
    );
}

#[test]
fn include_recursion_stops_with_helms_message() {
    hostile(
        "include_recursion",
        &[(
            "r.yaml",
            "{{ define \"r\" }}{{ include \"r\" . }}{{ end }}{{ include \"r\" . }}\n",
        )],
        &[],
        "rendering template has a nested reference name: r: unable to execute template",
    );
    let dir = fresh_dir("render_limits_include_recursion_kind");
    let root = chart(
        &dir,
        &[(
            "r.yaml",
            "{{ define \"r\" }}{{ include \"r\" . }}{{ end }}{{ include \"r\" . }}\n",
        )],
        &[],
    );
    assert_eq!(
        limit_kind(&root, Vec::new(), RenderLimits::default()),
        LimitKind::Recursion
    );
}

#[test]
fn tpl_recursion_stops_at_the_depth_limit() {
    let dir = fresh_dir("render_limits_tpl_recursion");
    let root = chart(
        &dir,
        &[("t.yaml", "{{ tpl .Values.x . }}\n")],
        &[("values.yaml", b"x: '{{ tpl .Values.x . }}'\n")],
    );
    let root_s = root.display().to_string();
    let run = template(&dir, &["--render-timeout", "3", &root_s]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("exceeded maximum template depth"),
        "{}",
        run.stderr
    );
    assert!(run.elapsed < Duration::from_secs(DEADLINE_SECS) + MARGIN);
    assert!(
        run.max_rss_kib < MAX_RSS_KIB,
        "peak RSS {} KiB",
        run.max_rss_kib
    );
    assert_eq!(
        limit_kind(&root, Vec::new(), RenderLimits::default()),
        LimitKind::Recursion
    );
}

#[test]
fn glob_is_linear_and_its_matches_are_capped() {
    let dir = fresh_dir("render_limits_glob");
    let long = format!("files/{}", "a".repeat(200));
    let pattern = format!("files/{}b", "*a".repeat(40));
    let template_text =
        format!("{{{{ if .Files.Glob \"{pattern}\" }}}}matched{{{{ else }}}}none{{{{ end }}}}\n");
    let root = chart(
        &dir,
        &[("g.yaml", template_text.as_str())],
        &[(long.as_str(), b"x"), ("files/other", b"y")],
    );
    let root_s = root.display().to_string();
    // A backtracking matcher takes exponential time here; a linear one
    // answers at once (well inside the deadline).
    let run = template(&dir, &["--render-timeout", "3", &root_s]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = std::fs::read_to_string(dir.join("stdout")).unwrap_or_default();
    assert!(out.contains("none"), "{out}");

    let dir = fresh_dir("render_limits_glob_cap");
    let root = chart(
        &dir,
        &[(
            "g.yaml",
            "{{ range until 200000 }}{{ $_ := $.Files.Glob \"files/*\" }}{{ end }}\n",
        )],
        &[("files/one", b"1")],
    );
    let root_s = root.display().to_string();
    let run = template(&dir, &["--render-timeout", "30", &root_s]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains(".Files.Glob matched more than 100000 files in one render"),
        "{}",
        run.stderr
    );
    assert!(
        run.max_rss_kib < MAX_RSS_KIB,
        "peak RSS {} KiB",
        run.max_rss_kib
    );
    assert_eq!(
        limit_kind(
            &root,
            Vec::new(),
            RenderLimits {
                max_glob_matches: 10,
                ..RenderLimits::default()
            }
        ),
        LimitKind::GlobMatches
    );
}

#[test]
fn alias_expansion_is_bounded_by_bytes() {
    let dir = fresh_dir("render_limits_alias");
    let root = chart(&dir, &[("a.yaml", "n: {{ len .Values.l }}\n")], &[]);
    // A 1 MiB string aliased 8,000 times would be 8 GiB expanded.
    let mut values = format!("s: &a \"{}\"\nl:\n", "z".repeat(1 << 20));
    for _ in 0..8000 {
        values.push_str("- *a\n");
    }
    let file = dir.join("bomb.yaml");
    std::fs::write(&file, values).expect("values file");
    let root_s = root.display().to_string();
    let file_s = file.display().to_string();
    let run = template(&dir, &["-f", &file_s, &root_s]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("expand past 67108864 bytes"),
        "{}",
        run.stderr
    );
    assert!(run.elapsed < Duration::from_secs(DEADLINE_SECS) + MARGIN);
    assert!(
        run.max_rss_kib < MAX_RSS_KIB,
        "peak RSS {} KiB",
        run.max_rss_kib
    );
}

#[test]
fn a_chart_within_the_limits_renders() {
    let dir = fresh_dir("render_limits_fine");
    let root = chart(
        &dir,
        &[(
            "ok.yaml",
            "{{ range until 3 }}{{ $x := repeat 3 \"ab\" }}k{{ . }}: {{ $x }}\n{{ end }}",
        )],
        &[],
    );
    let root_s = root.display().to_string();
    let run = template(&dir, &["--render-timeout", "3", &root_s]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = std::fs::read_to_string(dir.join("stdout")).unwrap_or_default();
    assert_eq!(
        out,
        "---\n# Source: hostile/templates/ok.yaml\nk0: ababab\nk1: ababab\nk2: ababab\n"
    );
}
