//! The audit trail: one structured `tracing` event per task operation, on the target
//! `mcp_tasks_server::audit`, with the principal (owner), the task id, the operation and its
//! outcome. Route that target wherever audit logs belong.
//!
//! What changes a task (creation, `tasks/update`, `tasks/cancel`) and every refusal are
//! INFO; a read that succeeds (`tasks/get`, `tasks/result`, `tasks/list`) is DEBUG: a
//! polling client reads many times a second, and reads are counted and traced by
//! `telemetry` instead. `RUST_LOG=mcp_tasks_server::audit=debug` shows them too.
//!
//! What an operator does to another principal's task through the console
//! ([`crate::console`]) is INFO too, with the operator as `actor` and the task's owner as
//! `principal`.

use mcp_tasks::Owner;
use mcp_tasks_protocol::jsonrpc::ErrorObject;

use crate::errors::ServerError;

/// The tracing target of audit events.
pub const TARGET: &str = "mcp_tasks_server::audit";

/// The operations that only read: audited at DEBUG when they succeed.
const READS: &[&str] = &["tasks/get", "tasks/result", "tasks/list"];

/// Records one task operation.
pub(crate) fn record<T>(op: &str, owner: &Owner, task_id: &str, outcome: &Result<T, ErrorObject>) {
    match outcome {
        Ok(_) if READS.contains(&op) => {
            tracing::debug!(target: TARGET, principal = %owner, task_id, op, outcome = "ok")
        }
        Ok(_) => tracing::info!(target: TARGET, principal = %owner, task_id, op, outcome = "ok"),
        Err(e) => {
            tracing::info!(target: TARGET, principal = %owner, task_id, op, outcome = "refused", code = e.code, reason = %e.message)
        }
    }
}

/// Records what `operator` did (`op`, e.g. `console: cancel`) to `owner`'s task
/// `task_id`: `Ok` names the task's status after it, `Err` the reason it was refused.
pub(crate) fn record_operator(
    op: &str,
    operator: &str,
    owner: &Owner,
    task_id: &str,
    outcome: &Result<&str, String>,
) {
    match outcome {
        Ok(status) => {
            tracing::info!(target: TARGET, actor = %operator, principal = %owner, task_id, op, outcome = "ok", status)
        }
        Err(reason) => {
            tracing::info!(target: TARGET, actor = %operator, principal = %owner, task_id, op, outcome = "refused", %reason)
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

#[cfg(test)]
mod tests {
    use mcp_tasks_protocol::error_codes;

    use super::*;

    /// What `emit` writes at INFO.
    fn info_of(emit: impl FnOnce()) -> String {
        let buffer = crate::test_log::LogBuffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, emit);
        buffer.text()
    }

    /// What `record` writes at INFO.
    fn at_info(op: &str, outcome: &Result<(), ErrorObject>) -> String {
        info_of(|| record(op, &Owner::new("alice"), "t1", outcome))
    }

    #[test]
    fn operator_actions_name_the_operator_and_the_owner() {
        let owner = Owner::new("alice");
        let done =
            info_of(|| record_operator("console: cancel", "admin", &owner, "t1", &Ok("working")));
        for part in [
            "mcp_tasks_server::audit",
            "actor=admin",
            "principal=alice",
            "task_id=\"t1\"",
            "op=\"console: cancel\"",
            "outcome=\"ok\"",
            "status=\"working\"",
        ] {
            assert!(done.contains(part), "{part} in {done}");
        }
        let refused = info_of(|| {
            record_operator(
                "console: cancel",
                "admin",
                &owner,
                "t1",
                &Err("task not found".into()),
            )
        });
        assert!(
            refused.contains("outcome=\"refused\"") && refused.contains("reason=task not found"),
            "{refused}"
        );
    }

    #[test]
    fn reads_that_succeed_are_not_logged_at_info() {
        assert_eq!(at_info("tasks/get", &Ok(())), "");
        assert_eq!(at_info("tasks/list", &Ok(())), "");
        assert!(at_info("tasks/cancel", &Ok(())).contains("op=\"tasks/cancel\""));
        assert!(at_info("tools/call: create task", &Ok(())).contains("outcome=\"ok\""));
        let refused = Err(ErrorObject::new(
            error_codes::INVALID_PARAMS,
            "no such task",
        ));
        assert!(at_info("tasks/get", &refused).contains("outcome=\"refused\""));
    }
}
