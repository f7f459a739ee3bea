//! A run's outcome: the terminal write a tool's result or error calls for ([`Finish`]),
//! written once (the first terminal write wins) and retried through a store outage, then
//! the lease released.
//!
//! **Invariant.** An outcome the store cannot take yet stays in its run's memory, named
//! among the runtime's unwritten ones, until it lands, the task is gone, or shutdown gives
//! it up.

use mcp_tasks::{StoreError, TaskEvent, TaskKey, TaskRecord, Transition};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;

use super::config::{CANCELLED_MESSAGE, ROUND_ENDED_MESSAGE, SHUTDOWN_MESSAGE};
use super::inner::Inner;
use crate::context::ToolError;
use crate::retry::while_transient;
use crate::telemetry::TASK_LOG_TARGET;

/// The one INFO line of a task (see `telemetry`'s "Logs"): this process moved `record`
/// to its terminal status. Short, for it is written once per task: the target
/// [`TASK_LOG_TARGET`], the id, the status, the tool, the time since creation and what
/// went wrong, if anything.
fn log_finished(record: &TaskRecord) {
    let error = crate::telemetry::error_type(record);
    tracing::info!(
        target: TASK_LOG_TARGET,
        task_id = %record.id,
        status = %record.status.as_str(),
        tool = record.origin.tool.as_deref().map(tracing::field::display),
        duration_ms = record.last_updated_at.saturating_sub(record.created_at),
        error = error.as_deref().map(tracing::field::display),
        "task finished"
    );
}

/// The terminal write a finished tool calls for.
#[derive(Debug)]
enum Finish {
    Complete(JsonObject),
    Fail(ErrorObject),
    Cancel(&'static str),
}

impl Inner {
    /// Records how the tool ended (first terminal write wins) and releases the lease
    /// where that write did not end it.
    /// A transient store failure is retried with a backoff until the write lands, the
    /// task is gone, or another writer won; meanwhile the outcome stays in this task's
    /// memory (so at most one per task this node runs). Shutdown gives up after its
    /// grace periods and names the task in the log.
    /// Returns the terminal write (`None`: it did not land).
    pub(super) async fn finish(
        &self,
        key: &TaskKey,
        outcome: Result<JsonObject, ToolError>,
    ) -> Option<Transition> {
        let finish = self.outcome_write(outcome);
        let what = format!("recording the outcome of task {}", key.id);
        let mut first = true;
        let written = while_transient(&self.abandon, &what, || {
            if !std::mem::take(&mut first) {
                self.unwritten().insert(key.id.clone());
            }
            self.write_outcome(key, &finish)
        })
        .await;
        self.unwritten().remove(&key.id);
        // A terminal write ends the lease with it (the store's rule 11): a record that
        // came back without our lease needs no second write.
        let ended = matches!(&written, Ok(t) if t.record.lease.as_ref()
            .is_none_or(|lease| lease.holder != self.config.node_id));
        let mut after = None;
        match written {
            Ok(t) if !t.won => {
                tracing::debug!(task_id = %key.id, status = t.record.status.as_str(), "task already finished");
                after = Some(t);
            }
            Ok(t) => {
                // Whoever watches the task hears of it now, not when the feed brings it back.
                self.watchers.deliver_early(TaskEvent::changed(&t.record));
                log_finished(&t.record);
                after = Some(t);
            }
            Err(StoreError::NotFound) => {
                tracing::debug!(task_id = %key.id, "task expired before it finished")
            }
            Err(e) if e.is_transient() => {
                tracing::error!(task_id = %key.id, error = %e, "shutting down with the task's outcome unwritten: the store stayed unavailable; the sweep will fail it as worker lost")
            }
            Err(e) => {
                tracing::error!(task_id = %key.id, error = %e, "cannot record the task's outcome")
            }
        }
        if !ended {
            let _ = self
                .store
                .release_lease(&key.owner, &key.id, &self.config.node_id)
                .await;
        }
        after
    }

    /// Ends the task of a call whose round ended `input_required` in its request:
    /// cancelled, saying so (its client goes on in a new call, with a record of its own).
    pub(super) async fn end_round(&self, key: &TaskKey) {
        let finish = Finish::Cancel(ROUND_ENDED_MESSAGE);
        let what = format!("ending the record of call {}", key.id);
        let written =
            while_transient(&self.abandon, &what, || self.write_outcome(key, &finish)).await;
        if let Err(e) = written {
            tracing::debug!(task_id = %key.id, error = %e, "cannot end the record of a call that answered input_required");
        }
    }

    /// The terminal write `outcome` calls for.
    fn outcome_write(&self, outcome: Result<JsonObject, ToolError>) -> Finish {
        match outcome {
            Ok(result) => Finish::Complete(result),
            Err(ToolError::Rpc(error)) => Finish::Fail(error),
            Err(ToolError::Cancelled) => Finish::Cancel(if self.stopping.is_cancelled() {
                SHUTDOWN_MESSAGE
            } else {
                CANCELLED_MESSAGE
            }),
            Err(ToolError::InputRequired) => Finish::Fail(ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                "The tool asked for input outside a request",
            )),
        }
    }

    /// One attempt at the terminal write; a result over the store's limit fails the task.
    async fn write_outcome(
        &self,
        key: &TaskKey,
        finish: &Finish,
    ) -> Result<mcp_tasks::Transition, StoreError> {
        let store = &self.store;
        match finish {
            Finish::Complete(result) => {
                match store.complete(&key.owner, &key.id, result.clone()).await {
                    Err(StoreError::LimitExceeded { limit, max }) => {
                        let error = ErrorObject::new(
                            error_codes::INTERNAL_ERROR,
                            format!(
                                "The tool's result exceeds the server's limit ({limit}, at most {max})"
                            ),
                        );
                        store.fail(&key.owner, &key.id, error).await
                    }
                    other => other,
                }
            }
            Finish::Fail(error) => store.fail(&key.owner, &key.id, error.clone()).await,
            Finish::Cancel(message) => {
                store
                    .cancel(&key.owner, &key.id, Some((*message).to_owned()))
                    .await
            }
        }
    }
}
