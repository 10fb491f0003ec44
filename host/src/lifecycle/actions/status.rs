//! The `status` hook loop: plugins observe objects until they call the
//! app ready, failed or the timeout passes.

use crate::lifecycle::Error;
use crate::lifecycle::actions::take::take_actions;
use crate::lifecycle::job::{Job, Prepared};
use crate::lifecycle::owned::owned_error;
use crate::model::{Hook, HookOutcome, LookupQuery, ObjectRef, Observed, ReleaseStatus};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// How long the `status` hook may keep answering `retry-after` for one
/// release when the chart sets no timeout.
pub const DEFAULT_STATUS_TIMEOUT: Duration = Duration::from_secs(300);

/// Whether a live object is ready: its `Ready` condition, when it has
/// one, is true (as kstatus reads custom resources); an object with no
/// conditions is ready once it exists.
pub(crate) fn ready(live: &serde_json::Value) -> bool {
    let Some(conditions) = live
        .pointer("/status/conditions")
        .and_then(serde_json::Value::as_array)
    else {
        return true;
    };
    match conditions
        .iter()
        .find(|c| c.get("type").and_then(serde_json::Value::as_str) == Some("Ready"))
    {
        Some(c) => c.get("status").and_then(serde_json::Value::as_str) == Some("True"),
        None => true,
    }
}

/// Runs the `status` hook of every plugin that has it for `chart`'s
/// release, until each answers ready, fails, or the chart's timeout
/// passes.
pub(crate) fn status_until_ready(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    chart: &str,
    namespace: &str,
    timeout: Option<Duration>,
) -> Result<(), Error> {
    let started = Instant::now();
    let limit = timeout.unwrap_or(DEFAULT_STATUS_TIMEOUT);
    for p in prepared.plugins_with(Hook::Status) {
        let mut state = None;
        for attempt in 1u32.. {
            let mut call = prepared.hook_call(job, Hook::Status)?;
            call.release = Some(chart.to_string());
            call.release_namespace = Some(namespace.to_string());
            call.attempt = attempt;
            call.state = state.take();
            call.observed = observed(job, prepared)?;
            let answer = prepared.call_hook(job, p, &call)?;
            if let HookOutcome::Veto(reason) = &answer.verdict {
                return Err(Error::StatusFailed {
                    plugin: p.path().to_string(),
                    release: chart.to_string(),
                    reason: reason.clone(),
                });
            }
            take_actions(job, prepared, p.path(), Hook::Status, &answer)?;
            state = answer.state.clone();
            match answer.status.unwrap_or(ReleaseStatus::Ready) {
                ReleaseStatus::Ready => break,
                ReleaseStatus::Failed(reason) => {
                    return Err(Error::StatusFailed {
                        plugin: p.path().to_string(),
                        release: chart.to_string(),
                        reason,
                    });
                }
                ReleaseStatus::RetryAfter(seconds) => {
                    let wait = Duration::from_secs(u64::from(seconds));
                    if started.elapsed() + wait > limit {
                        return Err(Error::StatusFailed {
                            plugin: p.path().to_string(),
                            release: chart.to_string(),
                            reason: format!(
                                "not ready after {attempt} checks in {} s (the chart's timeout is {} s)",
                                started.elapsed().as_secs(),
                                limit.as_secs()
                            ),
                        });
                    }
                    job.progress_note(&format!(
                        "chart {chart}: plugin {} says not ready yet (check {attempt}), again in {seconds} s",
                        p.path()
                    ));
                    job.sleep_abortable(wait)?;
                }
            }
        }
    }
    Ok(())
}

/// The objects this operation ensured or asked to observe, as the
/// target holds them now.
pub(crate) fn observed(job: &Job<'_>, prepared: &Prepared<'_>) -> Result<Vec<Observed>, Error> {
    let mut objects: Vec<ObjectRef> = prepared.ensured().iter().map(|r| r.id().clone()).collect();
    for object in prepared.observed().iter() {
        if !objects.contains(object) {
            objects.push(object.clone());
        }
    }
    let mut out = Vec::with_capacity(objects.len());
    let mut seen = BTreeSet::new();
    for object in objects {
        if !seen.insert(object.key()) {
            continue;
        }
        let live = job
            .view()
            .read_live(&LookupQuery {
                api_version: object.api_version.clone(),
                kind: object.kind.clone(),
                namespace: object.namespace.clone().unwrap_or_default(),
                name: object.name.clone(),
            })
            .map_err(owned_error)?;
        let exists = live.as_object().is_some_and(|m| !m.is_empty());
        out.push(Observed {
            ready: exists && ready(&live),
            object,
            exists,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_is_ready_by_its_ready_condition_or_by_existing() {
        assert!(ready(&json!({"kind": "Secret"})));
        assert!(ready(
            &json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        ));
        assert!(!ready(
            &json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
        ));
    }
}
