//! The way out for an app whose bundle cannot be read: in cluster mode
//! without `--bundle-registry`, a version no replica here holds; in any
//! mode, stored files damaged behind the daemon's back. A forced remove
//! ([`super::rules::FORCE_REMOVE_FROM`]) of such an app takes its
//! releases off the target from the inventories alone — the store's
//! release records name each release, the target's record names its
//! objects — and skips everything that needs the bundle: plugins (their
//! `pre-remove` and `post-remove` hooks), the charts' Helm delete hooks,
//! rendering. The operation's message says what was skipped and why, so
//! the history shows it. The app then ends `uploaded` and `app delete`
//! deletes it.
//!
//! Must not read the bundle or start a plugin; it removes only what a
//! target's record says was applied.

use crate::kube::Release;
use crate::store::ReleaseRecord;

use super::Error;
use super::job::Job;
use super::owned::{OWNED_CHART, owned_error};

/// Whether `error` is a bundle that cannot be read, so that only a
/// removal from the inventories ([`remove_without_bundle`]) can proceed.
pub(crate) fn unreadable(error: &Error) -> bool {
    matches!(error, Error::BundleHome { .. } | Error::StoredBundle { .. })
}

/// Removes every release the store records for the job's app (its owned
/// release too, unless `keep_secrets`), each through the target's own
/// record, going on past a failure (the removal is forced). Returns the
/// note for the operation's message: what was removed, what was skipped
/// and `why` (the bundle's error).
///
/// # Errors
/// An abort or a lost lead between releases ([`Job::step`]); the store.
/// A release the target cannot remove is a warning in the note and keeps
/// its record.
pub(crate) fn remove_without_bundle(
    job: &Job<'_>,
    why: &str,
    keep_secrets: bool,
) -> Result<String, Error> {
    let mut records = job.store().list_releases(&job.app)?;
    if !records.iter().any(|r| r.chart == OWNED_CHART)
        && let Some(owned) = owned_record(job)?
    {
        records.push(owned);
    }
    let mut removed = 0usize;
    let mut charts = Vec::new();
    for record in &records {
        if keep_secrets && record.chart == OWNED_CHART {
            continue;
        }
        job.step(
            "remove",
            &format!("remove:{}", record.chart),
            &format!(
                "removing release {} without the bundle",
                record.release_name
            ),
        )?;
        let release = release_of(record);
        match job.target().remove(&release) {
            Ok(objects) => {
                removed += objects.len();
                job.store().delete_release(&job.app, &record.chart)?;
                // (An owned release with nothing in it is not news.)
                if !(objects.is_empty() && record.chart == OWNED_CHART) {
                    charts.push(record.chart.clone());
                }
            }
            Err(e) => {
                let e = if record.chart == OWNED_CHART {
                    owned_error(e)
                } else {
                    Error::Kube {
                        chart: record.chart.clone(),
                        source: Box::new(e),
                    }
                };
                job.warn(format!("(forced) {}", e.one_line()));
            }
        }
    }
    let kept = if keep_secrets {
        "; the owned release (generated secrets) kept"
    } else {
        ""
    };
    Ok(format!(
        "removed without the bundle ({why}): {} release(s) [{}], {removed} object(s), from the \
         inventories{kept}; skipped: plugin hooks (pre-remove, post-remove) and the charts' \
         delete hooks",
        charts.len(),
        charts.join(", ")
    ))
}

/// The owned release (`APP-owned`, in the namespace of the active
/// version's first chart), read from the metadata the store keeps of the
/// version, for a target that records it while the store does not.
fn owned_record(job: &Job<'_>) -> Result<Option<ReleaseRecord>, Error> {
    let app = job.store().app(&job.app)?;
    let version = job.store().version(&job.app, &app.active_version)?;
    let namespace = version
        .metadata
        .pointer("/charts/0/namespace")
        .and_then(serde_json::Value::as_str);
    Ok(namespace.map(|namespace| ReleaseRecord {
        app: job.app.clone(),
        chart: OWNED_CHART.to_owned(),
        namespace: namespace.to_owned(),
        release_name: format!("{}-owned", job.app),
        method: String::new(),
        revision: 0,
        objects: Vec::new(),
        updated_at: Default::default(),
    }))
}

fn release_of(record: &ReleaseRecord) -> Release {
    Release {
        app: record.app.to_string(),
        chart: record.chart.clone(),
        namespace: record.namespace.clone(),
        release_name: record.release_name.clone(),
    }
}
