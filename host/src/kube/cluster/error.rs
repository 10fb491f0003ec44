//! Owns the cluster target's errors: one variant per failing step, each
//! naming the object (or path), the verb and what the server said, with
//! its cause as a typed source. Also formats the parts a person reads
//! most: field-manager conflicts, blocking objects, held deletions.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::kube::ObjectRef;

use super::inventory::{DecodeError, Owner};

/// A request's verb, as errors name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// `GET` of one object.
    Get,
    /// `GET` of a collection.
    List,
    /// Server-side apply (`PATCH`, `application/apply-patch+yaml`).
    Apply,
    /// Server-side apply with `dryRun=All`.
    DryRunApply,
    /// `DELETE`.
    Delete,
    /// `PATCH` with a JSON merge patch (`application/merge-patch+json`).
    MergePatch,
    /// `GET` of a discovery document.
    Discover,
    /// `GET` of a collection with `watch=true`.
    Watch,
    /// `POST` of a new object.
    Create,
    /// `PUT` of a whole object, guarded by its `resourceVersion`.
    Replace,
    /// `PUT` of an object's `status` subresource.
    ReplaceStatus,
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Apply => "apply",
            Verb::DryRunApply => "dry-run apply",
            Verb::Delete => "delete",
            Verb::MergePatch => "merge patch",
            Verb::Discover => "discover",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Replace => "replace",
            Verb::ReplaceStatus => "replace status",
        })
    }
}

/// One field another manager owns, from a 409's `details.causes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldConflict {
    /// The field path as the server names it, e.g. `.spec.replicas`.
    pub field: String,
    /// The manager that owns it, e.g. `kubectl`; empty if the message
    /// does not say.
    pub manager: String,
    /// The subresource it wrote through (`scale` for `kubectl scale`
    /// and an HPA); empty for the object itself.
    pub subresource: String,
}

/// Why one object blocks readiness or deletion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    /// The object.
    pub object: ObjectRef,
    /// Its state and kstatus's message, e.g. `InProgress: Ready: 0/1`.
    pub status: String,
    /// What is underneath: the Pods' waiting reasons, the latest Warning
    /// event. Each is one short sentence.
    pub causes: Vec<String>,
}

impl fmt::Display for Blocker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is {}", self.object, self.status)?;
        for cause in &self.causes {
            write!(f, "; {cause}")?;
        }
        Ok(())
    }
}

/// An object whose deletion does not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The object.
    pub object: ObjectRef,
    /// Its `metadata.finalizers` when last seen.
    pub finalizers: Vec<String>,
}

impl fmt::Display for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.finalizers.as_slice() {
            [] => write!(f, "{} is still terminating", self.object),
            [one] => write!(f, "{} is held by finalizer {one}", self.object),
            many => write!(
                f,
                "{} is held by finalizers {}",
                self.object,
                many.join(", ")
            ),
        }
    }
}

/// A failure worth retrying, and the last one when the budget ran out.
#[derive(Debug, thiserror::Error)]
pub enum Transient {
    /// The server answered 429 or 5xx.
    #[error("server answered {code}: {message}")]
    Status {
        /// The HTTP status code.
        code: u16,
        /// The server's message (or the start of its body).
        message: String,
    },
    /// No answer within the per-request timeout.
    #[error("no answer within {}", super::wait::human(*after))]
    Timeout {
        /// The per-request timeout.
        after: Duration,
    },
    /// The connection failed (refused, reset, TLS, body cut short).
    #[error("connection failed")]
    Connection(#[source] kube::Error),
}

/// Everything that can go wrong on a cluster.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kubeconfig file cannot be read or parsed.
    #[error("reading kubeconfig {path}")]
    ReadKubeconfig {
        /// The file.
        path: PathBuf,
        /// kube's complaint.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// The kubeconfig has no usable context, cluster or user (or not the
    /// one asked for).
    #[error("kubeconfig {path} has no usable context{}", context.as_ref().map(|c| format!(" {c:?}")).unwrap_or_default())]
    KubeconfigContext {
        /// The file.
        path: PathBuf,
        /// The context asked for (`--context`), if any.
        context: Option<String>,
        /// kube's complaint.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// In-cluster configuration is missing (not running in a Pod, or the
    /// service account token is not mounted).
    #[error("in-cluster configuration is unavailable")]
    InCluster(#[source] kube::config::InClusterError),
    /// The HTTP client could not be built (TLS settings, certificates).
    #[error("building the client for {url}")]
    BuildClient {
        /// The API server's URL.
        url: String,
        /// kube's complaint.
        #[source]
        source: kube::Error,
    },
    /// The target's async runtime did not start.
    #[error("starting the cluster target's runtime")]
    Runtime(#[source] std::io::Error),
    /// The API server did not answer the first request.
    #[error("cluster at {url} is unreachable")]
    Unreachable {
        /// The API server's URL.
        url: String,
        /// What happened.
        #[source]
        source: Box<Error>,
    },
    /// A request could not be built (an invalid name).
    #[error("building the {verb} request for {target}")]
    BuildRequest {
        /// The verb.
        verb: Verb,
        /// The object or path.
        target: String,
        /// kube's complaint.
        #[source]
        source: kube::core::request::Error,
    },
    /// The server refused a request, for a reason retrying cannot fix
    /// (400, 403, 404 where the object must exist, 409, 422...).
    #[error("{verb} {target} refused with {code} {reason}: {message}")]
    Refused {
        /// The verb.
        verb: Verb,
        /// The object or path.
        target: String,
        /// The HTTP status code.
        code: u16,
        /// The `Status` reason (`Invalid`, `Forbidden`...), or empty.
        reason: String,
        /// The server's message.
        message: String,
    },
    /// The server refused a change as immutable (a 422 naming a field
    /// that may not change), and the object is not one the operator lets
    /// capstan recreate ([`crate::kube::ApplyOptions::recreate`]).
    #[error(
        "{object} cannot be changed in place ({}): {message}; pass --recreate {}/{} to delete and create it again",
        field_name(field), object.kind, object.name
    )]
    Immutable {
        /// The object.
        object: Box<ObjectRef>,
        /// The field the server names (`spec.template`, `spec`), or
        /// empty when it names none.
        field: String,
        /// The server's message.
        message: String,
    },
    /// A Helm hook failed (or did not finish in time); hooks after it
    /// did not run.
    #[error("{event} hook {object} failed: {cause}")]
    HookFailed {
        /// The event (`pre-install`...).
        event: crate::kube::HookEvent,
        /// The hook object.
        object: Box<ObjectRef>,
        /// The Job's `Failed` condition, the Pod's reason, or the
        /// timeout with the hook's state.
        cause: String,
    },
    /// Server-side apply found fields owned by other managers (409).
    #[error(
        "apply of {object} conflicts with other field managers: {}; `capstan app diff` shows \
         who changed what, and `app apply --force-conflicts` (or `conflicts: force` in \
         capstan.yaml) takes the fields back",
        conflict_list(conflicts)
    )]
    FieldConflict {
        /// The object.
        object: Box<ObjectRef>,
        /// Each field and its manager.
        conflicts: Vec<FieldConflict>,
    },
    /// Transient failures went on past the operation's retry budget.
    #[error("{verb} {target} failed after {attempts} attempts in {}", super::wait::human(*elapsed))]
    GaveUp {
        /// The verb.
        verb: Verb,
        /// The object or path.
        target: String,
        /// How many requests were sent.
        attempts: u32,
        /// Time spent.
        elapsed: Duration,
        /// The last failure.
        #[source]
        last: Transient,
    },
    /// An answer is not the JSON expected.
    #[error("reading the answer to {verb} {target}")]
    Decode {
        /// The verb.
        verb: Verb,
        /// The object or path.
        target: String,
        /// The parser's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// Discovery does not know the kind, even after a refresh (and, for
    /// a kind whose CRD this release applies, after waiting for it).
    #[error("the cluster serves no kind {kind} in {api_version}")]
    UnknownKind {
        /// The `apiVersion`.
        api_version: String,
        /// The `kind`.
        kind: String,
    },
    /// Leader-election timings that cannot work.
    #[error("{0}")]
    BadLease(String),
    /// A watch could not be started or broke off.
    #[error("watch {target}")]
    Watch {
        /// The collection's path.
        target: String,
        /// kube's complaint.
        #[source]
        source: kube::Error,
    },
    /// A collection to watch from was read without a resource version.
    #[error("no resourceVersion to watch {target} from")]
    NoVersion {
        /// The collection's path.
        target: String,
    },
    /// A `lookup` of a list found more objects than a render may hold.
    #[error("listing {target} found more than {limit} objects")]
    LookupTooLarge {
        /// The collection's path.
        target: String,
        /// [`super::live::MAX_LIST_ITEMS`].
        limit: usize,
    },
    /// A live object that this release does not own is in the way.
    #[error("{object} already exists and is {owner}; pass --adopt to take it over")]
    Ownership {
        /// The object.
        object: Box<ObjectRef>,
        /// Who owns it.
        owner: Owner,
    },
    /// Objects were not Current when the chart's timeout ran out.
    #[error("timed out after {} waiting for {}", super::wait::human(*timeout), blocker_list(blockers))]
    NotReady {
        /// The timeout.
        timeout: Duration,
        /// Every object not Current, with its cause.
        blockers: Vec<Blocker>,
    },
    /// An object reached Failed (waiting stops at once).
    #[error("{}", blocker_list(blockers))]
    ReadinessFailed {
        /// The failed objects (and any other not Current then).
        blockers: Vec<Blocker>,
    },
    /// Deleted objects were still there when the timeout ran out.
    #[error("deletion not finished after {}: {}", super::wait::human(*timeout), held_list(held))]
    DeletionBlocked {
        /// The timeout.
        timeout: Duration,
        /// Every object still there, with its finalizers.
        held: Vec<Held>,
    },
    /// The release's inventory Secret exists but cannot be read.
    #[error("inventory secret {namespace}/{name} is corrupt")]
    Inventory {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// What is wrong.
        #[source]
        source: DecodeError,
    },
}

fn field_name(field: &str) -> String {
    match field {
        "" => "a field the server does not name".into(),
        field => format!("field {field}"),
    }
}

fn conflict_list(conflicts: &[FieldConflict]) -> String {
    let parts: Vec<String> = conflicts
        .iter()
        .map(|c| match c.manager.as_str() {
            "" => format!("{} (manager not named)", c.field),
            manager if c.subresource.is_empty() => format!("{} owned by {manager:?}", c.field),
            manager => format!(
                "{} owned by {manager:?} through subresource {:?}",
                c.field, c.subresource
            ),
        })
        .collect();
    parts.join(", ")
}

fn blocker_list(blockers: &[Blocker]) -> String {
    let parts: Vec<String> = blockers.iter().map(Blocker::to_string).collect();
    parts.join("; and ")
}

fn held_list(held: &[Held]) -> String {
    let parts: Vec<String> = held.iter().map(Held::to_string).collect();
    parts.join("; ")
}

/// The fields and managers of a 409 answer's `details.causes` (reason
/// `FieldManagerConflict`). The manager is read from the cause's message
/// (`conflict with "kubectl" using apps/v1`).
pub fn field_conflicts(status: &serde_json::Value) -> Vec<FieldConflict> {
    status
        .pointer("/details/causes")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter(|cause| {
            cause.get("reason").and_then(serde_json::Value::as_str) == Some("FieldManagerConflict")
        })
        .map(|cause| {
            let text = |key: &str| {
                cause
                    .get(key)
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("")
            };
            FieldConflict {
                field: text("field").to_string(),
                manager: quoted_after(text("message"), "conflict with \""),
                subresource: quoted_after(text("message"), "with subresource \""),
            }
        })
        .collect()
}

/// The quoted word after `lead` (which ends with its opening quote) in
/// a cause message: the manager after `conflict with "`, the subresource
/// after `with subresource "`.
fn quoted_after(message: &str, lead: &str) -> String {
    let Some((_, rest)) = message.split_once(lead) else {
        return String::new();
    };
    rest.split_once('"')
        .map(|(manager, _)| manager.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> ObjectRef {
        ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("shop".into()),
            name: "web".into(),
        }
    }

    /// The body of a real 409 from an API server (kubectl's conflict).
    #[test]
    fn a_field_conflict_names_each_field_and_manager() {
        let status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Apply failed with 2 conflicts: conflicts with \"kubectl\" using apps/v1:\n- .spec.replicas\nconflicts with \"helm\":\n- .spec.template.spec.containers[name=\"web\"].image",
            "reason": "Conflict",
            "details": {"causes": [
                {"reason": "FieldManagerConflict",
                 "message": "conflict with \"kubectl\" using apps/v1",
                 "field": ".spec.replicas"},
                {"reason": "FieldManagerConflict",
                 "message": "conflict with \"helm\" with subresource \"scale\"",
                 "field": ".spec.template.spec.containers[name=\"web\"].image"},
                {"reason": "FieldValueInvalid", "message": "x", "field": ".other"}]},
            "code": 409
        });
        let conflicts = field_conflicts(&status);
        assert_eq!(conflicts.len(), 2);
        let err = Error::FieldConflict {
            object: Box::new(deployment()),
            conflicts,
        };
        assert_eq!(
            err.to_string(),
            "apply of Deployment shop/web (apps/v1) conflicts with other field managers: \
             .spec.replicas owned by \"kubectl\", \
             .spec.template.spec.containers[name=\"web\"].image owned by \"helm\" \
             through subresource \"scale\"; `capstan app diff` shows who changed what, and \
             `app apply --force-conflicts` (or `conflicts: force` in capstan.yaml) takes the \
             fields back"
        );
        assert_eq!(quoted_after("something else", "conflict with \""), "");
    }

    #[test]
    fn blockers_and_held_objects_read_as_one_line() {
        let err = Error::NotReady {
            timeout: Duration::from_secs(300),
            blockers: vec![Blocker {
                object: deployment(),
                status: "InProgress: Ready: 0/1".into(),
                causes: vec![
                    "pod web-7c9-x2: container web waiting: ImagePullBackOff".into(),
                    "latest warning: Failed: pull access denied".into(),
                ],
            }],
        };
        assert_eq!(
            err.to_string(),
            "timed out after 5m waiting for Deployment shop/web (apps/v1) is InProgress: Ready: 0/1; \
             pod web-7c9-x2: container web waiting: ImagePullBackOff; latest warning: Failed: pull access denied"
        );
        let held = Held {
            object: deployment(),
            finalizers: vec!["example.com/hold".into()],
        };
        assert_eq!(
            held.to_string(),
            "Deployment shop/web (apps/v1) is held by finalizer example.com/hold"
        );
    }
}
