//! `app diff`: what an apply would change, chart by chart, from the
//! same prepare and render as an apply, writing nothing.

use crate::kube::{self, LiveChange, LiveDiff};
use crate::lifecycle::Error;
use crate::lifecycle::apply::prepare::load;
use crate::lifecycle::apply::prepare::system_overrides;
use crate::lifecycle::apply::render::field_policy;
use crate::lifecycle::apply::render::next_revision;
use crate::lifecycle::apply::render::plan_chart;
use crate::lifecycle::job::Job;
use crate::lifecycle::job::UserLayer;
use crate::lifecycle::job::{Apply, NO_FLAGS};
use crate::lifecycle::stored::StoredVersion;
use crate::model::ObjectDrift;
use serde::{Deserialize, Serialize};

/// What an apply would change in one chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ChartDiff {
    /// The chart.
    pub chart: String,
    /// Objects that would be created.
    pub added: usize,
    /// Objects that would change.
    pub changed: usize,
    /// Objects that would be deleted.
    pub removed: usize,
    /// The unified diff, as `kube::Diff` prints it; on a cluster, each
    /// drifted object's diff is preceded by a `# drifted:` line per field
    /// another manager changed.
    pub text: String,
    /// The objects other managers drifted (a cluster target only), each
    /// with the fields a re-apply would take back and who changed them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<ObjectDrift>,
}

/// A chart's diff from a target's live (dry-run) comparison.
pub(crate) fn chart_diff_of(chart: String, live: &[LiveDiff]) -> ChartDiff {
    let count = |change: LiveChange| live.iter().filter(|d| d.change == change).count();
    let text = live
        .iter()
        .map(|d| {
            let drift: String = d
                .drift
                .iter()
                .map(|field| format!("# drifted: {field}\n"))
                .collect();
            format!("--- {}\n{drift}{}", d.object, d.text)
        })
        .collect();
    ChartDiff {
        chart,
        added: count(LiveChange::Create),
        changed: count(LiveChange::Update),
        removed: count(LiveChange::Prune),
        text,
        drift: live
            .iter()
            .filter(|d| !d.drift.is_empty())
            .map(|d| ObjectDrift {
                object: d.object.to_string(),
                deleted: false,
                fields: d.drift.clone(),
            })
            .collect(),
    }
}

/// Every chart's desired objects and what they change against the
/// target, without applying or storing anything; the charts of
/// `replacing` that `version` lacks show as removed.
pub fn diff(
    job: &Job<'_>,
    version: &StoredVersion,
    replacing: Option<&StoredVersion>,
) -> Result<Vec<ChartDiff>, Error> {
    let request = Apply {
        version,
        replacing,
        user: UserLayer::Stored,
        flags: &NO_FLAGS,
        around: None,
        phase: "diff",
    };
    let mut prepared = load(job, &request)?;
    let (system, disabled, secret_layers) = system_overrides(job, &prepared)?;
    prepared.system = system;
    prepared.disabled = disabled;
    prepared.secret_layers = secret_layers;
    let mut diffs = Vec::new();
    for chart in &version.metadata.charts {
        let name = chart.name.to_string();
        let release = version.release(&job.app, chart);
        let kube_err = |source| Error::Kube {
            chart: name.clone(),
            source: Box::new(source),
        };
        let live = job.target().applied(&release).map_err(kube_err)?;
        let desired = if chart.enabled {
            let revision = next_revision(job, &release, &live)?;
            let desired = plan_chart(job, &prepared, chart, !live.is_empty(), revision)?.desired;
            prepared
                .planned()
                .extend(crate::lifecycle::lookup::crd_api_versions(&desired));
            desired
        } else {
            Vec::new()
        };
        let options = kube::ApplyOptions {
            fields: field_policy(&version.metadata, false, &desired, chart.namespace.as_str()),
            ..kube::ApplyOptions::default()
        };
        if let Some(live_diffs) = job
            .target()
            .diff_live(&release, &desired, &options)
            .map_err(kube_err)?
        {
            let mut chart_diff = chart_diff_of(name, &live_diffs);
            chart_diff.text = job.redact(&chart_diff.text);
            diffs.push(chart_diff);
            continue;
        }
        let diff = kube::diff(&live, &desired).map_err(kube_err)?;
        diffs.push(ChartDiff {
            chart: name,
            added: diff.added.len(),
            changed: diff.changed.len(),
            removed: diff.removed.len(),
            text: job.redact(&diff.to_string()),
            drift: Vec::new(),
        });
    }
    for old in replacing.into_iter() {
        for chart in &old.metadata.charts {
            if version.metadata.chart(&chart.name).is_some() {
                continue;
            }
            let name = chart.name.to_string();
            let release = old.release(&job.app, chart);
            let kube_err = |source| Error::Kube {
                chart: name.clone(),
                source: Box::new(source),
            };
            let live = job.target().applied(&release).map_err(kube_err)?;
            let diff = kube::diff(&live, &[]).map_err(kube_err)?;
            diffs.push(ChartDiff {
                chart: name,
                added: diff.added.len(),
                changed: diff.changed.len(),
                removed: diff.removed.len(),
                text: job.redact(&diff.to_string()),
                drift: Vec::new(),
            });
        }
    }
    Ok(diffs)
}
