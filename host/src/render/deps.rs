//! Dependency processing before rendering, as Helm's
//! `ProcessDependencies` does: aliases, `condition`s and `tags` decide which
//! subcharts stay, and `import-values` copy child values into the parent.

use super::Error;
use super::chart::Chart;
use crate::values::{self, ChartValues, Map, Value};

/// The coalescing view of a chart tree.
pub fn chart_values(chart: &Chart) -> ChartValues<'_> {
    ChartValues {
        name: chart.name(),
        defaults: &chart.values,
        dependencies: chart.subcharts.iter().map(chart_values).collect(),
    }
}

/// Applies aliases, conditions, tags and import-values to `chart` for the
/// user-supplied values `user`.
///
/// # Errors
/// [`Error::Values`] when coalescing fails (a subchart's values are not a map).
pub fn process(chart: &mut Chart, user: &Map) -> Result<(), Error> {
    process_enabled(chart, user, "")?;
    process_imports(chart)
}

fn process_enabled(chart: &mut Chart, vals: &Map, path: &str) -> Result<(), Error> {
    if chart.dependencies.is_empty() {
        return Ok(());
    }
    let existing = std::mem::take(&mut chart.subcharts);
    // Helm's processDependencyEnabled: a vendored chart that no dependency
    // names (at a compatible version) stays as it is; every dependency gets
    // its own copy of the first vendored chart of its name and a compatible
    // version (getAliasDependency), renamed to its alias; the vendored
    // original is not kept beside the copies.
    let mut subcharts: Vec<Chart> = existing
        .iter()
        .filter(|sub| !chart.dependencies.iter().any(|d| provides(sub, d)))
        .cloned()
        .collect();
    for dep in &mut chart.dependencies {
        if let Some(sub) = existing.iter().find(|s| provides(s, dep)) {
            let mut copy = sub.clone();
            if !dep.alias.is_empty() {
                copy.metadata
                    .insert("name".into(), Value::String(dep.alias.clone()));
            }
            subcharts.push(copy);
        }
        if !dep.alias.is_empty() {
            dep.name = dep.alias.clone();
        }
    }
    chart.subcharts = subcharts;
    let cvals = values::coalesce_chart_values(&chart_values(chart), vals)
        .map_err(|source| Error::Values {
            what: format!("values of chart {:?}", chart.name()),
            source,
        })?
        .values;
    let disabled: Vec<String> = chart
        .dependencies
        .iter()
        .filter(|dep| !enabled(dep, &cvals, path))
        .map(|dep| dep.name.clone())
        .collect();
    chart
        .subcharts
        .retain(|s| !disabled.iter().any(|d| d == s.name()));
    chart.dependencies.retain(|d| !disabled.contains(&d.name));
    set_dependency_metadata(chart);
    for sub in &mut chart.subcharts {
        let sub_path = format!("{path}{}.", sub.name());
        process_enabled(sub, &cvals, &sub_path)?;
    }
    Ok(())
}

/// Whether the vendored chart `sub` is the one `dep` asks for: its name,
/// at a version within `dep`'s range (Helm's `IsCompatibleRange`, false
/// when either does not parse; an empty range takes any release).
fn provides(sub: &Chart, dep: &super::chart::Dependency) -> bool {
    if sub.name() != dep.name {
        return false;
    }
    let version = match sub.metadata.get("version") {
        Some(Value::String(v)) => v.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let Some(compare) = super::funcs::lookup("semverCompare") else {
        return false;
    };
    matches!(
        compare(&[Value::String(dep.version.clone()), Value::String(version)]),
        Ok(Value::Bool(true))
    )
}

/// `Chart.yaml`'s `dependencies` as Helm leaves them after processing,
/// which is what `.Chart.Dependencies` shows: the enabled ones only, each
/// named after its alias and marked enabled, with its `import-values` as
/// `{child, parent}` maps once they have been processed.
fn set_dependency_metadata(chart: &mut Chart) {
    let list = chart
        .dependencies
        .iter()
        .map(|d| {
            let mut m = Map::new();
            m.insert("name".into(), Value::String(d.name.clone()));
            m.insert("version".into(), Value::String(d.version.clone()));
            m.insert("repository".into(), Value::String(d.repository.clone()));
            m.insert("condition".into(), Value::String(d.condition.clone()));
            m.insert(
                "tags".into(),
                Value::List(d.tags.iter().cloned().map(Value::String).collect()),
            );
            m.insert("enabled".into(), Value::Bool(true));
            m.insert("import-values".into(), Value::List(d.import_values.clone()));
            m.insert("alias".into(), Value::String(d.alias.clone()));
            Value::Map(m)
        })
        .collect();
    chart
        .metadata
        .insert("dependencies".into(), Value::List(list));
}

/// An `import-values` entry as Helm reads it: `(child, parent)` for a
/// `{child, parent}` map (a missing half is Go's `<nil>`) or for a string
/// `s` (`exports.s` into the parent's root); `None` for anything else.
fn import_paths(entry: &Value) -> Option<(String, String)> {
    let go = |v: Option<&Value>| match v {
        None | Some(Value::Null) => "<nil>".to_string(),
        Some(v) => v.to_string(),
    };
    match entry {
        Value::Map(m) => Some((go(m.get("child")), go(m.get("parent")))),
        Value::String(s) => Some((format!("exports.{s}"), ".".to_string())),
        _ => None,
    }
}

/// Helm's tags then conditions: a condition that resolves to a boolean
/// wins; otherwise tags decide; otherwise the dependency is enabled.
fn enabled(dep: &super::chart::Dependency, cvals: &Map, path: &str) -> bool {
    let mut on = true;
    if let Some(Value::Map(tags)) = cvals.get("tags") {
        let (mut has_true, mut has_false) = (false, false);
        for tag in &dep.tags {
            match tags.get(tag) {
                Some(Value::Bool(true)) => has_true = true,
                Some(Value::Bool(false)) => has_false = true,
                _ => {}
            }
        }
        if !has_true && has_false {
            on = false;
        }
    }
    for cond in dep.condition.trim().split(',') {
        let cond = cond.trim();
        if cond.is_empty() {
            continue;
        }
        if let Some(Value::Bool(b)) = path_value(cvals, &format!("{path}{cond}")) {
            on = *b;
            break;
        }
    }
    on
}

/// Helm's `Values.PathValue`: the value at a dotted path.
pub fn path_value<'a>(vals: &'a Map, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.').peekable();
    let mut cur = vals;
    while let Some(part) = parts.next() {
        let v = cur.get(part)?;
        if parts.peek().is_none() {
            return Some(v);
        }
        cur = v.as_map()?;
    }
    None
}

fn table<'a>(vals: &'a Map, path: &str) -> Option<&'a Map> {
    let mut cur = vals;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        cur = cur.get(part)?.as_map()?;
    }
    Some(cur)
}

fn path_to_map(path: &str, data: Map) -> Map {
    if path == "." || path.is_empty() {
        return data;
    }
    let mut out = data;
    for part in path.split('.').filter(|p| !p.is_empty()).rev() {
        let mut m = Map::new();
        m.insert(part.to_string(), Value::Map(out));
        out = m;
    }
    out
}

/// Helm's `processDependencyImportValues` (children first): every chart
/// that declares dependencies gets, as its own values, its defaults
/// coalesced with its subcharts' (nulls trimmed), under the values its
/// `import-values` copy up from children.
fn process_imports(chart: &mut Chart) -> Result<(), Error> {
    for sub in &mut chart.subcharts {
        process_imports(sub)?;
    }
    if chart.dependencies.is_empty() {
        return Ok(());
    }
    let cvals = values::coalesce_chart_values(&chart_values(chart), &Map::new())
        .map_err(|source| Error::Values {
            what: format!("values of chart {:?}", chart.name()),
            source,
        })?
        .values;
    let cvals = trim_nulls(cvals);
    let mut imported = Value::Map(Map::new());
    for dep in &mut chart.dependencies {
        let mut normalized = Vec::new();
        for iv in &dep.import_values {
            let Some((child, parent)) = import_paths(iv) else {
                continue;
            };
            let mut pair = Map::new();
            pair.insert("child".into(), Value::String(child.clone()));
            pair.insert("parent".into(), Value::String(parent.clone()));
            normalized.push(Value::Map(pair));
            let Some(found) = table(&cvals, &format!("{}.{child}", dep.name)) else {
                continue;
            };
            let addition = Value::Map(path_to_map(&parent, found.clone()));
            imported = values::coalesce(&imported, &addition);
        }
        dep.import_values = normalized;
    }
    set_dependency_metadata(chart);
    // The parent's own values win over imported ones.
    if let Value::Map(m) = values::merge_values(&imported, &Value::Map(cvals)) {
        chart.values = m;
    }
    Ok(())
}

/// Helm's `trimNilValues`: drops `null` entries from maps, recursively.
fn trim_nulls(map: Map) -> Map {
    map.into_iter()
        .filter(|(_, v)| !matches!(v, Value::Null))
        .map(|(k, v)| match v {
            Value::Map(inner) => (k, Value::Map(trim_nulls(inner))),
            other => (k, other),
        })
        .collect()
}
