//! Helm's rules for combining values: `CoalesceValues`/`MergeValues` and
//! the table coalescing under them (Helm's `pkg/chart/common/util/
//! coalesce.go`), the `-f` file merge (`loader.MergeMaps`), and how
//! `global` values travel from a chart to its subcharts.
//!
//! The two families differ on `null`:
//! - coalescing (what `helm template` finally does) lets a `null` from a
//!   higher source delete the key a lower source set;
//! - merging (`MergeMaps`, `MergeValues`) keeps the `null`, so it can still
//!   delete a chart default when coalescing happens later.
//!
//! Helm prints a warning and keeps the higher value when a map meets a
//! non-map; the chart-level functions return those warnings.

use super::{Error, Map, Value};

/// The key under which Helm passes global values down to subcharts.
pub const GLOBAL_KEY: &str = "global";

/// Helm's `CoalesceTables` for two values: `overlay` wins, maps merge
/// deeply, scalars and lists replace, and a `null` in `overlay` deletes
/// the key when `base` had a non-null value for it (a `null` for a key
/// `base` lacks stays `null`).
///
/// At the top level a `null` overlay means "nothing to add" and gives
/// `base`; a non-map overlay replaces a map base.
pub fn coalesce(base: &Value, overlay: &Value) -> Value {
    combine(base, overlay, false)
}

/// Helm's `MergeTables` for two values: like [`coalesce`], but a `null` in
/// `overlay` is kept (it replaces the base value) instead of deleting.
pub fn merge_values(base: &Value, overlay: &Value) -> Value {
    combine(base, overlay, true)
}

fn combine(base: &Value, overlay: &Value, merge: bool) -> Value {
    match (base, overlay) {
        (Value::Map(src), Value::Map(dst)) => {
            let mut dst = dst.clone();
            coalesce_tables(&mut dst, src.clone(), "", merge, &mut Vec::new());
            Value::Map(dst)
        }
        (_, Value::Null) => base.clone(),
        _ => overlay.clone(),
    }
}

/// Helm's `MergeMaps`, used to combine `-f` files in order and the
/// documents of one values file: `b` wins; a map in `b` merges into a map
/// in `a`; anything else in `b` (a `null` included) replaces.
pub fn merge_maps(a: &Map, b: &Map) -> Map {
    let mut out = a.clone();
    merge_maps_into(&mut out, b);
    out
}

fn merge_maps_into(out: &mut Map, b: &Map) {
    for (key, value) in b {
        if let (Value::Map(incoming), Some(Value::Map(existing))) = (value, out.get_mut(key)) {
            merge_maps_into(existing, incoming);
            continue;
        }
        out.insert(key.clone(), value.clone());
    }
}

/// A chart as coalescing sees it.
#[derive(Debug, Clone)]
pub struct ChartValues<'a> {
    /// The chart's name as its parent's values refer to it: the alias
    /// when the dependency has one (Helm renames aliased subcharts before
    /// coalescing).
    pub name: &'a str,
    /// The chart's own `values.yaml`.
    pub defaults: &'a Map,
    /// The enabled subcharts, in `Chart.yaml` order.
    pub dependencies: Vec<ChartValues<'a>>,
}

/// The result of coalescing a chart tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Coalesced {
    /// The values the chart's templates see as `.Values`; each subchart's
    /// under its name.
    pub values: Map,
    /// What Helm would log while coalescing (a map meeting a non-map,
    /// globals that are not maps), in order.
    pub warnings: Vec<String>,
}

/// Helm's `CoalesceValues(chart, user)`: the user-supplied values (the
/// `-f` files and `--set` flags already merged) over the chart's
/// defaults, then each subchart's defaults under the values its parent
/// gives it, with `global` copied down first.
///
/// Nulls: a user `null` deletes a default; `null`s in any chart's own
/// defaults (the top chart's, a subchart's, inside maps and `global`) are
/// dropped, so a key whose default is `null` is absent from `.Values`
/// unless a higher source sets it (Helm 4.3's `coalesceValues` and
/// `cleanNilValues`).
///
/// Not reproduced: Go shares nested global maps between parent and
/// subchart, so a subchart default can leak into the parent's globals
/// three or more levels deep; here each chart gets its own copy.
///
/// # Errors
///
/// [`Error::SubchartValuesNotAMap`] when the value under a subchart's name
/// is not a map (Helm's "type mismatch").
pub fn coalesce_chart_values(chart: &ChartValues<'_>, user: &Map) -> Result<Coalesced, Error> {
    coalesce_chart_tree(chart, user, false)
}

/// Helm's `MergeValues(chart, user)`: [`coalesce_chart_values`] that keeps
/// every `null` instead of deleting.
///
/// # Errors
///
/// As [`coalesce_chart_values`].
pub fn merge_chart_values(chart: &ChartValues<'_>, user: &Map) -> Result<Coalesced, Error> {
    coalesce_chart_tree(chart, user, true)
}

fn coalesce_chart_tree(
    chart: &ChartValues<'_>,
    user: &Map,
    merge: bool,
) -> Result<Coalesced, Error> {
    let mut warnings = Vec::new();
    let mut values = user.clone();
    coalesce_chart(chart, &mut values, "", merge, &mut warnings)?;
    Ok(Coalesced { values, warnings })
}

/// Helm's `coalesce`: the chart's own defaults, then its dependencies.
fn coalesce_chart(
    chart: &ChartValues<'_>,
    dest: &mut Map,
    prefix: &str,
    merge: bool,
    warnings: &mut Vec<String>,
) -> Result<(), Error> {
    coalesce_defaults(chart, dest, prefix, merge, warnings);
    let sub_prefix = concat_prefix(prefix, chart.name);
    for sub in &chart.dependencies {
        let mut sub_values = match dest.remove(sub.name) {
            None => Map::new(),
            Some(Value::Map(m)) => m,
            Some(other) => {
                let found = other.kind_name();
                dest.insert(sub.name.to_string(), other);
                return Err(Error::SubchartValuesNotAMap {
                    chart: sub.name.to_string(),
                    found,
                });
            }
        };
        coalesce_globals_into(&mut sub_values, dest, &sub_prefix, warnings);
        let result = coalesce_chart(sub, &mut sub_values, &sub_prefix, merge, warnings);
        dest.insert(sub.name.to_string(), Value::Map(sub_values));
        result?;
    }
    Ok(())
}

/// Helm's `coalesceValues`: fills `dest` from the chart's defaults.
fn coalesce_defaults(
    chart: &ChartValues<'_>,
    dest: &mut Map,
    prefix: &str,
    merge: bool,
    warnings: &mut Vec<String>,
) {
    let sub_prefix = concat_prefix(prefix, chart.name);
    for (key, default) in chart.defaults {
        match dest.get_mut(key) {
            Some(Value::Null) if !merge => {
                dest.remove(key);
            }
            Some(Value::Map(user_table)) => match default {
                Value::Map(default_table) => {
                    let merge = merge || chart.dependencies.iter().any(|d| d.name == key);
                    let mut src = default_table.clone();
                    if !merge {
                        clean_nulls(&mut src);
                    }
                    let full_key = concat_prefix(&sub_prefix, key);
                    coalesce_tables(user_table, src, &full_key, merge, warnings);
                }
                Value::Null => {}
                _ => warnings.push(format!(
                    "warning: skipped value for {sub_prefix}.{key}: Not a table."
                )),
            },
            Some(_) => {}
            None => {
                let mut default = default.clone();
                if !merge {
                    match &mut default {
                        Value::Null => continue,
                        Value::Map(m) => clean_nulls(m),
                        _ => {}
                    }
                }
                dest.insert(key.clone(), default);
            }
        }
    }
}

/// Helm's `coalesceTablesFullKey(dst, src)`: `dst` is authoritative.
fn coalesce_tables(
    dst: &mut Map,
    mut src: Map,
    prefix: &str,
    merge: bool,
    warnings: &mut Vec<String>,
) {
    let src_non_null: Vec<String> = src
        .iter()
        .filter(|(_, v)| !matches!(v, Value::Null))
        .map(|(k, _)| k.clone())
        .collect();
    for (key, value) in dst.iter() {
        if matches!(value, Value::Null) {
            src.insert(key.clone(), Value::Null);
        }
    }
    for (key, value) in src {
        let full_key = concat_prefix(prefix, &key);
        match dst.get_mut(&key) {
            Some(Value::Null) if !merge && src_non_null.binary_search(&key).is_ok() => {
                dst.remove(&key);
            }
            None => {
                dst.insert(key, value);
            }
            Some(Value::Map(dst_table)) => match value {
                Value::Map(src_table) => coalesce_tables(dst_table, src_table, &full_key, merge, warnings),
                Value::Null => {}
                other => warnings
                    .push(format!("warning: destination for {full_key} is a table. Ignoring non-table value ({other})")),
            },
            Some(existing) => {
                if let Value::Map(_) = value {
                    warnings.push(format!(
                        "warning: cannot overwrite table with non table for {full_key} ({value})"
                    ));
                }
                let _ = existing;
            }
        }
    }
}

/// Helm's `coalesceGlobals(subchart, parent)`: copies the parent's
/// `global` map into the subchart's values. The parent's globals win; a
/// global map merges with the subchart's map of the same name (the
/// parent's entries win there too); a map never replaces a non-map or the
/// reverse (Helm logs and skips those).
///
/// Returns the warnings Helm would log.
pub fn coalesce_globals(parent: &Map, subchart: &mut Map) -> Vec<String> {
    let mut warnings = Vec::new();
    coalesce_globals_into(subchart, parent, "", &mut warnings);
    warnings
}

fn coalesce_globals_into(dest: &mut Map, src: &Map, prefix: &str, warnings: &mut Vec<String>) {
    let (mut dest_globals, src_globals) = match (globals_of(dest), globals_of(src)) {
        (Some(d), Some(s)) => (d, s),
        (None, _) => {
            warnings.push(format!(
                "warning: skipping globals because destination {GLOBAL_KEY} is not a table."
            ));
            return;
        }
        (_, None) => {
            warnings.push(format!(
                "warning: skipping globals because source {GLOBAL_KEY} is not a table."
            ));
            return;
        }
    };
    for (key, value) in src_globals {
        match (value, dest_globals.get_mut(&key)) {
            (Value::Map(parent_table), None) => {
                dest_globals.insert(key, Value::Map(parent_table));
            }
            (Value::Map(mut parent_table), Some(Value::Map(sub_table))) => {
                let sub_table = std::mem::take(sub_table);
                coalesce_tables(
                    &mut parent_table,
                    sub_table,
                    &concat_prefix(prefix, &key),
                    true,
                    warnings,
                );
                dest_globals.insert(key, Value::Map(parent_table));
            }
            (Value::Map(_), Some(_)) => {
                warnings.push(format!(
                    "Conflict: cannot merge map onto non-map for {key:?}. Skipping."
                ));
            }
            (_, Some(Value::Map(_))) => warnings.push(format!("key {key} is table. Skipping")),
            (value, _) => {
                dest_globals.insert(key, value);
            }
        }
    }
    dest.insert(GLOBAL_KEY.to_string(), Value::Map(dest_globals));
}

/// A copy of the `global` map of some values (empty when absent), or
/// `None` when `global` is not a map.
fn globals_of(values: &Map) -> Option<Map> {
    match values.get(GLOBAL_KEY) {
        None => Some(Map::new()),
        Some(Value::Map(m)) => Some(m.clone()),
        Some(_) => None,
    }
}

/// Helm's `cleanNilValues`: drops `null` entries, recursively through maps.
fn clean_nulls(map: &mut Map) {
    map.retain(|_, v| !matches!(v, Value::Null));
    for value in map.values_mut() {
        if let Value::Map(inner) = value {
            clean_nulls(inner);
        }
    }
}

fn concat_prefix(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}.{b}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::test_support::yaml_map as y;

    fn v(text: &str) -> Value {
        Value::Map(y(text))
    }

    #[test]
    fn maps_merge_scalars_and_lists_replace() {
        let base = v("a: 1\nb: {c: 2, d: [1, 2]}\ne: x\n");
        let overlay = v("b: {d: [3]}\ne: {f: 1}\n");
        assert_eq!(
            coalesce(&base, &overlay),
            v("a: 1\nb: {c: 2, d: [3]}\ne: {f: 1}\n")
        );
    }

    #[test]
    fn null_deletes_only_what_base_had() {
        let base = v("a: 1\nb: {c: 2, d: 3}\n");
        let overlay = v("a: null\nb: {c: null}\nz: null\n");
        assert_eq!(coalesce(&base, &overlay), v("b: {d: 3}\nz: null\n"));
        assert_eq!(
            merge_values(&base, &overlay),
            v("a: null\nb: {c: null, d: 3}\nz: null\n")
        );
    }

    #[test]
    fn a_table_is_not_overwritten_by_a_non_table_and_vice_versa() {
        // Helm warns and keeps the higher-precedence value in both cases.
        assert_eq!(coalesce(&v("a: {b: 1}\n"), &v("a: x\n")), v("a: x\n"));
        assert_eq!(coalesce(&v("a: x\n"), &v("a: {b: 1}\n")), v("a: {b: 1}\n"));
        let mut warnings = Vec::new();
        let mut dst = y("a: x\n");
        coalesce_tables(&mut dst, y("a: {b: 1}\n"), "", false, &mut warnings);
        assert_eq!(dst, y("a: x\n"));
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("cannot overwrite table with non table for a"),
            "{warnings:?}"
        );
    }

    #[test]
    fn top_level_null_and_scalars() {
        assert_eq!(coalesce(&v("a: 1\n"), &Value::Null), v("a: 1\n"));
        assert_eq!(coalesce(&Value::Null, &v("a: 1\n")), v("a: 1\n"));
        assert_eq!(coalesce(&v("a: 1\n"), &Value::from("x")), Value::from("x"));
    }

    #[test]
    fn merge_maps_keeps_nulls_and_merges_maps() {
        let a = y("a: {b: 1, c: 2}\nd: [1]\ne: {f: 1}\n");
        let b = y("a: {b: null}\nd: [2]\ne: x\ng: {h: 1}\n");
        assert_eq!(
            merge_maps(&a, &b),
            y("a: {b: null, c: 2}\nd: [2]\ne: x\ng: {h: 1}\n")
        );
        // A map in b over a non-map in a replaces it.
        assert_eq!(
            merge_maps(&y("a: 1\n"), &y("a: {b: 1}\n")),
            y("a: {b: 1}\n")
        );
    }

    #[test]
    fn chart_values_coalesce_user_over_defaults() {
        let defaults =
            y("replicas: 1\nimage: {repo: nginx, tag: '1.0'}\nremoveMe: 5\ndefaultNull: null\n");
        let chart = ChartValues {
            name: "web",
            defaults: &defaults,
            dependencies: vec![],
        };
        let user = y("replicas: 3\nimage: {tag: '2.0'}\nremoveMe: null\n");
        let out = coalesce_chart_values(&chart, &user).unwrap();
        // A default of null is no value (Helm 4.3 drops it).
        assert_eq!(
            out.values,
            y("replicas: 3\nimage: {repo: nginx, tag: '2.0'}\n")
        );
        let merged = merge_chart_values(&chart, &user).unwrap();
        assert_eq!(merged.values.get("removeMe"), Some(&Value::Null));
    }

    #[test]
    fn subcharts_get_their_values_and_the_parents_globals() {
        let parent_defaults = y("global: {region: eu, tags: {a: 1}}\nsub: {port: 80}\n");
        let sub_defaults = y(
            "port: 8080\nhost: localhost\nglobal: {region: us, tags: {b: 2}, own: x}\ngone: null\n",
        );
        let chart = ChartValues {
            name: "parent",
            defaults: &parent_defaults,
            dependencies: vec![ChartValues {
                name: "sub",
                defaults: &sub_defaults,
                dependencies: vec![],
            }],
        };
        let user = y("sub: {host: example}\nglobal: {extra: 1}\n");
        let out = coalesce_chart_values(&chart, &user).unwrap().values;
        assert_eq!(out["global"], v("region: eu\ntags: {a: 1}\nextra: 1\n"));
        assert_eq!(
            out["sub"],
            v(
                "port: 80\nhost: example\nglobal: {region: eu, tags: {a: 1, b: 2}, own: x, extra: 1}\n"
            )
        );
    }

    #[test]
    fn user_null_reaches_into_a_subchart() {
        let parent_defaults = Map::new();
        let sub_defaults = y("a: 1\nb: 2\n");
        let chart = ChartValues {
            name: "parent",
            defaults: &parent_defaults,
            dependencies: vec![ChartValues {
                name: "sub",
                defaults: &sub_defaults,
                dependencies: vec![],
            }],
        };
        let out = coalesce_chart_values(&chart, &y("sub: {a: null}\n"))
            .unwrap()
            .values;
        assert_eq!(out["sub"], v("b: 2\nglobal: {}\n"));
    }

    #[test]
    fn nulls_in_the_top_charts_own_defaults_are_dropped() {
        // `hasKey .Values.debug "verbose"` is false in Helm 4.3 when the
        // chart's values.yaml says `verbose: ~`.
        let defaults = y("debug: {verbose: ~, level: 1}\ngone: ~\nglobal: {x: ~, y: 1}\n");
        let chart = ChartValues {
            name: "top",
            defaults: &defaults,
            dependencies: vec![],
        };
        let out = coalesce_chart_values(&chart, &Map::new()).unwrap().values;
        assert_eq!(out, y("debug: {level: 1}\nglobal: {y: 1}\n"));
        // A user value still fills the key; a user map meets cleaned defaults.
        let out = coalesce_chart_values(&chart, &y("debug: {verbose: true}\ngone: 2\n"))
            .unwrap()
            .values;
        assert_eq!(
            out,
            y("debug: {verbose: true, level: 1}\ngone: 2\nglobal: {y: 1}\n")
        );
        // Merging (MergeValues) keeps them.
        let out = merge_chart_values(&chart, &Map::new()).unwrap().values;
        assert_eq!(out["gone"], Value::Null);
    }

    #[test]
    fn subchart_values_that_are_not_a_map_are_an_error() {
        let empty = Map::new();
        let chart = ChartValues {
            name: "parent",
            defaults: &empty,
            dependencies: vec![ChartValues {
                name: "sub",
                defaults: &empty,
                dependencies: vec![],
            }],
        };
        assert_eq!(
            coalesce_chart_values(&chart, &y("sub: 3\n")),
            Err(Error::SubchartValuesNotAMap {
                chart: "sub".into(),
                found: "float64"
            })
        );
    }

    #[test]
    fn globals_follow_helm_precedence() {
        let parent = y("global: {a: 1, m: {x: 1}, s: str, t: {k: v}}\n");
        let mut sub = y("global: {a: 2, m: {x: 2, y: 2}, s: {no: 1}, t: scalar}\n");
        let warnings = coalesce_globals(&parent, &mut sub);
        assert_eq!(
            sub,
            y("global: {a: 1, m: {x: 1, y: 2}, s: {no: 1}, t: scalar}\n")
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        let mut not_table = y("global: 3\n");
        assert_eq!(coalesce_globals(&parent, &mut not_table).len(), 1);
        assert_eq!(not_table, y("global: 3\n"));
    }
}
