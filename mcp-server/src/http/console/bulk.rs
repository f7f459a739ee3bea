//! `POST /console/api/tasks/cancel`: bulk cancel, the unfinished tasks the list's filter
//! matches (behind the access layer, like every console route: an operator's request
//! only, a viewer's is 403 there).
//!
//! The body, JSON: `{"filter": {...}, "dryRun": true | false}`. `filter` holds the list's
//! filter parameters (`filter.rs`: `status`, `tool`, `owner`, `node`, `createdFrom`,
//! `createdBefore`, `text`; strings, the times numbers or strings; an empty string or
//! `null` is no value; `{}` is every unfinished task); `dryRun` must be given.
//!
//! - A dry run cancels nothing and answers `{"matched": N, "max": 10000, "overMax":
//!   bool}`: the unfinished (`working`, `input_required`) tasks matching, counted up to
//!   [`MAX_BULK_CANCEL`] + 1 (`overMax` then: more than the maximum match).
//! - Otherwise each matching unfinished task is cancelled as `POST
//!   /console/api/tasks/{id}/cancel` cancels it (the owner's `request_cancel`: a task
//!   waiting for a worker is cancelled at once, a running one's worker is asked to
//!   stop), its log naming the operator as actor, each audited (`op="console: bulk
//!   cancel"`, the operator as actor, the task's owner as principal); the answer is
//!   `{"matched": N, "cancelled": C, "alreadyTerminal": T, "failed": [{"taskId",
//!   "error"}]}` (`alreadyTerminal`: finished before its turn came). The cancels run in
//!   a task of their own, [`CONCURRENCY`] at a time, so a client that goes away does not
//!   leave them half done.
//! - More than [`MAX_BULK_CANCEL`] matching: 422 naming the maximum, and nothing is
//!   cancelled: narrow the filter (the dry run says how many match).
//!
//! The whole request is audited once more at INFO (`op="console: bulk cancel"`, the
//! operator, whether it was a dry run, the counts; `trail.rs`).

use std::collections::HashSet;
use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Extension, State};
use axum::routing::post;
use axum::{Json, Router};
use futures::StreamExt as _;
use mcp_tasks::{Actor, LogScope, OperatorFilter, Owner, StoreError, TaskId, TaskStore};
use mcp_tasks_protocol::tasks::TaskStatus;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::access::Operator;
use super::error::ApiError;
use super::views::MAX_LIMIT;
use super::{Console, filter, trail};

/// The most tasks one bulk cancel cancels.
pub(super) const MAX_BULK_CANCEL: usize = 10_000;

/// How many cancels of one bulk cancel run at once.
const CONCURRENCY: usize = 8;

/// The audit trail's `op` of bulk cancel and of each of its cancels.
const OP: &str = "console: bulk cancel";

/// The route, at its full path.
pub(super) fn routes() -> Router<Arc<Console>> {
    Router::new().route(
        "/console/api/tasks/cancel",
        post(handle).fallback(wrong_method),
    )
}

/// Any other method on the bulk cancel's path: 405, as JSON like every console error.
async fn wrong_method() -> axum::response::Response {
    let mut response = super::error::json_error(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "bulk cancel is POST /console/api/tasks/cancel",
    );
    response.headers_mut().insert(
        axum::http::header::ALLOW,
        axum::http::HeaderValue::from_static("POST"),
    );
    response
}

/// The request's body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BulkRequest {
    #[serde(default)]
    filter: Map<String, Value>,
    dry_run: bool,
}

/// A task that could not be cancelled, and why (no store detail).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Failure {
    task_id: String,
    error: &'static str,
}

/// The answer of a dry run.
#[derive(Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct DryRun {
    matched: usize,
    max: usize,
    over_max: bool,
}

/// The answer of a bulk cancel.
#[derive(Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Cancelled {
    matched: usize,
    cancelled: usize,
    already_terminal: usize,
    failed: Vec<Failure>,
}

/// The filter parameters that are times, which may be given as numbers.
const TIMES: [&str; 2] = ["createdFrom", "createdBefore"];

/// The list's filter from the body's `filter`: each member a filter parameter
/// (`filter.rs`), its value a string (or for a time a whole number too); `null` and
/// `""` are no value.
fn body_filter(members: Map<String, Value>) -> Result<OperatorFilter, ApiError> {
    let mut filter = OperatorFilter::default();
    for (name, value) in members {
        let value = match value {
            Value::Null => continue,
            Value::String(s) if s.is_empty() => continue,
            Value::String(s) => s,
            Value::Number(n) if n.is_i64() && TIMES.contains(&name.as_str()) => n.to_string(),
            _ => {
                return Err(ApiError::BadRequest(format!(
                    "filter.{name} must be a string (or, for a time, a whole number)"
                )));
            }
        };
        if !filter::apply(&mut filter, &name, value)? {
            return Err(ApiError::BadRequest(format!(
                "unknown filter parameter {name}"
            )));
        }
    }
    Ok(filter)
}

/// The unfinished tasks (`working`, `input_required`) that `filter` matches, at most
/// `cap + 1` of them (one more than `cap` says that more than `cap` match), each once:
/// the operator's listing walked by status (its status index, so finished tasks are
/// not read), newest first, in pages.
pub(super) async fn unfinished(
    store: &dyn TaskStore,
    filter: &OperatorFilter,
    cap: usize,
) -> Result<Vec<(Owner, TaskId)>, StoreError> {
    let statuses: Vec<TaskStatus> = match filter.status {
        Some(status) if status.is_terminal() => Vec::new(),
        Some(status) => vec![status],
        None => vec![TaskStatus::Working, TaskStatus::InputRequired],
    };
    let mut found = Vec::new();
    // A task that moved from one status to the other during the walk is listed twice.
    let mut seen = HashSet::new();
    for status in statuses {
        let by_status = OperatorFilter {
            status: Some(status),
            ..filter.clone()
        };
        let mut cursor: Option<String> = None;
        loop {
            let page = store
                .operator_list(&by_status, cursor.as_deref(), MAX_LIMIT)
                .await?;
            for task in page.tasks {
                if task.status.is_terminal() || !seen.insert(task.id.clone()) {
                    continue;
                }
                found.push((task.owner, task.id));
                if found.len() > cap {
                    return Ok(found);
                }
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    Ok(found)
}

/// How one task's cancel went.
#[derive(Debug, Clone, PartialEq)]
enum One {
    /// Cancelled, or its worker asked to stop.
    Cancelled,
    /// It had finished before its turn came.
    AlreadyTerminal,
    /// The store failed or the task is gone.
    Failed(Failure),
}

/// Cancels `owner`'s task `id` as the single cancel route does, its log naming the
/// operator as actor, audited with `operator` as actor.
async fn cancel_one(console: &Console, operator: &str, owner: Owner, id: TaskId) -> One {
    let scope = LogScope {
        node: None,
        actor: Some(Actor::Operator),
    };
    let outcome = scope.run(console.store.request_cancel(&owner, &id)).await;
    let audited = match &outcome {
        Ok(after) => Ok(after.status.as_str()),
        Err(e) => Err(e.to_string()),
    };
    crate::audit::record_operator(&console.seal, OP, operator, &owner, id.as_str(), &audited);
    match outcome {
        // Cancelled at once (it waited for a worker), or its worker was asked to stop.
        Ok(after) if after.cancel_requested && !after.is_terminal() => One::Cancelled,
        Ok(after) if after.status == TaskStatus::Cancelled && after.cancel_requested => {
            One::Cancelled
        }
        Ok(_) => One::AlreadyTerminal,
        Err(e) => {
            tracing::warn!(task_id = %id.as_str(), error = %e, "console: bulk cancel of a task failed");
            One::Failed(Failure {
                task_id: id.as_str().to_owned(),
                error: failure_message(&e),
            })
        }
    }
}

/// What the answer says of a task whose cancel failed (no store detail).
fn failure_message(e: &StoreError) -> &'static str {
    match e {
        StoreError::NotFound => "task not found (expired or deleted)",
        e if e.is_transient() => mcp_tasks::STORE_UNAVAILABLE_MESSAGE,
        _ => "the task store failed; see the server's log",
    }
}

/// The refusal past [`MAX_BULK_CANCEL`].
fn too_many() -> ApiError {
    ApiError::Unprocessable(format!(
        "more than {MAX_BULK_CANCEL} unfinished tasks match this filter; one bulk cancel \
         cancels at most {MAX_BULK_CANCEL}: narrow the filter (e.g. by tool, owner or \
         createdBefore) and try again; nothing was cancelled"
    ))
}

/// `POST /console/api/tasks/cancel` (see the module doc).
async fn handle(
    State(console): State<Arc<Console>>,
    Extension(Operator(operator)): Extension<Operator>,
    body: Result<Json<BulkRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(request) = body.map_err(|e| {
        ApiError::BadRequest(format!(
            "the body must be JSON {{\"filter\": {{...}}, \"dryRun\": true|false}}: {}",
            e.body_text()
        ))
    })?;
    let filter = body_filter(request.filter)?;
    let found = unfinished(console.store.as_ref(), &filter, MAX_BULK_CANCEL).await?;
    let matched = found.len();
    if request.dry_run {
        trail::bulk_cancel(&operator, true, matched, None);
        let answer = DryRun {
            matched,
            max: MAX_BULK_CANCEL,
            over_max: matched > MAX_BULK_CANCEL,
        };
        return Ok(Json(serde_json::to_value(answer).unwrap_or_default()));
    }
    if matched > MAX_BULK_CANCEL {
        trail::bulk_cancel(&operator, false, matched, None);
        return Err(too_many());
    }
    // In a task of its own: a client gone away does not leave the cancels half done.
    let work = {
        let console = Arc::clone(&console);
        let operator = operator.clone();
        tokio::spawn(async move {
            let mut answer = Cancelled {
                matched,
                ..Cancelled::default()
            };
            let mut each = futures::stream::iter(found)
                .map(|(owner, id)| cancel_one(&console, &operator, owner, id))
                .buffer_unordered(CONCURRENCY);
            while let Some(one) = each.next().await {
                match one {
                    One::Cancelled => answer.cancelled += 1,
                    One::AlreadyTerminal => answer.already_terminal += 1,
                    One::Failed(failure) => answer.failed.push(failure),
                }
            }
            answer
        })
    };
    let answer = work.await.map_err(|e| {
        tracing::error!(error = %e, "console: a bulk cancel's task ended abnormally");
        ApiError::Internal
    })?;
    trail::bulk_cancel(
        &operator,
        false,
        matched,
        Some((
            answer.cancelled,
            answer.already_terminal,
            answer.failed.len(),
        )),
    );
    Ok(Json(serde_json::to_value(answer).unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_tasks::{Limits, MemoryStore, NewTask};
    use serde_json::json;

    fn new_task(owner: &str, tool: &str) -> NewTask {
        super::super::test_task(owner, Some(tool))
    }

    #[test]
    fn the_body_filter_is_the_lists() {
        let filter = body_filter(
            json!({
                "status": "working",
                "tool": "slow",
                "owner": "alice",
                "node": "n1",
                "createdFrom": 10,
                "createdBefore": "20",
                "text": "copy",
                "cursor": null,
                "ignored": "",
            })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        );
        let filter = filter.expect("valid");
        assert_eq!(filter.status, Some(TaskStatus::Working));
        assert_eq!(filter.tool.as_deref(), Some("slow"));
        assert_eq!(filter.owner, Some(Owner::new("alice")));
        assert_eq!(filter.lease_holder.as_deref(), Some("n1"));
        assert_eq!(
            (filter.created_from, filter.created_before),
            (Some(10), Some(20))
        );
        assert_eq!(filter.text.as_deref(), Some("copy"));
        for bad in [
            json!({"colour": "red"}),
            json!({"cursor": "c"}),
            json!({"limit": 5}),
            json!({"status": "bogus"}),
            json!({"tool": ["a"]}),
            json!({"tool": 7}),
            json!({"createdFrom": 1.5}),
            json!({"text": "x".repeat(201)}),
        ] {
            let members = bad.as_object().cloned().unwrap_or_default();
            assert!(
                matches!(body_filter(members), Err(ApiError::BadRequest(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn dry_run_is_required() {
        assert!(serde_json::from_value::<BulkRequest>(json!({"filter": {}})).is_err());
        assert!(
            serde_json::from_value::<BulkRequest>(json!({"dryRun": true, "extra": 1})).is_err()
        );
        let request: BulkRequest = serde_json::from_value(json!({"dryRun": false})).expect("valid");
        assert!(!request.dry_run && request.filter.is_empty());
    }

    /// 10,001 unfinished tasks: the walk stops one past the maximum (that is how the
    /// handler knows to refuse), finished tasks are not counted, and the filter holds.
    #[tokio::test]
    async fn the_walk_stops_one_past_the_maximum() {
        let limits = Limits {
            max_live_tasks_per_owner: usize::MAX,
            max_live_tasks_total: usize::MAX,
            ..Limits::default()
        };
        let store = MemoryStore::new(limits);
        for i in 0..=MAX_BULK_CANCEL {
            let owner = if i % 2 == 0 { "alice" } else { "bob" };
            store.create(new_task(owner, "bulk")).await.expect("create");
        }
        let done = store
            .create(new_task("alice", "bulk"))
            .await
            .expect("create");
        store
            .cancel(&Owner::new("alice"), &done.id, None)
            .await
            .expect("cancel");
        let all = OperatorFilter::default();
        let found = unfinished(&store, &all, MAX_BULK_CANCEL)
            .await
            .expect("walk");
        assert_eq!(found.len(), MAX_BULK_CANCEL + 1, "one past the maximum");
        assert!(!found.iter().any(|(_, id)| *id == done.id));
        let unique: HashSet<_> = found.iter().map(|(_, id)| id.clone()).collect();
        assert_eq!(unique.len(), found.len(), "each task once");
        let bob = OperatorFilter {
            owner: Some(Owner::new("bob")),
            ..OperatorFilter::default()
        };
        let bobs = unfinished(&store, &bob, MAX_BULK_CANCEL)
            .await
            .expect("walk");
        assert_eq!(bobs.len(), MAX_BULK_CANCEL / 2, "within the maximum");
        assert!(bobs.iter().all(|(owner, _)| owner.as_str() == "bob"));
        let finished = OperatorFilter {
            status: Some(TaskStatus::Cancelled),
            ..OperatorFilter::default()
        };
        let none = unfinished(&store, &finished, MAX_BULK_CANCEL)
            .await
            .expect("walk");
        assert!(none.is_empty(), "finished tasks are never cancelled");
    }

    #[test]
    fn too_many_names_the_maximum() {
        let ApiError::Unprocessable(message) = too_many() else {
            panic!("422");
        };
        assert!(
            message.contains("10000") && message.contains("narrow"),
            "{message}"
        );
    }
}
