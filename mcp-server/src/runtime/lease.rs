//! A run's lease: renewed while the tool runs, retried through a store outage for as long as
//! the lease lasts, and, once it cannot be kept, the task recovered as after a worker
//! crash.
//!
//! **Invariant.** A run that lost its lease writes no outcome (it might land over a newer
//! run's): its task is recovered by its delivery instead.

use mcp_tasks::{Recovery, StoreError, TaskKey};
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use tokio::time::Instant;

use super::config::{LEASE_LAPSED_MESSAGE, millis};
use super::inner::Inner;
use crate::retry::{Backoff, while_transient};

impl Inner {
    /// Renews the lease until it cannot; returns why it stopped. A renewal that meets a
    /// transient store failure is retried with a backoff for as long as the lease, as
    /// last written, has more than a tenth of its length to run; only then is the tool
    /// stopped (a renewal that lands late resumes normally).
    pub(super) async fn keep_lease(&self, key: &TaskKey) -> ErrorObject {
        let config = &self.config;
        let margin = config.lease / 10;
        // Claimed (created leased, or claimed) just before the tool started.
        let mut expires = Instant::now() + config.lease;
        loop {
            tokio::time::sleep(config.renew_every).await;
            let mut backoff = Backoff::default();
            let mut failing = false;
            loop {
                let sent = Instant::now();
                // A backend may hang rather than fail while it is out (a command waiting
                // for its response timeout): an attempt may last only while the lease does.
                let left = expires.saturating_duration_since(sent + margin);
                let renew = self.store.renew_lease(
                    &key.owner,
                    &key.id,
                    &config.node_id,
                    millis(config.lease),
                );
                let renewed = match tokio::time::timeout(left, renew).await {
                    Ok(renewed) => renewed,
                    Err(_) => Err(StoreError::unavailable(
                        "the lease renewal did not finish while the lease lasted",
                    )),
                };
                match renewed {
                    Ok(_) => {
                        // The store computed the new expiry no earlier than `sent`.
                        expires = sent + config.lease;
                        if failing {
                            tracing::info!(task_id = %key.id, "lease renewed again after store failures");
                        }
                        break;
                    }
                    Err(e) if e.is_transient() && Instant::now() + margin < expires => {
                        crate::telemetry::renewal_failed();
                        if std::mem::replace(&mut failing, true) {
                            tracing::debug!(task_id = %key.id, error = %e, "lease renewal failed again");
                        } else {
                            tracing::warn!(task_id = %key.id, error = %e, "lease renewal failed; retrying while the lease lasts");
                        }
                        // The last attempt comes at the deadline, however long the step.
                        let deadline = expires.checked_sub(margin).unwrap_or(expires);
                        tokio::select! {
                            _ = backoff.wait() => {}
                            _ = tokio::time::sleep_until(deadline) => {}
                        }
                    }
                    Err(e) if e.is_transient() => {
                        crate::telemetry::renewal_failed();
                        tracing::error!(task_id = %key.id, error = %e, "the store stayed unavailable until the lease would lapse; stopping the task");
                        return ErrorObject::new(error_codes::INTERNAL_ERROR, LEASE_LAPSED_MESSAGE);
                    }
                    Err(e) => {
                        crate::telemetry::renewal_failed();
                        tracing::warn!(task_id = %key.id, error = %e, "lease renewal failed; stopping the task");
                        return ErrorObject::new(
                            error_codes::INTERNAL_ERROR,
                            format!(
                                "Worker lost: the server running this task lost its lease ({e})."
                            ),
                        );
                    }
                }
            }
        }
    }

    /// The run stopped because its lease could not be kept (the store unavailable for
    /// longer than the lease, or the lease taken): it writes no outcome, which might land
    /// over a newer run's, and the task is recovered as after a worker crash, by its
    /// delivery: an at-least-once task waits for a worker again (this node's included,
    /// the attempt counted), another fails with `lost`. Retried while the store is
    /// unavailable; a lease another node holds (or not lapsed yet) is left to it, or to
    /// the sweep.
    pub(super) async fn recover(&self, key: &TaskKey, lost: ErrorObject) {
        let what = format!("recovering task {} after its lease was lost", key.id);
        let recovered = while_transient(&self.abandon, &what, || {
            self.store.recover_lapsed(&key.owner, &key.id, lost.clone())
        })
        .await;
        match recovered {
            Ok(Recovery::Requeued { attempt }) => {
                tracing::warn!(task_id = %key.id, attempt, "run stopped with its lease lost; the task waits for a worker again");
                self.queue_changed.notify_one();
            }
            Ok(Recovery::Failed) => {
                tracing::warn!(task_id = %key.id, reason = %lost.message, "task failed: its run lost its lease")
            }
            Ok(Recovery::Cancelled) => {
                tracing::info!(task_id = %key.id, "task cancelled: its run lost its lease")
            }
            Ok(Recovery::NotLapsed) => {
                tracing::debug!(task_id = %key.id, "lease lost but not lapsed here: another worker holds it, or the sweep recovers it")
            }
            Err(e) => {
                tracing::warn!(task_id = %key.id, error = %e, "could not recover a task whose run lost its lease; the sweep will")
            }
        }
    }
}
