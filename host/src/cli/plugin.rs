//! `capstan plugin run`: runs one plugin component outside any app, the way
//! the daemon would, and prints what it computes; `capstan plugin inspect`
//! shows what a component is (info, world, imports, size, sha256);
//! `capstan plugin new` writes a plugin (Rust or Python) and `capstan
//! plugin build` builds one into a checked component.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};

use crate::bundle;
use crate::model::{App, Facts};
use crate::model::{Hook, HookOutcome};
use crate::sandbox::{CallContext, ComponentCache, Policy, Sandbox};

use super::scaffold::Lang;

#[derive(Debug, Subcommand)]
pub(crate) enum PluginCommand {
    /// Print a plugin's info and the overrides it computes for each chart it
    /// serves (or the one named), as YAML.
    Run(RunArgs),
    /// Write a new plugin (override, hook, facts fixture, unit tests) in
    /// Rust or Python that builds as it is, with the SDK this capstan
    /// carries: no checkout needed.
    New(NewArgs),
    /// Build the plugin in DIR (a Rust crate with cargo, a Python plugin
    /// with componentize-py) into a component, load it as `plugin inspect`
    /// does, and print its path, info, world and size.
    Build(BuildArgs),
    /// Show what a plugin component is: its info (charts, hooks, workload
    /// decisions), the WIT world and version it was built against, its
    /// imports and exports, the tools that built it, its size and sha256.
    Inspect(InspectArgs),
}

#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// The plugin component (`.wasm`).
    plugin: PathBuf,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = InspectFormat::Text)]
    output: InspectFormat,
}

/// `plugin inspect`'s output formats: one object for json and yaml.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum InspectFormat {
    /// Aligned `key: value` lines for a person.
    Text,
    /// One JSON object.
    Json,
    /// One YAML mapping.
    Yaml,
}

#[derive(Debug, Args)]
pub(crate) struct NewArgs {
    /// The plugin's name (lowercase letters, digits, '-').
    name: String,
    /// The folder to create (default: ./NAME).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The plugin's language.
    #[arg(long, value_enum, default_value_t = Lang::Rust)]
    lang: Lang,
    /// Rust only: depend on the SDK at this path (a capstan checkout's
    /// `plugin-sdk`) instead of the copy written into the new crate.
    #[arg(long, value_name = "PATH")]
    sdk_path: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct BuildArgs {
    /// The plugin's folder: a Rust crate (`Cargo.toml`) or a Python plugin
    /// (`app.py`).
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Write the component here (default: cargo's
    /// `target/wasm32-wasip2/release/NAME.wasm`, or `dist/NAME.wasm` for
    /// Python).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// `plugin run`'s output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum RunFormat {
    /// YAML documents: the info, then one per chart (or the outcome).
    Yaml,
    /// One JSON object: `plugin` (the info), then `overrides` (chart to
    /// values) or `outcome`; keys sorted, two-space indents.
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The plugin component (`.wasm`).
    plugin: PathBuf,
    /// Facts about the platform, YAML or JSON.
    #[arg(long)]
    facts: PathBuf,
    /// Compute overrides for this chart only.
    #[arg(long)]
    chart: Option<String>,
    /// Run this lifecycle hook instead of computing overrides
    /// (semantic-check, pre-apply, post-apply, pre-remove, post-remove,
    /// pre-update, post-update).
    #[arg(long, value_parser = str::parse::<Hook>)]
    hook: Option<Hook>,
    /// The app the plugin is told it serves.
    #[arg(long, default_value = "example")]
    app: String,
    /// The app version the plugin is told.
    #[arg(long, default_value = "0.1.0")]
    app_version: String,
    /// Wall-clock deadline per call, in milliseconds.
    #[arg(long, value_name = "N", default_value_t = crate::sandbox::DEFAULT_DEADLINE.as_millis() as u64)]
    timeout_ms: u64,
    /// Memory cap per call, in MiB.
    #[arg(long, value_name = "N", default_value_t = (crate::sandbox::DEFAULT_MEMORY_BYTES >> 20) as u64)]
    memory_mib: u64,
    /// Keep compiled components in this folder (created 0700). Default:
    /// the user's cache, `$XDG_CACHE_HOME/capstan/components` or
    /// `~/.cache/capstan/components`.
    #[arg(long, value_name = "DIR")]
    cache: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = RunFormat::Yaml)]
    output: RunFormat,
}

pub(crate) fn run(command: PluginCommand) -> anyhow::Result<ExitCode> {
    match command {
        PluginCommand::Run(args) => run_plugin(args),
        PluginCommand::Inspect(args) => inspect_plugin(args),
        PluginCommand::New(args) => {
            let dir = args.dir.unwrap_or_else(|| PathBuf::from(&args.name));
            let files =
                super::scaffold::new_plugin(&args.name, &dir, args.lang, args.sdk_path.as_deref())?;
            let next = match args.lang {
                Lang::Rust => "cargo test && capstan plugin build",
                Lang::Python => "python3 -m pytest && capstan plugin build",
            };
            super::status(&format!(
                "{:>12} plugin {} in {} ({} files); next: cd {} && {next}",
                "Created",
                args.name,
                dir.display(),
                files.len(),
                dir.display()
            ));
            Ok(ExitCode::SUCCESS)
        }
        PluginCommand::Build(args) => build_plugin(&args),
    }
}

fn build_plugin(args: &BuildArgs) -> anyhow::Result<ExitCode> {
    super::status(&format!(
        "{:>12} plugin in {}",
        "Building",
        args.dir.display()
    ));
    let built = super::plugin_build::build(&args.dir, args.out.as_deref())?;
    let i = &built.inspection;
    let (name, version) = i.info.as_ref().map_or(("?", "?"), |info| {
        (info.name.as_str(), info.version.as_str())
    });
    if !super::quiet() {
        let mut out = std::io::stdout().lock();
        writeln!(out, "file:     {}", built.path.display())?;
        writeln!(out, "plugin:   {name} {version} ({})", built.lang)?;
        writeln!(
            out,
            "world:    {}",
            i.world.as_deref().unwrap_or("(not the capstan world)")
        )?;
        writeln!(out, "size:     {} bytes", i.size)?;
        writeln!(out, "sha256:   {}", i.sha256)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn run_plugin(args: RunArgs) -> anyhow::Result<ExitCode> {
    let facts_text = std::fs::read_to_string(&args.facts)
        .with_context(|| format!("reading facts from {}", args.facts.display()))?;
    let facts = Facts::from_yaml(&facts_text)
        .with_context(|| format!("parsing facts in {}", args.facts.display()))?;
    let wasm = std::fs::read(&args.plugin)
        .with_context(|| format!("reading plugin {}", args.plugin.display()))?;
    let memory_bytes = usize::try_from(args.memory_mib.saturating_mul(1 << 20))
        .context("--memory-mib is too large")?;
    let policy = Policy::new()
        .deadline(Duration::from_millis(args.timeout_ms))
        .memory_bytes(memory_bytes);
    let sandbox = match &args.cache {
        Some(dir) => Sandbox::with_cache(policy, ComponentCache::open(dir)?)?,
        None => cli_sandbox(policy)?,
    };
    let name = plugin_name(&args.plugin);
    let plugin = sandbox.load(&name, &wasm)?;
    let app = App {
        name: args.app.clone(),
        version: args.app_version.clone(),
    };
    // A fixed secret: `plugin run` shows what a plugin computes, the same
    // way every time. The daemon derives a secret per app.
    let ctx = CallContext::new([0; 32]);

    let mut out = std::io::stdout().lock();
    let info = plugin.info();
    if args.output == RunFormat::Json {
        return run_json(&plugin, &args, &ctx, &app, &facts, &mut out);
    }
    writeln!(
        out,
        "{}",
        to_yaml(&serde_json::json!({ "plugin": info }))?.trim_end()
    )?;

    if let Some(hook) = args.hook {
        let outcome = plugin.lifecycle(&ctx, hook, &app, &facts)?;
        writeln!(out, "---")?;
        let text = match &outcome {
            HookOutcome::Proceed => "outcome: proceed".to_string(),
            HookOutcome::Veto(reason) => {
                to_yaml(&serde_json::json!({ "outcome": "veto", "reason": reason }))?
            }
        };
        writeln!(out, "{}", text.trim_end())?;
        return Ok(match outcome {
            HookOutcome::Proceed => ExitCode::SUCCESS,
            HookOutcome::Veto(_) => ExitCode::from(super::EXIT_FAILED),
        });
    }

    let charts = match &args.chart {
        Some(chart) => vec![chart.clone()],
        None => info.charts.clone(),
    };
    for chart in charts {
        let values = plugin.overrides(&ctx, &app, &facts, &chart)?;
        writeln!(out, "---\n# overrides for chart {chart}")?;
        writeln!(
            out,
            "{}",
            to_yaml(&serde_json::Value::Object(values.to_map()?))?.trim_end()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `plugin run -o json`: the same calls as the YAML form, one object.
fn run_json(
    plugin: &crate::sandbox::Plugin,
    args: &RunArgs,
    ctx: &CallContext,
    app: &App,
    facts: &Facts,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let info = plugin.info();
    let mut document = serde_json::Map::new();
    document.insert("plugin".into(), serde_json::to_value(info)?);
    let mut code = ExitCode::SUCCESS;
    if let Some(hook) = args.hook {
        let outcome = match plugin.lifecycle(ctx, hook, app, facts)? {
            HookOutcome::Proceed => serde_json::json!({ "outcome": "proceed" }),
            HookOutcome::Veto(reason) => {
                code = ExitCode::from(super::EXIT_FAILED);
                serde_json::json!({ "outcome": "veto", "reason": reason })
            }
        };
        document.insert("outcome".into(), outcome);
    } else {
        let charts = match &args.chart {
            Some(chart) => vec![chart.clone()],
            None => info.charts.clone(),
        };
        let mut overrides = serde_json::Map::new();
        for chart in charts {
            let values = plugin.overrides(ctx, app, facts, &chart)?;
            overrides.insert(chart, serde_json::Value::Object(values.to_map()?));
        }
        document.insert("overrides".into(), serde_json::Value::Object(overrides));
    }
    writeln!(
        out,
        "{}",
        serde_json::to_string_pretty(&serde_json::Value::Object(document))?
    )?;
    Ok(code)
}

fn inspect_plugin(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let wasm = std::fs::read(&args.plugin)
        .with_context(|| format!("reading plugin {}", args.plugin.display()))?;
    let sandbox = cli_sandbox(Policy::new())?;
    let name = plugin_name(&args.plugin);
    let inspection = sandbox.inspect(&name, &wasm).map_err(|e| match e {
        crate::sandbox::Error::InvalidComponent { reason, .. } => anyhow::anyhow!(
            "{} is not a plugin component: {reason}",
            args.plugin.display()
        ),
        other => anyhow::anyhow!("{}: {}", args.plugin.display(), super::one_line(&other)),
    })?;
    if !super::quiet() {
        let text = match args.output {
            InspectFormat::Text => inspect_text(&args.plugin, &inspection),
            InspectFormat::Json => {
                let mut text = serde_json::to_string_pretty(&inspection)?;
                text.push('\n');
                text
            }
            InspectFormat::Yaml => to_yaml(&inspection)?,
        };
        std::io::stdout().lock().write_all(text.as_bytes())?;
    }
    match &inspection.error {
        None => Ok(ExitCode::SUCCESS),
        Some(error) => anyhow::bail!("{} does not load: {error}", args.plugin.display()),
    }
}

/// `plugin inspect`'s text form: `key: value` lines, lists one a line.
fn inspect_text(path: &std::path::Path, i: &crate::sandbox::Inspection) -> String {
    let or_none = |list: &[String]| {
        if list.is_empty() {
            "(none)".to_owned()
        } else {
            list.join(", ")
        }
    };
    let mut lines: Vec<(String, String)> = Vec::new();
    let mut push = |key: &str, value: String| lines.push((key.to_owned(), value));
    push("file", path.display().to_string());
    if let Some(info) = &i.info {
        push("plugin", format!("{} {}", info.name, info.version));
        push("charts", or_none(&info.charts));
        let hooks: Vec<String> = info.hooks.iter().map(ToString::to_string).collect();
        push("hooks", or_none(&hooks));
        push(
            "workloads",
            if info.decides_workloads {
                "decides workload kinds".to_owned()
            } else {
                "no decisions (the default rule decides)".to_owned()
            },
        );
    }
    let world = i.world.as_deref().unwrap_or("(not the capstan world)");
    let speaks = match &i.wit_version {
        Some(v) if i.host_package.ends_with(&format!("@{v}")) => "the same".to_owned(),
        _ => i.host_package.to_owned(),
    };
    push("world", format!("{world} (this capstan speaks {speaks})"));
    push("size", format!("{} bytes", i.size));
    push("sha256", i.sha256.clone());
    push("exports", or_none(&i.exports));
    let built: Vec<String> = i
        .producers
        .iter()
        .map(|p| format!("{} {}", p.name, p.version).trim_end().to_owned())
        .collect();
    push("built with", or_none(&built));
    let mut out = String::new();
    for (key, value) in &lines {
        out.push_str(&format!("{:<11} {value}\n", format!("{key}:")));
    }
    out.push_str(&format!("imports:    {}\n", i.imports.len()));
    for import in &i.imports {
        out.push_str(&format!("  {import}\n"));
    }
    out
}

/// The user's compiled-component cache: `$XDG_CACHE_HOME/capstan/components`,
/// else `$HOME/.cache/capstan/components`; `None` without either.
///
/// Why by default: a Python component takes seconds to compile (CPython is
/// in it), and `plugin build`, `plugin run`, `plugin inspect` and `bundle
/// build` each load it. Entries are keyed by the component's hash and the
/// engine's settings (see `sandbox::ComponentCache`), in a folder made
/// 0700, so a stale or foreign entry is never loaded.
fn user_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|home| home.join(".cache"))
        })?;
    Some(base.join("capstan").join("components"))
}

/// A sandbox for the CLI's plugin commands under `policy`, with the
/// user's compiled-component cache when there is one and it opens (a
/// cache that cannot be made is no error: the command compiles instead).
///
/// # Errors
/// As [`Sandbox::new`].
pub(crate) fn cli_sandbox(policy: Policy) -> Result<Sandbox, crate::sandbox::Error> {
    match user_cache_dir().map(ComponentCache::open) {
        Some(Ok(cache)) => Sandbox::with_cache(policy, cache),
        _ => Sandbox::new(policy),
    }
}

fn plugin_name(path: &std::path::Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plugin".to_string())
}

fn to_yaml(value: &impl serde::Serialize) -> anyhow::Result<String> {
    serde_yaml_ng::to_string(value).context("formatting output as YAML")
}

/// Checks plugins for `bundle build`: each must be a component exporting the
/// capstan world that loads under the default policy and answers `info`.
/// One sandbox serves every plugin of a build; it is set up on the first
/// check, so commands that check nothing never start an engine.
#[derive(Default)]
pub(crate) struct ComponentValidator {
    sandbox: std::cell::OnceCell<Result<Sandbox, String>>,
}

impl ComponentValidator {
    pub(crate) fn validate(&self, declared: &bundle::Plugin, wasm: &[u8]) -> Result<(), String> {
        let sandbox = self
            .sandbox
            .get_or_init(|| cli_sandbox(Policy::new()).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(Clone::clone)?;
        crate::lifecycle::validate_plugin(sandbox, declared, wasm)
    }
}
