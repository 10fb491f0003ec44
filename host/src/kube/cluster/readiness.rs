//! Owns readiness: whether one live object is Current, InProgress, Failed
//! or Terminating, and the message a person reads when it is not Current.
//!
//! A pure function of the object (and the clock, for the one rule that
//! needs it), following kstatus (`cli-utils/pkg/kstatus/status/core.go`,
//! `generic.go`) rule by rule, in its order: deletion, generation, the
//! `Reconciling`/`Stalled` conditions, then the kind's own rule, then a
//! generic `Ready` condition. One deliberate difference: a Job is Current
//! only once it is `Complete` (kstatus calls a started Job Current), as
//! `helm --wait-for-jobs` and hooks need. A LoadBalancer Service is
//! Current once it has a cluster IP, as in kstatus and Helm 4's `--wait`
//! (a cluster without a load-balancer controller never gives it an
//! address); [`Rules::load_balancer_address`] waits for the address too,
//! for the apps that ask (`wait_for_load_balancer` in `capstan.yaml`).
//!
//! Never does I/O; [`super::wait`] polls objects and asks this module.

use std::fmt;
use std::time::{Duration, SystemTime};

use serde_json::Value;

/// How long a Pod may stay unschedulable before it counts as Failed
/// (kstatus's `scheduleWindow`).
pub const UNSCHEDULABLE_WINDOW: Duration = Duration::from_secs(15);

/// kstatus's status of one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Reconciled and ready: nothing to wait for.
    Current,
    /// Still converging; waiting may help.
    InProgress,
    /// Will not get there by waiting (a failed Job, a crash-looping Pod,
    /// a rollout past its deadline, a `Stalled` condition).
    Failed,
    /// Being deleted (`metadata.deletionTimestamp` is set).
    Terminating,
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            State::Current => "Current",
            State::InProgress => "InProgress",
            State::Failed => "Failed",
            State::Terminating => "Terminating",
        })
    }
}

/// A [`State`] and why, in kstatus's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    /// The state.
    pub state: State,
    /// What a person reads, e.g. `Ready: 1/3`.
    pub message: String,
}

impl Readiness {
    fn new(state: State, message: impl Into<String>) -> Self {
        Readiness {
            state,
            message: message.into(),
        }
    }

    fn current(message: impl Into<String>) -> Self {
        Readiness::new(State::Current, message)
    }

    fn in_progress(message: impl Into<String>) -> Self {
        Readiness::new(State::InProgress, message)
    }

    fn failed(message: impl Into<String>) -> Self {
        Readiness::new(State::Failed, message)
    }
}

/// The choices a chart may make about readiness; the default is kstatus's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rules {
    /// A LoadBalancer Service is Current only once its
    /// `status.loadBalancer.ingress` lists an address (kstatus: once it
    /// has a cluster IP).
    pub load_balancer_address: bool,
}

/// [`readiness_with`] under kstatus's rules ([`Rules::default`]).
pub fn readiness(object: &Value, now: SystemTime) -> Readiness {
    readiness_with(object, now, Rules::default())
}

/// The readiness of `object` (a live object as the API server returns it)
/// at `now`, under `rules`.
///
/// Rules, in order: `deletionTimestamp` set is Terminating;
/// `status.observedGeneration` present and different from
/// `metadata.generation` is InProgress; a `Reconciling=True` condition is
/// InProgress; `Stalled=True` is Failed; then by kind (Deployment,
/// StatefulSet, DaemonSet, Job, Pod, PersistentVolumeClaim,
/// CustomResourceDefinition, Service), and for any other kind a `Ready`
/// condition when there is one (`False`/`Unknown` is InProgress), else
/// Current. Missing numbers count as 0, missing `spec.replicas` as 1.
pub fn readiness_with(object: &Value, now: SystemTime, rules: Rules) -> Readiness {
    if let Some(generic) = generic(object) {
        return generic;
    }
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let group = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.split_once('/'))
        .map_or("", |(group, _)| group);
    match (group, kind) {
        ("apps", "Deployment") => deployment(object),
        ("apps", "StatefulSet") => stateful_set(object),
        ("apps", "DaemonSet") => daemon_set(object),
        ("batch", "Job") => job(object),
        ("", "Pod") => pod(object, now),
        ("", "PersistentVolumeClaim") => pvc(object),
        ("", "Service") => service(object, rules),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd(object),
        _ => ready_condition(object),
    }
}

/// The rules every kind shares; `None` when they leave it to the kind.
fn generic(object: &Value) -> Option<Readiness> {
    if object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        return Some(Readiness::new(
            State::Terminating,
            "resource scheduled for deletion",
        ));
    }
    if let (Some(generation), Some(observed)) = (
        int(object, "/metadata/generation"),
        int(object, "/status/observedGeneration"),
    ) && generation != observed
    {
        return Some(Readiness::in_progress(format!(
            "generation is {generation}, but latest observed generation is {observed}"
        )));
    }
    if let Some(c) = condition(object, "Reconciling")
        && c.status == "True"
    {
        return Some(Readiness::in_progress(c.describe("Reconciling")));
    }
    if let Some(c) = condition(object, "Stalled")
        && c.status == "True"
    {
        return Some(Readiness::failed(c.describe("Stalled")));
    }
    None
}

fn deployment(object: &Value) -> Readiness {
    let mut available = false;
    for c in conditions(object) {
        match c.kind {
            "Progressing" if c.reason == "ProgressDeadlineExceeded" => {
                return Readiness::failed("progress deadline exceeded");
            }
            "Available" if c.status == "True" => available = true,
            _ => {}
        }
    }
    let spec = int(object, "/spec/replicas").unwrap_or(1);
    let replicas = int(object, "/status/replicas").unwrap_or(0);
    let updated = int(object, "/status/updatedReplicas").unwrap_or(0);
    let ready = int(object, "/status/readyReplicas").unwrap_or(0);
    let avail = int(object, "/status/availableReplicas").unwrap_or(0);
    if spec > replicas {
        return Readiness::in_progress(format!("Replicas: {replicas}/{spec}"));
    }
    if spec > updated {
        return Readiness::in_progress(format!("Updated: {updated}/{spec}"));
    }
    if replicas > spec {
        return Readiness::in_progress(format!("Pending termination: {}", replicas - spec));
    }
    if updated > avail || spec > avail {
        return Readiness::in_progress(format!("Available: {avail}/{spec}"));
    }
    if spec > ready {
        return Readiness::in_progress(format!("Ready: {ready}/{spec}"));
    }
    if !available {
        return Readiness::in_progress("Deployment not Available");
    }
    Readiness::current(format!("Deployment is available. Replicas: {replicas}"))
}

fn stateful_set(object: &Value) -> Readiness {
    if str_at(object, "/spec/updateStrategy/type") == Some("OnDelete") {
        return Readiness::current("StatefulSet is using the OnDelete update strategy");
    }
    let spec = int(object, "/spec/replicas").unwrap_or(1);
    let replicas = int(object, "/status/replicas").unwrap_or(0);
    let ready = int(object, "/status/readyReplicas").unwrap_or(0);
    let current = int(object, "/status/currentReplicas").unwrap_or(0);
    let updated = int(object, "/status/updatedReplicas").unwrap_or(0);
    if spec > replicas {
        return Readiness::in_progress(format!("Replicas: {replicas}/{spec}"));
    }
    if spec > ready {
        return Readiness::in_progress(format!("Ready: {ready}/{spec}"));
    }
    if replicas > spec {
        return Readiness::in_progress(format!("Pending termination: {}", replicas - spec));
    }
    if let Some(partition) = int(object, "/spec/updateStrategy/rollingUpdate/partition") {
        let expected = (spec - partition).max(0);
        if updated < expected {
            return Readiness::in_progress(format!("Updated: {updated}/{expected}"));
        }
        return Readiness::current(format!("partitioned roll out complete. updated: {updated}"));
    }
    if spec > current {
        return Readiness::in_progress(format!("Current: {current}/{spec}"));
    }
    let current_revision = str_at(object, "/status/currentRevision");
    let update_revision = str_at(object, "/status/updateRevision");
    if current_revision != update_revision {
        return Readiness::in_progress(format!(
            "waiting for the controller to roll out revision {}",
            update_revision.unwrap_or("?")
        ));
    }
    Readiness::current(format!(
        "all replicas scheduled as expected. Replicas: {replicas}"
    ))
}

fn daemon_set(object: &Value) -> Readiness {
    let Some(desired) = int(object, "/status/desiredNumberScheduled") else {
        return Readiness::in_progress("missing .status.desiredNumberScheduled");
    };
    let checks = [
        ("Current", "/status/currentNumberScheduled"),
        ("Updated", "/status/updatedNumberScheduled"),
        ("Available", "/status/numberAvailable"),
        ("Ready", "/status/numberReady"),
    ];
    for (label, path) in checks {
        let have = int(object, path).unwrap_or(0);
        if desired > have {
            return Readiness::in_progress(format!("{label}: {have}/{desired}"));
        }
    }
    Readiness::current(format!(
        "all replicas scheduled as expected. Replicas: {desired}"
    ))
}

fn job(object: &Value) -> Readiness {
    let completions = int(object, "/spec/completions")
        .or_else(|| int(object, "/spec/parallelism"))
        .unwrap_or(1);
    let succeeded = int(object, "/status/succeeded").unwrap_or(0);
    let failed = int(object, "/status/failed").unwrap_or(0);
    for c in conditions(object) {
        match (c.kind, c.status) {
            ("Complete", "True") => {
                return Readiness::current(format!(
                    "Job Completed. succeeded: {succeeded}/{completions}"
                ));
            }
            ("Failed", "True") => {
                let why = c.describe("Failed");
                return Readiness::failed(format!("Job Failed. failed: {failed}: {why}"));
            }
            _ => {}
        }
    }
    if object.pointer("/status/startTime").is_none() {
        return Readiness::in_progress("Job not started");
    }
    Readiness::in_progress(format!(
        "Job in progress. succeeded: {succeeded}/{completions}, failed: {failed}"
    ))
}

fn pod(object: &Value, now: SystemTime) -> Readiness {
    match str_at(object, "/status/phase") {
        Some("Succeeded") => return Readiness::current("Pod has completed successfully"),
        Some("Failed") => return Readiness::failed("Pod has completed, but not successfully"),
        _ => {}
    }
    let crash_looping = waiting_containers(object)
        .filter(|(_, reason, _)| *reason == "CrashLoopBackOff")
        .map(|(name, _, _)| name)
        .collect::<Vec<_>>();
    if !crash_looping.is_empty() {
        return Readiness::failed(format!(
            "containers in CrashLoopBackOff: {}",
            crash_looping.join(", ")
        ));
    }
    if let Some(c) = condition(object, "PodScheduled")
        && c.status == "False"
        && c.reason == "Unschedulable"
    {
        let since = c.last_transition.and_then(parse_rfc3339);
        let within_window = since.is_some_and(|since| {
            now.duration_since(since)
                .map_or(true, |elapsed| elapsed < UNSCHEDULABLE_WINDOW)
        });
        let why = c.describe("Unschedulable");
        if within_window {
            return Readiness::in_progress(format!("Pod unschedulable: {why}"));
        }
        return Readiness::failed(format!("Pod could not be scheduled: {why}"));
    }
    if str_at(object, "/status/phase") == Some("Running")
        && condition(object, "Ready").is_some_and(|c| c.status == "True")
    {
        return Readiness::current("Pod is Ready");
    }
    if let Some((name, reason, _)) = waiting_containers(object).next() {
        return Readiness::in_progress(format!("container {name} is waiting: {reason}"));
    }
    Readiness::in_progress(format!(
        "Pod phase is {}",
        str_at(object, "/status/phase").unwrap_or("unknown")
    ))
}

fn pvc(object: &Value) -> Readiness {
    match str_at(object, "/status/phase") {
        Some("Bound") => Readiness::current("PVC is Bound"),
        phase => Readiness::in_progress(format!(
            "PVC is not Bound. phase: {}",
            phase.unwrap_or("unknown")
        )),
    }
}

/// kstatus's `serviceConditions`: a LoadBalancer Service without a
/// cluster IP is InProgress, every other Service Current; with
/// [`Rules::load_balancer_address`] a LoadBalancer also waits for an
/// ingress address.
fn service(object: &Value, rules: Rules) -> Readiness {
    if str_at(object, "/spec/type") == Some("LoadBalancer") {
        if str_at(object, "/spec/clusterIP").is_none_or(str::is_empty) {
            return Readiness::in_progress("ClusterIP not set. Service type: LoadBalancer");
        }
        let has_address = object
            .pointer("/status/loadBalancer/ingress")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if rules.load_balancer_address && !has_address {
            return Readiness::in_progress(
                "waiting for the load balancer's address (wait_for_load_balancer is set)",
            );
        }
    }
    Readiness::current("Service is ready")
}

fn crd(object: &Value) -> Readiness {
    if let Some(c) = condition(object, "NamesAccepted")
        && c.status == "False"
    {
        return Readiness::failed(c.describe("names not accepted"));
    }
    match condition(object, "Established") {
        Some(c) if c.status == "True" => Readiness::current("CRD is established"),
        _ => Readiness::in_progress("CRD is not established"),
    }
}

fn ready_condition(object: &Value) -> Readiness {
    match condition(object, "Ready") {
        Some(c) if c.status == "True" => Readiness::current("Resource is Ready"),
        Some(c) => Readiness::in_progress(c.describe("not Ready")),
        None => Readiness::current("Resource is current"),
    }
}

/// One entry of `status.conditions`.
#[derive(Debug, Clone, Copy)]
struct Condition<'a> {
    kind: &'a str,
    status: &'a str,
    reason: &'a str,
    message: &'a str,
    last_transition: Option<&'a str>,
}

impl Condition<'_> {
    /// `fallback` when the condition has neither reason nor message, else
    /// `reason: message` (either alone when the other is empty).
    fn describe(&self, fallback: &str) -> String {
        match (self.reason.is_empty(), self.message.is_empty()) {
            (true, true) => fallback.to_string(),
            (false, true) => self.reason.to_string(),
            (true, false) => self.message.to_string(),
            (false, false) => format!("{}: {}", self.reason, self.message),
        }
    }
}

fn conditions(object: &Value) -> impl Iterator<Item = Condition<'_>> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let text = |key: &str| c.get(key).and_then(Value::as_str);
            Some(Condition {
                kind: text("type")?,
                status: text("status").unwrap_or(""),
                reason: text("reason").unwrap_or(""),
                message: text("message").unwrap_or(""),
                last_transition: text("lastTransitionTime"),
            })
        })
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<Condition<'a>> {
    conditions(object).find(|c| c.kind == kind)
}

/// `(container, reason, message)` of every container (init containers
/// first) whose state is `waiting` with a reason.
pub(crate) fn waiting_containers(object: &Value) -> impl Iterator<Item = (&str, &str, &str)> {
    ["/status/initContainerStatuses", "/status/containerStatuses"]
        .into_iter()
        .filter_map(|path| object.pointer(path).and_then(Value::as_array))
        .flatten()
        .filter_map(|status| {
            let waiting = status.pointer("/state/waiting")?;
            let reason = waiting.get("reason").and_then(Value::as_str)?;
            let name = status.get("name").and_then(Value::as_str).unwrap_or("?");
            let message = waiting.get("message").and_then(Value::as_str).unwrap_or("");
            Some((name, reason, message))
        })
}

fn int(object: &Value, path: &str) -> Option<i64> {
    let value = object.pointer(path)?;
    value.as_i64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0)
            .map(|f| f as i64)
    })
}

fn str_at<'a>(object: &'a Value, path: &str) -> Option<&'a str> {
    object.pointer(path).and_then(Value::as_str)
}

/// Parses the RFC 3339 timestamps the API server writes
/// (`2024-05-01T10:00:00Z`, fractions and offsets accepted).
pub(crate) fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || bytes[13] != b':' {
        return None;
    }
    if !matches!(bytes[10], b'T' | b't' | b' ') || bytes[16] != b':' {
        return None;
    }
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first() {
                Some(b'+') => 1,
                Some(b'-') => -1,
                _ => return None,
            };
            let (h, m) = rest[1..].split_once(':')?;
            sign * (h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60)
        }
    };
    let seconds =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset;
    let seconds = u64::try_from(seconds).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(seconds))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(text: &str) -> SystemTime {
        parse_rfc3339(text).unwrap()
    }

    fn check(object: &Value) -> (State, String) {
        let r = readiness(object, at("2025-01-01T00:10:00Z"));
        (r.state, r.message)
    }

    /// A Deployment as `kubectl get -o json` shows it mid-rollout, then done.
    #[test]
    fn deployment_rollout() {
        let mut d = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "generation": 2,
                         "uid": "0b1c", "resourceVersion": "812"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}},
            "status": {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3,
                       "readyReplicas": 3, "availableReplicas": 3,
                       "conditions": [
                         {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                         {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}
        });
        assert_eq!(
            check(&d),
            (
                State::InProgress,
                "generation is 2, but latest observed generation is 1".into()
            )
        );
        d["status"]["observedGeneration"] = json!(2);
        d["status"]["updatedReplicas"] = json!(1);
        assert_eq!(check(&d), (State::InProgress, "Updated: 1/3".into()));
        d["status"]["updatedReplicas"] = json!(3);
        d["status"]["readyReplicas"] = json!(2);
        assert_eq!(check(&d), (State::InProgress, "Ready: 2/3".into()));
        d["status"]["readyReplicas"] = json!(3);
        assert_eq!(check(&d).0, State::Current);
        d["status"]["replicas"] = json!(4);
        assert_eq!(
            check(&d),
            (State::InProgress, "Pending termination: 1".into())
        );
        d["status"]["replicas"] = json!(3);
        d["status"]["conditions"][0]["status"] = json!("False");
        assert_eq!(
            check(&d),
            (State::InProgress, "Deployment not Available".into())
        );
        d["status"]["conditions"][1] = json!({"type": "Progressing", "status": "False",
            "reason": "ProgressDeadlineExceeded",
            "message": "ReplicaSet \"web-5d8\" has timed out progressing."});
        assert_eq!(
            check(&d),
            (State::Failed, "progress deadline exceeded".into())
        );
    }

    #[test]
    fn a_fresh_deployment_without_status_is_in_progress() {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "generation": 1}, "spec": {}});
        assert_eq!(check(&d), (State::InProgress, "Replicas: 0/1".into()));
    }

    #[test]
    fn stateful_set_rules() {
        let mut s = json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "generation": 1},
            "spec": {"replicas": 2, "serviceName": "db"},
            "status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2,
                       "currentReplicas": 2, "updatedReplicas": 2,
                       "currentRevision": "db-7f9", "updateRevision": "db-7f9"}
        });
        assert_eq!(check(&s).0, State::Current);
        s["status"]["updateRevision"] = json!("db-8a1");
        assert_eq!(check(&s).0, State::InProgress);
        assert!(check(&s).1.contains("db-8a1"));
        s["spec"]["updateStrategy"] =
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 1}});
        s["status"]["updatedReplicas"] = json!(0);
        assert_eq!(check(&s), (State::InProgress, "Updated: 0/1".into()));
        s["status"]["updatedReplicas"] = json!(1);
        assert_eq!(check(&s).0, State::Current);
        s["status"]["readyReplicas"] = json!(1);
        assert_eq!(check(&s), (State::InProgress, "Ready: 1/2".into()));
        s["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
        assert_eq!(check(&s).0, State::Current);
    }

    #[test]
    fn daemon_set_rules() {
        let mut d = json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "generation": 3},
            "status": {"observedGeneration": 3, "desiredNumberScheduled": 3,
                       "currentNumberScheduled": 3, "updatedNumberScheduled": 3,
                       "numberAvailable": 2, "numberReady": 3}
        });
        assert_eq!(check(&d), (State::InProgress, "Available: 2/3".into()));
        d["status"]["numberAvailable"] = json!(3);
        assert_eq!(check(&d).0, State::Current);
        d["status"] = json!({});
        assert_eq!(check(&d).0, State::InProgress);
    }

    #[test]
    fn job_must_complete_and_failure_is_failed() {
        let mut j = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "migrate", "generation": 1},
            "spec": {"completions": 1, "backoffLimit": 2},
            "status": {}
        });
        assert_eq!(check(&j), (State::InProgress, "Job not started".into()));
        j["status"] = json!({"startTime": "2025-01-01T00:00:00Z", "active": 1});
        assert_eq!(check(&j).0, State::InProgress);
        j["status"]["conditions"] = json!([{"type": "Complete", "status": "True"}]);
        j["status"]["succeeded"] = json!(1);
        assert_eq!(
            check(&j),
            (State::Current, "Job Completed. succeeded: 1/1".into())
        );
        j["status"]["conditions"] = json!([{"type": "Failed", "status": "True",
            "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}]);
        j["status"]["failed"] = json!(3);
        let (state, message) = check(&j);
        assert_eq!(state, State::Failed);
        assert!(message.contains("BackoffLimitExceeded"), "{message}");
    }

    #[test]
    fn pod_rules() {
        let mut p = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-5d8-x2", "namespace": "shop"},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"},
                               {"type": "PodScheduled", "status": "True"}],
                "containerStatuses": [{"name": "web", "ready": true,
                                       "state": {"running": {"startedAt": "2025-01-01T00:00:00Z"}}}]}
        });
        assert_eq!(check(&p).0, State::Current);
        p["status"]["conditions"][0]["status"] = json!("False");
        p["status"]["containerStatuses"][0]["state"] = json!({"waiting": {
            "reason": "CrashLoopBackOff",
            "message": "back-off 5m0s restarting failed container=web"}});
        assert_eq!(
            check(&p),
            (State::Failed, "containers in CrashLoopBackOff: web".into())
        );
        p["status"]["containerStatuses"][0]["state"] =
            json!({"waiting": {"reason": "ImagePullBackOff"}});
        p["status"]["phase"] = json!("Pending");
        assert_eq!(
            check(&p),
            (
                State::InProgress,
                "container web is waiting: ImagePullBackOff".into()
            )
        );
        p["status"]["phase"] = json!("Succeeded");
        assert_eq!(check(&p).0, State::Current);
    }

    #[test]
    fn an_unschedulable_pod_fails_after_the_window() {
        let mut p = json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
            "status": {"phase": "Pending", "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/1 nodes are available: 1 Insufficient memory.",
                "lastTransitionTime": "2025-01-01T00:09:55Z"}]}
        });
        let (state, message) = check(&p);
        assert_eq!(state, State::InProgress);
        assert!(message.contains("Insufficient memory"), "{message}");
        p["status"]["conditions"][0]["lastTransitionTime"] = json!("2025-01-01T00:00:00Z");
        assert_eq!(check(&p).0, State::Failed);
    }

    #[test]
    fn pvc_crd_service_and_generic_kinds() {
        let mut pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data"}, "status": {"phase": "Pending"}});
        assert_eq!(
            check(&pvc),
            (State::InProgress, "PVC is not Bound. phase: Pending".into())
        );
        pvc["status"]["phase"] = json!("Bound");
        assert_eq!(check(&pvc).0, State::Current);

        let mut crd = json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com", "generation": 1},
            "status": {"conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts"},
                {"type": "Established", "status": "False", "reason": "Installing"}]}});
        assert_eq!(check(&crd).0, State::InProgress);
        crd["status"]["conditions"][1]["status"] = json!("True");
        assert_eq!(check(&crd).0, State::Current);
        crd["status"]["conditions"][0] = json!({"type": "NamesAccepted", "status": "False",
            "reason": "MultipleNames", "message": "\"widget\" is already in use"});
        assert_eq!(check(&crd).0, State::Failed);

        // kstatus: a LoadBalancer is Current once it has a cluster IP, with
        // or without an address; the opt-in rule waits for the address.
        let now = at("2025-01-01T00:10:00Z");
        let waits = Rules {
            load_balancer_address: true,
        };
        let mut svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb"},
            "spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {}}});
        assert_eq!(
            check(&svc),
            (
                State::InProgress,
                "ClusterIP not set. Service type: LoadBalancer".into()
            )
        );
        svc["spec"]["clusterIP"] = json!("10.0.0.17");
        assert_eq!(check(&svc).0, State::Current);
        assert_eq!(readiness_with(&svc, now, waits).state, State::InProgress);
        svc["status"]["loadBalancer"]["ingress"] = json!([{"ip": "10.0.0.5"}]);
        assert_eq!(check(&svc).0, State::Current);
        assert_eq!(readiness_with(&svc, now, waits).state, State::Current);
        let node_port = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "np"},
            "spec": {"type": "NodePort", "clusterIP": "10.0.0.18"}});
        assert_eq!(readiness_with(&node_port, now, waits).state, State::Current);

        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(check(&cm).0, State::Current);
        let mut cert = json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
            "metadata": {"name": "tls", "generation": 1},
            "status": {"conditions": [{"type": "Ready", "status": "False",
                "reason": "Issuing", "message": "Issuing certificate as Secret does not exist"}]}});
        assert_eq!(
            check(&cert),
            (
                State::InProgress,
                "Issuing: Issuing certificate as Secret does not exist".into()
            )
        );
        cert["status"]["conditions"] =
            json!([{"type": "Stalled", "status": "True", "reason": "Bad"}]);
        assert_eq!(check(&cert), (State::Failed, "Bad".into()));
        cert["status"]["conditions"] = json!([{"type": "Reconciling", "status": "True"}]);
        assert_eq!(check(&cert), (State::InProgress, "Reconciling".into()));
        cert["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
        assert_eq!(check(&cert).0, State::Terminating);
    }

    #[test]
    fn timestamps() {
        assert_eq!(
            at("1970-01-02T00:00:00Z"),
            SystemTime::UNIX_EPOCH + Duration::from_secs(86_400)
        );
        assert_eq!(
            at("2025-01-01T01:00:00.5+01:00"),
            at("2025-01-01T00:00:00Z")
        );
        assert_eq!(
            at("2024-03-01T00:00:00Z")
                .duration_since(at("2024-02-28T00:00:00Z"))
                .unwrap(),
            Duration::from_secs(2 * 86_400)
        );
        assert!(parse_rfc3339("yesterday").is_none());
        assert!(parse_rfc3339("2025-13-01T00:00:00Z").is_none());
    }
}
