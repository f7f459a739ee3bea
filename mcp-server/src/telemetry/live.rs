//! The `mcp.task.live` gauge: the store's tasks by status, from `operator_counts` (the
//! store contract's rule 22) at start and then every
//! [`TelemetryConfig::live_tasks_every`](super::TelemetryConfig::live_tasks_every), while
//! metrics are read.
//!
//! What one count costs is the store's: O(statuses + tools) on the memory store and on
//! Redis (per shard on a Cluster), where the counts are kept with every write; one grouped
//! pass over the stored tasks on SQLite and PostgreSQL (O(tasks)). On a shared store
//! every node counts the same tasks: aggregate the nodes' gauges with `max`, not `sum`.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcp_tasks::{StoreError, TaskStore};
use tokio_util::sync::CancellationToken;

use super::metrics::Instruments;

/// The default of [`TelemetryConfig::live_tasks_every`](super::TelemetryConfig::live_tasks_every).
pub const DEFAULT_LIVE_TASKS_EVERY: Duration = Duration::from_secs(30);

static EVERY: OnceLock<Duration> = OnceLock::new();

/// Sets the interval of the counts (once; `init` calls it).
pub(super) fn set_every(every: Duration) {
    let _ = EVERY.set(every.max(Duration::from_millis(10)));
}

/// Counts `store`'s tasks into `instruments` now and then every interval until `stop`.
/// A store without the operator's counts has no gauge (said once at DEBUG); a failing
/// count is said once per run of failures, and the gauge keeps its last values.
pub(super) async fn count(
    store: Arc<dyn TaskStore>,
    instruments: &'static Instruments,
    stop: CancellationToken,
) {
    let every = EVERY.get().copied().unwrap_or(DEFAULT_LIVE_TASKS_EVERY);
    let mut failing = false;
    loop {
        match store.operator_counts().await {
            Ok(counts) => {
                if std::mem::take(&mut failing) {
                    tracing::info!("counting the live tasks works again");
                }
                instruments.live(&counts);
            }
            Err(StoreError::Unsupported { .. }) => {
                tracing::debug!(
                    backend = store.backend(),
                    "the task store does not count its tasks: no mcp.task.live gauge"
                );
                return;
            }
            Err(e) if failing => {
                tracing::debug!(error = %e, "counting the live tasks failed again")
            }
            Err(e) => {
                failing = true;
                tracing::warn!(error = %e, "counting the live tasks failed");
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
    }
}
