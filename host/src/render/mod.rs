//! Chart rendering as `helm template` does it: the Go template engine
//! ([`mod@template`]), the function library ([`funcs`]), chart loading
//! ([`chart`]), dependency processing ([`deps`]), schema validation
//! ([`schema`]), reading manifest heads (`head`), manifest sorting and
//! printing ([`output`]), release names ([`names`]), and a process-wide cache of parsed templates
//! (`parsed`) for charts rendered again.
//!
//! Owns turning a chart and values into manifests, byte for byte as
//! `helm template` prints them. Must not apply anything to a cluster, read
//! the store or run plugins; `lookup` reaches no cluster itself, only the
//! answerer a connected render is handed ([`render_connected`]).

pub mod chart;
pub mod deps;
pub mod funcs;
mod head;
pub mod limits;
pub mod lookup;
pub mod names;
pub mod output;
mod parsed;
mod process;
mod rvalue;
pub mod schema;
pub mod template;

use std::path::PathBuf;

pub use chart::Chart;
pub use limits::{LimitKind, RenderLimits};
pub use lookup::{Lookup, LookupQuery};
pub use output::{Manifest, RenderedObject, read_objects};

use crate::values::{self, Map, Value};

/// Helm version the renderer reproduces (`.Capabilities.HelmVersion`).
pub const HELM_VERSION: &str = "v4.3.0";
/// Kubernetes version `helm template` assumes without `--kube-version`.
///
/// Helm derives it from the client-go it was built with (client-go 0.N
/// gives 1.N); 1.34 is our reading for Helm 4.3 and is not checked against
/// a real Helm build (the conformance set always passes `--kube-version`).
pub const DEFAULT_KUBE_VERSION: &str = "v1.34.0";

/// Default `.Capabilities.APIVersions`, in Helm's order.
pub const DEFAULT_API_VERSIONS: [&str; 57] = [
    "v1",
    "admissionregistration.k8s.io/v1",
    "admissionregistration.k8s.io/v1alpha1",
    "admissionregistration.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1",
    "apps/v1",
    "apps/v1beta1",
    "apps/v1beta2",
    "authentication.k8s.io/v1",
    "authentication.k8s.io/v1alpha1",
    "authentication.k8s.io/v1beta1",
    "authorization.k8s.io/v1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v1",
    "autoscaling/v2",
    "batch/v1",
    "batch/v1beta1",
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1beta1",
    "certificates.k8s.io/v1alpha1",
    "coordination.k8s.io/v1alpha2",
    "coordination.k8s.io/v1beta1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "lifecycle.k8s.io/v1alpha1",
    "networking.k8s.io/v1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1",
    "node.k8s.io/v1alpha1",
    "node.k8s.io/v1beta1",
    "policy/v1",
    "policy/v1beta1",
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
    "resource.k8s.io/v1",
    "resource.k8s.io/v1beta2",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1beta1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1beta1",
    "storage.k8s.io/v1",
    "storage.k8s.io/v1alpha1",
    "storagemigration.k8s.io/v1",
    "storagemigration.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1",
];

/// Rendering failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The chart path could not be read.
    #[error("reading chart {path}: {reason}")]
    ReadChart {
        /// The path given.
        path: String,
        /// What the operating system said.
        reason: String,
    },
    /// A chart archive is broken or holds entries outside the chart.
    #[error("reading chart archive {origin}: {reason}")]
    Archive {
        /// The archive.
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// A chart or one of its files is past the size or nesting limits.
    #[error("chart {what} is too large")]
    ChartTooLarge {
        /// The chart or file.
        what: String,
    },
    /// `Chart.yaml` is missing or invalid.
    #[error("invalid chart {origin}: {reason}")]
    ChartYaml {
        /// The chart.
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// A values file (or `values.yaml`, or the schema) does not parse.
    #[error("failed to parse {origin}")]
    ValuesYaml {
        /// The file.
        origin: String,
        /// The parse error.
        #[source]
        source: values::Error,
    },
    /// A values file could not be read.
    #[error("reading values file {path}: {reason}")]
    ReadValues {
        /// The path given.
        path: String,
        /// What the operating system said.
        reason: String,
    },
    /// A `--set`-style expression is invalid, or values do not coalesce.
    #[error("invalid {what}")]
    Values {
        /// The expression or step.
        what: String,
        /// The values error.
        #[source]
        source: values::Error,
    },
    /// `--kube-version` is not a version.
    #[error("invalid kube version {0:?}")]
    KubeVersion(String),
    /// Values break a chart's `values.schema.json`.
    #[error(
        "values don't meet the specifications of the schema(s) in the following chart(s):\n{0}"
    )]
    Schema(String),
    /// A template does not parse.
    #[error("parse error in {template}: {message}")]
    Parse {
        /// The template path.
        template: String,
        /// Go's message.
        message: String,
    },
    /// A template failed while executing.
    #[error("{}", helm_exec_message(.message))]
    Execute {
        /// The template path.
        template: String,
        /// Go's message.
        message: String,
    },
    /// A rendered document is not YAML.
    #[error("YAML parse error on {source_path}")]
    ManifestYaml {
        /// The template path.
        source_path: String,
        /// The parse error.
        #[source]
        source: values::Error,
    },
    /// A `--show-only` path matches no template.
    #[error("could not find template {path} in chart")]
    ShowOnlyMissing {
        /// The path given.
        path: String,
    },
    /// The top chart is a library chart, which cannot be installed.
    #[error("library charts are not installable")]
    LibraryChart,
    /// The chart's `kubeVersion` range excludes the target Kubernetes version.
    #[error("chart requires kubeVersion: {range} which is incompatible with Kubernetes {version}")]
    KubeVersionIncompatible {
        /// The chart's `kubeVersion`.
        range: String,
        /// The target version.
        version: String,
    },
    /// A template ran into a render limit (`render::limits`): the message
    /// names the template, line and column, and the limit.
    #[error("{}", helm_exec_message(.message))]
    Limit {
        /// Which limit.
        kind: LimitKind,
        /// The template being executed.
        template: String,
        /// The engine's message.
        message: String,
    },
    /// The renderer panicked: a bug in capstan, not in the chart.
    #[error("the renderer failed unexpectedly (a capstan bug: it panicked)")]
    Panicked,
    /// The release name breaks Helm's rule (`ValidateReleaseName`).
    #[error("release name {name:?}: {reason}")]
    ReleaseName {
        /// The name given.
        name: String,
        /// Helm's reason.
        reason: &'static str,
    },
    /// The `NAME` argument and `--generate-name`/`--name-template` do not
    /// go together, or no name was asked for (Helm's messages).
    #[error("{0}")]
    ReleaseNameArgs(String),
    /// `--name-template` does not parse or fails (Go's message).
    #[error("{0}")]
    NameTemplate(String),
}

/// Helm's rewording of template errors: `execution error at (LOC): MSG`
/// for the innermost failing action.
fn helm_exec_message(message: &str) -> String {
    const MARK: &str = "template: ";
    let inner = match message.rfind(MARK) {
        Some(i) => &message[i + MARK.len()..],
        None => return message.to_string(),
    };
    let Some((location, rest)) = inner.split_once(": ") else {
        return message.to_string();
    };
    let msg = match rest.split_once(">: ") {
        Some((head, tail)) if head.starts_with("executing ") => tail,
        _ => rest,
    };
    let msg = msg
        .strip_prefix("error calling fail: ")
        .or_else(|| msg.strip_prefix("error calling required: "))
        .unwrap_or(msg);
    let msg = between_warn_markers(msg).unwrap_or(msg);
    format!("execution error at ({location}): {msg}")
}

/// The text `fail` and `required` wrapped in [`funcs::WARN_START`] and
/// [`funcs::WARN_END`], as Helm's `warnRegex` cuts it out (first start
/// marker to last end marker); `None` when the markers are absent.
fn between_warn_markers(message: &str) -> Option<&str> {
    let start = message.find(funcs::WARN_START)? + funcs::WARN_START.len();
    let end = message.rfind(funcs::WARN_END)?;
    message.get(start..end)
}

/// The release a chart is rendered for (`.Release`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseInfo {
    /// Release name.
    pub name: String,
    /// Target namespace.
    pub namespace: String,
    /// Revision number (1 for an install).
    pub revision: i64,
    /// Whether this is an upgrade (otherwise an install).
    pub is_upgrade: bool,
}

impl ReleaseInfo {
    /// `.Release` as templates see it.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("Name".into(), Value::String(self.name.clone()));
        m.insert("Namespace".into(), Value::String(self.namespace.clone()));
        m.insert("IsUpgrade".into(), Value::Bool(self.is_upgrade));
        m.insert("IsInstall".into(), Value::Bool(!self.is_upgrade));
        m.insert("Revision".into(), Value::Int(self.revision));
        m.insert("Service".into(), Value::String("Helm".into()));
        Value::Map(m)
    }
}

/// What the cluster offers (`.Capabilities`).
#[derive(Debug, Clone, PartialEq)]
pub struct Capabilities {
    /// `v1.30.0` style version.
    pub kube_version: String,
    /// Major version (`"1"`).
    pub major: String,
    /// Minor version (`"30"`).
    pub minor: String,
    /// Available API versions (`apps/v1`, `apps/v1/Deployment`).
    pub api_versions: Vec<String>,
}

impl Default for Capabilities {
    fn default() -> Self {
        Capabilities {
            kube_version: DEFAULT_KUBE_VERSION.into(),
            major: "1".into(),
            minor: "34".into(),
            api_versions: DEFAULT_API_VERSIONS
                .iter()
                .map(|s| (*s).to_string())
                .collect(),
        }
    }
}

impl Capabilities {
    /// Helm's defaults with an optional `--kube-version` and extra
    /// `--api-versions` (appended after the defaults).
    ///
    /// # Errors
    /// [`Error::KubeVersion`] when the version is not `[v]MAJOR.MINOR[.PATCH...]`.
    pub fn new(kube_version: Option<&str>, extra_api_versions: &[String]) -> Result<Self, Error> {
        let mut caps = Capabilities::default();
        if let Some(v) = kube_version {
            let bare = v.strip_prefix('v').unwrap_or(v);
            let mut parts = bare.split(['.', '-', '+']);
            let major = parts
                .next()
                .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
            let minor = parts
                .next()
                .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
            let (Some(major), Some(minor)) = (major, minor) else {
                return Err(Error::KubeVersion(v.to_string()));
            };
            caps.kube_version = format!("v{bare}");
            caps.major = major.trim_start_matches('0').to_string();
            if caps.major.is_empty() {
                caps.major = "0".into();
            }
            caps.minor = minor.trim_start_matches('0').to_string();
            if caps.minor.is_empty() {
                caps.minor = "0".into();
            }
        }
        caps.api_versions.extend(extra_api_versions.iter().cloned());
        Ok(caps)
    }

    /// `.Capabilities` as templates see it.
    pub fn to_value(&self) -> Value {
        let mut kube = Map::new();
        kube.insert("Version".into(), Value::String(self.kube_version.clone()));
        kube.insert(
            "GitVersion".into(),
            Value::String(self.kube_version.clone()),
        );
        kube.insert("Major".into(), Value::String(self.major.clone()));
        kube.insert("Minor".into(), Value::String(self.minor.clone()));
        let mut helm = Map::new();
        helm.insert("Version".into(), Value::String(HELM_VERSION.into()));
        helm.insert("GitCommit".into(), Value::String(String::new()));
        helm.insert("GitTreeState".into(), Value::String(String::new()));
        helm.insert("GoVersion".into(), Value::String(String::new()));
        let mut m = Map::new();
        m.insert("KubeVersion".into(), Value::Map(kube));
        m.insert(
            "APIVersions".into(),
            Value::List(
                self.api_versions
                    .iter()
                    .map(|s| Value::String(s.clone()))
                    .collect(),
            ),
        );
        m.insert("HelmVersion".into(), Value::Map(helm));
        Value::Map(m)
    }
}

/// One source of user values, as given on the command line.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueSource {
    /// `-f FILE`
    File(PathBuf),
    /// `--set K=V`
    Set(String),
    /// `--set-string K=V`
    SetString(String),
    /// `--set-file K=PATH`
    SetFile(String),
    /// `--set-json K=JSON`
    SetJson(String),
}

/// Everything `capstan template` takes.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateOptions {
    /// Chart folder or `.tgz`.
    pub chart: PathBuf,
    /// Release name (`release-name` when not given).
    pub release_name: String,
    /// Namespace (`default` when not given).
    pub namespace: String,
    /// Value sources in command-line order.
    pub values: Vec<ValueSource>,
    /// `--kube-version`.
    pub kube_version: Option<String>,
    /// `--api-versions`.
    pub api_versions: Vec<String>,
    /// `--show-only` paths.
    pub show_only: Vec<String>,
    /// `--include-crds`.
    pub include_crds: bool,
    /// `--skip-tests`.
    pub skip_tests: bool,
    /// `--is-upgrade`.
    pub is_upgrade: bool,
    /// The render limits (default: [`RenderLimits::configured`]).
    pub limits: RenderLimits,
}

impl Default for TemplateOptions {
    fn default() -> Self {
        TemplateOptions {
            chart: PathBuf::new(),
            release_name: "release-name".into(),
            namespace: "default".into(),
            values: Vec::new(),
            kube_version: None,
            api_versions: Vec::new(),
            show_only: Vec::new(),
            include_crds: false,
            skip_tests: false,
            is_upgrade: false,
            limits: RenderLimits::configured(),
        }
    }
}

/// Merges user value sources as Helm does: every `-f` file in order, then
/// every `--set-json`, `--set`, `--set-string` and `--set-file` (Helm
/// applies the kinds in that fixed order, each kind in command-line order).
///
/// # Errors
/// [`Error::ReadValues`], [`Error::ValuesYaml`] or [`Error::Values`] for
/// unreadable files and invalid expressions.
pub fn merge_user_values(sources: &[ValueSource]) -> Result<Map, Error> {
    let mut flags = values::ValueFlags::default();
    for src in sources {
        match src {
            ValueSource::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| Error::ReadValues {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                })?;
                flags.files.push((path.display().to_string(), text));
            }
            ValueSource::Set(e) => flags.set.push(e.clone()),
            ValueSource::SetString(e) => flags.set_string.push(e.clone()),
            ValueSource::SetFile(e) => flags.set_file.push(e.clone()),
            ValueSource::SetJson(e) => flags.set_json.push(e.clone()),
        }
    }
    let read_file = |p: &str| std::fs::read_to_string(p).map_err(|e| e.to_string());
    values::merge_value_flags(&flags, &read_file).map_err(|error| match error {
        values::Error::ValuesFile { name, source } => Error::ValuesYaml {
            origin: name,
            source: *source,
        },
        values::Error::ValueExpression { expr, source, .. } => Error::Values {
            what: format!("value expression {expr:?}"),
            source: *source,
        },
        other => Error::Values {
            what: "values".into(),
            source: other,
        },
    })
}

/// The result of rendering a chart.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rendered {
    /// Non-hook manifests in Helm's install order.
    pub manifests: Vec<Manifest>,
    /// Hook manifests, sorted by kind.
    pub hooks: Vec<Manifest>,
    /// CRD files (`chart/crds/x.yaml`, content) of the enabled charts.
    pub crds: Vec<(String, String)>,
    /// The rendered `NOTES.txt` of the top chart, if any.
    pub notes: String,
}

impl Rendered {
    /// The non-hook manifests read as objects (see
    /// [`Manifest::to_object`]), in Helm's install order.
    ///
    /// # Errors
    /// [`Error::ManifestYaml`] naming the template of a document that is
    /// not YAML.
    pub fn objects(&self) -> Result<Vec<RenderedObject>, Error> {
        objects_of(&self.manifests)
    }

    /// The hook manifests read as objects, sorted by kind.
    ///
    /// # Errors
    /// As [`Rendered::objects`].
    pub fn hook_objects(&self) -> Result<Vec<RenderedObject>, Error> {
        objects_of(&self.hooks)
    }

    /// The documents of the charts' `crds/` files read as objects.
    ///
    /// # Errors
    /// As [`Rendered::objects`], naming the CRD file.
    pub fn crd_objects(&self) -> Result<Vec<RenderedObject>, Error> {
        let mut out = Vec::new();
        for (path, text) in &self.crds {
            out.extend(read_objects(path, text)?);
        }
        Ok(out)
    }
}

fn objects_of(manifests: &[Manifest]) -> Result<Vec<RenderedObject>, Error> {
    let mut out = Vec::with_capacity(manifests.len());
    for manifest in manifests {
        out.extend(manifest.to_object()?);
    }
    Ok(out)
}

/// Renders `chart` with user-supplied `values` (everything above the
/// chart's own defaults, already merged): processes dependencies,
/// coalesces values, validates schemas and renders every template.
///
/// Runs on the calling thread, on a large stack of its own
/// ([`template::with_big_stack`]) so that deep `include` nesting ends in a
/// template error, never a stack overflow, under the process's
/// [`RenderLimits::configured`] limits.
///
/// # Errors
/// Any [`Error`] of the steps above; [`Error::Limit`] when the chart runs
/// into a render limit.
pub fn render(
    chart: &Chart,
    values: &Map,
    release: &ReleaseInfo,
    caps: &Capabilities,
) -> Result<Rendered, Error> {
    render_with(chart, values, release, caps, RenderLimits::configured())
}

/// [`render`] under the given `limits`.
///
/// # Errors
/// As [`render`].
pub fn render_with(
    chart: &Chart,
    values: &Map,
    release: &ReleaseInfo,
    caps: &Capabilities,
    limits: RenderLimits,
) -> Result<Rendered, Error> {
    render_in(chart, values, release, caps, None, limits)
}

/// [`render`] connected to a target: `.Capabilities` are `caps` (what the
/// target serves) and the templates' `lookup` calls are answered by
/// `answerer`, which reads the target (an offline render answers them
/// with an empty map).
///
/// # Errors
/// As [`render`]; [`Error::Execute`] naming the template when `answerer`
/// refuses or fails a read.
pub fn render_connected(
    chart: &Chart,
    values: &Map,
    release: &ReleaseInfo,
    caps: &Capabilities,
    answerer: &dyn Lookup,
) -> Result<Rendered, Error> {
    render_in(
        chart,
        values,
        release,
        caps,
        Some(answerer),
        RenderLimits::configured(),
    )
}

/// A render on a big stack under `limits`, with `answerer` (if any)
/// answering `lookup`.
fn render_in(
    chart: &Chart,
    values: &Map,
    release: &ReleaseInfo,
    caps: &Capabilities,
    answerer: Option<&dyn Lookup>,
    limits: RenderLimits,
) -> Result<Rendered, Error> {
    template::with_big_stack(|| {
        let _budget = limits::start(limits);
        render_here(chart, values, release, caps, answerer)
    })
    .unwrap_or(Err(Error::Panicked))
}

/// [`render`], returning the manifests then the hooks, as the daemon applies them.
///
/// # Errors
/// As [`render`].
pub fn render_chart(
    chart: &Chart,
    values: &Value,
    release: &ReleaseInfo,
    caps: &Capabilities,
) -> Result<Vec<Manifest>, Error> {
    let user = values.as_map().cloned().unwrap_or_default();
    let rendered = render(chart, &user, release, caps)?;
    let mut all = rendered.manifests;
    all.extend(rendered.hooks);
    Ok(all)
}

fn render_here(
    chart: &Chart,
    user: &Map,
    release: &ReleaseInfo,
    caps: &Capabilities,
    answerer: Option<&dyn Lookup>,
) -> Result<Rendered, Error> {
    if chart.is_library() {
        return Err(Error::LibraryChart);
    }
    check_kube_version(chart, caps)?;
    let mut chart = chart.clone();
    deps::process(&mut chart, user)?;
    let coalesced =
        values::coalesce_chart_values(&deps::chart_values(&chart), user).map_err(|source| {
            Error::Values {
                what: "values".into(),
                source,
            }
        })?;
    let final_values = coalesced.values;
    validate_schemas(&chart, &final_values)?;
    let files = process::render(
        &chart,
        final_values,
        &release.to_value(),
        &caps.to_value(),
        answerer,
    )?;
    let notes_path = format!("{}/templates/NOTES.txt", chart.name());
    let mut notes = String::new();
    let files: Vec<(String, String)> = files
        .into_iter()
        .filter(|(path, text)| {
            if path.ends_with("NOTES.txt") {
                if *path == notes_path {
                    notes = text.clone();
                }
                return false;
            }
            true
        })
        .collect();
    let (hooks, manifests) = output::sort_manifests(&files)?;
    let mut crds = Vec::new();
    collect_crds(&chart, None, &mut crds);
    Ok(Rendered {
        manifests,
        hooks,
        crds,
        notes,
    })
}

/// Helm's check of `Chart.yaml`'s `kubeVersion` against the target version.
fn check_kube_version(chart: &Chart, caps: &Capabilities) -> Result<(), Error> {
    let range = chart.meta_str("kubeVersion");
    if range.is_empty() {
        return Ok(());
    }
    let Some(compare) = funcs::lookup("semverCompare") else {
        return Ok(());
    };
    let args = [
        Value::String(range.to_string()),
        Value::String(caps.kube_version.clone()),
    ];
    match compare(&args) {
        Ok(Value::Bool(false)) => Err(Error::KubeVersionIncompatible {
            range: range.to_string(),
            version: caps.kube_version.clone(),
        }),
        _ => Ok(()),
    }
}

fn collect_crds(chart: &Chart, parent: Option<&str>, out: &mut Vec<(String, String)>) {
    let full = match parent {
        Some(p) => format!("{p}/charts/{}", chart.name()),
        None => chart.name().to_string(),
    };
    for f in chart.crd_files() {
        out.push((
            format!("{full}/{}", f.name),
            String::from_utf8_lossy(&f.data).into_owned(),
        ));
    }
    for sub in &chart.subcharts {
        collect_crds(sub, Some(&full), out);
    }
}

fn validate_schemas(chart: &Chart, values: &Map) -> Result<(), Error> {
    // Most charts have no schema: then there is nothing to copy the
    // values for.
    if !has_schema(chart) {
        return Ok(());
    }
    let mut report = String::new();
    schema_report(chart, &Value::Map(values.clone()), &mut report);
    if report.is_empty() {
        Ok(())
    } else {
        Err(Error::Schema(report))
    }
}

/// Whether `chart` or any chart under it has a `values.schema.json`.
fn has_schema(chart: &Chart) -> bool {
    chart.schema.is_some() || chart.subcharts.iter().any(has_schema)
}

fn schema_report(chart: &Chart, values: &Value, report: &mut String) {
    if let Some(schema) = &chart.schema {
        let errors = schema::validate(schema, values);
        if !errors.is_empty() {
            report.push_str(&format!("{}:\n", chart.name()));
            for e in errors {
                report.push_str(&format!("- {e}\n"));
            }
        }
    }
    let none = Value::Map(Map::new());
    for sub in &chart.subcharts {
        let sub_values = values
            .as_map()
            .and_then(|m| m.get(sub.name()))
            .unwrap_or(&none);
        schema_report(sub, sub_values, report);
    }
}

/// `helm template`: loads the chart, merges the user values, renders and
/// prints exactly what Helm prints.
///
/// # Errors
/// Any [`Error`]: an invalid release name, unreadable chart or values,
/// invalid expressions, schema violations, template failures,
/// `--show-only` paths that match nothing.
pub fn template(opts: &TemplateOptions) -> Result<String, Error> {
    names::validate_release_name(&opts.release_name)?;
    let chart = chart::load(&opts.chart)?;
    let user = merge_user_values(&opts.values)?;
    let caps = Capabilities::new(opts.kube_version.as_deref(), &opts.api_versions)?;
    let release = ReleaseInfo {
        name: opts.release_name.clone(),
        namespace: opts.namespace.clone(),
        revision: 1,
        is_upgrade: opts.is_upgrade,
    };
    let rendered = render_with(&chart, &user, &release, &caps, opts.limits)?;
    let print = output::PrintOptions {
        crds: if opts.include_crds {
            rendered.crds.clone()
        } else {
            Vec::new()
        },
        skip_tests: opts.skip_tests,
        show_only: opts.show_only.clone(),
    };
    output::print(&rendered.hooks, &rendered.manifests, &print)
}

#[cfg(test)]
mod tests;
