//! The file stage of the unpacker: hashes each file's bytes against its
//! `MANIFEST` digest and writes them under the staging root, on a thread of
//! its own so that decompression (the reader's thread) overlaps hashing and
//! file creation.
//!
//! The reader sends [`Job`]s in archive order, gathered in batches, over a
//! bounded channel, so the bytes in flight stay below a few times
//! [`CHANNEL_BATCHES`] times [`BATCH_BYTES`] whatever the bundle's size, and
//! the worker wakes once per batch rather than once per file. Buffers of
//! full [`PIECE_BYTES`] pieces go back to the reader to be filled again, so
//! a large file costs no allocation (and no page faults) per piece.
//!
//! Jobs are checked before they are sent: every path is a plain relative
//! path, so nothing is written outside the root. The worker creates each
//! folder once (it remembers what it made, so any `mkdir` that finds
//! something in the way is an error in this fresh private folder), opens
//! each file once with `O_CREAT|O_EXCL` and the default mode (0666 less the
//! umask), and never follows or makes a link. Per file that is one `open`,
//! one `write` per piece and one `close`.
//!
//! Nothing is fsynced: the unpacked folder is a copy of a signed archive,
//! not the record of it. After a power loss a folder moved into place may
//! hold empty or partial files; whoever keeps unpacked bundles across
//! restarts re-verifies them from their archive.
//!
//! The worker stops at its first error. Because it handles jobs in archive
//! order, its error is always about an earlier entry than any error the
//! reader meets afterwards, so [`FileWorker::finish`] puts it first and the
//! reported error is the one a single-threaded pass would report.

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::{Scope, ScopedJoinHandle};

use sha2::{Digest as _, Sha256};

use super::Error;
use super::manifest::Digest;

/// Largest piece of file data in one job.
pub(super) const PIECE_BYTES: usize = 256 * 1024;
/// File bytes gathered before a batch of jobs is sent.
const BATCH_BYTES: usize = 1024 * 1024;
/// Jobs gathered before a batch is sent, whatever their size.
const BATCH_JOBS: usize = 256;
/// Batches queued between the reader and the worker.
const CHANNEL_BATCHES: usize = 4;

/// The start of a file: where it goes and what it must hash to.
#[derive(Debug)]
pub(super) struct FileStart {
    /// The checked bundle path.
    pub(super) path: String,
    /// The `MANIFEST` digest, or `None` for `MANIFEST` and `MANIFEST.sig`,
    /// which are written as they are.
    pub(super) expected: Option<Digest>,
}

/// One unit of work for the worker, in archive order.
#[derive(Debug)]
pub(super) enum Job {
    /// Create this folder (a folder entry of the archive).
    Folder(String),
    /// Bytes of a file. A file is one or more pieces: the first carries its
    /// [`FileStart`], the last has `last` set (an empty file is one empty
    /// piece with both).
    Piece {
        /// Set on the file's first piece.
        start: Option<FileStart>,
        /// The bytes, at most [`PIECE_BYTES`].
        data: Vec<u8>,
        /// Whether this piece ends the file.
        last: bool,
    },
}

impl Job {
    fn bytes(&self) -> usize {
        match self {
            Job::Folder(_) => 0,
            Job::Piece { data, .. } => data.len(),
        }
    }
}

/// The reader's handle on the worker thread.
pub(super) struct FileWorker<'scope> {
    jobs: Option<SyncSender<Vec<Job>>>,
    /// Emptied [`PIECE_BYTES`] buffers coming back from the worker.
    spare: Receiver<Vec<u8>>,
    handle: Option<ScopedJoinHandle<'scope, Result<(), Error>>>,
    batch: Vec<Job>,
    batch_bytes: usize,
}

impl<'scope> FileWorker<'scope> {
    /// Starts the worker in `scope`. With `root: None` files are hashed and
    /// checked but not written.
    ///
    /// # Errors
    ///
    /// [`Error::FileWorker`] if the thread cannot be started.
    pub(super) fn spawn<'env>(
        scope: &'scope Scope<'scope, 'env>,
        root: Option<&'env Path>,
    ) -> Result<Self, Error> {
        let (jobs, received) = sync_channel(CHANNEL_BATCHES);
        let (returned, spare) = channel();
        let handle = std::thread::Builder::new()
            .name("bundle-files".to_string())
            .spawn_scoped(scope, move || run(root, &received, &returned))
            .map_err(Error::FileWorker)?;
        Ok(Self {
            jobs: Some(jobs),
            spare,
            handle: Some(handle),
            batch: Vec::new(),
            batch_bytes: 0,
        })
    }

    /// A buffer for a full [`PIECE_BYTES`] piece: one the worker is done
    /// with, or a new one. Only as many exist as pieces fit in flight.
    pub(super) fn spare_buffer(&mut self) -> Vec<u8> {
        self.spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(PIECE_BYTES))
    }

    /// Queues a job, sending the batch when it is full.
    ///
    /// # Errors
    ///
    /// The worker's error, if it has stopped.
    pub(super) fn push(&mut self, job: Job) -> Result<(), Error> {
        self.batch_bytes += job.bytes();
        self.batch.push(job);
        if self.batch_bytes >= BATCH_BYTES || self.batch.len() >= BATCH_JOBS {
            self.send_batch()?;
        }
        Ok(())
    }

    /// Sends what is queued, waits until the worker has handled every job
    /// and returns its first error. Call it on success and on failure alike:
    /// the worker has stopped touching the staging folder when it returns.
    ///
    /// # Errors
    ///
    /// The worker's first error ([`Error::DigestMismatch`] or
    /// [`Error::StagingWrite`]).
    pub(super) fn finish(mut self) -> Result<(), Error> {
        let sent = self.send_batch();
        self.join().and(sent)
    }

    fn send_batch(&mut self) -> Result<(), Error> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        self.batch_bytes = 0;
        let delivered = self
            .jobs
            .as_ref()
            .is_some_and(|jobs| jobs.send(batch).is_ok());
        if delivered {
            return Ok(());
        }
        // The worker stopped early, which it only does on an error.
        Err(self.join().err().unwrap_or_else(worker_gone))
    }

    /// Closes the channel and waits for the worker. A worker panic is a bug
    /// and is passed on as a panic.
    fn join(&mut self) -> Result<(), Error> {
        self.jobs = None;
        match self.handle.take().map(ScopedJoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_panic)) => Err(Error::FileWorkerStopped),
            None => Ok(()),
        }
    }
}

fn worker_gone() -> Error {
    Error::FileWorkerStopped
}

/// The worker's loop: handles jobs until the channel closes or one fails.
fn run(
    root: Option<&Path>,
    jobs: &Receiver<Vec<Job>>,
    spare: &Sender<Vec<u8>>,
) -> Result<(), Error> {
    let mut worker = Worker {
        root,
        folders: HashSet::new(),
        current: None,
    };
    for batch in jobs {
        for job in batch {
            if let Some(buffer) = worker.handle(job)?
                && buffer.capacity() == PIECE_BYTES
            {
                // The reader may have finished already; the buffer is then freed.
                let _ = spare.send(buffer);
            }
        }
    }
    Ok(())
}

/// The file being hashed and written.
struct OpenFile {
    path: String,
    expected: Option<Digest>,
    hasher: Sha256,
    file: Option<fs::File>,
}

struct Worker<'a> {
    root: Option<&'a Path>,
    /// Folders made so far, relative to the root.
    folders: HashSet<String>,
    current: Option<OpenFile>,
}

impl Worker<'_> {
    /// Does one job; returns a piece's buffer once its bytes are used.
    fn handle(&mut self, job: Job) -> Result<Option<Vec<u8>>, Error> {
        match job {
            Job::Folder(path) => self.make_folder_and_parents(&path).map(|()| None),
            Job::Piece { start, data, last } => {
                if let Some(start) = start {
                    self.begin(start)?;
                }
                self.write(&data)?;
                if last {
                    self.end()?;
                }
                Ok(Some(data))
            }
        }
    }

    fn begin(&mut self, start: FileStart) -> Result<(), Error> {
        let file = match self.root {
            Some(root) => {
                if let Some((parent, _)) = start.path.rsplit_once('/') {
                    self.make_folder_and_parents(parent)?;
                }
                Some(create_file(root, &start.path)?)
            }
            None => None,
        };
        self.current = Some(OpenFile {
            path: start.path,
            expected: start.expected,
            hasher: Sha256::new(),
            file,
        });
        Ok(())
    }

    fn write(&mut self, data: &[u8]) -> Result<(), Error> {
        let Some(open) = self.current.as_mut() else {
            return Ok(());
        };
        if open.expected.is_some() {
            open.hasher.update(data);
        }
        match open.file.as_mut() {
            Some(file) => file.write_all(data).map_err(|source| Error::StagingWrite {
                path: open.path.clone(),
                source,
            }),
            None => Ok(()),
        }
    }

    /// Closes the current file and compares its digest.
    fn end(&mut self) -> Result<(), Error> {
        let Some(open) = self.current.take() else {
            return Ok(());
        };
        match open.expected {
            Some(expected) if Digest::from_hasher(open.hasher) != expected => {
                Err(Error::DigestMismatch { path: open.path })
            }
            _ => Ok(()),
        }
    }

    /// Makes `path` and every missing folder above it, each with one `mkdir`.
    fn make_folder_and_parents(&mut self, path: &str) -> Result<(), Error> {
        let Some(root) = self.root else {
            return Ok(());
        };
        if self.folders.contains(path) {
            return Ok(());
        }
        let ends = path
            .match_indices('/')
            .map(|(at, _)| at)
            .chain(std::iter::once(path.len()));
        for end in ends {
            let folder = &path[..end];
            if !self.folders.contains(folder) {
                make_folder(root, folder)?;
                self.folders.insert(folder.to_string());
            }
        }
        Ok(())
    }
}

/// One `mkdir`. The staging folder is fresh and only this worker writes in
/// it, so anything already there is a file the bundle put in the way.
fn make_folder(root: &Path, path: &str) -> Result<(), Error> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .mode(0o700)
        .create(root.join(path))
        .map_err(|source| Error::StagingWrite {
            path: path.to_string(),
            source,
        })
}

/// One `open(O_WRONLY|O_CREAT|O_EXCL)`, mode 0600: never an existing file
/// or a link.
fn create_file(root: &Path, path: &str) -> Result<fs::File, Error> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::File::options()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(root.join(path))
        .map_err(|source| Error::StagingWrite {
            path: path.to_string(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(path: &str, data: &[u8], expected: Option<Digest>) -> Job {
        Job::Piece {
            start: Some(FileStart {
                path: path.to_string(),
                expected,
            }),
            data: data.to_vec(),
            last: true,
        }
    }

    fn run_jobs(root: Option<&Path>, jobs: Vec<Job>) -> Result<(), Error> {
        std::thread::scope(|scope| {
            let mut worker = FileWorker::spawn(scope, root)?;
            let pushed = jobs.into_iter().try_for_each(|job| worker.push(job));
            worker.finish().and(pushed)
        })
    }

    #[test]
    fn writes_files_in_pieces_and_makes_each_folder_once() {
        let dir = tempfile::tempdir().unwrap();
        let whole = b"hello, world".to_vec();
        let jobs = vec![
            Job::Piece {
                start: Some(FileStart {
                    path: "a/b/c.txt".to_string(),
                    expected: Some(Digest::of(&whole)),
                }),
                data: whole[..5].to_vec(),
                last: false,
            },
            Job::Piece {
                start: None,
                data: whole[5..].to_vec(),
                last: true,
            },
            piece("a/b/d.txt", b"", Some(Digest::of(b""))),
            Job::Folder("a/b".to_string()),
            Job::Folder("e".to_string()),
            piece("MANIFEST", b"unhashed", None),
        ];
        run_jobs(Some(dir.path()), jobs).unwrap();
        assert_eq!(fs::read(dir.path().join("a/b/c.txt")).unwrap(), whole);
        assert_eq!(fs::read(dir.path().join("a/b/d.txt")).unwrap(), b"");
        assert!(dir.path().join("e").is_dir());
        assert_eq!(fs::read(dir.path().join("MANIFEST")).unwrap(), b"unhashed");
    }

    #[test]
    fn a_wrong_digest_is_reported_for_its_file() {
        let jobs = vec![
            piece("good", b"good", Some(Digest::of(b"good"))),
            piece("bad", b"bad", Some(Digest::of(b"other"))),
            piece("after", b"after", Some(Digest::of(b"after"))),
        ];
        let result = run_jobs(None, jobs);
        assert!(matches!(result, Err(Error::DigestMismatch { path }) if path == "bad"));
    }

    #[test]
    fn a_file_in_the_way_of_a_folder_is_a_write_error() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = vec![
            piece("a", b"x", Some(Digest::of(b"x"))),
            piece("a/b", b"y", Some(Digest::of(b"y"))),
        ];
        let result = run_jobs(Some(dir.path()), jobs);
        assert!(matches!(result, Err(Error::StagingWrite { path, .. }) if path == "a"));
    }

    #[test]
    fn an_existing_file_is_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("x"), b"old").unwrap();
        let result = run_jobs(Some(dir.path()), vec![piece("x", b"new", None)]);
        assert!(matches!(result, Err(Error::StagingWrite { path, .. }) if path == "x"));
        assert_eq!(fs::read(dir.path().join("x")).unwrap(), b"old");
    }

    #[test]
    fn the_worker_error_reaches_a_reader_that_keeps_pushing() {
        let mut jobs = vec![piece("bad", b"bad", Some(Digest::of(b"other")))];
        jobs.extend((0..4 * BATCH_JOBS * CHANNEL_BATCHES).map(|i| {
            let name = format!("f{i}");
            piece(&name, b"", Some(Digest::of(b"")))
        }));
        std::thread::scope(|scope| {
            let mut worker = FileWorker::spawn(scope, None).unwrap();
            let pushed = jobs.into_iter().try_for_each(|job| worker.push(job));
            assert!(matches!(pushed, Err(Error::DigestMismatch { ref path }) if path == "bad"));
            assert!(worker.finish().is_ok());
        });
    }
}
