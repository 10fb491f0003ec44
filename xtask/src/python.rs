//! Python tools in virtualenvs under the target folder, pinned, installed
//! once and reused: schemathesis for `api-fuzz`, componentize-py and
//! pytest (`plugin-sdk-python/tools.txt`) for the Python plugins' builds
//! and tests.
//!
//! A virtualenv is (re)installed when its record of what was installed
//! (`capstan-requirements.txt` inside it) differs from what is asked for,
//! so a changed pin reinstalls and an unchanged one costs nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{run, target_dir};

/// The Python plugin tools' requirements, one pip line each.
const PLUGIN_TOOLS: &str = include_str!("../../plugin-sdk-python/tools.txt");

/// The virtualenv the Python plugin tools live in; the e2e tests look for
/// `componentize-py` and `pytest` in its `bin/`.
pub fn plugin_tools_venv() -> PathBuf {
    target_dir().join("python-venv")
}

/// Installs componentize-py and pytest into [`plugin_tools_venv`].
pub fn plugin_tools() -> Result<(), String> {
    let requirements: Vec<&str> = PLUGIN_TOOLS
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect();
    ensure_venv(&plugin_tools_venv(), &requirements).map(|_| ())
}

/// A virtualenv at `venv` holding exactly the pip `requirements`; returns
/// its `bin/` folder.
pub fn ensure_venv(venv: &Path, requirements: &[&str]) -> Result<PathBuf, String> {
    let bin = venv.join("bin");
    let record = venv.join("capstan-requirements.txt");
    let wanted = requirements.join("\n") + "\n";
    if std::fs::read_to_string(&record).is_ok_and(|had| had == wanted) {
        return Ok(bin);
    }
    let started = std::time::Instant::now();
    let mut create = Command::new("python3");
    // `--clear`: a virtualenv made elsewhere (a copied target folder)
    // points at a Python that may be gone.
    create.args(["-m", "venv", "--clear"]).arg(venv);
    run(
        create,
        &format!("creating the virtualenv {}", venv.display()),
    )?;
    let mut pip = Command::new(bin.join("python3"));
    pip.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ])
    .args(requirements);
    run(pip, &format!("pip install {}", requirements.join(" ")))?;
    std::fs::write(&record, wanted).map_err(|e| format!("writing {}: {e}", record.display()))?;
    eprintln!(
        "xtask: installed {} into {} in {:.1?}",
        requirements.join(" "),
        venv.display(),
        started.elapsed()
    );
    Ok(bin)
}
