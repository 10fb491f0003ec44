//! Owns tenancy, as Flux's `serviceAccountName`: each app's releases are
//! applied, pruned, removed and hooked as a ServiceAccount the operator
//! names (per app, or a default), by impersonation, so the API server
//! holds a bundle to that account's rights — a trusted signature is not a
//! licence to create a ClusterRoleBinding to cluster-admin or to write
//! into another app's namespace. [`TenantTarget`] is a second
//! [`ApplyTarget`]: release-scoped calls go to a [`ClusterTarget`] that
//! impersonates the app's account (one connection per account, made on
//! first use); the rest (discovery, lookups, facts, watches, restarts)
//! go to the daemon's own connection.
//!
//! The daemon needs `impersonate` on exactly the accounts it is given
//! (a Role per namespace with `resourceNames`); each account needs what
//! its apps' charts hold, plus `get` on namespaces (an apply checks the
//! release's namespace exists).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{ClusterOptions, ClusterTarget, Connect};
use crate::kube::target::{ApplyOptions, ProgressSink, RemoveOptions};
use crate::kube::{
    Applied, ApplyPlan, ApplyTarget, HookEvent, LiveDiff, ObjectRef, Release, ReleaseEvent,
    Resource,
};
use crate::model::{LookupQuery, Served, WatchEnd, WatchFrom};

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

    fn apply_method(&self) -> &'static str {
        self.base.apply_method()
    }

    fn revision(&self, release: &Release) -> Result<Option<u64>, crate::kube::Error> {
        self.of(release)?.revision(release)
    }

    fn kind_scope(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<bool>, crate::kube::Error> {
        self.base.kind_scope(api_version, kind)
    }

    fn read_live(&self, query: &LookupQuery) -> Result<serde_json::Value, crate::kube::Error> {
        self.base.read_live(query)
    }

    fn served(&self) -> Result<Option<Served>, crate::kube::Error> {
        self.base.served()
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

    fn restart(&self, object: &ObjectRef) -> Result<(), crate::kube::Error> {
        self.base.restart(object)
    }

    fn admit_restart(&self, object: &ObjectRef) -> Result<(), crate::kube::Error> {
        self.base.admit_restart(object)
    }

    fn collection_version(
        &self,
        query: &LookupQuery,
    ) -> Result<Option<String>, crate::kube::Error> {
        self.base.collection_version(query)
    }

    fn wait_for_change(
        &self,
        from: &[WatchFrom],
        timeout: Duration,
    ) -> Result<WatchEnd, crate::kube::Error> {
        self.base.wait_for_change(from, timeout)
    }

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
    ) -> Result<Option<Vec<LiveDiff>>, crate::kube::Error> {
        self.of(release)?.diff_live(release, desired)
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
}
