//! Owns the connection to an API server: reading a kubeconfig (with an
//! optional context) or the in-cluster service account, building the
//! `kube::Client`, and the handful of requests everything else sends
//! (get, list, server-side apply, delete), each through [`super::retry`].
//!
//! kube's own retry layer is turned off so that [`super::retry`] is the
//! only policy; requests are built with `kube::core::Request` (no
//! `Api<K>`), so the retry loop sees every status code and header.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::core::params::GetParams;
use serde_json::Value;

use super::discovery::{Discovery, Kind};
use super::error::{Error, Verb};
use super::retry::{Answer, Op, RetryPolicy, send};
use crate::kube::ObjectRef;

/// The field manager of every apply.
pub const FIELD_MANAGER: &str = "capstan";

/// The most time the first request may take, retries included, before
/// the cluster counts as unreachable.
const PROBE_BUDGET: Duration = Duration::from_secs(10);

/// How long connecting to the API server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the cluster's address and credentials come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connect {
    /// A kubeconfig file, with its current context or the one named.
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// The context (`--context`); `None` for the file's current one.
        context: Option<String>,
    },
    /// The service account of the Pod the daemon runs in
    /// (`KUBERNETES_SERVICE_HOST`, the mounted token and CA).
    InCluster,
}

impl Connect {
    /// What the `--kubeconfig FILE [--context NAME]` or `--in-cluster`
    /// flags name; `None` when neither is given.
    pub fn from_flags(
        kubeconfig: Option<&std::path::Path>,
        context: Option<&str>,
        in_cluster: bool,
    ) -> Option<Connect> {
        match (kubeconfig, in_cluster) {
            (Some(path), _) => Some(Connect::Kubeconfig {
                path: path.to_path_buf(),
                context: context.map(str::to_string),
            }),
            (None, true) => Some(Connect::InCluster),
            (None, false) => None,
        }
    }
}

/// The client configuration for `how`.
///
/// # Errors
/// [`Error::ReadKubeconfig`], [`Error::KubeconfigContext`] or
/// [`Error::InCluster`].
pub async fn config(how: &Connect) -> Result<kube::Config, Error> {
    let mut config = match how {
        Connect::Kubeconfig { path, context } => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(|source| {
                Error::ReadKubeconfig {
                    path: path.clone(),
                    source,
                }
            })?;
            let options = kube::config::KubeConfigOptions {
                context: context.clone(),
                ..Default::default()
            };
            kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|source| Error::KubeconfigContext {
                    path: path.clone(),
                    context: context.clone(),
                    source,
                })?
        }
        Connect::InCluster => kube::Config::incluster().map_err(Error::InCluster)?,
    };
    config.default_retry = false;
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    Ok(config)
}

/// The connection every step uses: a client, the retry policy, and the
/// discovery cache.
#[derive(Clone)]
pub struct Cluster {
    client: kube::Client,
    url: String,
    /// The retry policy of every request.
    pub policy: RetryPolicy,
    /// Kinds resolved so far.
    pub discovery: Arc<Discovery>,
}

impl Cluster {
    /// A client for `config`. Must run inside the target's runtime (the
    /// client spawns its connection tasks there).
    ///
    /// # Errors
    /// [`Error::BuildClient`].
    pub fn new(config: kube::Config, policy: RetryPolicy) -> Result<Self, Error> {
        let url = config.cluster_url.to_string();
        let client = kube::Client::try_from(config).map_err(|source| Error::BuildClient {
            url: url.clone(),
            source,
        })?;
        Ok(Cluster {
            client,
            url,
            policy,
            discovery: Arc::new(Discovery::default()),
        })
    }

    /// The API server's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `GET /version`: whether the server answers at all (retried for at
    /// most 10 s).
    ///
    /// # Errors
    /// [`Error::Unreachable`] wrapping what happened.
    pub async fn probe(&self) -> Result<(), Error> {
        let op = Op {
            verb: Verb::Get,
            target: "/version".into(),
            object: None,
        };
        let policy = RetryPolicy {
            budget: self.policy.budget.min(PROBE_BUDGET),
            ..self.policy
        };
        let result = send(&self.client, &policy, &op, || {
            http::Request::get("/version")
                .body(Vec::new())
                .map_err(kube::core::request::Error::BuildRequest)
        })
        .await;
        match result {
            Ok(_) => Ok(()),
            Err(source) => Err(Error::Unreachable {
                url: self.url.clone(),
                source: Box::new(source),
            }),
        }
    }

    /// `GET` of a raw path (discovery documents).
    ///
    /// # Errors
    /// The request's error after the retry budget, or at once for a status that is not transient.
    pub async fn get_path(&self, path: &str) -> Result<Option<Value>, Error> {
        self.get_raw(Verb::Discover, path, "application/json").await
    }

    /// `GET` of a raw path (with its query string) asking for `accept`,
    /// named `verb` in errors; `None` on 404.
    ///
    /// # Errors
    /// The request's error after the retry budget, or at once for a status that is not transient.
    pub async fn get_raw(
        &self,
        verb: Verb,
        path: &str,
        accept: &str,
    ) -> Result<Option<Value>, Error> {
        let op = Op {
            verb,
            target: path.to_string(),
            object: None,
        };
        let answer = send(&self.client, &self.policy, &op, || {
            http::Request::get(path)
                .header(http::header::ACCEPT, accept)
                .body(Vec::new())
                .map_err(kube::core::request::Error::BuildRequest)
        })
        .await?;
        Ok(found(answer))
    }

    /// The events of a watch `request` (built with
    /// `kube::core::Request::watch`), as they come. Not retried: the
    /// caller reads again and watches anew.
    ///
    /// # Errors
    /// [`Error::Watch`] when the watch cannot be started.
    pub async fn watch(
        &self,
        target: &str,
        request: http::Request<Vec<u8>>,
    ) -> Result<
        impl futures_util::Stream<Item = Result<kube::core::WatchEvent<Value>, kube::Error>> + use<>,
        Error,
    > {
        self.client
            .request_events::<Value>(request)
            .await
            .map_err(|source| Error::Watch {
                target: target.to_string(),
                source,
            })
    }

    /// The live object `id` of `kind` in `namespace`; `None` on 404.
    ///
    /// # Errors
    /// The request's error after the retry budget, or at once for a status that is not transient.
    pub async fn get(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        id: &ObjectRef,
    ) -> Result<Option<Value>, Error> {
        let request = kube::core::Request::new(kind.collection_path(namespace));
        let op = object_op(Verb::Get, id);
        let answer = send(&self.client, &self.policy, &op, || {
            request.get(&id.name, &GetParams::default())
        })
        .await?;
        Ok(found(answer))
    }

    /// The items of a collection, filtered by label and field selectors
    /// (one page of at most 500; enough for diagnostics).
    ///
    /// # Errors
    /// The request's error after the retry budget, or at once for a status that is not transient.
    pub async fn list(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        labels: Option<&str>,
        fields: Option<&str>,
    ) -> Result<Vec<Value>, Error> {
        let path = kind.collection_path(namespace);
        let request = kube::core::Request::new(path.clone());
        let mut params = ListParams::default().limit(500);
        if let Some(labels) = labels {
            params = params.labels(labels);
        }
        if let Some(fields) = fields {
            params = params.fields(fields);
        }
        let op = Op {
            verb: Verb::List,
            target: path,
            object: None,
        };
        let answer = send(&self.client, &self.policy, &op, || request.list(&params)).await?;
        Ok(found(answer)
            .and_then(|list| list.get("items").and_then(Value::as_array).cloned())
            .unwrap_or_default())
    }

    /// Every item of a collection, page by page (500 a page, following
    /// `metadata.continue`), filtered by a label selector.
    ///
    /// # Errors
    /// The request's error after the retry budget, or at once for a status that is not transient.
    pub async fn list_all(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        labels: Option<&str>,
    ) -> Result<Vec<Value>, Error> {
        let path = kind.collection_path(namespace);
        let request = kube::core::Request::new(path.clone());
        let op = Op {
            verb: Verb::List,
            target: path,
            object: None,
        };
        let mut items = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut params = ListParams::default().limit(500);
            if let Some(labels) = labels {
                params = params.labels(labels);
            }
            if let Some(token) = &token {
                params = params.continue_token(token);
            }
            let answer = send(&self.client, &self.policy, &op, || request.list(&params)).await?;
            let Some(page) = found(answer) else {
                return Ok(items);
            };
            if let Some(Value::Array(page_items)) = page.get("items") {
                items.extend(page_items.iter().cloned());
            }
            token = page
                .pointer("/metadata/continue")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_string);
            if token.is_none() {
                return Ok(items);
            }
        }
    }

    /// Server-side apply of `body` as field manager `capstan` with strict
    /// field validation; `dry_run` sends `dryRun=All`, `force` takes
    /// fields other managers own. Returns the object as the server has
    /// (or would have) it.
    ///
    /// # Errors
    /// The request's error after the retry budget, or at once for a status that is not transient.
    pub async fn apply(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        id: &ObjectRef,
        body: &Value,
        dry_run: bool,
        force: bool,
    ) -> Result<Value, Error> {
        let request = kube::core::Request::new(kind.collection_path(namespace));
        let mut params = PatchParams::apply(FIELD_MANAGER).validation_strict();
        if dry_run {
            params = params.dry_run();
        }
        if force {
            params = params.force();
        }
        let verb = if dry_run {
            Verb::DryRunApply
        } else {
            Verb::Apply
        };
        let op = object_op(verb, id);
        let patch = Patch::Apply(body);
        let answer = send(&self.client, &self.policy, &op, || {
            request.patch(&id.name, &params, &patch)
        })
        .await?;
        match answer {
            Answer::Found(object) => Ok(object),
            Answer::NotFound => Err(Error::Refused {
                verb,
                target: id.to_string(),
                code: 404,
                reason: "NotFound".into(),
                message: match kind.plural.as_str() {
                    "rolebindings" | "clusterrolebindings" => format!(
                        "the role {} refers to is missing, and the binder may not `bind` roles it \
                         cannot read (the API server resolves the role to check for escalation)",
                        id.name
                    ),
                    plural => {
                        format!(
                            "the server has no {plural} in this scope (is the namespace there?)"
                        )
                    }
                },
            }),
        }
    }

    /// `POST` of `body` (the object `id`) into its collection, as field
    /// manager `capstan`. A 409 (it exists) is [`Error::Refused`] with
    /// code 409.
    ///
    /// # Errors
    /// The request's error after the retry budget, or at once for a status that is not transient.
    pub async fn create(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        id: &ObjectRef,
        body: &Value,
    ) -> Result<Value, Error> {
        self.write(Verb::Create, kind, namespace, id, body).await
    }

    /// `PUT` of `body` (the object `id`, carrying the
    /// `metadata.resourceVersion` it was read at): the server refuses it
    /// with 409 when the object changed since, which is optimistic
    /// concurrency.
    ///
    /// # Errors
    /// The request's error after the retry budget, or at once for a status that is not transient.
    pub async fn replace(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        id: &ObjectRef,
        body: &Value,
    ) -> Result<Value, Error> {
        self.write(Verb::Replace, kind, namespace, id, body).await
    }

    /// `PUT` of `body` to the object's `status` subresource, guarded by
    /// the `metadata.resourceVersion` it carries (409 when the object
    /// changed since).
    ///
    /// # Errors
    /// The request's error after the retry budget, or at once for a status that is not transient.
    pub async fn replace_status(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        id: &ObjectRef,
        body: &Value,
    ) -> Result<Value, Error> {
        self.write(Verb::ReplaceStatus, kind, namespace, id, body)
            .await
    }

    /// Deletes `id` only if it is still at `resource_version` (a 409
    /// otherwise); `false` when it was already gone.
    ///
    /// # Errors
    /// The request's error after the retry budget, or at once for a status that is not transient.
    pub async fn delete_at(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        id: &ObjectRef,
        resource_version: &str,
    ) -> Result<bool, Error> {
        let params = DeleteParams {
            preconditions: Some(kube::api::Preconditions {
                resource_version: Some(resource_version.to_string()),
                uid: None,
            }),
            ..DeleteParams::background()
        };
        Ok(self
            .delete_with(kind, namespace, id, &params)
            .await?
            .is_some())
    }

    /// A `POST` ([`Verb::Create`]) or `PUT` (any other verb) of `body`.
    async fn write(
        &self,
        verb: Verb,
        kind: &Kind,
        namespace: Option<&str>,
        id: &ObjectRef,
        body: &Value,
    ) -> Result<Value, Error> {
        let request = kube::core::Request::new(kind.collection_path(namespace));
        let params = kube::api::PostParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..kube::api::PostParams::default()
        };
        let bytes = serde_json::to_vec(body).map_err(|source| Error::Decode {
            verb,
            target: id.to_string(),
            source,
        })?;
        let op = object_op(verb, id);
        let answer = send(&self.client, &self.policy, &op, || match verb {
            Verb::Create => request.create(&params, bytes.clone()),
            Verb::ReplaceStatus => {
                request.replace_subresource("status", &id.name, &params, bytes.clone())
            }
            _ => request.replace(&id.name, &params, bytes.clone()),
        })
        .await?;
        expect_found(answer, verb, id)
    }

    /// A JSON merge patch (`application/merge-patch+json`) of `id`, as
    /// field manager `capstan`: for what server-side apply cannot say,
    /// such as clearing a field another manager set (a `null` removes
    /// it). Returns the object as the server has it.
    ///
    /// # Errors
    /// The request's error after the retry budget, or at once for a status that is not transient.
    pub async fn merge_patch(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        id: &ObjectRef,
        patch: &Value,
    ) -> Result<Value, Error> {
        let request = kube::core::Request::new(kind.collection_path(namespace));
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        };
        let op = object_op(Verb::MergePatch, id);
        let patch = Patch::Merge(patch);
        let answer = send(&self.client, &self.policy, &op, || {
            request.patch(&id.name, &params, &patch)
        })
        .await?;
        match answer {
            Answer::Found(object) => Ok(object),
            Answer::NotFound => Err(Error::Refused {
                verb: Verb::MergePatch,
                target: id.to_string(),
                code: 404,
                reason: "NotFound".into(),
                message: "the object is gone".into(),
            }),
        }
    }

    /// Deletes `id` with the given propagation (`Background` or
    /// `Orphan`); the uid of the object the server deleted (`""` when its
    /// answer names none), or `None` when it was already gone (404).
    ///
    /// # Errors
    /// The request's error after the retry budget, or at once for a status that is not transient.
    pub async fn delete(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        id: &ObjectRef,
        orphan: bool,
    ) -> Result<Option<String>, Error> {
        let params = if orphan {
            DeleteParams::orphan()
        } else {
            DeleteParams::background()
        };
        let answer = self.delete_with(kind, namespace, id, &params).await?;
        Ok(answer.map(|a| {
            // The object (still finalizing) or a success Status whose
            // details carry the uid.
            a.pointer("/metadata/uid")
                .or_else(|| a.pointer("/details/uid"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        }))
    }

    /// `DELETE` of `id` with `params`: the server's answer, or `None` when
    /// it was already gone.
    async fn delete_with(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        id: &ObjectRef,
        params: &DeleteParams,
    ) -> Result<Option<Value>, Error> {
        let request = kube::core::Request::new(kind.collection_path(namespace));
        let op = object_op(Verb::Delete, id);
        let answer = send(&self.client, &self.policy, &op, || {
            request.delete(&id.name, params)
        })
        .await?;
        Ok(match answer {
            Answer::Found(object) => Some(object),
            Answer::NotFound => None,
        })
    }
}

fn object_op(verb: Verb, id: &ObjectRef) -> Op<'_> {
    Op {
        verb,
        target: id.to_string(),
        object: Some(id),
    }
}

/// The object of a write's answer; a 404 is an error naming it.
fn expect_found(answer: Answer, verb: Verb, id: &ObjectRef) -> Result<Value, Error> {
    match answer {
        Answer::Found(object) => Ok(object),
        Answer::NotFound => Err(Error::Refused {
            verb,
            target: id.to_string(),
            code: 404,
            reason: "NotFound".into(),
            message: "the object or its collection is gone".into(),
        }),
    }
}

fn found(answer: Answer) -> Option<Value> {
    match answer {
        Answer::Found(value) => Some(value),
        Answer::NotFound => None,
    }
}
