//! The runtime's timing ([`RuntimeConfig`]) and the messages its tasks end with.

use std::time::Duration;

use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;

/// Timing of the runtime.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Names this node in leases.
    pub node_id: String,
    /// How long a worker's lease lasts without renewal.
    pub lease: Duration,
    /// How often a running task renews its lease.
    pub renew_every: Duration,
    /// How often the sweeper runs.
    pub sweep_every: Duration,
    /// On shutdown, how long running tasks may go on before they are cancelled; and then,
    /// if the store is unavailable, how much longer outcomes are retried before they are
    /// given up (named in the log; the sweep fails those tasks as worker lost).
    pub shutdown_grace: Duration,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            node_id: format!(
                "node-{}",
                mcp_tasks::TaskId::random()
                    .map(|id| id.as_str()[..12].to_owned())
                    .unwrap_or_default()
            ),
            lease: Duration::from_secs(30),
            renew_every: Duration::from_secs(10),
            sweep_every: Duration::from_secs(1),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// Cancellation message of a task stopped by the server's shutdown.
pub const SHUTDOWN_MESSAGE: &str = "The server shut down before the task finished.";
/// Cancellation message of a task cancelled on request.
pub const CANCELLED_MESSAGE: &str = "The task was cancelled by request.";

/// The status message of the record of a deadline-promoted call written up front whose
/// round ended `input_required` in its request (`ToolDef::record_up_front`).
pub const ROUND_ENDED_MESSAGE: &str =
    "The call answered input_required in its request; the client goes on in a new call.";
/// Error message of a task whose worker is gone: its server stopped (crashed, was killed)
/// before the task finished. Written by the sweep when the task's lease lapsed, and by a
/// single-node server that finds the task unfinished when it starts.
pub const WORKER_LOST_MESSAGE: &str =
    "Worker lost: the server running this task stopped before it finished.";

/// Error message of a task this server stopped because the store stayed unavailable for
/// longer than the task's lease: another instance may then fail it as worker lost.
pub const LEASE_LAPSED_MESSAGE: &str = "Worker lost: the task store was unavailable for longer \
     than the task's lease, so the server running this task stopped it.";

/// The JSON-RPC error a task whose worker is gone fails with ([`WORKER_LOST_MESSAGE`]).
pub fn worker_lost_error() -> ErrorObject {
    ErrorObject::new(error_codes::INTERNAL_ERROR, WORKER_LOST_MESSAGE)
}

/// `d` in whole milliseconds, as the store takes lease lengths (saturating).
pub(super) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
