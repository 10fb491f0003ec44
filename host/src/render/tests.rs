//! End-to-end behaviour of rendering: archives, errors, schemas, options.

use std::io::Write;

use super::*;

fn tgz(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, data) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, *data).unwrap();
    }
    let tar = builder.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

fn release() -> ReleaseInfo {
    ReleaseInfo {
        name: "rel".into(),
        namespace: "ns".into(),
        revision: 1,
        is_upgrade: false,
    }
}

fn render_text(chart: &Chart, user: &Map) -> Result<String, Error> {
    let r = render(chart, user, &release(), &Capabilities::default())?;
    output::print(&r.hooks, &r.manifests, &output::PrintOptions::default())
}

#[test]
fn archives_with_archived_subcharts() {
    let sub = tgz(&[
        (
            "sub/Chart.yaml",
            b"apiVersion: v2\nname: sub\nversion: 0.1.0\n",
        ),
        ("sub/values.yaml", b"port: 80\n"),
        (
            "sub/templates/svc.yaml",
            b"kind: Service\nport: {{ .Values.port }}\n",
        ),
    ]);
    let top = tgz(&[
        (
            "top/Chart.yaml",
            b"apiVersion: v2\nname: top\nversion: 1.0.0\n",
        ),
        ("top/values.yaml", b"sub:\n  port: 8080\n"),
        (
            "top/templates/cm.yaml",
            b"kind: ConfigMap\nport: {{ .Values.sub.port }}\n",
        ),
        ("top/charts/sub-0.1.0.tgz", &sub),
    ]);
    let chart = chart::load_archive(&top, "top.tgz").unwrap();
    assert_eq!(chart.subcharts.len(), 1);
    let out = render_text(&chart, &Map::new()).unwrap();
    assert_eq!(
        out,
        "---\n# Source: top/templates/cm.yaml\nkind: ConfigMap\nport: 8080\n\n---\n# Source: top/charts/sub/templates/svc.yaml\nkind: Service\nport: 8080\n"
    );
}

#[test]
fn a_subcharts_values_are_its_parents_map() {
    // Helm's `recAllTpls`: a subchart's `.Values` is the parent's
    // `.Values.sub` map itself and `.Subcharts.sub` is the subchart's
    // context, so a `set` in the subchart's template (rendered first, its
    // path being deeper) is seen by the parent's.
    let sub = tgz(&[
        (
            "sub/Chart.yaml",
            b"apiVersion: v2\nname: sub\nversion: 0.1.0\n",
        ),
        (
            "sub/templates/set.yaml",
            b"{{ $_ := set .Values \"fromSub\" \"yes\" }}",
        ),
    ]);
    let top = tgz(&[
        (
            "top/Chart.yaml",
            b"apiVersion: v2\nname: top\nversion: 1.0.0\n",
        ),
        ("top/values.yaml", b"sub:\n  port: 8080\n"),
        (
            "top/templates/cm.yaml",
            b"a: {{ .Values.sub.fromSub }}\nb: {{ .Subcharts.sub.Values.fromSub }}\n",
        ),
        ("top/charts/sub-0.1.0.tgz", &sub),
    ]);
    let chart = chart::load_archive(&top, "top.tgz").unwrap();
    let out = render_text(&chart, &Map::new()).unwrap();
    assert_eq!(
        out,
        "---\n# Source: top/templates/cm.yaml\na: yes\nb: yes\n"
    );
}

#[test]
fn archives_cannot_escape_the_chart() {
    let mut builder = tar::Builder::new(Vec::new());
    let data = b"x";
    let mut header = tar::Header::new_gnu();
    header.set_size(1);
    header.set_mode(0o644);
    // Write the name straight into the header: `append_data` refuses `..`.
    let name = b"top/../../evil";
    header.as_old_mut().name[..name.len()].copy_from_slice(name);
    header.set_cksum();
    builder.append(&header, &data[..]).unwrap();
    let tar = builder.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    let err = chart::load_archive(&gz.finish().unwrap(), "evil.tgz").unwrap_err();
    assert!(matches!(err, Error::Archive { .. }), "{err}");
}

fn one_template(src: &str, values: &str) -> Chart {
    let files = tgz(&[
        ("c/Chart.yaml", b"apiVersion: v2\nname: c\nversion: 1.0.0\n"),
        ("c/values.yaml", values.as_bytes()),
        ("c/templates/t.yaml", src.as_bytes()),
    ]);
    chart::load_archive(&files, "c.tgz").unwrap()
}

#[test]
fn template_errors_read_like_helm() {
    let chart = one_template("a: 1\nb: {{ .Values.x.y.z }}\n", "x: {}\n");
    let err = render_text(&chart, &Map::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "execution error at (c/templates/t.yaml:2:6): nil pointer evaluating interface {}.z"
    );
    let chart = one_template("{{ if }}", "");
    let err = render_text(&chart, &Map::new()).unwrap_err();
    assert!(matches!(err, Error::Parse { .. }), "{err}");
}

#[test]
fn fail_and_required_errors_drop_helm_markers() {
    let chart = one_template("a: 1\n{{- fail \"stop here\" }}\n", "");
    let err = render_text(&chart, &Map::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "execution error at (c/templates/t.yaml:2:4): stop here"
    );
    let chart = one_template("b: {{ required \"x is needed\" .Values.x }}\n", "");
    let err = render_text(&chart, &Map::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "execution error at (c/templates/t.yaml:1:6): x is needed"
    );
}

#[test]
fn schema_violations_name_the_chart() {
    let files = tgz(&[
        ("c/Chart.yaml", b"apiVersion: v2\nname: c\nversion: 1.0.0\n"),
        ("c/values.yaml", b"replicas: 1\n"),
        (
            "c/values.schema.json",
            br#"{"type":"object","properties":{"replicas":{"type":"integer","minimum":1}}}"#,
        ),
        ("c/templates/t.yaml", b"r: {{ .Values.replicas }}\n"),
    ]);
    let chart = chart::load_archive(&files, "c.tgz").unwrap();
    assert!(render_text(&chart, &Map::new()).is_ok());
    let mut user = Map::new();
    user.insert("replicas".into(), Value::Float(0.0));
    let err = render_text(&chart, &user).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("values don't meet the specifications"),
        "{text}"
    );
    assert!(text.contains("c:\n- at '/replicas'"), "{text}");
}

#[test]
fn kube_versions_parse_like_helm() {
    let caps = Capabilities::new(Some("1.30.0"), &["example.com/v1".into()]).unwrap();
    assert_eq!(caps.kube_version, "v1.30.0");
    assert_eq!((caps.major.as_str(), caps.minor.as_str()), ("1", "30"));
    assert_eq!(
        caps.api_versions.last().map(String::as_str),
        Some("example.com/v1")
    );
    assert!(Capabilities::new(Some("banana"), &[]).is_err());
    assert_eq!(
        Capabilities::default().api_versions.len(),
        DEFAULT_API_VERSIONS.len()
    );
}

#[test]
fn upgrades_flip_install_flags() {
    let chart = one_template("s: {{ .Release.IsInstall }}/{{ .Release.IsUpgrade }}\n", "");
    let mut rel = release();
    rel.is_upgrade = true;
    let r = render(&chart, &Map::new(), &rel, &Capabilities::default()).unwrap();
    assert_eq!(r.manifests[0].content, "s: false/true\n");
}

#[test]
fn helm_groups_value_flags_by_kind() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("v.yaml");
    std::fs::write(&file, "a: file\nb: file\n").unwrap();
    let merged = merge_user_values(&[
        ValueSource::Set("a=set".into()),
        ValueSource::File(file),
        ValueSource::SetString("b=007".into()),
    ])
    .unwrap();
    assert_eq!(merged.get("a"), Some(&Value::String("set".into())));
    assert_eq!(merged.get("b"), Some(&Value::String("007".into())));
}

#[test]
fn kube_version_ranges_and_library_charts_are_checked() {
    let files = tgz(&[
        (
            "c/Chart.yaml",
            b"apiVersion: v2\nname: c\nversion: 1.0.0\nkubeVersion: '>=1.31.0-0'\n",
        ),
        ("c/templates/t.yaml", b"a: 1\n"),
    ]);
    let chart = chart::load_archive(&files, "c.tgz").unwrap();
    let old = Capabilities::new(Some("1.30.0"), &[]).unwrap();
    let err = render(&chart, &Map::new(), &release(), &old).unwrap_err();
    assert!(
        matches!(err, Error::KubeVersionIncompatible { .. }),
        "{err}"
    );
    let new = Capabilities::new(Some("1.31.2"), &[]).unwrap();
    assert!(render(&chart, &Map::new(), &release(), &new).is_ok());
    let lib = tgz(&[(
        "l/Chart.yaml",
        b"apiVersion: v2\nname: l\nversion: 1.0.0\ntype: library\n",
    )]);
    let lib = chart::load_archive(&lib, "l.tgz").unwrap();
    let err = render(&lib, &Map::new(), &release(), &new).unwrap_err();
    assert!(matches!(err, Error::LibraryChart));
}

/// Helm 4's `.Chart.Annotations` is the `map[string]string` field itself:
/// nil when Chart.yaml sets none (`null` in YAML and JSON, `map[]` printed,
/// false, no entries), empty for `annotations: {}`.
#[test]
fn unset_chart_annotations_are_a_nil_map_as_in_helm_4() {
    let template = r#"yaml: {{ toYaml .Chart.Annotations | quote }}
json: {{ toJson .Chart.Annotations | quote }}
print: {{ print .Chart.Annotations | quote }}
if: {{ if .Chart.Annotations }}yes{{ else }}no{{ end }}
len: {{ len .Chart.Annotations }}
empty: {{ empty .Chart.Annotations }}
default: {{ .Chart.Annotations | default "none" }}
field: "[{{ .Chart.Annotations.x }}]"
range: "[{{ range $k, $v := .Chart.Annotations }}{{ $k }}{{ end }}]"
chartJson: {{ regexFind "\"Annotations\":[^,]*" (toJson .Chart) | quote }}
chartYaml: {{ regexFind "Annotations:.*" (toYaml .Chart) | quote }}
toml: {{ toToml (dict "a" .Chart.Annotations) | quote }}
"#;
    let chart_with = |extra: &str| {
        let chart_yaml = format!("apiVersion: v2\nname: c\nversion: 1.0.0\n{extra}");
        let files = tgz(&[
            ("c/Chart.yaml", chart_yaml.as_bytes()),
            ("c/templates/t.yaml", template.as_bytes()),
        ]);
        chart::load_archive(&files, "c.tgz").unwrap()
    };
    let unset = render_text(&chart_with(""), &Map::new()).unwrap();
    assert!(
        unset.ends_with(
            r#"yaml: "null"
json: "null"
print: "map[]"
if: no
len: 0
empty: true
default: none
field: "[]"
range: "[]"
chartJson: "\"Annotations\":null"
chartYaml: "Annotations: null"
toml: "[a]\n"
"#
        ),
        "{unset}"
    );
    let empty = render_text(&chart_with("annotations: {}\n"), &Map::new()).unwrap();
    assert!(
        empty.contains("yaml: \"{}\"\njson: \"{}\"\nprint: \"map[]\"\nif: no\nlen: 0\n"),
        "{empty}"
    );
    assert!(
        empty.contains("chartJson: \"\\\"Annotations\\\":{}\""),
        "{empty}"
    );
    let set = render_text(&chart_with("annotations:\n  a: b\n"), &Map::new()).unwrap();
    assert!(
        set.contains("yaml: \"a: b\"\njson: \"{\\\"a\\\":\\\"b\\\"}\"\nprint: \"map[a:b]\"\nif: yes\nlen: 1\n"),
        "{set}"
    );
}

/// One case of `testdata/go-results.json` rendered by capstan: the text
/// of its template body, or the error.
fn go_result_case(doc: &serde_json::Value, body: &str) -> Result<String, String> {
    let text = |key: &str| doc[key].as_str().unwrap_or_default().to_string();
    let template = format!(
        "{{{{- define \"p\" }}}}{body}{{{{ end -}}}}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  out: {{{{ include \"p\" . | toJson }}}}\n"
    );
    let mut files: Vec<(String, Vec<u8>)> = vec![
        (
            "c/Chart.yaml".into(),
            b"apiVersion: v2\nname: c\nversion: 0.1.0\n".to_vec(),
        ),
        ("c/values.yaml".into(), text("values").into_bytes()),
        (
            "c/templates/_helpers.tpl".into(),
            text("helpers").into_bytes(),
        ),
        ("c/templates/t.yaml".into(), template.into_bytes()),
    ];
    if let Some(map) = doc["files"].as_object() {
        for (name, data) in map {
            let data = data.as_str().unwrap_or_default().as_bytes().to_vec();
            files.push((format!("c/{name}"), data));
        }
    }
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    let chart = chart::load_archive(&tgz(&refs), "c.tgz").map_err(|e| e.to_string())?;
    let rel = ReleaseInfo {
        name: "rel".into(),
        namespace: "apps".into(),
        revision: 1,
        is_upgrade: false,
    };
    let caps = Capabilities::new(Some("1.30.0"), &[]).map_err(|e| e.to_string())?;
    let r = render(&chart, &Map::new(), &rel, &caps).map_err(|e| e.to_string())?;
    let out = output::print(&r.hooks, &r.manifests, &output::PrintOptions::default())
        .map_err(|e| e.to_string())?;
    let json = out
        .split_once("  out: ")
        .map(|(_, j)| j.trim_end())
        .ok_or_else(|| format!("no output line in {out:?}"))?;
    serde_json::from_str::<String>(json).map_err(|e| format!("{e}: {json}"))
}

#[test]
fn go_results() {
    // Every case of testdata/go-results.json, which the real Helm 4 made
    // (testdata/go-results.py says how): Helm's text, Helm's error
    // message, or, where Helm never finishes (a stack overflow, memory
    // exhausted, still running), capstan's error naming the cycle.
    let doc: serde_json::Value =
        serde_json::from_str(include_str!("testdata/go-results.json")).unwrap();
    // Documented in docs/src/reference/template-functions.md ("Built-in objects").
    let known = [(
        "values_AsMap_type",
        "AsMap returns the values map itself, which capstan still sees as a common.Values",
    )];
    let mut failures = Vec::new();
    for case in doc["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        if known.iter().any(|(k, _)| *k == name) {
            continue;
        }
        let body = case["template"].as_str().unwrap();
        let got = go_result_case(&doc, body);
        let ok = if let Some(want) = case["output"].as_str() {
            got.as_deref() == Ok(want)
        } else if let Some(want) = case["error"].as_str() {
            matches!(&got, Err(e) if e.contains(want))
        } else {
            matches!(&got, Err(e) if e.contains("a map that contains itself would never end"))
        };
        if !ok {
            failures.push(format!("{name}: want {case} got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Answers `lookup` of Secret `shop/db`, refuses the rest.
struct OneSecret;

impl Lookup for OneSecret {
    fn lookup(&self, query: &LookupQuery) -> Result<serde_json::Value, String> {
        match query.name.as_str() {
            "db" => Ok(serde_json::json!({"data": {"n": 3}})),
            _ => Err(format!("lookup of {query} is refused")),
        }
    }
}

#[test]
fn lookup_is_answered_by_the_answerer_handed_in_with_the_capabilities() {
    let chart = one_template(
        "n: {{ len (lookup \"v1\" \"Secret\" \"shop\" \"db\") }}\n",
        "",
    );
    let caps = Capabilities::default();
    let offline = render(&chart, &Map::new(), &release(), &caps).unwrap();
    assert_eq!(offline.manifests[0].content, "n: 0\n");
    let connected = render_connected(&chart, &Map::new(), &release(), &caps, &OneSecret).unwrap();
    assert_eq!(connected.manifests[0].content, "n: 1\n");
    let refused = one_template("x: {{ lookup \"v1\" \"Secret\" \"shop\" \"x\" }}\n", "");
    let err = render_connected(&refused, &Map::new(), &release(), &caps, &OneSecret).unwrap_err();
    assert!(
        err.to_string()
            .contains("lookup of v1/Secret shop/x is refused"),
        "{err}"
    );
    // The answerer was the render's alone: the next offline render is offline.
    let again = render(&chart, &Map::new(), &release(), &caps).unwrap();
    assert_eq!(again.manifests[0].content, "n: 0\n");
}
