//! Prepare: load a version's plugins and facts, ask them for the system
//! overrides, workload kinds and local volumes, and merge the override
//! layers each chart is rendered with. Writes nothing.

use crate::bundle::{self, Metadata};
use crate::lifecycle::Error;
use crate::lifecycle::apply::hooks::run_hook;
use crate::lifecycle::apply::secret_values::ChartSecrets;
use crate::lifecycle::apply::secret_values::resolve_secrets;
use crate::lifecycle::facts::current_facts;
use crate::lifecycle::job::AppPlugin;
use crate::lifecycle::job::Apply;
use crate::lifecycle::job::Job;
use crate::lifecycle::job::Prepared;
use crate::lifecycle::job::plugin_name;
use crate::lifecycle::job::user_overrides;
use crate::lifecycle::plan::PluginChoice;
use crate::lifecycle::stored::{StoredVersion, from_json, from_json_text, to_json};
use crate::model::{App, ComponentFacts, Facts};
use crate::model::{AppName, ChartCall, ComponentSpec, Hook, HookOutcome, Layer};
use crate::store::{DecisionRecord, OverrideLayer};
use crate::values::{self, Map};
use crate::volumes::LocalVolume;
use crate::workload::{DecidedBy, Decision};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Instant;

/// What the plugins answered for every chart: the system overrides, the
/// charts they disabled, and the secret values placed at render.
pub(crate) type SystemAnswers = (
    BTreeMap<String, serde_json::Value>,
    BTreeSet<String>,
    BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
);

pub(crate) fn check_kubernetes(
    app: &AppName,
    metadata: &Metadata,
    facts: &Facts,
) -> Result<(), Error> {
    let Some(range) = &metadata.kubernetes else {
        return Ok(());
    };
    let shown = |v: &Option<bundle::KubeVersion>| v.map_or("any".to_owned(), |v| v.to_string());
    let unsupported = || Error::KubernetesUnsupported {
        app: app.to_string(),
        range: format!("{} to {}", shown(&range.min), shown(&range.max)),
        version: facts.kubernetes_version.clone(),
    };
    let version = bundle::KubeVersion::parse(facts.kubernetes_version.trim_start_matches('v'))
        .map_err(|_| unsupported())?;
    if range.contains(version) {
        Ok(())
    } else {
        Err(unsupported())
    }
}

pub(crate) fn decision_of(record: &DecisionRecord) -> Decision {
    let kind = record.kind;
    let decided_by = match record.decided_by.as_str() {
        "default-rule" => DecidedBy::DefaultRule,
        "rekind" | "operator" => DecidedBy::Rekind,
        _ => DecidedBy::Plugin,
    };
    Decision {
        kind,
        decided_by,
        traits_digest: record.traits_digest.clone(),
    }
}

/// The stored system layer of `version`, by chart: what the last apply
/// computed, so a remove renders the charts as they were applied.
pub(crate) fn stored_system_layer(
    job: &Job<'_>,
    version: &StoredVersion,
) -> Result<BTreeMap<String, serde_json::Value>, Error> {
    let layer = OverrideLayer::System {
        version: version.version.clone(),
    };
    let mut out = BTreeMap::new();
    for chart in &version.metadata.charts {
        let name = chart.name.to_string();
        if let Some(record) = job.store().override_layer(&job.app, &name, &layer)? {
            out.insert(name, record.values);
        }
    }
    Ok(out)
}

/// Loads plugins, builds the facts, runs `semantic-check` and computes
/// the system overrides (stored only by [`Job::commit`]).
pub(crate) fn prepare<'r>(job: &Job<'_>, request: &'r Apply<'r>) -> Result<Prepared<'r>, Error> {
    let mut prepared = load(job, request)?;
    check_kubernetes(&job.app, &request.version.metadata, &prepared.facts)?;
    job.step(request.phase, "semantic-check", "semantic-check hook")?;
    run_hook(job, &prepared, Hook::SemanticCheck)?;
    // An update's pre hook runs before the overrides are computed: the
    // user overrides it patches are the ones this update renders with.
    if let Some((before, _)) = request.around {
        job.step(request.phase, before.as_str(), &format!("{before} hook"))?;
        run_hook(job, &prepared, before)?;
    }
    job.step(
        request.phase,
        "system-overrides",
        "computing system overrides",
    )?;
    let (system, disabled, secret_layers) = system_overrides(job, &prepared)?;
    prepared.system = system;
    prepared.disabled = disabled;
    prepared.secret_layers = secret_layers;
    Ok(prepared)
}

/// The version's plugins and the current facts; no system overrides yet.
pub(crate) fn load<'r>(job: &Job<'_>, request: &'r Apply<'r>) -> Result<Prepared<'r>, Error> {
    Ok(Prepared {
        request,
        plugins: load_plugins(job, request.version)?,
        facts: current_facts(
            &job.inner.services.facts.current().facts,
            job.store(),
            &request.version.metadata,
        )?,
        system: BTreeMap::new(),
        served: job.view().served().map_err(|source| Error::Kube {
            chart: "(discovery)".into(),
            source: Box::new(source),
        })?,
        planned_api_versions: Mutex::new(BTreeSet::new()),
        disabled: BTreeSet::new(),
        secret_layers: BTreeMap::new(),
        hook_state: Mutex::new(BTreeMap::new()),
        namespaces: {
            let mut namespaces: Vec<String> = Vec::new();
            for chart in &request.version.metadata.charts {
                let namespace = chart.namespace.to_string();
                if !namespaces.contains(&namespace) {
                    namespaces.push(namespace);
                }
            }
            namespaces
        },
        ensured: Mutex::new(Vec::new()),
        observed: Mutex::new(Vec::new()),
    })
}

/// Whether the `semantic-check` hook would veto applying `version`
/// now: each plugin's hook is called as an apply calls it, but its
/// actions are not taken (the apply that follows calls it again).
/// The veto's reason, naming the plugin, when one vetoes.
pub fn semantic_veto(job: &Job<'_>, version: &StoredVersion) -> Result<Option<String>, Error> {
    let request = Apply::plain(version, "apply");
    let prepared = load(job, &request)?;
    let call = prepared.hook_call(job, Hook::SemanticCheck)?;
    for p in prepared.plugins_with(Hook::SemanticCheck) {
        let answer = prepared.call_hook(job, p, &call)?;
        if let HookOutcome::Veto(reason) = answer.verdict {
            return Ok(Some(format!(
                "plugin {} vetoed the semantic-check hook: {reason}",
                p.plugin.name()
            )));
        }
    }
    Ok(None)
}

/// The stored decisions of `components`, by component name.
pub(crate) fn stored_decisions(
    job: &Job<'_>,
    components: &[ComponentSpec],
) -> Result<BTreeMap<String, Decision>, Error> {
    let mut out = BTreeMap::new();
    for component in components {
        if let Some(record) = job.store().decision(&job.app, component.name.as_str())? {
            out.insert(component.name.to_string(), decision_of(&record));
        }
    }
    Ok(out)
}

/// static < system < user for one chart, merged as Helm merges `-f`
/// files (the chart's defaults are coalesced under them by the renderer).
pub(crate) fn merged_overrides(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    chart: &str,
) -> Result<Map, Error> {
    let version = &prepared.request.version.version;
    let mut layers = Vec::new();
    let stat = OverrideLayer::Static {
        version: version.clone(),
    };
    if let Some(unstored) = &prepared.request.version.unstored_static {
        if let Some(values) = unstored.get(chart) {
            layers.push((Layer::Static, from_json(values)?));
        }
    } else if let Some(record) = job.store().override_layer(&job.app, chart, &stat)? {
        layers.push((Layer::Static, from_json(&record.values)?));
    }
    if let Some(system) = prepared.system.get(chart) {
        layers.push((Layer::System, from_json(system)?));
    }
    if let Some(secrets) = prepared.secret_layers.get(chart) {
        layers.push((
            Layer::System,
            from_json(&serde_json::Value::Object(secrets.clone()))?,
        ));
    }
    if let Some(user) = user_overrides(job, prepared, chart)? {
        layers.push((Layer::User, from_json(&user)?));
    }
    Ok(values::merge_override_layers(&layers))
}

/// The local volumes the components mount, checked to exist and to
/// have their claims in the chart's namespace.
pub(crate) fn local_volumes(
    job: &Job<'_>,
    components: &[ComponentSpec],
    namespace: &str,
) -> Result<BTreeMap<String, LocalVolume>, Error> {
    let mut out = BTreeMap::new();
    for mount in components.iter().flat_map(|c| &c.traits.local_volumes) {
        let record = job
            .store()
            .volume(&mount.volume)?
            .ok_or_else(|| Error::UnknownVolume {
                name: mount.volume.clone(),
            })?;
        if record.namespace != namespace {
            return Err(Error::Volume {
                name: record.name.clone(),
                reason: format!(
                    "its claim is in namespace {} but the chart runs in {namespace}",
                    record.namespace
                ),
            });
        }
        out.insert(
            record.name.clone(),
            crate::lifecycle::volumes::local_volume(&record)?,
        );
    }
    Ok(out)
}

/// Asks the plugins serving the component's chart, in bundle order; the
/// first that decides wins.
pub(crate) fn ask_workload_kind(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    component: &ComponentSpec,
) -> Result<Option<PluginChoice>, Error> {
    let facts = ComponentFacts {
        name: component.name.to_string(),
        chart: component.chart.to_string(),
        workload: format!("{}/{}", component.workload.kind, component.workload.name),
        volumes: component
            .traits
            .volumes
            .iter()
            .map(|v| crate::model::VolumeRequest {
                container: u32::try_from(v.container).unwrap_or(u32::MAX),
                storage_class_name: v.storage_class_name.clone(),
                size: v.size.to_string(),
                path: v.path.clone(),
            })
            .collect(),
        local_volumes: component
            .traits
            .local_volumes
            .iter()
            .map(|v| v.volume.clone())
            .collect(),
    };
    let app = plugin_app(job, prepared);
    for p in prepared
        .plugins
        .iter()
        .filter(|p| p.charts.contains(component.chart.as_str()))
    {
        let ctx = job.call_context("workload-kind");
        let started = Instant::now();
        let answer = p.plugin.workload_kind(&ctx, &app, &prepared.facts, &facts);
        let answer = job.observe(p, "workload-kind", started, answer)?;
        if let Some(kind) = answer {
            return Ok(Some(PluginChoice {
                kind,
                plugin: p.plugin.name().to_owned(),
            }));
        }
    }
    Ok(None)
}

/// Each enabled chart served by a plugin: the plugins' overrides merged
/// in bundle order, and the charts a plugin disabled. A plugin is only
/// ever asked about the charts its own bundle lists for it, and is
/// handed the chart's namespace and user overrides (read-only).
pub(crate) fn system_overrides(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
) -> Result<SystemAnswers, Error> {
    let version = prepared.request.version;
    let mut out: BTreeMap<String, Map> = BTreeMap::new();
    let mut disabled = BTreeSet::new();
    let mut asked: BTreeMap<String, BTreeMap<String, ChartSecrets>> = BTreeMap::new();
    for chart in version.enabled_charts() {
        let serving: Vec<&AppPlugin> = prepared
            .plugins
            .iter()
            .filter(|p| p.charts.contains(&chart))
            .collect();
        if serving.is_empty() {
            continue;
        }
        let call = ChartCall {
            app: job.app.to_string(),
            version: version.version.clone(),
            chart: chart.clone(),
            namespace: version
                .metadata
                .charts
                .iter()
                .find(|c| c.name.as_str() == chart)
                .map(|c| c.namespace.to_string())
                .unwrap_or_default(),
            user_overrides: user_overrides(job, prepared, &chart)?
                .unwrap_or_else(|| serde_json::Value::Object(serde_json::Map::new())),
        };
        for p in serving {
            let ctx = job.call_context("overrides");
            let started = Instant::now();
            let answer = p.plugin.answer(&ctx, &call, &prepared.facts);
            let answer = job.observe(p, "overrides", started, answer)?;
            if !answer.secret_values.is_empty() || !answer.generate.is_empty() {
                let wanted = asked
                    .entry(p.path.clone())
                    .or_default()
                    .entry(chart.clone())
                    .or_default();
                wanted.namespace.clone_from(&call.namespace);
                wanted.values.extend(answer.secret_values);
                wanted.generate.extend(answer.generate);
            }
            if answer.disabled {
                tracing::info!(app = %job.app, plugin = %p.path, chart, "chart disabled by the plugin");
                disabled.insert(chart.clone());
            }
            let value = from_json_text(answer.values.as_str())?;
            if let values::Value::Map(map) = value {
                let merged = out.entry(chart.clone()).or_default();
                *merged = values::merge_maps(merged, &map);
            }
        }
    }
    let system = out
        .into_iter()
        .map(|(chart, map)| Ok((chart, to_json(&values::Value::Map(map))?)))
        .collect::<Result<_, Error>>()?;
    let mut secret_layers: BTreeMap<String, serde_json::Map<String, serde_json::Value>> =
        BTreeMap::new();
    for (plugin, charts) in &asked {
        for (chart, layer) in resolve_secrets(job, prepared, plugin, charts)? {
            let merged = secret_layers.entry(chart).or_default();
            for (key, value) in layer {
                merged.insert(key, value);
            }
        }
    }
    Ok((system, disabled, secret_layers))
}

pub(crate) fn plugin_app(job: &Job<'_>, prepared: &Prepared<'_>) -> App {
    App {
        name: job.app.to_string(),
        version: prepared.request.version.version.clone(),
    }
}

/// Loads this version's plugins from its own bundle folder: plugins are
/// keyed by app and version, so an update never runs stale code and one
/// app's plugins never serve another's charts.
pub(crate) fn load_plugins(
    job: &Job<'_>,
    version: &StoredVersion,
) -> Result<Vec<AppPlugin>, Error> {
    version
        .metadata
        .plugins
        .iter()
        .map(|p| {
            let path = version.dir.join(&p.path);
            let wasm = std::fs::read(&path).map_err(|e| Error::StoredBundle {
                app: job.app.to_string(),
                version: version.version.clone(),
                source: Box::new(e),
            })?;
            let plugin = job
                .inner
                .services
                .sandbox
                .load_for(
                    &job.call_context("info"),
                    job.app.as_str(),
                    &plugin_name(&p.path),
                    &wasm,
                )
                .map_err(|source| job.plugin_failed(&p.path, "load", source))?;
            Ok(AppPlugin {
                path: p.path.clone(),
                hooks: p.hooks.clone(),
                charts: p.charts.iter().map(ToString::to_string).collect(),
                plugin,
            })
        })
        .collect()
}
