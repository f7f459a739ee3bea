//! The audit trail: one structured `tracing` event per task operation, on the target
//! `mcp_tasks_server::audit`, with the principal (owner), the task id, the operation and its
//! outcome. Route that target wherever audit logs belong.

use mcp_tasks::Owner;
use mcp_tasks_protocol::jsonrpc::ErrorObject;

/// The tracing target of audit events.
pub const TARGET: &str = "mcp_tasks_server::audit";

/// Records one task operation.
pub(crate) fn record<T>(op: &str, owner: &Owner, task_id: &str, outcome: &Result<T, ErrorObject>) {
    match outcome {
        Ok(_) => tracing::info!(target: TARGET, principal = %owner, task_id, op, outcome = "ok"),
        Err(e) => {
            tracing::info!(target: TARGET, principal = %owner, task_id, op, outcome = "refused", code = e.code, reason = %e.message)
        }
    }
}
