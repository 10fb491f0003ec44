//! Helm 4 as a differential oracle: the same charts, values and flags
//! through `capstan template` and the real `helm template` (Helm v4.3.2
//! built from `test-support/control-plane/helm`, found by
//! [`support::helm_binary`]), compared byte for byte after the random
//! values are masked on both sides (as `render_conformance` masks them).
//!
//! - `charts_render_as_helm_renders_them`: every chart under
//!   `tests/charts/` and, when present, `../shared/helm-conformance`.
//!   A case listed in [`KNOWN_DIFFERENCES`] is rendered and reported but
//!   does not fail, with its reason; any other difference fails with the
//!   first differing line.
//! - `generated_templates_render_as_helm_renders_them`: templates made
//!   by a small seeded generator over the map, list, string and printing
//!   functions and Helm's object methods, including maps that contain
//!   themselves (read, never printed: Helm would overflow its stack; no
//!   other value can come to contain itself: `$d`, the only map set, is
//!   never an argument, and merges run on deep copies),
//!   in batches of one chart each, for `CAPSTAN_DIFF_SECONDS` (default
//!   20) or at most `CAPSTAN_DIFF_BATCHES` batches (default 40), from
//!   seed `CAPSTAN_DIFF_SEED` (default fixed, so CI is repeatable). A
//!   batch that differs is narrowed to its first differing template.
//!
//! Both tests run the binaries, each case on fresh files under the test's
//! folder. Helm runs under a 4 GiB address-space limit, so that a case
//! Helm could not finish ends quickly instead of taking the machine.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::render_conformance::mask;
use crate::support;

/// Cases whose output is known to differ from this Helm build, and why:
/// none at present. A case listed here that renders as Helm does fails
/// the test, so that the list only holds real differences. (Failing
/// alike counts as agreement: Helm 4 lays some errors out over several
/// lines, capstan on one; `functions-fail` is such a case.)
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[];

/// One chart to render with its flags.
struct Case {
    name: String,
    chart: PathBuf,
    args: Vec<String>,
}

fn args_of(case_dir: &Path) -> Vec<String> {
    std::fs::read_to_string(case_dir.join("args.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// The cases under `tests/charts/`.
fn local_cases() -> Vec<Case> {
    let root = support::workspace_root().join("tests").join("charts");
    let mut cases: Vec<Case> = std::fs::read_dir(&root)
        .expect("tests/charts exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("chart").is_dir())
        .map(|dir| Case {
            name: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            chart: dir.join("chart"),
            args: args_of(&dir),
        })
        .collect();
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    cases
}

/// The cases of `../shared/helm-conformance`, when it is there.
fn conformance_cases() -> Vec<Case> {
    let dir = std::env::var_os("CAPSTAN_HELM_CONFORMANCE")
        .map(PathBuf::from)
        .unwrap_or_else(|| support::workspace_root().join("../shared/helm-conformance"));
    let Ok(list) = std::fs::read_to_string(dir.join("cases.txt")) else {
        eprintln!(
            "no helm conformance set at {}: only tests/charts compared",
            dir.display()
        );
        return Vec::new();
    };
    list.split_whitespace()
        .map(|name| {
            let case_dir = dir.join("cases").join(name);
            let chart_file = case_dir.join("chart");
            let chart = if chart_file.is_dir() {
                chart_file
            } else {
                let rel = std::fs::read_to_string(&chart_file).unwrap_or_default();
                case_dir.join(rel.trim())
            };
            Case {
                name: name.to_string(),
                chart,
                args: args_of(&case_dir),
            }
        })
        .collect()
}

/// `helm template` as the oracle runs it, under a 4 GiB address-space limit.
fn helm(helm: &Path, args: &[String]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 4194304; exec \"$0\" \"$@\"")
        .arg(helm)
        .arg("template")
        .args(args)
        .output()
        .expect("running helm")
}

fn capstan(args: &[String]) -> Output {
    support::capstan()
        .arg("template")
        .args(args)
        .output()
        .expect("running capstan")
}

/// The flags both get for `case`.
fn flags(case: &Case) -> Vec<String> {
    // The defaults, unless the case gives its own (capstan refuses a
    // flag given twice, where Helm takes the last).
    let mut args: Vec<String> = Vec::new();
    for (flag, value) in [("--kube-version", "1.30.0"), ("--namespace", "apps")] {
        if !case.args.iter().any(|a| a == flag) {
            args.extend([flag.to_string(), value.to_string()]);
        }
    }
    args.extend(case.args.iter().cloned());
    args.push("rel".into());
    args.push(case.chart.to_string_lossy().into_owned());
    args
}

/// `None` when both agree; else what differs first.
fn compare(helm_out: &Output, capstan_out: &Output) -> Option<String> {
    let text = |o: &Output| String::from_utf8_lossy(&o.stdout).into_owned();
    let err_line = |o: &Output| {
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .to_string()
    };
    match (helm_out.status.success(), capstan_out.status.success()) {
        // Both fail: the error texts are laid out differently (Helm 4
        // breaks some over lines); failing alike is agreement here.
        (false, false) => None,
        (true, false) => Some(format!(
            "helm renders, capstan fails: {}",
            err_line(capstan_out)
        )),
        (false, true) => Some(format!(
            "capstan renders, helm fails: {}",
            err_line(helm_out)
        )),
        (true, true) => first_difference(&mask(&text(helm_out)), &mask(&text(capstan_out))),
    }
}

/// The first line where `want` and `got` differ.
fn first_difference(want: &str, got: &str) -> Option<String> {
    if want == got {
        return None;
    }
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let i = w
        .iter()
        .zip(&g)
        .position(|(a, b)| a != b)
        .unwrap_or(w.len().min(g.len()));
    Some(format!(
        "line {}: helm {:?}, capstan {:?}",
        i + 1,
        w.get(i).copied().unwrap_or("<end>"),
        g.get(i).copied().unwrap_or("<end>")
    ))
}

#[test]
fn charts_render_as_helm_renders_them() {
    let Some(helm_bin) = support::helm_binary("charts_render_as_helm_renders_them") else {
        return;
    };
    let started = Instant::now();
    let cases: Vec<Case> = local_cases()
        .into_iter()
        .chain(conformance_cases())
        .collect();
    let mut failures = Vec::new();
    let mut same = 0;
    for case in &cases {
        let args = flags(case);
        let difference = compare(&helm(&helm_bin, &args), &capstan(&args));
        let known = KNOWN_DIFFERENCES
            .iter()
            .find(|(name, _)| *name == case.name);
        match (difference, known) {
            (None, Some(_)) => failures.push(format!(
                "{}: listed in KNOWN_DIFFERENCES but renders as Helm does; remove it",
                case.name
            )),
            (None, None) => same += 1,
            (Some(d), Some((_, why))) => {
                eprintln!("known difference {}: {d} ({why})", case.name);
            }
            (Some(d), None) => failures.push(format!("{}: {d}", case.name)),
        }
    }
    eprintln!(
        "{same}/{} charts identical to Helm in {:.1?}",
        cases.len(),
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "charts that render differently from Helm:\n{}",
        failures.join("\n")
    );
}

/// xorshift64*: the generator's only source of choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// The values every generated chart gets.
const VALUES: &str = r#"s: hello
n: 3
f: 1.5
big: 1000000
b: true
z: 0
empty: ""
l: [1, "two", 3.5, true, null]
m:
  a: 1
  b: {c: x, d: [1, 2]}
  e: ""
  f: false
nested:
  deep: {er: {est: 7}}
"#;

/// Expressions that read the map `$c`, which contains itself, as Helm
/// can without walking the cycle.
const CYCLE_READERS: &[&str] = &[
    "$c.self.self.k",
    "(keys $c | sortAlpha | join \",\")",
    "(toJson $c)",
    "(toYaml $c)",
    "(dig \"self\" \"self\" \"k\" \"none\" $c)",
    "(hasKey $c.self \"self\")",
    "(len $c.self)",
    "(kindOf $c)",
    "(typeOf $c.self)",
    "(empty $c)",
    "((pick $c \"k\") | toYaml)",
    "(include \"read\" $c)",
    "(index $c \"self\" \"self\" \"k\")",
    "(get $c.self \"k\")",
    "(deepEqual $c $c.self)",
    "(has $c (list 1 $c))",
    "((merge (dict \"k\" \"w\") $c).self.k)",
    "(.Values.AsMap | keys | sortAlpha | join \",\")",
    "(.Values.PathValue \"m.b.c\")",
    "((.Values.Table \"m\").YAML)",
    "(.Template.Name)",
];

/// What a generated expression gives, so that most calls type-check (a
/// batch that fails in both is narrowed to its templates one by one).
///
/// Two documented differences are kept out (docs/src/reference/template-functions.md):
/// integer constants are Go `int`s where function results are `int64`s,
/// which `reflect.DeepEqual` tells apart (so no integer constants, and
/// `has`, `uniq`, `without`, `deepEqual` compare strings); and `rest` or
/// `initial` of an empty list, and `concat` of empty lists, are Go's nil
/// slice (so `rest` gets two elements and `concat` one at least).
#[derive(Clone, Copy)]
enum Kind {
    Str,
    Num,
    Bool,
    List,
    Map,
}

const KINDS: [Kind; 5] = [Kind::Str, Kind::Num, Kind::Bool, Kind::List, Kind::Map];

/// A random expression of `kind`; `{S}`, `{N}`, `{B}`, `{L}`, `{M}` and
/// `{A}` in a form stand for a nested one of that kind (`{A}`: any).
fn expression(rng: &mut Rng, kind: Kind, depth: usize) -> String {
    let (atoms, forms): (&[&str], &[&str]) = match kind {
        Kind::Str => (
            &[
                ".Values.s",
                ".Values.empty",
                "\"str\"",
                "\"a-b_c\"",
                "$c.self.k",
            ],
            &[
                "(upper {S})",
                "(quote {A})",
                "(toString {A})",
                "(printf \"%v|%v\" {A} {A})",
                "(printf \"%d-%s\" {N} {S})",
                "(include \"echo\" {A})",
                "(toYaml {A})",
                "(toJson {A})",
                "(toPrettyJson {A})",
                "(default {S} {S})",
                "(trim {S})",
                "(b64enc {S})",
                "(replace \"l\" \"L\" {S})",
                "(join \",\" {L})",
                "(cat {A} {A})",
                "(trunc 3 {S})",
                "(sha256sum {S} | trunc 8)",
                "(ternary {S} {S} {B})",
                "(coalesce {S} {S})",
                "(nindent 2 {S})",
                "(tpl \"{{ .Values.s }}-x\" $)",
                "(first (list {S} {A}))",
            ],
        ),
        Kind::Num => (
            &[
                ".Values.n",
                ".Values.f",
                ".Values.big",
                ".Values.z",
                "2.5",
                "1e3",
            ],
            &[
                "(add {N} {N})",
                "(mul {N} {N})",
                "(sub {N} {N})",
                "(max {N} {N})",
                "(addf {N} {N})",
                "(mulf {N} {N})",
                "(len {L})",
                "(len {M})",
                "(int {N})",
                "(float64 {N})",
                "(round {N} 1)",
                "(floor {N})",
                "(atoi {S})",
            ],
        ),
        Kind::Bool => (
            &[".Values.b", "true", "false"],
            &[
                "(not {A})",
                "(empty {A})",
                "(eq {S} {S})",
                "(ne {S} {S})",
                "(hasKey {M} \"a\")",
                "(has {S} (list {S} {S}))",
                "(and {A} {A})",
                "(or {A} {A})",
                "(deepEqual {S} {S})",
                "(contains \"l\" {S})",
                "(kindIs \"map\" {A})",
                "(semverCompare \">=1.2.0\" \"1.10.0\")",
            ],
        ),
        Kind::List => (
            &[".Values.l", "(list \"1\" \"2\")", "(list)"],
            &[
                "(list {A} {A})",
                "(append {L} {A})",
                "(prepend {L} {A})",
                "(concat {L} (list {A}))",
                "(compact {L})",
                "(uniq (list {S} {S} {S}))",
                "(without (list {S} {S}) {S})",
                "(splitList \"l\" {S})",
                "(keys {M} | sortAlpha)",
                "(rest (list {A} {A}))",
                "(reverse {L})",
                "(tuple {A} {A})",
                "(pluck \"a\" {M} {M})",
                "(fromYamlArray (toYaml {L}))",
            ],
        ),
        Kind::Map => (
            &[
                ".Values.m",
                ".Values.m.b",
                ".Values.nested",
                "(dict \"a\" \"1\" \"b\" (dict \"c\" \"2\"))",
                "(dict)",
            ],
            &[
                "(dict \"x\" {A})",
                "(dict \"x\" {A} \"y\" {A})",
                // On copies: merging into a map of .Values could store a
                // map inside itself, which a later print never ends.
                "(merge (deepCopy {M}) (deepCopy {M}))",
                "(mergeOverwrite (deepCopy {M}) (deepCopy {M}))",
                "(omit {M} \"a\")",
                "(pick {M} \"a\" \"b\")",
                "(deepCopy {M})",
                "(fromYaml (toYaml {M}))",
                "(fromJson (toJson {M}))",
                "(default {M} {M})",
                "(.Values.Table \"m\")",
            ],
        ),
    };
    if depth == 0 || rng.below(4) == 0 {
        return rng.pick(atoms).to_string();
    }
    let form = rng.pick(forms);
    let mut out = String::new();
    let mut rest = form;
    while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        let (hole, after) = rest[at..].split_at(3.min(rest.len() - at));
        let nested = match hole {
            "{S}" => Some(Kind::Str),
            "{N}" => Some(Kind::Num),
            "{B}" => Some(Kind::Bool),
            "{L}" => Some(Kind::List),
            "{M}" => Some(Kind::Map),
            "{A}" => Some(KINDS[rng.below(KINDS.len())]),
            _ => None,
        };
        match nested {
            Some(k) => out.push_str(&expression(rng, k, depth - 1)),
            None => out.push_str(hole),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// One generated template body (it defines `$d` and `$c` first).
fn template(rng: &mut Rng) -> String {
    let mut t = String::from(
        "{{- $d := dict \"k\" \"v\" -}}{{- $c := dict \"k\" \"v\" -}}\
         {{- $_ := set $c \"self\" $c -}}{{- $_ := set $c \"copy\" (omit $c \"k\") -}}",
    );
    for _ in 0..1 + rng.below(3) {
        let depth = 1 + rng.below(3);
        let kind = KINDS[rng.below(KINDS.len())];
        let e = expression(rng, kind, depth);
        let _ = match rng.below(7) {
            0 => write!(t, "{{{{ $v := {e} }}}}[{{{{ $v }}}}]"),
            1 => write!(t, "{{{{ $_ := set $d \"k\" {e} }}}}[{{{{ $d }}}}]"),
            2 => write!(t, "{{{{ if {e} }}}}T{{{{ else }}}}F{{{{ end }}}}"),
            3 => {
                let walked = if rng.below(2) == 0 {
                    Kind::List
                } else {
                    Kind::Map
                };
                let l = expression(rng, walked, depth);
                write!(
                    t,
                    "{{{{ range $k, $v := {l} }}}}{{{{ $k }}}}={{{{ $v }}}};{{{{ end }}}}"
                )
            }
            4 => write!(t, "{{{{ with {e} }}}}<{{{{ . }}}}>{{{{ end }}}}"),
            5 => write!(t, "[{{{{ {} }}}}]", rng.pick(CYCLE_READERS)),
            _ => write!(t, "[{{{{ {e} }}}}]"),
        };
    }
    t
}

/// Writes a chart whose templates are `bodies`, each printed (as JSON
/// text, so any output is valid YAML) into a ConfigMap of its own.
fn write_chart(dir: &Path, bodies: &[String]) {
    let _ = std::fs::remove_dir_all(dir);
    let templates = dir.join("templates");
    std::fs::create_dir_all(&templates).expect("creating a chart");
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: gen\nversion: 0.1.0\n",
    )
    .expect("writing Chart.yaml");
    std::fs::write(dir.join("values.yaml"), VALUES).expect("writing values.yaml");
    std::fs::write(
        templates.join("_helpers.tpl"),
        "{{- define \"echo\" -}}{{ . }}{{- end -}}\
         {{- define \"read\" -}}{{ .self.k }}/{{ .copy.self.self.k }}{{- end -}}",
    )
    .expect("writing _helpers.tpl");
    for (i, body) in bodies.iter().enumerate() {
        let text = format!(
            "{{{{- define \"snippet{i}\" -}}}}{body}{{{{- end -}}}}\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n\
             data:\n  out: {{{{ include \"snippet{i}\" . | toJson }}}}\n"
        );
        std::fs::write(templates.join(format!("t{i:03}.yaml")), text).expect("writing a template");
    }
}

#[test]
fn generated_templates_render_as_helm_renders_them() {
    let Some(helm_bin) = support::helm_binary("generated_templates_render_as_helm_renders_them")
    else {
        return;
    };
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let budget = Duration::from_secs(env("CAPSTAN_DIFF_SECONDS", 20));
    let batches = env("CAPSTAN_DIFF_BATCHES", 40);
    let seed = env("CAPSTAN_DIFF_SEED", 0x5eed_0027);
    let dir = support::fresh_dir("generated_templates_render_as_helm_renders_them");
    let chart = dir.join("gen");
    let started = Instant::now();
    let mut rng = Rng(seed | 1);
    let mut done = 0;
    let mut templates = 0;
    let (mut rendered, mut failed_alike) = (0, 0);
    while done < batches && started.elapsed() < budget {
        let bodies: Vec<String> = (0..8).map(|_| template(&mut rng)).collect();
        templates += bodies.len();
        write_chart(&chart, &bodies);
        let case = Case {
            name: format!("batch {done}"),
            chart: chart.clone(),
            args: Vec::new(),
        };
        let args = flags(&case);
        let (helm_out, capstan_out) = (helm(&helm_bin, &args), capstan(&args));
        let difference = compare(&helm_out, &capstan_out);
        if difference.is_none() && helm_out.status.success() {
            rendered += bodies.len();
        } else {
            // A difference, or a batch both fail (on its first failing
            // template): each template alone.
            for body in &bodies {
                write_chart(&chart, std::slice::from_ref(body));
                let (h, c) = (helm(&helm_bin, &args), capstan(&args));
                match compare(&h, &c) {
                    Some(d) => panic!(
                        "seed {seed:#x}, batch {done}: generated template renders differently \
                         from Helm: {d}\ntemplate: {body}\nvalues:\n{VALUES}"
                    ),
                    None if h.status.success() => rendered += 1,
                    None => failed_alike += 1,
                }
            }
            if let Some(d) = difference {
                panic!(
                    "seed {seed:#x}, batch {done}: the batch renders differently from Helm \
                     ({d}), no template alone does: {bodies:#?}"
                );
            }
        }
        done += 1;
    }
    eprintln!(
        "{done} batches of generated templates in {:.1?}, seed {seed:#x}: {rendered} of \
         {templates} rendered identically by both, {failed_alike} failed in both",
        started.elapsed()
    );
    assert!(
        rendered * 2 >= templates,
        "most generated templates should render: {rendered} of {templates}"
    );
}
