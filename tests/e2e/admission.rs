//! Checks at the right moment (issue 13): what `bundle build` signs passes
//! upload, and upload runs every check that needs no platform facts, so a
//! bundle is refused before anything is stored, not at apply.
//!
//! Each hostile case is made here from the example shop app: the build
//! (with `--no-lint`, so only the build's own checks run) must refuse it
//! naming the rule, and the same folder signed by hand, byte for byte as a
//! builder without the checks would, must be refused by upload with a 400,
//! leaving no app, no version and no files.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use capstan::bundle::{Digest, Manifest, ManifestEntry};
use capstan::trust::SigningKey;
use flate2::Compression;
use flate2::write::GzEncoder;

use crate::daemon::{Daemon, text};
use crate::support::plugin_wasm;

/// Every file under `dir`, as sorted bundle paths.
fn files_of(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    for entry in fs::read_dir(dir.join(prefix)).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if entry.file_type().unwrap().is_dir() {
            files_of(dir, &rel, out);
        } else {
            out.push(rel);
        }
    }
}

/// Signs the folder `app` with the daemon's test key into `out` in the
/// bundle format (MANIFEST, MANIFEST.sig, then every file), without any
/// content check: what a builder that skipped the checks would make.
fn hand_signed(d: &Daemon, app: &Path, out: &Path, level: Compression) -> PathBuf {
    let key = SigningKey::load(&d.dir.join("keys/test.key")).unwrap();
    let mut paths = Vec::new();
    files_of(app, "", &mut paths);
    paths.sort();
    let manifest = Manifest::from_entries(paths.iter().map(|path| ManifestEntry {
        path: path.clone(),
        digest: Digest::of(&fs::read(app.join(path)).unwrap()),
    }))
    .unwrap();
    let text = manifest.render();
    let signature = key.sign(text.as_bytes()).unwrap();
    let gzip = GzEncoder::new(fs::File::create(out).unwrap(), level);
    let mut tar = tar::Builder::new(gzip);
    let mut append = |path: &str, data: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        tar.append_data(&mut header, path, data).unwrap();
    };
    append("MANIFEST", text.as_bytes());
    append("MANIFEST.sig", signature.as_bytes());
    for entry in manifest.entries() {
        append(&entry.path, &fs::read(app.join(&entry.path)).unwrap());
    }
    tar.into_inner().unwrap().finish().unwrap().flush().unwrap();
    out.to_path_buf()
}

/// Asserts that `bundle build` refuses `app` with a message holding every
/// one of `wanted`, and leaves nothing at its output.
fn build_refuses(d: &Daemon, app: &Path, wanted: &[&str]) {
    let out_file = app.with_extension("tgz");
    let out = d.build(app, &out_file);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "the build signed it: {err}");
    for want in wanted {
        assert!(err.contains(want), "build: no {want:?} in {err}");
    }
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(!out_file.exists(), "the build left {}", out_file.display());
}

/// Asserts that upload refuses the hand-signed bundle of `app` with a 400
/// holding every one of `wanted`, and stores nothing.
fn upload_refuses(d: &Daemon, app: &Path, wanted: &[&str]) {
    upload_refuses_at(d, app, wanted, Compression::fast());
}

fn upload_refuses_at(d: &Daemon, app: &Path, wanted: &[&str], level: Compression) {
    let bundle = hand_signed(d, app, &app.with_extension("signed.tgz"), level);
    let out = d.cli(&["app", "upload", bundle.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "upload accepted it: {err}");
    for want in wanted {
        assert!(err.contains(want), "upload: no {want:?} in {err}");
    }
    let (status, body) = d.http(
        "POST",
        "/v1/apps",
        "application/gzip",
        &fs::read(&bundle).unwrap(),
    );
    assert_eq!(status, 400, "{body}");
    let (status, apps) = d.http("GET", "/v1/apps", "application/json", b"");
    assert_eq!((status, apps.trim()), (200, "[]"), "an app was stored");
    let bundles = d.state().join("bundles");
    let left: Vec<_> = fs::read_dir(&bundles)
        .map(|dir| {
            dir.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| name != ".staging")
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "files stored: {left:?}");
    let staging: Vec<_> = fs::read_dir(bundles.join(".staging"))
        .map(|dir| dir.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    assert!(staging.is_empty(), "staging left: {staging:?}");
}

/// `n` bytes of text that gzip shrinks only about twice (hex digits of a
/// fixed pseudo-random sequence), as YAML comment lines: too large, never
/// a compression ratio problem.
fn incompressible_yaml(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 80);
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    while out.len() < n {
        out.extend_from_slice(b"# ");
        for _ in 0..4 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            out.extend_from_slice(format!("{state:016x}").as_bytes());
        }
        out.push(b'\n');
    }
    out
}

/// A `.tgz` chart archive holding `Chart.yaml` and `files` (name, size)
/// of zeros under `templates/`.
fn zeros_chart(name: &str, files: &[(&str, usize)]) -> Vec<u8> {
    let mut gzip = GzEncoder::new(Vec::new(), Compression::fast());
    {
        let mut tar = tar::Builder::new(&mut gzip);
        let mut append = |path: String, data: &[u8]| {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(&mut header, path, data).unwrap();
        };
        append(
            format!("{name}/Chart.yaml"),
            format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n").as_bytes(),
        );
        for (file, size) in files {
            append(format!("{name}/templates/{file}"), &vec![0u8; *size]);
        }
        tar.finish().unwrap();
    }
    gzip.finish().unwrap()
}

#[test]
fn a_bundle_that_unpacks_to_more_than_100_times_its_size_is_refused_at_build() {
    let d = Daemon::start("admit_ratio");
    let app = d.app_folder("shop", "1.0.0", |app| {
        // Not part of any chart: only the bundle's own rule applies.
        fs::create_dir_all(app.join("docs")).unwrap();
        fs::write(app.join("docs/zeros.bin"), vec![0u8; 16 << 20]).unwrap();
    });
    build_refuses(&d, &app, &["decompresses more than 100 times"]);
    upload_refuses_at(
        &d,
        &app,
        &["decompresses more than 100 times"],
        Compression::best(),
    );
}

#[test]
fn a_50_mib_values_yaml_is_refused_at_build_and_upload_naming_the_file_and_the_limit() {
    let d = Daemon::start("admit_values_size");
    let app = d.app_folder("shop", "1.0.0", |app| {
        let values = app.join("charts/web/values.yaml");
        let mut data = fs::read(&values).unwrap();
        data.extend(incompressible_yaml(50 << 20));
        fs::write(values, data).unwrap();
    });
    let wanted = ["chart web", "charts/web/values.yaml", "at most 5 MiB"];
    build_refuses(&d, &app, &wanted);
    upload_refuses(&d, &app, &wanted);
}

#[test]
fn a_gzip_bomb_subchart_is_opened_and_bounded_at_build_and_upload() {
    let d = Daemon::start("admit_subchart_bomb");
    // One file of 8 MiB of zeros: 8 KiB compressed, 1000 times more unpacked.
    let one_big = d.app_folder("shop", "1.0.0", |app| {
        fs::create_dir_all(app.join("charts/web/charts")).unwrap();
        fs::write(
            app.join("charts/web/charts/bomb.tgz"),
            zeros_chart("bomb", &[("zeros.yaml", 8 << 20)]),
        )
        .unwrap();
    });
    let wanted = ["chart web", "bomb.tgz", "zeros.yaml", "at most 5 MiB"];
    build_refuses(&d, &one_big, &wanted);
    upload_refuses(&d, &one_big, &wanted);

    // Many files each under the file limit, 105 MiB in all.
    let many = d.app_folder("shop", "1.0.1", |app| {
        fs::create_dir_all(app.join("charts/web/charts")).unwrap();
        let files: Vec<(String, usize)> = (0..21)
            .map(|i| (format!("z{i:02}.yaml"), 5 << 20))
            .collect();
        let files: Vec<(&str, usize)> = files.iter().map(|(n, s)| (n.as_str(), *s)).collect();
        fs::write(
            app.join("charts/web/charts/bomb.tgz"),
            zeros_chart("bomb", &files),
        )
        .unwrap();
    });
    let wanted = ["chart web", "bomb.tgz", "100 MiB"];
    build_refuses(&d, &many, &wanted);
    upload_refuses(&d, &many, &wanted);
}

#[test]
fn a_plugin_that_cannot_load_is_refused_at_upload() {
    let d = Daemon::start("admit_plugin_load");
    let app = d.app_folder("shop", "1.0.0", |app| {
        fs::copy(
            plugin_wasm("capstan-test-bad-import"),
            app.join("plugins/ha-replicas.wasm"),
        )
        .unwrap();
    });
    let wanted = ["plugins/ha-replicas.wasm", "link"];
    build_refuses(&d, &app, &wanted);
    upload_refuses(&d, &app, &wanted);

    // Bytes that are not a component at all.
    let garbage = d.app_folder("shop", "1.0.1", |app| {
        fs::write(app.join("plugins/ha-replicas.wasm"), b"\0asm not really").unwrap();
    });
    build_refuses(&d, &garbage, &["plugins/ha-replicas.wasm"]);
    upload_refuses(&d, &garbage, &["plugins/ha-replicas.wasm"]);

    // A good plugin whose info() does not serve what capstan.yaml routes
    // to it: upload reads info() as build does.
    let misrouted = d.app_folder("shop", "1.0.2", |app| {
        crate::daemon::edit(
            &app.join("capstan.yaml"),
            "    hooks: []\n    charts: [api, web]",
            "    hooks: [pre-apply]\n    charts: [api, web]",
        );
    });
    build_refuses(&d, &misrouted, &["pre-apply"]);
    upload_refuses(&d, &misrouted, &["pre-apply"]);

    // And the app as shipped uploads and applies.
    let good = d.shop_bundle("1.0.3", |_| {});
    d.ok(&["app", "upload", good.to_str().unwrap()]);
    d.ok(&["app", "apply", "shop"]);
    assert_eq!(d.state_of("shop"), "applied");
}
