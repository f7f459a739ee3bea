//! Opening a database file: connection settings, the schema, and its version check.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use crate::error::{BackendError, IntoStoreError, StoreError};

/// The schema version this build writes and reads (`PRAGMA user_version`).
pub(crate) const SCHEMA_VERSION: i64 = 6;

/// How long a statement waits for another connection's write lock before failing.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Version 1. `record` is the whole [`TaskRecord`](crate::TaskRecord) as JSON; the other
/// columns are copies of its fields for the indexes. `live` is 1 while the task is
/// unfinished; `lease_expires_at` is set only for unfinished tasks holding a lease.
/// `live_counts` and `counters` keep the unfinished tasks per owner and in total, updated
/// in the same transactions as `tasks`.
const SCHEMA_V1: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY NOT NULL,
    owner TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    live INTEGER NOT NULL,
    lease_expires_at INTEGER,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_owner ON tasks (owner, created_at, id);
CREATE INDEX IF NOT EXISTS tasks_by_expiry ON tasks (expires_at)
    WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS tasks_by_lease ON tasks (lease_expires_at)
    WHERE lease_expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS live_counts (
    owner TEXT PRIMARY KEY NOT NULL,
    live INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS counters (
    name TEXT PRIMARY KEY NOT NULL,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO counters (name, value) VALUES ('live_total', 0);
";

/// Version 2: `queued_tool` is the tool of a task waiting for a worker
/// ([`TaskRecord::queued_tool`](crate::TaskRecord::queued_tool)), NULL otherwise, indexed
/// in claim order. Rows of version 1 hold no job, so NULL is right for all of them.
const SCHEMA_V2: &str = "
ALTER TABLE tasks ADD COLUMN queued_tool TEXT;
CREATE INDEX IF NOT EXISTS tasks_queued ON tasks (queued_tool, created_at, id)
    WHERE queued_tool IS NOT NULL;
";

/// Version 3: the operator's view (contract rule 22). `status`, `tool` and `lease_holder`
/// are virtual columns read from the record (so every write keeps them true), indexed in
/// creation order with all tasks in creation order: an operator listing walks one of
/// these (or the owner's) backwards, never every row; the counts are a grouped pass
/// over the tasks. Adding them rewrites nothing; building the indexes reads the
/// rows of earlier versions once, at the upgrade.
const SCHEMA_V3: &str = "
ALTER TABLE tasks ADD COLUMN status TEXT
    GENERATED ALWAYS AS (json_extract(record, '$.status')) VIRTUAL;
ALTER TABLE tasks ADD COLUMN tool TEXT
    GENERATED ALWAYS AS (json_extract(record, '$.origin.tool')) VIRTUAL;
ALTER TABLE tasks ADD COLUMN lease_holder TEXT
    GENERATED ALWAYS AS (json_extract(record, '$.lease.holder')) VIRTUAL;
CREATE INDEX IF NOT EXISTS tasks_by_created ON tasks (created_at, id);
CREATE INDEX IF NOT EXISTS tasks_by_status ON tasks (status, created_at, id);
CREATE INDEX IF NOT EXISTS tasks_by_tool ON tasks (tool, created_at, id)
    WHERE tool IS NOT NULL;
CREATE INDEX IF NOT EXISTS tasks_by_holder ON tasks (lease_holder, created_at, id)
    WHERE lease_holder IS NOT NULL;
";

/// Version 6: the node registry (contract rule 24), one row per node id. Files that a
/// build of version 5 with the registry touched already have the table (it was created
/// on first use then): `IF NOT EXISTS` keeps it and its rows.
const SCHEMA_V6: &str = "
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY NOT NULL,
    role TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    interval_ms INTEGER NOT NULL,
    drain_requested INTEGER NOT NULL,
    drained INTEGER NOT NULL
);
";

/// Version 5: idempotency keys (contract rule 25). One row per `(owner, key)` naming the
/// task created with it; the insert of a keyed task checks and writes it in its own
/// transaction, so the primary key settles any race. A row whose task expired no longer
/// holds its key (the insert overwrites it); the trigger takes it with its task,
/// whichever statement removes the row.
const SCHEMA_V5: &str = "
CREATE TABLE IF NOT EXISTS idempotency_keys (
    owner TEXT NOT NULL,
    key TEXT NOT NULL,
    task_id TEXT NOT NULL,
    PRIMARY KEY (owner, key)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS idempotency_key_goes_with_its_task AFTER DELETE ON tasks
WHEN json_extract(old.record, '$.idempotency.key') IS NOT NULL
BEGIN
    DELETE FROM idempotency_keys
    WHERE owner = old.owner AND key = json_extract(old.record, '$.idempotency.key')
      AND task_id = old.id;
END;
";

/// Version 4: task logs (contract rule 23). `task_log` holds each task's entries by
/// (task, seq); a rowid table, as an entry's payload may run to
/// [`Limits::max_log_entry_bytes`](crate::Limits::max_log_entry_bytes), too large for
/// `WITHOUT ROWID`. The task's row keeps the earliest `seq` kept, the next `seq` and the
/// bytes kept, so a write knows what retention drops without reading the log, and a
/// read knows the bounds without counting it. Tasks of earlier versions start an empty
/// log at 0 (added with constant defaults: nothing is rewritten). The trigger takes the
/// log with its task, whichever statement removes the row.
const SCHEMA_V4: &str = "
ALTER TABLE tasks ADD COLUMN log_first INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN log_next INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN log_bytes INTEGER NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS task_log (
    task_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    at INTEGER NOT NULL,
    node TEXT,
    actor TEXT NOT NULL,
    size INTEGER NOT NULL,
    PRIMARY KEY (task_id, seq)
);
CREATE TRIGGER IF NOT EXISTS task_log_goes_with_its_task AFTER DELETE ON tasks
BEGIN
    DELETE FROM task_log WHERE task_id = old.id;
END;
";

pub(crate) fn backend(e: impl IntoStoreError) -> StoreError {
    e.into_store_error()
}

/// SQLite's failures that pass: another connection holds the write lock past the busy
/// timeout, the disk is full, or an I/O error. A read-only file or directory is
/// permanent (said as such); so is everything else.
impl IntoStoreError for rusqlite::Error {
    fn into_store_error(self) -> StoreError {
        use rusqlite::ErrorCode;
        let code = self.sqlite_error_code();
        let (transient, message) = match code {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
                (true, format!("SQLite: the database is busy: {self}"))
            }
            Some(ErrorCode::DiskFull) => (
                true,
                format!("SQLite: the disk is full; writes fail until space is freed: {self}"),
            ),
            Some(ErrorCode::SystemIoFailure) => (true, format!("SQLite: I/O error: {self}")),
            Some(ErrorCode::ReadOnly) => (
                false,
                format!(
                    "SQLite: the database is read-only (check the permissions of the file, \
                     its directory and the file system): {self}"
                ),
            ),
            _ => (false, format!("SQLite: {self}")),
        };
        let e = BackendError::with_source(message, self);
        if transient {
            StoreError::Unavailable(e)
        } else {
            StoreError::Backend(e)
        }
    }
}

/// Opens `path` (creating it if needed), switches it to WAL with `synchronous = FULL`, and
/// creates or checks the schema.
pub(crate) fn open(path: &Path) -> Result<Connection, StoreError> {
    let shown = path.display();
    let conn = Connection::open(path).map_err(|e| match unwritable_dir(path) {
        Some(why) => backend(why),
        None => backend(e).context(&shown.to_string()),
    })?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
    // SQLite falls back to read-only when it cannot open the file for writing; say so
    // here rather than fail later with "unable to open database file".
    if conn.is_readonly(rusqlite::MAIN_DB).map_err(backend)? {
        return Err(backend(format!(
            "{shown}: the database is read-only (the file, its directory or the file \
             system refuses writes; the store needs to write the file and its -wal and -shm \
             companions beside it)"
        )));
    }
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(|e| match unwritable_dir(path) {
            Some(why) => backend(why),
            None => backend(e).context(&format!("{shown}: cannot enable WAL")),
        })?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(backend(format!(
            "{shown}: journal mode is {mode:?}, not WAL (is it a database file?)"
        )));
    }
    // FULL: in WAL mode every commit syncs the log, so a committed write survives an OS
    // crash or power loss, not just a process crash.
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(backend)?;
    migrate(conn, path)
}

/// Why the folder of the database at `path` cannot take the files the store writes, if
/// it cannot: SQLite itself only says "unable to open database file". Found by creating
/// (and removing) a probe file there, so a read-only file system, missing write
/// permission and a missing folder are all told apart by the OS's own message.
fn unwritable_dir(path: &Path) -> Option<String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let probe = dir.join(format!(".mcp-tasks-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            None
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
        Err(e) => {
            let kind = match e.kind() {
                std::io::ErrorKind::NotFound => "does not exist",
                std::io::ErrorKind::ReadOnlyFilesystem => "is on a read-only file system",
                _ => "is read-only for this process",
            };
            Some(format!(
                "{}: the folder {} {kind} ({e}); the SQLite store writes the database \
                 and its -wal, -shm and .lock companions there",
                path.display(),
                dir.display()
            ))
        }
    }
}

fn migrate(mut conn: Connection, path: &Path) -> Result<Connection, StoreError> {
    let shown = path.display();
    {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        let version: i64 = tx
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(backend)?;
        if version > SCHEMA_VERSION {
            return Err(backend(format!(
                "{shown}: task store schema version {version} is newer than this build of \
                 mcp-tasks supports (up to {SCHEMA_VERSION}); upgrade mcp-tasks to open it"
            )));
        }
        if version < 1 {
            tx.execute_batch(SCHEMA_V1).map_err(backend)?;
        }
        if version < 2 {
            tx.execute_batch(SCHEMA_V2).map_err(backend)?;
        }
        if version < 3 {
            tx.execute_batch(SCHEMA_V3).map_err(backend)?;
        }
        if version < 4 {
            tx.execute_batch(SCHEMA_V4).map_err(backend)?;
        }
        if version < 5 {
            tx.execute_batch(SCHEMA_V5).map_err(backend)?;
        }
        if version < 6 {
            tx.execute_batch(SCHEMA_V6).map_err(backend)?;
        }
        if version < SCHEMA_VERSION {
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)
                .map_err(backend)?;
        }
        tx.commit().map_err(backend)?;
    }
    Ok(conn)
}
