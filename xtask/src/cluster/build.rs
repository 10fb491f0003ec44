//! Builds the control plane's binaries from the Go modules under
//! `test-support/control-plane/` (committed `go.mod`/`go.sum`, versions pinned)
//! with `go build`, one invocation per module so that the packages the
//! binaries of a module share compile once.
//!
//! The binaries land in a cache outside the repository, one folder per
//! module keyed by the module's `go.mod`, `go.sum`, the Go version and the
//! build flags; a folder that is complete is used as it is, so a second
//! run on the same machine builds nothing. The cache's binaries are linked
//! into `<target>/cluster/bin/`, where the tests and the launcher find
//! them.
//!
//! Never downloads a binary: everything is compiled from the modules the
//! Go module proxy serves.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use sha2::{Digest as _, Sha256};

/// One Go module of ours and what it builds.
struct GoModule {
    /// The folder under `test-support/control-plane/`.
    dir: &'static str,
    /// The packages to build and the name of each binary.
    binaries: &'static [(&'static str, &'static str)],
    /// `-tags`, empty for none.
    tags: &'static str,
}

const MODULES: &[GoModule] = &[
    GoModule {
        dir: "kubernetes",
        binaries: &[
            ("k8s.io/kubernetes/cmd/kube-apiserver", "kube-apiserver"),
            (
                "k8s.io/kubernetes/cmd/kube-controller-manager",
                "kube-controller-manager",
            ),
            ("k8s.io/kubernetes/cmd/kube-scheduler", "kube-scheduler"),
            ("k8s.io/kubernetes/cmd/kubectl", "kubectl"),
        ],
        // Upstream's own tags for these commands (hack/lib/golang.sh).
        tags: "selinux,notest",
    },
    GoModule {
        dir: "etcd",
        binaries: &[("go.etcd.io/etcd/server/v3", "etcd")],
        tags: "",
    },
    GoModule {
        dir: "kwok",
        binaries: &[("sigs.k8s.io/kwok/cmd/kwok", "kwok")],
        tags: "",
    },
    GoModule {
        dir: "helm",
        binaries: &[("helm.sh/helm/v4/cmd/helm", "helm")],
        tags: "",
    },
];

/// The folder of our Go modules.
pub fn modules_dir(root: &Path) -> PathBuf {
    root.join("test-support/control-plane")
}

/// Where built binaries are kept between runs: `CAPSTAN_CONTROL_PLANE_CACHE`,
/// else `$XDG_CACHE_HOME/capstan/control-plane`, else
/// `~/.cache/capstan/control-plane`.
fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("CAPSTAN_CONTROL_PLANE_CACHE") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| std::env::temp_dir().join("capstan-cache"));
    base.join("capstan/control-plane")
}

/// A `go` command with the environment every build here uses: the local
/// toolchain only (never a toolchain download), no cgo, and go.sum as
/// committed.
fn go(dir: &Path) -> Command {
    let mut command = Command::new("go");
    command
        .current_dir(dir)
        .env("GOTOOLCHAIN", "local")
        .env("CGO_ENABLED", "0")
        .env("GOFLAGS", "-mod=readonly");
    command
}

/// `go version`, or why Go is not usable.
pub fn go_version() -> Result<String, String> {
    let out = Command::new("go")
        .arg("version")
        .env("GOTOOLCHAIN", "local")
        .output()
        .map_err(|e| {
            format!(
                "go not found ({e}): the control plane is built from Go modules; install Go 1.26"
            )
        })?;
    if !out.status.success() {
        return Err(format!(
            "go version failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The version `go.mod` requires of `module` (`k8s.io/kubernetes v1.37.2`).
fn required_version(go_mod: &str, module: &str) -> Option<String> {
    go_mod.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        let first = words.next()?;
        let (name, version) = if first == "require" {
            (words.next()?, words.next()?)
        } else {
            (first, words.next()?)
        };
        (name == module && version.starts_with('v')).then(|| version.to_owned())
    })
}

/// The `-ldflags` of a module: stripped, and stamped with the real version
/// where the binaries report one (`/version` must say the real
/// `gitVersion`, or Helm's `kubeVersion` checks and `.Capabilities` lie).
fn ldflags(module: &GoModule, go_mod: &str) -> Result<String, String> {
    let mut flags = String::from("-s -w");
    match module.dir {
        "kubernetes" => {
            let version = required_version(go_mod, "k8s.io/kubernetes").ok_or(
                "test-support/control-plane/kubernetes/go.mod requires no k8s.io/kubernetes",
            )?;
            let minor = version
                .trim_start_matches('v')
                .split('.')
                .nth(1)
                .unwrap_or("0")
                .to_owned();
            // hack/lib/version.sh stamps both packages.
            for package in [
                "k8s.io/component-base/version",
                "k8s.io/client-go/pkg/version",
            ] {
                let _ = write!(
                    flags,
                    " -X {package}.gitVersion={version} -X {package}.gitMajor=1 \
                     -X {package}.gitMinor={minor} -X {package}.gitTreeState=clean \
                     -X {package}.buildDate=1970-01-01T00:00:00Z"
                );
            }
        }
        "helm" => {
            let version = required_version(go_mod, "helm.sh/helm/v4")
                .ok_or("test-support/control-plane/helm/go.mod requires no helm.sh/helm/v4")?;
            let _ = write!(
                flags,
                " -X helm.sh/helm/v4/internal/version.version={version}"
            );
        }
        "etcd" => {
            if let Some(version) = required_version(go_mod, "go.etcd.io/etcd/server/v3") {
                let _ = write!(flags, " -X go.etcd.io/etcd/api/v3/version.GitSHA={version}");
            }
        }
        _ => {}
    }
    Ok(flags)
}

/// Checks that the kubernetes module replaces every staging module that
/// `k8s.io/kubernetes`'s own go.mod maps to `./staging/...`, each with its
/// `v0.X.Y` release: the list is derived from that go.mod (in the module
/// cache), never kept by hand. `cargo xtask cluster sync` rewrites the
/// replaces when they disagree.
fn check_staging_replaces(dir: &Path, go_mod: &str) -> Result<(), String> {
    let expected = staging_replaces(dir, go_mod)?;
    let missing: Vec<String> = expected
        .iter()
        .filter(|(module, version)| {
            !go_mod
                .lines()
                .any(|l| l.contains(&format!("{module} => {module} {version}")))
        })
        .map(|(module, version)| format!("{module} {version}"))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "test-support/control-plane/kubernetes/go.mod does not replace {} as k8s.io/kubernetes's go.mod asks; run `cargo xtask cluster sync`",
            missing.join(", ")
        ))
    }
}

/// The `(module, v0.X.Y)` pairs the kubernetes module must replace, read
/// from `k8s.io/kubernetes`'s go.mod at the version ours requires.
fn staging_replaces(dir: &Path, go_mod: &str) -> Result<Vec<(String, String)>, String> {
    let version = required_version(go_mod, "k8s.io/kubernetes")
        .ok_or("test-support/control-plane/kubernetes/go.mod requires no k8s.io/kubernetes")?;
    let staging_version = format!("v0.{}", version.trim_start_matches("v1."));
    let out = go(dir)
        .args(["mod", "download", "-json"])
        .arg(format!("k8s.io/kubernetes@{version}"))
        .output()
        .map_err(|e| format!("go mod download: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "go mod download k8s.io/kubernetes@{version}: {}",
            String::from_utf8_lossy(&out.stdout).trim()
        ));
    }
    let info: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("go mod download printed no JSON: {e}"))?;
    let upstream_mod = info["GoMod"]
        .as_str()
        .ok_or("go mod download named no GoMod file")?;
    let text = std::fs::read_to_string(upstream_mod)
        .map_err(|e| format!("reading {upstream_mod}: {e}"))?;
    let pairs: Vec<(String, String)> = text
        .lines()
        .filter_map(|line| {
            let (module, target) = line.trim().split_once("=>")?;
            let module = module
                .trim()
                .strip_prefix("replace ")
                .unwrap_or(module.trim());
            target
                .trim()
                .starts_with("./staging/")
                .then(|| (module.to_owned(), staging_version.clone()))
        })
        .collect();
    if pairs.is_empty() {
        return Err(format!("{upstream_mod} maps no module to ./staging"));
    }
    Ok(pairs)
}

/// `cargo xtask cluster sync`: rewrites the kubernetes module's replaces
/// from `k8s.io/kubernetes`'s go.mod, then `go mod tidy`.
pub fn sync(root: &Path) -> Result<(), String> {
    go_version()?;
    let dir = modules_dir(root).join("kubernetes");
    let go_mod = read(&dir.join("go.mod"))?;
    for (module, version) in staging_replaces(&dir, &go_mod)? {
        let mut edit = go(&dir);
        edit.args([
            "mod",
            "edit",
            &format!("-replace={module}={module}@{version}"),
        ]);
        crate::run(edit, "go mod edit")?;
    }
    let mut tidy = go(&dir);
    tidy.env("GOFLAGS", "-mod=mod").args(["mod", "tidy"]);
    crate::run(tidy, "go mod tidy")
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

/// Builds every module whose binaries are not cached yet and links all of
/// them into `bin_dir`. Prints what it built and how long it took.
pub fn build_all(root: &Path, bin_dir: &Path) -> Result<(), String> {
    let go_version = go_version()?;
    std::fs::create_dir_all(bin_dir).map_err(|e| format!("creating {}: {e}", bin_dir.display()))?;
    for module in MODULES {
        let out_dir = build_module(root, module, &go_version)?;
        for (_, name) in module.binaries {
            let link = bin_dir.join(name);
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(out_dir.join(name), &link)
                .map_err(|e| format!("linking {}: {e}", link.display()))?;
        }
    }
    Ok(())
}

/// Builds one module into its cache folder unless that folder is complete;
/// returns the folder.
fn build_module(root: &Path, module: &GoModule, go_version: &str) -> Result<PathBuf, String> {
    let dir = modules_dir(root).join(module.dir);
    let go_mod = read(&dir.join("go.mod"))?;
    let go_sum = read(&dir.join("go.sum"))?;
    let ldflags = ldflags(module, &go_mod)?;
    let mut hash = Sha256::new();
    for part in [
        go_mod.as_str(),
        go_sum.as_str(),
        go_version,
        &ldflags,
        module.tags,
        "CGO_ENABLED=0 -trimpath",
    ] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    let key: String = hash.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let out_dir = cache_root().join(format!("{}-{key}", module.dir));
    let complete = out_dir.join(".complete");
    if complete.exists() {
        return Ok(out_dir);
    }
    if module.dir == "kubernetes" {
        check_staging_replaces(&dir, &go_mod)?;
    }
    let partial = cache_root().join(format!("{}-{key}.partial", module.dir));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial)
        .map_err(|e| format!("creating {}: {e}", partial.display()))?;
    eprintln!(
        "xtask: building {} from test-support/control-plane/{} (cached in {})",
        module
            .binaries
            .iter()
            .map(|(_, n)| *n)
            .collect::<Vec<_>>()
            .join(", "),
        module.dir,
        out_dir.display()
    );
    let started = Instant::now();
    // One binary: -o names the file (etcd's package is its module root,
    // whose last element is `v3`). Several: -o names the folder.
    let target = match module.binaries {
        [(_, name)] => partial.join(name),
        _ => partial.clone(),
    };
    let mut build = go(&dir);
    build.arg("build").arg("-trimpath");
    if !module.tags.is_empty() {
        build.args(["-tags", module.tags]);
    }
    build
        .args(["-ldflags", &ldflags])
        .arg("-o")
        .arg(if module.binaries.len() > 1 {
            format!("{}/", target.display())
        } else {
            target.display().to_string()
        })
        .args(module.binaries.iter().map(|(package, _)| *package));
    crate::run(
        build,
        &format!("go build in test-support/control-plane/{}", module.dir),
    )?;
    std::fs::write(
        partial.join(".complete"),
        format!("{go_version}\n{ldflags}\n"),
    )
    .map_err(|e| format!("writing {}: {e}", partial.display()))?;
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::rename(&partial, &out_dir)
        .map_err(|e| format!("moving {} into place: {e}", partial.display()))?;
    eprintln!(
        "xtask: built test-support/control-plane/{} in {:.0} s",
        module.dir,
        started.elapsed().as_secs_f64()
    );
    Ok(out_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_required_version_is_read_from_a_block_or_a_line() {
        let go_mod = "module x\n\nrequire k8s.io/kubernetes v1.37.2\n\nrequire (\n\thelm.sh/helm/v4 v4.3.2 // indirect\n)\n";
        assert_eq!(
            required_version(go_mod, "k8s.io/kubernetes").as_deref(),
            Some("v1.37.2")
        );
        assert_eq!(
            required_version(go_mod, "helm.sh/helm/v4").as_deref(),
            Some("v4.3.2")
        );
        assert_eq!(required_version(go_mod, "helm.sh/helm"), None);
    }
}
