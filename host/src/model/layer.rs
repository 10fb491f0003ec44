//! The override layers of one chart's values, in precedence order.

use std::fmt;

/// One override layer. The derived order is the precedence order: a
/// greater layer wins (chart `values.yaml` < static < system < user).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    /// The chart's own `values.yaml`.
    ChartDefaults,
    /// Static overrides shipped in the bundle.
    Static,
    /// Overrides computed by the app's plugins.
    System,
    /// Overrides set by the operator.
    User,
}

impl Layer {
    /// Every layer, lowest precedence first.
    pub const ALL: [Layer; 4] = [
        Layer::ChartDefaults,
        Layer::Static,
        Layer::System,
        Layer::User,
    ];

    /// The layer's name as the CLI, the API and the store spell it.
    pub fn name(self) -> &'static str {
        match self {
            Layer::ChartDefaults => "chart-defaults",
            Layer::Static => "static",
            Layer::System => "system",
            Layer::User => "user",
        }
    }

    /// The layer a name spells, if any.
    pub fn from_name(name: &str) -> Option<Layer> {
        Layer::ALL.into_iter().find(|layer| layer.name() == name)
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
