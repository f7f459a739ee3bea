//! The SQL of each operation, on a pooled connection or inside the caller's transaction.
//! Every connection's `search_path` is the store's schema, so names are unqualified.

use std::collections::BTreeMap;

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::schema::{backend, pg};
use crate::cursor;
use crate::error::StoreError;
use crate::limits::{Limit, Limits};
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

fn decode(row: &Row) -> Result<TaskRecord, StoreError> {
    let json: &str = row.try_get(0).map_err(backend)?;
    serde_json::from_str(json).map_err(|e| backend(format!("corrupt task record: {e}")))
}

fn count(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

async fn query<C: GenericClient>(
    c: &C,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, StoreError> {
    let st = c.prepare_cached(sql).await.map_err(pg)?;
    c.query(&st, params).await.map_err(pg)
}

async fn execute<C: GenericClient>(
    c: &C,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<u64, StoreError> {
    let st = c.prepare_cached(sql).await.map_err(pg)?;
    c.execute(&st, params).await.map_err(pg)
}

/// The owner's task `id` unless it is unknown, another owner's or expired at `now`; with
/// `for_update`, its row stays locked until the transaction ends.
pub(crate) async fn load<C: GenericClient>(
    c: &C,
    owner: &Owner,
    id: &TaskId,
    now: Millis,
    for_update: bool,
) -> Result<Option<TaskRecord>, StoreError> {
    let sql = if for_update {
        "SELECT record FROM tasks
         WHERE id = $1 AND owner = $2 AND (expires_at IS NULL OR expires_at > $3)
         FOR UPDATE"
    } else {
        "SELECT record FROM tasks
         WHERE id = $1 AND owner = $2 AND (expires_at IS NULL OR expires_at > $3)"
    };
    let rows = query(c, sql, &[&id.as_str(), &owner.as_str().as_bytes(), &now]).await?;
    rows.first().map(decode).transpose()
}

/// Writes back a changed record (its row is locked by the caller's transaction).
pub(crate) async fn save<C: GenericClient>(c: &C, rec: &TaskRecord) -> Result<(), StoreError> {
    let json = encode(rec)?;
    execute(
        c,
        "UPDATE tasks SET live = $2, lease_expires_at = $3, record = $4, queued_tool = $5
         WHERE id = $1",
        &[
            &rec.id.as_str(),
            &!rec.is_terminal(),
            &lease_column(rec),
            &json,
            &rec.queued_tool(),
        ],
    )
    .await?;
    Ok(())
}

/// Inserts a new task row. Its live counts come after, in [`count_new`]: the task row is
/// locked first, as in every transaction.
pub(crate) async fn insert_row<C: GenericClient>(
    c: &C,
    rec: &TaskRecord,
) -> Result<(), StoreError> {
    let json = encode(rec)?;
    execute(
        c,
        "INSERT INTO tasks
           (id, owner, created_at, expires_at, live, lease_expires_at, record, queued_tool)
         VALUES ($1, $2, $3, $4, TRUE, $5, $6, $7)",
        &[
            &rec.id.as_str(),
            &rec.owner.as_str().as_bytes(),
            &rec.created_at,
            &rec.expires_at(),
            &lease_column(rec),
            &json,
            &rec.queued_tool(),
        ],
    )
    .await?;
    Ok(())
}

/// The oldest task waiting for a worker among `tools`, unexpired at `now`, its row
/// locked until the transaction ends; rows other claims hold locked are skipped
/// (`FOR UPDATE SKIP LOCKED`), so concurrent claims take different tasks.
pub(crate) async fn next_queued<C: GenericClient>(
    c: &C,
    tools: &[String],
    now: Millis,
) -> Result<Option<TaskRecord>, StoreError> {
    let rows = query(
        c,
        "SELECT record FROM tasks
         WHERE queued_tool IS NOT NULL AND queued_tool = ANY($1)
           AND (expires_at IS NULL OR expires_at > $2)
         ORDER BY created_at, id
         LIMIT 1
         FOR UPDATE SKIP LOCKED",
        &[&tools, &now],
    )
    .await?;
    rows.first().map(decode).transpose()
}

/// Counts a new live task for its owner and in total, checking both limits; over one,
/// the error rolls the transaction back. These two rows are every create's and every
/// terminal write's shared rows, locked until the commit: the caller runs this last,
/// and both statements go out pipelined (owner's row, then the total's, the order every
/// transaction takes them in).
pub(crate) async fn count_new<C: GenericClient>(
    c: &C,
    rec: &TaskRecord,
    limits: &Limits,
) -> Result<(), StoreError> {
    let owner = rec.owner.as_str().as_bytes();
    let (owner_rows, total_rows) = futures::future::try_join(
        query(
            c,
            "INSERT INTO live_counts (owner, live) VALUES ($1, 1)
             ON CONFLICT (owner) DO UPDATE SET live = live_counts.live + 1
             RETURNING live",
            &[&owner],
        ),
        query(
            c,
            "UPDATE counters SET value = value + 1 WHERE name = 'live_total' RETURNING value",
            &[],
        ),
    )
    .await?;
    if count(one(&owner_rows)?) > limits.max_live_tasks_per_owner {
        return Err(StoreError::LimitExceeded {
            limit: Limit::LiveTasksPerOwner,
            max: limits.max_live_tasks_per_owner as u64,
        });
    }
    if count(one(&total_rows)?) > limits.max_live_tasks_total {
        return Err(StoreError::LimitExceeded {
            limit: Limit::LiveTasksTotal,
            max: limits.max_live_tasks_total as u64,
        });
    }
    Ok(())
}

fn one(rows: &[Row]) -> Result<i64, StoreError> {
    rows.first()
        .ok_or_else(|| backend("counter row missing"))?
        .try_get(0)
        .map_err(backend)
}

/// `n` of `owner`'s unfinished tasks finished or were purged: owner's counter row first,
/// then the total's, the three statements pipelined (the rows stay locked until commit).
pub(crate) async fn release_live<C: GenericClient>(
    c: &C,
    owner: &[u8],
    n: i64,
) -> Result<(), StoreError> {
    futures::future::try_join3(
        execute(
            c,
            "UPDATE live_counts SET live = greatest(live - $2, 0) WHERE owner = $1",
            &[&owner, &n],
        ),
        execute(
            c,
            "DELETE FROM live_counts WHERE owner = $1 AND live <= 0",
            &[&owner],
        ),
        execute(
            c,
            "UPDATE counters SET value = greatest(value - $1, 0) WHERE name = 'live_total'",
            &[&n],
        ),
    )
    .await?;
    Ok(())
}

/// One page of `owner`'s unexpired tasks after `cursor`, oldest first.
pub(crate) async fn list<C: GenericClient>(
    c: &C,
    owner: &Owner,
    cursor: Option<(Millis, TaskId)>,
    limit: usize,
    now: Millis,
) -> Result<TaskPage, StoreError> {
    // No cursor: start before every possible key (ids are never empty).
    let (after_at, after_id) = cursor.unwrap_or((Millis::MIN, TaskId::from_wire("")));
    let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
    // `id` has the "C" collation: compared bytewise, as the cursor orders them.
    let rows = query(
        c,
        "SELECT record FROM tasks
         WHERE owner = $1 AND (created_at, id) > ($2, $3)
           AND (expires_at IS NULL OR expires_at > $4)
         ORDER BY created_at, id
         LIMIT $5",
        &[
            &owner.as_str().as_bytes(),
            &after_at,
            &after_id.as_str(),
            &now,
            &fetch,
        ],
    )
    .await?;
    let mut tasks = rows.iter().map(decode).collect::<Result<Vec<_>, _>>()?;
    let more = tasks.len() > limit;
    tasks.truncate(limit);
    let next_cursor = if more {
        tasks.last().map(|t| cursor::encode(t.created_at, &t.id))
    } else {
        None
    };
    Ok(TaskPage { tasks, next_cursor })
}

/// Deletes tasks expired at `now`, fixes the live counts (owners in order, then the
/// total), and finds lapsed leases. The caller serializes sweeps.
pub(crate) async fn sweep<C: GenericClient>(c: &C, now: Millis) -> Result<SweepReport, StoreError> {
    let mut report = SweepReport::default();
    let rows = query(
        c,
        "DELETE FROM tasks WHERE expires_at <= $1 RETURNING owner, id, live",
        &[&now],
    )
    .await?;
    report.purged = rows.len();
    let mut released: BTreeMap<String, i64> = BTreeMap::new();
    for row in &rows {
        let owner: Vec<u8> = row.try_get(0).map_err(backend)?;
        let owner = String::from_utf8(owner).map_err(|e| backend(format!("corrupt owner: {e}")))?;
        let id: String = row.try_get(1).map_err(backend)?;
        let live: bool = row.try_get(2).map_err(backend)?;
        if live {
            *released.entry(owner.clone()).or_default() += 1;
            report.expired_unfinished.push(TaskKey {
                owner: Owner::new(owner),
                id: TaskId::from_wire(id),
            });
        }
    }
    for (owner, n) in &released {
        release_live(c, owner.as_bytes(), *n).await?;
    }
    let rows = query(
        c,
        "SELECT record FROM tasks WHERE live AND lease_expires_at <= $1
         ORDER BY lease_expires_at, id",
        &[&now],
    )
    .await?;
    for row in &rows {
        let rec = decode(row)?;
        // The column mirrors the record; the rule decides.
        if rules::lease_lapsed(&rec, now) {
            report.lease_lapsed.push(rec.key());
        }
    }
    Ok(report)
}

/// Queues a notification; PostgreSQL delivers it when (and only if) the transaction
/// commits.
pub(crate) async fn notify<C: GenericClient>(
    c: &C,
    channel: &str,
    payload: &str,
) -> Result<(), StoreError> {
    query(c, "SELECT pg_notify($1, $2)", &[&channel, &payload]).await?;
    Ok(())
}

/// How many tasks are stored (finished and not yet swept expired ones included).
pub(crate) async fn task_count<C: GenericClient>(c: &C) -> Result<usize, StoreError> {
    let rows = query(c, "SELECT count(*) FROM tasks", &[]).await?;
    Ok(count(one(&rows)?))
}

/// Unfinished tasks of `owner` (as counted for the limits) and in total.
pub(crate) async fn live_counts<C: GenericClient>(
    c: &C,
    owner: &Owner,
) -> Result<(usize, usize), StoreError> {
    let rows = query(
        c,
        "SELECT coalesce((SELECT live FROM live_counts WHERE owner = $1), 0),
                (SELECT value FROM counters WHERE name = 'live_total')",
        &[&owner.as_str().as_bytes()],
    )
    .await?;
    let row = rows.first().ok_or_else(|| backend("no counts"))?;
    let owner_live: i64 = row.try_get(0).map_err(backend)?;
    let total: Option<i64> = row.try_get(1).map_err(backend)?;
    Ok((count(owner_live), count(total.unwrap_or(0))))
}
