//! Owns waiting: polling a set of applied objects with GET until every
//! one is Current ([`super::readiness`]), stopping at once when one is
//! Failed, and on failure or timeout naming every blocking object with
//! the cause underneath it.
//!
//! The cause of a blocked workload is found the way a person would with
//! kubectl: its Pods by the workload's own selector (`spec.selector.matchLabels`),
//! their containers' waiting reasons (`ImagePullBackOff`,
//! `CrashLoopBackOff`), an `Unschedulable` condition, and the latest
//! Warning event of the object or its Pods. Diagnosis is best effort: a
//! failed list adds nothing rather than hiding the real error.
//!
//! Polling rather than watching keeps every request a retry-safe GET.

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::client::Cluster;
use super::discovery::Kind;
use super::error::{Blocker, Error};
use super::readiness::{Rules, State, readiness_with, waiting_containers};
use crate::kube::ObjectRef;
use crate::kube::target::{ApplyEvent, ProgressSink};

/// Pods reported per blocking workload.
const MAX_PODS_REPORTED: usize = 3;

/// One object to wait for: its identity, kind and namespace as resolved.
#[derive(Debug, Clone)]
pub struct Awaited {
    /// The object.
    pub id: ObjectRef,
    /// Its kind, resolved.
    pub kind: Kind,
    /// The uid of the object applied (`""` when unknown): a Job gone
    /// since, or replaced by an object of another uid, is judged by its
    /// Events ([`gone_job`]).
    pub uid: String,
}

impl Awaited {
    /// `id` of `kind`, uid unknown.
    pub fn new(id: ObjectRef, kind: Kind) -> Self {
        Awaited {
            id,
            kind,
            uid: String::new(),
        }
    }
}

/// An object's `metadata.uid` (`""` when it has none).
pub fn uid_of(object: &Value) -> &str {
    object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Whether `live` is the object with `uid`: the same uid, or any object
/// when the uid is unknown (an object of another uid is a new one, made
/// by someone else since).
pub fn is_same(live: &Value, uid: &str) -> bool {
    uid.is_empty() || uid_of(live) == uid
}

/// How a Job that is gone ended, from the Events the Job controller wrote
/// about it (by its uid): `Some(Ok)` for `Completed`, `Some(Err)` with the
/// failure reason and message, saying the Job is gone; `None` when
/// neither is there (or the uid is unknown). `ttlSecondsAfterFinished`
/// may remove a finished Job between two polls.
pub async fn gone_job(cluster: &Cluster, job: &Awaited) -> Option<Result<(), String>> {
    if job.uid.is_empty() || job.id.kind != "Job" || job.id.group() != "batch" {
        return None;
    }
    let events = cluster
        .list(
            &Kind::core("Event", "events"),
            job.id.namespace.as_deref(),
            None,
            Some(&format!("involvedObject.uid={}", job.uid)),
        )
        .await
        .unwrap_or_default();
    job_end(&events)
        .map(|end| end.map_err(|cause| format!("{cause} (the Job was deleted after it failed)")))
}

/// A finished Job's end among its Events: `Ok` for `Completed`, `Err`
/// with `REASON: MESSAGE` for a failure; `None` when neither is there.
pub fn job_end(events: &[Value]) -> Option<Result<(), String>> {
    const FAILURES: [&str; 4] = [
        "BackoffLimitExceeded",
        "DeadlineExceeded",
        "PodFailurePolicy",
        "MaxFailedIndexesExceeded",
    ];
    fn field<'a>(e: &'a Value, key: &str) -> &'a str {
        e.get(key).and_then(Value::as_str).unwrap_or("")
    }
    if events.iter().any(|e| field(e, "reason") == "Completed") {
        return Some(Ok(()));
    }
    events
        .iter()
        .find(|e| FAILURES.contains(&field(e, "reason")))
        .map(|e| Err(format!("{}: {}", field(e, "reason"), field(e, "message"))))
}

/// Polls `objects` every `interval` until all are Current under `rules`.
///
/// Adds no timeout of its own beyond `deadline`; `timeout` is only what
/// the error reports.
///
/// # Errors
/// [`Error::ReadinessFailed`] as soon as one object is Failed (naming it
/// and every other one not Current); [`Error::NotReady`] at the deadline;
/// a request's error when a GET fails past its retries.
pub async fn until_current(
    cluster: &Cluster,
    objects: &[Awaited],
    deadline: Instant,
    timeout: Duration,
    interval: Duration,
    rules: Rules,
    progress: &dyn ProgressSink,
) -> Result<(), Error> {
    let mut pending: Vec<&Awaited> = objects.iter().collect();
    loop {
        let mut still = Vec::new();
        let mut statuses = Vec::new();
        let mut failed = false;
        for awaited in pending {
            let live = cluster
                .get(&awaited.kind, awaited.id.namespace.as_deref(), &awaited.id)
                .await?
                .filter(|live| is_same(live, &awaited.uid));
            let (state, message) = match &live {
                Some(object) => {
                    let r = readiness_with(object, SystemTime::now(), rules);
                    (r.state, r.message)
                }
                None => match gone_job(cluster, awaited).await {
                    Some(Ok(())) => (State::Current, String::new()),
                    Some(Err(cause)) => (State::Failed, cause),
                    None => (State::InProgress, "not found".to_string()),
                },
            };
            if state == State::Current {
                continue;
            }
            failed |= state == State::Failed;
            statuses.push((awaited, live, format!("{state}: {message}")));
            still.push(awaited);
        }
        if still.is_empty() {
            return Ok(());
        }
        let now = Instant::now();
        if failed || now >= deadline {
            let mut blockers = Vec::new();
            for (awaited, live, status) in statuses {
                let causes = match &live {
                    Some(object) => diagnose(cluster, awaited, object).await,
                    None => Vec::new(),
                };
                blockers.push(Blocker {
                    object: awaited.id.clone(),
                    status,
                    causes,
                });
            }
            return Err(match failed {
                true => Error::ReadinessFailed { blockers },
                false => Error::NotReady { timeout, blockers },
            });
        }
        let waiting: Vec<(ObjectRef, String)> = statuses
            .iter()
            .map(|(a, _, status)| (a.id.clone(), status.clone()))
            .collect();
        progress.event(&ApplyEvent::Waiting { pending: &waiting });
        tokio::time::sleep(interval.min(deadline - now)).await;
        pending = still;
    }
}

/// What is underneath a blocked object: its Pods' troubles (by its
/// `spec.selector`, which a Job has too) and the latest Warning event of
/// the object or its Pods (a Job's `FailedCreate` when the Job controller
/// cannot create its Pods).
pub async fn diagnose(cluster: &Cluster, awaited: &Awaited, object: &Value) -> Vec<String> {
    let namespace = awaited.id.namespace.as_deref();
    let mut causes = Vec::new();
    let mut names: HashSet<String> = HashSet::from([awaited.id.name.clone()]);
    if let Some(selector) = selector(object) {
        let pods = cluster
            .list(&Kind::core("Pod", "pods"), namespace, Some(&selector), None)
            .await
            .unwrap_or_default();
        for pod in &pods {
            let name = pod
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("?");
            names.insert(name.to_string());
            if causes.len() < MAX_PODS_REPORTED
                && let Some(cause) = pod_cause(pod)
            {
                causes.push(format!("pod {name}: {cause}"));
            }
        }
        if pods.is_empty() {
            causes.push(format!("no pods match {selector}"));
        }
    }
    if let Some(namespace) = namespace {
        let events = cluster
            .list(
                &Kind::core("Event", "events"),
                Some(namespace),
                None,
                Some("type=Warning"),
            )
            .await
            .unwrap_or_default();
        if let Some(warning) = latest_warning(&events, &names) {
            causes.push(format!("latest warning: {warning}"));
        }
    }
    causes
}

/// A workload's `spec.selector.matchLabels` as a label selector
/// (`app=web,tier=front`); `None` for objects without one.
pub fn selector(object: &Value) -> Option<String> {
    let labels = object
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)?;
    let parts: Vec<String> = labels
        .iter()
        .filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}")))
        .collect();
    (!parts.is_empty()).then(|| parts.join(","))
}

/// Why a Pod is not running: a waiting container's reason (and message),
/// an `Unschedulable` condition, or a failed phase. `None` when it looks
/// healthy.
pub fn pod_cause(pod: &Value) -> Option<String> {
    if let Some((container, reason, message)) = waiting_containers(pod)
        .find(|(_, reason, _)| *reason != "ContainerCreating" && *reason != "PodInitializing")
    {
        return Some(match message {
            "" => format!("container {container} waiting: {reason}"),
            message => format!("container {container} waiting: {reason} ({message})"),
        });
    }
    let conditions = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for condition in conditions {
        let text = |k: &str| condition.get(k).and_then(Value::as_str).unwrap_or("");
        if text("type") == "PodScheduled" && text("status") == "False" {
            return Some(format!("{}: {}", text("reason"), text("message")));
        }
    }
    match pod.pointer("/status/phase").and_then(Value::as_str) {
        Some("Failed") => Some("phase Failed".into()),
        _ => None,
    }
}

/// The latest Warning event about any of `names`: `REASON: MESSAGE`.
pub fn latest_warning(events: &[Value], names: &HashSet<String>) -> Option<String> {
    let text = |event: &Value, path: &str| {
        event
            .pointer(path)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    events
        .iter()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("Warning"))
        .filter(|e| text(e, "/involvedObject/name").is_some_and(|n| names.contains(&n)))
        .max_by_key(|e| {
            text(e, "/lastTimestamp")
                .or_else(|| text(e, "/eventTime"))
                .or_else(|| text(e, "/metadata/creationTimestamp"))
                .and_then(|t| super::readiness::parse_rfc3339(&t))
        })
        .map(|e| {
            format!(
                "{}: {}",
                text(e, "/reason").unwrap_or_default(),
                text(e, "/message").unwrap_or_default()
            )
        })
}

/// `5m`, `1m30s`, `45s`, `1.5s`, `200ms`: a duration as a person reads it.
pub fn human(duration: Duration) -> String {
    let secs = duration.as_secs();
    let millis = duration.subsec_millis();
    if secs == 0 {
        return format!("{millis}ms");
    }
    if secs < 60 {
        return match millis / 100 {
            0 => format!("{secs}s"),
            tenths => format!("{secs}.{tenths}s"),
        };
    }
    match (secs / 60, secs % 60) {
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_of_another_uid_is_not_the_same() {
        let live = json!({"metadata": {"uid": "b2"}});
        assert!(is_same(&live, "b2"));
        assert!(!is_same(&live, "a1"));
        assert!(is_same(&live, ""));
        assert!(!is_same(&json!({}), "a1"));
    }

    #[test]
    fn a_gone_job_is_judged_by_its_events() {
        let created = json!({"reason": "SuccessfulCreate", "message": "Created pod: j-x"});
        assert_eq!(job_end(std::slice::from_ref(&created)), None);
        let done = json!({"reason": "Completed", "message": "Job completed"});
        assert_eq!(job_end(&[created.clone(), done]), Some(Ok(())));
        let failed = json!({"reason": "BackoffLimitExceeded",
            "message": "Job has reached the specified backoff limit"});
        assert_eq!(
            job_end(&[created, failed]),
            Some(Err(
                "BackoffLimitExceeded: Job has reached the specified backoff limit".into()
            ))
        );
    }

    #[test]
    fn pods_tell_why_they_are_stuck() {
        let pull = json!({"metadata": {"name": "web-1"}, "status": {"phase": "Pending",
            "containerStatuses": [{"name": "web", "state": {"waiting": {"reason": "ImagePullBackOff",
                "message": "Back-off pulling image \"nginx:nope\""}}}]}});
        assert_eq!(
            pod_cause(&pull).unwrap(),
            "container web waiting: ImagePullBackOff (Back-off pulling image \"nginx:nope\")"
        );
        let unschedulable = json!({"status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/3 nodes are available: 3 Insufficient cpu."}]}});
        assert_eq!(
            pod_cause(&unschedulable).unwrap(),
            "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu."
        );
        let creating = json!({"status": {"phase": "Pending", "containerStatuses": [
            {"name": "web", "state": {"waiting": {"reason": "ContainerCreating"}}}]}});
        assert_eq!(pod_cause(&creating), None);
        let crash = json!({"status": {"phase": "Running", "initContainerStatuses": [
            {"name": "init", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        assert_eq!(
            pod_cause(&crash).unwrap(),
            "container init waiting: CrashLoopBackOff"
        );
    }

    #[test]
    fn the_latest_warning_about_the_object_or_its_pods_wins() {
        let events = vec![
            json!({"type": "Warning", "reason": "Failed", "message": "old",
                   "involvedObject": {"name": "web-1"}, "lastTimestamp": "2025-01-01T00:00:00Z"}),
            json!({"type": "Warning", "reason": "BackOff", "message": "newest",
                   "involvedObject": {"name": "web-1"}, "lastTimestamp": "2025-01-01T00:05:00Z"}),
            json!({"type": "Normal", "reason": "Pulled", "message": "ignored",
                   "involvedObject": {"name": "web-1"}, "lastTimestamp": "2025-01-01T00:09:00Z"}),
            json!({"type": "Warning", "reason": "Other", "message": "someone else",
                   "involvedObject": {"name": "db-0"}, "lastTimestamp": "2025-01-01T00:09:00Z"}),
        ];
        let names = HashSet::from(["web".to_string(), "web-1".to_string()]);
        assert_eq!(latest_warning(&events, &names).unwrap(), "BackOff: newest");
        assert_eq!(latest_warning(&events, &HashSet::new()), None);
    }

    #[test]
    fn selectors_and_durations() {
        let d = json!({"spec": {"selector": {"matchLabels": {"app": "web", "tier": "front"}}}});
        assert_eq!(selector(&d).unwrap(), "app=web,tier=front");
        assert_eq!(selector(&json!({"spec": {}})), None);
        assert_eq!(human(Duration::from_secs(300)), "5m");
        assert_eq!(human(Duration::from_secs(90)), "1m30s");
        assert_eq!(human(Duration::from_millis(1500)), "1.5s");
        assert_eq!(human(Duration::from_millis(200)), "200ms");
    }
}
