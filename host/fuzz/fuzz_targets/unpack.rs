//! Fuzzes the bundle unpacker.
//!
//! The first input byte picks a mode:
//! - even: the rest is a whole `.tgz` given to `bundle::inspect` (gzip, tar
//!   framing, the two leading entries, signature parsing);
//! - odd: the next two bytes give a length, that many bytes become `MANIFEST`
//!   (signed here with a trusted key, so the fuzzer gets past the signature),
//!   and the remaining bytes are raw tar blocks appended after `MANIFEST` and
//!   `MANIFEST.sig`. The whole is gzipped and unpacked with
//!   `bundle::verify_and_unpack` into a temporary folder.
//!
//! Besides "no panic", the target checks the staging promise: after an error
//! the staging parent is empty and nothing was written beside it.

#![no_main]

use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;

use capstan::bundle::{self, Limits};
use capstan::trust::{SigningKey, TrustStore};
use flate2::Compression;
use flate2::write::GzEncoder;
use libfuzzer_sys::fuzz_target;

struct Keys {
    key: SigningKey,
    trust: TrustStore,
}

fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        let key = SigningKey::generate("fuzz").expect("key generation");
        let mut trust = TrustStore::empty();
        trust
            .add_openssh(
                &key.public_key_line().expect("public key"),
                Path::new("fuzz.pub"),
            )
            .expect("trust");
        Keys { key, trust }
    })
}

fn limits() -> Limits {
    Limits {
        max_entries: 64,
        max_file_bytes: 1 << 20,
        max_total_bytes: 4 << 20,
        ..Limits::default()
    }
}

fn header(name: &str, size: u64) -> [u8; 512] {
    let mut header = tar::Header::new_gnu();
    header.set_path(name).expect("fixed name");
    header.set_size(size);
    header.set_mode(0o644);
    header.set_cksum();
    let mut block = [0u8; 512];
    block.copy_from_slice(header.as_bytes());
    block
}

fn push_file(tar: &mut Vec<u8>, name: &str, data: &[u8]) {
    tar.extend_from_slice(&header(name, data.len() as u64));
    tar.extend_from_slice(data);
    while !tar.len().is_multiple_of(512) {
        tar.push(0);
    }
}

fn signed_archive(manifest: &[u8], rest: &[u8]) -> Vec<u8> {
    let signature = keys().key.sign(manifest).expect("signing");
    let mut tar = Vec::with_capacity(manifest.len() + rest.len() + 4096);
    push_file(&mut tar, "MANIFEST", manifest);
    push_file(&mut tar, "MANIFEST.sig", signature.as_bytes());
    tar.extend_from_slice(rest);
    let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
    encoder.write_all(&tar).expect("in-memory gzip");
    encoder.finish().expect("in-memory gzip")
}

fn check_unpack(archive: &[u8]) {
    let root = tempfile::tempdir().expect("temp dir");
    let staging = root.path().join("staging");
    std::fs::create_dir(&staging).expect("staging dir");
    if bundle::verify_and_unpack(archive, &keys().trust, &staging, &limits()).is_err() {
        let left = std::fs::read_dir(&staging).expect("read staging").count();
        assert_eq!(left, 0, "staging folder left after an error");
    }
    let beside = std::fs::read_dir(root.path()).expect("read root").count();
    assert_eq!(beside, 1, "something was written beside the staging parent");
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        let _ = bundle::inspect(rest, &limits());
        return;
    }
    if rest.len() < 2 {
        return;
    }
    let manifest_len = usize::from(u16::from_le_bytes([rest[0], rest[1]]));
    let rest = &rest[2..];
    let split = manifest_len.min(rest.len());
    let (manifest, tail) = rest.split_at(split);
    check_unpack(&signed_archive(manifest, tail));
});
