//! The node registry (contract rule 24) in SQLite: the table `nodes` (schema version 6),
//! one row per node id, each operation one `BEGIN IMMEDIATE` transaction of statements
//! prepared once per connection (`prepare_cached`).

use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, named_params};

use super::schema::backend;
use crate::error::StoreError;
use crate::node::{FORGET_AFTER_MS, LOST_AFTER_BEATS, NodeBeat, NodeRecord, NodeState};
use crate::record::Millis;

/// The columns every statement returns, in [`entry`]'s order.
macro_rules! columns {
    () => {
        "id, role, started_at, heartbeat_at, interval_ms, drain_requested, drained"
    };
}

/// The condition of an entry forgotten at `:now` (`:lost`: beats, `:forget`: ms).
macro_rules! forgotten {
    () => {
        "nodes.heartbeat_at + :lost * nodes.interval_ms + :forget <= :now"
    };
}

/// A beat: a new (or forgotten, or `:starting`) node starts afresh; a known one keeps
/// its start and drain flag. Every right-hand side reads the row as it was.
const BEAT: &str = concat!(
    "INSERT INTO nodes (",
    columns!(),
    ") VALUES (:id, :role, :now, :now, :interval, 0, 0)
     ON CONFLICT (id) DO UPDATE SET
         started_at = CASE WHEN (:starting OR ",
    forgotten!(),
    ") THEN :now ELSE nodes.started_at END,
         drain_requested = CASE WHEN (:starting OR ",
    forgotten!(),
    ") THEN 0 ELSE nodes.drain_requested END,
         drained = CASE WHEN (:starting OR ",
    forgotten!(),
    ") THEN 0 ELSE (nodes.drain_requested AND :drained) END,
         role = :role, heartbeat_at = :now, interval_ms = :interval
     RETURNING ",
    columns!()
);

/// Raises the drain flag of a node not forgotten.
const DRAIN: &str = concat!(
    "UPDATE nodes SET drain_requested = 1 WHERE id = :id AND NOT (",
    forgotten!(),
    ") RETURNING ",
    columns!()
);

const FORGET: &str = concat!("DELETE FROM nodes WHERE ", forgotten!());

const LIST: &str = concat!("SELECT ", columns!(), " FROM nodes ORDER BY id");

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

/// Runs `f` in one `BEGIN IMMEDIATE` transaction, committed when it succeeds.
fn immediate<T>(
    conn: &mut Connection,
    f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
) -> Result<T, StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    let out = f(&tx).map_err(backend)?;
    tx.commit().map_err(backend)?;
    Ok(out)
}

/// Writes `beat` at `now` (backend contract rule 14).
pub(crate) fn beat(
    conn: &mut Connection,
    beat: &NodeBeat,
    now: Millis,
) -> Result<NodeRecord, StoreError> {
    let interval = i64::try_from(beat.interval_ms.max(1)).unwrap_or(i64::MAX);
    immediate(conn, |tx| {
        tx.prepare_cached(BEAT)?.query_row(
            named_params! {
                ":id": beat.id,
                ":role": beat.role,
                ":now": now,
                ":interval": interval,
                ":starting": beat.starting,
                ":drained": beat.drained,
                ":lost": LOST_AFTER_BEATS,
                ":forget": FORGET_AFTER_MS,
            },
            |row| entry(row, now),
        )
    })
}

/// Raises the drain flag of `id` (backend contract rule 14).
pub(crate) fn drain(
    conn: &mut Connection,
    id: &str,
    now: Millis,
) -> Result<NodeRecord, StoreError> {
    let record = immediate(conn, |tx| {
        tx.prepare_cached(DRAIN)?
            .query_row(
                named_params! {
                    ":id": id,
                    ":now": now,
                    ":lost": LOST_AFTER_BEATS,
                    ":forget": FORGET_AFTER_MS,
                },
                |row| entry(row, now),
            )
            .optional()
    })?;
    record.ok_or(StoreError::NotFound)
}

/// Removes the entries forgotten at `now` and returns the rest, by id.
pub(crate) fn list(conn: &mut Connection, now: Millis) -> Result<Vec<NodeRecord>, StoreError> {
    immediate(conn, |tx| {
        tx.prepare_cached(FORGET)?.execute(named_params! {
            ":now": now,
            ":lost": LOST_AFTER_BEATS,
            ":forget": FORGET_AFTER_MS,
        })?;
        let mut stmt = tx.prepare_cached(LIST)?;
        let rows = stmt.query_map([], |row| entry(row, now))?;
        rows.collect()
    })
}
