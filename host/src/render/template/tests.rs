//! Behaviour of the engine against Go's documented `text/template` rules.

use std::rc::Rc;

use super::{Engine, TemplateSet};
use crate::values::{Map, Value};

fn data() -> Value {
    let mut values = Map::new();
    values.insert("name".into(), "web".into());
    values.insert("replicas".into(), Value::Float(3.0));
    values.insert("big".into(), Value::Float(1_000_000.0));
    values.insert("on".into(), Value::Bool(true));
    values.insert("empty".into(), Value::String(String::new()));
    values.insert("nothing".into(), Value::Null);
    values.insert(
        "list".into(),
        Value::List(vec!["a".into(), "b".into(), "c".into()]),
    );
    let mut nested = Map::new();
    nested.insert("z".into(), Value::Int(26));
    nested.insert("a".into(), Value::Int(1));
    values.insert("map".into(), Value::Map(nested));
    let mut template = Map::new();
    template.insert("Name".into(), "t".into());
    let mut root = Map::new();
    root.insert("Values".into(), Value::Map(values));
    root.insert("Template".into(), Value::Map(template));
    Value::Map(root)
}

fn render(src: &str) -> Result<String, String> {
    super::with_big_stack(|| render_here(src)).unwrap_or_else(|| Err("panicked".into()))
}

fn render_here(src: &str) -> Result<String, String> {
    let mut set = TemplateSet::new();
    set.add("t", src).map_err(|e| e.to_string())?;
    let engine = Engine::new(&set);
    engine
        .execute("t", Rc::new(data()))
        .map_err(|e| e.to_string())
}

fn ok(src: &str) -> String {
    match render(src) {
        Ok(s) => s,
        Err(e) => panic!("{src:?} failed: {e}"),
    }
}

fn err(src: &str) -> String {
    match render(src) {
        Ok(s) => panic!("{src:?} rendered {s:?}, want an error"),
        Err(e) => e,
    }
}

#[test]
fn text_and_fields() {
    assert_eq!(ok("hello {{ .Values.name }}!"), "hello web!");
    assert_eq!(ok("{{ .Values.replicas }}"), "3");
    assert_eq!(ok("{{ .Values.big }}"), "1e+06");
    assert_eq!(ok("{{ .Values.missing }}"), "<no value>");
    assert_eq!(ok("{{ .Values.nothing }}"), "<no value>");
    assert_eq!(ok("{{ .Values.list }}"), "[a b c]");
    assert_eq!(ok("{{ .Values.map }}"), "map[a:1 z:26]");
}

#[test]
fn trimming_and_comments() {
    assert_eq!(ok("a  {{- 1 -}}  b"), "a1b");
    assert_eq!(ok("a\n{{- /* note */ -}}\nb"), "ab");
    assert_eq!(ok("a {{/* c */}} b"), "a  b");
    assert_eq!(ok("{{-3}}"), "-3");
}

#[test]
fn constants() {
    assert_eq!(
        ok("{{ 0x1F }} {{ 0o17 }} {{ 017 }} {{ 1_000 }} {{ 1e3 }} {{ 1.5 }}"),
        "31 15 15 1000 1000 1.5"
    );
    assert_eq!(
        ok("{{ 'a' }} {{ \"x\\ty\" }} {{ `raw\\n` }}"),
        "97 x\ty raw\\n"
    );
    assert_eq!(ok("{{ true }} {{ false }}"), "true false");
}

#[test]
fn if_else_chains() {
    let t = "{{ if .Values.empty }}A{{ else if .Values.on }}B{{ else }}C{{ end }}";
    assert_eq!(ok(t), "B");
    assert_eq!(ok("{{ if .Values.missing }}x{{ else }}y{{ end }}"), "y");
    assert_eq!(ok("{{ if 0 }}x{{ else }}y{{ end }}"), "y");
    assert_eq!(ok("{{ if .Values.list }}x{{ end }}"), "x");
}

#[test]
fn with_sets_dot_and_else_with() {
    assert_eq!(ok("{{ with .Values.name }}{{ . }}{{ end }}"), "web");
    assert_eq!(
        ok("{{ with .Values.empty }}x{{ else with .Values.name }}{{ . }}{{ end }}"),
        "web"
    );
    assert_eq!(
        ok("{{ with .Values.empty }}x{{ else }}none{{ end }}"),
        "none"
    );
}

#[test]
fn range_forms() {
    assert_eq!(ok("{{ range .Values.list }}{{ . }},{{ end }}"), "a,b,c,");
    assert_eq!(
        ok("{{ range $i, $v := .Values.list }}{{ $i }}={{ $v }} {{ end }}"),
        "0=a 1=b 2=c "
    );
    assert_eq!(
        ok("{{ range $k, $v := .Values.map }}{{ $k }}:{{ $v }} {{ end }}"),
        "a:1 z:26 "
    );
    assert_eq!(ok("{{ range 3 }}{{ . }}{{ end }}"), "012");
    assert_eq!(
        ok("{{ range .Values.missing }}x{{ else }}empty{{ end }}"),
        "empty"
    );
    assert_eq!(
        ok(
            "{{ range .Values.list }}{{ if eq . \"b\" }}{{ continue }}{{ end }}{{ if eq . \"c\" }}{{ break }}{{ end }}{{ . }}{{ end }}"
        ),
        "a"
    );
    assert!(
        render("{{ range .Values.name }}{{ end }}")
            .unwrap_err()
            .contains("range can't iterate over web")
    );
}

#[test]
fn variables_scope_and_assign() {
    assert_eq!(
        ok("{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}"),
        "2"
    );
    assert_eq!(
        ok("{{ $x := 1 }}{{ if true }}{{ $x := 2 }}{{ end }}{{ $x }}"),
        "1"
    );
    assert_eq!(
        ok("{{ with .Values.map }}{{ $.Values.name }}{{ end }}"),
        "web"
    );
    assert_eq!(ok("{{ $m := .Values.map }}{{ $m.z }}"), "26");
}

#[test]
fn define_template_block() {
    assert_eq!(
        ok("{{ define \"x\" }}[{{ . }}]{{ end }}{{ template \"x\" .Values.name }}"),
        "[web]"
    );
    assert_eq!(
        ok("{{ block \"b\" .Values.name }}<{{ . }}>{{ end }}"),
        "<web>"
    );
    assert!(
        render("{{ template \"nope\" }}")
            .unwrap_err()
            .contains("template \"nope\" not defined")
    );
}

#[test]
fn include_and_tpl() {
    assert_eq!(
        ok("{{ define \"x\" }}v={{ .Values.name }}{{ end }}{{ include \"x\" . }}"),
        "v=web"
    );
    assert_eq!(
        ok("{{ tpl \"{{ .Values.name }}-{{ .Values.missing }}\" . }}"),
        "web-"
    );
    let err =
        render("{{ define \"loop\" }}{{ include \"loop\" . }}{{ end }}{{ include \"loop\" . }}")
            .unwrap_err();
    assert!(err.contains("nested reference name: loop"), "{err}");
    let err = render("{{ tpl \"x\" .Values }}").unwrap_err();
    assert!(err.contains("cannot retrieve Template.Name"), "{err}");
    // Definitions made inside tpl text are visible to that text only.
    let local = r#"{{ tpl "{{ define \"local\" }}L{{ end }}{{ include \"local\" . }}" . }}"#;
    assert_eq!(ok(local), "L");
    assert!(render(r#"{{ tpl "{{ define \"l2\" }}{{ end }}" . }}{{ include "l2" . }}"#).is_err());
}

#[test]
fn hostile_source_never_panics() {
    for src in [
        "{{ 1é }}",
        "{{ \"\\",
        "{{ 'ab' }}",
        "{{ `x",
        "{{ (1 }}",
        "{{ 1) }}",
        "{{ .a.é }}",
        "{{ $é := 1 }}",
        "{{/* x",
        "{{ 0x }}",
        "{{ 1e }}",
        "{{- -}}",
        "{{ | }}",
        "{{ $x = 1 }}",
        "{{ else }}",
        "{{ define \"a\" }}",
        "{{ range $a, $b, $c := . }}{{ end }}",
        "é{{",
    ] {
        // A panic would surface as `with_big_stack` failing.
        assert_ne!(render(src).err().as_deref(), Some("panicked"), "{src:?}");
    }
}

#[test]
fn endless_template_recursion_is_an_error() {
    let err = render("{{ define \"r\" }}{{ template \"r\" . }}{{ end }}{{ template \"r\" . }}")
        .unwrap_err();
    assert!(err.contains("exceeded maximum template depth"), "{err}");
}

#[test]
fn comparisons_follow_go() {
    assert_eq!(
        ok("{{ eq 1 1 }} {{ eq \"a\" \"b\" \"a\" }} {{ ne 1 2 }}"),
        "true true true"
    );
    assert_eq!(
        ok("{{ lt 1 2 }} {{ le 2 2 }} {{ gt \"b\" \"a\" }} {{ ge 1.5 2.5 }}"),
        "true true true false"
    );
    assert_eq!(ok("{{ eq .Values.missing \"x\" }}"), "false");
    assert_eq!(ok("{{ eq .Values.missing .Values.other }}"), "true");
    assert_eq!(ok("{{ eq \"x\" .Values.missing \"x\" }}"), "true");
    // A list or map is compared on the plain path, which reports Go's error.
    assert!(
        render("{{ eq (list 1) (list 1) }}")
            .unwrap_err()
            .contains("non-comparable type")
    );
    assert!(
        render("{{ eq 1 1.0 }}")
            .unwrap_err()
            .contains("incompatible types for comparison")
    );
    assert!(
        render("{{ lt .Values.replicas 5 }}")
            .unwrap_err()
            .contains("incompatible types")
    );
}

#[test]
fn and_or_not_short_circuit() {
    assert_eq!(
        ok("{{ and 1 0 2 }} {{ and 1 2 }} {{ or 0 \"\" \"x\" }} {{ or 0 \"\" }}|"),
        "0 2 x |"
    );
    assert_eq!(ok("{{ or .Values.name .Values.missing.deep }}"), "web");
    assert_eq!(ok("{{ not .Values.empty }}"), "true");
}

#[test]
fn len_index_slice() {
    assert_eq!(
        ok("{{ len .Values.list }} {{ len .Values.name }} {{ len .Values.map }}"),
        "3 3 2"
    );
    assert_eq!(
        ok("{{ index .Values.list 1 }} {{ index .Values \"map\" \"z\" }}"),
        "b 26"
    );
    assert_eq!(ok("{{ index .Values.map \"nope\" }}"), "<no value>");
    assert_eq!(
        ok("{{ slice .Values.list 1 }} {{ slice .Values.name 0 2 }}"),
        "[b c] we"
    );
    assert!(
        render("{{ index .Values.missing \"a\" }}")
            .unwrap_err()
            .contains("index of untyped nil")
    );
    assert!(
        render("{{ index .Values.list 5 }}")
            .unwrap_err()
            .contains("index out of range: 5")
    );
}

#[test]
fn pipelines_pass_last_argument() {
    assert_eq!(ok("{{ .Values.list | len }}"), "3");
    assert_eq!(ok("{{ 1 | eq 1 }}"), "true");
    assert_eq!(ok("{{ (.Values.map).z }}"), "26");
    assert_eq!(ok("{{ (index .Values.list 0) }}"), "a");
}

#[test]
fn errors_name_file_line_and_column() {
    let err = render("line1\n  {{ .Values.missing.deep }}").unwrap_err();
    assert_eq!(
        err,
        "template: t:2:5: executing \"t\" at <.Values.missing.deep>: nil pointer evaluating interface {}.deep"
    );
    let err = render("{{ .Values.name.x }}").unwrap_err();
    assert!(
        err.contains("can't evaluate field x in type string"),
        "{err}"
    );
    let err = render("{{ nosuchfunc 1 }}").unwrap_err();
    assert_eq!(err, "template: t:1: function \"nosuchfunc\" not defined");
    assert!(
        render("{{ if }}")
            .unwrap_err()
            .contains("missing value for if")
    );
    assert!(
        render("{{ break }}")
            .unwrap_err()
            .contains("{{break}} outside {{range}}")
    );
    assert!(render("{{ end }}").is_err());
    assert!(render("{{ if 1 }}").is_err());
    assert!(
        render("{{ \"x\" 1 }}")
            .unwrap_err()
            .contains("can't give argument to non-function")
    );
    assert_eq!(
        render("{{ if true }}{{ $v := 1 }}{{ end }}{{ $v }}").unwrap_err(),
        "template: t:1: undefined variable \"$v\""
    );
    assert!(render("{{ $outer := 1 }}{{ define \"d\" }}{{ $outer }}{{ end }}").is_err());
    assert_eq!(
        ok("{{ range $i, $v := .Values.list }}{{ end }}{{ $x := 2 }}{{ $x }}"),
        "2"
    );
}

#[test]
fn set_through_dot_is_seen_like_go_map_sharing() {
    // `set` on a path under `.` changes `.` and `$` for the rest of the template.
    assert_eq!(
        ok("{{ $_ := set .Values.map \"n\" 3 }}{{ .Values.map.n }} {{ $.Values.map.n }}"),
        "3 3"
    );
    // An included template's change to the data it got reaches the caller.
    let src = "{{ define \"fill\" }}{{ $_ := set .Values \"filled\" \"yes\" }}{{ end }}\
               {{ include \"fill\" . }}{{ .Values.filled }}";
    assert_eq!(ok(src), "yes");
    let src = "{{ define \"fill\" }}{{ $_ := set $.Values \"t\" 1 }}{{ end }}\
               {{ template \"fill\" . }}{{ $.Values.t }}";
    assert_eq!(ok(src), "1");
}

#[test]
fn set_on_a_variable_changes_the_variable() {
    assert_eq!(
        ok("{{ $d := dict \"a\" 1 }}{{ $_ := set $d \"b\" 2 }}{{ $d }}"),
        "map[a:1 b:2]"
    );
    assert_eq!(
        ok("{{ $d := dict \"in\" (dict) }}{{ $_ := set $d.in \"x\" 1 }}{{ $d }}"),
        "map[in:map[x:1]]"
    );
}

#[test]
fn later_definitions_replace_earlier_ones_unless_empty() {
    let mut set = TemplateSet::new();
    set.add("a", "{{ define \"n\" }}first{{ end }}").unwrap();
    set.add("b", "{{ define \"n\" }}second{{ end }}").unwrap();
    set.add("c", "{{ define \"n\" }}  {{ end }}").unwrap();
    set.add("main", "{{ template \"n\" }}").unwrap();
    let engine = Engine::new(&set);
    assert_eq!(
        engine.execute("main", Rc::new(Value::Null)).unwrap(),
        "second"
    );
}

#[test]
fn files_methods() {
    let caps = [("Caps", Value::List(vec!["v1".into()]))];
    let out = with_files(
        "{{ .Files.Get \"a.txt\" }}|{{ range .Files.Lines \"a.txt\" }}[{{ . }}]{{ end }}|{{ range $p, $_ := .Files.Glob \"conf/*\" }}{{ $p }} {{ end }}|{{ .Files.Get \"none\" }}|{{ .Caps.Has \"v1\" }}",
        &[("a.txt", b"x\ny\n"), ("conf/1", b"1"), ("conf/sub/2", b"2")],
        caps,
    );
    assert_eq!(out, "x\ny\n|[x][y]|conf/1 ||true");
}

/// Runs `src` with `.Files` holding `files`, `.Empty` an empty file set,
/// and `extra` entries at the top level.
fn with_files<const N: usize>(
    src: &str,
    files: &[(&str, &[u8])],
    extra: [(&str, Value); N],
) -> String {
    let mut set = TemplateSet::new();
    set.add("t", src).unwrap();
    let engine = Engine::new(&set);
    let files: super::objects::FileSet = files
        .iter()
        .map(|(name, data)| (name.to_string(), std::sync::Arc::from(*data)))
        .collect();
    let mut root = Map::new();
    root.insert("Files".into(), engine.register_files(files));
    root.insert(
        "Empty".into(),
        engine.register_files(super::objects::FileSet::new()),
    );
    root.extend(extra.map(|(k, v)| (k.to_string(), v)));
    engine.execute("t", Rc::new(Value::Map(root))).unwrap()
}

#[test]
fn an_empty_files_set_is_false_like_an_empty_go_map() {
    let out = with_files(
        "{{ if .Files.Glob \"x/*\" }}a{{ else }}b{{ end }}{{ if and (.Files.Glob \"x/*\") true }}c{{ else }}d{{ end }}{{ if not (.Files.Glob \"x/*\") }}e{{ end }}{{ empty (.Files.Glob \"x/*\") }}{{ if .Files.Glob \"conf/*\" }}f{{ end }}{{ if .Empty }}g{{ else }}h{{ end }}",
        &[("conf/1", b"1")],
        [],
    );
    assert_eq!(out, "bdetrue".to_string() + "fh");
}

#[test]
fn a_nil_pipeline_value_has_nil_fields_but_a_chain_does_not() {
    let mut set = TemplateSet::new();
    set.add(
        "t",
        "{{ ((.Values.none).x).y }}|{{ $v := .Values.none }}{{ $v.a.b }}|{{ (.Values.none).x }}",
    )
    .unwrap();
    set.add("u", "{{ .Values.none.x.y }}").unwrap();
    let engine = Engine::new(&set);
    let mut root = Map::new();
    root.insert("Values".into(), Value::Map(Map::new()));
    let root = Rc::new(Value::Map(root));
    assert_eq!(
        engine.execute("t", root.clone()).unwrap(),
        "<no value>|<no value>|<no value>"
    );
    let err = engine.execute("u", root).unwrap_err().to_string();
    assert!(
        err.ends_with("nil pointer evaluating interface {}.x"),
        "{err}"
    );
}

/// Sprig's `semver` returns Masterminds/semver v3's `*semver.Version`:
/// its methods are called like fields, and it prints as its `String()`.
/// Expected values follow Masterminds' `version.go`.
#[test]
fn semver_objects_have_masterminds_methods() {
    let v = r#"(semver "v1.2.3-beta.1+build.5")"#;
    assert_eq!(
        ok(&format!(
            "{{{{ {v}.Major }}}} {{{{ {v}.Minor }}}} {{{{ {v}.Patch }}}} {{{{ {v}.Prerelease }}}} {{{{ {v}.Metadata }}}}"
        )),
        "1 2 3 beta.1 build.5"
    );
    assert_eq!(
        ok(&format!("{{{{ {v}.Original }}}}")),
        "v1.2.3-beta.1+build.5"
    );
    assert_eq!(ok(r#"{{ (semver "v1.2").String }}"#), "1.2.0");
    assert_eq!(ok(r#"{{ semver "v1.2" }}"#), "1.2.0");
    assert_eq!(ok(r#"{{ semver "v1.2" | toString }}"#), "1.2.0");
    assert_eq!(
        ok(r#"{{ printf "%s/%v" (semver "1") (semver "2") }}"#),
        "1.0.0/2.0.0"
    );
    assert_eq!(ok(r#"{{ semver "v1.2" | toJson }}"#), r#""1.2.0""#);
    assert_eq!(ok(r#"{{ dict "v" (semver "v1.2") | toYaml }}"#), "v: 1.2.0");
    assert_eq!(
        ok(r#"{{ typeOf (semver "1") }} {{ kindOf (semver "1") }}"#),
        "*semver.Version ptr"
    );
    assert_eq!(
        ok(r#"{{ typeOf ((semver "1").IncMajor) }}"#),
        "semver.Version"
    );
    assert_eq!(ok(r#"{{ if semver "0.0.0" }}yes{{ end }}"#), "yes");
    assert_eq!(
        ok(r#"{{ $v := semver "4.5.6" }}{{ $v.Minor }}{{ with $v }}{{ .Patch }}{{ end }}"#),
        "56"
    );
}

#[test]
fn semver_comparisons_follow_masterminds() {
    let cmp = |a: &str, b: &str| {
        ok(&format!(
            r#"{{{{ (semver "{a}").Compare (semver "{b}") }}}}"#
        ))
    };
    assert_eq!(cmp("1.2.3", "1.3.0"), "-1");
    assert_eq!(cmp("1.3.0", "1.2.3"), "1");
    // Build metadata is not part of precedence.
    assert_eq!(cmp("1.2.3+a", "1.2.3+b"), "0");
    // A prerelease sorts before its release; numeric identifiers compare
    // as numbers, and a shorter identifier list sorts first.
    assert_eq!(cmp("1.0.0-alpha", "1.0.0"), "-1");
    assert_eq!(cmp("1.0.0-alpha.2", "1.0.0-alpha.10"), "-1");
    assert_eq!(cmp("1.0.0-alpha", "1.0.0-alpha.1"), "-1");
    assert_eq!(cmp("1.0.0-rc.1", "1.0.0-beta.11"), "1");
    assert_eq!(cmp("1.0.0-1", "1.0.0-alpha"), "-1");
    let t =
        |m: &str, a: &str, b: &str| ok(&format!(r#"{{{{ (semver "{a}").{m} (semver "{b}") }}}}"#));
    assert_eq!(t("LessThan", "1.0.0-alpha", "1.0.0"), "true");
    assert_eq!(t("GreaterThan", "1.0.0-alpha", "1.0.0"), "false");
    assert_eq!(t("LessThanEqual", "2.0.0", "2.0.0"), "true");
    assert_eq!(t("GreaterThanEqual", "2.0.0", "2.0.1"), "false");
    assert_eq!(t("Equal", "1.2.3+x", "v1.2.3"), "true");
    assert_eq!(t("Equal", "1.2.3", "1.2.4"), "false");
    assert_eq!(ok(r#"{{ (semver "1.2.3").Equal nil }}"#), "false");
}

#[test]
fn semver_increments_and_setters_follow_masterminds() {
    assert_eq!(ok(r#"{{ (semver "v1.2.3-rc.1+b").IncMajor }}"#), "2.0.0");
    assert_eq!(ok(r#"{{ (semver "1.2.3").IncMinor }}"#), "1.3.0");
    assert_eq!(ok(r#"{{ (semver "1.2.3").IncPatch }}"#), "1.2.4");
    // A prerelease's next patch is its release; metadata alone does not
    // keep the patch.
    assert_eq!(ok(r#"{{ (semver "1.2.3-rc.1").IncPatch }}"#), "1.2.3");
    assert_eq!(ok(r#"{{ (semver "1.2.3+meta").IncPatch }}"#), "1.2.4");
    assert_eq!(ok(r#"{{ (semver "v1.2.3").IncMajor.Major }}"#), "2");
    assert_eq!(ok(r#"{{ ((semver "v1.2.3").IncMinor).String }}"#), "1.3.0");
    assert_eq!(
        ok(r#"{{ (semver "1.2.3").SetPrerelease "rc.1" }}"#),
        "1.2.3-rc.1"
    );
    assert_eq!(
        ok(r#"{{ (semver "1.2.3-rc.1").SetPrerelease "" }}"#),
        "1.2.3"
    );
    assert_eq!(
        ok(r#"{{ (semver "1.2.3").SetMetadata "git.abc" }}"#),
        "1.2.3+git.abc"
    );
    let e = err(r#"{{ (semver "1.2.3").SetPrerelease "01" }}"#);
    assert!(
        e.ends_with("error calling SetPrerelease: version segment starts with 0"),
        "{e}"
    );
    let e = err(r#"{{ (semver "1.2.3").SetMetadata "a..b" }}"#);
    assert!(
        e.ends_with("error calling SetMetadata: invalid metadata string"),
        "{e}"
    );
}

#[test]
fn semver_objects_refuse_what_go_refuses() {
    // `Inc*` return a `semver.Version` value: Go finds only the
    // value-receiver methods on it, not `Original` or the comparisons.
    let e = err(r#"{{ (semver "v1.2.3").IncMajor.Original }}"#);
    assert!(
        e.ends_with("can't evaluate field Original in type semver.Version"),
        "{e}"
    );
    let e = err(r#"{{ (semver "1.2.3").Nope }}"#);
    assert!(
        e.ends_with("can't evaluate field Nope in type *semver.Version"),
        "{e}"
    );
    let e = err(r#"{{ (semver "1.2.3").Compare "1.3.0" }}"#);
    assert!(
        e.ends_with("wrong type for value; expected *semver.Version; got string"),
        "{e}"
    );
    let e = err(r#"{{ (semver "1.2.3").Compare ((semver "1.3.0").IncMajor) }}"#);
    assert!(
        e.ends_with("wrong type for value; expected *semver.Version; got semver.Version"),
        "{e}"
    );
    let e = err(r#"{{ (semver "1.2.3").Compare }}"#);
    assert!(
        e.ends_with("wrong number of args for Compare: want 1 got 0"),
        "{e}"
    );
    let e = err(r#"{{ (semver "1.2.3").Major 1 }}"#);
    assert!(
        e.ends_with("wrong number of args for Major: want 0 got 1"),
        "{e}"
    );
    let e = err(r#"{{ range semver "1.2.3" }}x{{ end }}"#);
    assert!(e.ends_with("range can't iterate over 1.2.3"), "{e}");
}

#[test]
fn semver_objects_are_no_maps_to_map_functions() {
    // Go's `*semver.Version` is a struct pointer: the map parameters of
    // Sprig's functions refuse it before the call, `len` dereferences it
    // and finds a struct, `index` cannot index a pointer.
    for (src, want) in [
        (
            r#"{{ keys (semver "1.2.3") }}"#,
            "wrong type for value; expected map[string]interface {}; got *semver.Version",
        ),
        (
            r#"{{ hasKey (semver "1.2.3") "x" }}"#,
            "wrong type for value; expected map[string]interface {}; got *semver.Version",
        ),
        (
            r#"{{ values (semver "1.2.3") }}"#,
            "wrong type for value; expected map[string]interface {}; got *semver.Version",
        ),
        (
            r#"{{ keys (semver "1.2.3").IncMajor }}"#,
            "wrong type for value; expected map[string]interface {}; got semver.Version",
        ),
        (
            r#"{{ len (semver "1.2.3") }}"#,
            "error calling len: len of type semver.Version",
        ),
        (
            r#"{{ len (semver "1.2.3").IncMinor }}"#,
            "error calling len: len of type semver.Version",
        ),
        (
            r#"{{ index (semver "1.2.3") "x" }}"#,
            "error calling index: can't index item of type *semver.Version",
        ),
        (
            r#"{{ dig "x" "d" (semver "1.2.3") }}"#,
            "error calling dig: interface conversion: interface {} is *semver.Version, not map[string]interface {}",
        ),
        (
            r#"{{ semver "x" }}"#,
            "error calling semver: invalid semantic version",
        ),
        (
            r#"{{ semverCompare ">1" "1.2.3-01" }}"#,
            "error calling semverCompare: version segment starts with 0",
        ),
    ] {
        let e = err(src);
        assert!(e.ends_with(want), "{src}: {e}");
    }
}

#[test]
fn map_functions_share_and_copy_where_go_does() {
    // What Go and Sprig do that this engine matches: `merge` and
    // `mergeOverwrite` change their first argument in place, `deepCopy`,
    // `pick` and `omit` return new maps, `append` a new slice.
    assert_eq!(
        ok(r#"{{ $d := dict "a" 1 }}{{ $_ := merge $d (dict "a" 2 "b" 3) }}{{ $d }}"#),
        "map[a:1 b:3]"
    );
    assert_eq!(
        ok(r#"{{ $d := dict "a" 1 }}{{ $_ := mergeOverwrite $d (dict "a" 2) }}{{ $d.a }}"#),
        "2"
    );
    assert_eq!(
        ok(r#"{{ $_ := merge .Values.map (dict "m" 7) }}{{ .Values.map.m }}"#),
        "7"
    );
    // A nil SRC is a nil map to Go: DST is still changed in place.
    assert_eq!(
        ok(r#"{{ $d := dict "a" 1 }}{{ $_ := merge $d .Values.missing (dict "b" 2) }}{{ $d }}"#),
        "map[a:1 b:2]"
    );
    assert_eq!(
        ok(
            r#"{{ $c := deepCopy .Values.map }}{{ $_ := set $c "a" 9 }}{{ .Values.map.a }} {{ $c.a }}"#
        ),
        "1 9"
    );
    assert_eq!(
        ok(
            r#"{{ $p := pick .Values.map "a" }}{{ $_ := set $p "q" 1 }}{{ hasKey .Values.map "q" }} {{ $p }}"#
        ),
        "false map[a:1 q:1]"
    );
    assert_eq!(
        ok(
            r#"{{ $o := omit .Values.map "a" }}{{ $_ := unset $o "z" }}{{ .Values.map.z }} {{ $o }}"#
        ),
        "26 map[]"
    );
    assert_eq!(
        ok(r#"{{ $l := list 1 }}{{ $m := append $l 2 }}{{ $l }} {{ $m }}"#),
        "[1] [1 2]"
    );
}

/// Sprig's list and default functions hand out their arguments' elements,
/// which in Go are the same maps: a change through the result is seen
/// through the original (Go's results).
#[test]
fn list_and_default_functions_return_the_same_map() {
    let set_through = |expr: &str| {
        ok(&format!(
            r#"{{{{ $a := dict "k" 1 }}}}{{{{ $m := {expr} }}}}{{{{ $_ := set $m "x" 2 }}}}{{{{ $a.x }}}}"#
        ))
    };
    for expr in [
        "first (list $a 1)",
        "mustFirst (list $a 1)",
        "last (list 1 $a)",
        "mustLast (list 1 $a)",
        "index (rest (list 1 $a)) 0",
        "index (mustRest (list 1 $a)) 0",
        "index (initial (list $a 1)) 0",
        "index (mustInitial (list $a 1)) 0",
        "index (reverse (list $a 1)) 1",
        "index (mustReverse (list $a 1)) 1",
        "first (uniq (list $a $a 1))",
        "first (mustUniq (list $a 1 $a))",
        r#"first (without (list 1 $a "x") 1 "x")"#,
        r#"first (mustWithout (list 1 $a) 1)"#,
        r#"first (compact (list "" $a))"#,
        r#"first (mustCompact (list 0 $a))"#,
        "first (mustSlice (list 1 $a) 1)",
        "index (mustSlice (list 1 $a 2) 0 2) 1",
        "last (concat (list 1) (list $a))",
        r#"first (values (dict "n" $a))"#,
        "ternary $a (dict) true",
        "default $a .Values.missing",
        r#"default (dict) $a"#,
        r#"required "need a" $a"#,
        "first (tuple $a)",
        "first (prepend (list 1) $a)",
        "first (mustPrepend (list) $a)",
        "index (first (chunk 2 (list 1 $a 3))) 1",
        "first (first (mustChunk 1 (list $a)))",
        r#"first (pluck "n" (dict "n" $a) (dict "m" 1))"#,
        "ternary (dict) $a false",
        r#"coalesce (dict) "" $a"#,
    ] {
        assert_eq!(set_through(expr), "2", "{expr}");
    }
    // `values` of the chart's own values: the map inside `.Values`.
    assert_eq!(
        ok(
            r#"{{ range values .Values }}{{ if kindIs "map" . }}{{ $_ := set . "seen" 1 }}{{ end }}{{ end }}{{ .Values.map.seen }}"#
        ),
        "1"
    );
    // Deep equality as Go's reflect.DeepEqual: equal maps are one element
    // for uniq and without; 1 and 1.0 differ. An empty list slices to nil.
    for (src, want) in [
        (
            r#"{{ uniq (list (dict "a" 1) (dict "a" 1) (dict "a" 2)) }}"#,
            "[map[a:1] map[a:2]]",
        ),
        (
            r#"{{ without (list (dict "a" (list 1)) 1 1.0) (dict "a" (list 1)) 1 }}"#,
            "[1]",
        ),
        (
            r#"{{ mustSlice (list) 0 }} {{ mustSlice (list 1 2 3) 1 2 }} {{ coalesce "" 0 }}"#,
            "<no value> [2] <no value>",
        ),
    ] {
        assert_eq!(ok(src), want, "{src}");
    }
    // Anything but lists (and a bool condition) is the library's result
    // or error, as before.
    for (src, want) in [
        (r#"{{ first "abc" }}"#, "Cannot find first on type string"),
        (r#"{{ mustLast 3 }}"#, "Cannot find last on type int64"),
        (r#"{{ rest "x" }}"#, "Cannot find rest on type string"),
        (r#"{{ uniq "x" }}"#, "Cannot find uniq on type string"),
        (
            r#"{{ without "x" 1 }}"#,
            "Cannot find without on type string",
        ),
        (r#"{{ compact "x" }}"#, "Cannot compact on type string"),
        (
            r#"{{ concat (list 1) 2 }}"#,
            "Cannot concat type int64 as list",
        ),
        (r#"{{ prepend "x" 1 }}"#, "Cannot prepend on type string"),
        (r#"{{ chunk 0 (list 1) }}"#, "integer divide by zero"),
        (
            r#"{{ pluck "a" "x" }}"#,
            "expected map[string]interface {}; got string",
        ),
        (r#"{{ required "need it" "" }}"#, "need itHELM_ERR_END"),
        (
            r#"{{ mustSlice (list 1 2) 3 }}"#,
            "reflect: slice index out of range [3:2]",
        ),
        (
            r#"{{ values "x" }}"#,
            "expected map[string]interface {}; got string",
        ),
    ] {
        let e = err(src);
        assert!(e.ends_with(want), "{src}: {e}");
    }
    assert!(err(r#"{{ ternary 1 2 "yes" }}"#).contains("ternary"));
}

/// Go's map aliasing through a second path: a map reached twice is one
/// map, so a change through one path shows through the other (see
/// docs/src/reference/template-functions.md, "Map sharing"); these are Go's results.
#[test]
fn a_map_reached_twice_is_one_map() {
    assert_eq!(
        ok(r#"{{ $a := dict }}{{ $b := dict "x" $a }}{{ $_ := set $a "k" 1 }}{{ $b.x.k }}"#),
        "1"
    );
    assert_eq!(
        ok(r#"{{ $m := .Values.map }}{{ $_ := set $m "n" 3 }}{{ .Values.map.n }}"#),
        "3"
    );
    assert_eq!(
        ok(
            r#"{{ $d := dict }}{{ $s := dict "n" (dict "x" 1) }}{{ $_ := merge $d $s }}{{ $_ := set $s.n "y" 2 }}{{ $d.n.y }}"#
        ),
        "2"
    );
    assert_eq!(
        ok(r#"{{ $p := pick .Values "map" }}{{ $_ := set $p.map "q" 1 }}{{ .Values.map.q }}"#),
        "1"
    );
    let src = r#"{{ define "f" }}{{ $_ := set .ctx.Values "z" 1 }}{{ end }}{{ include "f" (dict "ctx" $) }}{{ .Values.z }}"#;
    assert_eq!(ok(src), "1");
}

#[test]
fn maps_are_shared_by_every_path_that_reaches_them() {
    // `index`, `get`, `dig`, list elements, `range` and `with` hand out
    // the map itself, as Go does.
    assert_eq!(
        ok(r#"{{ $m := index .Values "map" }}{{ $_ := set $m "i" 1 }}{{ .Values.map.i }}"#),
        "1"
    );
    assert_eq!(
        ok(r#"{{ $m := get .Values "map" }}{{ $_ := set $m "g" 2 }}{{ .Values.map.g }}"#),
        "2"
    );
    assert_eq!(
        ok(
            r#"{{ $v := dict "a" (dict "b" (dict)) }}{{ $_ := set (dig "a" "b" (dict) $v) "c" 3 }}{{ $v.a.b.c }}"#
        ),
        "3"
    );
    assert_eq!(
        ok(
            r#"{{ $a := dict }}{{ $l := append (list 0) $a }}{{ $_ := set (index $l 1) "k" 4 }}{{ $a.k }}"#
        ),
        "4"
    );
    assert_eq!(
        ok(
            r#"{{ range $k, $v := .Values }}{{ if eq $k "map" }}{{ $_ := set $v "r" 5 }}{{ end }}{{ end }}{{ .Values.map.r }}"#
        ),
        "5"
    );
    assert_eq!(
        ok(r#"{{ with .Values.map }}{{ $_ := set . "w" 6 }}{{ end }}{{ .Values.map.w }}"#),
        "6"
    );
    // The idiom `$x := default (dict) .Values.x`: `default` returns the map.
    assert_eq!(
        ok(r#"{{ $x := default (dict) .Values.map }}{{ $_ := set $x "d" 7 }}{{ .Values.map.d }}"#),
        "7"
    );
    assert_eq!(
        ok(r#"{{ $x := default (dict "e" 8) .Values.nothing }}{{ $x.e }}"#),
        "8"
    );
    // `mergeOverwrite` shares a map of SRC that DST lacks; `deepCopy` of
    // it does not.
    assert_eq!(
        ok(
            r#"{{ $d := dict }}{{ $_ := mergeOverwrite $d .Values }}{{ $_ := unset $d.map "a" }}{{ hasKey .Values.map "a" }}"#
        ),
        "false"
    );
    assert_eq!(
        ok(
            r#"{{ $d := deepCopy .Values }}{{ $_ := unset $d.map "a" }}{{ hasKey .Values.map "a" }}"#
        ),
        "true"
    );
}

#[test]
fn a_map_may_contain_itself_as_in_go() {
    // Issue 27: Go builds the cycle; reading through it works, walking it
    // whole never ends in Go and is an error here (the Helm-made cases
    // are in render::tests::go_results).
    assert_eq!(
        ok(r#"{{ $a := dict "k" "v" }}{{ $_ := set $a "self" $a }}{{ $a.self.self.k }}"#),
        "v"
    );
    assert_eq!(
        ok(
            r#"{{ $a := dict "x" (dict) }}{{ $_ := set $a.x "up" (list $a) }}{{ (index $a.x.up 0).x.up | len }}"#
        ),
        "1"
    );
    assert_eq!(
        ok(
            r#"{{ $a := dict }}{{ $_ := merge $a (dict "x" $a) }}{{ keys $a.x.x.x }} [{{ toJson $a }}]"#
        ),
        "[x] []"
    );
    let e = err(r#"{{ $a := dict }}{{ $_ := set $a "self" $a }}{{ $a }}"#);
    assert!(
        e.contains("printing a map that contains itself would never end"),
        "{e}"
    );
    let e = err(r#"{{ $a := dict }}{{ $_ := set $a "self" $a }}{{ $a | quote }}"#);
    assert!(
        e.contains("error calling quote: reading a map that contains itself"),
        "{e}"
    );
    let e = err(r#"{{ $a := dict }}{{ $_ := set $a "self" $a }}{{ $b := deepCopy $a }}"#);
    assert!(e.contains("error calling deepCopy: copying a map"), "{e}");
    let e = err(r#"{{ $a := dict }}{{ $_ := set $a "self" $a }}{{ $b := merge $a $a }}"#);
    assert!(e.contains("error calling merge: merging a map"), "{e}");
    // One map reached twice is no cycle.
    assert_eq!(
        ok(r#"{{ $a := dict "v" 1 }}{{ $b := dict "x" $a "y" $a }}{{ toJson $b }}"#),
        r#"{"x":{"v":1},"y":{"v":1}}"#
    );
}

#[test]
fn copying_a_hugely_shared_map_ends_at_the_deadline() {
    // Forty levels, each holding the level below twice: one small map
    // reached 2^40 times, which no plain copy can hold.
    let mut src = String::from(r#"{{ $m := dict "v" 1 }}"#);
    for _ in 0..40 {
        src.push_str(r#"{{ $m = dict "a" $m "b" $m }}"#);
    }
    src.push_str(r#"{{ kindIs "map" $m }}"#);
    let started = std::time::Instant::now();
    let result = super::with_big_stack(|| {
        let _budget = crate::render::limits::start(crate::render::RenderLimits {
            deadline: std::time::Duration::from_millis(500),
            ..Default::default()
        });
        render_here(&src)
    });
    let e = match result {
        Some(Err(e)) => e,
        other => panic!("want the deadline error, got {other:?}"),
    };
    assert!(e.contains("render ran past its deadline"), "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn len_of_files_counts_files_like_a_go_map() {
    let out = with_files(
        "{{ len .Files }} {{ len (.Files.Glob \"conf/*\") }} {{ len (.Files.Glob \"x/*\") }} {{ len .Empty }}",
        &[("a.txt", b"x"), ("conf/1", b"1"), ("conf/sub/2", b"2")],
        [],
    );
    assert_eq!(out, "3 1 0 0");
}

#[test]
fn with_big_stack_runs_deep_recursion_on_the_callers_thread_and_catches_panics() {
    fn depth(n: usize) -> usize {
        let frame = [n as u8; 1024];
        std::hint::black_box(&frame);
        if n == 0 { 0 } else { 1 + depth(n - 1) }
    }
    let caller = std::thread::current().id();
    // About 64 MiB of frames: far past a test thread's 2 MiB stack.
    let result = super::with_big_stack(|| (depth(64 * 1024), std::thread::current().id()));
    assert_eq!(result, Some((64 * 1024, caller)));
    let panicked: Option<()> = super::with_big_stack(|| panic!("a bug"));
    assert_eq!(panicked, None);
}
