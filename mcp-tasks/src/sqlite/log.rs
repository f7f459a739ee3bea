//! Task logs (contract rule 23) in SQL, schema version 4: the entries are rows of
//! `task_log`, the bounds and the bytes kept are columns of the task's row ([`LogState`]),
//! written by the caller in the same transaction as the entries.

use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::schema::backend;
use crate::error::StoreError;
use crate::limits::Limits;
use crate::log::{Actor, LogDraft, LogEntry, LogPage};
use crate::operator::parse_status;
use crate::record::{Millis, Owner, TaskId};

/// A task's log as its row keeps it (`log_first`, `log_next`, `log_bytes`): the earliest
/// `seq` kept (equal to `next` when none is), the next `seq`, and the sizes kept summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LogState {
    first: i64,
    next: i64,
    bytes: i64,
}

impl LogState {
    /// The state in the columns of `row` from `at` on (`log_first, log_next, log_bytes`).
    pub(crate) fn read(row: &Row<'_>, at: usize) -> rusqlite::Result<LogState> {
        Ok(LogState {
            first: row.get(at)?,
            next: row.get(at + 1)?,
            bytes: row.get(at + 2)?,
        })
    }

    /// The values of `log_first, log_next, log_bytes`, for a statement writing them.
    pub(crate) fn columns(self) -> (i64, i64, i64) {
        (self.first, self.next, self.bytes)
    }
}

fn seq(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Writes `drafts` as the next entries of task `id`'s log at `now`, then drops the oldest
/// past the limits (never the newest). Returns the log after, which the caller writes on
/// the task's row in the same transaction.
pub(crate) fn append(
    conn: &Connection,
    id: &TaskId,
    mut log: LogState,
    drafts: Vec<LogDraft>,
    now: Millis,
    limits: &Limits,
) -> Result<LogState, StoreError> {
    if drafts.is_empty() {
        return Ok(log);
    }
    let mut st = conn
        .prepare_cached(
            "INSERT INTO task_log (task_id, seq, type, payload, at, node, actor, size)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )
        .map_err(backend)?;
    for draft in drafts {
        let payload = serde_json::to_string(&draft.payload).map_err(backend)?;
        // The text stored is the compact JSON LogEntry::size counts: no second encoding.
        let size = draft.kind.len() + payload.len();
        debug_assert_eq!(size, draft.size());
        st.execute(params![
            id.as_str(),
            log.next,
            draft.kind,
            payload,
            now,
            draft.node.as_deref(),
            draft.actor.as_str(),
            int(size),
        ])
        .map_err(backend)?;
        log.next += 1;
        log.bytes = log.bytes.saturating_add(int(size));
    }
    trim(conn, id, log, limits)
}

/// Drops the oldest entries while the log holds more than the limits allow, keeping the
/// newest. Within the limits (the usual case) it runs no statement.
fn trim(
    conn: &Connection,
    id: &TaskId,
    mut log: LogState,
    limits: &Limits,
) -> Result<LogState, StoreError> {
    let (max_entries, max_bytes) = (int(limits.max_log_entries), int(limits.max_log_bytes));
    let over = |log: &LogState| {
        log.next - log.first > 1 && (log.next - log.first > max_entries || log.bytes > max_bytes)
    };
    if !over(&log) {
        return Ok(log);
    }
    // Only the sizes of the entries that go are read, oldest first.
    {
        let mut st = conn
            .prepare_cached(
                "SELECT seq, size FROM task_log WHERE task_id = ?1 AND seq >= ?2 ORDER BY seq",
            )
            .map_err(backend)?;
        let mut rows = st.query(params![id.as_str(), log.first]).map_err(backend)?;
        while over(&log) {
            let Some(row) = rows.next().map_err(backend)? else {
                return Err(backend(format!(
                    "task {id}: its log holds fewer entries than its row counts"
                )));
            };
            let (dropped, size): (i64, i64) =
                (row.get(0).map_err(backend)?, row.get(1).map_err(backend)?);
            log.first = dropped + 1;
            log.bytes -= size;
        }
    }
    conn.prepare_cached("DELETE FROM task_log WHERE task_id = ?1 AND seq < ?2")
        .and_then(|mut st| st.execute(params![id.as_str(), log.first]))
        .map_err(backend)?;
    Ok(log)
}

/// Appends a tool's `drafts` to the log of the owner's unfinished task visible at `now`,
/// leaving the record as it is; returns the `seq` of the last.
pub(crate) fn append_to_task(
    conn: &Connection,
    owner: &Owner,
    id: &TaskId,
    drafts: Vec<LogDraft>,
    now: Millis,
    limits: &Limits,
) -> Result<u64, StoreError> {
    if drafts.is_empty() {
        return Err(backend("nothing to append"));
    }
    // The status is read out of the record only for a finished task, to name it.
    let found: Option<(bool, Option<String>, LogState)> = conn
        .prepare_cached(
            "SELECT live, CASE WHEN live THEN NULL ELSE status END,
                    log_first, log_next, log_bytes
             FROM tasks
             WHERE id = ?1 AND owner = ?2 AND (expires_at IS NULL OR expires_at > ?3)",
        )
        .and_then(|mut st| {
            st.query_row(params![id.as_str(), owner.as_str(), now], |row| {
                Ok((row.get(0)?, row.get(1)?, LogState::read(row, 2)?))
            })
            .optional()
        })
        .map_err(backend)?;
    let (live, status, log) = found.ok_or(StoreError::NotFound)?;
    if !live {
        let status = status
            .as_deref()
            .and_then(parse_status)
            .ok_or_else(|| backend(format!("task {id}: a finished row with status {status:?}")))?;
        return Err(StoreError::Terminal { status });
    }
    let log = append(conn, id, log, drafts, now, limits)?;
    let (first, next, bytes) = log.columns();
    conn.prepare_cached(
        "UPDATE tasks SET log_first = ?2, log_next = ?3, log_bytes = ?4 WHERE id = ?1",
    )
    .and_then(|mut st| st.execute(params![id.as_str(), first, next, bytes]))
    .map_err(backend)?;
    Ok(seq(next - 1))
}

/// At most `limit` entries of the log of the owner's task visible at `now`, after
/// `after` (from the earliest kept when `None`).
pub(crate) fn read(
    conn: &mut Connection,
    owner: &Owner,
    id: &TaskId,
    now: Millis,
    after: Option<u64>,
    limit: usize,
) -> Result<LogPage, StoreError> {
    // One snapshot: the bounds and the entries agree while another connection appends
    // and trims.
    let tx = conn.transaction().map_err(backend)?;
    let bounds: Option<(i64, i64)> = tx
        .prepare_cached(
            "SELECT log_first, log_next FROM tasks
             WHERE id = ?1 AND owner = ?2 AND (expires_at IS NULL OR expires_at > ?3)",
        )
        .and_then(|mut st| {
            st.query_row(params![id.as_str(), owner.as_str(), now], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()
        })
        .map_err(backend)?;
    let (first, next) = bounds.ok_or(StoreError::NotFound)?;
    let from = after
        .map_or(first, |a| {
            i64::try_from(a.saturating_add(1)).unwrap_or(i64::MAX)
        })
        .max(first);
    let mut entries = Vec::new();
    {
        let mut st = tx
            .prepare_cached(
                "SELECT seq, type, payload, at, node, actor FROM task_log
                 WHERE task_id = ?1 AND seq >= ?2
                 ORDER BY seq
                 LIMIT ?3",
            )
            .map_err(backend)?;
        let rows = st
            .query_map(params![id.as_str(), from, int(limit.max(1))], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, Millis>(3)?,
                    row.get::<_, Option<String>>(4)?,
                    row.get::<_, String>(5)?,
                ))
            })
            .map_err(backend)?;
        for row in rows {
            let (number, kind, payload, at, node, actor) = row.map_err(backend)?;
            entries.push(LogEntry {
                seq: seq(number),
                payload: serde_json::from_str(&payload)
                    .map_err(|e| backend(format!("corrupt log entry of task {id}: {e}")))?,
                actor: parse_actor(&actor).ok_or_else(|| {
                    backend(format!(
                        "log entry of task {id} by an unknown actor {actor:?}"
                    ))
                })?,
                kind,
                at,
                node: node.map(Arc::from),
            });
        }
    }
    tx.commit().map_err(backend)?;
    Ok(LogPage {
        entries,
        earliest: seq(first),
        next: seq(next),
    })
}

fn parse_actor(name: &str) -> Option<Actor> {
    [Actor::Owner, Actor::Operator, Actor::Worker, Actor::Server]
        .into_iter()
        .find(|a| a.as_str() == name)
}
