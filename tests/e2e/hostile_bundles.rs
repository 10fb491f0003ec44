//! The hostile-bundle corpus (issue 3). Every case is generated here, in a
//! fresh temporary folder: a bundle crafted to break one rule, unpacked with
//! `bundle::verify_and_unpack`. Each case asserts the exact error variant and
//! that nothing was left behind: the staging parent is empty afterwards and
//! nothing appeared beside it. The example app is also built, verified and
//! checked against the real `ssh-keygen` when it is installed.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use capstan::bundle::{self, Digest, Error, Limits, Manifest, ManifestEntry};
use capstan::trust::{SigningKey, TrustStore};
use flate2::Compression;
use flate2::write::GzEncoder;

use crate::support::copy_dir;

/// A tar entry as the corpus writes it, byte for byte: any name, any type.
#[derive(Clone)]
struct Raw {
    name: Vec<u8>,
    type_flag: u8,
    data: Vec<u8>,
}

fn file(name: &str, data: &[u8]) -> Raw {
    Raw {
        name: name.as_bytes().to_vec(),
        type_flag: b'0',
        data: data.to_vec(),
    }
}

fn typed(name: &[u8], type_flag: u8) -> Raw {
    Raw {
        name: name.to_vec(),
        type_flag,
        data: Vec::new(),
    }
}

/// Writes a tar header by hand so that names the `tar` crate refuses
/// (absolute, `..`, non-UTF-8) can be written. Names over 100 bytes get a GNU
/// long-name entry first.
fn tar_entry(out: &mut Vec<u8>, raw: &Raw) {
    if raw.name.len() > 100 {
        let mut long = raw.name.clone();
        long.push(0);
        tar_header(out, b"././@LongLink", b'L', long.len() as u64);
        out.extend_from_slice(&long);
        pad(out);
        tar_header(out, &raw.name[..100], raw.type_flag, raw.data.len() as u64);
    } else {
        tar_header(out, &raw.name, raw.type_flag, raw.data.len() as u64);
    }
    out.extend_from_slice(&raw.data);
    pad(out);
}

fn tar_header(out: &mut Vec<u8>, name: &[u8], type_flag: u8, size: u64) {
    let mut header = tar::Header::new_gnu();
    header.as_old_mut().name[..name.len()].copy_from_slice(name);
    header.set_entry_type(tar::EntryType::new(type_flag));
    header.set_size(size);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_cksum();
    out.extend_from_slice(header.as_bytes());
}

fn pad(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(512) {
        out.push(0);
    }
}

fn tar_bytes(entries: &[Raw]) -> Vec<u8> {
    let mut out = Vec::new();
    for raw in entries {
        tar_entry(&mut out, raw);
    }
    out.extend_from_slice(&[0u8; 1024]);
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

fn pack(entries: &[Raw]) -> Vec<u8> {
    gzip(&tar_bytes(entries))
}

const METADATA: &str = "\
name: tiny
version: 1.0.0
charts:
  - name: tiny
    path: charts/tiny
    namespace: tiny
    release: tiny
chart_groups:
  - name: all
    mode: sequential
    charts: [tiny]
";

/// The files of a small valid app.
fn app_files() -> Vec<Raw> {
    vec![
        file("capstan.yaml", METADATA.as_bytes()),
        file(
            "charts/tiny/Chart.yaml",
            b"apiVersion: v2\nname: tiny\nversion: 0.1.0\n",
        ),
        file("charts/tiny/templates/cm.yaml", b"kind: ConfigMap\n"),
        file("charts/tiny/values.yaml", b"a: 1\n"),
    ]
}

fn manifest_of(files: &[Raw]) -> String {
    let entries = files.iter().map(|raw| ManifestEntry {
        path: String::from_utf8(raw.name.clone()).unwrap(),
        digest: Digest::of(&raw.data),
    });
    Manifest::from_entries(entries).unwrap().render()
}

/// `MANIFEST`, `MANIFEST.sig`, then the files: a bundle as the builder makes it.
fn signed(files: Vec<Raw>, manifest: &str, key: &SigningKey) -> Vec<Raw> {
    let signature = key.sign(manifest.as_bytes()).unwrap();
    let mut entries = vec![
        file("MANIFEST", manifest.as_bytes()),
        file("MANIFEST.sig", signature.as_bytes()),
    ];
    entries.extend(files);
    entries
}

struct Corpus {
    root: tempfile::TempDir,
    trusted: SigningKey,
    untrusted: SigningKey,
    trust: TrustStore,
}

impl Corpus {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir(root.path().join("staging")).unwrap();
        let trusted = SigningKey::generate("trusted").unwrap();
        let untrusted = SigningKey::generate("stranger").unwrap();
        let mut trust = TrustStore::empty();
        trust
            .add_openssh(
                &trusted.public_key_line().unwrap(),
                Path::new("trusted.pub"),
            )
            .unwrap();
        Self {
            root,
            trusted,
            untrusted,
            trust,
        }
    }

    fn staging(&self) -> PathBuf {
        self.root.path().join("staging")
    }

    /// The valid bundle's entries, signed by the trusted key.
    fn valid(&self) -> Vec<Raw> {
        let files = app_files();
        let manifest = manifest_of(&files);
        signed(files, &manifest, &self.trusted)
    }

    fn unpack(&self, archive: &[u8], limits: &Limits) -> Result<bundle::VerifiedBundle, Error> {
        bundle::verify_and_unpack(archive, &self.trust, &self.staging(), limits)
    }

    /// Unpacks `archive`, expects an error, and checks nothing was left.
    fn reject(&self, name: &str, archive: &[u8], limits: &Limits) -> Error {
        let err = match self.unpack(archive, limits) {
            Ok(_) => panic!("case {name}: a hostile bundle was accepted"),
            Err(err) => err,
        };
        self.assert_clean(name);
        err
    }

    fn assert_clean(&self, name: &str) {
        let left: Vec<_> = fs::read_dir(self.staging())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert!(
            left.is_empty(),
            "case {name}: staging parent not empty: {left:?}"
        );
        let beside: Vec<_> = fs::read_dir(self.root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            beside,
            vec![std::ffi::OsString::from("staging")],
            "case {name}: files written beside staging"
        );
    }
}

macro_rules! assert_variant {
    ($err:expr, $pattern:pat $(if $guard:expr)?) => {{
        let err = $err;
        assert!(matches!(&err, $pattern $(if $guard)?), "got {err:?}");
    }};
}

#[test]
fn the_valid_bundle_unpacks_and_is_removed_on_drop() {
    let corpus = Corpus::new();
    let verified = corpus
        .unpack(&pack(&corpus.valid()), &Limits::default())
        .unwrap();
    assert_eq!(verified.metadata().name.as_str(), "tiny");
    assert_eq!(verified.signer(), corpus.trusted.fingerprint());
    assert_eq!(verified.manifest().len(), 4);
    let chart = fs::read_to_string(verified.root().join("charts/tiny/Chart.yaml")).unwrap();
    assert!(chart.contains("name: tiny"));
    assert!(verified.root().join("MANIFEST.sig").is_file());
    assert!(verified.root().starts_with(corpus.staging()));
    drop(verified);
    corpus.assert_clean("drop");
}

#[test]
fn a_kept_bundle_survives_and_moves() {
    let corpus = Corpus::new();
    let verified = corpus
        .unpack(&pack(&corpus.valid()), &Limits::default())
        .unwrap();
    let dest = corpus.staging().join("apps-tiny");
    let moved = verified.move_to(&dest).unwrap();
    assert!(moved.is_kept());
    drop(moved);
    assert!(dest.join("capstan.yaml").is_file());
}

#[test]
fn signature_failures() {
    let corpus = Corpus::new();
    let limits = Limits::default();

    let mut garbage = corpus.valid();
    garbage[1].data =
        b"-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n".to_vec();
    assert_variant!(
        corpus.reject("garbage signature", &pack(&garbage), &limits),
        Error::BadSignature(_)
    );

    let mut other_message = corpus.valid();
    other_message[1].data = corpus
        .trusted
        .sign(b"another manifest\n")
        .unwrap()
        .into_bytes();
    assert_variant!(
        corpus.reject("signature of other data", &pack(&other_message), &limits),
        Error::BadSignature(_)
    );

    let mut no_signature = corpus.valid();
    no_signature.remove(1);
    assert_variant!(
        corpus.reject("no signature", &pack(&no_signature), &limits),
        Error::MissingSignature
    );

    let mut signature_later = corpus.valid();
    let signature = signature_later.remove(1);
    signature_later.push(signature);
    assert_variant!(
        corpus.reject("signature not second", &pack(&signature_later), &limits),
        Error::MissingSignature
    );

    let mut no_manifest = corpus.valid();
    no_manifest.remove(0);
    assert_variant!(
        corpus.reject("no manifest", &pack(&no_manifest), &limits),
        Error::MissingManifest
    );

    let files = app_files();
    let by_stranger = signed(files.clone(), &manifest_of(&files), &corpus.untrusted);
    assert_variant!(
        corpus.reject("valid bundle, untrusted key", &pack(&by_stranger), &limits),
        Error::UntrustedKey { fingerprint } if fingerprint == corpus.untrusted.fingerprint()
    );

    let mut tampered = app_files();
    tampered[3].data = b"a: 1\nevil: true\n".to_vec();
    let resigned = signed(tampered.clone(), &manifest_of(&tampered), &corpus.untrusted);
    assert_variant!(
        corpus.reject(
            "tampered chart re-signed by untrusted key",
            &pack(&resigned),
            &limits
        ),
        Error::UntrustedKey { .. }
    );

    let mut under_original = corpus.valid();
    under_original[5].data = b"a: 1\nevil: true\n".to_vec();
    assert_variant!(
        corpus.reject("tampered chart under original signature", &pack(&under_original), &limits),
        Error::DigestMismatch { path } if path == "charts/tiny/values.yaml"
    );

    let mut tampered_manifest = corpus.valid();
    tampered_manifest[0].data = manifest_of(&tampered).into_bytes();
    tampered_manifest[5].data = b"a: 1\nevil: true\n".to_vec();
    assert_variant!(
        corpus.reject(
            "tampered manifest under original signature",
            &pack(&tampered_manifest),
            &limits
        ),
        Error::BadSignature(_)
    );
}

#[test]
fn manifest_membership_failures() {
    let corpus = Corpus::new();
    let limits = Limits::default();

    let mut missing = corpus.valid();
    missing.remove(4);
    assert_variant!(
        corpus.reject("file missing", &pack(&missing), &limits),
        Error::MissingFile { path } if path == "charts/tiny/templates/cm.yaml"
    );

    let mut extra = corpus.valid();
    extra.push(file("charts/tiny/templates/extra.yaml", b"kind: Secret\n"));
    assert_variant!(
        corpus.reject("file not in manifest", &pack(&extra), &limits),
        Error::NotInManifest { path } if path == "charts/tiny/templates/extra.yaml"
    );

    let mut duplicate = corpus.valid();
    duplicate.push(duplicate[5].clone());
    assert_variant!(
        corpus.reject("duplicate file", &pack(&duplicate), &limits),
        Error::DuplicateEntry { .. }
    );

    let mut second_manifest = corpus.valid();
    second_manifest.push(second_manifest[0].clone());
    assert_variant!(
        corpus.reject("second MANIFEST", &pack(&second_manifest), &limits),
        Error::DuplicateEntry { path } if path == "MANIFEST"
    );

    let files: Vec<Raw> = app_files().into_iter().skip(1).collect();
    let no_metadata = signed(files.clone(), &manifest_of(&files), &corpus.trusted);
    assert_variant!(
        corpus.reject("no capstan.yaml", &pack(&no_metadata), &limits),
        Error::MissingMetadata
    );

    let mut dangling = app_files();
    dangling[0].data = METADATA.replace("charts/tiny", "charts/gone").into_bytes();
    let dangling = signed(dangling.clone(), &manifest_of(&dangling), &corpus.trusted);
    assert_variant!(
        corpus.reject("metadata names a missing chart", &pack(&dangling), &limits),
        Error::MissingReference { what: "chart", .. }
    );

    let mut unknown_field = app_files();
    unknown_field[0].data = format!("{METADATA}colour: red\n").into_bytes();
    let unknown_field = signed(
        unknown_field.clone(),
        &manifest_of(&unknown_field),
        &corpus.trusted,
    );
    assert_variant!(
        corpus.reject("unknown metadata field", &pack(&unknown_field), &limits),
        Error::MetadataSyntax { line: 12, .. }
    );
}

/// A valid bundle plus one extra entry, listed in a re-signed MANIFEST when it
/// has a usable name, so that only the entry itself is wrong.
fn with_entry(corpus: &Corpus, extra: Raw) -> Vec<u8> {
    let mut files = app_files();
    files.push(extra.clone());
    let listable: Vec<Raw> = files
        .iter()
        .filter(|raw| {
            std::str::from_utf8(&raw.name).ok().is_some_and(|name| {
                Manifest::from_entries([ManifestEntry {
                    path: name.to_string(),
                    digest: Digest::of(b""),
                }])
                .is_ok()
            })
        })
        .cloned()
        .collect();
    pack(&signed(files, &manifest_of(&listable), &corpus.trusted))
}

#[test]
fn path_and_type_failures() {
    let corpus = Corpus::new();
    let limits = Limits::default();
    let outside = corpus
        .root
        .path()
        .parent()
        .unwrap()
        .join(format!("capstan-escape-{}", std::process::id()));
    let absolute = outside.to_str().unwrap().as_bytes().to_vec();

    assert_variant!(
        corpus.reject(
            "absolute path",
            &with_entry(
                &corpus,
                Raw {
                    name: absolute,
                    type_flag: b'0',
                    data: b"x".to_vec()
                }
            ),
            &limits
        ),
        Error::AbsolutePath { .. }
    );
    assert!(!outside.exists());
    assert_variant!(
        corpus.reject(
            "parent component",
            &with_entry(&corpus, file("charts/../../escape", b"x")),
            &limits
        ),
        Error::ParentComponent { .. }
    );
    let long_escape = format!("charts/{}/../../../../escape", "d".repeat(120));
    assert_variant!(
        corpus.reject("parent component in a long name", &with_entry(&corpus, file(&long_escape, b"x")), &limits),
        Error::ParentComponent { path } if *path == long_escape
    );
    assert_variant!(
        corpus.reject(
            "non-UTF-8 path",
            &with_entry(&corpus, typed(b"charts/\xff\xfe", b'0')),
            &limits
        ),
        Error::NonUtf8Path { .. }
    );
    assert_variant!(
        corpus.reject(
            "dot component",
            &with_entry(&corpus, file("charts/./x", b"x")),
            &limits
        ),
        Error::InvalidPath { .. }
    );

    let record = "path=charts/../../pax-escape";
    let pax = Raw {
        name: b"PaxHeaders/innocent".to_vec(),
        type_flag: b'x',
        data: format!("{} {record}\n", record.len() + 4).into_bytes(),
    };
    let mut entries = corpus.valid();
    entries.push(pax);
    entries.push(file("innocent", b"x"));
    assert_variant!(
        corpus.reject("parent component in a pax path", &pack(&entries), &limits),
        Error::ParentComponent { path } if path == "charts/../../pax-escape"
    );

    let symlink = typed(b"charts/tiny/link", b'2');
    assert_variant!(
        corpus.reject("symlink", &with_entry(&corpus, symlink), &limits),
        Error::Symlink { .. }
    );
    let hardlink = typed(b"charts/tiny/hard", b'1');
    assert_variant!(
        corpus.reject("hardlink", &with_entry(&corpus, hardlink), &limits),
        Error::Hardlink { .. }
    );
    for (flag, kind) in [
        (b'3', "character device"),
        (b'4', "block device"),
        (b'6', "fifo"),
    ] {
        assert_variant!(
            corpus.reject(kind, &with_entry(&corpus, typed(b"charts/tiny/dev", flag)), &limits),
            Error::SpecialFile { kind: k, .. } if *k == kind
        );
    }
    assert_variant!(
        corpus.reject(
            "sparse file",
            &with_entry(&corpus, typed(b"charts/tiny/sparse", b'S')),
            &limits
        ),
        Error::UnsupportedEntry { type_flag: 'S', .. }
    );
}

#[test]
fn limit_failures() {
    let corpus = Corpus::new();
    let valid = pack(&corpus.valid());

    let few_entries = Limits {
        max_entries: 4,
        ..Limits::default()
    };
    assert_variant!(
        corpus.reject("too many entries", &valid, &few_entries),
        Error::TooManyEntries { limit: 4 }
    );

    let small_files = Limits {
        max_file_bytes: 10,
        ..Limits::default()
    };
    assert_variant!(
        corpus.reject("file too large", &valid, &small_files),
        Error::FileTooLarge { limit: 10, .. }
    );

    let small_total = Limits {
        max_total_bytes: 200,
        ..Limits::default()
    };
    assert_variant!(
        corpus.reject("total too large", &valid, &small_total),
        Error::TotalTooLarge { limit: 200 }
    );

    let mut files = app_files();
    files.push(file("charts/tiny/zeros.bin", &vec![0u8; 16 * 1024 * 1024]));
    let bomb = pack(&signed(
        files.clone(),
        &manifest_of(&files),
        &corpus.trusted,
    ));
    assert_variant!(
        corpus.reject("gzip bomb", &bomb, &Limits::default()),
        Error::CompressionRatio { limit: 100 }
    );

    let lying_size = {
        let mut tar = tar_bytes(&corpus.valid());
        // Claim 8 GiB for capstan.yaml (the third entry's header).
        let offset = third_header_offset(&tar);
        let mut header = tar::Header::from_byte_slice(&tar[offset..offset + 512]).clone();
        header.set_size(8 << 30);
        header.set_cksum();
        tar[offset..offset + 512].copy_from_slice(header.as_bytes());
        gzip(&tar)
    };
    assert_variant!(
        corpus.reject(
            "declared size above the file limit",
            &lying_size,
            &Limits::default()
        ),
        Error::FileTooLarge { .. }
    );
}

fn third_header_offset(tar: &[u8]) -> usize {
    let mut offset = 0;
    for _ in 0..2 {
        let header = tar::Header::from_byte_slice(&tar[offset..offset + 512]);
        let size = header.entry_size().unwrap() as usize;
        offset += 512 + size.div_ceil(512) * 512;
    }
    offset
}

#[test]
fn stream_failures() {
    let corpus = Corpus::new();
    let limits = Limits::default();
    let valid = pack(&corpus.valid());

    assert_variant!(
        corpus.reject("truncated gzip", &valid[..valid.len() / 2], &limits),
        Error::Truncated
    );
    assert_variant!(
        corpus.reject("gzip trailer cut", &valid[..valid.len() - 4], &limits),
        Error::Truncated
    );
    assert_variant!(corpus.reject("empty file", b"", &limits), Error::Truncated);

    let mut no_end_marker = tar_bytes(&corpus.valid());
    no_end_marker.truncate(no_end_marker.len() - 1024);
    assert_variant!(
        corpus.reject("tar without end marker", &gzip(&no_end_marker), &limits),
        Error::Truncated
    );

    let mut bad_magic = valid.clone();
    bad_magic[0] = 0;
    assert_variant!(
        corpus.reject("not gzip", &bad_magic, &limits),
        Error::Decompress(_)
    );

    let mut bad_crc = valid.clone();
    let crc_at = bad_crc.len() - 8;
    bad_crc[crc_at] ^= 0xff;
    assert_variant!(
        corpus.reject("gzip checksum", &bad_crc, &limits),
        Error::Decompress(_)
    );

    let mut bad_header = tar_bytes(&corpus.valid());
    bad_header[0] ^= 1;
    assert_variant!(
        corpus.reject("tar header checksum", &gzip(&bad_header), &limits),
        Error::Corrupt { .. }
    );

    let mut trailing = tar_bytes(&corpus.valid());
    trailing.extend_from_slice(b"hidden data after the end");
    assert_variant!(
        corpus.reject("data after end marker", &gzip(&trailing), &limits),
        Error::Corrupt { .. }
    );
}

#[test]
fn manifest_format_failures() {
    let corpus = Corpus::new();
    let limits = Limits::default();
    let files = app_files();
    let good = manifest_of(&files);
    let lines: Vec<&str> = good.lines().collect();
    let cases = [
        (
            "unsorted",
            format!("{}\n{}\n{}\n{}\n", lines[1], lines[0], lines[2], lines[3]),
        ),
        (
            "duplicate line",
            format!("{}\n{}\n{}\n", lines[0], good.trim_end(), lines[3]),
        ),
        (
            "uppercase hex",
            good.replacen(&lines[0][..64], &lines[0][..64].to_uppercase(), 1),
        ),
        (
            "one space",
            good.replacen("  capstan.yaml", " capstan.yaml", 1),
        ),
        ("no trailing newline", good.trim_end().to_string()),
        (
            "blank line",
            format!("{}\n\n{}", lines[0], good.split_once('\n').unwrap().1),
        ),
        ("crlf", good.replace('\n', "\r\n")),
    ];
    for (name, manifest) in cases {
        assert_ne!(manifest, good, "case {name} did not change the manifest");
        let archive = pack(&signed(files.clone(), &manifest, &corpus.trusted));
        assert_variant!(
            corpus.reject(name, &archive, &limits),
            Error::ManifestFormat { .. }
        );
    }
}

#[test]
fn inspect_shows_an_untrusted_bundle_without_writing() {
    let corpus = Corpus::new();
    let files = app_files();
    let by_stranger = pack(&signed(
        files.clone(),
        &manifest_of(&files),
        &corpus.untrusted,
    ));
    let inspection = bundle::inspect(&by_stranger[..], &Limits::default()).unwrap();
    assert_eq!(&inspection.signer, corpus.untrusted.fingerprint());
    assert_eq!(inspection.manifest.len(), 4);
    assert_variant!(
        bundle::verify(&by_stranger[..], &corpus.trust, &Limits::default()),
        Err(Error::UntrustedKey { .. })
    );
    corpus.assert_clean("inspect");
}

/// The example app under `example-plugins/apps/hello`, copied with a stand-in
/// plugin file (validation is stubbed here; the daemon's sandbox checks real ones).
fn example_app(into: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../example-plugins/apps/hello");
    let app = into.join("hello");
    copy_dir(&source, &app);
    fs::write(app.join("plugins/storage.wasm"), b"\0asm\x0d\0\x01\0").unwrap();
    app
}

fn accept_plugin(_plugin: &bundle::Plugin, bytes: &[u8]) -> Result<(), String> {
    if bytes.starts_with(b"\0asm") {
        Ok(())
    } else {
        Err("not wasm".to_string())
    }
}

#[test]
fn the_example_app_builds_deterministically_and_verifies() {
    let corpus = Corpus::new();
    let work = tempfile::tempdir().unwrap();
    let app = example_app(work.path());
    let first = work.path().join("hello-1.tgz");
    let second = work.path().join("hello-2.tgz");
    let report = bundle::build(&app, &corpus.trusted, &first, &accept_plugin).unwrap();
    bundle::build(&app, &corpus.trusted, &second, &accept_plugin).unwrap();
    assert_eq!(fs::read(&first).unwrap(), fs::read(&second).unwrap());
    assert_eq!(report.metadata.name.as_str(), "hello");

    let archive = fs::File::open(&first).unwrap();
    let verified = bundle::verify_and_unpack(
        std::io::BufReader::new(archive),
        &corpus.trust,
        &corpus.staging(),
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(verified.metadata().plugins[0].path, "plugins/storage.wasm");
    assert!(
        verified
            .root()
            .join("charts/hello/templates/deployment.yaml")
            .is_file()
    );
    assert_eq!(verified.manifest(), &report.manifest);
    drop(verified);
    corpus.assert_clean("example");

    let rejecting =
        |_: &bundle::Plugin, _: &[u8]| Err("does not export the capstan world".to_string());
    let err = bundle::build(&app, &corpus.trusted, &first, &rejecting).unwrap_err();
    assert_variant!(err, Error::PluginRejected { .. });
}

/// Interop with OpenSSH: `ssh-keygen -Y verify` accepts our MANIFEST.sig, and
/// we accept a signature `ssh-keygen -Y sign` made with a key from `keygen`.
/// Skips when ssh-keygen is not installed.
#[test]
fn ssh_keygen_agrees_on_signatures() {
    if std::process::Command::new("ssh-keygen")
        .arg("-?")
        .output()
        .is_err()
    {
        eprintln!("ssh-keygen not installed; skipping");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let key = SigningKey::generate("builder").unwrap();
    let (private_path, _) = key.write_pair(work.path()).unwrap();
    let manifest = manifest_of(&app_files());
    let manifest_path = work.path().join("MANIFEST");
    fs::write(&manifest_path, &manifest).unwrap();
    fs::write(
        work.path().join("MANIFEST.sig"),
        key.sign(manifest.as_bytes()).unwrap(),
    )
    .unwrap();
    let allowed = work.path().join("allowed_signers");
    fs::write(
        &allowed,
        format!(
            "builder namespaces=\"capstan-bundle\" {}\n",
            key.public_key_line().unwrap()
        ),
    )
    .unwrap();

    let verify = std::process::Command::new("ssh-keygen")
        .args(["-Y", "verify", "-f"])
        .arg(&allowed)
        .args(["-I", "builder", "-n", "capstan-bundle", "-s"])
        .arg(work.path().join("MANIFEST.sig"))
        .stdin(fs::File::open(&manifest_path).unwrap())
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "ssh-keygen -Y verify: {}",
        String::from_utf8_lossy(&verify.stderr)
    );

    let other = work.path().join("other");
    fs::write(&other, "something else\n").unwrap();
    let sign = std::process::Command::new("ssh-keygen")
        .args(["-Y", "sign", "-n", "capstan-bundle", "-f"])
        .arg(&private_path)
        .arg(&other)
        .output()
        .unwrap();
    assert!(
        sign.status.success(),
        "ssh-keygen -Y sign: {}",
        String::from_utf8_lossy(&sign.stderr)
    );
    let signature = fs::read(work.path().join("other.sig")).unwrap();
    let verified = capstan::trust::verify_signature(&signature, b"something else\n").unwrap();
    assert_eq!(verified.signer(), key.fingerprint());

    let fingerprint = std::process::Command::new("ssh-keygen")
        .arg("-lf")
        .arg(&private_path)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&fingerprint.stdout);
    assert!(printed.contains(key.fingerprint().as_str()), "{printed}");
}

/// A cheap stand-in for the fuzzer in the normal suite: flip bytes of a valid
/// bundle's tar (headers, MANIFEST, data, padding) and of its gzip stream;
/// whatever happens, no panic and nothing left behind after an error.
#[test]
fn mutated_bundles_never_panic_or_leak() {
    let corpus = Corpus::new();
    let tar = tar_bytes(&corpus.valid());
    let archive = gzip(&tar);
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |bound: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize % bound
    };
    let mut rejected = 0;
    for round in 0..300 {
        let mut bytes = if round % 2 == 0 {
            tar.clone()
        } else {
            archive.clone()
        };
        for _ in 0..1 + next(3) {
            let at = next(bytes.len());
            bytes[at] ^= 1 << next(8);
        }
        let input = if round % 2 == 0 { gzip(&bytes) } else { bytes };
        if corpus.unpack(&input, &Limits::default()).is_err() {
            rejected += 1;
            corpus.assert_clean(&format!("mutation {round}"));
        }
    }
    assert!(
        rejected > 200,
        "only {rejected} of 300 mutations were rejected"
    );
}
