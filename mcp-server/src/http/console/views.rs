//! A task as the console's API shows it: [`TaskSummary`] (a row of the list, an event of
//! the stream) and [`TaskDetail`] (one task in full). Times are milliseconds since the
//! Unix epoch; names are camelCase.

use std::collections::BTreeMap;

use mcp_tasks::{Millis, Outcome, TaskRecord};

use crate::seal::SealKey;
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use serde::Serialize;
use serde_json::Value;

/// A page's greatest length.
pub(super) const MAX_LIMIT: usize = 500;

/// One task in a list or an event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TaskSummary {
    pub(super) id: String,
    /// As [`crate::audit::principal`] shows it (an unauthenticated 2025-11-25 session
    /// by its tag, never its id).
    pub(super) owner: String,
    pub(super) tool: Option<String>,
    pub(super) status: &'static str,
    pub(super) status_message: Option<String>,
    pub(super) created_at: Millis,
    pub(super) last_updated_at: Millis,
    /// `lastUpdatedAt - createdAt` once the task is finished.
    pub(super) duration_ms: Option<i64>,
    /// The lease holder (the node running it), while one holds it.
    pub(super) node: Option<String>,
    pub(super) cancel_requested: bool,
}

/// A task's lease.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LeaseView {
    holder: String,
    expires_at: Millis,
}

/// One task in full.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TaskDetail {
    #[serde(flatten)]
    pub(super) summary: TaskSummary,
    ttl_ms: Option<u64>,
    expires_at: Option<Millis>,
    poll_interval_ms: Option<u64>,
    revision: u64,
    lease: Option<LeaseView>,
    method: String,
    /// The tool's arguments (the job's; `None` for a record without one).
    arguments: Option<JsonObject>,
    input_requests: BTreeMap<String, Value>,
    input_responses: BTreeMap<String, Value>,
    result: Option<JsonObject>,
    error: Option<ErrorObject>,
    /// The W3C trace id of the call that created the task.
    trace_id: Option<String>,
}

impl TaskSummary {
    /// `rec` as the API shows it; `seal`: the server's seal key.
    pub(super) fn of(rec: &TaskRecord, seal: &SealKey) -> TaskSummary {
        TaskSummary {
            id: rec.id.as_str().to_owned(),
            owner: crate::audit::principal(seal, &rec.owner).into_owned(),
            tool: rec.origin.tool.clone(),
            status: rec.status.as_str(),
            status_message: rec.status_message.clone(),
            created_at: rec.created_at,
            last_updated_at: rec.last_updated_at,
            duration_ms: duration_ms(rec),
            node: rec.lease.as_ref().map(|l| l.holder.clone()),
            cancel_requested: rec.cancel_requested,
        }
    }
}

impl TaskDetail {
    /// `rec` in full as the API shows it; `seal`: the server's seal key.
    pub(super) fn of(rec: &TaskRecord, seal: &SealKey) -> TaskDetail {
        let (result, error) = match &rec.outcome {
            Some(Outcome::Result(r)) => (Some(r.clone()), None),
            Some(Outcome::Error(e)) => (None, Some(e.clone())),
            None => (None, None),
        };
        TaskDetail {
            summary: TaskSummary::of(rec, seal),
            ttl_ms: rec.ttl_ms,
            expires_at: rec.expires_at(),
            poll_interval_ms: rec.poll_interval_ms,
            revision: rec.revision,
            lease: rec.lease.as_ref().map(|l| LeaseView {
                holder: l.holder.clone(),
                expires_at: l.expires_at,
            }),
            method: rec.origin.method.clone(),
            arguments: rec.job.as_ref().map(|j| j.arguments.clone()),
            input_requests: rec.input_requests.clone(),
            input_responses: rec.input_responses.clone(),
            result,
            error,
            trace_id: rec
                .trace_context
                .as_ref()
                .and_then(|t| trace_id(&t.traceparent)),
        }
    }
}

/// How long a finished task ran: `lastUpdatedAt - createdAt`; `None` while it runs.
pub(super) fn duration_ms(rec: &TaskRecord) -> Option<i64> {
    rec.is_terminal()
        .then(|| rec.last_updated_at.saturating_sub(rec.created_at).max(0))
}

/// The trace id of a `traceparent` (`00-{trace id}-{span id}-{flags}`).
fn trace_id(traceparent: &str) -> Option<String> {
    let id = traceparent.split('-').nth(1)?;
    (id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())).then(|| id.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_ids_are_read_from_traceparents() {
        assert_eq!(
            trace_id("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        assert_eq!(trace_id("garbage"), None);
        assert_eq!(trace_id("00-xyz-00f067aa0ba902b7-01"), None);
    }
}
