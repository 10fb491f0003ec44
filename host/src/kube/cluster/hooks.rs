//! Owns running Helm hooks on a cluster, as `helm install/upgrade/
//! uninstall` runs them (Helm 4 `pkg/action/hooks.go`): the hooks of one
//! event in Helm's order ([`crate::kube::hooks::hooks_for`]), one at a
//! time, each
//!
//! 1. deleted first when its policy says `before-hook-creation` (the
//!    default): a previous object of the same name is deleted with
//!    Background propagation and waited for until it is gone;
//! 2. created by server-side apply (field manager `capstan`, with the
//!    release's ownership labels and annotation);
//! 3. waited for: a Job until `Complete`, a Pod until `Succeeded`; other
//!    kinds are only applied. A Job's `Failed` condition or a Pod's
//!    `Failed` phase fails the hook at once.
//!
//! Deletions by policy come after the event, as in Helm 4: when every
//! hook succeeded, those with `hook-succeeded` are deleted in reverse
//! order, so a hook Job's ServiceAccount and RBAC (earlier hooks of the
//! same event) live until the Job is done; when one failed, it is deleted
//! if it says `hook-failed`, then the earlier ones that say
//! `hook-succeeded`, in order, and the event fails with the hook's cause
//! (a deletion that fails then is logged, not reported over the cause). A
//! CustomResourceDefinition hook is never deleted by a policy (Helm
//! neither). A hook Job that does not finish or fails is reported with
//! what is underneath: its Pods' troubles and the latest Warning Event of
//! the Job or its Pods (`FailedCreate: ... serviceaccount "x" not found`).
//!
//! Hook objects never enter the release's inventory (as in Helm), so they
//! are neither pruned nor removed with the release. A live object of the
//! same name that another app owns, or that capstan did not create, is an
//! ownership error (unless [`ApplyOptions::adopt`]): a hook never deletes
//! what is not its own.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::apply::{Namespaces, Settings, check_owner, place};
use super::client::Cluster;
use super::delete::delete_until_gone;
use super::error::Error;
use super::wait::{Awaited, diagnose, gone_job, human, is_same, pod_cause, uid_of};
use crate::kube::hooks::{DeletePolicy, delete_policy, hooks_for};
use crate::kube::target::{ApplyEvent, ApplyOptions, Change, ProgressSink};
use crate::kube::{HookEvent, ObjectRef, Release, Resource};

/// How a hook ended.
enum Outcome {
    /// Complete, Succeeded, or a kind that is only applied.
    Succeeded,
    /// Failed, with the cause a person reads.
    Failed(String),
}

/// Runs the hooks of `event` among `hooks` for `release` (see the module
/// doc); returns the hooks run, in order.
///
/// # Errors
/// [`Error::HookFailed`] naming the hook, the event and the cause (also
/// when the timeout runs out); [`Error::Ownership`]; a request's error.
pub async fn run_hooks(
    cluster: &Cluster,
    settings: &Settings,
    release: &Release,
    event: HookEvent,
    hooks: &[Resource],
    options: &ApplyOptions,
    progress: &dyn ProgressSink,
) -> Result<Vec<ObjectRef>, Error> {
    let chosen = hooks_for(hooks, event);
    if chosen.is_empty() {
        return Ok(Vec::new());
    }
    let timeout = options.timeout.unwrap_or(settings.timeout);
    let deadline = Instant::now() + timeout;
    let times = (deadline, timeout, settings.poll);
    let stage = format!("{event} hooks");
    progress.event(&ApplyEvent::Stage {
        stage: &stage,
        objects: chosen.len(),
    });
    let mut namespaces = Namespaces::default();
    // Hooks that ran and succeeded, with their delete policies.
    let mut done: Vec<(Awaited, DeletePolicy)> = Vec::with_capacity(chosen.len());
    for resource in chosen {
        let id = resource.id();
        let kind = cluster
            .discovery
            .resolve(cluster, &id.api_version, &id.kind)
            .await?;
        let p = place(release, resource, kind);
        if let Some(namespace) = p.id.namespace.as_deref() {
            namespaces.ensure(cluster, namespace).await?;
        }
        let mut awaited = Awaited::new(p.id.clone(), p.kind.clone());
        let policy = policy_of(resource);
        let namespace = p.id.namespace.as_deref();
        if let Some(live) = cluster.get(&p.kind, namespace, &p.id).await? {
            check_owner(release, &p, &live, &HashSet::new(), &namespaces, options)?;
            if policy.before_creation {
                delete_until_gone(cluster, &awaited, false, times).await?;
            }
        }
        let created = cluster
            .apply(&p.kind, namespace, &p.id, &p.body, false, options.adopt)
            .await?;
        progress.event(&ApplyEvent::Applied {
            object: &p.id,
            change: Change::Created,
        });
        awaited.uid = uid_of(&created).to_string();
        match wait_for(cluster, &awaited, times).await? {
            Outcome::Succeeded => done.push((awaited, policy)),
            Outcome::Failed(cause) => {
                if policy.failed
                    && let Err(err) = delete_until_gone(cluster, &awaited, false, times).await
                {
                    tracing::warn!(%release, hook = %p.id, "deleting the failed hook: {err}");
                }
                for (earlier, policy) in &done {
                    if policy.succeeded
                        && let Err(err) = delete_until_gone(cluster, earlier, false, times).await
                    {
                        tracing::warn!(%release, hook = %earlier.id, "deleting a hook that succeeded before one failed: {err}");
                    }
                }
                return Err(Error::HookFailed {
                    event,
                    object: Box::new(p.id),
                    cause,
                });
            }
        }
    }
    for (hook, policy) in done.iter().rev() {
        if policy.succeeded {
            delete_until_gone(cluster, hook, false, times).await?;
            progress.event(&ApplyEvent::Deleted { object: &hook.id });
        }
    }
    Ok(done.into_iter().map(|(hook, _)| hook.id).collect())
}

/// A hook's delete policy as Helm applies it: a CustomResourceDefinition
/// is never deleted by one.
fn policy_of(resource: &Resource) -> DeletePolicy {
    let id = resource.id();
    if id.kind == "CustomResourceDefinition" {
        return DeletePolicy::default();
    }
    delete_policy(resource)
}

/// Polls a hook until it ends; a timeout is a [`Outcome::Failed`] naming
/// its state and, for a Job, its Pods' troubles. A Job gone (or replaced
/// by an object of another uid) before it was seen to end is judged by
/// its Events ([`gone_job`]): `ttlSecondsAfterFinished` may remove a
/// finished Job between two polls.
async fn wait_for(
    cluster: &Cluster,
    hook: &Awaited,
    (deadline, timeout, poll): (Instant, Duration, Duration),
) -> Result<Outcome, Error> {
    let waits = matches!(
        (hook.id.group(), hook.id.kind.as_str()),
        ("batch", "Job") | ("", "Pod")
    );
    if !waits {
        return Ok(Outcome::Succeeded);
    }
    loop {
        let namespace = hook.id.namespace.as_deref();
        let live = match cluster.get(&hook.kind, namespace, &hook.id).await? {
            Some(live) if is_same(&live, &hook.uid) => live,
            _ => {
                return Ok(match gone_job(cluster, hook).await {
                    Some(Ok(())) => Outcome::Succeeded,
                    Some(Err(cause)) => Outcome::Failed(cause),
                    None => Outcome::Failed("it was deleted while running".into()),
                });
            }
        };
        let state = match hook.id.kind.as_str() {
            "Job" => job_state(&live),
            _ => pod_state(&live),
        };
        match state {
            HookState::Done => return Ok(Outcome::Succeeded),
            HookState::Failed(cause) => {
                return Ok(Outcome::Failed(
                    with_causes(cluster, hook, &live, cause).await,
                ));
            }
            HookState::Running(state) => {
                let now = Instant::now();
                if now >= deadline {
                    let cause = format!("not finished after {}: {state}", human(timeout));
                    return Ok(Outcome::Failed(
                        with_causes(cluster, hook, &live, cause).await,
                    ));
                }
                tokio::time::sleep(poll.min(deadline - now)).await;
            }
        }
    }
}

/// `cause` and, for a Job, what is underneath it ([`diagnose`]: its
/// Pods' troubles, the latest Warning Event of the Job or its Pods).
async fn with_causes(cluster: &Cluster, hook: &Awaited, live: &Value, mut cause: String) -> String {
    if hook.id.kind == "Job" {
        for trouble in diagnose(cluster, hook, live).await {
            cause.push_str("; ");
            cause.push_str(&trouble);
        }
    }
    cause
}

/// Where a Job or Pod hook stands.
#[derive(Debug, PartialEq, Eq)]
pub enum HookState {
    /// Complete or Succeeded.
    Done,
    /// Failed, with the cause.
    Failed(String),
    /// Still going, with what it is doing.
    Running(String),
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| {
            c.get("type").and_then(Value::as_str) == Some(kind)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

fn text<'a>(object: &'a Value, key: &str) -> &'a str {
    object.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A Job is done when `Complete=True` and failed when `Failed=True`
/// (the condition's reason and message are the cause).
pub fn job_state(job: &Value) -> HookState {
    if condition(job, "Complete").is_some() {
        return HookState::Done;
    }
    if let Some(failed) = condition(job, "Failed") {
        return HookState::Failed(match (text(failed, "reason"), text(failed, "message")) {
            ("", "") => "the Job failed".to_string(),
            (reason, "") => reason.to_string(),
            ("", message) => message.to_string(),
            (reason, message) => format!("{reason}: {message}"),
        });
    }
    let count = |key: &str| {
        job.pointer(&format!("/status/{key}"))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    HookState::Running(format!(
        "Job not complete ({} active, {} succeeded, {} failed)",
        count("active"),
        count("succeeded"),
        count("failed")
    ))
}

/// A Pod is done when `Succeeded` and failed when `Failed` (the Pod's
/// reason and message, or a terminated container's reason and exit
/// code).
pub fn pod_state(pod: &Value) -> HookState {
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending");
    match phase {
        "Succeeded" => HookState::Done,
        "Failed" => {
            let status = pod.get("status").unwrap_or(&Value::Null);
            let mut cause = match (text(status, "reason"), text(status, "message")) {
                ("", "") => "phase Failed".to_string(),
                (reason, "") => reason.to_string(),
                ("", message) => message.to_string(),
                (reason, message) => format!("{reason}: {message}"),
            };
            let terminated = status
                .get("containerStatuses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| {
                    let t = c.pointer("/state/terminated")?;
                    let code = t.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
                    (code != 0).then(|| {
                        format!(
                            "container {} terminated: {} (exit code {code})",
                            text(c, "name"),
                            text(t, "reason")
                        )
                    })
                });
            for line in terminated {
                cause.push_str("; ");
                cause.push_str(&line);
            }
            HookState::Failed(cause)
        }
        phase => HookState::Running(match pod_cause(pod) {
            Some(cause) => format!("Pod {phase}: {cause}"),
            None => format!("Pod {phase}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn job_and_pod_states() {
        let failed = json!({"status": {"conditions": [{"type": "Failed", "status": "True",
            "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}]}});
        assert_eq!(
            job_state(&failed),
            HookState::Failed(
                "BackoffLimitExceeded: Job has reached the specified backoff limit".into()
            )
        );
        let done = json!({"status": {"conditions": [{"type": "Complete", "status": "True"}]}});
        assert_eq!(job_state(&done), HookState::Done);
        assert_eq!(
            job_state(&json!({"status": {"active": 1}})),
            HookState::Running("Job not complete (1 active, 0 succeeded, 0 failed)".into())
        );
        let pod = json!({"status": {"phase": "Failed", "containerStatuses": [
            {"name": "m", "state": {"terminated": {"reason": "Error", "exitCode": 2}}}]}});
        assert_eq!(
            pod_state(&pod),
            HookState::Failed("phase Failed; container m terminated: Error (exit code 2)".into())
        );
        assert_eq!(
            pod_state(&json!({"status": {"phase": "Succeeded"}})),
            HookState::Done
        );
    }
}
