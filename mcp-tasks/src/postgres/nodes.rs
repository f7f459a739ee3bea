//! The node registry (contract rule 24) in PostgreSQL: the table `nodes` (migration 11),
//! one row per node id; a heartbeat is one upsert, a drain one update, a listing one
//! delete of the forgotten rows and one read.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::schema::pg;
use crate::error::StoreError;
use crate::node::{FORGET_AFTER_MS, LOST_AFTER_BEATS, NodeBeat, NodeRecord, NodeState};
use crate::record::Millis;

/// The columns every statement returns, in [`entry`]'s order.
const COLUMNS: &str = "id, role, started_at, heartbeat_at, interval_ms, drain_requested, drained";

fn entry(row: &Row, now: Millis) -> Result<NodeRecord, StoreError> {
    let interval: i64 = row.try_get(4).map_err(pg)?;
    Ok(NodeRecord {
        id: row.try_get(0).map_err(pg)?,
        role: row.try_get(1).map_err(pg)?,
        started_at: row.try_get(2).map_err(pg)?,
        heartbeat_at: row.try_get(3).map_err(pg)?,
        interval_ms: u64::try_from(interval).unwrap_or(1),
        drain_requested: row.try_get(5).map_err(pg)?,
        drained: row.try_get(6).map_err(pg)?,
        state: NodeState::Active,
    }
    .settled(now))
}

/// The condition of the row `nodes` forgotten at `$now` (its parameter numbers given).
fn forgotten(now: usize, lost: usize, forget: usize) -> String {
    format!("nodes.heartbeat_at + ${lost} * nodes.interval_ms + ${forget} <= ${now}")
}

/// Writes `beat` at `now` (backend contract rule 14).
pub(crate) async fn beat<C: GenericClient>(
    c: &C,
    beat: &NodeBeat,
    now: Millis,
) -> Result<NodeRecord, StoreError> {
    let interval = i64::try_from(beat.interval_ms.max(1)).unwrap_or(i64::MAX);
    // Every right-hand side of the update reads the row as it was.
    let fresh = format!("($5 OR {})", forgotten(3, 7, 8));
    let sql = format!(
        "INSERT INTO nodes ({COLUMNS}) VALUES ($1, $2, $3, $3, $4, false, false)
         ON CONFLICT (id) DO UPDATE SET
             started_at = CASE WHEN {fresh} THEN $3 ELSE nodes.started_at END,
             drain_requested = CASE WHEN {fresh} THEN false ELSE nodes.drain_requested END,
             drained = CASE WHEN {fresh} THEN false ELSE (nodes.drain_requested AND $6) END,
             role = $2, heartbeat_at = $3, interval_ms = $4
         RETURNING {COLUMNS}"
    );
    let row = c
        .query_one(
            &sql,
            &[
                &beat.id,
                &beat.role,
                &now,
                &interval,
                &beat.starting,
                &beat.drained,
                &LOST_AFTER_BEATS,
                &FORGET_AFTER_MS,
            ],
        )
        .await
        .map_err(pg)?;
    entry(&row, now)
}

/// Raises the drain flag of `id` (backend contract rule 14).
pub(crate) async fn drain<C: GenericClient>(
    c: &C,
    id: &str,
    now: Millis,
) -> Result<NodeRecord, StoreError> {
    let sql = format!(
        "UPDATE nodes SET drain_requested = true WHERE id = $1 AND NOT ({})
         RETURNING {COLUMNS}",
        forgotten(2, 3, 4)
    );
    let row = c
        .query_opt(&sql, &[&id, &now, &LOST_AFTER_BEATS, &FORGET_AFTER_MS])
        .await
        .map_err(pg)?;
    match row {
        Some(row) => entry(&row, now),
        None => Err(StoreError::NotFound),
    }
}

/// Removes the entries forgotten at `now` and returns the rest, by id.
pub(crate) async fn list<C: GenericClient>(
    c: &C,
    now: Millis,
) -> Result<Vec<NodeRecord>, StoreError> {
    c.execute(
        &format!("DELETE FROM nodes WHERE {}", forgotten(1, 2, 3)),
        &[&now, &LOST_AFTER_BEATS, &FORGET_AFTER_MS],
    )
    .await
    .map_err(pg)?;
    let rows = c
        .query(&format!("SELECT {COLUMNS} FROM nodes ORDER BY id"), &[])
        .await
        .map_err(pg)?;
    rows.iter().map(|row| entry(row, now)).collect()
}
