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

/// The `live_counts` scope of the count of all owners: a byte no UTF-8 owner holds.
const TOTAL_SCOPE: &[u8] = b"\xff";

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

/// What the write functions' notification parameters get: nothing. The functions of
/// schema version 4 still take payloads to `pg_notify` in the transaction; this build
/// notifies after the commit instead (`notify.rs`).
const NO_CHANNEL: &str = "";
const NO_PAYLOADS: &[String] = &[];

/// A limit as the SQL functions take it (`usize::MAX` and beyond: `i64::MAX`).
fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Writes a changed record if its row's revision is still `was` (`false` otherwise:
/// another write came first, read again), giving back its live count units when it just
/// finished (`was_live`). One statement (`save_task`, schema version 4).
pub(crate) async fn save<C: GenericClient>(
    c: &C,
    rec: &TaskRecord,
    was: u64,
    was_live: bool,
) -> Result<bool, StoreError> {
    let json = encode(rec)?;
    let rows = query(
        c,
        "SELECT save_task($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        &[
            &rec.id.as_str(),
            &revision(was),
            &revision(rec.revision),
            &!rec.is_terminal(),
            &lease_column(rec),
            &json,
            &rec.queued_tool(),
            &(was_live && rec.is_terminal()),
            &NO_CHANNEL,
            &NO_PAYLOADS,
        ],
    )
    .await?;
    rows.first()
        .ok_or_else(|| backend("save_task returned nothing"))?
        .try_get(0)
        .map_err(backend)
}

fn revision(r: u64) -> i64 {
    i64::try_from(r).unwrap_or(i64::MAX)
}

/// Stores a new task and counts it for its owner and in total, in one statement
/// (`create_task`, schema version 4); over a limit, refused with
/// [`StoreError::LimitExceeded`] and nothing stored. `start` is the count shard to try
/// first.
pub(crate) async fn create<C: GenericClient>(
    c: &C,
    rec: &TaskRecord,
    limits: &Limits,
    start: i32,
) -> Result<(), StoreError> {
    let json = encode(rec)?;
    let st = c
        .prepare_cached(
            "SELECT create_task($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .await
        .map_err(pg)?;
    let (owner_max, total_max) = (
        limit(limits.max_live_tasks_per_owner),
        limit(limits.max_live_tasks_total),
    );
    let mut pause = BUSY_PAUSE;
    for _ in 0..BUSY_ATTEMPTS {
        let done = c
            .execute(
                &st,
                &[
                    &rec.id.as_str(),
                    &rec.owner.as_str().as_bytes(),
                    &rec.created_at,
                    &rec.expires_at(),
                    &lease_column(rec),
                    &json,
                    &rec.queued_tool(),
                    &revision(rec.revision),
                    &owner_max,
                    &total_max,
                    &start,
                    &NO_CHANNEL,
                    &NO_PAYLOADS,
                ],
            )
            .await;
        let Err(e) = done else {
            return Ok(());
        };
        let code = e.as_db_error().map(|d| d.code().code());
        if code == Some("MT003") {
            // Every shard with room is held by another create: again, shortly.
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(BUSY_PAUSE_MAX);
            continue;
        }
        return Err(match code {
            Some("MT001") => StoreError::LimitExceeded {
                limit: Limit::LiveTasksPerOwner,
                max: limits.max_live_tasks_per_owner as u64,
            },
            Some("MT002") => StoreError::LimitExceeded {
                limit: Limit::LiveTasksTotal,
                max: limits.max_live_tasks_total as u64,
            },
            _ => pg(e),
        });
    }
    Err(StoreError::Unavailable(crate::error::BackendError::new(
        "PostgreSQL: the live task counts stayed busy; try again",
    )))
}

/// How often a create runs again while every live count shard with room is held by
/// other creates, and the pauses between (doubling).
const BUSY_ATTEMPTS: u32 = 100;
const BUSY_PAUSE: std::time::Duration = std::time::Duration::from_micros(100);
const BUSY_PAUSE_MAX: std::time::Duration = std::time::Duration::from_millis(5);

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
        "DELETE FROM tasks WHERE expires_at <= $1
         RETURNING owner, id, live, owner_slot, total_slot",
        &[&now],
    )
    .await?;
    report.purged = rows.len();
    // Units to give back per (scope, shard), in key order.
    let mut released: BTreeMap<(Vec<u8>, i16), i64> = BTreeMap::new();
    for row in &rows {
        let owner: Vec<u8> = row.try_get(0).map_err(backend)?;
        let id: String = row.try_get(1).map_err(backend)?;
        let live: bool = row.try_get(2).map_err(backend)?;
        if !live {
            continue;
        }
        let owner_slot: i16 = row.try_get(3).map_err(backend)?;
        let total_slot: i16 = row.try_get(4).map_err(backend)?;
        *released.entry((owner.clone(), owner_slot)).or_default() += 1;
        *released
            .entry((TOTAL_SCOPE.to_vec(), total_slot))
            .or_default() += 1;
        let owner = String::from_utf8(owner).map_err(|e| backend(format!("corrupt owner: {e}")))?;
        report.expired_unfinished.push(TaskKey {
            owner: Owner::new(owner),
            id: TaskId::from_wire(id),
        });
    }
    // Owners' shards first, then the total's (`\xff` sorts last): the order every
    // write takes them in.
    for ((scope, shard), n) in &released {
        execute(
            c,
            "UPDATE live_counts SET live = greatest(live - $3, 0) WHERE owner = $1 AND shard = $2",
            &[scope, shard, n],
        )
        .await?;
    }
    // Shards at zero go (a create recreates them). Rows another write holds are passed
    // over, never waited for: this statement locks many rows in no set order, and a
    // write holding one of them may wait for another.
    execute(
        c,
        "DELETE FROM live_counts WHERE ctid = ANY(ARRAY(
           SELECT ctid FROM live_counts WHERE live <= 0 FOR UPDATE SKIP LOCKED))",
        &[],
    )
    .await?;
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

/// How many tasks are stored (finished and not yet swept expired ones included).
pub(crate) async fn task_count<C: GenericClient>(c: &C) -> Result<usize, StoreError> {
    let rows = query(c, "SELECT count(*) FROM tasks", &[]).await?;
    Ok(count(one(&rows)?))
}

fn one(rows: &[Row]) -> Result<i64, StoreError> {
    rows.first()
        .ok_or_else(|| backend("count missing"))?
        .try_get(0)
        .map_err(backend)
}

/// Unfinished tasks of `owner` (as counted for the limits) and in total.
pub(crate) async fn live_counts<C: GenericClient>(
    c: &C,
    owner: &Owner,
) -> Result<(usize, usize), StoreError> {
    let rows = query(
        c,
        "SELECT coalesce((SELECT sum(live) FROM live_counts WHERE owner = $1), 0)::bigint,
                coalesce((SELECT sum(live) FROM live_counts WHERE owner = $2), 0)::bigint",
        &[&owner.as_str().as_bytes(), &TOTAL_SCOPE],
    )
    .await?;
    let row = rows.first().ok_or_else(|| backend("no counts"))?;
    let owner_live: i64 = row.try_get(0).map_err(backend)?;
    let total: i64 = row.try_get(1).map_err(backend)?;
    Ok((count(owner_live), count(total)))
}
