//! Apply: each chart group in order, its charts one after another or
//! side by side, through the target, with progress recorded per chart.

use crate::kube::{self, ApplyEvent, HookEvent, ProgressSink};
use crate::lifecycle::Error;
use crate::lifecycle::apply::commit::record_release;
use crate::lifecycle::apply::commit::record_release_after_failure;
use crate::lifecycle::apply::render::RenderedChart;
use crate::lifecycle::job::Job;
use crate::lifecycle::stored::StoredVersion;

/// Writes what a target reports while it applies or removes into the
/// operation's progress line, so `app show` and the CLI's wait say which
/// object is still pending and why.
pub(crate) struct StoreProgress<'j, 'a> {
    pub(crate) job: &'j Job<'a>,
    pub(crate) prefix: String,
}

impl ProgressSink for StoreProgress<'_, '_> {
    fn event(&self, event: &ApplyEvent<'_>) {
        let line = match event {
            ApplyEvent::Stage { stage, objects } => {
                format!("{}: stage {stage}: {objects} object(s)", self.prefix)
            }
            ApplyEvent::Waiting { pending } => match pending.first() {
                Some((object, why)) if pending.len() == 1 => {
                    format!("{}: waiting for {object}: {why}", self.prefix)
                }
                Some((object, why)) => format!(
                    "{}: waiting for {} object(s), {object}: {why}",
                    self.prefix,
                    pending.len()
                ),
                None => return,
            },
            _ => return,
        };
        if let Err(e) = self
            .job
            .inner
            .services
            .store
            .set_progress(self.job.op, Some(&line))
        {
            tracing::warn!(error = %e, "could not record progress");
        }
    }
}

pub(crate) fn apply_parallel(
    job: &Job<'_>,
    phase: &str,
    group: &str,
    charts: &[RenderedChart],
) -> Result<(), Error> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = charts
            .iter()
            .map(|chart| scope.spawn(move || apply_chart(job, phase, group, chart)))
            .collect();
        let mut first_error = None;
        for handle in handles {
            let result = handle.join().unwrap_or_else(|_| {
                Err(Error::WorkerPanicked {
                    what: format!("applying a chart of group {group}"),
                })
            });
            if let Err(e) = result {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    })
}

pub(crate) fn apply_chart(
    job: &Job<'_>,
    phase: &str,
    group: &str,
    chart: &RenderedChart,
) -> Result<(), Error> {
    let name = &chart.name;
    let board = chart_run(job, name);
    let kube_err = |source| Error::Kube {
        chart: name.clone(),
        source: Box::new(source),
    };
    let plan = kube::plan_apply(&chart.live, &chart.desired).map_err(kube_err)?;
    job.step(
        phase,
        &format!("apply:{name}"),
        &format!(
            "group {group}: chart {name}: applying {} object(s), pruning {}",
            plan.to_apply().len(),
            plan.to_prune().len()
        ),
    )?;
    let options = &chart.options;
    let progress = StoreProgress {
        job,
        prefix: format!("group {group}: chart {name}"),
    };
    let (before, after) = if chart.live.is_empty() {
        (HookEvent::PreInstall, HookEvent::PostInstall)
    } else {
        (HookEvent::PreUpgrade, HookEvent::PostUpgrade)
    };
    job.target()
        .run_hooks(&chart.release, before, &chart.hooks, options, &progress)
        .map_err(kube_err)?;
    let outcome = job
        .target()
        .apply_with(&chart.release, &plan, options, &progress);
    match outcome {
        Ok(applied) => {
            let changed = applied.applied.len() > applied.unchanged || !applied.pruned.is_empty();
            record_release(job, &chart.release, changed.then_some(chart.revision))?;
            crate::lifecycle::drifted::follow(
                job.view(),
                &job.app,
                &chart.release,
                &applied.held,
                &options.fields,
            );
        }
        Err(source) => {
            record_release_after_failure(job, &chart.release, Some(chart.revision));
            return Err(kube_err(source));
        }
    }
    job.target()
        .run_hooks(&chart.release, after, &chart.hooks, options, &progress)
        .map_err(kube_err)?;
    job.inner
        .work
        .checkpoints
        .reach(&format!("{phase}:applied:{name}"));
    board.done();
    Ok(())
}

/// Lists the charts of `versions` on the board, all pending, each
/// once: the enabled ones in apply order, or for a remove (`reverse`)
/// every one, chart groups in reverse order, as the remove runs them.
pub(crate) fn charts_begin<'v>(
    job: &Job<'_>,
    versions: impl IntoIterator<Item = &'v StoredVersion>,
    reverse: bool,
) {
    let mut listed: Vec<(String, String)> = Vec::new();
    for version in versions {
        let groups: Vec<_> = if reverse {
            version.metadata.chart_groups.iter().rev().collect()
        } else {
            version.metadata.chart_groups.iter().collect()
        };
        for group in groups {
            let names: Vec<_> = if reverse {
                group.charts.iter().rev().collect()
            } else {
                group.charts.iter().collect()
            };
            for chart in names.into_iter().filter_map(|n| version.metadata.chart(n)) {
                let name = chart.name.to_string();
                if (reverse || chart.enabled) && !listed.iter().any(|(_, c)| *c == name) {
                    listed.push((group.name.clone(), name));
                }
            }
        }
    }
    job.inner
        .work
        .charts
        .begin(job.app.as_str(), job.op, listed);
}

/// Marks `chart` running on the board until the returned guard is
/// done (done) or dropped (failed).
pub(crate) fn chart_run<'c>(
    job: &'c Job<'_>,
    chart: &'c str,
) -> crate::lifecycle::progress::ChartRun<'c> {
    crate::lifecycle::progress::ChartRun::start(
        &job.inner.work.charts,
        job.app.as_str(),
        job.op,
        chart,
    )
}
