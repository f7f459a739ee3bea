//! The SQL of each operation, on a pooled connection or inside the caller's transaction.
//! Every connection's `search_path` is the store's schema, so names are unqualified.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use std::sync::Arc;

use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::tasks::TaskStatus;

use super::schema::{backend, pg};
use crate::cursor;
use crate::error::StoreError;
use crate::limits::{Limit, Limits};
use crate::log::{Actor, LogDraft, LogEntry, LogPage};
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

/// A limit as the SQL functions take it (`usize::MAX` and beyond: `i64::MAX`).
fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn revision(r: u64) -> i64 {
    i64::try_from(r).unwrap_or(i64::MAX)
}

/// Makes the missing count shard rows of `owner`'s count (`None`: the total's) under
/// `max`, one statement (one transaction, holding nothing else) per row, so that no two
/// writers inserting them can wait for each other.
pub(crate) async fn make_shards<C: GenericClient>(
    c: &C,
    owner: Option<&Owner>,
    max: usize,
) -> Result<(), StoreError> {
    let scope = owner.map_or(TOTAL_SCOPE, |o| o.as_str().as_bytes());
    let max = limit(max);
    let shards = i64::from(super::schema::SHARDS);
    for shard in 0..super::schema::SHARDS {
        let share = max / shards + i64::from(i64::from(shard) < max % shards);
        if share > 0 {
            execute(
                c,
                "INSERT INTO live_counts (owner, shard, live) VALUES ($1, $2, 0)
                 ON CONFLICT DO NOTHING",
                &[&scope, &(shard as i16)],
            )
            .await?;
        }
    }
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
    let log = FlatLog::of(rows.iter().map(|r| &r.log));
    let found = query(
        c,
        "SELECT create_tasks_v10($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
                                 $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26,
                                 $27)",
        &[
            &ids,
            &owners,
            &created,
            &expires,
            &leases,
            &records,
            &queued,
            &revisions,
            &status,
            &tools,
            &holders,
            &limit(limits.max_live_tasks_per_owner),
            &limit(limits.max_live_tasks_total),
            &start,
            &log.n,
            &log.bytes,
            &log.at,
            &log.rows,
            &log.offsets,
            &log.kinds,
            &log.payloads,
            &log.nodes,
            &log.actors,
            &log.sizes,
            &limit(limits.max_log_entries),
            &limit(limits.max_log_bytes),
            &log.passes(limits),
        ],
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
    let log = FlatLog::of(rows.iter().map(|r| &r.log));
    let found = query(
        c,
        "SELECT save_tasks_v10($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
                               $15, $16, $17, $18, $19, $20, $21, $22, $23)",
        &[
            &ids,
            &was,
            &revisions,
            &live,
            &leases,
            &records,
            &queued,
            &release,
            &status,
            &tools,
            &holders,
            &log.n,
            &log.bytes,
            &log.at,
            &log.rows,
            &log.offsets,
            &log.kinds,
            &log.payloads,
            &log.nodes,
            &log.actors,
            &log.sizes,
            &limit(limits.max_log_entries),
            &limit(limits.max_log_bytes),
        ],
    )
    .await?;
    let saved: Vec<bool> = found
        .first()
        .ok_or_else(|| backend("save_tasks_v10 returned nothing"))?
        .try_get(0)
        .map_err(backend)?;
    Ok(saved)
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

/// The entries one write of a task appends to its log (contract rule 13), encoded for
/// the SQL functions: each payload as compact JSON text, each size
/// ([`LogDraft::size`]: the type's bytes and the payload's as that text) computed here.
#[derive(Clone, Default)]
pub(crate) struct LogRows {
    at: Millis,
    entries: Vec<LogRow>,
    bytes: i64,
}

#[derive(Clone)]
struct LogRow {
    kind: String,
    payload: String,
    node: Option<Arc<str>>,
    actor: &'static str,
    size: i64,
}

impl LogRows {
    /// `drafts`, written at `at`.
    pub(crate) fn of(drafts: Vec<LogDraft>, at: Millis) -> Result<LogRows, StoreError> {
        let mut bytes = 0i64;
        let entries = drafts
            .into_iter()
            .map(|d| {
                let payload = serde_json::to_string(&d.payload).map_err(backend)?;
                // `LogDraft::size`, without writing the payload out a second time.
                let size = i64::try_from(d.kind.len() + payload.len()).unwrap_or(i64::MAX);
                bytes = bytes.saturating_add(size);
                Ok(LogRow {
                    kind: d.kind,
                    payload,
                    node: d.node,
                    actor: d.actor.as_str(),
                    size,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(LogRows { at, entries, bytes })
    }

    fn len(&self) -> i64 {
        i64::try_from(self.entries.len()).unwrap_or(i64::MAX)
    }
}

/// The log entries of a batch's rows as the SQL functions take them: per row the count,
/// the bytes and the time; per entry (flat, in row order) its row (from 1), its offset in
/// the row's entries, and its columns.
struct FlatLog<'a> {
    n: Vec<i64>,
    bytes: Vec<i64>,
    at: Vec<Millis>,
    rows: Vec<i32>,
    offsets: Vec<i64>,
    kinds: Vec<&'a str>,
    payloads: Vec<&'a str>,
    nodes: Vec<Option<&'a str>>,
    actors: Vec<&'static str>,
    sizes: Vec<i64>,
}

impl<'a> FlatLog<'a> {
    /// Whether a row's entries alone pass a retention limit (then a new log is trimmed
    /// as soon as it is written).
    fn passes(&self, limits: &Limits) -> bool {
        let (entries, bytes) = (limit(limits.max_log_entries), limit(limits.max_log_bytes));
        self.n
            .iter()
            .zip(&self.bytes)
            .any(|(&n, &b)| n > entries || b > bytes)
    }

    fn of(logs: impl ExactSizeIterator<Item = &'a LogRows>) -> FlatLog<'a> {
        let count = logs.len();
        let mut flat = FlatLog {
            n: Vec::with_capacity(count),
            bytes: Vec::with_capacity(count),
            at: Vec::with_capacity(count),
            rows: Vec::with_capacity(count),
            offsets: Vec::with_capacity(count),
            kinds: Vec::with_capacity(count),
            payloads: Vec::with_capacity(count),
            nodes: Vec::with_capacity(count),
            actors: Vec::with_capacity(count),
            sizes: Vec::with_capacity(count),
        };
        for (row, log) in (1..).zip(logs) {
            flat.n.push(log.len());
            flat.bytes.push(log.bytes);
            flat.at.push(log.at);
            for (offset, e) in (0..).zip(&log.entries) {
                flat.rows.push(row);
                flat.offsets.push(offset);
                flat.kinds.push(&e.kind);
                flat.payloads.push(&e.payload);
                flat.nodes.push(e.node.as_deref());
                flat.actors.push(e.actor);
                flat.sizes.push(e.size);
            }
        }
        flat
    }
}

/// What [`append_log`] did.
pub(crate) enum Appended {
    /// The entries are in the log; the seq of the last.
    Last(u64),
    /// The task is finished: nothing was written.
    Finished(TaskStatus),
    /// No such task of the owner's, unexpired: nothing was written.
    Missing,
}

/// Appends `log` to the log of `owner`'s unfinished task unexpired at `log.at`, in one
/// statement (`append_log`): the task's row lock numbers them, retention follows.
pub(crate) async fn append_log<C: GenericClient>(
    c: &C,
    owner: &Owner,
    id: &TaskId,
    log: &LogRows,
    limits: &Limits,
) -> Result<Appended, StoreError> {
    let kinds: Vec<&str> = log.entries.iter().map(|e| e.kind.as_str()).collect();
    let payloads: Vec<&str> = log.entries.iter().map(|e| e.payload.as_str()).collect();
    let nodes: Vec<Option<&str>> = log.entries.iter().map(|e| e.node.as_deref()).collect();
    let actors: Vec<&str> = log.entries.iter().map(|e| e.actor).collect();
    let sizes: Vec<i64> = log.entries.iter().map(|e| e.size).collect();
    let rows = query(
        c,
        "SELECT last, status FROM append_log($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        &[
            &id.as_str(),
            &owner.as_str().as_bytes(),
            &log.at,
            &log.bytes,
            &kinds,
            &payloads,
            &nodes,
            &actors,
            &sizes,
            &limit(limits.max_log_entries),
            &limit(limits.max_log_bytes),
        ],
    )
    .await?;
    let row = rows
        .first()
        .ok_or_else(|| backend("append_log returned nothing"))?;
    let last: Option<i64> = row.try_get(0).map_err(backend)?;
    let status: Option<&str> = row.try_get(1).map_err(backend)?;
    Ok(match (last, status) {
        (Some(last), _) => Appended::Last(u64::try_from(last).unwrap_or(0)),
        (None, None) => Appended::Missing,
        (None, Some(status)) => match TaskStatus::ALL.into_iter().find(|s| s.as_str() == status) {
            Some(status) if status.is_terminal() => Appended::Finished(status),
            // Unfinished, yet not visible to the write: made after the statement began,
            // which a caller that knows its id cannot see happen.
            Some(_) => Appended::Missing,
            None => return Err(backend(format!("corrupt task status {status:?}"))),
        },
    })
}

/// At most `limit` entries of the log of `owner`'s task unexpired at `now`, from seq
/// `after + 1` (from the earliest kept when `None`), in one statement; `None` when there
/// is no such task.
pub(crate) async fn read_log<C: GenericClient>(
    c: &C,
    owner: &Owner,
    id: &TaskId,
    now: Millis,
    after: Option<u64>,
    limit: usize,
) -> Result<Option<LogPage>, StoreError> {
    let from = after.map_or(0, |a| revision(a.saturating_add(1)));
    let fetch = i64::try_from(limit.max(1)).unwrap_or(i64::MAX);
    let rows = query(
        c,
        "SELECT t.log_first, t.log_next, l.seq, l.type, l.payload, l.at, l.node, l.actor
           FROM tasks t
           LEFT JOIN LATERAL (
                SELECT e.seq, e.type, e.payload, e.at, e.node, e.actor FROM task_log e
                 WHERE e.task_id = t.id AND e.seq >= greatest(t.log_first, $4)
                 ORDER BY e.seq LIMIT $5) l ON TRUE
          WHERE t.id = $1 AND t.owner = $2 AND (t.expires_at IS NULL OR t.expires_at > $3)
          ORDER BY l.seq",
        &[
            &id.as_str(),
            &owner.as_str().as_bytes(),
            &now,
            &from,
            &fetch,
        ],
    )
    .await?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let seq = |n: i64| u64::try_from(n).unwrap_or(0);
    let earliest: i64 = first.try_get(0).map_err(backend)?;
    let next: i64 = first.try_get(1).map_err(backend)?;
    let mut entries = Vec::with_capacity(rows.len());
    for row in &rows {
        let Some(at_seq) = row.try_get::<_, Option<i64>>(2).map_err(backend)? else {
            continue;
        };
        let payload: &str = row.try_get(4).map_err(backend)?;
        let payload: JsonObject = serde_json::from_str(payload)
            .map_err(|e| backend(format!("corrupt log entry payload: {e}")))?;
        let node: Option<&str> = row.try_get(6).map_err(backend)?;
        let actor: &str = row.try_get(7).map_err(backend)?;
        entries.push(LogEntry {
            seq: seq(at_seq),
            kind: row.try_get(3).map_err(backend)?,
            payload,
            at: row.try_get(5).map_err(backend)?,
            node: node.map(Arc::from),
            actor: actor_of(actor)?,
        });
    }
    Ok(Some(LogPage {
        entries,
        earliest: seq(earliest.min(next)),
        next: seq(next),
    }))
}

fn actor_of(name: &str) -> Result<Actor, StoreError> {
    [Actor::Owner, Actor::Operator, Actor::Worker, Actor::Server]
        .into_iter()
        .find(|a| a.as_str() == name)
        .ok_or_else(|| backend(format!("corrupt log entry actor {name:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_the_drafts_own() {
        let payload = serde_json::json!({ "text": "héllo \u{0000} \"q\"", "n": [1, 2.5] });
        let draft = LogDraft {
            kind: "com.example.kit".into(),
            payload: payload.as_object().cloned().expect("an object"),
            node: Some("n1".into()),
            actor: Actor::Operator,
        };
        let rows = LogRows::of(vec![draft.clone(), draft.clone()], 7).expect("encode");
        assert_eq!(rows.entries[0].size, draft.size() as i64);
        assert_eq!(rows.bytes, 2 * draft.size() as i64);
        assert_eq!(
            actor_of(rows.entries[0].actor).expect("actor"),
            Actor::Operator
        );
        let none = LogRows::default();
        let flat = FlatLog::of([&none, &rows].into_iter());
        assert_eq!(flat.n, [0, 2]);
        assert_eq!(flat.rows, [2, 2]);
        assert_eq!(flat.offsets, [0, 1]);
    }

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
