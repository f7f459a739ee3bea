//! One store record, shown in the wire view of the caller's revision.

use std::time::{Duration, UNIX_EPOCH};

use mcp_protocol::tasks::{DetailedTask, Task};
use mcp_protocol::v2026::InputRequests;
use mcp_tasks::{Millis, Outcome, TaskRecord};

/// An ISO 8601 / RFC 3339 timestamp with milliseconds, in UTC.
pub fn timestamp(ms: Millis) -> String {
    let at = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(at).to_string()
}

fn millis(v: Option<u64>) -> Option<i64> {
    v.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}

/// The extension's `Task` fields of a record.
pub fn task(rec: &TaskRecord) -> Task {
    let mut task = Task::new(
        rec.id.as_str(),
        rec.status,
        timestamp(rec.created_at),
        timestamp(rec.last_updated_at),
    );
    task.status_message = rec.status_message.clone();
    task.ttl_ms = millis(rec.ttl_ms);
    task.poll_interval_ms = millis(rec.poll_interval_ms);
    task
}

/// The extension's `DetailedTask` of a record: `inputRequests`, `result` or `error` as its
/// status requires.
pub fn detailed(rec: &TaskRecord) -> DetailedTask {
    let base = task(rec);
    match (&rec.outcome, rec.status) {
        (_, mcp_protocol::tasks::TaskStatus::InputRequired) => {
            let requests: InputRequests = rec
                .input_requests
                .iter()
                .filter_map(|(k, v)| {
                    serde_json::from_value(v.clone())
                        .ok()
                        .map(|r| (k.clone(), r))
                })
                .collect();
            base.input_required(requests)
        }
        (Some(Outcome::Result(result)), _) => base.completed(result.clone()),
        (Some(Outcome::Error(error)), _) => base.failed(error.clone()),
        _ => base.to_detailed().unwrap_or_else(|| {
            // A terminal status without its outcome cannot come out of the store's rules.
            base.failed(mcp_protocol::jsonrpc::ErrorObject::new(
                mcp_protocol::error_codes::INTERNAL_ERROR,
                "task record has no outcome",
            ))
        }),
    }
}
