//! The audit trail: one structured `tracing` event per task operation, on the target
//! [`TARGET`] (`mcp_tasks_server::audit`), with the principal (owner), the task id, the
//! operation and its outcome. Route that target wherever audit logs belong.
//!
//! Levels, so that stderr at the default `info` grows by one line a task (its `task
//! finished`, see `telemetry`'s "Logs"), not by one per request:
//!
//! - INFO: what is not routine: `tasks/update` (who answered), `tasks/cancel` (who
//!   cancelled), every refusal (`outcome="refused"`, reads included), and what an operator
//!   does through the console ([`crate::console`]), with the operator as `actor` and the
//!   task's owner as `principal`.
//! - DEBUG: a task's creation that succeeds (`op="tools/call: create task"`: once per
//!   task, and counted by `telemetry` too).
//! - DEBUG, on the target [`READS_TARGET`] (`mcp_tasks_server::audit::read`): a read
//!   that succeeds (`tasks/get`, `tasks/result`, `tasks/list`): a polling client reads
//!   many times a second, and reads are counted and traced by `telemetry` instead.
//!
//! `RUST_LOG=info,mcp_tasks_server::audit=debug` shows them all on stderr. To keep the
//! trail without that volume on stderr, give it a file of its own: the telemetry's
//! `TelemetryConfig::audit_file` (the demo's `--audit-log PATH`) appends every event of
//! [`TARGET`], creations included, whatever `RUST_LOG` says; only the successful reads of
//! [`READS_TARGET`] stay out of it.
//!
//! The principal of an unauthenticated MCP 2025-11-25 session's task is the session
//! itself, `session:<id>`, and that id is the session's only credential: this trail, the
//! spans and the console show it as `session:#<tag>` instead ([`principal`], with the
//! tag of [`SealKey::session_tag`]), the same tag on every line of one session.

use std::borrow::Cow;

use mcp_tasks::Owner;
use mcp_tasks_protocol::jsonrpc::ErrorObject;

use crate::errors::ServerError;
use crate::seal::SealKey;

/// What the owner of an unauthenticated 2025-11-25 session's tasks begins with: the owner
/// is `session:` and the session id, which [`principal`] never writes out.
pub(crate) const SESSION_OWNER_PREFIX: &str = "session:";

/// The operation of the audit line a task's creation writes (on either revision).
pub(crate) const CREATE_TASK: &str = "tools/call: create task";

/// The tracing target of audit events.
pub const TARGET: &str = "mcp_tasks_server::audit";

/// The tracing target of the reads that succeed (DEBUG): beneath [`TARGET`], so a filter
/// on the trail covers them, but kept out of the audit file.
pub const READS_TARGET: &str = "mcp_tasks_server::audit::read";

/// The operations that only read: audited at DEBUG on [`READS_TARGET`] when they succeed.
const READS: &[&str] = &["tasks/get", "tasks/result", "tasks/list"];

/// How logs, spans and the console show `owner`: as it is, but for the owner of an
/// unauthenticated 2025-11-25 session's tasks (`session:<id>`), shown as `session:` and the
/// session's tag under `key` (the server's seal key). What the store keeps is unchanged.
pub fn principal<'a>(key: &SealKey, owner: &'a Owner) -> Cow<'a, str> {
    match owner.as_str().strip_prefix(SESSION_OWNER_PREFIX) {
        Some(session_id) => Cow::Owned(format!(
            "{SESSION_OWNER_PREFIX}{}",
            key.session_tag(session_id)
        )),
        None => Cow::Borrowed(owner.as_str()),
    }
}

/// Records one task operation (`key`: the server's seal key, see [`principal`]).
pub(crate) fn record<T>(
    key: &SealKey,
    op: &str,
    owner: &Owner,
    task_id: &str,
    outcome: &Result<T, ErrorObject>,
) {
    let owner = principal(key, owner);
    match outcome {
        Ok(_) if READS.contains(&op) => {
            tracing::debug!(target: READS_TARGET, principal = %owner, task_id, op, outcome = "ok")
        }
        // Once per task: the task's `task finished` line says it at INFO.
        Ok(_) if op == CREATE_TASK => {
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
    key: &SealKey,
    op: &str,
    operator: &str,
    owner: &Owner,
    task_id: &str,
    outcome: &Result<&str, String>,
) {
    let owner = principal(key, owner);
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
    key: &SealKey,
    op: &str,
    owner: &Owner,
    task_id: &str,
    outcome: Result<T, E>,
) -> Result<T, ServerError> {
    let outcome = outcome.map_err(|e| ErrorObject::from(e.into()));
    record(key, op, owner, task_id, &outcome);
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

    fn key() -> SealKey {
        SealKey::from_bytes([3; 32])
    }

    /// What `record` writes at INFO.
    fn at_info(op: &str, outcome: &Result<(), ErrorObject>) -> String {
        info_of(|| record(&key(), op, &Owner::new("alice"), "t1", outcome))
    }

    #[test]
    fn a_sessions_id_is_shown_as_its_tag() {
        let id = "5f0c2e7a9b1d4c3e8f6a0b2c4d6e8f01";
        let owner = Owner::new(format!("{SESSION_OWNER_PREFIX}{id}"));
        let shown = principal(&key(), &owner);
        assert_eq!(shown, format!("session:{}", key().session_tag(id)));
        let line = info_of(|| record(&key(), "tasks/cancel", &owner, "t1", &Ok::<(), _>(())));
        assert!(line.contains(&format!("principal={shown}")), "{line}");
        assert!(!line.contains(id), "{line}");
        let operator = info_of(|| {
            record_operator(
                &key(),
                "console: cancel",
                "admin",
                &owner,
                "t1",
                &Ok("working"),
            )
        });
        assert!(
            operator.contains(&format!("principal={shown}")),
            "{operator}"
        );
        assert!(!operator.contains(id), "{operator}");
        // Every other principal is shown as it is.
        assert_eq!(principal(&key(), &Owner::new("alice")), "alice");
        assert_eq!(principal(&key(), &Owner::new("anonymous")), "anonymous");
    }

    #[test]
    fn operator_actions_name_the_operator_and_the_owner() {
        let owner = Owner::new("alice");
        let done = info_of(|| {
            record_operator(
                &key(),
                "console: cancel",
                "admin",
                &owner,
                "t1",
                &Ok("working"),
            )
        });
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
                &key(),
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
    fn routine_successes_are_not_logged_at_info() {
        assert_eq!(at_info("tasks/get", &Ok(())), "");
        assert_eq!(at_info("tasks/list", &Ok(())), "");
        assert_eq!(at_info(CREATE_TASK, &Ok(())), "");
        assert!(at_info("tasks/cancel", &Ok(())).contains("op=\"tasks/cancel\""));
        assert!(at_info("tasks/update", &Ok(())).contains("op=\"tasks/update\""));
        let refused = Err(ErrorObject::new(
            error_codes::INVALID_PARAMS,
            "no such task",
        ));
        assert!(at_info("tasks/get", &refused).contains("outcome=\"refused\""));
        assert!(at_info(CREATE_TASK, &refused).contains("outcome=\"refused\""));
    }

    #[test]
    fn creations_are_debug_on_the_trail_and_reads_beneath_it() {
        let at_debug = |op: &str| {
            let buffer = crate::test_log::LogBuffer::default();
            let writer = buffer.clone();
            let subscriber = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::DEBUG)
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .finish();
            tracing::subscriber::with_default(subscriber, || {
                record(&key(), op, &Owner::new("alice"), "t1", &Ok::<(), _>(()))
            });
            buffer.text()
        };
        let created = at_debug(CREATE_TASK);
        assert!(
            created.contains(&format!("DEBUG {TARGET}: ")) && created.contains("outcome=\"ok\""),
            "{created}"
        );
        let read = at_debug("tasks/get");
        assert!(read.contains(&format!("DEBUG {READS_TARGET}: ")), "{read}");
        assert!(READS_TARGET.starts_with(TARGET));
    }
}
