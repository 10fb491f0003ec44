//! Rendering a prepared chart tree: builds each chart's top-level object
//! (`.Values`, `.Chart`, `.Release`, `.Capabilities`, `.Files`,
//! `.Subcharts`, `.Template`), parses every template once in Helm's order
//! (or reuses the set parsed from the same sources, see `parsed`), and
//! executes the ones that produce output.

use std::sync::Arc;

use super::Error;
use super::chart::Chart;
use super::lookup::Lookup;
use super::parsed;
use super::template::{Engine, RMap, RValue, TemplateSet, objects::FileSet};
use crate::values::{Map, Value};

/// One template to parse, and whether to execute it.
struct Source<'c> {
    /// Full path: `chart/charts/sub/templates/x.yaml`.
    path: String,
    /// `chart/charts/sub/templates`.
    base_path: String,
    text: &'c Arc<[u8]>,
    /// Index of its chart in the context list.
    chart: usize,
}

/// Renders every template of `chart` (already processed for dependencies)
/// with the final coalesced `values`, `.Capabilities` `caps` and `lookup`
/// answered by `answerer` (an empty map without one). Returns
/// `(path, output)` for each template that is not a partial, with
/// `<no value>` removed as Helm does.
///
/// # Errors
/// [`Error::Parse`] for a template that does not parse and
/// [`Error::Execute`] for one that fails.
pub fn render(
    chart: &Chart,
    values: Map,
    release: &Value,
    caps: &Value,
    answerer: Option<&dyn Lookup>,
) -> Result<Vec<(String, String)>, Error> {
    let mut sources = Vec::new();
    let mut contexts: Vec<Context> = Vec::new();
    // Each chart's `.Files` refers to a file set by index; the engine gets
    // them in the same order once every template is parsed.
    let mut file_sets: Vec<FileSet> = Vec::new();
    collect(
        chart,
        None,
        Value::Map(values),
        release,
        caps,
        &mut sources,
        &mut contexts,
        &mut file_sets,
    );
    let mut order: Vec<usize> = (0..sources.len()).collect();
    // Helm parses deeper paths first, then by reverse name, so that a parent
    // chart's definitions replace a subchart's.
    let depths: Vec<usize> = sources
        .iter()
        .map(|s| s.path.bytes().filter(|b| *b == b'/').count())
        .collect();
    order.sort_by(|&a, &b| {
        let (pa, pb) = (&sources[a].path, &sources[b].path);
        depths[b].cmp(&depths[a]).then_with(|| pb.cmp(pa))
    });
    let key = order
        .iter()
        .map(|&i| (sources[i].path.clone(), sources[i].text.clone()))
        .collect();
    let set = parsed::get_or_parse(key, || parse_in_order(&sources, &order))?;
    let engine = Engine::connected(&set, answerer);
    for files in file_sets {
        engine.register_files(files);
    }
    // Converted once: every template of a chart then shares its maps, as
    // Helm's templates share one values map.
    let (roots, children): (Vec<RValue>, Vec<_>) = contexts
        .into_iter()
        .map(|c| (RValue::from(c.object), c.subcharts))
        .unzip();
    link_subcharts(&roots, &children);
    mark_typed_objects(&engine, &roots);
    let mut out = Vec::new();
    let mut total = 0usize;
    for &i in &order {
        let src = &sources[i];
        let base = src.path.rsplit('/').next().unwrap_or(&src.path);
        if base.starts_with('_') {
            continue;
        }
        let root = &roots[src.chart];
        set_template_object(&engine, root, &src.path, &src.base_path);
        let text =
            engine
                .execute_shared(&src.path, root)
                .map_err(|e| match super::limits::tripped() {
                    Some(kind) => Error::Limit {
                        kind,
                        template: src.path.clone(),
                        message: e.to_string(),
                    },
                    None => Error::Execute {
                        template: src.path.clone(),
                        message: e.to_string(),
                    },
                })?;
        total = total.saturating_add(text.len());
        if let Err(message) = super::limits::check_output(total) {
            return Err(Error::Limit {
                kind: super::limits::LimitKind::Output,
                template: src.path.clone(),
                message: format!("template: {}: {message}", src.path),
            });
        }
        out.push((src.path.clone(), without_no_value(text)));
    }
    Ok(out)
}

/// Sets `.Template` to a new `{Name, BasePath}`, as Helm does for each
/// template: a `common.Values`, with its methods.
fn set_template_object(engine: &Engine<'_>, root: &RValue, name: &str, base_path: &str) {
    if let RValue::Map(root) = root {
        let mut t = RMap::new();
        t.insert("Name".into(), RValue::String(name.to_string()));
        t.insert("BasePath".into(), RValue::String(base_path.to_string()));
        let t = RValue::new_map(t);
        engine.mark_values(&t);
        root.borrow_mut().insert("Template".into(), t);
    }
}

/// Tells the engine which maps have a Go type with methods: each chart's
/// `.Values` is a `common.Values` (a subchart's too, Helm's `Table`
/// result), and `.Capabilities.KubeVersion` prints through its `String`
/// method (the version without the text after its numbers).
fn mark_typed_objects(engine: &Engine<'_>, roots: &[RValue]) {
    let entry = |v: &RValue, key: &str| v.plain_map().and_then(|m| m.borrow().get(key).cloned());
    for root in roots {
        if let Some(values) = entry(root, "Values") {
            engine.mark_values(&values);
        }
    }
    let caps = roots.first().and_then(|root| entry(root, "Capabilities"));
    if let Some(caps) = &caps {
        engine.mark_capabilities(caps);
    }
    if let Some(kube) = caps.as_ref().and_then(|caps| entry(caps, "KubeVersion"))
        && let Some(RValue::String(version)) = entry(&kube, "Version")
    {
        engine.mark_stringer(&kube, normalized_kube_version(&version));
    }
}

/// What Helm's `KubeVersion.String` prints: `v` and the version's numbers
/// (`v1.33.4` for `v1.33.4-gke.1245000`), as Kubernetes' `ParseGeneric`
/// reads them.
pub fn normalized_kube_version(version: &str) -> String {
    let trimmed = version.trim_start();
    let bare = trimmed.strip_prefix('v').unwrap_or(trimmed);
    // The leading `N(.N)*`; each number without its leading zeros.
    let mut numbers: Vec<String> = Vec::new();
    for part in bare.split('.') {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() {
            break;
        }
        let n = digits.trim_start_matches('0');
        numbers.push(if n.is_empty() { "0".into() } else { n.into() });
        if digits.len() != part.len() {
            break;
        }
    }
    format!("v{}", numbers.join("."))
}

/// The text with every `<no value>` removed, as Helm does after rendering.
fn without_no_value(text: String) -> String {
    if text.contains("<no value>") {
        text.replace("<no value>", "")
    } else {
        text
    }
}

/// Parses every source, in `order`, into one set.
fn parse_in_order(sources: &[Source<'_>], order: &[usize]) -> Result<TemplateSet, Error> {
    let mut set = TemplateSet::new();
    for &i in order {
        let src = &sources[i];
        // Valid UTF-8 (the usual case) is checked by the fast path.
        let text = match std::str::from_utf8(src.text) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(src.text),
        };
        set.add(&src.path, &text).map_err(|e| Error::Parse {
            template: src.path.clone(),
            message: e.to_string(),
        })?;
    }
    Ok(set)
}

/// A chart's top-level object and, for each of its subcharts, the index of
/// the subchart's context and its name.
struct Context {
    object: Value,
    subcharts: Vec<(usize, String)>,
}

/// Makes the contexts share what Helm's share (`recAllTpls`): a subchart's
/// `.Values` is its parent's `.Values.NAME` map itself (when that is a
/// map), `.Release` and `.Capabilities` are the parent's, and the parent's
/// `.Subcharts.NAME` is the subchart's context. `children` lists, for each
/// context, its subcharts' (index, name); parents come after their
/// children, so walking from the end links a parent before its children.
fn link_subcharts(roots: &[RValue], children: &[Vec<(usize, String)>]) {
    let entry = |v: &RValue, key: &str| v.plain_map().and_then(|m| m.borrow().get(key).cloned());
    for (parent, subs) in roots.iter().zip(children).rev() {
        for (index, name) in subs {
            let Some(RValue::Map(child)) = roots.get(*index) else {
                continue;
            };
            let shared_values = entry(parent, "Values")
                .and_then(|values| entry(&values, name))
                .filter(|v| v.plain_map().is_some());
            let mut child_map = child.borrow_mut();
            if let Some(values) = shared_values {
                child_map.insert("Values".into(), values);
            }
            for key in ["Release", "Capabilities"] {
                if let Some(v) = entry(parent, key) {
                    child_map.insert(key.into(), v);
                }
            }
            drop(child_map);
            if let Some(RValue::Map(subcharts)) = entry(parent, "Subcharts") {
                subcharts
                    .borrow_mut()
                    .insert(name.clone(), RValue::Map(child.clone()));
            }
        }
    }
}

/// Builds the top-level object of `chart` and those of its subcharts
/// (children first, so `.Subcharts` can hold them), and lists its
/// templates. Returns the index of `chart`'s object in `contexts`.
#[allow(clippy::too_many_arguments)]
fn collect<'c>(
    chart: &'c Chart,
    parent_path: Option<&str>,
    values: Value,
    release: &Value,
    caps: &Value,
    sources: &mut Vec<Source<'c>>,
    contexts: &mut Vec<Context>,
    file_sets: &mut Vec<FileSet>,
) -> usize {
    let full_path = match parent_path {
        Some(p) => format!("{p}/charts/{}", chart.name()),
        None => chart.name().to_string(),
    };
    let mut subcharts = Map::new();
    let mut children = Vec::new();
    for sub in &chart.subcharts {
        // Empty here: `link_subcharts` makes the subchart's `.Values` the
        // parent's `.Values.NAME` map itself when that is a map (a copy
        // would be thrown away), else it stays this empty map.
        let sub_values = Value::Map(Map::new());
        let index = collect(
            sub,
            Some(&full_path),
            sub_values,
            release,
            caps,
            sources,
            contexts,
            file_sets,
        );
        children.push((index, sub.name().to_string()));
        // A place kept: `link_subcharts` puts the child's shared context here.
        subcharts.insert(sub.name().to_string(), Value::Null);
    }
    let files: FileSet = chart
        .files
        .iter()
        .map(|f| (f.name.clone(), f.data.clone()))
        .collect();
    let files_empty = files.is_empty();
    file_sets.push(files);
    let files_id = file_sets.len() - 1;
    let mut ctx = Map::new();
    ctx.insert("Chart".into(), chart_object(chart, parent_path.is_none()));
    ctx.insert(
        "Files".into(),
        super::template::objects::files_value(files_id, files_empty),
    );
    ctx.insert("Release".into(), release.clone());
    ctx.insert("Capabilities".into(), caps.clone());
    ctx.insert("Values".into(), values);
    ctx.insert("Subcharts".into(), Value::Map(subcharts));
    contexts.push(Context {
        object: Value::Map(ctx),
        subcharts: children,
    });
    let index = contexts.len() - 1;
    for t in &chart.templates {
        // Library charts contribute only their partials.
        let base = t.name.rsplit('/').next().unwrap_or(&t.name);
        if chart.is_library() && !base.starts_with('_') {
            continue;
        }
        sources.push(Source {
            path: format!("{full_path}/{}", t.name),
            base_path: format!("{full_path}/templates"),
            text: &t.data,
            chart: index,
        });
    }
    index
}

/// `.Chart`: `Chart.yaml` with Go's field names and zero values.
pub fn chart_object(chart: &Chart, is_root: bool) -> Value {
    let meta = &chart.metadata;
    let s = |k: &str| match meta.get(k) {
        Some(Value::Null) | None => Value::String(String::new()),
        Some(Value::String(x)) => Value::String(x.clone()),
        Some(other) => Value::String(other.to_string()),
    };
    let list = |k: &str| match meta.get(k) {
        Some(Value::List(l)) => Value::List(l.clone()),
        _ => Value::List(Vec::new()),
    };
    let mut m = Map::new();
    m.insert("Name".into(), s("name"));
    m.insert("Home".into(), s("home"));
    m.insert("Sources".into(), list("sources"));
    m.insert("Version".into(), s("version"));
    m.insert("Description".into(), s("description"));
    m.insert("Keywords".into(), list("keywords"));
    m.insert(
        "Maintainers".into(),
        renamed_list(
            meta.get("maintainers"),
            &[("name", "Name"), ("email", "Email"), ("url", "URL")],
        ),
    );
    m.insert("Icon".into(), s("icon"));
    m.insert("APIVersion".into(), s("apiVersion"));
    m.insert("Condition".into(), s("condition"));
    m.insert("Tags".into(), s("tags"));
    m.insert("AppVersion".into(), s("appVersion"));
    m.insert(
        "Deprecated".into(),
        Value::Bool(matches!(meta.get("deprecated"), Some(Value::Bool(true)))),
    );
    // A `map[string]string` in Go: nil when Chart.yaml sets none (`toYaml`
    // prints `null`), empty for `annotations: {}`.
    m.insert(
        "Annotations".into(),
        match meta.get("annotations") {
            Some(Value::Map(a)) => Value::Map(a.clone()),
            _ => Value::nil_map(),
        },
    );
    m.insert("KubeVersion".into(), s("kubeVersion"));
    m.insert(
        "Dependencies".into(),
        renamed_list(
            meta.get("dependencies"),
            &[
                ("name", "Name"),
                ("version", "Version"),
                ("repository", "Repository"),
                ("condition", "Condition"),
                ("tags", "Tags"),
                ("enabled", "Enabled"),
                ("import-values", "ImportValues"),
                ("alias", "Alias"),
            ],
        ),
    );
    m.insert("Type".into(), s("type"));
    m.insert("IsRoot".into(), Value::Bool(is_root));
    Value::Map(m)
}

fn renamed_list(v: Option<&Value>, names: &[(&str, &str)]) -> Value {
    let Some(Value::List(items)) = v else {
        return Value::List(Vec::new());
    };
    Value::List(
        items
            .iter()
            .map(|item| {
                // A Go struct has every field, at its zero value when unset.
                let mut m = Map::new();
                for (from, to) in names {
                    let value = match item.as_map().and_then(|im| im.get(*from)) {
                        Some(x) if !matches!(x, Value::Null) => x.clone(),
                        _ => match *to {
                            "Tags" | "ImportValues" => Value::List(Vec::new()),
                            "Enabled" => Value::Bool(false),
                            _ => Value::String(String::new()),
                        },
                    };
                    m.insert((*to).to_string(), value);
                }
                Value::Map(m)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn kube_version_strings_as_helm_prints_them() {
        use super::normalized_kube_version as n;
        assert_eq!(n("v1.30.0"), "v1.30.0");
        assert_eq!(n("v1.30.02-gke.1"), "v1.30.2");
        assert_eq!(n("1.31"), "v1.31");
        assert_eq!(n("v1.33.4+k3s1"), "v1.33.4");
    }
}
