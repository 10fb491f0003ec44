//! The compiled-component cache: compiling a component takes far longer
//! than loading its compiled form, so the daemon keeps compiled components
//! on disk.
//!
//! Each entry is keyed by the component's sha256 and a hash of the engine's
//! compatibility settings (wasmtime version, target, configuration), so a
//! changed engine never finds an old entry. Entries are written atomically
//! (a temporary file renamed into place) and carry a CRC-32 of their
//! payload, which is checked before the payload is deserialized: a
//! truncated or corrupted entry is recompiled and rewritten, never loaded.
//! The cache is disposable; deleting the folder only costs compile time.
//!
//! Why a CRC and not a cryptographic digest: the check is against damage
//! (a torn write, a flipped bit), not an adversary, who would need to
//! write into the private folder; a CRC detects every burst of up to 32
//! bits and nearly all else, and it costs 3 ms where sha256 cost 27 ms on
//! a 35 MB Python component's entry (docs/src/developing/performance.md).
//!
//! Loading compiled code is `unsafe` in wasmtime, because the bytes are
//! trusted to be what wasmtime wrote. The cache folder is created private
//! to the daemon's user (0700), and only files that pass the digest check
//! are loaded.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::Error;

/// Version 2: a CRC-32 of the payload (version 1 had its sha256; its
/// entries fail the check and are recompiled).
const MAGIC: &[u8; 16] = b"capstan-cwasm-2\n";
const DIGEST_LEN: usize = 4;

/// A folder of compiled components.
#[derive(Debug, Clone)]
pub struct ComponentCache {
    dir: PathBuf,
}

impl ComponentCache {
    /// Opens (creating if needed, mode 0700) the cache folder `dir`.
    ///
    /// # Errors
    ///
    /// [`Error::Cache`] when the folder cannot be created.
    pub fn open(dir: impl Into<PathBuf>) -> Result<ComponentCache, Error> {
        let dir = dir.into();
        create_private_dir(&dir).map_err(|source| Error::Cache {
            path: dir.clone(),
            source,
        })?;
        Ok(ComponentCache { dir })
    }

    /// The path an entry for `wasm` compiled by `engine` lives at.
    pub fn entry_path(&self, engine: &Engine, wasm: &[u8]) -> PathBuf {
        self.entry_path_of(engine, &Sha256::digest(wasm).into())
    }

    /// [`ComponentCache::entry_path`] from the sha256 of the component's
    /// bytes, for a caller that has it already.
    fn entry_path_of(&self, engine: &Engine, digest: &[u8; 32]) -> PathBuf {
        let component = hex::encode(digest);
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        self.dir
            .join(format!("{component}-{:016x}.cwasm", hasher.finish()))
    }

    /// Loads the compiled form of `wasm`, or compiles and stores it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidComponent`] when `wasm` does not compile,
    /// [`Error::Cache`] when a new entry cannot be written.
    pub fn load_or_compile(
        &self,
        engine: &Engine,
        name: &str,
        wasm: &[u8],
    ) -> Result<Component, Error> {
        self.load_or_compile_digest(engine, name, wasm, &Sha256::digest(wasm).into())
    }

    /// [`ComponentCache::load_or_compile`] for a caller that has hashed
    /// `wasm` already (`digest` is its sha256): hashing an 18 MB Python
    /// component costs about as much as the rest of a cached load.
    ///
    /// # Errors
    ///
    /// As [`ComponentCache::load_or_compile`].
    pub(crate) fn load_or_compile_digest(
        &self,
        engine: &Engine,
        name: &str,
        wasm: &[u8],
        digest: &[u8; 32],
    ) -> Result<Component, Error> {
        let path = self.entry_path_of(engine, digest);
        if let Some(component) = self.load(engine, &path) {
            return Ok(component);
        }
        let component = Component::new(engine, wasm).map_err(|e| Error::InvalidComponent {
            plugin: name.to_string(),
            reason: super::runtime::first_line(&e),
        })?;
        let compiled = component.serialize().map_err(|e| Error::InvalidComponent {
            plugin: name.to_string(),
            reason: super::runtime::first_line(&e),
        })?;
        self.store(&path, &compiled)
            .map_err(|source| Error::Cache { path, source })?;
        Ok(component)
    }

    /// The cached component at `path`, if the entry exists, is intact and
    /// deserializes on this engine.
    #[allow(unsafe_code)] // the one deserialize below, with its SAFETY comment
    fn load(&self, engine: &Engine, path: &Path) -> Option<Component> {
        let bytes = std::fs::read(path).ok()?;
        let Some(payload) = verified_payload(&bytes) else {
            tracing::warn!(path = %path.display(), "corrupted compiled component; recompiling");
            return None;
        };
        // SAFETY: `payload` is byte for byte what `Component::serialize`
        // produced in `store` on an engine with the same compatibility hash
        // (part of the file name): the file lives in a folder only this
        // user can write and its CRC-32 matched the one written with it.
        // wasmtime still checks its own header and refuses a mismatched
        // engine, which sends us back to compiling.
        match unsafe { Component::deserialize(engine, payload) } {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "stale compiled component; recompiling");
                None
            }
        }
    }

    fn store(&self, path: &Path, compiled: &[u8]) -> std::io::Result<()> {
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
        file.write_all(MAGIC)?;
        file.write_all(&crc32fast::hash(compiled).to_le_bytes())?;
        file.write_all(compiled)?;
        file.as_file().sync_all()?;
        file.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// The payload of a cache file whose header and digest check out.
fn verified_payload(bytes: &[u8]) -> Option<&[u8]> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    if rest.len() < DIGEST_LEN {
        return None;
    }
    let (digest, payload) = rest.split_at(DIGEST_LEN);
    (crc32fast::hash(payload).to_le_bytes().as_slice() == digest).then_some(payload)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_intact_entries_verify() {
        let payload = b"compiled bytes";
        let mut file = MAGIC.to_vec();
        file.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        file.extend_from_slice(payload);
        assert_eq!(verified_payload(&file), Some(&payload[..]));

        let mut flipped = file.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert_eq!(verified_payload(&flipped), None);
        assert_eq!(verified_payload(&file[..file.len() - 1]), None);
        assert_eq!(verified_payload(&file[..10]), None);
        assert_eq!(verified_payload(b"not a cache file at all, nope"), None);
    }
}
