//! The pure planning step of an apply: from a chart, its merged override
//! layers, the stored workload decisions and the plugins' answers to the
//! objects the target should hold and the decisions to store.
//!
//! Planning writes nothing and calls nothing: the run step
//! ([`super::apply`]) reads the store, loads the chart and asks the plugins
//! first, hands the answers here, and only commits what this returns once
//! the `pre-apply` hook has not vetoed. `app diff` is planning alone.

use std::collections::{BTreeMap, BTreeSet};

use crate::kube::Resource;
use crate::model::{ComponentName, ComponentSpec, WorkloadKind};
use crate::render::{self, Capabilities, ReleaseInfo};
use crate::values::Map;
use crate::volumes::LocalVolume;
use crate::workload::{self, DecidedBy, Decision};

use super::Error;

/// A plugin's answer to `workload-kind` for one component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PluginChoice {
    /// The kind it chose.
    pub kind: WorkloadKind,
    /// The plugin that chose it (its name in the bundle).
    pub plugin: String,
}

/// Everything planning one chart needs, read beforehand.
pub(crate) struct ChartInput<'a> {
    /// The chart's name in the app.
    pub name: &'a str,
    /// The loaded chart.
    pub chart: &'a render::Chart,
    /// The override layers merged (static < system < user).
    pub overrides: &'a Map,
    /// The release it is rendered as.
    pub release: &'a ReleaseInfo,
    /// What the renderer reports as the cluster's capabilities.
    pub capabilities: &'a Capabilities,
    /// The app's components that this chart renders.
    pub components: &'a [ComponentSpec],
    /// The stored decisions, by component name.
    pub stored: &'a BTreeMap<String, Decision>,
    /// The plugins' answers for the components being decided (see
    /// [`needs_decision`]); a component with no entry had no plugin decide.
    pub plugin_choices: &'a BTreeMap<String, PluginChoice>,
    /// The components the operator asked to decide again.
    pub rekind: &'a BTreeSet<String>,
    /// The local volumes the components mount, by name.
    pub local_volumes: &'a BTreeMap<String, LocalVolume>,
    /// What answers the chart's `lookup` calls: the target, under the
    /// lookup policy (reads only; the plan still writes nothing).
    pub lookup: std::sync::Arc<dyn render::Lookup>,
}

/// A decision made by this plan, to be stored when the apply commits.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NewDecision {
    /// The component.
    pub component: ComponentName,
    /// The decision.
    pub decision: Decision,
    /// Who decided, as the store records it: a plugin's name,
    /// `default-rule` or `rekind`.
    pub decided_by: String,
}

/// What one chart's plan says.
#[derive(Debug, Clone)]
pub(crate) struct ChartPlan {
    /// The objects the target should hold for the chart.
    pub desired: Vec<Resource>,
    /// The chart's Helm hook objects (`helm.sh/hook`), in the namespace of
    /// the release when they name none; not part of `desired` (a target
    /// runs them around the apply, as Helm does).
    pub hooks: Vec<Resource>,
    /// Decisions made now (first applies and rekinds), to store on commit.
    pub new_decisions: Vec<NewDecision>,
    /// Things a person should know; the plan succeeded.
    pub warnings: Vec<String>,
}

/// Whether a component's kind is decided in this apply (so its plugins
/// are asked): it has no stored decision, or the operator asked again.
pub(crate) fn needs_decision(
    component: &ComponentSpec,
    stored: &BTreeMap<String, Decision>,
    rekind: &BTreeSet<String>,
) -> bool {
    !stored.contains_key(component.name.as_str()) || rekind.contains(component.name.as_str())
}

/// Plans one chart: renders it with the merged layers, reads the output
/// once with the Helm manifest reader, puts namespace-less objects in the
/// release's namespace, applies the sticky workload decisions and mounts
/// the local volumes.
///
/// # Errors
/// [`Error::Render`] for a template or values error, [`Error::Workload`]
/// for a transform that cannot be made, [`Error::Kube`] for an object
/// without a usable identity; each names the chart.
pub(crate) fn plan_chart(input: &ChartInput<'_>) -> Result<ChartPlan, Error> {
    let render_err = |source| Error::Render {
        chart: input.name.to_owned(),
        source: Box::new(source),
    };
    let rendered = render::render_connected(
        input.chart,
        input.overrides,
        input.release,
        input.capabilities,
        &*input.lookup,
    )
    .map_err(render_err)?;
    // The charts' `crds/` files first (Helm installs them before the
    // templates); the cluster target stages CRDs first anyway and never
    // prunes them, and a remove leaves them unless purged, as Helm's
    // uninstall does (they are marked install-only below).
    let crd_objects = rendered.crd_objects().map_err(render_err)?;
    let from_crds_folder: BTreeSet<String> = crd_objects
        .iter()
        .filter_map(|r| {
            r.object
                .pointer("/metadata/name")?
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    let objects: Vec<serde_json::Value> = crd_objects
        .into_iter()
        .chain(rendered.objects().map_err(render_err)?)
        .map(|r| with_namespace(r.object, &input.release.namespace))
        .collect();
    let hooks = rendered
        .hook_objects()
        .map_err(render_err)?
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let label = format!("{} hook {} ({})", input.name, i + 1, r.source);
            Resource::from_value(with_namespace(r.object, &input.release.namespace), label)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| Error::Kube {
            chart: input.name.to_owned(),
            source: Box::new(source),
        })?;
    let mut warnings = Vec::new();
    let (objects, new_decisions) = transform_workloads(input, objects, &mut warnings)?;
    let desired = objects
        .into_iter()
        .enumerate()
        .map(|(i, o)| {
            let resource = Resource::from_value(o, format!("{} object {}", input.name, i + 1))?;
            let id = resource.id();
            Ok::<_, crate::kube::Error>(
                if id.kind == "CustomResourceDefinition"
                    && id.group() == "apiextensions.k8s.io"
                    && from_crds_folder.contains(&id.name)
                {
                    resource.install_only()
                } else {
                    resource
                },
            )
        })
        .collect::<Result<_, _>>()
        .map_err(|source| Error::Kube {
            chart: input.name.to_owned(),
            source: Box::new(source),
        })?;
    Ok(ChartPlan {
        desired,
        hooks,
        new_decisions,
        warnings,
    })
}

fn transform_workloads(
    input: &ChartInput<'_>,
    objects: Vec<serde_json::Value>,
    warnings: &mut Vec<String>,
) -> Result<(Vec<serde_json::Value>, Vec<NewDecision>), Error> {
    if input.components.is_empty() {
        return Ok((objects, Vec::new()));
    }
    let workload_err = |source| Error::Workload {
        chart: input.name.to_owned(),
        source: Box::new(source),
    };
    let mut decisions = BTreeMap::new();
    let mut new_decisions = Vec::new();
    for component in input.components {
        let (decision, made) = decide(input, component, warnings);
        if let Some(made) = made {
            new_decisions.push(made);
        }
        decisions.insert(component.name.to_string(), decision);
    }
    let applied =
        workload::apply_decisions(objects, input.components, &decisions).map_err(workload_err)?;
    for report in &applied.reports {
        for w in &report.warnings {
            warnings.push(format!("component {}: {w}", report.component));
        }
        if !report.dropped.is_empty() {
            warnings.push(format!(
                "component {}: fields with no StatefulSet counterpart dropped: {}",
                report.component,
                report.dropped.join(", ")
            ));
        }
    }
    let mut manifests = applied.manifests;
    workload::apply_local_volumes(&mut manifests, input.components, input.local_volumes)
        .map_err(workload_err)?;
    Ok((manifests, new_decisions))
}

/// The sticky decision for a component, and the decision to store when
/// one was made now.
fn decide(
    input: &ChartInput<'_>,
    component: &ComponentSpec,
    warnings: &mut Vec<String>,
) -> (Decision, Option<NewDecision>) {
    let name = component.name.as_str();
    let previous = input.stored.get(name);
    let rekind = input.rekind.contains(name);
    let choice = input.plugin_choices.get(name);
    let (decision, notes) =
        workload::decide(previous, choice.map(|c| c.kind), &component.traits, rekind);
    for w in notes {
        warnings.push(format!("component {}: {w}", component.name));
    }
    if previous.is_some() && !rekind {
        return (decision, None);
    }
    let decided_by = match decision.decided_by {
        DecidedBy::Plugin => choice.map_or_else(|| "plugin".into(), |c| c.plugin.clone()),
        DecidedBy::DefaultRule => "default-rule".into(),
        DecidedBy::Rekind => "rekind".into(),
    };
    let made = NewDecision {
        component: component.name.clone(),
        decision: decision.clone(),
        decided_by,
    };
    (decision, Some(made))
}

/// Objects that name no namespace go to the release's, as on a cluster.
fn with_namespace(mut object: serde_json::Value, namespace: &str) -> serde_json::Value {
    let kind = object
        .get("kind")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if !crate::kube::scope::builtin_namespaced(&kind) {
        return object;
    }
    if let Some(meta) = object
        .get_mut("metadata")
        .and_then(serde_json::Value::as_object_mut)
        && !meta.contains_key("namespace")
    {
        meta.insert("namespace".into(), namespace.into());
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ComponentSpec, Traits};
    use crate::workload::{Warning, traits_digest};

    /// A render that holds no live object.
    struct Offline;

    impl render::Lookup for Offline {
        fn lookup(&self, _: &crate::model::LookupQuery) -> Result<serde_json::Value, String> {
            Ok(serde_json::json!({}))
        }
    }

    const BROKER: &str = include_str!("../../../tests/fixtures/workload/rolling.yaml");
    const DROPPED: &str = "component broker: fields with no StatefulSet counterpart dropped: \
        spec.progressDeadlineSeconds, spec.strategy.rollingUpdate.maxSurge";

    struct Chart {
        _dir: tempfile::TempDir,
        chart: render::Chart,
    }

    fn chart() -> Chart {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("templates")).unwrap();
        std::fs::write(
            dir.path().join("Chart.yaml"),
            "apiVersion: v2\nname: kafka\nversion: 1.0.0\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("templates/broker.yaml"), BROKER).unwrap();
        let chart = render::chart::load_dir(dir.path()).unwrap();
        Chart { _dir: dir, chart }
    }

    fn broker(with_volume: bool) -> ComponentSpec {
        let volumes = if with_volume {
            "traits:\n  volumes:\n    - { container: 0, storageClassName: fast, size: 10Gi, path: /var/lib/kafka }\n"
        } else {
            ""
        };
        serde_yaml_ng::from_str(&format!(
            "name: broker\nchart: kafka\nworkload: Deployment/kafka-broker\n{volumes}"
        ))
        .unwrap()
    }

    fn stored(kind: WorkloadKind, traits: &Traits) -> BTreeMap<String, Decision> {
        BTreeMap::from([(
            "broker".to_owned(),
            Decision {
                kind,
                decided_by: DecidedBy::Plugin,
                traits_digest: traits_digest(traits),
            },
        )])
    }

    fn planned(
        component: &ComponentSpec,
        stored: &BTreeMap<String, Decision>,
        choices: &BTreeMap<String, PluginChoice>,
        rekind: &[&str],
    ) -> ChartPlan {
        let chart = chart();
        let release = ReleaseInfo {
            name: "broker".into(),
            namespace: "kafka".into(),
            revision: 1,
            is_upgrade: false,
        };
        let capabilities = Capabilities::new(Some("v1.33.0"), &[]).unwrap();
        let rekind: BTreeSet<String> = rekind.iter().map(|c| (*c).to_owned()).collect();
        plan_chart(&ChartInput {
            name: "kafka",
            chart: &chart.chart,
            overrides: &Map::new(),
            release: &release,
            capabilities: &capabilities,
            components: std::slice::from_ref(component),
            stored,
            plugin_choices: choices,
            rekind: &rekind,
            local_volumes: &BTreeMap::new(),
            lookup: std::sync::Arc::new(Offline),
        })
        .unwrap()
    }

    fn kinds(plan: &ChartPlan) -> Vec<String> {
        plan.desired.iter().map(|r| r.id().kind.clone()).collect()
    }

    fn choice(kind: WorkloadKind) -> BTreeMap<String, PluginChoice> {
        BTreeMap::from([(
            "broker".to_owned(),
            PluginChoice {
                kind,
                plugin: "kafka-placement".into(),
            },
        )])
    }

    #[test]
    fn a_first_apply_decides_by_the_plugin_and_says_so() {
        let component = broker(false);
        let plan = planned(
            &component,
            &BTreeMap::new(),
            &choice(WorkloadKind::StatefulSet),
            &[],
        );
        assert_eq!(kinds(&plan), ["Service", "StatefulSet"]);
        assert_eq!(plan.new_decisions.len(), 1);
        assert_eq!(plan.new_decisions[0].decided_by, "kafka-placement");
        assert_eq!(
            plan.new_decisions[0].decision.kind,
            WorkloadKind::StatefulSet
        );
    }

    #[test]
    fn without_a_plugin_the_default_rule_decides() {
        let plan = planned(&broker(true), &BTreeMap::new(), &BTreeMap::new(), &[]);
        assert_eq!(plan.new_decisions[0].decided_by, "default-rule");
        assert_eq!(
            plan.new_decisions[0].decision.kind,
            WorkloadKind::StatefulSet
        );
        let plan = planned(&broker(false), &BTreeMap::new(), &BTreeMap::new(), &[]);
        assert_eq!(
            plan.new_decisions[0].decision.kind,
            WorkloadKind::Deployment
        );
        assert_eq!(kinds(&plan), ["Deployment"]);
    }

    #[test]
    fn a_stored_decision_is_kept_and_nothing_new_is_stored() {
        let component = broker(false);
        let stored = stored(WorkloadKind::StatefulSet, &component.traits);
        let plan = planned(&component, &stored, &BTreeMap::new(), &[]);
        assert_eq!(kinds(&plan), ["Service", "StatefulSet"]);
        assert!(plan.new_decisions.is_empty());
        assert_eq!(plan.warnings, [DROPPED], "only the transform's note");
    }

    #[test]
    fn changed_traits_keep_the_kind_with_a_warning() {
        let before = broker(true);
        let stored = stored(WorkloadKind::StatefulSet, &before.traits);
        let plan = planned(&broker(false), &stored, &BTreeMap::new(), &[]);
        assert_eq!(kinds(&plan), ["Service", "StatefulSet"]);
        assert!(plan.new_decisions.is_empty());
        let expected = Warning::TraitsChanged {
            kept: WorkloadKind::StatefulSet,
            default_now: WorkloadKind::Deployment,
        };
        assert_eq!(
            plan.warnings,
            [format!("component broker: {expected}"), DROPPED.to_owned()]
        );
    }

    #[test]
    fn a_plugin_that_disagrees_with_the_stored_kind_is_overruled_with_a_warning() {
        let component = broker(false);
        let stored = stored(WorkloadKind::Deployment, &component.traits);
        let plan = planned(&component, &stored, &choice(WorkloadKind::StatefulSet), &[]);
        assert_eq!(kinds(&plan), ["Deployment"]);
        assert!(plan.new_decisions.is_empty());
        let expected = Warning::PluginDisagrees {
            kept: WorkloadKind::Deployment,
            plugin: WorkloadKind::StatefulSet,
        };
        assert_eq!(plan.warnings, [format!("component broker: {expected}")]);
    }

    #[test]
    fn rekind_decides_again_and_records_the_change() {
        let component = broker(false);
        let stored = stored(WorkloadKind::Deployment, &component.traits);
        assert!(needs_decision(
            &component,
            &stored,
            &BTreeSet::from(["broker".to_owned()])
        ));
        assert!(!needs_decision(&component, &stored, &BTreeSet::new()));
        let plan = planned(
            &component,
            &stored,
            &choice(WorkloadKind::StatefulSet),
            &["broker"],
        );
        assert_eq!(kinds(&plan), ["Service", "StatefulSet"]);
        assert_eq!(plan.new_decisions[0].decided_by, "rekind");
        assert_eq!(
            plan.new_decisions[0].decision.kind,
            WorkloadKind::StatefulSet
        );
        assert!(
            plan.warnings.iter().any(|w| w.contains("broker")),
            "{:?}",
            plan.warnings
        );
    }

    #[test]
    fn crds_files_come_first_and_hooks_apart() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("templates")).unwrap();
        std::fs::create_dir_all(dir.path().join("crds")).unwrap();
        std::fs::write(
            dir.path().join("Chart.yaml"),
            "apiVersion: v2\nname: op\nversion: 1.0.0\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("crds/widgets.yaml"),
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("templates/all.yaml"),
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install\n",
        )
        .unwrap();
        let chart = render::chart::load_dir(dir.path()).unwrap();
        let release = ReleaseInfo {
            name: "op".into(),
            namespace: "ops".into(),
            revision: 1,
            is_upgrade: false,
        };
        let capabilities = Capabilities::new(Some("v1.33.0"), &[]).unwrap();
        let plan = plan_chart(&ChartInput {
            name: "op",
            chart: &chart,
            overrides: &Map::new(),
            release: &release,
            capabilities: &capabilities,
            components: &[],
            stored: &BTreeMap::new(),
            plugin_choices: &BTreeMap::new(),
            rekind: &BTreeSet::new(),
            local_volumes: &BTreeMap::new(),
            lookup: std::sync::Arc::new(Offline),
        })
        .unwrap();
        assert_eq!(kinds(&plan), ["CustomResourceDefinition", "Widget"]);
        assert_eq!(plan.desired[0].id().namespace, None, "cluster-scoped");
        assert_eq!(plan.hooks.len(), 1);
        assert_eq!(plan.hooks[0].id().name, "migrate");
        assert_eq!(plan.hooks[0].id().namespace.as_deref(), Some("ops"));
    }

    #[test]
    fn objects_without_a_namespace_go_to_the_release_namespace() {
        let plan = planned(&broker(false), &BTreeMap::new(), &BTreeMap::new(), &[]);
        assert_eq!(plan.desired[0].id().namespace.as_deref(), Some("kafka"));
    }
}
