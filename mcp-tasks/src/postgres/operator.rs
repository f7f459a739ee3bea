//! The operator's view (contract rule 22) in SQL: the listing walks one index in
//! creation order backwards (the owner's, the lease holder's, the tool's, the status's or
//! all tasks', as the planner picks for the filter); the counts are a grouped pass over
//! the tasks (schema version 8; the writers fill `status`, `tool` and `lease_holder`
//! since version 10).

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::schema::{backend, pg};
use crate::error::StoreError;
use crate::operator::{OperatorFilter, OperatorPage, TaskCounts, parse_status};
use crate::record::{Millis, TaskId, TaskRecord};

fn decode(json: &str) -> Result<TaskRecord, StoreError> {
    serde_json::from_str(json).map_err(|e| backend(format!("corrupt task record: {e}")))
}

/// Appends the condition `text` to `sql`, its parameters `$A` and `$B` numbered after
/// the `bound` parameters already there. (At most 2^8 statements, each prepared once per
/// connection.)
fn cond(sql: &mut String, bound: usize, text: &str) {
    sql.push_str(
        &text
            .replace("$A", &format!("${}", bound + 1))
            .replace("$B", &format!("${}", bound + 2)),
    );
}

/// The condition of [`OperatorFilter::text`] (its ASCII-lowered text is `$A`).
const TEXT_CONDITION: &str = " AND strpos(translate(\
     replace(record, E'\\\\u0000', E'\\\\u0020')::json ->> 'status_message', \
     'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'), $A) > 0";

/// One page of `filter`'s tasks visible at `now` before `before`, newest first.
pub(crate) async fn list<C: GenericClient>(
    c: &C,
    filter: &OperatorFilter,
    before: Option<(Millis, TaskId)>,
    limit: usize,
    now: Millis,
) -> Result<OperatorPage, StoreError> {
    let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
    let status = filter.status.map(|s| s.as_str());
    let owner = filter.owner.as_ref().map(|o| o.as_str().as_bytes());
    let before_at = before.as_ref().map(|(at, _)| *at);
    let before_id = before.as_ref().map(|(_, id)| id.as_str());
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&now, &fetch];
    let mut sql =
        String::from("SELECT record FROM tasks WHERE (expires_at IS NULL OR expires_at > $1)");
    if let (Some(at), Some(id)) = (&before_at, &before_id) {
        cond(&mut sql, params.len(), " AND (created_at, id) < ($A, $B)");
        params.push(at);
        params.push(id);
    }
    if let Some(s) = &status {
        cond(&mut sql, params.len(), " AND status = $A");
        params.push(s);
    }
    if let Some(t) = &filter.tool {
        cond(&mut sql, params.len(), " AND tool = $A");
        params.push(t);
    }
    if let Some(o) = &owner {
        cond(&mut sql, params.len(), " AND owner = $A");
        params.push(o);
    }
    if let Some(at) = &filter.created_from {
        cond(&mut sql, params.len(), " AND created_at >= $A");
        params.push(at);
    }
    if let Some(at) = &filter.created_before {
        cond(&mut sql, params.len(), " AND created_at < $A");
        params.push(at);
    }
    if let Some(h) = &filter.lease_holder {
        cond(&mut sql, params.len(), " AND lease_holder = $A");
        params.push(h);
    }
    // The text in the status message, ASCII case ignored as `OperatorFilter::matches`
    // does (`translate`, not `lower`, whose folding depends on the database's locale);
    // `strpos`, not `LIKE`, so `%` and `_` are plain characters. The record read as
    // the generated columns read it (a NUL, which text cannot hold, as a space).
    let text = filter.lowered_text();
    if let Some(t) = &text {
        cond(&mut sql, params.len(), TEXT_CONDITION);
        params.push(t);
    }
    sql.push_str(" ORDER BY created_at DESC, id DESC LIMIT $2");
    let st = c.prepare_cached(&sql).await.map_err(pg)?;
    let rows = c.query(&st, &params).await.map_err(pg)?;
    let tasks = rows
        .iter()
        .map(|row| decode(row.try_get(0).map_err(backend)?))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(OperatorPage::from_rows(filter, tasks, limit))
}

/// Any owner's task `id` visible at `now`.
pub(crate) async fn read<C: GenericClient>(
    c: &C,
    id: &TaskId,
    now: Millis,
) -> Result<TaskRecord, StoreError> {
    let st = c
        .prepare_cached(
            "SELECT record FROM tasks
             WHERE id = $1 AND (expires_at IS NULL OR expires_at > $2)",
        )
        .await
        .map_err(pg)?;
    let row = c
        .query_opt(&st, &[&id.as_str(), &now])
        .await
        .map_err(pg)?
        .ok_or(StoreError::NotFound)?;
    decode(row.try_get(0).map_err(backend)?)
}

/// The stored tasks by status and by tool.
pub(crate) async fn counts<C: GenericClient>(c: &C) -> Result<TaskCounts, StoreError> {
    let mut counts = TaskCounts::default();
    let st = c
        .prepare_cached("SELECT status, count(*) FROM tasks GROUP BY status")
        .await
        .map_err(pg)?;
    for row in c.query(&st, &[]).await.map_err(pg)? {
        let name: Option<&str> = row.try_get(0).map_err(backend)?;
        let n: i64 = row.try_get(1).map_err(backend)?;
        let status = name
            .and_then(parse_status)
            .ok_or_else(|| backend(format!("a task row with an unknown status {name:?}")))?;
        counts.add_status(status, u64::try_from(n).unwrap_or(0));
    }
    let st = c
        .prepare_cached("SELECT tool, count(*) FROM tasks WHERE tool IS NOT NULL GROUP BY tool")
        .await
        .map_err(pg)?;
    for row in c.query(&st, &[]).await.map_err(pg)? {
        let tool: String = row.try_get(0).map_err(backend)?;
        let n: i64 = row.try_get(1).map_err(backend)?;
        counts.by_tool.insert(tool, u64::try_from(n).unwrap_or(0));
    }
    Ok(counts)
}
