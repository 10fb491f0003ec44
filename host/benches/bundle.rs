//! Verify and unpack signed bundles (issue 3) of two shapes: 20 MiB in 2,000
//! small files (chart templates) and 150 MiB in 3 large files (plugin
//! components: a chart file may be at most 5 MiB, docs/src/reference/limits.md).
//!
//! Throughput is reported in decompressed file bytes per second; the target is
//! at least 200 MiB/s. Removing the unpacked folder is not timed. Set
//! `CAPSTAN_BENCH_STAGING=/dev/shm` to unpack into memory and leave the disk's
//! file-creation cost out.
//!
//! The small-file shape keeps every unpacked folder until its benchmark ends
//! instead of removing it after each iteration. On an ext4 without a journal
//! (this machine's root), the inode allocator skips every inode of the block
//! group freed in the last minute (six while its inode table block is still
//! dirty), one buffer-cache lookup each (`recently_deleted`), so creating
//! files soon after thousands were removed nearby costs over a millisecond
//! per file: that measures the previous iteration's cleanup, not the
//! unpacker. The same happens after any large removal in the same block
//! group (a previous run of this benchmark, tests in the same temporary
//! folder), so small-file numbers on such a disk are only comparable between
//! runs a few minutes apart. Set `CAPSTAN_BENCH_REMOVE_EACH=1` to remove each
//! folder anyway and see that case.

/// The binary's allocator, so that the bench measures what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::fs;
use std::hint::black_box;
use std::path::Path;

use capstan::bundle::{self, Limits};
use capstan::trust::{SigningKey, TrustStore};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const METADATA: &str = "\
name: bench
version: 1.0.0
charts:
  - name: bench
    path: charts/bench
    namespace: bench
    release: bench
chart_groups:
  - name: all
    mode: sequential
    charts: [bench]
";

/// Text-like content that compresses about as well as chart templates
/// (a few times, not a hundred).
fn file_content(seed: usize, bytes: usize) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "apiVersion",
        "kind",
        "metadata",
        "name",
        "labels",
        "spec",
        "replicas",
        "template",
        "containers",
        "image",
        "ports",
        "value",
        "{{ .Values.x }}",
        "- name:",
        "true",
        "8080",
    ];
    let mut state = (seed as u64)
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1);
    let mut out = Vec::with_capacity(bytes);
    while out.len() < bytes {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let word = WORDS[(state >> 60) as usize];
        out.extend_from_slice(word.as_bytes());
        out.extend_from_slice(format!(" {:x}", state >> 40).as_bytes());
        out.push(if state & 7 == 0 { b'\n' } else { b' ' });
    }
    out.truncate(bytes);
    out
}

/// A bundle shape: what files the benchmarked bundle holds.
struct Shape {
    /// The benchmark names' suffix.
    label: &'static str,
    /// How many payload files.
    files: usize,
    /// Bytes per payload file.
    file_bytes: usize,
    /// Whether the payload files are plugin components (`plugins/`, listed
    /// in the metadata) rather than chart files.
    as_plugins: bool,
    /// Whether unpacked folders stay until the benchmark ends (see the
    /// module comment); a few large files pile up too many bytes for that.
    keep_unpacked: bool,
}

/// Many small files, like chart templates (the case issue 3 names).
const SMALL_FILES: Shape = Shape {
    label: "20MiB_2000_files",
    files: 2_000,
    file_bytes: 10 * 1024,
    as_plugins: false,
    keep_unpacked: true,
};

/// A few large files, like plugin components.
const LARGE_FILES: Shape = Shape {
    label: "150MiB_3_files",
    files: 3,
    file_bytes: 50 * 1024 * 1024,
    as_plugins: true,
    keep_unpacked: false,
};

fn write_app(dir: &Path, shape: &Shape) {
    let chart = dir.join("charts/bench");
    fs::create_dir_all(chart.join("files")).unwrap();
    fs::create_dir_all(dir.join("plugins")).unwrap();
    fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: bench\nversion: 0.1.0\n",
    )
    .unwrap();
    let mut metadata = METADATA.to_string();
    if shape.as_plugins {
        metadata.push_str("plugins:\n");
    }
    for i in 0..shape.files {
        let path = if shape.as_plugins {
            metadata.push_str(&format!(
                "  - path: plugins/{i:04}.wasm\n    hooks: []\n    charts: [bench]\n"
            ));
            dir.join(format!("plugins/{i:04}.wasm"))
        } else {
            chart.join(format!("files/{i:04}.yaml"))
        };
        fs::write(path, file_content(i, shape.file_bytes)).unwrap();
    }
    fs::write(dir.join("capstan.yaml"), metadata).unwrap();
}

fn bench_shape(c: &mut Criterion, shape: &Shape) {
    let work = tempfile::tempdir().unwrap();
    let app = work.path().join("app");
    fs::create_dir(&app).unwrap();
    write_app(&app, shape);
    let key = SigningKey::generate("bench").unwrap();
    let out = work.path().join("bench.tgz");
    let accept = |_: &bundle::Plugin, _: &[u8]| Ok(());
    let report = bundle::build(&app, &key, &out, &accept).unwrap();
    let archive = fs::read(&out).unwrap();
    let mut trust = TrustStore::empty();
    trust
        .add_openssh(&key.public_key_line().unwrap(), Path::new("bench.pub"))
        .unwrap();
    // File creation dominates on slow disks; CAPSTAN_BENCH_STAGING (for
    // example /dev/shm) measures the unpacker without the disk, under its
    // own group name so the two are never compared with each other.
    let staging_root =
        std::env::var_os("CAPSTAN_BENCH_STAGING").map(|dir| tempfile::tempdir_in(dir).unwrap());
    let staging = staging_root
        .as_ref()
        .map_or(work.path(), |dir| dir.path())
        .join("staging");
    fs::create_dir(&staging).unwrap();
    let limits = Limits::default();
    let keep = shape.keep_unpacked && std::env::var_os("CAPSTAN_BENCH_REMOVE_EACH").is_none();
    let content_bytes = (shape.files * shape.file_bytes) as u64;
    eprintln!(
        "bundle {}: {} files, {} content bytes, {} archive bytes, staging in {}, {}",
        shape.label,
        report.manifest.len(),
        content_bytes,
        archive.len(),
        staging.display(),
        if keep {
            "folders kept until the end"
        } else {
            "each folder removed after its iteration"
        }
    );

    let group_name = if staging_root.is_some() {
        "bundle_custom_staging"
    } else {
        "bundle"
    };
    let mut group = c.benchmark_group(group_name);
    group.throughput(Throughput::Bytes(content_bytes));
    group.sample_size(10);
    group.bench_function(format!("verify_and_unpack_{}", shape.label), |b| {
        b.iter_with_large_drop(|| {
            let verified =
                bundle::verify_and_unpack(black_box(&archive[..]), &trust, &staging, &limits)
                    .unwrap();
            if keep { verified.keep() } else { verified }
        })
    });
    group.bench_function(format!("verify_only_{}", shape.label), |b| {
        b.iter(|| bundle::verify(black_box(&archive[..]), &trust, &limits).unwrap())
    });
    group.finish();
}

fn small_files(c: &mut Criterion) {
    bench_shape(c, &SMALL_FILES);
}

fn large_files(c: &mut Criterion) {
    bench_shape(c, &LARGE_FILES);
}

// Large first: removing the small-file shape's folders at its end would slow
// the next file creations (see the module comment).
criterion_group!(benches, large_files, small_files);
criterion_main!(benches);
