//! Names derived from the schema, the embedded migrations, and applying them on connect.
//!
//! Each migration's SQL is a file in `migrations/`, `NNNN_what.sql` for version `NNNN`,
//! embedded with `include_str!`; its doc comment here says what it changes and why.

use tokio_postgres::Client;

use crate::error::{BackendError, IntoStoreError, StoreError};

/// PostgreSQL's identifier length limit (`NAMEDATALEN - 1`).
const MAX_IDENT: usize = 63;

/// One migration: applied in order, each once, inside the connect transaction.
struct Migration {
    version: i32,
    sql: &'static str,
}

/// Version 1. `record` is the whole [`TaskRecord`](crate::TaskRecord) as JSON text (not
/// `jsonb`: text keeps every byte, key order and `\u0000` escapes exactly); the other
/// columns copy its fields for the indexes. `live` is true while the task is unfinished;
/// `lease_expires_at` is set only for unfinished tasks holding a lease. `live_counts` and
/// `counters` keep the unfinished tasks per owner and in total, updated in the same
/// transactions as `tasks`. Ids use the "C" collation: bytewise order, as the list cursor
/// and the other backends have it. Owners are their UTF-8 bytes (`bytea`), because a
/// principal may contain NUL, which PostgreSQL text refuses.
const V1: &str = include_str!("migrations/0001_tasks.sql");

/// Version 2: `queued_tool` is the tool of a task waiting for a worker
/// ([`TaskRecord::queued_tool`](crate::TaskRecord::queued_tool)), NULL otherwise; claims
/// read the waiting tasks in creation order through `tasks_queued`. Rows of version 1
/// hold no job, so NULL is right for all of them.
const V2: &str = include_str!("migrations/0002_queued_tool.sql");

/// Version 3: MCP 2025-11-25 session records ([`SessionRecord`](crate::SessionRecord)
/// as JSON text); `last_seen` and `expires_at` (`last_seen + idle_ms`) kept apart so a
/// touch is one `UPDATE` that does not rewrite the record.
const V3: &str = include_str!("migrations/0003_sessions.sql");

/// How many rows each live count is spread over (see [`V4`], whose SQL spells it out).
pub(crate) const SHARDS: i32 = 16;

/// Version 4: live counts spread over [`SHARDS`] rows each, and one statement per write.
///
/// Before, every create and every terminal write of the whole deployment updated the one
/// `counters` row (and its owner's `live_counts` row) and held its lock until its commit
/// was flushed: one WAL flush at a time, about 560 task lifecycles a second on a 2-core
/// machine. Now an owner's count, and the total (owner `\xff`, which no UTF-8 owner can
/// be), is kept in up to 16 rows, shard `i` holding at most `max / 16` (plus one for the
/// first `max % 16` shards): a create takes one unit in a shard with room that no other
/// create holds (`FOR UPDATE SKIP LOCKED`), runs again shortly when all are held, and is
/// refused only when every shard is full, that is when the count is at the limit. So the
/// limits stay exact while 16 writers flush at once. The task row names its shards
/// (`owner_slot`, `total_slot`) so its terminal write gives back the same units.
///
/// `revision` copies the record's revision: a write is one `save_task` call that updates
/// the row only if its revision is the one read (compare-and-set), releases the units
/// when the task finishes, and queues the notifications; a create is one `create_task`
/// call. Each runs as a single statement, its own transaction: no lock is held across a
/// round trip to the client.
///
/// Existing live tasks are spread over the shards in creation order, and the counts
/// rebuilt from the rows. Instances of an older build must be stopped first: they write
/// `counters`, which is gone.
const V4: &str = include_str!("migrations/0004_sharded_counts.sql");

/// Version 5: a create is refused also when the scope's committed units already reach
/// the limit. Each shard's share comes from the limit the writer has now; after the limit
/// was lowered (or while instances of a rolling change disagree on it), shards filled
/// under the old limit while others stayed empty would let the empty ones take more: with
/// 2 live tasks in one shard and a new limit of 4, three more creates fit, not two. The
/// sum is a read of at most 16 rows; concurrent creates may each pass it, but no shard
/// ever goes past its share, so an unchanged limit stays exact as before. Version 4's
/// `take_slot` is kept as `take_shard`, behind the check.
const V5: &str = include_str!("migrations/0005_limit_sum_check.sql");

/// Version 6: writes in batches. A handle gathers the creates, and the changes, that
/// its callers make at once and sends each group as one statement, one transaction, one
/// commit (group commit; see `batch.rs`): per lifecycle that is about a third of the
/// database's CPU of one statement and one flush per write.
///
/// `take_units` takes many units of one count at once, as many from a shard as its
/// share has room for, under the same rules as `take_slot` (version 5's sum check, then
/// shards with room no other writer holds, never waiting for one). It never inserts a
/// shard row: a transaction holding rows of its own that waits for another's insert of
/// the same row can deadlock with it (seen with two batches inserting one scope's 16
/// rows in the same order), so the caller makes missing rows one per statement, each
/// its own transaction holding nothing else, and runs the batch again. `create_tasks`
/// counts the owners (in byte order), then the total, and stores the tasks that got
/// both units, in one statement; each task's outcome comes back in its place: 0 stored,
/// 1 the owner's limit, 2 the total's, 3 busy (every shard with room is held by another
/// writer: again, shortly), 4 the owner's count and 5 the total's lack shard rows
/// (make them, then again). `save_tasks`
/// is `save_task` for many tasks: it locks their rows in id order first, then gives back
/// the units of the ones that just finished, grouped by shard in (scope, shard) order,
/// so batches waiting for each other's rows always wait in one order. The functions of
/// version 4 stay: claims still write through `save_task`.
const V6: &str = include_str!("migrations/0006_batches.sql");

/// Version 7: a sweep is one statement (`sweep_expired`), so it holds its locks (the
/// expired task rows, the count shards it gives units back to) for that statement only.
/// It was a transaction of many round trips (the delete, one update per shard, the
/// removal of empty shards), and a batch of changes waiting for one of those shards
/// waited for all of them. The advisory lock that serializes sweeps is taken inside, for
/// the statement's transaction. Task rows other writes hold are passed over (swept next
/// time); shards are given back in (scope, shard) order, as every write takes them; empty
/// shards that no write holds go. The unfinished tasks it removed come back (owners and
/// ids), with the count of all removed.
const V7: &str = include_str!("migrations/0007_sweep.sql");

/// Version 8: the operator's view (contract rule 22). `status`, `tool` and
/// `lease_holder` are stored columns generated from the record (so every write keeps them
/// true without a change to the functions that write), indexed in creation order, with
/// all tasks in creation order: an operator listing walks one of these backwards (or the
/// owner's of version 1), never every row; the counts are a grouped pass over the
/// tasks. Adding stored generated columns rewrites the table once, under its
/// lock, at the upgrade; rows of every earlier version get their values then.
const V8: &str = include_str!("migrations/0008_operator.sql");

/// Version 9: task logs (contract rule 13 of [`Backend`](crate::Backend)). `task_log`
/// holds the entries, `(task_id, seq)` its key, removed with their task row by
/// `ON DELETE CASCADE` (the sweep's, or any other removal); each entry's payload is its
/// JSON text (not `jsonb`, which refuses `\u0000`), its `size` the one Rust computes
/// ([`LogEntry::size`](crate::LogEntry::size)). The task row counts for its log:
/// `log_next` (the next seq), `log_first` (the earliest kept) and `log_bytes` (the sizes
/// kept), so numbering and retention read no entry in the common case.
///
/// A record's write and its entries are one statement: `create_logged_tasks` and
/// `save_logged_tasks` are version 6's `create_tasks` and `save_tasks` with the entries
/// of each row (flat arrays: the row, the offset in it, the columns), numbered from the
/// row's `log_next` as the compare-and-set moves it, so an entry is written if and only
/// if its record is. A tool's entries are one `append_log` statement: an `UPDATE` of the
/// row's counters (its lock numbers concurrent appends and writes of the task without
/// gaps) that refuses a finished, expired or another owner's task, then the `INSERT`.
/// `trim_log` drops the oldest entries past the limits (never the newest), only for the
/// tasks whose counters say they passed them. Version 6's functions stay (an instance
/// of the previous build still running writes records without entries). The statements
/// can run again over their own work (`IF NOT EXISTS`, `OR REPLACE`).
const V9: &str = include_str!("migrations/0009_task_logs.sql");

/// Version 10: `status`, `tool` and `lease_holder` are ordinary columns that the writer
/// fills from the record it encodes, no longer generated from the JSON: parsing the
/// record on every insert and update cost the database about 40 µs of CPU per task
/// lifecycle, the largest part of its writes. `DROP EXPRESSION` keeps the stored values
/// and the indexes of version 8 (no rewrite). `create_tasks_v10` and `save_tasks_v10`
/// are version 9's `create_logged_tasks` and `save_logged_tasks` with the three columns
/// of each row; they also set `derived_revision` to the row's revision.
///
/// New names, not `OR REPLACE`: during a rolling upgrade instances of the previous build
/// still call the functions of version 9 (and 6 and 4) with their old arguments, which
/// stay as they were. Their rows get the columns from the record as before, from the
/// triggers `tasks_derive_inserted` and `tasks_derive_updated`: an insert that leaves
/// `derived_revision` NULL, or an update of `record` that leaves it unchanged, is an
/// older function's, and the record is parsed for it; the rows of this version's
/// functions pass the triggers' `WHEN` conditions without a call. The statements can run
/// again over their own work.
const V10: &str = include_str!("migrations/0010_written_columns.sql");

/// Version 11: the node registry (contract rule 24), the table `nodes`, one row per node
/// id written by its heartbeats (`nodes.rs`). Nothing else changes: older builds never
/// read it.
const V11: &str = include_str!("migrations/0011_nodes.sql");

/// Version 12: idempotency keys (contract rule 25), the table `idempotency_keys`, one row
/// per `(owner, key)`, claimed by `claim_idempotency_key` in the transaction of a keyed
/// create (which stores its task with `create_tasks_v10`, one row), and removed with
/// their tasks by a statement trigger. Nothing else changes: older builds never read it.
const V12: &str = include_str!("migrations/0012_idempotency.sql");

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: V1,
    },
    Migration {
        version: 2,
        sql: V2,
    },
    Migration {
        version: 3,
        sql: V3,
    },
    Migration {
        version: 4,
        sql: V4,
    },
    Migration {
        version: 5,
        sql: V5,
    },
    Migration {
        version: 6,
        sql: V6,
    },
    Migration {
        version: 7,
        sql: V7,
    },
    Migration {
        version: 8,
        sql: V8,
    },
    Migration {
        version: 9,
        sql: V9,
    },
    Migration {
        version: 10,
        sql: V10,
    },
    Migration {
        version: 11,
        sql: V11,
    },
    Migration {
        version: 12,
        sql: V12,
    },
];

/// The newest schema version this build knows.
pub(crate) const SCHEMA_VERSION: i32 = 12;

pub(crate) fn backend(e: impl IntoStoreError) -> StoreError {
    e.into_store_error()
}

/// A database error with the server's message (tokio-postgres shows only "db error").
pub(crate) fn pg(e: tokio_postgres::Error) -> StoreError {
    e.into_store_error()
}

/// SQLSTATE codes that pass: the connection's failures (class 08), the server shutting
/// down or starting (57P01..57P03), too many connections (53300), a serialization failure
/// or deadlock (40001, 40P01), and a read-only transaction (25006, what a write meets on
/// a replica during a failover).
fn transient_state(code: &str) -> bool {
    code.starts_with("08")
        || matches!(
            code,
            "57P01" | "57P02" | "57P03" | "53300" | "40001" | "40P01" | "25006"
        )
}

/// tokio-postgres' failures that pass: a closed connection, an I/O error (refused,
/// reset, timed out), a timeout waiting for the server, or a transient SQLSTATE.
impl IntoStoreError for tokio_postgres::Error {
    fn into_store_error(self) -> StoreError {
        if let Some(db) = self.as_db_error() {
            let code = db.code().code();
            let message = format!("PostgreSQL error {code}: {}", db.message());
            let transient = transient_state(code);
            let e = BackendError::with_source(message, self);
            return if transient {
                StoreError::Unavailable(e)
            } else {
                StoreError::Backend(e)
            };
        }
        let io = std::error::Error::source(&self)
            .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some());
        let mut shown = self.to_string();
        let transient = self.is_closed() || io || shown.starts_with("timeout");
        // tokio-postgres says "error connecting to server" and keeps the cause apart.
        if let Some(cause) = std::error::Error::source(&self) {
            shown = format!("{shown}: {cause}");
        }
        let e = BackendError::with_source(format!("PostgreSQL: {shown}"), self);
        if transient {
            StoreError::Unavailable(e)
        } else {
            StoreError::Backend(e)
        }
    }
}

/// The pool's failures: a wait or connect timeout passes, so does what the database
/// said when it passes; a closed pool does not.
impl IntoStoreError for deadpool_postgres::PoolError {
    fn into_store_error(self) -> StoreError {
        use deadpool_postgres::PoolError;
        match self {
            PoolError::Backend(e) => e.into_store_error(),
            PoolError::Timeout(kind) => StoreError::Unavailable(BackendError::new(format!(
                "PostgreSQL: no connection from the pool ({kind:?} timed out)"
            ))),
            other => StoreError::Backend(BackendError::new(format!("PostgreSQL pool: {other}"))),
        }
    }
}

impl IntoStoreError for deadpool_postgres::BuildError {
    fn into_store_error(self) -> StoreError {
        StoreError::Backend(BackendError::with_source(
            format!("PostgreSQL pool: {self}"),
            self,
        ))
    }
}

/// Checks a schema name: lowercase ASCII letters, digits and `_`, not starting with a
/// digit, at most 63 bytes. Such a name never needs quoting.
pub(crate) fn check_schema(name: &str) -> Result<(), StoreError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_IDENT
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(backend(format!(
            "invalid PostgreSQL schema name {name:?}: use 1 to 63 of [a-z0-9_], not starting \
             with a digit"
        )))
    }
}

/// 64-bit FNV-1a: stable across builds and processes (unlike std's hashers).
pub(crate) fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The `LISTEN`/`NOTIFY` channel of a schema: `{schema}_events`, shortened with a hash
/// when that would pass the identifier limit. Every handle on the schema derives the same.
pub(crate) fn channel(schema: &str) -> String {
    let name = format!("{schema}_events");
    if name.len() <= MAX_IDENT {
        return name;
    }
    let head: String = schema.chars().take(40).collect();
    format!("{head}_{:016x}_ev", fnv1a(schema))
}

/// Brings `schema` to [`SCHEMA_VERSION`] in one transaction under a transaction-scoped
/// advisory lock, so instances starting at once apply each migration exactly once. A
/// schema written by a newer build is refused.
pub(crate) async fn migrate(client: &mut Client, schema: &str) -> Result<(), StoreError> {
    let tx = client.transaction().await.map_err(pg)?;
    let lock_key = i64::from_ne_bytes(fnv1a(&format!("mcp_tasks.migrate.{schema}")).to_ne_bytes());
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock_key])
        .await
        .map_err(pg)?;
    let exists: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
            &[&schema],
        )
        .await
        .map_err(pg)?
        .try_get(0)
        .map_err(pg)?;
    if !exists {
        tx.batch_execute(&format!("CREATE SCHEMA {schema}"))
            .await
            .map_err(|e| backend(format!("cannot create schema {schema}: {e}")))?;
    }
    tx.batch_execute(&format!(
        "SET LOCAL search_path TO {schema};
         CREATE TABLE IF NOT EXISTS schema_version (
             version INTEGER PRIMARY KEY,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         );"
    ))
    .await
    .map_err(pg)?;
    let current: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM schema_version", &[])
        .await
        .map_err(pg)?
        .try_get(0)
        .map_err(pg)?;
    if current > SCHEMA_VERSION {
        return Err(backend(format!(
            "PostgreSQL schema {schema}: task store schema version {current} is newer than this \
             build of mcp-tasks supports (up to {SCHEMA_VERSION}); upgrade mcp-tasks to use it"
        )));
    }
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        tx.batch_execute(m.sql)
            .await
            .map_err(|e| backend(format!("schema {schema}: migration {}: {e}", m.version)))?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES ($1)",
            &[&m.version],
        )
        .await
        .map_err(pg)?;
    }
    tx.commit().await.map_err(pg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_and_channels() {
        assert!(check_schema("mcp_tasks").is_ok());
        for bad in ["", "1abc", "Abc", "a-b", "a b", "a\"b", &"x".repeat(64)] {
            assert!(check_schema(bad).is_err(), "{bad}");
        }
        assert_eq!(channel("mcp_tasks"), "mcp_tasks_events");
        let long = "k".repeat(63);
        let c = channel(&long);
        assert!(c.len() <= MAX_IDENT, "{c}");
        assert_ne!(c, channel(&"k".repeat(62)));
        assert_eq!(c, channel(&long));
    }

    #[test]
    fn migrations_are_ordered_and_end_at_the_version() {
        let versions: Vec<i32> = MIGRATIONS.iter().map(|m| m.version).collect();
        assert!(versions.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(versions.last(), Some(&SCHEMA_VERSION));
    }
}
