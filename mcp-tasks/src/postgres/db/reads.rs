//! The reads: a batch of reads by key, an owner's listing, the claim's pick of a
//! waiting task, the counts, and the sweep (which reads what it removes).

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::{TOTAL_SCOPE, query};
use crate::cursor;
use crate::error::StoreError;
use crate::postgres::schema::backend;
use crate::record::{Millis, Owner, SweepReport, TaskId, TaskKey, TaskPage, TaskRecord};
use crate::rules;

fn decode(row: &Row) -> Result<TaskRecord, StoreError> {
    decode_at(row, 0)
}

fn decode_at(row: &Row, column: usize) -> Result<TaskRecord, StoreError> {
    let json: &str = row.try_get(column).map_err(backend)?;
    serde_json::from_str(json).map_err(|e| backend(format!("corrupt task record: {e}")))
}

fn count(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
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

/// Deletes tasks expired at `now` and fixes the live counts in one statement
/// (`sweep_expired`, schema version 7, serialized by the advisory lock `lock`), then
/// finds lapsed leases.
pub(crate) async fn sweep<C: GenericClient>(
    c: &C,
    now: Millis,
    lock: i64,
) -> Result<SweepReport, StoreError> {
    let mut report = SweepReport::default();
    let rows = query(
        c,
        "SELECT purged, owners, ids FROM sweep_expired($1, $2)",
        &[&now, &lock],
    )
    .await?;
    let row = rows
        .first()
        .ok_or_else(|| backend("sweep_expired returned nothing"))?;
    let purged: i64 = row.try_get(0).map_err(backend)?;
    let owners: Vec<Vec<u8>> = row.try_get(1).map_err(backend)?;
    let ids: Vec<String> = row.try_get(2).map_err(backend)?;
    report.purged = count(purged);
    for (owner, id) in owners.into_iter().zip(ids) {
        let owner = String::from_utf8(owner).map_err(|e| backend(format!("corrupt owner: {e}")))?;
        report.expired_unfinished.push(TaskKey {
            owner: Owner::new(owner),
            id: TaskId::from_wire(id),
        });
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

/// A read of one task: its owner's, unexpired at `now`.
pub(crate) struct ReadKey {
    pub(crate) owner: Owner,
    pub(crate) id: TaskId,
    pub(crate) now: Millis,
}

/// Reads every key in one statement; each record in its key's place (`None`: unknown,
/// another owner's or expired at the key's `now`).
pub(crate) async fn load_batch<C: GenericClient>(
    c: &C,
    keys: &[ReadKey],
) -> Result<Vec<Option<TaskRecord>>, StoreError> {
    let ids: Vec<&str> = keys.iter().map(|k| k.id.as_str()).collect();
    let owners: Vec<&[u8]> = keys.iter().map(|k| k.owner.as_str().as_bytes()).collect();
    let nows: Vec<Millis> = keys.iter().map(|k| k.now).collect();
    let rows = query(
        c,
        "SELECT u.i, t.record
           FROM unnest($1::text[], $2::bytea[], $3::bigint[]) WITH ORDINALITY
                AS u(id, owner, now, i)
           JOIN tasks t ON t.id = u.id AND t.owner = u.owner
                       AND (t.expires_at IS NULL OR t.expires_at > u.now)",
        &[&ids, &owners, &nows],
    )
    .await?;
    let mut found: Vec<Option<TaskRecord>> = (0..keys.len()).map(|_| None).collect();
    for row in &rows {
        let i: i64 = row.try_get(0).map_err(backend)?;
        let rec = decode_at(row, 1)?;
        let slot = usize::try_from(i - 1)
            .ok()
            .and_then(|i| found.get_mut(i))
            .ok_or_else(|| backend("a batched read came back out of range"))?;
        *slot = Some(rec);
    }
    Ok(found)
}
