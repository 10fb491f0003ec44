//! Overrides, local volumes and the pause of an app's automatic
//! operations: what an operator sets beside the bundle (`override set`,
//! `volume create`, `app pause`), checked and stored.

use super::*;
use crate::lifecycle::Error;
use crate::lifecycle::overrides::{self, ChartOverrides, OverrideSet, OverrideSummary};
use crate::lifecycle::volumes::{self, VolumeRequest, VolumeView};
use crate::model::AppName;
use crate::store::OverrideLayer;

pub(super) fn volume_view(volume: crate::store::VolumeRecord, used_by: Vec<String>) -> VolumeView {
    VolumeView {
        claim: format!("{}/{}", volume.namespace, volume.name),
        volume,
        used_by,
    }
}

impl Lifecycle {
    // ---- pause ----

    /// Stops the daemon's automatic operations for `app` (automatic
    /// re-apply, drift correction, retries, resuming a leader's
    /// operation) until [`Lifecycle::resume_automatic`]; what an operator
    /// asks for still runs, and a running operation goes on. `by` names
    /// who asked; `reason` is optional and bounded. Kept in the store and
    /// the app's history.
    ///
    /// # Errors
    /// [`Error::BadPauseReason`]; [`crate::store::Error::UnknownApp`].
    pub fn pause_automatic(
        &self,
        app: &AppName,
        by: &str,
        reason: Option<&str>,
    ) -> Result<crate::store::AppRecord, Error> {
        crate::lifecycle::pause::set(&self.inner, app, true, by, reason)
    }

    /// Lets the daemon start automatic operations for `app` again: a
    /// pending retry starts when due, a drift correction at the next
    /// drift round, and an automatic re-apply the app was marked for
    /// while paused starts now (within its interval).
    ///
    /// # Errors
    /// As [`Lifecycle::pause_automatic`].
    pub fn resume_automatic(
        &self,
        app: &AppName,
        by: &str,
        reason: Option<&str>,
    ) -> Result<crate::store::AppRecord, Error> {
        let record = crate::lifecycle::pause::set(&self.inner, app, false, by, reason)?;
        let mark = self.inner.work.reapply_marks().get(app.as_str()).cloned();
        if let Some(mark) = mark
            && record.state == crate::store::AppState::Applied
            && let Ok(version) = self.active_version(app)
        {
            crate::lifecycle::reevaluate::auto_reapply(self, app, &version, &mark);
        }
        Ok(record)
    }

    // ---- overrides ----

    /// Which layers each chart of the active version has.
    ///
    /// # Errors
    /// [`crate::store::Error::UnknownApp`].
    pub fn override_list(&self, app: &AppName) -> Result<Vec<OverrideSummary>, Error> {
        let version = self.active_version(app)?;
        overrides::summary(self.store(), app, &version)
    }

    /// Every layer of a chart and the merged values.
    ///
    /// # Errors
    /// [`crate::store::Error::UnknownApp`], [`Error::UnknownChart`].
    pub fn override_show(&self, app: &AppName, chart: &str) -> Result<ChartOverrides, Error> {
        let version = self.active_version(app)?;
        overrides::show(self.store(), app, &version, chart)
    }

    /// Sets a chart's user overrides; they take effect at the next apply.
    ///
    /// # Errors
    /// [`Error::InvalidOverrides`] (nothing changed), [`Error::UnknownChart`],
    /// [`Error::Busy`] while an operation runs.
    pub fn override_set(
        &self,
        app: &AppName,
        chart: &str,
        request: &OverrideSet,
    ) -> Result<ChartOverrides, Error> {
        let version = self.unlocked_version(app)?;
        overrides::chart_of(app, &version, chart)?;
        let current = self
            .store()
            .override_layer(app, chart, &OverrideLayer::User)?;
        let values = overrides::user_values(request, current.as_ref().map(|r| &r.values))?;
        self.store()
            .set_override(app, chart, &OverrideLayer::User, &values)?;
        tracing::info!(app = %app, chart, "user overrides set");
        overrides::show(self.store(), app, &version, chart)
    }

    /// Deletes a chart's user overrides; returns whether there were any.
    ///
    /// # Errors
    /// As [`Lifecycle::override_set`].
    pub fn override_delete(&self, app: &AppName, chart: &str) -> Result<bool, Error> {
        let version = self.unlocked_version(app)?;
        overrides::chart_of(app, &version, chart)?;
        let existed = self
            .store()
            .delete_override(app, chart, &OverrideLayer::User)?;
        tracing::info!(app = %app, chart, existed, "user overrides deleted");
        Ok(existed)
    }

    // ---- local volumes ----

    /// Creates a local volume: records it and applies its PersistentVolume
    /// and PersistentVolumeClaim through the target.
    ///
    /// # Errors
    /// [`Error::Volume`] for an invalid request, a volume-exists conflict,
    /// the target's error (the record is then forgotten again).
    pub fn volume_create(&self, request: &VolumeRequest) -> Result<VolumeView, Error> {
        let record = volumes::record_of(request)?;
        let stored = self.store().create_volume(&record)?;
        if let Err(e) = volumes::apply_objects(self.inner.services.target.as_ref(), &stored) {
            let _ = self.store().delete_volume(&stored.name);
            return Err(e);
        }
        tracing::info!(volume = %stored.name, node = %stored.node, "local volume created");
        self.volume_view(stored)
    }

    /// Every volume with its claim and users.
    ///
    /// # Errors
    /// The store's.
    pub fn volume_list(&self) -> Result<Vec<VolumeView>, Error> {
        let mut users = volumes::users_by_volume(self.store())?;
        Ok(self
            .store()
            .list_volumes()?
            .into_iter()
            .map(|v| {
                let used_by = users.remove(&v.name).unwrap_or_default();
                volume_view(v, used_by)
            })
            .collect())
    }

    /// Removes a volume's objects (its PersistentVolume and its claim) from
    /// the target and forgets it; refused while an app on the target mounts
    /// it, unless `force`. The data on the node stays (the volume's reclaim
    /// policy is `Retain`).
    ///
    /// # Errors
    /// [`Error::UnknownVolume`], [`Error::VolumeInUse`], the target's.
    pub fn volume_remove(&self, name: &str, force: bool) -> Result<VolumeView, Error> {
        let record = self
            .store()
            .volume(name)?
            .ok_or_else(|| Error::UnknownVolume {
                name: name.to_owned(),
            })?;
        let view = self.volume_view(record)?;
        if !view.used_by.is_empty() && !force {
            return Err(Error::VolumeInUse {
                name: name.to_owned(),
                users: view.used_by.join(", "),
            });
        }
        // The claim goes with its volume: a remove keeps claims by
        // default, and a PersistentVolume still bound to one is held by
        // the `kubernetes.io/pv-protection` finalizer until the claim is
        // gone (found on the real control plane: the remove waited out its
        // deadline). The data on the node stays: the reclaim policy is
        // `Retain`.
        let options = crate::kube::RemoveOptions {
            purge: crate::kube::Purge {
                volumes: true,
                all: false,
            },
            ..crate::kube::RemoveOptions::default()
        };
        self.inner
            .services
            .target
            .remove_with(
                &volumes::release_of(&view.volume),
                &options,
                &crate::kube::NoProgress,
            )
            .map_err(|source| Error::Kube {
                chart: format!("{}/{name}", volumes::VOLUMES_APP),
                source: Box::new(source),
            })?;
        self.store().delete_volume(name)?;
        tracing::info!(volume = name, force, "local volume removed");
        Ok(view)
    }

    pub(super) fn volume_view(
        &self,
        volume: crate::store::VolumeRecord,
    ) -> Result<VolumeView, Error> {
        let used_by = volumes::users_by_volume(self.store())?
            .remove(&volume.name)
            .unwrap_or_default();
        Ok(volume_view(volume, used_by))
    }
}
