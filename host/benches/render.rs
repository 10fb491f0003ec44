//! Rendering speed: charts of N templates, each using includes from a
//! `_helpers.tpl` of 30 defines, rendered end to end (dependencies, values,
//! parse, execute, sort). Time should grow linearly with N; the target is a
//! median under 5 ms for N = 100.
//!
//! `render_chart` renders the same loaded chart in every iteration, as the
//! daemon does: its templates are parsed on the first render and the
//! renderer reuses the parsed set after that. `render_chart_first` measures
//! a render that has to parse: it goes round more distinct charts than the
//! renderer keeps parsed.

use std::hint::black_box;
use std::sync::Arc;

use capstan::render::chart::{Chart, ChartFile};
use capstan::render::{self, Capabilities, ReleaseInfo};
use capstan::values::{Map, Value};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

/// Defines in `_helpers.tpl`.
const DEFINES: usize = 30;
/// Includes per template.
const INCLUDES_PER_TEMPLATE: usize = 10;

fn helpers() -> String {
    let mut out = String::new();
    for i in 0..DEFINES {
        out.push_str(&format!(
            "{{{{- define \"bench.d{i}\" -}}}}\napp.kubernetes.io/part-{i}: {{{{ .Chart.Name }}}}\nhelm.sh/chart: {{{{ printf \"%s-%s\" .Chart.Name .Chart.Version | trunc 63 | trimSuffix \"-\" }}}}\n{{{{- end -}}}}\n"
        ));
    }
    out
}

fn template(t: usize) -> String {
    let mut body = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Release.Name }}}}-{t}\n  labels:\n"
    );
    for k in 0..INCLUDES_PER_TEMPLATE {
        let i = (t + k * 7) % DEFINES;
        body.push_str(&format!(
            "    {{{{- include \"bench.d{i}\" . | nindent 4 }}}}\n"
        ));
    }
    body.push_str("data:\n  {{- range $k, $v := .Values.data }}\n  {{ $k }}: {{ $v | quote }}\n  {{- end }}\n");
    body
}

/// Distinct charts `render_chart_first` goes round (more than the renderer
/// keeps parsed, so that every render parses).
const FIRST_RENDER_CHARTS: usize = 12;

fn chart(n: usize) -> Chart {
    let mut templates = vec![ChartFile {
        name: "templates/_helpers.tpl".into(),
        data: Arc::from(helpers().into_bytes()),
    }];
    for t in 0..n {
        templates.push(ChartFile {
            name: format!("templates/t{t}.yaml"),
            data: Arc::from(template(t).into_bytes()),
        });
    }
    let mut metadata = Map::new();
    metadata.insert("apiVersion".into(), "v2".into());
    metadata.insert("name".into(), "bench".into());
    metadata.insert("version".into(), "1.0.0".into());
    let data: Map = (0..10)
        .map(|i| (format!("key{i}"), Value::String(format!("value{i}"))))
        .collect();
    let mut values = Map::new();
    values.insert("data".into(), Value::Map(data));
    Chart {
        metadata,
        dependencies: Vec::new(),
        values,
        schema: None,
        templates,
        files: Vec::new(),
        subcharts: Vec::new(),
    }
}

fn bench_render(c: &mut Criterion) {
    let release = ReleaseInfo {
        name: "bench".into(),
        namespace: "default".into(),
        revision: 1,
        is_upgrade: false,
    };
    let caps = Capabilities::default();
    let mut group = c.benchmark_group("render_chart");
    for n in [25usize, 50, 100, 200] {
        let chart = chart(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &chart, |b, chart| {
            b.iter(|| render::render(black_box(chart), &Map::new(), &release, &caps));
        });
    }
    group.finish();
    let mut first = c.benchmark_group("render_chart_first");
    let n = 100;
    let charts: Vec<Chart> = (0..FIRST_RENDER_CHARTS)
        .map(|variant| {
            let mut chart = chart(n);
            // A comment makes each chart's templates different bytes.
            let comment = format!("{{{{/* variant {variant} */}}}}");
            chart.templates[1].data = Arc::from(
                [comment.as_bytes(), &chart.templates[1].data]
                    .concat()
                    .into_boxed_slice(),
            );
            chart
        })
        .collect();
    first.bench_with_input(BenchmarkId::from_parameter(n), &charts, |b, charts| {
        let mut next = charts.iter().cycle();
        b.iter(|| {
            let chart = next.next().unwrap_or(&charts[0]);
            render::render(black_box(chart), &Map::new(), &release, &caps)
        });
    });
    first.finish();
}

criterion_group!(benches, bench_render);
criterion_main!(benches);
