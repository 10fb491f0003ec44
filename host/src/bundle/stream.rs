//! The decompression layer of the unpacker: gunzips the archive while
//! counting compressed bytes in and decompressed bytes out, and stops the
//! stream the moment the compression ratio or the decompressed-size cap is
//! passed, before the excess bytes reach anyone.

use std::io::{self, Read};

use flate2::read::GzDecoder;

use super::{Error, Limits};

/// Decompressed bytes allowed before the ratio is checked: the tar headers of
/// a small bundle compress far better than its files, so a tiny archive may
/// legitimately exceed the ratio at first.
const RATIO_GRACE_BYTES: u64 = 1024 * 1024;

/// Tar framing allowed per entry on top of file contents (header, long-name
/// or pax header, padding).
const FRAMING_BYTES_PER_ENTRY: u64 = 4 * 1024;

/// Counts the compressed bytes read from the source and remembers whether
/// the source itself failed.
struct Source<R> {
    inner: R,
    consumed: u64,
    failed: bool,
}

impl<R: Read> Read for Source<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.consumed += n as u64;
                Ok(n)
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => Err(err),
            Err(err) => {
                self.failed = true;
                Err(err)
            }
        }
    }
}

/// Which limit stopped the stream.
#[derive(Debug, Clone, Copy)]
enum Violation {
    Ratio,
    Size,
}

/// The decompressed byte stream of a bundle archive, bounded by [`Limits`].
pub(super) struct Stream<R> {
    decoder: GzDecoder<Source<R>>,
    produced: u64,
    max_ratio: u64,
    max_produced: u64,
    max_total: u64,
    violation: Option<Violation>,
}

impl<R: Read> Stream<R> {
    /// Wraps a gzip-compressed reader.
    pub(super) fn new(archive: R, limits: &Limits) -> Self {
        let framing = limits
            .max_entries
            .saturating_add(2)
            .saturating_mul(FRAMING_BYTES_PER_ENTRY);
        Self {
            decoder: GzDecoder::new(Source {
                inner: archive,
                consumed: 0,
                failed: false,
            }),
            produced: 0,
            max_ratio: limits.max_compression_ratio,
            max_produced: limits
                .max_total_bytes
                .saturating_add(super::MAX_MANIFEST_BYTES)
                .saturating_add(framing),
            max_total: limits.max_total_bytes,
            violation: None,
        }
    }

    /// Turns an I/O error of this stream into the bundle error it stands for:
    /// a limit, a failing source, a truncation or corrupt gzip data.
    pub(super) fn classify(&self, err: io::Error) -> Error {
        match self.violation {
            Some(Violation::Ratio) => Error::CompressionRatio {
                limit: self.max_ratio,
            },
            Some(Violation::Size) => Error::TotalTooLarge {
                limit: self.max_total,
            },
            None if self.decoder.get_ref().failed => Error::Read(err),
            None if err.kind() == io::ErrorKind::UnexpectedEof => Error::Truncated,
            None => Error::Decompress(err),
        }
    }

    fn check_limits(&mut self) -> io::Result<()> {
        if self.produced > self.max_produced {
            self.violation = Some(Violation::Size);
        } else if self.produced > RATIO_GRACE_BYTES {
            let consumed = self.decoder.get_ref().consumed.max(1);
            if self.produced > consumed.saturating_mul(self.max_ratio) {
                self.violation = Some(Violation::Ratio);
            }
        }
        match self.violation {
            Some(_) => Err(io::Error::other("bundle stream limit reached")),
            None => Ok(()),
        }
    }
}

impl<R: Read> Read for Stream<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.violation.is_some() {
            return Err(io::Error::other("bundle stream limit reached"));
        }
        let n = self.decoder.read(buf)?;
        self.produced += n as u64;
        self.check_limits()?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::GzEncoder;

    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn drain(stream: &mut Stream<&[u8]>) -> Result<u64, Error> {
        let mut buf = [0u8; 8192];
        let mut total = 0;
        loop {
            match stream.read(&mut buf) {
                Ok(0) => return Ok(total),
                Ok(n) => total += n as u64,
                Err(err) => return Err(stream.classify(err)),
            }
        }
    }

    #[test]
    fn zeros_trip_the_ratio_limit() {
        let bomb = gzip(&vec![0u8; 8 * 1024 * 1024]);
        let mut stream = Stream::new(&bomb[..], &Limits::default());
        assert!(matches!(
            drain(&mut stream),
            Err(Error::CompressionRatio { limit: 100 })
        ));
    }

    #[test]
    fn ordinary_data_passes() {
        let data: Vec<u8> = (0..3_000_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let compressed = gzip(&data);
        let mut stream = Stream::new(&compressed[..], &Limits::default());
        assert_eq!(drain(&mut stream).unwrap(), data.len() as u64);
    }

    #[test]
    fn size_cap_applies_even_when_ratio_is_allowed() {
        let limits = Limits {
            max_entries: 0,
            max_total_bytes: 0,
            max_compression_ratio: u64::MAX,
            ..Limits::default()
        };
        let data = gzip(&vec![0u8; 6 * 1024 * 1024]);
        let mut stream = Stream::new(&data[..], &limits);
        assert!(matches!(
            drain(&mut stream),
            Err(Error::TotalTooLarge { .. })
        ));
    }

    #[test]
    fn a_cut_stream_is_truncated_and_garbage_is_corrupt() {
        let data = gzip(b"hello world, hello world, hello world");
        let mut cut = Stream::new(&data[..data.len() - 4], &Limits::default());
        assert!(matches!(drain(&mut cut), Err(Error::Truncated)));
        let garbage = b"this is not gzip at all".to_vec();
        let mut bad = Stream::new(&garbage[..], &Limits::default());
        assert!(matches!(drain(&mut bad), Err(Error::Decompress(_))));
    }
}
