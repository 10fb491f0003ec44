//! The database schema and its forward migrations, and the connection
//! settings every open applies.
//!
//! The schema version is SQLite's `user_version`. [`MIGRATIONS`] is an
//! ordered list: step `i` takes the schema from version `i` to `i + 1`.
//! Steps are only ever appended; an applied step is never edited. All
//! pending steps run in one transaction at open, so a crash mid-migration
//! leaves the old schema intact. A file whose version is newer than the list
//! is refused ([`Error::SchemaTooNew`]) and not touched.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use super::error::Error;

/// SQLite `application_id` marking a capstan store ("cpst").
pub const APPLICATION_ID: i32 = 0x6370_7374;

/// How long a write waits for another connection's lock before failing
/// with a busy error.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The schema steps, oldest first.
pub const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    r#"
    CREATE TABLE apps (
        name            TEXT PRIMARY KEY NOT NULL,
        state           TEXT NOT NULL,
        active_version  TEXT NOT NULL,
        target_version  TEXT,
        progress        TEXT,
        message         TEXT,
        created_at      INTEGER NOT NULL,
        updated_at      INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE versions (
        app             TEXT NOT NULL REFERENCES apps(name) ON DELETE CASCADE,
        version         TEXT NOT NULL,
        bundle_dir      TEXT NOT NULL,
        bundle_digest   TEXT NOT NULL,
        signer          TEXT NOT NULL,
        metadata        TEXT NOT NULL,
        uploaded_at     INTEGER NOT NULL,
        PRIMARY KEY (app, version)
    ) STRICT;

    -- Static and system layers belong to a version, the user layer to the
    -- app (version is NULL) so it survives updates.
    CREATE TABLE overrides (
        app             TEXT NOT NULL REFERENCES apps(name) ON DELETE CASCADE,
        chart           TEXT NOT NULL,
        layer           TEXT NOT NULL CHECK (layer IN ('static', 'system', 'user')),
        version         TEXT,
        vals            TEXT NOT NULL,
        updated_at      INTEGER NOT NULL,
        CHECK ((layer = 'user') = (version IS NULL)),
        FOREIGN KEY (app, version) REFERENCES versions(app, version) ON DELETE CASCADE
    ) STRICT;
    CREATE UNIQUE INDEX overrides_key
        ON overrides (app, chart, layer, ifnull(version, ''));

    CREATE TABLE decisions (
        app             TEXT NOT NULL REFERENCES apps(name) ON DELETE CASCADE,
        component       TEXT NOT NULL,
        kind            TEXT NOT NULL,
        decided_by      TEXT NOT NULL,
        traits_digest   TEXT NOT NULL,
        decided_at      INTEGER NOT NULL,
        PRIMARY KEY (app, component)
    ) STRICT;

    CREATE TABLE history (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        app             TEXT NOT NULL REFERENCES apps(name) ON DELETE CASCADE,
        operation       TEXT NOT NULL,
        from_state      TEXT,
        via_state       TEXT NOT NULL,
        to_state        TEXT,
        outcome         TEXT NOT NULL,
        message         TEXT,
        started_at      INTEGER NOT NULL,
        finished_at     INTEGER
    ) STRICT;
    CREATE INDEX history_by_app ON history (app, id);

    CREATE TABLE volumes (
        name            TEXT PRIMARY KEY NOT NULL,
        node            TEXT NOT NULL,
        host_path       TEXT NOT NULL,
        size            TEXT NOT NULL,
        storage_class   TEXT NOT NULL,
        created_at      INTEGER NOT NULL
    ) STRICT;
    "#,
    // 2: a local volume's claim lives in one namespace.
    r#"
    ALTER TABLE volumes ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
    "#,
    // 3: the store's copy of each release's inventory and its revision
    // (objects is a JSON list of {apiVersion, kind, namespace?, name}).
    r#"
    CREATE TABLE releases (
        app             TEXT NOT NULL REFERENCES apps(name) ON DELETE CASCADE,
        chart           TEXT NOT NULL,
        namespace       TEXT NOT NULL,
        release_name    TEXT NOT NULL,
        method          TEXT NOT NULL,
        revision        INTEGER NOT NULL CHECK (revision >= 0),
        objects         TEXT NOT NULL,
        updated_at      INTEGER NOT NULL,
        PRIMARY KEY (app, chart)
    ) STRICT;
    "#,
    // 4: where a version's bundle came from (`oci://HOST/REPO@sha256:...`);
    // NULL for a file upload.
    r#"
    ALTER TABLE versions ADD COLUMN source TEXT;
    "#,
    // 5: the user overrides an app had while a version was active, saved
    // when it stopped being active, so a rollback re-applies them.
    r#"
    CREATE TABLE user_snapshots (
        app             TEXT NOT NULL,
        version         TEXT NOT NULL,
        charts          TEXT NOT NULL,
        saved_at        INTEGER NOT NULL,
        PRIMARY KEY (app, version),
        FOREIGN KEY (app, version) REFERENCES versions(app, version) ON DELETE CASCADE
    ) STRICT;
    "#,
    // 6: what an operation was asked beyond its name (the lifecycle's
    // JSON), for a new leader to resume it from; NULL for a plain one.
    r#"
    ALTER TABLE history ADD COLUMN request TEXT;
    "#,
    // 7: the daemon's key (generated secrets' MACs), made once.
    r#"
    CREATE TABLE daemon_keys (
        name            TEXT PRIMARY KEY,
        key             BLOB NOT NULL
    ) STRICT;
    "#,
    // 8: an operator's pause of the app's automatic operations (`app
    // pause`: JSON {by, at, reason?}); NULL when not paused.
    r#"
    ALTER TABLE apps ADD COLUMN automatic_pause TEXT;
    "#,
];

/// The schema version this build writes.
pub fn known_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// Switches the database file to write-ahead logging.
///
/// WAL lets readers run beside the writer, and with `synchronous=FULL`
/// (set by [`configure`]) every commit is fsynced to the WAL before it
/// returns, so a committed state change survives power loss as well as a
/// killed daemon. (`NORMAL` would survive a killed process but could lose
/// the last commits on power loss, and the state machine must never forget
/// an override the operator was told was saved.) Commits are few and small,
/// so the cost is one fsync per operation step.
///
/// # Errors
/// [`Error::Configure`] if the pragma fails, [`Error::WalUnavailable`] if
/// SQLite keeps another journal mode (e.g. a filesystem without shared
/// memory).
pub fn enable_wal(conn: &Connection, path: &Path) -> Result<(), Error> {
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
        .map_err(|source| Error::Configure {
            path: path.to_owned(),
            setting: "journal_mode=WAL",
            source,
        })?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::WalUnavailable {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

/// Sets the per-connection pragmas: busy timeout, `synchronous=FULL` and
/// foreign keys on.
///
/// # Errors
/// [`Error::Configure`] naming the setting that failed.
pub fn configure(conn: &Connection, path: &Path) -> Result<(), Error> {
    let fail = |setting: &'static str| {
        move |source| Error::Configure {
            path: path.to_owned(),
            setting,
            source,
        }
    };
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(fail("busy_timeout"))?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(fail("synchronous=FULL"))?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(fail("foreign_keys=ON"))?;
    Ok(())
}

/// Brings the schema up to [`known_version`], in one transaction.
/// Returns the version found before migrating.
///
/// # Errors
/// [`Error::ForeignDatabase`] when the file belongs to another program,
/// [`Error::SchemaTooNew`] when it is newer than this build (nothing is
/// written), [`Error::Migrate`] when a step fails (nothing is written).
pub fn migrate(conn: &mut Connection, path: &Path) -> Result<i64, Error> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|source| Error::Open {
            path: path.to_owned(),
            source,
        })?;
    let read_pragma = |name: &str| -> Result<i64, Error> {
        tx.query_row(&format!("PRAGMA {name}"), [], |row| row.get(0))
            .map_err(|source| Error::Open {
                path: path.to_owned(),
                source,
            })
    };
    let application_id = read_pragma("application_id")? as i32;
    let found = read_pragma("user_version")?;
    if application_id != 0 && application_id != APPLICATION_ID {
        return Err(Error::ForeignDatabase {
            path: path.to_owned(),
            found: application_id,
        });
    }
    if found > known_version() {
        return Err(Error::SchemaTooNew {
            path: path.to_owned(),
            found,
            known: known_version(),
        });
    }
    if found == known_version() && application_id == APPLICATION_ID {
        return Ok(found);
    }
    if found == 0 && application_id == 0 {
        refuse_unmarked_tables(&tx, path)?;
    }
    for (index, step) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let to = index as i64 + 1;
        let fail = |source| Error::Migrate {
            path: path.to_owned(),
            from: found,
            to,
            source,
        };
        tx.execute_batch(step).map_err(fail)?;
        tx.pragma_update(None, "user_version", to).map_err(fail)?;
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)
        .map_err(|source| Error::Migrate {
            path: path.to_owned(),
            from: found,
            to: known_version(),
            source,
        })?;
    tx.commit().map_err(|source| Error::Migrate {
        path: path.to_owned(),
        from: found,
        to: known_version(),
        source,
    })?;
    Ok(found)
}

/// A database with tables but neither our application id nor a schema
/// version is some other program's; refuse rather than add tables to it.
fn refuse_unmarked_tables(conn: &Connection, path: &Path) -> Result<(), Error> {
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table'",
            [],
            |row| row.get(0),
        )
        .map_err(|source| Error::Open {
            path: path.to_owned(),
            source,
        })?;
    if tables > 0 {
        return Err(Error::ForeignDatabase {
            path: path.to_owned(),
            found: 0,
        });
    }
    Ok(())
}
