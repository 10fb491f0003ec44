//! The compiled-component cache: compiling a component takes far longer
//! than loading its compiled form, so the daemon keeps compiled components
//! on disk.
//!
//! Each entry is keyed by the component's sha256 and a hash of the engine's
//! compatibility settings (wasmtime version, target, configuration), so a
//! changed engine never finds an old entry. Entries are written atomically
//! (a temporary file renamed into place) and carry the sha256 of their
//! payload, which is checked before the payload is deserialized: a
//! truncated or corrupted entry is recompiled and rewritten, never loaded.
//! The cache is disposable; deleting the folder only costs compile time.
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

const MAGIC: &[u8; 16] = b"capstan-cwasm-1\n";
const DIGEST_LEN: usize = 32;

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
        let component = hex::encode(Sha256::digest(wasm));
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
        let path = self.entry_path(engine, wasm);
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
        // user can write and its sha256 matched the digest written with it.
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
        file.write_all(&Sha256::digest(compiled))?;
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
    (Sha256::digest(payload).as_slice() == digest).then_some(payload)
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
        file.extend_from_slice(&Sha256::digest(payload));
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
