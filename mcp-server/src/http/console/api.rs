//! The console's JSON API (behind the access layer): the task list with its filters and
//! cursor, one task, cancel as operator, the counts, the activity of the charts and the
//! event stream (`events.rs`). Each handler is one store call of the operator's view
//! (contract rule 22), but cancel, which is the owner's `tasks/cancel` store call. What
//! shows a task in full (one task, cancel) is audited at INFO, a list read at DEBUG
//! (`trail.rs`).

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use mcp_tasks::{Actor, LogScope, OperatorFilter, TaskCounts, TaskId};
use mcp_tasks_protocol::tasks::TaskStatus;
use serde::Serialize;
use serde_json::{Map, Value};

use super::access::Operator;
use super::error::ApiError;
use super::views::{MAX_LIMIT, TaskDetail, TaskSummary};
use super::{Console, activity, events, filter, rerun, trail};

/// A page's default length.
pub(super) const DEFAULT_LIMIT: usize = 50;

/// The API's routes, at their full paths.
pub(super) fn routes() -> Router<Arc<Console>> {
    Router::new()
        .route("/console/api/tasks", get(list))
        .route("/console/api/tasks/{id}", get(one))
        .route("/console/api/tasks/{id}/cancel", post(cancel))
        .route("/console/api/counts", get(counts))
        .route("/console/api/activity", get(activity::handle))
        .route("/console/api/events", get(events::handle))
}

/// A page of the task list.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ListReply {
    tasks: Vec<TaskSummary>,
    next_cursor: Option<String>,
}

/// What a list request asks: the filter, the cursor, the page's length.
#[derive(Debug, Default, PartialEq)]
struct ListQuery {
    filter: OperatorFilter,
    cursor: Option<String>,
    limit: usize,
}

/// Reads the list's parameters; an empty value is no value, an unknown or repeated
/// parameter or a bad value is a 400 naming it.
fn list_query(pairs: Vec<(String, String)>) -> Result<ListQuery, ApiError> {
    let mut query = ListQuery {
        limit: DEFAULT_LIMIT,
        ..ListQuery::default()
    };
    read_params(pairs, |name, value| {
        match name {
            "cursor" => query.cursor = Some(value),
            "limit" => query.limit = limit(&value, MAX_LIMIT)?,
            // The filter's parameters (`filter.rs`, shared with bulk cancel).
            other => return filter::apply(&mut query.filter, other, value),
        }
        Ok(true)
    })?;
    Ok(query)
}

/// Reads query parameters strictly: a repeated one is 400, an empty value is no value;
/// `each` takes the others (name, value) and says whether it knows the name (an unknown
/// one is 400).
pub(super) fn read_params(
    pairs: Vec<(String, String)>,
    mut each: impl FnMut(&str, String) -> Result<bool, ApiError>,
) -> Result<(), ApiError> {
    let mut seen = std::collections::BTreeSet::new();
    for (name, value) in pairs {
        if !seen.insert(name.clone()) {
            return Err(bad(format!("parameter {name} given twice")));
        }
        if value.is_empty() {
            continue;
        }
        if !each(&name, value)? {
            return Err(bad(format!("unknown parameter {name}")));
        }
    }
    Ok(())
}

/// A page's length, `limit`: a whole number from 1 to `max`.
pub(super) fn limit(value: &str, max: usize) -> Result<usize, ApiError> {
    value
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| bad(format!("limit must be a whole number from 1 to {max}")))
}

/// A 400 saying `message`.
pub(super) fn bad(message: String) -> ApiError {
    ApiError::BadRequest(message)
}

/// A query string's parameters, in order (a malformed one is 400).
pub(super) fn query_pairs(
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Vec<(String, String)>, ApiError> {
    let Query(pairs) = query.map_err(|e| bad(format!("bad query string: {e}")))?;
    Ok(pairs)
}

/// A status by its wire name.
pub(super) fn status(name: &str) -> Result<TaskStatus, ApiError> {
    TaskStatus::ALL
        .into_iter()
        .find(|s| s.as_str() == name)
        .ok_or_else(|| {
            let names: Vec<&str> = TaskStatus::ALL.iter().map(|s| s.as_str()).collect();
            bad(format!("status must be one of {}", names.join(", ")))
        })
}

/// `GET /console/api/tasks` (audited at DEBUG).
async fn list(
    State(console): State<Arc<Console>>,
    Extension(Operator(operator)): Extension<Operator>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Json<ListReply>, ApiError> {
    let query = list_query(query_pairs(query)?)?;
    let page = console
        .store
        .operator_list(&query.filter, query.cursor.as_deref(), query.limit)
        .await?;
    trail::listed(&operator, page.tasks.len());
    Ok(Json(ListReply {
        tasks: page
            .tasks
            .iter()
            .map(|t| TaskSummary::of(t, &console.seal))
            .collect(),
        next_cursor: page.next_cursor,
    }))
}

/// The `{id}` of a path (a task's, a node's). (Read by name: the route mounting the
/// console adds a parameter of its own.)
pub(super) fn path_param(params: Vec<(String, String)>) -> Option<String> {
    params
        .into_iter()
        .find(|(name, _)| name == "id")
        .map(|(_, id)| id)
}

/// The `{id}` of a task's path ([`path_param`]).
pub(super) fn path_id(params: Vec<(String, String)>) -> Result<TaskId, ApiError> {
    path_param(params)
        .map(TaskId::from_wire)
        .ok_or(ApiError::NotFound("task not found"))
}

/// `GET /console/api/tasks/{id}`: the task in full (its arguments, questions, answers
/// and result, and whether it may be re-run: `rerun.rs`), audited at INFO with the
/// operator as actor.
async fn one(
    State(console): State<Arc<Console>>,
    Extension(Operator(operator)): Extension<Operator>,
    Path(params): Path<Vec<(String, String)>>,
) -> Result<Json<rerun::WithRerun>, ApiError> {
    let record = console.store.operator_get(&path_id(params)?).await?;
    trail::read(&console.seal, "console: read", &operator, &record);
    let detail = TaskDetail::of(&record, &console.seal);
    Ok(Json(rerun::view(&console, &record, detail).await?))
}

/// `POST /console/api/tasks/{id}/cancel`: the owner's `tasks/cancel` (its worker is
/// asked to stop; a task waiting for a worker is cancelled at once; a finished task is
/// left as it is), audited with the operator as actor; then the task as it stands.
async fn cancel(
    State(console): State<Arc<Console>>,
    Extension(Operator(operator)): Extension<Operator>,
    Path(params): Path<Vec<(String, String)>>,
) -> Result<Json<TaskDetail>, ApiError> {
    const OP: &str = "console: cancel";
    let task_id = path_id(params)?;
    let record = console.store.operator_get(&task_id).await?;
    // The timeline names the operator as who asked (the task's log).
    let scope = LogScope {
        node: None,
        actor: Some(Actor::Operator),
    };
    let outcome = scope
        .run(console.store.request_cancel(&record.owner, &task_id))
        .await;
    let audited = match &outcome {
        Ok(after) => Ok(after.status.as_str()),
        Err(e) => Err(e.to_string()),
    };
    crate::audit::record_operator(
        &console.seal,
        OP,
        &operator,
        &record.owner,
        task_id.as_str(),
        &audited,
    );
    Ok(Json(TaskDetail::of(&outcome?, &console.seal)))
}

/// `GET /console/api/counts`.
async fn counts(State(console): State<Arc<Console>>) -> Result<Json<Value>, ApiError> {
    let counts = console.store.operator_counts().await?;
    Ok(Json(counts_json(&counts)))
}

/// `{"byStatus": {status: n, ...every status}, "byTool": {tool: n}}`.
fn counts_json(counts: &TaskCounts) -> Value {
    let by_status: Map<String, Value> = TaskStatus::ALL
        .into_iter()
        .map(|s| (s.as_str().to_owned(), Value::from(counts.status(s))))
        .collect();
    let by_tool: Map<String, Value> = counts
        .by_tool
        .iter()
        .map(|(tool, n)| (tool.clone(), Value::from(*n)))
        .collect();
    serde_json::json!({ "byStatus": by_status, "byTool": by_tool })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use mcp_tasks::Owner;

    /// Query parameters as the handlers get them.
    pub(in crate::http::console) fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn list_parameters_are_read_strictly() {
        let q = list_query(pairs(&[
            ("status", "input_required"),
            ("tool", "slow"),
            ("owner", "alice"),
            ("node", "n1"),
            ("createdFrom", "10"),
            ("createdBefore", "20"),
            ("text", "50%"),
            ("cursor", "c"),
            ("limit", "500"),
            ("ignored-when-empty", ""),
        ]))
        .expect("valid");
        assert_eq!(q.filter.status, Some(TaskStatus::InputRequired));
        assert_eq!(q.filter.tool.as_deref(), Some("slow"));
        assert_eq!(q.filter.owner, Some(Owner::new("alice")));
        assert_eq!(q.filter.lease_holder.as_deref(), Some("n1"));
        assert_eq!(
            (q.filter.created_from, q.filter.created_before),
            (Some(10), Some(20))
        );
        assert_eq!(q.filter.text.as_deref(), Some("50%"));
        assert_eq!((q.cursor.as_deref(), q.limit), (Some("c"), 500));
        assert_eq!(list_query(Vec::new()).expect("empty").limit, DEFAULT_LIMIT);
        for bad in [
            &[("status", "bogus")][..],
            &[("limit", "0")],
            &[("limit", "501")],
            &[("limit", "-1")],
            &[("createdFrom", "yesterday")],
            &[("colour", "red")],
            &[("tool", "a"), ("tool", "b")],
            &[("text", "a\u{7}b")],
        ] {
            assert!(
                matches!(list_query(pairs(bad)), Err(ApiError::BadRequest(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn counts_name_every_status() {
        let mut counts = TaskCounts::default();
        counts.add_status(TaskStatus::Failed, 2);
        counts.by_tool.insert("slow".into(), 2);
        assert_eq!(
            counts_json(&counts),
            serde_json::json!({
                "byStatus": {"working": 0, "input_required": 0, "completed": 0, "failed": 2, "cancelled": 0},
                "byTool": {"slow": 2},
            })
        );
    }
}
