//! Key generation speed: Sprig's `genPrivateKey "rsa"` (a 4096-bit key),
//! `genCA`, `genSelfSignedCert` and `genSignedCert` (2048-bit keys), called
//! as a template calls them. Each is dominated by the RSA key generation.
//! `rsa_keygen` compares the generators themselves: AWS-LC's (which the
//! functions use) and the `rsa` crate's (which they used before).
//!
//! RSA key generation draws random primes, so one key takes a widely
//! varying time; compare medians. Go's `crypto/rsa.GenerateKey` is the
//! reference (docs/src/reference/template-functions.md gives the figures and how they
//! were measured).

/// The binary's allocator, so that the bench measures what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::time::Duration;

use capstan::render::funcs;
use capstan::values::Value;
use criterion::{Criterion, criterion_group, criterion_main};

fn call(name: &str, args: &[Value]) -> Value {
    let Some(f) = funcs::lookup(name) else {
        panic!("{name} is not a template function");
    };
    match f(args) {
        Ok(v) => v,
        Err(e) => panic!("{name}: {e}"),
    }
}

fn bench_keygen(c: &mut Criterion) {
    let mut group = c.benchmark_group("keygen");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("genCA", |b| {
        b.iter(|| black_box(call("genCA", &["ca".into(), Value::Int(365)])))
    });
    group.bench_function("genSelfSignedCert", |b| {
        b.iter(|| {
            black_box(call(
                "genSelfSignedCert",
                &[
                    "example.com".into(),
                    Value::Null,
                    Value::Null,
                    Value::Int(365),
                ],
            ))
        })
    });
    let ca = call("genCA", &["ca".into(), Value::Int(365)]);
    group.bench_function("genSignedCert", |b| {
        b.iter(|| {
            black_box(call(
                "genSignedCert",
                &[
                    "example.com".into(),
                    Value::Null,
                    Value::Null,
                    Value::Int(365),
                    ca.clone(),
                ],
            ))
        })
    });
    group.finish();

    // A 4096-bit key takes several times as long: fewer samples.
    let mut group = c.benchmark_group("keygen_4096");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(40));
    group.bench_function("genPrivateKey_rsa", |b| {
        b.iter(|| black_box(call("genPrivateKey", &["rsa".into()])))
    });
    group.finish();
}

fn bench_generators(c: &mut Criterion) {
    let mut group = c.benchmark_group("rsa_keygen");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("aws_lc_2048", |b| {
        b.iter(|| {
            black_box(aws_lc_rs::rsa::KeyPair::generate(
                aws_lc_rs::rsa::KeySize::Rsa2048,
            ))
        })
    });
    group.bench_function("rsa_crate_2048", |b| {
        b.iter(|| black_box(rsa::RsaPrivateKey::new(&mut rand_core::OsRng, 2048)))
    });
    group.finish();
}

criterion_group!(benches, bench_keygen, bench_generators);
criterion_main!(benches);
