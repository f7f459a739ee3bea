//! One store record, shown in the wire view of the caller's revision: the tasks
//! extension's `Task` / `DetailedTask` (2026-07-28), and the 2025-11-25 `Task`.

use std::time::{Duration, UNIX_EPOCH};

use mcp_tasks::{Millis, Outcome, TaskRecord};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::tasks::{DetailedTask, Task, TaskStatus};
use mcp_tasks_protocol::v2025;
use mcp_tasks_protocol::v2026::InputRequests;
use serde_json::Value;

/// An ISO 8601 / RFC 3339 timestamp with milliseconds, in UTC.
pub(crate) fn timestamp(ms: Millis) -> String {
    let at = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(at).to_string()
}

fn millis(v: Option<u64>) -> Option<i64> {
    v.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}

/// The extension's `Task` fields of a record.
pub(crate) fn task(rec: &TaskRecord) -> Task {
    task_with(rec, rec.status_message.clone())
}

/// The extension's `Task` fields of a record it consumes: the status message is moved,
/// not copied.
fn into_task(mut rec: TaskRecord) -> Task {
    let status_message = rec.status_message.take();
    task_with(&rec, status_message)
}

/// The extension's `Task` fields of `rec`, with `status_message` (its own, cloned or
/// moved out by the caller).
fn task_with(rec: &TaskRecord, status_message: Option<String>) -> Task {
    let mut task = Task::new(
        rec.id.as_str(),
        rec.status,
        timestamp(rec.created_at),
        timestamp(rec.last_updated_at),
    );
    task.status_message = status_message;
    task.ttl_ms = millis(rec.ttl_ms);
    task.poll_interval_ms = millis(rec.poll_interval_ms);
    task
}

/// The extension's `DetailedTask` of a record: `inputRequests`, `result` or `error` as its
/// status requires. Takes the record: its result or error moves into the view, not copied.
pub(crate) fn detailed(mut rec: TaskRecord) -> DetailedTask {
    let outcome = rec.outcome.take();
    let input_requests = std::mem::take(&mut rec.input_requests);
    let status = rec.status;
    let base = into_task(rec);
    match (outcome, status) {
        (_, TaskStatus::InputRequired) => {
            let requests: InputRequests = input_requests
                .into_iter()
                .filter_map(|(k, v)| serde_json::from_value(v).ok().map(|r| (k, r)))
                .collect();
            base.input_required(requests)
        }
        (Some(Outcome::Result(result)), _) => base.completed(result),
        (Some(Outcome::Error(error)), _) => base.failed(error),
        _ => base.into_detailed().unwrap_or_else(|base| {
            // A terminal status without its outcome cannot come out of the store's rules.
            base.failed(mcp_tasks_protocol::jsonrpc::ErrorObject::new(
                mcp_tasks_protocol::error_codes::INTERNAL_ERROR,
                "task record has no outcome",
            ))
        }),
    }
}

/// Whether a completed task's result is a tool error (`isError: true`).
fn is_tool_error(rec: &TaskRecord) -> bool {
    matches!(&rec.outcome, Some(Outcome::Result(r)) if r.get("isError") == Some(&Value::Bool(true)))
}

/// A record in the 2025-11-25 view: `ttl`/`pollInterval`, and a tool error shows as
/// `failed` (the 2026-07-28 view shows it `completed`).
pub(crate) fn task_2025(rec: &TaskRecord) -> v2025::Task {
    let status = if rec.status == TaskStatus::Completed && is_tool_error(rec) {
        TaskStatus::Failed
    } else {
        rec.status
    };
    let mut task = v2025::Task::new(
        rec.id.as_str(),
        status,
        timestamp(rec.created_at),
        timestamp(rec.last_updated_at),
    );
    task.status_message = rec.status_message.clone();
    task.ttl = millis(rec.ttl_ms);
    task.poll_interval = millis(rec.poll_interval_ms);
    task
}

/// A tool's 2026-shaped result in the 2025-11-25 shape (no `resultType`).
pub(crate) fn result_2025(mut result: JsonObject) -> JsonObject {
    result.remove("resultType");
    result
}
