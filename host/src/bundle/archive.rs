//! A strict, bounded tar reader. It yields only plain files and folders with
//! checked paths; links, devices and exotic entry types are typed errors, and
//! long-name and pax headers are read into memory only up to a small bound
//! (the `tar` crate's own reader buffers them without one).
//!
//! Accepted: ustar and GNU headers, GNU long names (`L`), pax headers (`x`,
//! using `path` and `size`; `g` is skipped). The archive must end with a
//! zero block, and only zero bytes may follow it.

use std::io::{self, BufReader, Read};

use super::paths::check_entry_path;
use super::stream::Stream;
use super::{Error, Limits, MAX_PATH_BYTES};

const BLOCK: usize = 512;
/// Largest pax header accepted (`x` or `g`).
const MAX_PAX_BYTES: u64 = 64 * 1024;
const COPY_BUFFER_BYTES: usize = 64 * 1024;

/// What an accepted entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EntryKind {
    /// A regular file.
    File,
    /// A folder.
    Directory,
}

/// An accepted entry's header.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    /// The checked path, without a trailing `/`.
    pub(super) path: String,
    /// File or folder.
    pub(super) kind: EntryKind,
    /// Size of the data in bytes (0 for folders).
    pub(super) size: u64,
}

/// Metadata from a pax header that applies to the next entry.
#[derive(Default)]
struct Pending {
    path: Option<Vec<u8>>,
    size: Option<u64>,
    has_extension: bool,
}

/// Reads a tar stream entry by entry.
pub(super) struct TarReader<R> {
    /// Buffered so that 512-byte header and padding reads do not each cost a
    /// decompression call.
    stream: BufReader<Stream<R>>,
    /// Data bytes of the current entry not yet read.
    remaining: u64,
    /// Padding after the current entry's data.
    padding: u64,
    entries: u64,
    max_entries: u64,
    buffer: Vec<u8>,
}

impl<R: Read> TarReader<R> {
    /// Reads tar from a decompressed bundle stream.
    pub(super) fn new(stream: Stream<R>, limits: &Limits) -> Self {
        Self {
            stream: BufReader::with_capacity(COPY_BUFFER_BYTES, stream),
            remaining: 0,
            padding: 0,
            entries: 0,
            max_entries: limits.max_entries,
            buffer: vec![0; COPY_BUFFER_BYTES],
        }
    }

    /// Skips what is left of the current entry and reads the next header.
    /// Returns `None` at the end-of-archive marker, after checking that only
    /// zeros follow it and that the gzip stream ends cleanly.
    ///
    /// # Errors
    ///
    /// Path errors, [`Error::Symlink`], [`Error::Hardlink`],
    /// [`Error::SpecialFile`], [`Error::UnsupportedEntry`],
    /// [`Error::TooManyEntries`], [`Error::Corrupt`], [`Error::Truncated`]
    /// and the stream's limit errors.
    pub(super) fn next_entry(&mut self) -> Result<Option<Entry>, Error> {
        self.skip_rest()?;
        let mut pending = Pending::default();
        loop {
            let Some(block) = self.read_block()? else {
                return Err(Error::Truncated);
            };
            if block.iter().all(|&b| b == 0) {
                if pending.has_extension {
                    return Err(corrupt("the archive ends after a long-name or pax header"));
                }
                self.drain_after_end()?;
                return Ok(None);
            }
            check_checksum(&block)?;
            let header = tar::Header::from_byte_slice(&block);
            let type_flag = block[156];
            let header_size = header
                .entry_size()
                .map_err(|_| corrupt("an entry size is not a number"))?;
            match type_flag {
                b'L' => {
                    pending.has_extension = true;
                    let name =
                        self.read_extension(header_size, MAX_PATH_BYTES as u64 + 1, "long name")?;
                    pending.path = Some(trim_nuls(name));
                    continue;
                }
                b'x' => {
                    pending.has_extension = true;
                    let records = self.read_extension(header_size, MAX_PAX_BYTES, "pax header")?;
                    apply_pax(&records, &mut pending)?;
                    continue;
                }
                b'g' | b'K' => {
                    self.read_extension(header_size, MAX_PAX_BYTES, "global or link-name header")?;
                    continue;
                }
                _ => {}
            }
            // A pax size or path applies to this entry, never to an extension header.
            let size = pending.size.take().unwrap_or(header_size);
            let raw_path = pending
                .path
                .take()
                .unwrap_or_else(|| header.path_bytes().into_owned());
            return self.accept(&raw_path, type_flag, size).map(Some);
        }
    }

    /// Reads the current entry's data in chunks, passing each to `sink`.
    ///
    /// # Errors
    ///
    /// The stream's errors, or the first error `sink` returns.
    pub(super) fn copy_data(
        &mut self,
        mut sink: impl FnMut(&[u8]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        while self.remaining > 0 {
            let want = self.remaining.min(self.buffer.len() as u64) as usize;
            let n = read_some(&mut self.stream, &mut self.buffer[..want])?;
            self.remaining -= n as u64;
            sink(&self.buffer[..n])?;
        }
        Ok(())
    }

    /// Reads the next piece of the current entry's data into `piece`
    /// (replacing its contents): `max` bytes, or what is left of the entry
    /// if that is less (nothing at its end). Decompresses straight into it.
    ///
    /// # Errors
    ///
    /// The stream's errors.
    pub(super) fn read_piece(&mut self, mut piece: Vec<u8>, max: usize) -> Result<Vec<u8>, Error> {
        let want = self.remaining.min(max as u64) as usize;
        piece.clear();
        piece.resize(want, 0);
        read_exact(&mut self.stream, &mut piece)?;
        self.remaining -= want as u64;
        Ok(piece)
    }

    /// How many bytes of the current entry's data are still to be read.
    pub(super) fn data_left(&self) -> u64 {
        self.remaining
    }

    /// Reads the current entry's data into memory; the caller bounds its size.
    ///
    /// # Errors
    ///
    /// The stream's errors.
    pub(super) fn read_data(&mut self) -> Result<Vec<u8>, Error> {
        let mut data = Vec::with_capacity(self.remaining.min(1 << 20) as usize);
        self.copy_data(|chunk| {
            data.extend_from_slice(chunk);
            Ok(())
        })?;
        Ok(data)
    }

    fn accept(&mut self, raw_path: &[u8], type_flag: u8, size: u64) -> Result<Entry, Error> {
        let path = check_entry_path(raw_path)?;
        let kind = entry_kind(type_flag, &path)?;
        self.entries += 1;
        if self.entries > self.max_entries {
            return Err(Error::TooManyEntries {
                limit: self.max_entries,
            });
        }
        if kind == EntryKind::Directory && size != 0 {
            return Err(corrupt("a folder entry has data"));
        }
        self.remaining = size;
        self.padding = padding_after(size);
        Ok(Entry { path, kind, size })
    }

    fn read_extension(&mut self, size: u64, limit: u64, what: &str) -> Result<Vec<u8>, Error> {
        if size > limit {
            return Err(corrupt(&format!("a {what} is {size} bytes, above {limit}")));
        }
        self.remaining = size;
        self.padding = padding_after(size);
        let data = self.read_data()?;
        self.skip_rest()?;
        Ok(data)
    }

    fn skip_rest(&mut self) -> Result<(), Error> {
        self.copy_data(|_| Ok(()))?;
        let mut padding = [0u8; BLOCK];
        let n = self.padding as usize;
        read_exact(&mut self.stream, &mut padding[..n])?;
        self.padding = 0;
        Ok(())
    }

    /// Reads one header block; `None` on a clean end of stream.
    fn read_block(&mut self) -> Result<Option<[u8; BLOCK]>, Error> {
        let mut block = [0u8; BLOCK];
        let first = read_some_or_eof(&mut self.stream, &mut block)?;
        if first == 0 {
            return Ok(None);
        }
        read_exact(&mut self.stream, &mut block[first..])?;
        Ok(Some(block))
    }

    /// After the first zero block: everything up to the end of the gzip
    /// stream must be zero (tar pads archives to a record size).
    fn drain_after_end(&mut self) -> Result<(), Error> {
        loop {
            let n = read_some_or_eof(&mut self.stream, &mut self.buffer)?;
            if n == 0 {
                return Ok(());
            }
            if self.buffer[..n].iter().any(|&b| b != 0) {
                return Err(corrupt("data follows the end-of-archive marker"));
            }
        }
    }
}

fn entry_kind(type_flag: u8, path: &str) -> Result<EntryKind, Error> {
    let path = path.to_string();
    match type_flag {
        b'0' | b'\0' | b'7' => Ok(EntryKind::File),
        b'5' => Ok(EntryKind::Directory),
        b'1' => Err(Error::Hardlink { path }),
        b'2' => Err(Error::Symlink { path }),
        b'3' => Err(Error::SpecialFile {
            path,
            kind: "character device",
        }),
        b'4' => Err(Error::SpecialFile {
            path,
            kind: "block device",
        }),
        b'6' => Err(Error::SpecialFile { path, kind: "fifo" }),
        other => Err(Error::UnsupportedEntry {
            path,
            type_flag: char::from(other),
        }),
    }
}

fn check_checksum(block: &[u8; BLOCK]) -> Result<(), Error> {
    let field = &block[148..156];
    let text =
        std::str::from_utf8(field).map_err(|_| corrupt("a header checksum is not a number"))?;
    let digits = text.trim_matches(|c: char| c == '\0' || c == ' ');
    let stored =
        u32::from_str_radix(digits, 8).map_err(|_| corrupt("a header checksum is not a number"))?;
    let computed: u32 = block
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                u32::from(b' ')
            } else {
                u32::from(b)
            }
        })
        .sum();
    if stored != computed {
        return Err(corrupt("a header checksum does not match"));
    }
    Ok(())
}

/// Applies pax records (`LEN key=value\n`...) to the next entry: `path` and
/// `size` are used, other keys ignored.
fn apply_pax(records: &[u8], pending: &mut Pending) -> Result<(), Error> {
    let mut rest = records;
    while !rest.is_empty() {
        let space = rest
            .iter()
            .position(|&b| b == b' ')
            .ok_or_else(|| corrupt("a pax record has no length"))?;
        let length: usize = std::str::from_utf8(&rest[..space])
            .ok()
            .and_then(|text| text.parse().ok())
            .ok_or_else(|| corrupt("a pax record length is not a number"))?;
        if length <= space + 1 || length > rest.len() || rest[length - 1] != b'\n' {
            return Err(corrupt("a pax record has a wrong length"));
        }
        let record = &rest[space + 1..length - 1];
        let equals = record
            .iter()
            .position(|&b| b == b'=')
            .ok_or_else(|| corrupt("a pax record has no '='"))?;
        let (key, value) = (&record[..equals], &record[equals + 1..]);
        match key {
            b"path" => pending.path = Some(value.to_vec()),
            b"size" => {
                let size = std::str::from_utf8(value)
                    .ok()
                    .and_then(|text| text.parse().ok())
                    .ok_or_else(|| corrupt("a pax size is not a number"))?;
                pending.size = Some(size);
            }
            _ => {}
        }
        rest = &rest[length..];
    }
    Ok(())
}

fn trim_nuls(mut bytes: Vec<u8>) -> Vec<u8> {
    while bytes.last() == Some(&0) {
        bytes.pop();
    }
    bytes
}

fn padding_after(size: u64) -> u64 {
    (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64
}

fn corrupt(reason: &str) -> Error {
    Error::Corrupt {
        reason: reason.to_string(),
    }
}

/// Reads at least one byte; end of stream here is a truncation.
fn read_some<R: Read>(stream: &mut BufReader<Stream<R>>, buf: &mut [u8]) -> Result<usize, Error> {
    match read_some_or_eof(stream, buf)? {
        0 => Err(Error::Truncated),
        n => Ok(n),
    }
}

fn read_some_or_eof<R: Read>(
    stream: &mut BufReader<Stream<R>>,
    buf: &mut [u8],
) -> Result<usize, Error> {
    loop {
        match stream.read(buf) {
            Ok(n) => return Ok(n),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(stream.get_ref().classify(err)),
        }
    }
}

fn read_exact<R: Read>(stream: &mut BufReader<Stream<R>>, mut buf: &mut [u8]) -> Result<(), Error> {
    while !buf.is_empty() {
        let n = read_some(stream, buf)?;
        buf = &mut buf[n..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_records_set_path_and_size() {
        let mut pending = Pending::default();
        apply_pax(
            b"16 path=a/b/c.x\n11 size=42\n19 mtime=1234567.5\n",
            &mut pending,
        )
        .unwrap();
        assert_eq!(pending.path.as_deref(), Some(&b"a/b/c.x"[..]));
        assert_eq!(pending.size, Some(42));
    }

    #[test]
    fn malformed_pax_records_are_corrupt() {
        for bad in [
            &b"99 path=a\n"[..],
            b"path=a\n",
            b"7 path=a\n",
            b"8 patha\n",
            b"11 size=x1\n",
        ] {
            let mut pending = Pending::default();
            assert!(
                matches!(apply_pax(bad, &mut pending), Err(Error::Corrupt { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn padding_rounds_up_to_blocks() {
        assert_eq!(padding_after(0), 0);
        assert_eq!(padding_after(1), 511);
        assert_eq!(padding_after(512), 0);
        assert_eq!(padding_after(513), 511);
    }

    #[test]
    fn checksum_must_match() {
        let mut header = tar::Header::new_gnu();
        header.set_path("a").unwrap();
        header.set_size(0);
        header.set_cksum();
        let mut block = [0u8; BLOCK];
        block.copy_from_slice(header.as_bytes());
        check_checksum(&block).unwrap();
        block[0] = b'b';
        assert!(matches!(check_checksum(&block), Err(Error::Corrupt { .. })));
    }
}
