//! Owns tenancy, as Flux's `serviceAccountName`: each app's releases are
//! applied, pruned, removed and hooked as a ServiceAccount the operator
//! names (per app, or a default), by impersonation, so the API server
//! holds a bundle to that account's rights — a trusted signature is not a
//! licence to create a ClusterRoleBinding to cluster-admin or to write
//! into another app's namespace. [`TenantTarget`] is a second
//! [`ApplyTarget`]: release-scoped calls (apply, prune, remove, hooks, the
//! release record, `admit`, `diff_live`) go to a [`ClusterTarget`] that
//! impersonates the app's account (one connection per account, made on
//! first use); restarts and Events, which name no release, go to the
//! daemon's own connection. It wraps only those writes: its
//! [`ApplyTarget::view`] is the daemon connection's [`ClusterView`], so
//! discovery, lookups, facts and watches are read as the daemon. Since
//! [`ApplyTarget`] has no default method bodies, every write is written
//! out below; a new one fails to compile here until it is routed.
//!
//! The daemon needs `impersonate` on exactly the accounts it is given
//! (a Role per namespace with `resourceNames`); each account needs what
//! its apps' charts hold, plus `get` on namespaces (an apply checks the
//! release's namespace exists).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use super::{ClusterOptions, ClusterTarget, Connect};
use crate::kube::target::{ApplyOptions, ProgressSink, RemoveOptions};
use crate::kube::{
    Applied, ApplyPlan, ApplyTarget, ClusterView, HookEvent, LiveDiff, ObjectRef, Release,
    ReleaseEvent, Resource,
};

/// A ServiceAccount, `NAMESPACE/NAME`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceAccount {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl ServiceAccount {
    /// The user the API server knows it as.
    pub fn user(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }
}

impl std::str::FromStr for ServiceAccount {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (namespace, name) = crate::model::namespaced_name(text, "ServiceAccount")?;
        Ok(ServiceAccount { namespace, name })
    }
}

impl std::fmt::Display for ServiceAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Which account applies which app.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tenancy {
    /// The account of every app not named in `apps`; `None`: those apps
    /// are applied with the daemon's own rights.
    pub default: Option<ServiceAccount>,
    /// Accounts by app.
    pub apps: BTreeMap<String, ServiceAccount>,
}

impl Tenancy {
    /// The account `app` is applied as, if any.
    pub fn account_of(&self, app: &str) -> Option<&ServiceAccount> {
        self.apps.get(app).or(self.default.as_ref())
    }
}

/// The cluster target with tenancy (see the module doc).
pub struct TenantTarget {
    base: Arc<ClusterTarget>,
    tenancy: Tenancy,
    how: Connect,
    options: ClusterOptions,
    accounts: Mutex<HashMap<ServiceAccount, Arc<ClusterTarget>>>,
}

impl TenantTarget {
    /// `base` for everything but releases, whose apps `tenancy` maps to
    /// accounts; connections as those accounts are made like `base`'s
    /// (`how`, `options`).
    pub fn new(
        base: Arc<ClusterTarget>,
        tenancy: Tenancy,
        how: Connect,
        options: ClusterOptions,
    ) -> TenantTarget {
        TenantTarget {
            base,
            tenancy,
            how,
            options,
            accounts: Mutex::new(HashMap::new()),
        }
    }

    /// The target a release of `app` goes to.
    fn of(&self, release: &Release) -> Result<Arc<ClusterTarget>, crate::kube::Error> {
        let Some(account) = self.tenancy.account_of(&release.app) else {
            return Ok(Arc::clone(&self.base));
        };
        let mut accounts = self
            .accounts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(target) = accounts.get(account) {
            return Ok(Arc::clone(target));
        }
        let target = ClusterTarget::connect_as(&self.how, self.options, Some(&account.user()))
            .map_err(|source| crate::kube::Error::Cluster {
                release: release.to_string(),
                source: Box::new(source),
            })?;
        let target = Arc::new(target);
        accounts.insert(account.clone(), Arc::clone(&target));
        Ok(target)
    }
}

impl ApplyTarget for TenantTarget {
    fn apply(&self, release: &Release, plan: &ApplyPlan) -> Result<Applied, crate::kube::Error> {
        self.of(release)?.apply(release, plan)
    }

    fn remove(&self, release: &Release) -> Result<Vec<ObjectRef>, crate::kube::Error> {
        self.of(release)?.remove(release)
    }

    fn applied(&self, release: &Release) -> Result<Vec<Resource>, crate::kube::Error> {
        self.of(release)?.applied(release)
    }

    /// The base's (`server-side-apply`): no request is made.
    fn apply_method(&self) -> &'static str {
        self.base.apply_method()
    }

    fn revision(&self, release: &Release) -> Result<Option<u64>, crate::kube::Error> {
        self.of(release)?.revision(release)
    }

    /// The base connection's view: every read is made as the daemon
    /// itself, never as an app's account (as before the split: lookups,
    /// facts and watches belong to no release).
    fn view(&self) -> Arc<dyn ClusterView> {
        Arc::clone(&self.base) as Arc<dyn ClusterView>
    }

    fn apply_some(
        &self,
        release: &Release,
        objects: &[Resource],
        prune: &[ObjectRef],
    ) -> Result<Applied, crate::kube::Error> {
        self.of(release)?.apply_some(release, objects, prune)
    }

    fn admit(
        &self,
        release: &Release,
        objects: &[Resource],
        options: &ApplyOptions,
    ) -> Result<(), crate::kube::Error> {
        self.of(release)?.admit(release, objects, options)
    }

    /// As the daemon: a restart names an object, not a release, so it
    /// has no app account to take (the action policy admitted it).
    fn restart(&self, object: &ObjectRef) -> Result<(), crate::kube::Error> {
        self.base.restart(object)
    }

    /// As the daemon, as [`TenantTarget::restart`] is.
    fn admit_restart(&self, object: &ObjectRef) -> Result<(), crate::kube::Error> {
        self.base.admit_restart(object)
    }

    /// As the daemon: the Event is the daemon's report to the operator,
    /// not the app's write.
    fn record_event(&self, event: &ReleaseEvent) -> Result<(), crate::kube::Error> {
        self.base.record_event(event)
    }

    fn apply_with(
        &self,
        release: &Release,
        plan: &ApplyPlan,
        options: &ApplyOptions,
        progress: &dyn ProgressSink,
    ) -> Result<Applied, crate::kube::Error> {
        self.of(release)?
            .apply_with(release, plan, options, progress)
    }

    fn remove_with(
        &self,
        release: &Release,
        options: &RemoveOptions,
        progress: &dyn ProgressSink,
    ) -> Result<Vec<ObjectRef>, crate::kube::Error> {
        self.of(release)?.remove_with(release, options, progress)
    }

    fn run_hooks(
        &self,
        release: &Release,
        event: HookEvent,
        hooks: &[Resource],
        options: &ApplyOptions,
        progress: &dyn ProgressSink,
    ) -> Result<Vec<ObjectRef>, crate::kube::Error> {
        self.of(release)?
            .run_hooks(release, event, hooks, options, progress)
    }

    fn diff_live(
        &self,
        release: &Release,
        desired: &[Resource],
        options: &ApplyOptions,
    ) -> Result<Option<Vec<LiveDiff>>, crate::kube::Error> {
        self.of(release)?.diff_live(release, desired, options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_parse_and_apps_fall_back_to_the_default() {
        let account: ServiceAccount = "tenant-a/deployer".parse().unwrap();
        assert_eq!(account.user(), "system:serviceaccount:tenant-a:deployer");
        assert!("deployer".parse::<ServiceAccount>().is_err());
        assert!("Tenant/x".parse::<ServiceAccount>().is_err());
        assert!("a/B_c".parse::<ServiceAccount>().is_err());
        let mut tenancy = Tenancy::default();
        assert_eq!(tenancy.account_of("shop"), None);
        tenancy.default = Some("capstan-system/apps".parse().unwrap());
        tenancy.apps.insert("shop".into(), account.clone());
        assert_eq!(tenancy.account_of("shop"), Some(&account));
        assert_eq!(
            tenancy.account_of("other").map(ToString::to_string),
            Some("capstan-system/apps".into())
        );
    }

    /// Every request of a release write for an app with an account (its
    /// connection's probe, the apply's reads and writes, `admit`, the
    /// dry-run diff, the remove) carries that account's
    /// `Impersonate-User`; an app without one, and every read through
    /// the view, goes as the daemon.
    #[test]
    fn an_apps_writes_are_impersonated_and_the_views_reads_are_not() {
        use crate::kube::{NoProgress, parse_manifests, plan_apply};
        use crate::model::LookupQuery;

        let double = kube_double::KubeDouble::start(kube_double::Options::default()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        double.write_kubeconfig(&path).unwrap();
        let how = Connect::Kubeconfig {
            path,
            context: None,
        };
        let options = super::super::tests::options();
        let base = Arc::new(ClusterTarget::connect(&how, options).unwrap());
        let account: ServiceAccount = "tenant-a/deployer".parse().unwrap();
        let tenancy = Tenancy {
            default: None,
            apps: BTreeMap::from([("shop".to_string(), account.clone())]),
        };
        let target = TenantTarget::new(base, tenancy, how, options);
        let users = |double: &kube_double::KubeDouble| {
            let requests = double.requests();
            assert!(!requests.is_empty());
            requests
                .into_iter()
                .map(|r| {
                    (
                        format!("{} {}?{}", r.method, r.path, r.query),
                        r.impersonate_user,
                    )
                })
                .collect::<Vec<_>>()
        };
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n";
        let desired = parse_manifests(text).unwrap();

        let shop = super::super::tests::release();
        double.clear_requests();
        let plan = plan_apply(&target.applied(&shop).unwrap(), &desired).unwrap();
        target
            .admit(&shop, &desired, &ApplyOptions::default())
            .unwrap();
        target
            .apply_with(&shop, &plan, &ApplyOptions::default(), &NoProgress)
            .unwrap();
        target
            .diff_live(&shop, &desired, &ApplyOptions::default())
            .unwrap();
        let seen = users(&double);
        assert!(
            seen.iter().any(|(r, _)| r.starts_with("PATCH ")),
            "{seen:#?}"
        );
        for (request, user) in &seen {
            assert_eq!(user.as_deref(), Some(account.user().as_str()), "{request}");
        }

        double.clear_requests();
        let read = target
            .view()
            .read_live(&LookupQuery::new("v1", "ConfigMap", "shop", "settings"))
            .unwrap();
        assert_eq!(read["data"]["a"], "b");
        target.view().served().unwrap();
        for (request, user) in users(&double) {
            assert_eq!(user, None, "{request}");
        }

        double.clear_requests();
        target.remove(&shop).unwrap();
        for (request, user) in users(&double) {
            assert_eq!(user.as_deref(), Some(account.user().as_str()), "{request}");
        }

        let other = Release {
            app: "other".into(),
            chart: "web".into(),
            namespace: "other".into(),
            release_name: "web".into(),
        };
        double.clear_requests();
        let plan = plan_apply(&target.applied(&other).unwrap(), &desired).unwrap();
        target.apply(&other, &plan).unwrap();
        for (request, user) in users(&double) {
            assert_eq!(user, None, "{request}");
        }
    }
}
