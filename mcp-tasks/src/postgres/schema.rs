//! Names derived from the schema, the embedded migrations, and applying them on connect.

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
const V1: &str = r#"
CREATE TABLE tasks (
    id TEXT COLLATE "C" PRIMARY KEY,
    owner BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    live BOOLEAN NOT NULL,
    lease_expires_at BIGINT,
    record TEXT NOT NULL
);
CREATE INDEX tasks_by_owner ON tasks (owner, created_at, id);
CREATE INDEX tasks_by_expiry ON tasks (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX tasks_by_lease ON tasks (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
CREATE TABLE live_counts (
    owner BYTEA PRIMARY KEY,
    live BIGINT NOT NULL
);
CREATE TABLE counters (
    name TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO counters (name, value) VALUES ('live_total', 0);
"#;

/// Version 2: `queued_tool` is the tool of a task waiting for a worker
/// ([`TaskRecord::queued_tool`](crate::TaskRecord::queued_tool)), NULL otherwise; claims
/// read the waiting tasks in creation order through `tasks_queued`. Rows of version 1
/// hold no job, so NULL is right for all of them.
const V2: &str = r#"
ALTER TABLE tasks ADD COLUMN queued_tool TEXT;
CREATE INDEX tasks_queued ON tasks (created_at, id) WHERE queued_tool IS NOT NULL;
"#;

/// Version 3: MCP 2025-11-25 session records ([`SessionRecord`](crate::SessionRecord)
/// as JSON text); `last_seen` and `expires_at` (`last_seen + idle_ms`) kept apart so a
/// touch is one `UPDATE` that does not rewrite the record.
const V3: &str = r#"
CREATE TABLE sessions (
    id TEXT COLLATE "C" PRIMARY KEY,
    last_seen BIGINT NOT NULL,
    idle_ms BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);
"#;

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
];

/// The newest schema version this build knows.
pub(crate) const SCHEMA_VERSION: i32 = 3;

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
