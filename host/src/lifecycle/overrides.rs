//! The operator's view of override layers: what each layer of a chart
//! holds, the merged result, and setting or deleting the user layer.

use serde::{Deserialize, Serialize};

use crate::model::AppName;
use crate::model::Layer;
use crate::render;
use crate::store::{OverrideLayer, OverrideRecord, Store};
use crate::values::{self, Map};

use super::Error;
use super::stored::{StoredVersion, from_json, to_json};

/// A request to set a chart's user overrides, as `override set` sends it.
/// The daemon reads no files: the client sends their contents.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OverrideSet {
    /// YAML documents (`-f FILE` contents), merged in order.
    #[serde(default)]
    pub values: Vec<String>,
    /// The names of the `values` documents (their paths), for errors;
    /// missing names read `values document N`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub value_names: Vec<String>,
    /// `--set K=V` expressions, applied after the files.
    #[serde(default)]
    pub set: Vec<String>,
    /// `--set-string K=V` expressions (values stay strings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_string: Vec<String>,
    /// `--set-json K=JSON` expressions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_json: Vec<String>,
    /// `--set-file K=PATH` expressions; each PATH's content is in
    /// `file_contents`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_file: Vec<String>,
    /// The content of each `--set-file` PATH, by PATH.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub file_contents: std::collections::BTreeMap<String, String>,
    /// Merge onto the current user layer instead of replacing it.
    #[serde(default)]
    pub reuse_values: bool,
}

impl OverrideSet {
    /// Whether the request sets nothing at all.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
            && self.set.is_empty()
            && self.set_string.is_empty()
            && self.set_json.is_empty()
            && self.set_file.is_empty()
    }
}

/// One layer of one chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LayerValues {
    /// `chart-defaults`, `static`, `system` or `user`.
    pub layer: String,
    /// The values; `null` when the layer is not set.
    pub values: serde_json::Value,
}

/// Every layer of one chart, lowest first, and the values the chart sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ChartOverrides {
    /// The app.
    pub app: String,
    /// The chart.
    pub chart: String,
    /// The active version whose static and system layers are shown.
    pub version: String,
    /// The layers, lowest precedence first.
    pub layers: Vec<LayerValues>,
    /// The merged values.
    pub merged: serde_json::Value,
    /// User keys the chart's defaults do not have (typos, most likely).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Which layers a chart has set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OverrideSummary {
    /// The chart.
    pub chart: String,
    /// Whether static overrides ship for it.
    pub r#static: bool,
    /// Whether plugins computed system overrides for it.
    pub system: bool,
    /// Whether the operator set user overrides.
    pub user: bool,
}

/// Every chart of the active version with the layers it has.
pub fn summary(
    store: &dyn Store,
    app: &AppName,
    version: &StoredVersion,
) -> Result<Vec<OverrideSummary>, Error> {
    let records = store.list_overrides(app)?;
    let has = |chart: &str, layer: &OverrideLayer| {
        records
            .iter()
            .any(|r: &OverrideRecord| r.chart == chart && &r.layer == layer)
    };
    let stat = OverrideLayer::Static {
        version: version.version.clone(),
    };
    let system = OverrideLayer::System {
        version: version.version.clone(),
    };
    Ok(version
        .metadata
        .charts
        .iter()
        .map(|c| {
            let chart = c.name.as_str();
            OverrideSummary {
                chart: chart.to_owned(),
                r#static: has(chart, &stat),
                system: has(chart, &system),
                user: has(chart, &OverrideLayer::User),
            }
        })
        .collect())
}

/// Each layer of `chart` and the merged values.
pub fn show(
    store: &dyn Store,
    app: &AppName,
    version: &StoredVersion,
    chart: &str,
) -> Result<ChartOverrides, Error> {
    let declared = chart_of(app, version, chart)?;
    let loaded =
        render::chart::load(&version.dir.join(&declared.path)).map_err(|source| Error::Render {
            chart: chart.to_owned(),
            source: Box::new(source),
        })?;
    let defaults = values::Value::Map(loaded.values);
    let mut layers = vec![(Layer::ChartDefaults, defaults)];
    for (layer, key) in [
        (
            Layer::Static,
            OverrideLayer::Static {
                version: version.version.clone(),
            },
        ),
        (
            Layer::System,
            OverrideLayer::System {
                version: version.version.clone(),
            },
        ),
        (Layer::User, OverrideLayer::User),
    ] {
        let value = match store.override_layer(app, chart, &key)? {
            Some(record) => from_json(&record.values)?,
            None => values::Value::Null,
        };
        layers.push((layer, value));
    }
    let merged = to_json(&values::merge_layers(&layers))?;
    let warnings = match (&layers[0].1, &layers[3].1) {
        (values::Value::Map(defaults), values::Value::Map(user)) => {
            let mut found = Vec::new();
            unknown_keys(defaults, user, "", &mut found);
            found
                .into_iter()
                .map(|key| format!("user key {key} is not in the chart's values.yaml (a typo?)"))
                .collect()
        }
        _ => Vec::new(),
    };
    let layers = layers
        .iter()
        .map(|(layer, value)| {
            Ok(LayerValues {
                layer: layer.name().to_owned(),
                values: to_json(value)?,
            })
        })
        .collect::<Result<_, Error>>()?;
    Ok(ChartOverrides {
        app: app.to_string(),
        chart: chart.to_owned(),
        version: version.version.clone(),
        layers,
        merged,
        warnings,
    })
}

/// The paths of `user` keys that a non-empty map of `defaults` at the same
/// place lacks (`global` and empty maps, which charts leave open, are not
/// checked).
fn unknown_keys(defaults: &Map, user: &Map, prefix: &str, found: &mut Vec<String>) {
    if defaults.is_empty() {
        return;
    }
    for (key, value) in user {
        if prefix.is_empty() && key == "global" {
            continue;
        }
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match (defaults.get(key), value) {
            (None, _) => found.push(path),
            (Some(values::Value::Map(d)), values::Value::Map(u)) => {
                unknown_keys(d, u, &path, found);
            }
            _ => {}
        }
    }
}

/// The new user layer `request` asks for, checked: it must set something,
/// every document must be a YAML map, every expression valid `--set`
/// syntax, and no `--set` key may be empty.
pub fn user_values(
    request: &OverrideSet,
    current: Option<&serde_json::Value>,
) -> Result<serde_json::Value, Error> {
    if request.is_empty() {
        return Err(Error::InvalidOverrides {
            reason: "nothing to set: give -f FILE or --set K=V (`capstan override delete` clears a chart's user overrides)".into(),
        });
    }
    let base = match (request.reuse_values, current) {
        (true, Some(current)) => match from_json(current)? {
            values::Value::Map(map) => map,
            _ => Map::new(),
        },
        _ => Map::new(),
    };
    let flags = values::ValueFlags {
        files: request
            .values
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let name = request
                    .value_names
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("values document {}", i + 1));
                (name, text.clone())
            })
            .collect(),
        set: request.set.clone(),
        set_string: request.set_string.clone(),
        set_json: request.set_json.clone(),
        set_file: request.set_file.clone(),
        ..values::ValueFlags::default()
    };
    let contents = |path: &str| {
        request
            .file_contents
            .get(path)
            .cloned()
            .ok_or_else(|| format!("the request carries no content for {path}"))
    };
    let invalid = |e: values::Error| Error::InvalidOverrides {
        reason: match &e {
            values::Error::ValuesFile { name, source } => format!("values file {name}: {source}"),
            values::Error::ValueExpression { flag, expr, source } => {
                format!("{flag} {expr:?}: {source}")
            }
            other => other.to_string(),
        },
    };
    for (flag, exprs) in [
        ("--set", &request.set),
        ("--set-string", &request.set_string),
        ("--set-json", &request.set_json),
        ("--set-file", &request.set_file),
    ] {
        for expr in exprs {
            if has_empty_key(expr, flag != "--set-json") {
                return Err(Error::InvalidOverrides {
                    reason: format!("a {flag} key is empty ({expr:?}); write it as a.b=value"),
                });
            }
        }
    }
    let sets_only = values::ValueFlags {
        files: Vec::new(),
        ..flags.clone()
    };
    let from_sets = values::merge_value_flags(&sets_only, &contents).map_err(invalid)?;
    if let Some(path) = empty_key(&from_sets, "") {
        return Err(Error::InvalidOverrides {
            reason: format!("a --set key is empty ({path:?}); write it as a.b=value"),
        });
    }
    let merged = values::merge_value_flags_onto(base, &flags, &contents).map_err(invalid)?;
    to_json(&values::Value::Map(merged))
}

/// Whether a `--set`-style expression names an empty key or key segment
/// (`=5`, `a.=1`, `.a=1`); with `many`, each comma-separated `K=V` is
/// checked (parts without `=` are list items of the one before).
fn has_empty_key(expr: &str, many: bool) -> bool {
    let parts: Vec<&str> = if many {
        expr.split(',').collect()
    } else {
        vec![expr]
    };
    parts
        .iter()
        .filter_map(|part| part.split_once('='))
        .any(|(key, _)| {
            let key = key.replace("\\.", "");
            key.split('.').any(|segment| segment.trim().is_empty())
        })
}

/// The path of the first empty key in `map`, if any.
fn empty_key(map: &Map, prefix: &str) -> Option<String> {
    for (key, value) in map {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        if key.is_empty() {
            return Some(path);
        }
        if let values::Value::Map(inner) = value
            && let Some(found) = empty_key(inner, &path)
        {
            return Some(found);
        }
    }
    None
}

/// The declared chart, or [`Error::UnknownChart`].
pub fn chart_of<'v>(
    app: &AppName,
    version: &'v StoredVersion,
    chart: &str,
) -> Result<&'v crate::bundle::Chart, Error> {
    version
        .metadata
        .charts
        .iter()
        .find(|c| c.name.as_str() == chart)
        .ok_or_else(|| Error::UnknownChart {
            app: app.to_string(),
            chart: chart.to_owned(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_merge_in_order_then_sets_apply() {
        let request = OverrideSet {
            values: vec!["a: 1\nb: {c: 2}\n".into(), "b: {d: 3}\n".into()],
            set: vec!["a=9".into(), "e.f=x".into()],
            ..OverrideSet::default()
        };
        let v = user_values(&request, None).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": 9, "b": {"c": 2, "d": 3}, "e": {"f": "x"}})
        );
    }

    #[test]
    fn reuse_values_merges_onto_the_current_layer_and_replace_drops_it() {
        let current = serde_json::json!({"keep": true, "n": 1});
        let mut request = OverrideSet {
            values: vec![],
            set: vec!["n=2".into()],
            reuse_values: true,
            ..OverrideSet::default()
        };
        let v = user_values(&request, Some(&current)).unwrap();
        assert_eq!(v, serde_json::json!({"keep": true, "n": 2}));
        request.reuse_values = false;
        let v = user_values(&request, Some(&current)).unwrap();
        assert_eq!(v, serde_json::json!({"n": 2}));
    }

    #[test]
    fn nothing_to_set_and_empty_keys_are_refused() {
        let e = user_values(&OverrideSet::default(), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("nothing to set"), "{e}");
        let reuse_only = OverrideSet {
            reuse_values: true,
            ..OverrideSet::default()
        };
        assert!(user_values(&reuse_only, Some(&serde_json::json!({"a": 1}))).is_err());
        for expr in ["=5", "a.=1", ".a=1"] {
            let request = OverrideSet {
                set: vec![expr.into()],
                ..OverrideSet::default()
            };
            let e = user_values(&request, None).unwrap_err().to_string();
            assert!(e.contains("--set key is empty"), "{expr}: {e}");
        }
    }

    #[test]
    fn set_string_json_and_file_work_as_in_template() {
        let request = OverrideSet {
            set_string: vec!["tag=0123".into()],
            set_json: vec![r#"list=[1,{"a":2}]"#.into()],
            set_file: vec!["cert=/tmp/ca.pem".into()],
            file_contents: [("/tmp/ca.pem".to_owned(), "-----BEGIN, x\n".to_owned())].into(),
            ..OverrideSet::default()
        };
        let v = user_values(&request, None).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"tag": "0123", "list": [1, {"a": 2}], "cert": "-----BEGIN, x\n"})
        );
    }

    #[test]
    fn a_bad_values_file_is_named_with_its_line() {
        let request = OverrideSet {
            values: vec!["a: 1\nb: [1\n".into()],
            value_names: vec!["prod.yaml".into()],
            ..OverrideSet::default()
        };
        let e = user_values(&request, None).unwrap_err().to_string();
        assert!(e.contains("values file prod.yaml"), "{e}");
        assert!(e.contains("line"), "{e}");
    }

    #[test]
    fn user_keys_missing_from_non_empty_default_maps_are_reported() {
        let defaults: Map =
            values::parse_values("replicaCount: 1\nimage: {tag: x}\npodAnnotations: {}\n").unwrap();
        let user: Map = values::parse_values(
            "replicaCont: 2\nimage: {tga: y}\npodAnnotations: {a: b}\nglobal: {x: 1}\n",
        )
        .unwrap();
        let mut found = Vec::new();
        unknown_keys(&defaults, &user, "", &mut found);
        found.sort();
        assert_eq!(found, ["image.tga", "replicaCont"]);
    }

    #[test]
    fn bad_yaml_and_bad_set_syntax_are_named() {
        let bad_yaml = OverrideSet {
            values: vec!["a: [1\n".into()],
            ..OverrideSet::default()
        };
        let e = user_values(&bad_yaml, None).unwrap_err().to_string();
        assert!(e.contains("values document 1"), "{e}");
        let not_a_map = OverrideSet {
            values: vec!["- 1\n".into()],
            ..OverrideSet::default()
        };
        assert!(user_values(&not_a_map, None).is_err());
        let bad_set = OverrideSet {
            set: vec!["noequals".into()],
            ..OverrideSet::default()
        };
        let e = user_values(&bad_set, None).unwrap_err().to_string();
        assert!(e.contains("--set"), "{e}");
    }
}
