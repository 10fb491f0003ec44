//! Fuzzes the template lexer, parser and executor on a fixed data value
//! (a chart-like `.Values`, `.Release`, `.Chart`, `.Files`).
//!
//! The input is template source. It is parsed into a set (with a few fixed
//! helpers to `include`) and, when it parses, executed under render limits
//! with a short deadline, on a big-stack thread as a real render runs.
//! Besides "no panic", a limit must end the execution, so it cannot hang.

#![no_main]

use std::rc::Rc;
use std::time::Duration;

use capstan::render::limits::{self, RenderLimits};
use capstan::render::template::{self, Engine, TemplateSet, objects::FileSet};
use capstan::values::{self, Map, Value};
use libfuzzer_sys::fuzz_target;

const HELPERS: &str = r#"{{- define "name" -}}{{ .Chart.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- define "labels" -}}app: {{ include "name" . }}
release: {{ .Release.Name }}{{- end -}}"#;

const VALUES: &str =
    "replicas: 2\nimage: {repo: nginx, tag: '1.25'}\nlist: [a, b, c]\nglobal: {}\n";

fn data(engine: &Engine<'_>) -> Value {
    let mut files = FileSet::new();
    files.insert("files/a.conf".into(), std::sync::Arc::from(&b"x=1\n"[..]));
    let mut root = Map::new();
    root.insert(
        "Values".into(),
        values::parse_yaml(VALUES).unwrap_or(Value::Null),
    );
    let mut release = Map::new();
    release.insert("Name".into(), Value::String("rel".into()));
    root.insert("Release".into(), Value::Map(release));
    let mut chart = Map::new();
    chart.insert("Name".into(), Value::String("fuzz".into()));
    root.insert("Chart".into(), Value::Map(chart));
    let mut tpl = Map::new();
    tpl.insert("Name".into(), Value::String("fuzz/templates/t.yaml".into()));
    tpl.insert("BasePath".into(), Value::String("fuzz/templates".into()));
    root.insert("Template".into(), Value::Map(tpl));
    root.insert("Files".into(), engine.register_files(files));
    Value::Map(root)
}

fuzz_target!(|input: &[u8]| {
    let Ok(src) = std::str::from_utf8(input) else {
        return;
    };
    let mut set = TemplateSet::new();
    if set.add("fuzz/templates/_helpers.tpl", HELPERS).is_err() {
        return;
    }
    if set.add("fuzz/templates/t.yaml", src).is_err() {
        return;
    }
    let _ = template::with_big_stack(|| {
        let _budget = limits::start(RenderLimits {
            deadline: Duration::from_millis(200),
            max_output_bytes: 1 << 20,
            ..RenderLimits::default()
        });
        let engine = Engine::new(&set);
        let root = data(&engine);
        let _ = engine.execute("fuzz/templates/t.yaml", Rc::new(root));
    });
});
