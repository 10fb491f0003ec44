//! The 0.2 [`Plugin`] trait, what a plugin declares about itself ([`Info`])
//! and the fact [`Section`]s it may declare.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::v0_1::{App, Component};
use crate::v0_1::{PluginError, WorkloadKind};
use crate::v0_2::answer::Answer;
use crate::v0_2::calls::{ChartCall, Hook, HookCall};
use crate::v0_2::facts::Facts;
use crate::v0_2::hook_answer::HookAnswer;

/// A section of the facts. A plugin declares in [`Info::reading`] the
/// sections it reads; the host hands it only those, and a section it did not
/// declare is `None` in every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Section {
    /// [`Facts::system`].
    System,
    /// [`Facts::hosts`], without inventory.
    Hosts,
    /// [`Host::inventory`](crate::v0_2::Host::inventory) of every host
    /// (implies [`Section::Hosts`]); large on big platforms, so asked for on
    /// its own.
    Inventory,
    /// [`Facts::networks`].
    Networks,
    /// [`Facts::storage`].
    Storage,
    /// [`Facts::service_parameters`].
    ServiceParameters,
    /// [`Facts::cluster`].
    Cluster,
}

impl Section {
    /// Every section, in the WIT's order.
    pub const ALL: [Section; 7] = [
        Section::System,
        Section::Hosts,
        Section::Inventory,
        Section::Networks,
        Section::Storage,
        Section::ServiceParameters,
        Section::Cluster,
    ];

    /// The section's name as the WIT spells it (`service-parameters`).
    pub fn as_str(self) -> &'static str {
        match self {
            Section::System => "system",
            Section::Hosts => "hosts",
            Section::Inventory => "inventory",
            Section::Networks => "networks",
            Section::Storage => "storage",
            Section::ServiceParameters => "service-parameters",
            Section::Cluster => "cluster",
        }
    }
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a 0.2 plugin declares about itself.
///
/// ```
/// use capstan_plugin_sdk::v0_2::{Hook, Info, Section};
/// let info = Info::new("storage", "2.0.0")
///     .serving_charts(["csi-rbd"])
///     .with_hooks([Hook::PreApply, Hook::PreUpdate])
///     .reading([Section::System, Section::Hosts, Section::Storage]);
/// assert!(info.reads(Section::Storage));
/// assert!(!info.reads(Section::Networks));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    /// The plugin's name, used in logs and errors.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// The charts it computes overrides for.
    pub charts: Vec<String>,
    /// The lifecycle hooks it implements.
    pub hooks: Vec<Hook>,
    /// Whether it decides workload kinds.
    pub decides_workloads: bool,
    /// The fact sections it reads (the WIT's `facts`); it is handed only
    /// these.
    pub sections: Vec<Section>,
}

impl Info {
    /// A plugin that serves no chart and no hook and reads no section yet.
    pub fn new(name: &str, version: &str) -> Self {
        Info {
            name: name.into(),
            version: version.into(),
            charts: Vec::new(),
            hooks: Vec::new(),
            decides_workloads: false,
            sections: Vec::new(),
        }
    }

    /// Declares the charts this plugin computes overrides for.
    pub fn serving_charts<I, S>(mut self, charts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.charts.extend(charts.into_iter().map(Into::into));
        self
    }

    /// Declares the hooks this plugin implements; the host calls
    /// [`Plugin::lifecycle`] for these only.
    pub fn with_hooks(mut self, hooks: impl IntoIterator<Item = Hook>) -> Self {
        for hook in hooks {
            if !self.hooks.contains(&hook) {
                self.hooks.push(hook);
            }
        }
        self
    }

    /// Declares that this plugin decides workload kinds
    /// ([`Plugin::workload_kind`]).
    pub fn deciding_workloads(mut self) -> Self {
        self.decides_workloads = true;
        self
    }

    /// Declares the fact sections this plugin reads. Declaring
    /// [`Section::Inventory`] declares [`Section::Hosts`] too.
    pub fn reading(mut self, sections: impl IntoIterator<Item = Section>) -> Self {
        for section in sections {
            if section == Section::Inventory && !self.sections.contains(&Section::Hosts) {
                self.sections.push(Section::Hosts);
            }
            if !self.sections.contains(&section) {
                self.sections.push(section);
            }
        }
        self
    }

    /// True when the plugin declared `section` (or, for
    /// [`Section::Hosts`], [`Section::Inventory`]).
    pub fn reads(&self, section: Section) -> bool {
        self.sections.contains(&section)
            || (section == Section::Hosts && self.sections.contains(&Section::Inventory))
    }
}

/// A 0.2 override plugin. Implement it on a unit struct and export it with
/// [`export_plugin!`](crate::v0_2::export_plugin).
///
/// Every method is called with a fresh instance: keep no state between
/// calls (to carry state from a pre hook to its post hook, answer
/// [`HookAnswer::with_state`]). Only [`Plugin::info`] is required; each other
/// method has a default that serves nothing, decides nothing, or proceeds.
pub trait Plugin {
    /// Describes the plugin: its charts, hooks and the fact sections it
    /// reads.
    fn info() -> Info;

    /// Computes one chart's [`Answer`]: system overrides, secret values,
    /// secrets to generate, or [`Answer::disabled`].
    ///
    /// # Errors
    /// A [`PluginError`] when the facts do not allow an answer for the chart;
    /// the host reports it with the plugin's name and applies nothing. By
    /// default, [`PluginError::Unsupported`] naming the chart.
    fn overrides(call: &ChartCall, facts: &Facts) -> Result<Answer, PluginError> {
        let _ = facts;
        Err(PluginError::Unsupported(format!("chart {}", call.chart)))
    }

    /// Decides the workload kind of `component`. By default a plugin does
    /// not decide, and the host applies its default rule.
    ///
    /// # Errors
    /// [`PluginError::Unsupported`] when the plugin does not decide (the
    /// default); any other [`PluginError`] fails the operation.
    fn workload_kind(
        app: &App,
        facts: &Facts,
        component: &Component,
    ) -> Result<WorkloadKind, PluginError> {
        let _ = (app, facts);
        Err(PluginError::Unsupported(format!(
            "workload kind of component {}",
            component.name
        )))
    }

    /// Runs a lifecycle hook. By default every hook proceeds (and, for
    /// `status`, the release is ready).
    ///
    /// # Errors
    /// A [`PluginError`] fails the operation; to stop it with a reason for
    /// the operator, answer [`HookAnswer::veto`] instead.
    fn lifecycle(call: &HookCall, facts: &Facts) -> Result<HookAnswer, PluginError> {
        let _ = (call, facts);
        Ok(HookAnswer::proceed())
    }
}
