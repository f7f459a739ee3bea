//! The operator's view (contract rule 22) in SQL: the listing walks one index in
//! creation order backwards (the owner's, the lease holder's, the tool's, the status's or
//! all tasks', as the planner picks for the filter); the counts are a grouped pass over
//! the tasks (schema version 3).

use rusqlite::types::ToSql;
use rusqlite::{Connection, OptionalExtension};

use super::schema::backend;
use crate::error::StoreError;
use crate::operator::{OperatorFilter, OperatorPage, TaskCounts, parse_status};
use crate::record::{Millis, TaskId, TaskRecord};

fn decode(json: &str) -> Result<TaskRecord, StoreError> {
    serde_json::from_str(json).map_err(|e| backend(format!("corrupt task record: {e}")))
}

/// One page of `filter`'s tasks visible at `now` before `before`, newest first.
pub(crate) fn list(
    conn: &Connection,
    filter: &OperatorFilter,
    before: Option<(Millis, TaskId)>,
    limit: usize,
    now: Millis,
) -> Result<OperatorPage, StoreError> {
    let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
    let status = filter.status.map(|s| s.as_str());
    let owner = filter.owner.as_ref().map(|o| o.as_str());
    let before_id = before.as_ref().map(|(_, id)| id.as_str());
    let before_at = before.as_ref().map(|(at, _)| *at);
    let mut sql =
        String::from("SELECT record FROM tasks WHERE (expires_at IS NULL OR expires_at > ?1)");
    let mut params: Vec<&dyn ToSql> = vec![&now, &fetch];
    // Each condition's parameters are numbered after those already bound.
    if let (Some(at), Some(id)) = (&before_at, &before_id) {
        let n = params.len();
        sql.push_str(&format!(" AND (created_at, id) < (?{}, ?{})", n + 1, n + 2));
        params.push(at);
        params.push(id);
    }
    let conditions: [(&str, Option<&dyn ToSql>); 6] = [
        ("status =", status.as_ref().map(|s| s as &dyn ToSql)),
        ("tool =", filter.tool.as_ref().map(|t| t as &dyn ToSql)),
        ("owner =", owner.as_ref().map(|o| o as &dyn ToSql)),
        (
            "created_at >=",
            filter.created_from.as_ref().map(|a| a as &dyn ToSql),
        ),
        (
            "created_at <",
            filter.created_before.as_ref().map(|a| a as &dyn ToSql),
        ),
        (
            "lease_holder =",
            filter.lease_holder.as_ref().map(|h| h as &dyn ToSql),
        ),
    ];
    for (test, value) in conditions {
        if let Some(value) = value {
            sql.push_str(&format!(" AND {test} ?{}", params.len() + 1));
            params.push(value);
        }
    }
    // The text in the status message, ASCII case ignored as `OperatorFilter::matches`
    // does (SQLite's `lower` lowers ASCII letters only); `instr`, not `LIKE`, so `%`
    // and `_` are plain characters.
    let text = filter.lowered_text();
    if let Some(text) = &text {
        sql.push_str(&format!(
            " AND instr(lower(json_extract(record, '$.status_message')), ?{}) > 0",
            params.len() + 1
        ));
        params.push(text);
    }
    sql.push_str(" ORDER BY created_at DESC, id DESC LIMIT ?2");
    let mut st = conn.prepare_cached(&sql).map_err(backend)?;
    let rows = st
        .query_map(params.as_slice(), |row| row.get::<_, String>(0))
        .map_err(backend)?;
    let mut tasks = Vec::new();
    for json in rows {
        tasks.push(decode(&json.map_err(backend)?)?);
    }
    Ok(OperatorPage::from_rows(filter, tasks, limit))
}

/// Any owner's task `id` visible at `now`.
pub(crate) fn read(conn: &Connection, id: &TaskId, now: Millis) -> Result<TaskRecord, StoreError> {
    let json: Option<String> = conn
        .prepare_cached(
            "SELECT record FROM tasks
             WHERE id = ?1 AND (expires_at IS NULL OR expires_at > ?2)",
        )
        .and_then(|mut st| {
            st.query_row(rusqlite::params![id.as_str(), now], |row| row.get(0))
                .optional()
        })
        .map_err(backend)?;
    decode(&json.ok_or(StoreError::NotFound)?)
}

/// The stored tasks by status and by tool.
pub(crate) fn counts(conn: &Connection) -> Result<TaskCounts, StoreError> {
    let mut counts = TaskCounts::default();
    let mut st = conn
        .prepare_cached("SELECT status, count(*) FROM tasks GROUP BY status")
        .map_err(backend)?;
    let rows = st
        .query_map([], |row| {
            Ok((row.get::<_, Option<String>>(0)?, row.get::<_, i64>(1)?))
        })
        .map_err(backend)?;
    for row in rows {
        let (name, n) = row.map_err(backend)?;
        let status = name
            .as_deref()
            .and_then(parse_status)
            .ok_or_else(|| backend(format!("a task row with an unknown status {name:?}")))?;
        counts.add_status(status, u64::try_from(n).unwrap_or(0));
    }
    let mut st = conn
        .prepare_cached("SELECT tool, count(*) FROM tasks WHERE tool IS NOT NULL GROUP BY tool")
        .map_err(backend)?;
    let rows = st
        .query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
        })
        .map_err(backend)?;
    for row in rows {
        let (tool, n) = row.map_err(backend)?;
        counts.by_tool.insert(tool, u64::try_from(n).unwrap_or(0));
    }
    Ok(counts)
}
