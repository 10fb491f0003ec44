//! Verify and unpack a signed 20 MiB bundle of 2,000 files (issue 3).
//!
//! Throughput is reported in decompressed file bytes per second; the target is
//! at least 200 MiB/s. Removing the unpacked folder is not timed. Set
//! `CAPSTAN_BENCH_STAGING=/dev/shm` to unpack into memory and leave the disk's
//! file-creation cost out.

use std::fs;
use std::hint::black_box;
use std::path::Path;

use capstan::bundle::{self, Limits};
use capstan::trust::{SigningKey, TrustStore};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const FILES: usize = 2_000;
const FILE_BYTES: usize = 10 * 1024;

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
fn file_content(seed: usize) -> Vec<u8> {
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
    let mut out = Vec::with_capacity(FILE_BYTES);
    while out.len() < FILE_BYTES {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let word = WORDS[(state >> 60) as usize];
        out.extend_from_slice(word.as_bytes());
        out.extend_from_slice(format!(" {:x}", state >> 40).as_bytes());
        out.push(if state & 7 == 0 { b'\n' } else { b' ' });
    }
    out.truncate(FILE_BYTES);
    out
}

fn write_app(dir: &Path) {
    fs::write(dir.join("capstan.yaml"), METADATA).unwrap();
    let chart = dir.join("charts/bench");
    fs::create_dir_all(chart.join("files")).unwrap();
    fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: bench\nversion: 0.1.0\n",
    )
    .unwrap();
    for i in 0..FILES {
        fs::write(chart.join(format!("files/{i:04}.yaml")), file_content(i)).unwrap();
    }
}

fn verify_and_unpack(c: &mut Criterion) {
    let work = tempfile::tempdir().unwrap();
    let app = work.path().join("app");
    fs::create_dir(&app).unwrap();
    write_app(&app);
    let key = SigningKey::generate("bench").unwrap();
    let out = work.path().join("bench.tgz");
    let accept = |_: &str, _: &[u8]| Ok(());
    let report = bundle::build(&app, &key, &out, &accept).unwrap();
    let archive = fs::read(&out).unwrap();
    let mut trust = TrustStore::empty();
    trust
        .add_openssh(&key.public_key_line().unwrap(), Path::new("bench.pub"))
        .unwrap();
    // File creation dominates on slow disks; CAPSTAN_BENCH_STAGING (for
    // example /dev/shm) measures the unpacker without the disk.
    let staging_root =
        std::env::var_os("CAPSTAN_BENCH_STAGING").map(|dir| tempfile::tempdir_in(dir).unwrap());
    let staging = staging_root
        .as_ref()
        .map_or(work.path(), |dir| dir.path())
        .join("staging");
    fs::create_dir(&staging).unwrap();
    let limits = Limits::default();
    let content_bytes = (FILES * FILE_BYTES) as u64;
    eprintln!(
        "bundle: {} files, {} content bytes, {} archive bytes",
        report.manifest.len(),
        content_bytes,
        archive.len()
    );

    let mut group = c.benchmark_group("bundle");
    group.throughput(Throughput::Bytes(content_bytes));
    group.sample_size(10);
    group.bench_function("verify_and_unpack_20MiB_2000_files", |b| {
        b.iter_with_large_drop(|| {
            bundle::verify_and_unpack(black_box(&archive[..]), &trust, &staging, &limits).unwrap()
        })
    });
    group.bench_function("verify_only_20MiB_2000_files", |b| {
        b.iter(|| bundle::verify(black_box(&archive[..]), &trust, &limits).unwrap())
    });
    group.finish();
}

criterion_group!(benches, verify_and_unpack);
criterion_main!(benches);
