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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverrideSet {
    /// YAML documents (`-f FILE` contents), merged in order.
    #[serde(default)]
    pub values: Vec<String>,
    /// `--set K=V` expressions, applied after the files.
    #[serde(default)]
    pub set: Vec<String>,
    /// Merge onto the current user layer instead of replacing it.
    #[serde(default)]
    pub reuse_values: bool,
}

/// One layer of one chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerValues {
    /// `chart-defaults`, `static`, `system` or `user`.
    pub layer: String,
    /// The values; `null` when the layer is not set.
    pub values: serde_json::Value,
}

/// Every layer of one chart, lowest first, and the values the chart sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// Which layers a chart has set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    })
}

/// The new user layer `request` asks for, checked: every document must
/// be a YAML map and every expression valid `--set` syntax.
pub fn user_values(
    request: &OverrideSet,
    current: Option<&serde_json::Value>,
) -> Result<serde_json::Value, Error> {
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
            .map(|(i, text)| (format!("values document {}", i + 1), text.clone()))
            .collect(),
        set: request.set.clone(),
        ..values::ValueFlags::default()
    };
    let no_files = |path: &str| {
        Err(format!(
            "cannot read {path}: files are not read by the daemon"
        ))
    };
    let merged = values::merge_value_flags_onto(base, &flags, &no_files).map_err(|e| {
        Error::InvalidOverrides {
            reason: match &e {
                values::Error::ValuesFile { name, source } => format!("{name}: {source}"),
                values::Error::ValueExpression { flag, expr, source } => {
                    format!("{flag} {expr:?}: {source}")
                }
                other => other.to_string(),
            },
        }
    })?;
    to_json(&values::Value::Map(merged))
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
            reuse_values: false,
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
        };
        let v = user_values(&request, Some(&current)).unwrap();
        assert_eq!(v, serde_json::json!({"keep": true, "n": 2}));
        request.reuse_values = false;
        let v = user_values(&request, Some(&current)).unwrap();
        assert_eq!(v, serde_json::json!({"n": 2}));
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
