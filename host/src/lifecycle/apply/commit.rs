//! Commit: the decisions and system overrides an apply planned are
//! stored, and each release's record (revision, inventory) kept.

use crate::kube::Release;
use crate::lifecycle::Error;
use crate::lifecycle::apply::render::RenderedGroup;
use crate::lifecycle::job::Job;
use crate::lifecycle::job::Prepared;
use crate::store::{DecisionRecord, OverrideLayer, ReleaseRecord};

/// Stores what planning decided: the version's system overrides and
/// the workload decisions made now. Runs only after `pre-apply` has
/// not vetoed.
pub(crate) fn commit(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    groups: &[RenderedGroup],
) -> Result<(), Error> {
    let layer = OverrideLayer::System {
        version: prepared.request.version.version.clone(),
    };
    let charts: Vec<(String, serde_json::Value)> = prepared
        .system
        .iter()
        .map(|(c, v)| (c.clone(), v.clone()))
        .collect();
    job.store().replace_layer(&job.app, &layer, &charts)?;
    for made in groups
        .iter()
        .flat_map(|g| &g.charts)
        .flat_map(|c| &c.new_decisions)
    {
        job.store().record_decision(&DecisionRecord {
            app: job.app.clone(),
            component: made.component.to_string(),
            kind: made.decision.kind,
            decided_by: made.decided_by.clone(),
            traits_digest: made.decision.traits_digest.clone(),
            decided_at: 0,
        })?;
    }
    Ok(())
}

/// Writes the store's copy of `release`'s inventory from what the
/// target recorded after an apply: its objects, and the revision the
/// target keeps, else `changed_revision` when the apply changed
/// something, else the stored one. So the store and the release Secret
/// agree after every attempt.
pub(crate) fn record_release(
    job: &Job<'_>,
    release: &Release,
    changed_revision: Option<u64>,
) -> Result<(), Error> {
    let kube_err = |source| Error::Kube {
        chart: release.chart.clone(),
        source: Box::new(source),
    };
    let objects = job
        .target()
        .applied(release)
        .map_err(kube_err)?
        .iter()
        .map(|resource| resource.id().clone())
        .collect();
    let stored = job.store().release(&job.app, &release.chart)?;
    let revision = match job.target().revision(release).map_err(kube_err)? {
        Some(revision) => revision,
        None => changed_revision
            .or(stored.as_ref().map(|r| r.revision))
            .unwrap_or(0),
    };
    job.store().record_release(&ReleaseRecord {
        app: job.app.clone(),
        chart: release.chart.clone(),
        namespace: release.namespace.clone(),
        release_name: release.release_name.clone(),
        method: job.target().apply_method().to_owned(),
        revision,
        objects,
        updated_at: 0,
    })?;
    Ok(())
}

/// [`Job::record_release`] after a failed step: the failure is what
/// the operation reports, so a failure to record is a warning (the
/// next operation records again from the target).
pub(crate) fn record_release_after_failure(
    job: &Job<'_>,
    release: &Release,
    revision: Option<u64>,
) {
    if let Err(e) = record_release(job, release, revision) {
        job.warn(format!(
            "release {release}: could not record its inventory: {}",
            e.one_line()
        ));
    }
}

/// After a remove of `release`: forgets the store's copy when the
/// remove succeeded, else records what the target still holds.
pub(crate) fn release_removed(
    job: &Job<'_>,
    release: &Release,
    succeeded: bool,
) -> Result<(), Error> {
    if succeeded {
        job.view().unfollow(release);
        job.store().delete_release(&job.app, &release.chart)?;
    } else {
        record_release_after_failure(job, release, None);
    }
    Ok(())
}
