//! The daemon's override layers for one chart, lowest precedence first:
//! the chart's own defaults, static overrides shipped in the bundle,
//! system overrides computed by the app's plugins, and user overrides set
//! by the operator.
//!
//! The three override layers combine like Helm's `-f` files
//! ([`merge_maps`]): a later layer wins, maps merge, and a `null` is kept
//! so that it still deletes the chart default it names. The chart's
//! defaults are then coalesced under them with Helm's rules, where that
//! `null` deletes the key.

use super::{ChartValues, Map, Value, coalesce_chart_values, merge_maps};
use crate::model::Layer;

/// The override layers (everything but [`Layer::ChartDefaults`]) merged
/// in precedence order as Helm merges `-f` files, nulls kept. This is
/// what the renderer should receive as the user-supplied values, so that
/// Helm's subchart and `global` handling applies to them.
///
/// Layers may come in any order; two entries of the same layer apply in
/// the order given. A layer whose value is not a map (`null` for "no
/// overrides") adds nothing.
pub fn merge_override_layers(layers: &[(Layer, Value)]) -> Map {
    let mut merged = Map::new();
    for (_, value) in
        in_precedence_order(layers).filter(|(layer, _)| *layer != Layer::ChartDefaults)
    {
        if let Value::Map(map) = value {
            merged = merge_maps(&merged, map);
        }
    }
    merged
}

/// The values a chart would see: [`merge_override_layers`] coalesced over
/// the [`Layer::ChartDefaults`] layer with Helm's rules for the top chart
/// (maps merge deeply, scalars and lists replace, a `null` in an override
/// deletes the default). With no chart-defaults layer the merged
/// overrides are returned as they are, nulls included.
///
/// This treats the chart as having no subcharts; use it to show the
/// merged result of the layers (`override show`), and let the renderer
/// coalesce [`merge_override_layers`] against the real chart tree.
pub fn merge_layers(layers: &[(Layer, Value)]) -> Value {
    let overrides = merge_override_layers(layers);
    let mut defaults: Option<Map> = None;
    for (_, value) in
        in_precedence_order(layers).filter(|(layer, _)| *layer == Layer::ChartDefaults)
    {
        if let Value::Map(map) = value {
            defaults = Some(merge_maps(defaults.as_ref().unwrap_or(&Map::new()), map));
        }
    }
    let Some(defaults) = defaults else {
        return Value::Map(overrides);
    };
    let chart = ChartValues {
        name: "",
        defaults: &defaults,
        dependencies: Vec::new(),
    };
    match coalesce_chart_values(&chart, &overrides) {
        Ok(coalesced) => Value::Map(coalesced.values),
        // Without subcharts coalescing cannot fail; keep the overrides.
        Err(_) => Value::Map(overrides),
    }
}

/// The layers sorted by precedence, stable for equal layers.
fn in_precedence_order(layers: &[(Layer, Value)]) -> impl Iterator<Item = &(Layer, Value)> {
    Layer::ALL
        .into_iter()
        .flat_map(move |wanted| layers.iter().filter(move |(layer, _)| *layer == wanted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::parse_yaml;

    fn v(text: &str) -> Value {
        parse_yaml(text).unwrap()
    }

    #[test]
    fn higher_layers_win_whatever_the_input_order() {
        let layers = vec![
            (Layer::User, v("replicas: 5\n")),
            (
                Layer::ChartDefaults,
                v("replicas: 1\nimage: {tag: '1'}\nport: 80\n"),
            ),
            (Layer::System, v("replicas: 3\nimage: {tag: '2'}\n")),
            (Layer::Static, v("replicas: 2\nport: 8080\n")),
        ];
        assert_eq!(
            merge_layers(&layers),
            v("replicas: 5\nimage: {tag: '2'}\nport: 8080\n")
        );
    }

    #[test]
    fn a_null_in_any_override_layer_deletes_the_default() {
        let layers = vec![
            (Layer::ChartDefaults, v("a: 1\nb: {c: 1, d: 2}\n")),
            (Layer::System, v("b: {c: null}\n")),
            (Layer::User, v("a: null\n")),
        ];
        assert_eq!(merge_layers(&layers), v("b: {d: 2}\n"));
        // The merged overrides keep the nulls for the renderer.
        assert_eq!(
            Value::Map(merge_override_layers(&layers)),
            v("a: null\nb: {c: null}\n")
        );
    }

    #[test]
    fn a_lower_null_can_be_overridden_again() {
        let layers = vec![
            (Layer::ChartDefaults, v("a: {x: 1}\n")),
            (Layer::System, v("a: null\n")),
            (Layer::User, v("a: {y: 2}\n")),
        ];
        assert_eq!(merge_layers(&layers), v("a: {x: 1, y: 2}\n"));
    }

    #[test]
    fn missing_and_empty_layers_add_nothing() {
        assert_eq!(merge_layers(&[]), v("{}\n"));
        assert_eq!(merge_layers(&[(Layer::User, Value::Null)]), v("{}\n"));
        assert_eq!(merge_layers(&[(Layer::User, v("a: 1\n"))]), v("a: 1\n"));
        assert_eq!(
            merge_layers(&[(Layer::ChartDefaults, v("a: 1\n"))]),
            v("a: 1\n")
        );
    }

    #[test]
    fn layers_order_and_names() {
        assert!(
            Layer::ChartDefaults < Layer::Static
                && Layer::Static < Layer::System
                && Layer::System < Layer::User
        );
        assert_eq!(Layer::User.to_string(), "user");
        assert_eq!(
            Layer::ALL.map(Layer::name),
            ["chart-defaults", "static", "system", "user"]
        );
    }
}
