//! The SQL of each operation, on a connection or inside the caller's transaction.

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension, params};

use super::log::{self, LogState};
use super::schema::backend;
use crate::cursor;
use crate::error::StoreError;
use crate::limits::{Limit, Limits};
use crate::log::LogDraft;
use crate::record::{Millis, Owner, SweepReport, TaskId, TaskKey, TaskPage, TaskRecord};
use crate::rules;

/// `lease_expires_at` as stored: only unfinished tasks' leases matter to the sweep.
fn lease_column(rec: &TaskRecord) -> Option<Millis> {
    rec.lease
        .as_ref()
        .filter(|_| !rec.is_terminal())
        .map(|lease| lease.expires_at)
}

fn encode(rec: &TaskRecord) -> Result<String, StoreError> {
    serde_json::to_string(rec).map_err(backend)
}

fn decode(json: &str) -> Result<TaskRecord, StoreError> {
    serde_json::from_str(json).map_err(|e| backend(format!("corrupt task record: {e}")))
}

fn count(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// The owner's task `id` unless it is unknown, another owner's or expired at `now`, with
/// its log's state (read with the record: a write that appends needs it, and it costs
/// no statement of its own).
pub(crate) fn load(
    conn: &Connection,
    owner: &Owner,
    id: &TaskId,
    now: Millis,
) -> Result<Option<(TaskRecord, LogState)>, StoreError> {
    let row: Option<(String, LogState)> = conn
        .prepare_cached(
            "SELECT record, log_first, log_next, log_bytes FROM tasks
             WHERE id = ?1 AND owner = ?2 AND (expires_at IS NULL OR expires_at > ?3)",
        )
        .and_then(|mut st| {
            st.query_row(params![id.as_str(), owner.as_str(), now], |row| {
                Ok((row.get(0)?, LogState::read(row, 1)?))
            })
            .optional()
        })
        .map_err(backend)?;
    row.map(|(json, log)| Ok((decode(&json)?, log))).transpose()
}

/// Writes back a changed record, and its log's state after the entries its write
/// appended ([`log::append`]).
pub(crate) fn save(conn: &Connection, rec: &TaskRecord, log: LogState) -> Result<(), StoreError> {
    let live = !rec.is_terminal();
    let json = encode(rec)?;
    let (first, next, bytes) = log.columns();
    conn.prepare_cached(
        "UPDATE tasks SET live = ?2, lease_expires_at = ?3, record = ?4, queued_tool = ?5,
                          log_first = ?6, log_next = ?7, log_bytes = ?8
         WHERE id = ?1",
    )
    .and_then(|mut st| {
        st.execute(params![
            rec.id.as_str(),
            live,
            lease_column(rec),
            json,
            rec.queued_tool(),
            first,
            next,
            bytes
        ])
    })
    .map_err(backend)?;
    Ok(())
}

/// Inserts a new (unfinished) record if the live-task limits allow it, its log starting
/// with `drafts` written at `now`.
pub(crate) fn insert(
    conn: &Connection,
    rec: &TaskRecord,
    drafts: Vec<LogDraft>,
    now: Millis,
    limits: &Limits,
) -> Result<(), StoreError> {
    let owner = rec.owner.as_str();
    if let Some(idempotency) = &rec.idempotency {
        claim_key(conn, rec, idempotency, now)?;
    }
    let owner_live: i64 = conn
        .prepare_cached("SELECT live FROM live_counts WHERE owner = ?1")
        .and_then(|mut st| st.query_row([owner], |row| row.get(0)).optional())
        .map_err(backend)?
        .unwrap_or(0);
    if count(owner_live) >= limits.max_live_tasks_per_owner {
        return Err(StoreError::LimitExceeded {
            limit: Limit::LiveTasksPerOwner,
            max: limits.max_live_tasks_per_owner as u64,
        });
    }
    let total: i64 = conn
        .prepare_cached("SELECT value FROM counters WHERE name = 'live_total'")
        .and_then(|mut st| st.query_row([], |row| row.get(0)))
        .map_err(backend)?;
    if count(total) >= limits.max_live_tasks_total {
        return Err(StoreError::LimitExceeded {
            limit: Limit::LiveTasksTotal,
            max: limits.max_live_tasks_total as u64,
        });
    }
    let json = encode(rec)?;
    // The entries before the row: the row is then written once, with the log's state.
    let log = log::append(conn, &rec.id, LogState::default(), drafts, now, limits)?;
    let (first, next, bytes) = log.columns();
    conn.prepare_cached(
        "INSERT INTO tasks
           (id, owner, created_at, expires_at, live, lease_expires_at, record, queued_tool,
            log_first, log_next, log_bytes)
         VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?7, ?8, ?9, ?10)",
    )
    .and_then(|mut st| {
        st.execute(params![
            rec.id.as_str(),
            owner,
            rec.created_at,
            rec.expires_at(),
            lease_column(rec),
            json,
            rec.queued_tool(),
            first,
            next,
            bytes
        ])
    })
    .map_err(backend)?;
    conn.prepare_cached(
        "INSERT INTO live_counts (owner, live) VALUES (?1, 1)
         ON CONFLICT (owner) DO UPDATE SET live = live + 1",
    )
    .and_then(|mut st| st.execute([owner]))
    .map_err(backend)?;
    conn.prepare_cached("UPDATE counters SET value = value + 1 WHERE name = 'live_total'")
        .and_then(|mut st| st.execute([]))
        .map_err(backend)?;
    Ok(())
}

/// Takes the idempotency key of the new record `rec` (contract rule 25), in the insert's
/// transaction: refused when a task of the owner still visible at `now` holds it.
fn claim_key(
    conn: &Connection,
    rec: &TaskRecord,
    idempotency: &crate::record::Idempotency,
    now: Millis,
) -> Result<(), StoreError> {
    let owner = rec.owner.as_str();
    let held: Option<String> = conn
        .prepare_cached(
            "SELECT t.record FROM idempotency_keys k JOIN tasks t ON t.id = k.task_id
             WHERE k.owner = ?1 AND k.key = ?2 AND t.owner = ?1
               AND (t.expires_at IS NULL OR t.expires_at > ?3)",
        )
        .and_then(|mut st| {
            st.query_row(params![owner, idempotency.key, now], |row| row.get(0))
                .optional()
        })
        .map_err(backend)?;
    if let Some(json) = held {
        let task = decode(&json)?;
        let same = task
            .idempotency
            .as_ref()
            .is_some_and(|i| i.fingerprint == idempotency.fingerprint);
        return Err(if same {
            StoreError::AlreadyExists {
                task: Box::new(task),
            }
        } else {
            StoreError::IdempotencyConflict
        });
    }
    conn.prepare_cached(
        "INSERT INTO idempotency_keys (owner, key, task_id) VALUES (?1, ?2, ?3)
         ON CONFLICT (owner, key) DO UPDATE SET task_id = excluded.task_id",
    )
    .and_then(|mut st| st.execute(params![owner, idempotency.key, rec.id.as_str()]))
    .map_err(backend)?;
    Ok(())
}

/// The oldest task waiting for a worker among `tools`, unexpired at `now` (one indexed
/// lookup per tool), with its log's state.
pub(crate) fn next_queued(
    conn: &Connection,
    tools: &[String],
    now: Millis,
) -> Result<Option<(TaskRecord, LogState)>, StoreError> {
    let mut oldest: Option<(Millis, String, String, LogState)> = None;
    let mut st = conn
        .prepare_cached(
            "SELECT created_at, id, record, log_first, log_next, log_bytes FROM tasks
             WHERE queued_tool = ?1 AND (expires_at IS NULL OR expires_at > ?2)
             ORDER BY created_at, id
             LIMIT 1",
        )
        .map_err(backend)?;
    for tool in tools {
        let row: Option<(Millis, String, String, LogState)> = st
            .query_row(params![tool, now], |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    LogState::read(row, 3)?,
                ))
            })
            .optional()
            .map_err(backend)?;
        if let Some(row) = row
            && oldest
                .as_ref()
                .is_none_or(|o| (row.0, &row.1) < (o.0, &o.1))
        {
            oldest = Some(row);
        }
    }
    oldest
        .map(|(_, _, json, log)| Ok((decode(&json)?, log)))
        .transpose()
}

/// `n` of `owner`'s unfinished tasks finished or were purged.
pub(crate) fn release_live(conn: &Connection, owner: &str, n: i64) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE live_counts SET live = max(live - ?2, 0) WHERE owner = ?1")
        .and_then(|mut st| st.execute(params![owner, n]))
        .map_err(backend)?;
    conn.prepare_cached("DELETE FROM live_counts WHERE owner = ?1 AND live <= 0")
        .and_then(|mut st| st.execute([owner]))
        .map_err(backend)?;
    conn.prepare_cached("UPDATE counters SET value = max(value - ?1, 0) WHERE name = 'live_total'")
        .and_then(|mut st| st.execute([n]))
        .map_err(backend)?;
    Ok(())
}

/// One page of `owner`'s unexpired tasks after `cursor`, oldest first.
pub(crate) fn list(
    conn: &Connection,
    owner: &Owner,
    cursor: Option<(Millis, TaskId)>,
    limit: usize,
    now: Millis,
) -> Result<TaskPage, StoreError> {
    // No cursor: start before every possible key (ids are never empty).
    let (after_at, after_id) = cursor.unwrap_or((Millis::MIN, TaskId::from_wire("")));
    let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
    let mut st = conn
        .prepare_cached(
            "SELECT record FROM tasks
             WHERE owner = ?1 AND (created_at, id) > (?2, ?3)
               AND (expires_at IS NULL OR expires_at > ?4)
             ORDER BY created_at, id
             LIMIT ?5",
        )
        .map_err(backend)?;
    let rows = st
        .query_map(
            params![owner.as_str(), after_at, after_id.as_str(), now, fetch],
            |row| row.get::<_, String>(0),
        )
        .map_err(backend)?;
    let mut tasks = Vec::new();
    for json in rows {
        tasks.push(decode(&json.map_err(backend)?)?);
    }
    let more = tasks.len() > limit;
    tasks.truncate(limit);
    let next_cursor = if more {
        tasks.last().map(|t| cursor::encode(t.created_at, &t.id))
    } else {
        None
    };
    Ok(TaskPage { tasks, next_cursor })
}

/// Deletes tasks expired at `now` (their logs with them: the schema's trigger), fixes the
/// live counts, and finds lapsed leases.
pub(crate) fn sweep(conn: &Connection, now: Millis) -> Result<SweepReport, StoreError> {
    let mut report = SweepReport::default();
    let purged: Vec<(String, String, bool)> = {
        let mut st = conn
            .prepare_cached("DELETE FROM tasks WHERE expires_at <= ?1 RETURNING owner, id, live")
            .map_err(backend)?;
        let rows = st
            .query_map([now], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .map_err(backend)?;
        rows.collect::<Result<_, _>>().map_err(backend)?
    };
    report.purged = purged.len();
    let mut released: BTreeMap<&str, i64> = BTreeMap::new();
    for (owner, id, live) in &purged {
        if *live {
            *released.entry(owner).or_default() += 1;
            report.expired_unfinished.push(TaskKey {
                owner: Owner::new(owner.clone()),
                id: TaskId::from_wire(id.clone()),
            });
        }
    }
    for (owner, n) in released {
        release_live(conn, owner, n)?;
    }
    let mut st = conn
        .prepare_cached(
            "SELECT record FROM tasks WHERE live = 1 AND lease_expires_at <= ?1
             ORDER BY lease_expires_at, id",
        )
        .map_err(backend)?;
    let rows = st
        .query_map([now], |row| row.get::<_, String>(0))
        .map_err(backend)?;
    for json in rows {
        let rec = decode(&json.map_err(backend)?)?;
        // The column mirrors the record; the rule decides.
        if rules::lease_lapsed(&rec, now) {
            report.lease_lapsed.push(rec.key());
        }
    }
    Ok(report)
}

/// Every unfinished task not expired at `now`, oldest first, with its log's state.
pub(crate) fn unfinished(
    conn: &Connection,
    now: Millis,
) -> Result<Vec<(TaskRecord, LogState)>, StoreError> {
    let mut st = conn
        .prepare_cached(
            "SELECT record, log_first, log_next, log_bytes FROM tasks
             WHERE live = 1 AND (expires_at IS NULL OR expires_at > ?1)
             ORDER BY created_at, id",
        )
        .map_err(backend)?;
    let rows = st
        .query_map([now], |row| {
            Ok((row.get::<_, String>(0)?, LogState::read(row, 1)?))
        })
        .map_err(backend)?;
    let mut tasks = Vec::new();
    for row in rows {
        let (json, log) = row.map_err(backend)?;
        tasks.push((decode(&json)?, log));
    }
    Ok(tasks)
}

/// How many tasks are stored (finished and not yet swept expired ones included).
pub(crate) fn task_count(conn: &Connection) -> Result<usize, StoreError> {
    let n: i64 = conn
        .query_row("SELECT count(*) FROM tasks", [], |row| row.get(0))
        .map_err(backend)?;
    Ok(count(n))
}

/// Unfinished tasks of `owner` (as counted for the limits) and in total.
pub(crate) fn live_counts(conn: &Connection, owner: &Owner) -> Result<(usize, usize), StoreError> {
    let owner_live: i64 = conn
        .query_row(
            "SELECT coalesce((SELECT live FROM live_counts WHERE owner = ?1), 0)",
            [owner.as_str()],
            |row| row.get(0),
        )
        .map_err(backend)?;
    let total: i64 = conn
        .query_row(
            "SELECT value FROM counters WHERE name = 'live_total'",
            [],
            |row| row.get(0),
        )
        .map_err(backend)?;
    Ok((count(owner_live), count(total)))
}
