//! Task logs (contract rule 13): the entries a write appends, encoded as the arrays the
//! write functions take them, a tool's appends (`append_log`), and the reads of a log.

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use std::sync::Arc;

use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::tasks::TaskStatus;

use super::{limit, query, revision};
use crate::error::StoreError;
use crate::limits::Limits;
use crate::log::{Actor, LogDraft, LogEntry, LogPage};
use crate::postgres::schema::backend;
use crate::record::{Millis, Owner, TaskId};

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
/// the row's entries, and its columns; then the retention limits.
pub(super) struct FlatLog<'a> {
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
    max_entries: i64,
    max_bytes: i64,
}

impl<'a> FlatLog<'a> {
    /// Whether a row's entries alone pass a retention limit (then a new log is trimmed
    /// as soon as it is written).
    pub(super) fn passes(&self) -> bool {
        self.n
            .iter()
            .zip(&self.bytes)
            .any(|(&n, &b)| n > self.max_entries || b > self.max_bytes)
    }

    /// The parameters `create_tasks_v10` and `save_tasks_v10` take after each row's own
    /// (`p_log_n` to `p_log_sizes`, then `p_max_entries` and `p_max_bytes`), in their order.
    pub(super) fn params(&self) -> [&(dyn ToSql + Sync); 12] {
        [
            &self.n,
            &self.bytes,
            &self.at,
            &self.rows,
            &self.offsets,
            &self.kinds,
            &self.payloads,
            &self.nodes,
            &self.actors,
            &self.sizes,
            &self.max_entries,
            &self.max_bytes,
        ]
    }

    /// The logs of a batch's rows, in row order, kept to `limits`.
    pub(super) fn of(
        logs: impl ExactSizeIterator<Item = &'a LogRows>,
        limits: &Limits,
    ) -> FlatLog<'a> {
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
            max_entries: limit(limits.max_log_entries),
            max_bytes: limit(limits.max_log_bytes),
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
        let flat = FlatLog::of([&none, &rows].into_iter(), &Limits::default());
        assert_eq!(flat.n, [0, 2]);
        assert_eq!(flat.rows, [2, 2]);
        assert_eq!(flat.offsets, [0, 1]);
    }
}
