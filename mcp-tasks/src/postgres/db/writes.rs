//! The batched writes: a batch of creates (`create_tasks_v10`) and a batch of changes
//! (`save_tasks_v10`), each one statement with the log entries of its rows, and the
//! count shard rows a create takes its units from.

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::task_log::{FlatLog, LogRows};
use super::{TOTAL_SCOPE, execute, limit, query, revision};
use crate::error::StoreError;
use crate::limits::{Limit, Limits};
use crate::postgres::schema::{self, backend};
use crate::record::{Millis, Owner, TaskRecord};

/// `lease_expires_at` as stored: only unfinished tasks' leases matter to the sweep.
fn lease_column(rec: &TaskRecord) -> Option<Millis> {
    rec.lease
        .as_ref()
        .filter(|_| !rec.is_terminal())
        .map(|lease| lease.expires_at)
}

/// A text of the record as its column holds it: PostgreSQL's text refuses NUL, which
/// is stored as a space (as version 8's columns, generated from the JSON, had it).
fn text_column(text: &str) -> String {
    text.replace('\0', " ")
}

/// The operator's columns of `rec` (schema version 10): `status`, `tool` and
/// `lease_holder`, computed here rather than by the database from the JSON.
#[derive(Clone)]
struct Columns {
    status: &'static str,
    tool: Option<String>,
    holder: Option<String>,
}

impl Columns {
    fn of(rec: &TaskRecord) -> Columns {
        Columns {
            status: rec.status.as_str(),
            tool: rec.origin.tool.as_deref().map(text_column),
            holder: rec.lease.as_ref().map(|l| text_column(&l.holder)),
        }
    }
}

/// The columns of `rows` as the SQL functions take them: statuses, tools, holders.
type ColumnArrays<'a> = (
    Vec<&'static str>,
    Vec<Option<&'a str>>,
    Vec<Option<&'a str>>,
);

fn column_arrays<'a>(columns: impl Iterator<Item = &'a Columns>) -> ColumnArrays<'a> {
    let mut arrays: ColumnArrays<'a> = (Vec::new(), Vec::new(), Vec::new());
    for c in columns {
        arrays.0.push(c.status);
        arrays.1.push(c.tool.as_deref());
        arrays.2.push(c.holder.as_deref());
    }
    arrays
}

fn encode(rec: &TaskRecord) -> Result<String, StoreError> {
    serde_json::to_string(rec).map_err(backend)
}

/// Makes the missing count shard rows of `owner`'s count (`None`: the total's) under
/// `max`, in one statement (one transaction, holding nothing else) that inserts them in
/// shard order: two writers making them at once wait for each other's rows in the same
/// order, so neither can wait for the other in a cycle, and no other write can see, so
/// wait for, a row not yet committed.
pub(crate) async fn make_shards<C: GenericClient>(
    c: &C,
    owner: Option<&Owner>,
    max: usize,
) -> Result<(), StoreError> {
    let scope = owner.map_or(TOTAL_SCOPE, |o| o.as_str().as_bytes());
    let max = limit(max);
    let shards = i64::from(schema::SHARDS);
    let with_room: Vec<i16> = (0..schema::SHARDS)
        .filter(|&shard| max / shards + i64::from(i64::from(shard) < max % shards) > 0)
        .map(|shard| shard as i16)
        .collect();
    if with_room.is_empty() {
        return Ok(());
    }
    execute(
        c,
        "INSERT INTO live_counts (owner, shard, live)
         SELECT $1, s, 0 FROM unnest($2::smallint[]) AS s ORDER BY s
         ON CONFLICT DO NOTHING",
        &[&scope, &with_room],
    )
    .await?;
    Ok(())
}

/// A new task as `create_tasks_v10` (schema version 10) stores it.
#[derive(Clone)]
pub(crate) struct NewRow {
    id: String,
    owner: Vec<u8>,
    created_at: Millis,
    expires_at: Option<Millis>,
    lease: Option<Millis>,
    record: String,
    queued: Option<String>,
    revision: i64,
    columns: Columns,
    /// The count shard to try first.
    pub(crate) start: i32,
    /// The first entries of its log.
    log: LogRows,
}

impl NewRow {
    /// The row of `rec` (whose [`log_append`](TaskRecord::log_append) the caller took
    /// into `log`).
    pub(crate) fn of(rec: &TaskRecord, log: LogRows, start: i32) -> Result<NewRow, StoreError> {
        Ok(NewRow {
            id: rec.id.as_str().to_owned(),
            owner: rec.owner.as_str().as_bytes().to_vec(),
            created_at: rec.created_at,
            expires_at: rec.expires_at(),
            lease: lease_column(rec),
            record: encode(rec)?,
            queued: rec.queued_tool().map(str::to_owned),
            revision: revision(rec.revision),
            columns: Columns::of(rec),
            start,
            log,
        })
    }
}

/// What `create_tasks` did with one new task it did not refuse (a refusal is
/// [`StoreError::LimitExceeded`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Created {
    Stored,
    /// Every count shard with room is held by another writer: run it again shortly.
    Busy,
    /// The owner's count lacks shard rows: make them ([`make_shards`]), then again.
    OwnerShardsMissing,
    /// The count of all owners lacks shard rows: the same.
    TotalShardsMissing,
}

/// Stores and counts `rows`, with the first entries of their logs, in one statement
/// (`create_tasks_v10`, schema version 10: `create_tasks` of version 6 with the log and
/// the operator's columns);
/// each row's outcome in its place, a refusal by a limit as its error. The first row's
/// `start` is the batch's.
pub(crate) async fn create_batch<C: GenericClient>(
    c: &C,
    rows: &[NewRow],
    limits: &Limits,
) -> Result<Vec<Result<Created, StoreError>>, StoreError> {
    let column = |f: fn(&NewRow) -> &str| rows.iter().map(f).collect::<Vec<_>>();
    let ids = column(|r| &r.id);
    let records = column(|r| &r.record);
    let owners: Vec<&[u8]> = rows.iter().map(|r| r.owner.as_slice()).collect();
    let created: Vec<Millis> = rows.iter().map(|r| r.created_at).collect();
    let expires: Vec<Option<Millis>> = rows.iter().map(|r| r.expires_at).collect();
    let leases: Vec<Option<Millis>> = rows.iter().map(|r| r.lease).collect();
    let queued: Vec<Option<&str>> = rows.iter().map(|r| r.queued.as_deref()).collect();
    let revisions: Vec<i64> = rows.iter().map(|r| r.revision).collect();
    let (status, tools, holders) = column_arrays(rows.iter().map(|r| &r.columns));
    let start = rows.first().map_or(0, |r| r.start);
    let owner_max = limit(limits.max_live_tasks_per_owner);
    let total_max = limit(limits.max_live_tasks_total);
    let log = FlatLog::of(rows.iter().map(|r| &r.log), limits);
    let trim = log.passes();
    // `$1` to `$14` the rows' own, `$15` to `$26` their logs and the retention limits,
    // `$27` whether to trim.
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![
        &ids, &owners, &created, &expires, &leases, &records, &queued, &revisions, &status, &tools,
        &holders, &owner_max, &total_max, &start,
    ];
    params.extend(log.params());
    params.push(&trim);
    let found = query(
        c,
        "SELECT create_tasks_v10($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
                                 $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26,
                                 $27)",
        &params,
    )
    .await?;
    let outcomes: Vec<i16> = found
        .first()
        .ok_or_else(|| backend("create_tasks_v10 returned nothing"))?
        .try_get(0)
        .map_err(backend)?;
    let outcome = |code| match code {
        0 => Ok(Created::Stored),
        1 => Err(StoreError::LimitExceeded {
            limit: Limit::LiveTasksPerOwner,
            max: limits.max_live_tasks_per_owner as u64,
        }),
        2 => Err(StoreError::LimitExceeded {
            limit: Limit::LiveTasksTotal,
            max: limits.max_live_tasks_total as u64,
        }),
        3 => Ok(Created::Busy),
        4 => Ok(Created::OwnerShardsMissing),
        5 => Ok(Created::TotalShardsMissing),
        other => Err(backend(format!(
            "create_tasks_v10: unknown outcome {other}"
        ))),
    };
    Ok(outcomes.into_iter().map(outcome).collect())
}

/// Who holds an idempotency key a keyed create asked for (contract rule 25).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeyClaim {
    /// The key now names the new task (in the caller's transaction).
    Claimed,
    /// A task still kept holds it: its id, and whether its fingerprint is the same.
    Held { task: String, same: bool },
}

/// Claims `key` of `row`'s owner for `row`'s task, with `fingerprint`, in the caller's
/// transaction (`claim_idempotency_key`, schema version 12): free when no row names it
/// or its task expired at `now`.
pub(crate) async fn claim_key<C: GenericClient>(
    c: &C,
    row: &NewRow,
    key: &str,
    fingerprint: &str,
    now: Millis,
) -> Result<KeyClaim, StoreError> {
    let found = query(
        c,
        "SELECT claimed, holder, same FROM claim_idempotency_key($1, $2, $3, $4, $5, $6)",
        &[
            &row.owner,
            &text_column(key),
            &row.id,
            &text_column(fingerprint),
            &row.expires_at,
            &now,
        ],
    )
    .await?;
    let first = found
        .first()
        .ok_or_else(|| backend("claim_idempotency_key returned nothing"))?;
    let claimed: bool = first.try_get(0).map_err(backend)?;
    if claimed {
        return Ok(KeyClaim::Claimed);
    }
    let task: Option<String> = first.try_get(1).map_err(backend)?;
    let same: Option<bool> = first.try_get(2).map_err(backend)?;
    let task = task.ok_or_else(|| backend("claim_idempotency_key found no holder"))?;
    Ok(KeyClaim::Held {
        task,
        same: same.unwrap_or(false),
    })
}

/// A changed task as `save_tasks_v10` (schema version 10) writes it: only if its row's
/// revision is still `was`, giving back its live count units when it just finished, with
/// the entries the change appends to its log.
pub(crate) struct SavedRow {
    id: String,
    was: i64,
    revision: i64,
    live: bool,
    lease: Option<Millis>,
    record: String,
    queued: Option<String>,
    release: bool,
    columns: Columns,
    log: LogRows,
}

impl SavedRow {
    /// The row of `rec` changed from revision `was` (whose
    /// [`log_append`](TaskRecord::log_append) the caller took into `log`).
    pub(crate) fn of(
        rec: &TaskRecord,
        was: u64,
        was_live: bool,
        log: LogRows,
    ) -> Result<SavedRow, StoreError> {
        Ok(SavedRow {
            id: rec.id.as_str().to_owned(),
            was: revision(was),
            revision: revision(rec.revision),
            live: !rec.is_terminal(),
            lease: lease_column(rec),
            record: encode(rec)?,
            queued: rec.queued_tool().map(str::to_owned),
            release: was_live && rec.is_terminal(),
            columns: Columns::of(rec),
            log,
        })
    }
}

/// Writes `rows` and their log entries in one statement (`save_tasks_v10`): for
/// each, whether it was written (`false`: another write came first, read again; its
/// entries were not written either).
pub(crate) async fn save_batch<C: GenericClient>(
    c: &C,
    rows: &[SavedRow],
    limits: &Limits,
) -> Result<Vec<bool>, StoreError> {
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    let was: Vec<i64> = rows.iter().map(|r| r.was).collect();
    let revisions: Vec<i64> = rows.iter().map(|r| r.revision).collect();
    let live: Vec<bool> = rows.iter().map(|r| r.live).collect();
    let leases: Vec<Option<Millis>> = rows.iter().map(|r| r.lease).collect();
    let records: Vec<&str> = rows.iter().map(|r| r.record.as_str()).collect();
    let queued: Vec<Option<&str>> = rows.iter().map(|r| r.queued.as_deref()).collect();
    let release: Vec<bool> = rows.iter().map(|r| r.release).collect();
    let (status, tools, holders) = column_arrays(rows.iter().map(|r| &r.columns));
    let log = FlatLog::of(rows.iter().map(|r| &r.log), limits);
    // `$1` to `$11` the rows' own, `$12` to `$23` their logs and the retention limits.
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![
        &ids, &was, &revisions, &live, &leases, &records, &queued, &release, &status, &tools,
        &holders,
    ];
    params.extend(log.params());
    let found = query(
        c,
        "SELECT save_tasks_v10($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
                               $15, $16, $17, $18, $19, $20, $21, $22, $23)",
        &params,
    )
    .await?;
    let saved: Vec<bool> = found
        .first()
        .ok_or_else(|| backend("save_tasks_v10 returned nothing"))?
        .try_get(0)
        .map_err(backend)?;
    Ok(saved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_the_records_with_nul_as_space() {
        let rec: TaskRecord = serde_json::from_value(serde_json::json!({
            "id": "t1", "owner": "o", "status": "input_required", "status_message": null,
            "created_at": 1, "last_updated_at": 1, "ttl_ms": null, "poll_interval_ms": null,
            "origin": { "method": "tools/call", "tool": "a\u{0000}b", "revision": "2025-11-25" },
            "outcome": null, "input_requests": {}, "input_responses": {},
            "used_input_keys": [], "cancel_requested": false,
            "lease": { "holder": "w\u{0000}", "expires_at": 9 }, "revision": 3
        }))
        .expect("a record");
        let c = Columns::of(&rec);
        assert_eq!(c.status, "input_required");
        assert_eq!(c.tool.as_deref(), Some("a b"));
        assert_eq!(c.holder.as_deref(), Some("w "));
    }
}
