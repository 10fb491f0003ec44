//! `capstan.yaml`: the app's metadata, parsed strictly (an unknown field is an
//! error naming the field and line) and then checked for consistency.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Deserializer};

use super::Error;
use super::manifest::Manifest;
use super::paths::check_path;
use crate::model::{
    AppName, ChartName, ComponentSpec, Conflicts, DriftMode, FieldPolicy, Hook, IgnoreRule,
    MAX_IGNORE_RULES, Namespace, ReleaseName, TriggerSpec,
};

/// An app's metadata, as read from `capstan.yaml`. Only [`Metadata::parse`]
/// makes one, so a value has passed the consistency checks listed there.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Metadata {
    /// The app's name.
    pub name: AppName,
    /// The app's version.
    pub version: semver::Version,
    /// A one-paragraph description for people.
    #[serde(default)]
    pub description: String,
    /// The Kubernetes versions the app supports; absent means any.
    #[serde(default)]
    pub kubernetes: Option<KubernetesRange>,
    /// Every chart of the app.
    pub charts: Vec<Chart>,
    /// The charts grouped in apply order; every chart is in exactly one group.
    pub chart_groups: Vec<ChartGroup>,
    /// The app's plugins.
    #[serde(default)]
    pub plugins: Vec<Plugin>,
    /// Whether user overrides survive an update to this version.
    #[serde(default)]
    pub maintain_user_overrides: bool,
    /// Which applied versions this version may update.
    #[serde(default)]
    pub upgrades: Upgrades,
    /// Workloads the platform may run as different kinds (issue 6). Empty by default.
    #[serde(default)]
    pub components: Vec<ComponentSpec>,
    /// Whether a LoadBalancer Service of any chart is ready only once the
    /// cluster's load-balancer controller gave it an address; a chart's
    /// own `wait_for_load_balancer` wins. Off by default: ready once it
    /// has a cluster IP, as kstatus and Helm 4's `--wait` say, so a
    /// cluster without a load-balancer controller applies the chart.
    #[serde(default)]
    pub wait_for_load_balancer: bool,
    /// Whether the daemon applies the app again on its own when a change
    /// of the facts would change it (StarlingX's automatic re-apply),
    /// unless its `semantic-check` hook vetoes. Off by default: the app is
    /// only marked `reapply-needed`.
    #[serde(default)]
    pub auto_reapply: bool,
    /// The least time between two automatic re-applies of the app
    /// (`auto_reapply_interval: 10m`); 5 minutes when left out (see
    /// [`Metadata::auto_reapply_interval`]).
    #[serde(default, deserialize_with = "deserialize_interval")]
    pub auto_reapply_interval: Option<std::time::Duration>,
    /// The platform changes the app's `evaluate-reapply` hook is asked
    /// about (StarlingX's re-apply triggers): node added, removed or
    /// relabelled, a facts section changed, a named platform event.
    /// Needs a plugin that declares the hook.
    #[serde(default)]
    pub reapply_triggers: Vec<TriggerSpec>,
    /// What an apply does with a field that another manager (a person's
    /// `kubectl edit`, a controller) holds: `force` takes it back (the
    /// default, as Flux does), `fail` stops the apply naming the field
    /// and its manager (as Helm 4 without `--force-conflicts`).
    #[serde(default)]
    pub conflicts: Conflicts,
    /// Fields of the app's objects that capstan neither applies nor
    /// compares (kind, name pattern, JSON pointers), so it never fights
    /// the controller that owns them. A chart's own
    /// HorizontalPodAutoscaler leaves its workload's `/spec/replicas`
    /// alone without a rule ([`crate::model::autoscaled`]).
    #[serde(default)]
    pub ignore: Vec<IgnoreRule>,
    /// What the daemon does when the app's objects drift: `off`,
    /// `detect` (the default: the `drifted` condition, an Event, a
    /// metric) or `correct` (then apply again, rate-limited).
    #[serde(default)]
    pub drift: DriftMode,
    /// The least time between two drift corrections of the app
    /// (`drift_correction_interval: 5m`); 1 minute when left out.
    #[serde(default, deserialize_with = "deserialize_correction")]
    pub drift_correction_interval: Option<std::time::Duration>,
    /// How many times a failed automatic operation (an automatic
    /// re-apply, a drift correction) is tried again before the daemon
    /// leaves the app failed (`retries: 5`); 3 when left out, at most
    /// [`crate::model::MAX_RETRIES`], 0 for none.
    #[serde(default)]
    pub retries: Option<u32>,
    /// The delay before the first retry (`retry_interval: 1m`), doubled
    /// for each later one up to 10 minutes; 30 seconds when left out, at
    /// most an hour.
    #[serde(default, deserialize_with = "deserialize_retry_interval")]
    pub retry_interval: Option<std::time::Duration>,
    /// What a failed update to this version leaves: `rollback` (the
    /// default: the version it left is applied again) or `keep` (this
    /// version stays applied as far as it got, `apply-failed`).
    #[serde(default)]
    pub on_failure: crate::model::OnFailure,
}

fn deserialize_retry_interval<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<std::time::Duration>, D::Error> {
    let text = String::deserialize(deserializer)?;
    let interval = parse_duration("retry_interval", &text).map_err(serde::de::Error::custom)?;
    if interval > crate::model::MAX_RETRY_INTERVAL {
        return Err(serde::de::Error::custom(format!(
            "retry_interval {text:?} must be at most 1h"
        )));
    }
    Ok(Some(interval))
}

/// The least time between two drift corrections of one app unless its
/// `capstan.yaml` says otherwise.
pub const DEFAULT_DRIFT_CORRECTION_INTERVAL: std::time::Duration =
    std::time::Duration::from_secs(60);

fn deserialize_correction<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<std::time::Duration>, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse_duration("drift_correction_interval", &text)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

/// The least time between two automatic re-applies of one app unless its
/// `capstan.yaml` says otherwise.
pub const DEFAULT_AUTO_REAPPLY_INTERVAL: std::time::Duration = std::time::Duration::from_secs(300);

/// One Helm chart of the app.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Chart {
    /// The chart's name within the app.
    pub name: ChartName,
    /// Its path in the bundle: a folder `charts/NAME` holding `Chart.yaml`, or
    /// a file `charts/NAME.tgz`.
    pub path: String,
    /// The namespace its release goes to.
    pub namespace: Namespace,
    /// The Helm release name.
    pub release: ReleaseName,
    /// Whether the chart is applied; a disabled chart is skipped.
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
    /// Static overrides shipped in the bundle, files under `overrides/`,
    /// applied in order over the chart's `values.yaml`.
    #[serde(default)]
    pub overrides: Vec<String>,
    /// How long the chart's objects may take to become ready on a cluster
    /// (`90s`, `5m`, `1h`); absent means the target's default (5 minutes).
    #[serde(default, deserialize_with = "deserialize_timeout")]
    pub timeout: Option<std::time::Duration>,
    /// Whether this chart's LoadBalancer Services are ready only once
    /// they have an address; absent means the app's
    /// `wait_for_load_balancer`.
    #[serde(default)]
    pub wait_for_load_balancer: Option<bool>,
}

/// The longest readiness timeout a chart may ask for.
const MAX_CHART_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

fn deserialize_timeout<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<std::time::Duration>, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse_duration("timeout", &text)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

fn deserialize_interval<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<std::time::Duration>, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse_duration("auto_reapply_interval", &text)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

/// Parses a chart timeout or an interval (`what` names it in errors): a
/// whole number followed by `s`, `m` or `h`, more than zero and at most a
/// day.
fn parse_duration(what: &str, text: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("{what} {text:?} is not a number of s, m or h (such as 90s or 5m)");
    let split = text.len().saturating_sub(1);
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "s" => Some(number),
        "m" => number.checked_mul(60),
        "h" => number.checked_mul(3600),
        _ => None,
    }
    .ok_or_else(bad)?;
    let duration = std::time::Duration::from_secs(seconds);
    if seconds == 0 || duration > MAX_CHART_TIMEOUT {
        return Err(format!(
            "{what} {text:?} must be more than 0s and at most 24h"
        ));
    }
    Ok(duration)
}

fn enabled_by_default() -> bool {
    true
}

impl GroupMode {
    /// The mode as `capstan.yaml` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupMode::Sequential => "sequential",
            GroupMode::Parallel => "parallel",
        }
    }
}

impl Chart {
    /// Whether the chart is a packed `.tgz` rather than a folder.
    pub fn is_archive(&self) -> bool {
        self.path.ends_with(".tgz")
    }
}

/// How the charts of a group are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GroupMode {
    /// One after the other, in the listed order, each waited for.
    Sequential,
    /// All at once, then waited for together.
    Parallel,
}

/// A set of charts applied together; groups apply in the listed order.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ChartGroup {
    /// The group's name, for logs and errors.
    pub name: String,
    /// Sequential or parallel.
    pub mode: GroupMode,
    /// The charts in the group, by name.
    pub charts: Vec<ChartName>,
}

/// One plugin component of the app.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Plugin {
    /// The component's path in the bundle, `plugins/NAME.wasm`.
    pub path: String,
    /// The hooks the plugin implements.
    #[serde(default)]
    pub hooks: Vec<Hook>,
    /// The charts it computes overrides for.
    #[serde(default)]
    pub charts: Vec<ChartName>,
}

/// Checks that what `capstan.yaml` routes to a plugin is what the plugin
/// says it serves in its `info()`: every chart the entry lists must be one
/// of `served_charts`, and every hook one of `served_hooks`. A plugin may
/// serve more than one app routes to it (a plugin shared by several apps);
/// routing a chart or hook it does not serve would make the daemon call it
/// for nothing, so that is refused.
///
/// # Errors
/// One line naming the plugin and both sides of the first disagreement.
pub fn check_plugin_routing(
    declared: &Plugin,
    served_charts: &[String],
    served_hooks: &[Hook],
) -> Result<(), String> {
    let unserved: Vec<&str> = declared
        .charts
        .iter()
        .map(ChartName::as_str)
        .filter(|chart| !served_charts.iter().any(|s| s == chart))
        .collect();
    if !unserved.is_empty() {
        return Err(format!(
            "capstan.yaml routes charts [{}] to {} but its info() serves charts [{}]",
            unserved.join(", "),
            declared.path,
            served_charts.join(", ")
        ));
    }
    let unserved: Vec<&str> = declared
        .hooks
        .iter()
        .filter(|hook| !served_hooks.contains(hook))
        .map(|hook| hook.as_str())
        .collect();
    if !unserved.is_empty() {
        let served: Vec<&str> = served_hooks.iter().map(|h| h.as_str()).collect();
        return Err(format!(
            "capstan.yaml routes hooks [{}] to {} but its info() implements hooks [{}]",
            unserved.join(", "),
            declared.path,
            served.join(", ")
        ));
    }
    Ok(())
}

/// Which applied versions a bundle may update.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Upgrades {
    /// Versions or semver ranges the update may start from. Empty means any
    /// older version.
    #[serde(default)]
    pub from_versions: Vec<VersionSpec>,
}

/// One `from_versions` item: an exact version (`1.2.0`) or a Cargo-style
/// semver range (`>=1.0, <1.3`, `^1.2`, `1.*`).
#[derive(Debug, Clone, PartialEq)]
pub enum VersionSpec {
    /// Exactly this version.
    Exact(semver::Version),
    /// Any version in this range.
    Range(semver::VersionReq),
}

impl VersionSpec {
    /// Parses an exact version first, then a range.
    ///
    /// # Errors
    ///
    /// A message when `text` is neither.
    pub fn parse(text: &str) -> Result<Self, String> {
        if let Ok(version) = semver::Version::parse(text) {
            return Ok(Self::Exact(version));
        }
        semver::VersionReq::parse(text)
            .map(Self::Range)
            .map_err(|_| format!("{text:?} is neither a semver version nor a semver range"))
    }

    /// Whether `version` satisfies this spec.
    pub fn matches(&self, version: &semver::Version) -> bool {
        match self {
            Self::Exact(exact) => exact == version,
            Self::Range(range) => range.matches(version),
        }
    }
}

impl fmt::Display for VersionSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exact(version) => version.fmt(f),
            Self::Range(range) => range.fmt(f),
        }
    }
}

impl<'de> Deserialize<'de> for VersionSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A Kubernetes version, `MAJOR.MINOR` or `MAJOR.MINOR.PATCH`, compared by
/// major then minor then patch (a missing patch is 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct KubeVersion {
    /// Major version.
    pub major: u64,
    /// Minor version.
    pub minor: u64,
    /// Patch version.
    pub patch: u64,
}

impl KubeVersion {
    /// Parses `1.30`, `1.30.2` or `v1.30.2`.
    ///
    /// # Errors
    ///
    /// A message naming the text when it is not such a version.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?} is not a Kubernetes version like 1.30 or 1.30.2");
        let trimmed = text.strip_prefix('v').unwrap_or(text);
        let parts: Vec<&str> = trimmed.split('.').collect();
        if !(2..=3).contains(&parts.len()) {
            return Err(bad());
        }
        let number = |part: &str| {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            part.parse::<u64>().map_err(|_| bad())
        };
        Ok(Self {
            major: number(parts[0])?,
            minor: number(parts[1])?,
            patch: parts.get(2).map_or(Ok(0), |part| number(part))?,
        })
    }
}

impl fmt::Display for KubeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl<'de> Deserialize<'de> for KubeVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The Kubernetes versions an app supports, both ends inclusive. A bound
/// given as `MAJOR.MINOR` covers every patch of that minor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubernetesRange {
    /// The oldest supported version.
    #[serde(default)]
    pub min: Option<KubeVersion>,
    /// The newest supported version.
    #[serde(default)]
    pub max: Option<KubeVersion>,
}

impl KubernetesRange {
    /// Whether `version` lies in the range.
    pub fn contains(&self, version: KubeVersion) -> bool {
        let above_min = self.min.is_none_or(|min| version >= min);
        let below_max = self.max.is_none_or(|max| {
            if max.patch == 0 {
                (version.major, version.minor) <= (max.major, max.minor)
            } else {
                version <= max
            }
        });
        above_min && below_max
    }
}

impl Metadata {
    /// Whether `chart`'s LoadBalancer Services wait for an address: the
    /// chart's `wait_for_load_balancer`, else the app's.
    pub fn waits_for_load_balancer(&self, chart: &Chart) -> bool {
        chart
            .wait_for_load_balancer
            .unwrap_or(self.wait_for_load_balancer)
    }

    /// What the app says of field ownership (`conflicts`, `ignore`).
    pub fn field_policy(&self) -> FieldPolicy {
        FieldPolicy {
            conflicts: self.conflicts,
            ignore: self.ignore.clone(),
            drift: self.drift,
        }
    }

    /// The least time between two drift corrections of the app.
    pub fn drift_correction_interval(&self) -> std::time::Duration {
        self.drift_correction_interval
            .unwrap_or(DEFAULT_DRIFT_CORRECTION_INTERVAL)
    }

    /// The least time between two automatic re-applies of the app.
    pub fn auto_reapply_interval(&self) -> std::time::Duration {
        self.auto_reapply_interval
            .unwrap_or(DEFAULT_AUTO_REAPPLY_INTERVAL)
    }

    /// How the app's failed automatic operations are tried again
    /// (`retries`, `retry_interval`).
    pub fn retry_policy(&self) -> crate::model::RetryPolicy {
        let default = crate::model::RetryPolicy::default();
        crate::model::RetryPolicy {
            retries: self.retries.unwrap_or(default.retries),
            interval: self.retry_interval.unwrap_or(default.interval),
        }
    }

    /// Parses `capstan.yaml` and checks it:
    /// - every field is known and typed (names are DNS-1123 labels, versions semver);
    /// - chart and component names are unique;
    /// - every chart is in exactly one group and groups name only declared charts;
    /// - chart paths are `charts/NAME` folders or `charts/NAME.tgz` files,
    ///   plugin paths `plugins/NAME.wasm`, override paths under `overrides/`;
    /// - plugins and components name declared charts.
    ///
    /// Whether the referenced files exist is [`Metadata::check_files`].
    ///
    /// # Errors
    ///
    /// [`Error::MetadataSyntax`] with the line for YAML and schema errors
    /// (an unknown field is named); [`Error::MetadataInvalid`] naming the
    /// field for consistency errors.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let metadata: Self = serde_yaml_ng::from_str(text).map_err(syntax_error)?;
        metadata.check_consistency()?;
        Ok(metadata)
    }

    /// Checks that every chart, plugin and override file named here is in
    /// `manifest`; a chart folder must hold `Chart.yaml`.
    ///
    /// # Errors
    ///
    /// [`Error::MissingReference`] for the first file that is missing.
    pub fn check_files(&self, manifest: &Manifest) -> Result<(), Error> {
        let missing = |what, path: &str| Error::MissingReference {
            what,
            path: path.to_string(),
        };
        for chart in &self.charts {
            let present = if chart.is_archive() {
                manifest.digest(&chart.path).is_some()
            } else {
                manifest
                    .digest(&format!("{}/Chart.yaml", chart.path))
                    .is_some()
            };
            if !present {
                return Err(missing("chart", &chart.path));
            }
            for file in &chart.overrides {
                if manifest.digest(file).is_none() {
                    return Err(missing("override", file));
                }
            }
        }
        for plugin in &self.plugins {
            if manifest.digest(&plugin.path).is_none() {
                return Err(missing("plugin", &plugin.path));
            }
        }
        Ok(())
    }

    /// The chart with this name.
    pub fn chart(&self, name: &ChartName) -> Option<&Chart> {
        self.charts.iter().find(|chart| &chart.name == name)
    }

    fn check_consistency(&self) -> Result<(), Error> {
        let chart_names = self.check_charts()?;
        self.check_groups(&chart_names)?;
        self.check_plugins(&chart_names)?;
        self.check_components(&chart_names)?;
        self.check_triggers()?;
        self.check_ignore()?;
        self.check_retries()
    }

    fn check_retries(&self) -> Result<(), Error> {
        match self.retries {
            Some(retries) if retries > crate::model::MAX_RETRIES => Err(invalid(
                "retries".to_string(),
                format!(
                    "{retries}; at most {} allowed (0 turns retries off)",
                    crate::model::MAX_RETRIES
                ),
            )),
            _ => Ok(()),
        }
    }

    fn check_ignore(&self) -> Result<(), Error> {
        if self.ignore.len() > MAX_IGNORE_RULES {
            return Err(invalid(
                "ignore".to_string(),
                format!(
                    "{} rules; at most {MAX_IGNORE_RULES} allowed",
                    self.ignore.len()
                ),
            ));
        }
        for (index, rule) in self.ignore.iter().enumerate() {
            if let Some(problem) = rule.problem() {
                return Err(invalid(format!("ignore[{index}]"), problem));
            }
        }
        Ok(())
    }

    fn check_triggers(&self) -> Result<(), Error> {
        for (index, trigger) in self.reapply_triggers.iter().enumerate() {
            if let Some(problem) = trigger.problem() {
                return Err(invalid(format!("reapply_triggers[{index}]"), problem));
            }
        }
        let hooked = self
            .plugins
            .iter()
            .any(|p| p.hooks.contains(&Hook::EvaluateReapply));
        if !self.reapply_triggers.is_empty() && !hooked {
            return Err(invalid(
                "reapply_triggers".to_string(),
                "no plugin declares the evaluate-reapply hook the triggers ask".to_string(),
            ));
        }
        Ok(())
    }

    fn check_charts(&self) -> Result<BTreeSet<&ChartName>, Error> {
        let mut names = BTreeSet::new();
        for (index, chart) in self.charts.iter().enumerate() {
            let field = |name: &str| format!("charts[{index}].{name}");
            if !names.insert(&chart.name) {
                return Err(invalid(
                    field("name"),
                    format!("chart {} is declared twice", chart.name),
                ));
            }
            check_chart_path(&chart.path).map_err(|reason| invalid(field("path"), reason))?;
            for (n, file) in chart.overrides.iter().enumerate() {
                check_under(file, "overrides/", "")
                    .map_err(|reason| invalid(field(&format!("overrides[{n}]")), reason))?;
            }
        }
        Ok(names)
    }

    fn check_groups(&self, chart_names: &BTreeSet<&ChartName>) -> Result<(), Error> {
        let mut grouped = BTreeSet::new();
        for (index, group) in self.chart_groups.iter().enumerate() {
            let field = format!("chart_groups[{index}].charts");
            for chart in &group.charts {
                if !chart_names.contains(chart) {
                    return Err(invalid(
                        field,
                        format!("chart {chart} is not declared in charts"),
                    ));
                }
                if !grouped.insert(chart) {
                    return Err(invalid(
                        field,
                        format!("chart {chart} is in more than one group"),
                    ));
                }
            }
        }
        if let Some(ungrouped) = chart_names.iter().find(|name| !grouped.contains(*name)) {
            return Err(invalid(
                "chart_groups".to_string(),
                format!("chart {ungrouped} is in no group"),
            ));
        }
        Ok(())
    }

    fn check_plugins(&self, chart_names: &BTreeSet<&ChartName>) -> Result<(), Error> {
        let mut paths = BTreeSet::new();
        for (index, plugin) in self.plugins.iter().enumerate() {
            let field = |name: &str| format!("plugins[{index}].{name}");
            check_under(&plugin.path, "plugins/", ".wasm")
                .map_err(|reason| invalid(field("path"), reason))?;
            if !paths.insert(&plugin.path) {
                return Err(invalid(
                    field("path"),
                    "the plugin is listed twice".to_string(),
                ));
            }
            if let Some(chart) = plugin.charts.iter().find(|c| !chart_names.contains(c)) {
                return Err(invalid(
                    field("charts"),
                    format!("chart {chart} is not declared in charts"),
                ));
            }
        }
        Ok(())
    }

    fn check_components(&self, chart_names: &BTreeSet<&ChartName>) -> Result<(), Error> {
        let mut names = BTreeSet::new();
        for (index, component) in self.components.iter().enumerate() {
            let field = |name: &str| format!("components[{index}].{name}");
            if !names.insert(&component.name) {
                return Err(invalid(
                    field("name"),
                    format!("component {} is declared twice", component.name),
                ));
            }
            if !chart_names.contains(&component.chart) {
                return Err(invalid(
                    field("chart"),
                    format!("chart {} is not declared in charts", component.chart),
                ));
            }
        }
        Ok(())
    }
}

fn invalid(field: String, reason: String) -> Error {
    Error::MetadataInvalid { field, reason }
}

fn check_chart_path(path: &str) -> Result<(), String> {
    check_under(path, "charts/", "")?;
    if path["charts/".len()..].contains('/') {
        return Err(format!(
            "{path:?} must be a folder or .tgz directly under charts/"
        ));
    }
    Ok(())
}

fn check_under(path: &str, folder: &str, extension: &str) -> Result<(), String> {
    check_path(path).map_err(|err| err.to_string())?;
    let rest = path.strip_prefix(folder).unwrap_or_default();
    if rest.is_empty() || !rest.ends_with(extension) || rest == extension {
        return Err(format!("{path:?} must be a {folder}*{extension} path"));
    }
    Ok(())
}

fn syntax_error(err: serde_yaml_ng::Error) -> Error {
    let full = err.to_string();
    let (line, message) = match err.location() {
        Some(location) => {
            let suffix = format!(" at line {} column {}", location.line(), location.column());
            let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
            (location.line(), message)
        }
        None => (0, full),
    };
    Error::MetadataSyntax { line, message }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::manifest::{Digest, ManifestEntry};
    use crate::model::{Trigger, WorkloadKind};

    const HELLO: &str = "\
name: hello
version: 1.2.0
description: A greeting.
kubernetes: { min: \"1.28\", max: \"1.32\" }
charts:
  - name: hello
    path: charts/hello
    namespace: hello
    release: hello
    overrides: [overrides/hello.yaml]
  - name: extra
    path: charts/extra-0.1.0.tgz
    namespace: hello
    release: hello-extra
    enabled: false
chart_groups:
  - name: main
    mode: sequential
    charts: [hello]
  - name: extras
    mode: parallel
    charts: [extra]
plugins:
  - path: plugins/storage.wasm
    hooks: [pre-apply, semantic-check]
    charts: [hello]
maintain_user_overrides: true
upgrades:
  from_versions: [\"1.1.0\", \">=1.0, <1.1\"]
components:
  - name: web
    chart: hello
    workload: Deployment/hello
    traits:
      volumes: [{container: 0, storageClassName: local, size: 1Gi, path: /data}]
      localVolumes:
        - {volume: data, container: 0, path: /var/lib/data}
";

    #[test]
    fn parses_every_field() {
        let metadata = Metadata::parse(HELLO).unwrap();
        assert_eq!(metadata.name.as_str(), "hello");
        assert_eq!(metadata.version, semver::Version::new(1, 2, 0));
        assert_eq!(metadata.charts.len(), 2);
        assert!(metadata.charts[0].enabled);
        assert!(!metadata.charts[1].enabled);
        assert!(metadata.charts[1].is_archive());
        assert_eq!(metadata.chart_groups[1].mode, GroupMode::Parallel);
        assert_eq!(
            metadata.plugins[0].hooks,
            vec![Hook::PreApply, Hook::SemanticCheck]
        );
        assert!(metadata.maintain_user_overrides);
        let from = &metadata.upgrades.from_versions;
        assert!(from[0].matches(&semver::Version::new(1, 1, 0)));
        assert!(!from[0].matches(&semver::Version::new(1, 1, 1)));
        assert!(from[1].matches(&semver::Version::new(1, 0, 7)));
        let component = &metadata.components[0];
        assert_eq!(component.workload.kind, WorkloadKind::Deployment);
        assert_eq!(component.traits.volumes[0].storage_class_name, "local");
        let mount = &component.traits.local_volumes[0];
        assert_eq!((mount.volume.as_str(), mount.container), ("data", 0));
        assert_eq!(mount.path, "/var/lib/data");
        let range = metadata.kubernetes.unwrap();
        assert!(range.contains(KubeVersion::parse("1.32.9").unwrap()));
        assert!(!range.contains(KubeVersion::parse("1.33.0").unwrap()));
        assert!(!range.contains(KubeVersion::parse("1.27.5").unwrap()));
    }

    #[test]
    fn unknown_field_names_field_and_line() {
        let text = HELLO.replace(
            "    release: hello-extra\n",
            "    release: hello-extra\n    colour: red\n",
        );
        match Metadata::parse(&text) {
            Err(Error::MetadataSyntax { line, message }) => {
                assert_eq!(line, 15, "{message}");
                assert!(message.contains("unknown field `colour`"), "{message}");
            }
            other => panic!("expected a syntax error, got {other:?}"),
        }
    }

    #[test]
    fn plugin_routing_must_agree_with_info() {
        let plugin = Plugin {
            path: "plugins/ha.wasm".into(),
            hooks: vec![Hook::SemanticCheck],
            charts: vec![ChartName::parse("web").unwrap()],
        };
        let charts = |c: &[&str]| c.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(check_plugin_routing(&plugin, &charts(&["web", "api"]), &Hook::ALL).is_ok());
        assert_eq!(
            check_plugin_routing(&plugin, &charts(&["api"]), &Hook::ALL).unwrap_err(),
            "capstan.yaml routes charts [web] to plugins/ha.wasm but its info() serves charts [api]"
        );
        assert_eq!(
            check_plugin_routing(&plugin, &charts(&["web"]), &[Hook::PreApply]).unwrap_err(),
            "capstan.yaml routes hooks [semantic-check] to plugins/ha.wasm but its info() \
             implements hooks [pre-apply]"
        );
    }

    #[test]
    fn waiting_for_a_load_balancer_is_opt_in_by_app_and_by_chart() {
        let metadata = Metadata::parse(HELLO).unwrap();
        let (hello, extra) = (&metadata.charts[0], &metadata.charts[1]);
        assert!(!metadata.waits_for_load_balancer(hello));
        let text = HELLO
            .replace(
                "maintain_user_overrides: true\n",
                "maintain_user_overrides: true\nwait_for_load_balancer: true\n",
            )
            .replace(
                "    release: hello-extra\n",
                "    release: hello-extra\n    wait_for_load_balancer: false\n",
            );
        let metadata = Metadata::parse(&text).unwrap();
        let (hello, extra_off) = (&metadata.charts[0], &metadata.charts[1]);
        assert!(metadata.waits_for_load_balancer(hello));
        assert!(!metadata.waits_for_load_balancer(extra_off));
        assert_eq!(extra.wait_for_load_balancer, None);
    }

    #[test]
    fn chart_timeouts_are_checked() {
        assert_eq!(
            parse_duration("timeout", "90s"),
            Ok(std::time::Duration::from_secs(90))
        );
        assert_eq!(
            parse_duration("timeout", "5m"),
            Ok(std::time::Duration::from_secs(300))
        );
        assert_eq!(
            parse_duration("timeout", "2h"),
            Ok(std::time::Duration::from_secs(7200))
        );
        for bad in [
            "",
            "5",
            "m",
            "0s",
            "25h",
            "-1s",
            "1.5m",
            "5d",
            "99999999999999999999h",
        ] {
            assert!(parse_duration("timeout", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn auto_reapply_is_off_by_default_and_its_interval_is_checked() {
        let metadata = Metadata::parse(HELLO).unwrap();
        assert!(!metadata.auto_reapply);
        assert_eq!(
            metadata.auto_reapply_interval(),
            DEFAULT_AUTO_REAPPLY_INTERVAL
        );
        let on = format!("{HELLO}auto_reapply: true\nauto_reapply_interval: 30s\n");
        let metadata = Metadata::parse(&on).unwrap();
        assert!(metadata.auto_reapply);
        assert_eq!(
            metadata.auto_reapply_interval(),
            std::time::Duration::from_secs(30)
        );
        let bad = format!("{HELLO}auto_reapply: true\nauto_reapply_interval: soon\n");
        let error = Metadata::parse(&bad).unwrap_err().to_string();
        assert!(
            error.contains("auto_reapply_interval \"soon\" is not a number of s, m or h"),
            "{error}"
        );
    }

    #[test]
    fn the_failure_policy_has_defaults_and_bounds() {
        use crate::model::{DEFAULT_RETRIES, DEFAULT_RETRY_INTERVAL, OnFailure};
        let metadata = Metadata::parse(HELLO).unwrap();
        assert_eq!(metadata.retry_policy().retries, DEFAULT_RETRIES);
        assert_eq!(metadata.retry_policy().interval, DEFAULT_RETRY_INTERVAL);
        assert_eq!(metadata.on_failure, OnFailure::Rollback);
        let set = format!("{HELLO}retries: 5\nretry_interval: 2m\non_failure: keep\n");
        let metadata = Metadata::parse(&set).unwrap();
        assert_eq!(metadata.retry_policy().retries, 5);
        assert_eq!(
            metadata.retry_policy().interval,
            std::time::Duration::from_secs(120)
        );
        assert_eq!(metadata.on_failure, OnFailure::Keep);
        let none = format!("{HELLO}retries: 0\n");
        assert_eq!(Metadata::parse(&none).unwrap().retry_policy().retries, 0);
        let many = format!("{HELLO}retries: 21\n");
        let error = Metadata::parse(&many).unwrap_err().to_string();
        assert!(error.contains("at most 20"), "{error}");
        for bad in [
            "retries: -1\n",
            "retries: lots\n",
            "on_failure: uninstall\n",
        ] {
            assert!(Metadata::parse(&format!("{HELLO}{bad}")).is_err(), "{bad}");
        }
        let long = format!("{HELLO}retry_interval: 2h\n");
        let error = Metadata::parse(&long).unwrap_err().to_string();
        assert!(
            error.contains("retry_interval \"2h\" must be at most 1h"),
            "{error}"
        );
        let zero = format!("{HELLO}retry_interval: 0s\n");
        assert!(Metadata::parse(&zero).is_err());
    }

    #[test]
    fn field_policy_defaults_to_force_and_its_rules_are_checked() {
        let metadata = Metadata::parse(HELLO).unwrap();
        assert_eq!(metadata.field_policy().conflicts, Conflicts::Force);
        assert!(metadata.field_policy().ignore.is_empty());
        let with = format!(
            "{HELLO}conflicts: fail\nignore:\n  - kind: Deployment\n    name: web-*\n    paths: [/spec/replicas]\n"
        );
        let metadata = Metadata::parse(&with).unwrap();
        let policy = metadata.field_policy();
        assert_eq!(policy.conflicts, Conflicts::Fail);
        assert_eq!(policy.drift, DriftMode::Detect);
        assert_eq!(
            metadata.drift_correction_interval(),
            DEFAULT_DRIFT_CORRECTION_INTERVAL
        );
        let correct = format!("{HELLO}drift: correct\ndrift_correction_interval: 5m\n");
        let metadata = Metadata::parse(&correct).unwrap();
        assert_eq!(metadata.field_policy().drift, DriftMode::Correct);
        assert_eq!(
            metadata.drift_correction_interval(),
            std::time::Duration::from_secs(300)
        );
        assert!(Metadata::parse(&format!("{HELLO}drift: sometimes\n")).is_err());
        assert_eq!(
            policy.ignored("Deployment", Some("hello"), "web-1").len(),
            1
        );
        let bad = format!("{HELLO}conflicts: maybe\n");
        assert!(Metadata::parse(&bad).is_err());
        let bad = format!("{HELLO}ignore:\n  - kind: Deployment\n    paths: [spec/replicas]\n");
        let error = Metadata::parse(&bad).unwrap_err().to_string();
        assert!(error.contains("must start with /"), "{error}");
        let bad = format!("{HELLO}ignore:\n  - kind: Deployment\n    paths: []\n");
        let error = Metadata::parse(&bad).unwrap_err().to_string();
        assert!(
            error.contains("ignore[0]") && error.contains("0 paths"),
            "{error}"
        );
        let many = "  - {kind: ConfigMap, paths: [/data/x]}\n".repeat(65);
        let error = Metadata::parse(&format!("{HELLO}ignore:\n{many}"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("at most 64"), "{error}");
    }

    #[test]
    fn reapply_triggers_are_checked_and_need_the_evaluate_reapply_hook() {
        let hooked = HELLO.replace(
            "hooks: [pre-apply, semantic-check]",
            "hooks: [pre-apply, semantic-check, evaluate-reapply]",
        );
        let with = |triggers: &str| format!("{hooked}reapply_triggers:\n{triggers}");
        let metadata = Metadata::parse(&with(
            "  - {on: node-relabelled, label: zone}\n  - {on: platform-event, name: storage-backend-changed}\n",
        ))
        .unwrap();
        let relabel = Trigger::new(
            crate::model::TriggerKind::NodeRelabelled,
            &[("node", "worker-1"), ("label", "zone")],
        );
        let other = Trigger::new(
            crate::model::TriggerKind::NodeRelabelled,
            &[("node", "worker-1"), ("label", "rack")],
        );
        assert!(metadata.reapply_triggers[0].matches(&relabel));
        assert!(!metadata.reapply_triggers[0].matches(&other));
        let event = Trigger::new(
            crate::model::TriggerKind::PlatformEvent,
            &[("name", "storage-backend-changed"), ("backend", "ceph")],
        );
        assert!(metadata.reapply_triggers[1].matches(&event));
        assert!(!metadata.reapply_triggers[0].matches(&event));

        for (triggers, says) in [
            (
                "  - {on: node-added, label: zone}\n",
                "label filters only node-relabelled triggers",
            ),
            ("  - {on: platform-event}\n", "needs the event's name"),
            (
                "  - {on: node-added, section: nodes}\n",
                "section filters only facts-changed",
            ),
        ] {
            let error = Metadata::parse(&with(triggers)).unwrap_err().to_string();
            assert!(
                error.contains("reapply_triggers[0]") && error.contains(says),
                "{error}"
            );
        }
        let error = Metadata::parse(&format!(
            "{HELLO}reapply_triggers:\n  - {{on: node-added}}\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("no plugin declares the evaluate-reapply hook"),
            "{error}"
        );
        let error = Metadata::parse(&with("  - {on: node-moved}\n"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("node-moved"), "{error}");
    }

    #[test]
    fn invalid_names_and_versions_are_syntax_errors() {
        let bad_name = HELLO.replace("name: hello\nversion", "name: Hello\nversion");
        assert!(matches!(
            Metadata::parse(&bad_name),
            Err(Error::MetadataSyntax { line: 1, .. })
        ));
        let bad_version = HELLO.replace("version: 1.2.0", "version: one");
        assert!(matches!(
            Metadata::parse(&bad_version),
            Err(Error::MetadataSyntax { line: 2, .. })
        ));
    }

    fn invalid_field(text: &str) -> String {
        match Metadata::parse(text) {
            Err(Error::MetadataInvalid { field, .. }) => field,
            other => panic!("expected an invalid-metadata error, got {other:?}"),
        }
    }

    #[test]
    fn consistency_errors_name_the_field() {
        assert_eq!(
            invalid_field(&HELLO.replace("charts: [extra]", "charts: [extra, nope]")),
            "chart_groups[1].charts"
        );
        assert_eq!(
            invalid_field(&HELLO.replace("charts: [extra]", "charts: []")),
            "chart_groups"
        );
        assert_eq!(
            invalid_field(&HELLO.replace("charts: [extra]", "charts: [extra, hello]")),
            "chart_groups[1].charts"
        );
        assert_eq!(
            invalid_field(&HELLO.replace("path: charts/hello\n", "path: ../hello\n")),
            "charts[0].path"
        );
        assert_eq!(
            invalid_field(&HELLO.replace("plugins/storage.wasm", "plugins/storage.so")),
            "plugins[0].path"
        );
        assert_eq!(
            invalid_field(&HELLO.replace("overrides/hello.yaml", "values/hello.yaml")),
            "charts[0].overrides[0]"
        );
        assert_eq!(
            invalid_field(&HELLO.replace("    chart: hello\n", "    chart: nope\n")),
            "components[0].chart"
        );
    }

    #[test]
    fn check_files_finds_missing_references() {
        let metadata = Metadata::parse(HELLO).unwrap();
        let files = [
            "charts/hello/Chart.yaml",
            "charts/extra-0.1.0.tgz",
            "overrides/hello.yaml",
            "plugins/storage.wasm",
        ];
        let manifest_without =
            |skip: &str| {
                Manifest::from_entries(files.iter().filter(|f| **f != skip).map(|path| {
                    ManifestEntry {
                        path: path.to_string(),
                        digest: Digest::of(b""),
                    }
                }))
                .unwrap()
            };
        metadata.check_files(&manifest_without("")).unwrap();
        for (skip, what) in [
            ("charts/hello/Chart.yaml", "chart"),
            ("charts/extra-0.1.0.tgz", "chart"),
            ("overrides/hello.yaml", "override"),
            ("plugins/storage.wasm", "plugin"),
        ] {
            let err = metadata.check_files(&manifest_without(skip)).unwrap_err();
            assert!(
                matches!(err, Error::MissingReference { what: w, .. } if w == what),
                "{skip}"
            );
        }
    }

    #[test]
    fn kube_versions_parse_strictly() {
        assert_eq!(KubeVersion::parse("v1.30.2").unwrap().patch, 2);
        for bad in ["1", "1.x", "1.30.2.1", "", "1..2"] {
            assert!(KubeVersion::parse(bad).is_err(), "{bad}");
        }
    }
}
