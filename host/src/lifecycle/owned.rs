//! The owned release: the release (`APP/_owned`) holding what plugins
//! ensured and the secrets the host generated for them, kept across
//! operations and removed with the app.

use crate::bundle::Metadata;
use crate::kube::{self, Release, Resource};
use crate::lifecycle::Error;
use crate::lifecycle::job::{Job, Prepared};
use crate::model::{AppName, LookupQuery, ObjectRef};

/// The chart name of an app's owned release (a name no bundle chart may
/// take: chart names are validated against it).
pub const OWNED_CHART: &str = "capstan-owned";

/// An error of the target reading or writing the owned release.
pub(crate) fn owned_error(source: kube::Error) -> Error {
    Error::Kube {
        chart: OWNED_CHART.into(),
        source: Box::new(source),
    }
}

/// The release that holds what `app`'s hooks ensured and mirrored, and
/// its generated secrets: chart [`OWNED_CHART`], release `APP-owned`, in
/// the namespace of the version's first chart.
pub(crate) fn owned_release_of(app: &AppName, metadata: &Metadata) -> Release {
    Release {
        app: app.to_string(),
        chart: OWNED_CHART.to_string(),
        namespace: metadata
            .charts
            .first()
            .map(|c| c.namespace.to_string())
            .unwrap_or_default(),
        release_name: format!("{app}-owned"),
    }
}

/// The label naming a generated secret.
pub const GENERATED_LABEL: &str = "capstan.dev/generated-secret";

/// The release that holds what the app's hooks ensured and mirrored.
pub(crate) fn owned_release(job: &Job<'_>, prepared: &Prepared<'_>) -> Release {
    owned_release_of(&job.app, &prepared.request.version.metadata)
}

/// Applies `object` in the owned release now (see [`Job::ensure`]).
pub(crate) fn ensure_owned(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    object: Resource,
) -> Result<(), Error> {
    ensure(job, prepared, object)
}

/// Counts `object`, which the owned release already holds as it is,
/// among what this operation ensured, so that it is not pruned.
pub(crate) fn keep_owned(_job: &Job<'_>, prepared: &Prepared<'_>, object: Resource) {
    let mut ensured = prepared.ensured();
    ensured.retain(|r| r.id().key() != object.id().key());
    ensured.push(object);
}

/// After a successful apply: the owned release holds exactly what this
/// operation's hooks ensured (what they no longer ask for is pruned).
pub(crate) fn settle_owned(job: &Job<'_>, prepared: &Prepared<'_>) -> Result<(), Error> {
    let release = owned_release(job, prepared);
    let held = job.target().applied(&release).map_err(owned_error)?;
    let ensured = prepared.ensured().clone();
    if held.is_empty() && ensured.is_empty() {
        return Ok(());
    }
    if ensured.is_empty() {
        job.target().remove(&release).map_err(owned_error)?;
        return Ok(());
    }
    let plan = kube::plan_apply(&held, &ensured).map_err(owned_error)?;
    if !plan.to_prune().is_empty() {
        job.target().apply(&release, &plan).map_err(owned_error)?;
    }
    Ok(())
}

/// Removes the owned release (with the app); with `keep_secrets`, the
/// Secrets labelled as generated secrets stay in it and the rest is
/// pruned.
pub(crate) fn remove_owned(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    keep_secrets: bool,
) -> Result<(), Error> {
    let release = owned_release(job, prepared);
    let held = job.target().applied(&release).map_err(owned_error)?;
    let mut kept = Vec::new();
    if keep_secrets {
        for resource in &held {
            let id = resource.id();
            if id.api_version != "v1" || id.kind != "Secret" {
                continue;
            }
            let live = job
                .view()
                .read_live(&LookupQuery::new(
                    "v1",
                    "Secret",
                    id.namespace.as_deref().unwrap_or_default(),
                    &id.name,
                ))
                .map_err(owned_error)?;
            let generated = live
                .pointer("/metadata/labels")
                .and_then(|labels| labels.get(GENERATED_LABEL))
                .is_some();
            if generated {
                kept.push(id.clone());
            }
        }
    }
    if kept.is_empty() {
        return job.target().remove(&release).map(drop).map_err(owned_error);
    }
    let prune: Vec<ObjectRef> = held
        .iter()
        .map(|r| r.id().clone())
        .filter(|id| !kept.iter().any(|k| k.key() == id.key()))
        .collect();
    job.target()
        .apply_some(&release, &[], &prune)
        .map_err(owned_error)?;
    let names: Vec<String> = kept
        .iter()
        .map(|k| format!("{}/{}", k.namespace.as_deref().unwrap_or_default(), k.name))
        .collect();
    job.note(format!(
        "kept the generated secrets {} (`app delete` removes them)",
        names.join(", ")
    ));
    Ok(())
}

/// Deletes an object one of the app's releases holds: pruned from
/// that release, the rest of it left as it is.
pub(crate) fn delete_owned(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    object: &ObjectRef,
) -> Result<(), Error> {
    let Some(release) = owning_release(job, prepared, object)? else {
        return Ok(());
    };
    let kube_err = |source| Error::Kube {
        chart: release.chart.clone(),
        source: Box::new(source),
    };
    let key = object.key();
    job.target()
        .apply_some(&release, &[], std::slice::from_ref(object))
        .map_err(kube_err)?;
    prepared.ensured().retain(|r| r.id().key() != key);
    job.note(format!("deleted {object} at a plugin's request"));
    Ok(())
}

/// The release of this app that holds `object`, if one does.
pub(crate) fn owning_release(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    object: &ObjectRef,
) -> Result<Option<Release>, Error> {
    let version = prepared.request.version;
    let mut releases: Vec<Release> = version
        .metadata
        .charts
        .iter()
        .map(|chart| version.release(&job.app, chart))
        .collect();
    releases.push(owned_release(job, prepared));
    let key = object.key();
    for release in releases {
        let held = job
            .target()
            .applied(&release)
            .map_err(|source| Error::Kube {
                chart: release.chart.clone(),
                source: Box::new(source),
            })?;
        if held.iter().any(|r| r.id().key() == key) {
            return Ok(Some(release));
        }
    }
    Ok(None)
}

/// Applies `object` in the owned release and counts it among what
/// this operation ensured; what the release held before stays as it
/// is (nothing is pruned until [`Job::settle_owned`]).
pub(crate) fn ensure(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    object: Resource,
) -> Result<(), Error> {
    let release = owned_release(job, prepared);
    let id = object.id().clone();
    let mut ensured = prepared.ensured();
    ensured.retain(|r| r.id().key() != object.id().key());
    ensured.push(object.clone());
    drop(ensured);
    job.target()
        .apply_some(&release, &[object], &[])
        .map_err(owned_error)?;
    tracing::info!(target: "capstan::audit", app = %job.app, object = %id, "applied at a plugin's request in the owned release");
    Ok(())
}
