//! The audit trail: one structured `tracing` event per task operation, on the target
//! `mcp_tasks_server::audit`, with the principal (owner), the task id, the operation and its
//! outcome. Route that target wherever audit logs belong.

use mcp_tasks::Owner;
use mcp_tasks_protocol::jsonrpc::ErrorObject;

use crate::errors::ServerError;

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

/// The end of every task method of both revisions (`tasks/get`, `tasks/update`,
/// `tasks/cancel`, `tasks/result`, `tasks/list`), written once: `outcome` mapped to the
/// JSON-RPC error it answers with, recorded as operation `op` of `owner` on `task_id`,
/// and returned.
pub(crate) fn audited<T, E: Into<ServerError>>(
    op: &str,
    owner: &Owner,
    task_id: &str,
    outcome: Result<T, E>,
) -> Result<T, ServerError> {
    let outcome = outcome.map_err(|e| ErrorObject::from(e.into()));
    record(op, owner, task_id, &outcome);
    outcome.map_err(ServerError::Rpc)
}
