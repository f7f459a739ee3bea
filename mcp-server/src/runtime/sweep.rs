//! The sweep, every [`RuntimeConfig::sweep_every`](super::config::RuntimeConfig::sweep_every):
//! expired tasks purged (their work stopped if it runs here), and unfinished tasks whose
//! worker stopped renewing its lease recovered by their delivery (failed as worker lost,
//! or made to wait for another worker).
//!
//! **Invariant.** A task this node runs is never recovered here: its own run knows why
//! its lease went (`lease.rs`).

use std::sync::Arc;

use mcp_tasks::{Recovery, StoreError};

use super::config::worker_lost_error;
use super::inner::Inner;

impl Inner {
    /// Sweeps every `sweep_every` until the runtime stops; failures are logged once per
    /// run of them.
    pub(super) async fn sweep_loop(self: Arc<Self>) {
        let mut failing = false;
        loop {
            tokio::select! {
                _ = self.stopping.cancelled() => return,
                _ = tokio::time::sleep(self.config.sweep_every) => {}
            }
            // Said once per run of failures (a store outage fails every sweep).
            match self.sweep_once().await {
                Ok(()) if failing => {
                    failing = false;
                    tracing::info!("sweep works again");
                }
                Ok(()) => {}
                Err(e) if failing => tracing::debug!(error = %e, "sweep failed again"),
                Err(e) => {
                    failing = true;
                    tracing::warn!(error = %e, "sweep failed");
                }
            }
        }
    }

    /// One sweep (see `TaskRuntime::sweep_once`).
    pub(super) async fn sweep_once(&self) -> Result<(), StoreError> {
        let report = self.store.sweep().await?;
        for key in &report.expired_unfinished {
            tracing::info!(task_id = %key.id, "task TTL ran out before it finished; stopping its work");
            if let Some(r) = self.running().get(&key.id) {
                r.cancel.cancel();
            }
        }
        for key in &report.lease_lapsed {
            if self.running().contains_key(&key.id) {
                continue;
            }
            match self
                .store
                .recover_lapsed(&key.owner, &key.id, worker_lost_error())
                .await
            {
                Ok(Recovery::Failed) => {
                    tracing::warn!(task_id = %key.id, "task failed: its worker is gone");
                    if crate::telemetry::observing()
                        && let Ok(record) = self.store.get(&key.owner, &key.id).await
                    {
                        crate::telemetry::worker_lost(&record);
                    }
                }
                Ok(Recovery::Requeued { attempt }) => {
                    tracing::warn!(task_id = %key.id, attempt, "run lost its worker; the task waits for another");
                    self.queue_changed.notify_one();
                }
                Ok(Recovery::Cancelled) => {
                    tracing::info!(task_id = %key.id, "task cancelled: its worker is gone")
                }
                _ => {}
            }
        }
        Ok(())
    }
}
