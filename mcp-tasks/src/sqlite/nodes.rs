//! The node registry (contract rule 24) in SQLite: the table `nodes`, one row per node
//! id, each operation one `BEGIN IMMEDIATE` transaction. The table is created by the
//! first registry operation on a file (`CREATE TABLE IF NOT EXISTS`), so a file of an
//! earlier schema version gains it without a migration, and a build without the registry
//! never sees it.

use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use super::schema::backend;
use crate::error::StoreError;
use crate::node::{FORGET_AFTER_MS, LOST_AFTER_BEATS, NodeBeat, NodeRecord, NodeState};
use crate::record::Millis;

const TABLE: &str = "
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY NOT NULL,
    role TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    interval_ms INTEGER NOT NULL,
    drain_requested INTEGER NOT NULL,
    drained INTEGER NOT NULL
)";

/// The columns every statement returns, in [`entry`]'s order.
const COLUMNS: &str = "id, role, started_at, heartbeat_at, interval_ms, drain_requested, drained";

/// The condition of an entry forgotten at `?NOW` (`?LOST`: beats, `?FORGET`: ms).
const FORGOTTEN: &str = "nodes.heartbeat_at + ?LOST * nodes.interval_ms + ?FORGET <= ?NOW";

fn entry(row: &Row<'_>, now: Millis) -> rusqlite::Result<NodeRecord> {
    let interval: i64 = row.get(4)?;
    Ok(NodeRecord {
        id: row.get(0)?,
        role: row.get(1)?,
        started_at: row.get(2)?,
        heartbeat_at: row.get(3)?,
        interval_ms: u64::try_from(interval).unwrap_or(1),
        drain_requested: row.get::<_, i64>(5)? != 0,
        drained: row.get::<_, i64>(6)? != 0,
        state: NodeState::Active,
    }
    .settled(now))
}

fn interval(beat: &NodeBeat) -> i64 {
    i64::try_from(beat.interval_ms.max(1)).unwrap_or(i64::MAX)
}

/// Writes `beat` at `now` (backend contract rule 14).
pub(crate) fn beat(
    conn: &mut Connection,
    beat: &NodeBeat,
    now: Millis,
) -> Result<NodeRecord, StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    tx.execute_batch(TABLE).map_err(backend)?;
    // Every right-hand side of the update reads the row as it was.
    let fresh = format!(
        "(?5 OR {})",
        FORGOTTEN
            .replace("?NOW", "?3")
            .replace("?LOST", "?7")
            .replace("?FORGET", "?8")
    );
    let sql = format!(
        "INSERT INTO nodes ({COLUMNS}) VALUES (?1, ?2, ?3, ?3, ?4, 0, 0)
         ON CONFLICT (id) DO UPDATE SET
             started_at = CASE WHEN {fresh} THEN ?3 ELSE nodes.started_at END,
             drain_requested = CASE WHEN {fresh} THEN 0 ELSE nodes.drain_requested END,
             drained = CASE WHEN {fresh} THEN 0 ELSE (nodes.drain_requested AND ?6) END,
             role = ?2, heartbeat_at = ?3, interval_ms = ?4
         RETURNING {COLUMNS}"
    );
    let record = tx
        .query_row(
            &sql,
            params![
                beat.id,
                beat.role,
                now,
                interval(beat),
                beat.starting,
                beat.drained,
                LOST_AFTER_BEATS,
                FORGET_AFTER_MS
            ],
            |row| entry(row, now),
        )
        .map_err(backend)?;
    tx.commit().map_err(backend)?;
    Ok(record)
}

/// Raises the drain flag of `id` (backend contract rule 14).
pub(crate) fn drain(
    conn: &mut Connection,
    id: &str,
    now: Millis,
) -> Result<NodeRecord, StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    tx.execute_batch(TABLE).map_err(backend)?;
    let sql = format!(
        "UPDATE nodes SET drain_requested = 1 WHERE id = ?1 AND NOT ({})
         RETURNING {COLUMNS}",
        FORGOTTEN
            .replace("?NOW", "?2")
            .replace("?LOST", "?3")
            .replace("?FORGET", "?4")
    );
    let record = tx
        .query_row(
            &sql,
            params![id, now, LOST_AFTER_BEATS, FORGET_AFTER_MS],
            |row| entry(row, now),
        )
        .optional()
        .map_err(backend)?;
    tx.commit().map_err(backend)?;
    record.ok_or(StoreError::NotFound)
}

/// Removes the entries forgotten at `now` and returns the rest, by id.
pub(crate) fn list(conn: &mut Connection, now: Millis) -> Result<Vec<NodeRecord>, StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    tx.execute_batch(TABLE).map_err(backend)?;
    let forgotten = FORGOTTEN
        .replace("?NOW", "?1")
        .replace("?LOST", "?2")
        .replace("?FORGET", "?3");
    tx.execute(
        &format!("DELETE FROM nodes WHERE {forgotten}"),
        params![now, LOST_AFTER_BEATS, FORGET_AFTER_MS],
    )
    .map_err(backend)?;
    let records = {
        let mut stmt = tx
            .prepare(&format!("SELECT {COLUMNS} FROM nodes ORDER BY id"))
            .map_err(backend)?;
        let rows = stmt.query_map([], |row| entry(row, now)).map_err(backend)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(backend)?
    };
    tx.commit().map_err(backend)?;
    Ok(records)
}
