//! `capstan plugin run`: runs one plugin component outside any app, the way
//! the daemon would, and prints what it computes; `capstan plugin inspect`
//! shows what a component is (info, world, imports, size, sha256);
//! `capstan plugin new` writes a plugin crate.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};

use crate::bundle;
use crate::model::{Hook, HookOutcome};
use crate::sandbox::{App, CallContext, ComponentCache, Facts, Policy, Sandbox};

#[derive(Debug, Subcommand)]
pub(crate) enum PluginCommand {
    /// Print a plugin's info and the overrides it computes for each chart it
    /// serves (or the one named), as YAML.
    Run(RunArgs),
    /// Write a new plugin crate (override, hook, facts fixture, unit test)
    /// that builds for wasm32-wasip2 as it is.
    New(NewArgs),
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
    /// Depend on the SDK at this path instead of its crates.io version.
    #[arg(long, value_name = "PATH")]
    sdk_path: Option<PathBuf>,
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
    /// Keep compiled components in this folder (created 0700).
    #[arg(long, value_name = "DIR")]
    cache: Option<PathBuf>,
}

pub(crate) fn run(command: PluginCommand) -> anyhow::Result<ExitCode> {
    match command {
        PluginCommand::Run(args) => run_plugin(args),
        PluginCommand::Inspect(args) => inspect_plugin(args),
        PluginCommand::New(args) => {
            let dir = args.dir.unwrap_or_else(|| PathBuf::from(&args.name));
            let files = super::scaffold::new_plugin(&args.name, &dir, args.sdk_path.as_deref())?;
            super::status(&format!(
                "{:>12} plugin {} in {} ({} files); next: cd {} && cargo build --release --target wasm32-wasip2",
                "Created",
                args.name,
                dir.display(),
                files.len(),
                dir.display()
            ));
            Ok(ExitCode::SUCCESS)
        }
    }
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
        None => Sandbox::new(policy)?,
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
            to_yaml(&serde_json::Value::Object(values))?.trim_end()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn inspect_plugin(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let wasm = std::fs::read(&args.plugin)
        .with_context(|| format!("reading plugin {}", args.plugin.display()))?;
    let sandbox = Sandbox::new(Policy::new())?;
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
            .get_or_init(|| Sandbox::new(Policy::new()).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(Clone::clone)?;
        crate::lifecycle::validate_plugin(sandbox, declared, wasm)
    }
}
