//! `capstan keygen` and `capstan bundle build|verify|inspect` through the real
//! binary, with the real storage plugin inside the example app.

use std::path::Path;
use std::process::Output;

use crate::support::{capstan, copy_dir, fresh_dir, plugin_wasm, workspace_root};

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The example app with the real storage plugin copied in.
fn example_app(dir: &Path) -> std::path::PathBuf {
    let app = dir.join("hello");
    copy_dir(&workspace_root().join("example-plugins/apps/hello"), &app);
    std::fs::copy(
        plugin_wasm("capstan-example-storage"),
        app.join("plugins/storage.wasm"),
    )
    .unwrap();
    app
}

fn keygen(dir: &Path, name: &str) {
    let out = capstan()
        .args(["keygen", "--name", name, "--out"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
}

/// `capstan bundle build APP --key KEY --out OUT`.
fn build(app: &Path, key: &Path, out: &Path) -> Output {
    capstan()
        .args(["bundle", "build"])
        .arg(app)
        .arg("--key")
        .arg(key)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

/// `capstan bundle verify BUNDLE --trust KEYS`.
fn verify(bundle: &Path, keys: &Path) -> Output {
    capstan()
        .args(["bundle", "verify"])
        .arg(bundle)
        .arg("--trust")
        .arg(keys)
        .output()
        .unwrap()
}

#[test]
fn build_verify_and_inspect_the_example_app() {
    let dir = fresh_dir("bundle-cli-round-trip");
    let keys = dir.join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    keygen(&keys, "author");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(keys.join("author.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the private key is private");
    }
    let app = example_app(&dir);
    let bundle = dir.join("hello.tgz");
    let built = build(&app, &keys.join("author.key"), &bundle);
    assert!(built.status.success(), "{}", stderr_of(&built));

    let verified = verify(&bundle, &keys);
    assert!(verified.status.success(), "{}", stderr_of(&verified));

    let inspect = capstan()
        .args(["bundle", "inspect"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(inspect.status.success(), "{}", stderr_of(&inspect));
    let listing = String::from_utf8_lossy(&inspect.stdout);
    assert!(listing.contains("plugins/storage.wasm"), "{listing}");
    assert!(listing.contains("name:        hello"), "{listing}");
}

#[test]
fn a_bundle_from_an_untrusted_key_is_rejected() {
    let dir = fresh_dir("bundle-cli-untrusted");
    let (author, trusted) = (dir.join("author"), dir.join("trusted"));
    std::fs::create_dir_all(&author).unwrap();
    std::fs::create_dir_all(&trusted).unwrap();
    keygen(&author, "author");
    keygen(&trusted, "operator");
    let app = example_app(&dir);
    let bundle = dir.join("hello.tgz");
    let built = build(&app, &author.join("author.key"), &bundle);
    assert!(built.status.success(), "{}", stderr_of(&built));
    let verify = verify(&bundle, &trusted);
    assert_eq!(verify.status.code(), Some(1));
    assert!(
        stderr_of(&verify).starts_with("error: "),
        "{}",
        stderr_of(&verify)
    );
    assert!(
        stderr_of(&verify).contains("not a trusted key"),
        "{}",
        stderr_of(&verify)
    );
}

#[test]
fn a_plugin_that_is_not_a_capstan_component_fails_the_build() {
    let dir = fresh_dir("bundle-cli-bad-plugin");
    keygen(&dir, "author");
    let app = example_app(&dir);
    std::fs::copy(
        plugin_wasm("capstan-test-bad-import"),
        app.join("plugins/storage.wasm"),
    )
    .unwrap();
    let out = build(&app, &dir.join("author.key"), &dir.join("hello.tgz"));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("link"), "{}", stderr_of(&out));
    assert!(
        !dir.join("hello.tgz").exists(),
        "nothing half-written is left"
    );
}

/// Issue 10: the plugin's `info()` and `capstan.yaml`'s `plugins[]` must
/// agree; a route the plugin does not serve fails the build naming both.
#[test]
fn a_plugin_route_its_info_does_not_serve_fails_the_build_naming_both_sides() {
    let dir = fresh_dir("bundle-cli-routing");
    keygen(&dir, "author");
    let app = example_app(&dir);
    let meta = app.join("capstan.yaml");
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(
        &meta,
        text.replace(
            "    hooks: [semantic-check]\n    charts: []",
            "    hooks: [semantic-check, pre-apply]\n    charts: [hello]",
        ),
    )
    .unwrap();
    let out = build(&app, &dir.join("author.key"), &dir.join("hello.tgz"));
    assert_eq!(out.status.code(), Some(1));
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("capstan.yaml routes charts [hello] to plugins/storage.wasm")
            && stderr.contains("its info() serves charts [rbd-provisioner, cephfs-provisioner]"),
        "{stderr}"
    );
    assert!(!dir.join("hello.tgz").exists());
}

/// Issue 10: one app-name rule everywhere. A name of 54 to 63 characters
/// is a DNS label but longer than the store's (Helm's) 53: `bundle build`
/// refuses it with the same rule, so no bundle verifies that upload would
/// then refuse; 53 builds.
#[test]
fn an_app_name_longer_than_53_characters_is_refused_at_build() {
    let dir = fresh_dir("bundle-cli-long-name");
    keygen(&dir, "author");
    let app = example_app(&dir);
    let meta = app.join("capstan.yaml");
    let text = std::fs::read_to_string(&meta).unwrap();
    for (len, ok) in [(53, true), (54, false), (63, false)] {
        let name = "a".repeat(len);
        std::fs::write(
            &meta,
            text.replace("name: hello\nversion", &format!("name: {name}\nversion")),
        )
        .unwrap();
        let out = build(&app, &dir.join("author.key"), &dir.join("long.tgz"));
        assert_eq!(out.status.success(), ok, "{len}: {}", stderr_of(&out));
        if !ok {
            assert!(
                stderr_of(&out).contains("it is longer than 53 characters"),
                "{}",
                stderr_of(&out)
            );
        }
        let _ = std::fs::remove_file(dir.join("long.tgz"));
    }
}

/// Issue 13: a name capstan uses for its own releases (`capstan-volumes`,
/// the local volumes) is refused at build with the rule.
#[test]
fn a_reserved_app_name_is_refused_at_build_with_the_rule() {
    let dir = fresh_dir("bundle-cli-reserved-name");
    keygen(&dir, "author");
    let app = example_app(&dir);
    let meta = app.join("capstan.yaml");
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(
        &meta,
        text.replace("name: hello\nversion", "name: capstan-volumes\nversion"),
    )
    .unwrap();
    let out = build(&app, &dir.join("author.key"), &dir.join("reserved.tgz"));
    assert!(!out.status.success());
    let stderr = stderr_of(&out);
    assert!(stderr.contains("capstan-volumes"), "{stderr}");
    assert!(
        stderr.contains("it is reserved for capstan's own use"),
        "{stderr}"
    );
    assert!(!dir.join("reserved.tgz").exists());
}
