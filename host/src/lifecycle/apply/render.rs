//! Render: every enabled chart rendered and planned against what the
//! target has applied, grouped as `capstan.yaml` orders them.

use crate::bundle::{self, GroupMode};
use crate::kube::{ApplyOptions, Release, Resource};
use crate::lifecycle::Error;
use crate::lifecycle::apply::prepare::ask_workload_kind;
use crate::lifecycle::apply::prepare::local_volumes;
use crate::lifecycle::apply::prepare::merged_overrides;
use crate::lifecycle::apply::prepare::stored_decisions;
use crate::lifecycle::job::Apply;
use crate::lifecycle::job::Job;
use crate::lifecycle::job::Prepared;
use crate::lifecycle::plan::{self, ChartInput, NewDecision};
use crate::model::ComponentSpec;
use crate::render::{self, ReleaseInfo};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// One chart planned, ready to apply.
pub(crate) struct RenderedChart {
    pub(crate) name: String,
    pub(crate) release: Release,
    pub(crate) live: Vec<Resource>,
    pub(crate) desired: Vec<Resource>,
    pub(crate) hooks: Vec<Resource>,
    pub(crate) new_decisions: Vec<NewDecision>,
    /// `.Release.Revision` it was rendered with.
    pub(crate) revision: u64,
    /// What the target is told for this chart: the operator's flags,
    /// what `capstan.yaml` says of the chart (timeout, waiting for a load
    /// balancer), the releases the operation lets go of (take-over) and
    /// the revision. Made once, here, and handed to the target as is.
    pub(crate) options: ApplyOptions,
}

/// A chart group's rendered charts, in order.
pub(crate) struct RenderedGroup {
    pub(crate) name: String,
    pub(crate) mode: GroupMode,
    pub(crate) charts: Vec<RenderedChart>,
}

/// Plans every enabled chart before anything is applied or stored, so a
/// template error, a workload error or a volume conflict in any chart
/// stops the apply with the store and the target untouched.
pub(crate) fn render_all(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
) -> Result<Vec<RenderedGroup>, Error> {
    let version = prepared.request.version;
    let take_over = let_go(job, prepared.request);
    let mut groups = Vec::new();
    for group in &version.metadata.chart_groups {
        let mut charts = Vec::new();
        for chart in group
            .charts
            .iter()
            .filter_map(|name| version.metadata.chart(name))
            .filter(|chart| chart.enabled && !prepared.disabled.contains(chart.name.as_str()))
        {
            let name = chart.name.to_string();
            job.step(
                prepared.request.phase,
                &format!("render:{name}"),
                &format!("group {}: chart {name}: rendering", group.name),
            )?;
            let release = version.release(&job.app, chart);
            let live = job
                .target()
                .applied(&release)
                .map_err(|source| Error::Kube {
                    chart: name.clone(),
                    source: Box::new(source),
                })?;
            let revision = next_revision(job, &release, &live)?;
            let planned = plan_chart(job, prepared, chart, !live.is_empty(), revision)?;
            let fields = field_policy(
                &version.metadata,
                prepared.request.flags.force_conflicts,
                &planned.desired,
                chart.namespace.as_str(),
            );
            for warning in planned.warnings {
                job.warn(warning);
            }
            charts.push(RenderedChart {
                name,
                release,
                live,
                desired: planned.desired,
                hooks: planned.hooks,
                new_decisions: planned.new_decisions,
                revision,
                options: ApplyOptions {
                    adopt: prepared.request.flags.adopt,
                    timeout: chart.timeout,
                    wait_for_load_balancer: version.metadata.waits_for_load_balancer(chart),
                    recreate: prepared.request.flags.recreate.clone(),
                    take_over: take_over.clone(),
                    revision: Some(revision),
                    fields,
                    ..ApplyOptions::default()
                },
            });
        }
        let added: BTreeSet<String> = charts
            .iter()
            .flat_map(|c| crate::lifecycle::lookup::crd_api_versions(&c.desired))
            .collect();
        prepared.planned().extend(added);
        groups.push(RenderedGroup {
            name: group.name.clone(),
            mode: group.mode,
            charts,
        });
    }
    Ok(groups)
}

/// The field policy a chart's objects are applied with: the app's
/// `conflicts` (taken back for this operation with `force`) and `ignore`
/// rules, and the rules the chart's own autoscalers imply.
pub(crate) fn field_policy(
    metadata: &bundle::Metadata,
    force: bool,
    desired: &[Resource],
    namespace: &str,
) -> crate::model::FieldPolicy {
    let mut policy = metadata.field_policy();
    if force {
        policy.conflicts = crate::model::Conflicts::Force;
    }
    policy.ignore.extend(crate::model::autoscaled(
        desired.iter().map(Resource::object),
        namespace,
    ));
    policy
}

/// Reads what planning a chart needs (its files, its layers, the
/// stored decisions, the plugins' answers for components decided now,
/// the local volumes) and plans it. Writes nothing.
pub(crate) fn plan_chart(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    chart: &bundle::Chart,
    is_upgrade: bool,
    revision: u64,
) -> Result<plan::ChartPlan, Error> {
    let name = chart.name.to_string();
    let version = prepared.request.version;
    let overrides = merged_overrides(job, prepared, &name)?;
    let render_err = |source| Error::Render {
        chart: name.clone(),
        source: Box::new(source),
    };
    let loaded = render::chart::load(&version.dir.join(&chart.path)).map_err(render_err)?;
    let release = ReleaseInfo {
        name: chart.release.to_string(),
        namespace: chart.namespace.to_string(),
        revision: i64::try_from(revision).unwrap_or(i64::MAX),
        is_upgrade,
    };
    let kube_version = format!("v{}", prepared.facts.kubernetes_version);
    let capabilities = crate::lifecycle::lookup::capabilities(
        prepared.served.as_ref(),
        &prepared.planned(),
        &kube_version,
    )
    .map_err(render_err)?;
    let own_namespaces = version
        .metadata
        .charts
        .iter()
        .map(|c| c.namespace.to_string())
        .collect();
    let lookup = Arc::new(crate::lifecycle::lookup::TargetLookup::new(
        job.inner.services.view.clone(),
        job.inner.policies.lookup.clone(),
        own_namespaces,
    ));
    let components: Vec<ComponentSpec> = version
        .metadata
        .components
        .iter()
        .filter(|c| c.chart == chart.name)
        .cloned()
        .collect();
    let stored = stored_decisions(job, &components)?;
    let rekind: BTreeSet<String> = prepared.request.flags.rekind.iter().cloned().collect();
    let mut plugin_choices = BTreeMap::new();
    for component in &components {
        if plan::needs_decision(component, &stored, &rekind)
            && let Some(choice) = ask_workload_kind(job, prepared, component)?
        {
            plugin_choices.insert(component.name.to_string(), choice);
        }
    }
    let local_volumes = local_volumes(job, &components, &release.namespace)?;
    plan::plan_chart(&ChartInput {
        name: &name,
        chart: &loaded,
        overrides: &overrides,
        release: &release,
        capabilities: &capabilities,
        components: &components,
        stored: &stored,
        plugin_choices: &plugin_choices,
        rekind: &rekind,
        local_volumes: &local_volumes,
        lookup,
    })
}

/// The revision the next apply of `release` renders as
/// (`.Release.Revision`): one more than the target's record says (the
/// release Secret on a cluster), or than the store's copy where the
/// target keeps none; 1 for an install. A release with objects but no
/// revision anywhere (applied before revisions were recorded) has had
/// one.
pub(crate) fn next_revision(
    job: &Job<'_>,
    release: &Release,
    live: &[Resource],
) -> Result<u64, Error> {
    let recorded = match job
        .target()
        .revision(release)
        .map_err(|source| Error::Kube {
            chart: release.chart.clone(),
            source: Box::new(source),
        })? {
        Some(revision) => revision,
        None => job
            .store()
            .release(&job.app, &release.chart)?
            .map_or(0, |r| r.revision),
    };
    let recorded = if recorded == 0 && !live.is_empty() {
        1
    } else {
        recorded
    };
    Ok(recorded.saturating_add(1))
}

/// The releases (`APP/CHART`) of the charts the version `request`
/// replaces and does not have itself: [`Job::prune_charts`] removes
/// them after the apply, so the charts of this version may take
/// their objects over (a renamed chart's).
pub(crate) fn let_go(job: &Job<'_>, request: &Apply<'_>) -> Vec<String> {
    let Some(replacing) = request.replacing else {
        return Vec::new();
    };
    replacing
        .metadata
        .charts
        .iter()
        .filter(|old| request.version.metadata.chart(&old.name).is_none())
        .map(|old| replacing.release(&job.app, old).to_string())
        .collect()
}
