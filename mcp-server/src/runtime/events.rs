//! The store's events carried to the tools running on this node: an input answer wakes
//! its tool, a cancel request or a terminal write elsewhere stops it, a task made
//! claimable wakes the worker loop; after a lag, every task running here is read again.
//! Each event is also handed to the watches of its task and owner (`watch.rs`).
//!
//! **Invariant.** The pump only signals (wakes, cancels, notifies) and never waits on the
//! store: what needs a read (after a lag) runs off it, so the feed keeps draining.

use std::sync::Arc;

use mcp_tasks::{EventError, StoreError, TaskEvent, TaskKey};

use super::inner::Inner;

impl Inner {
    /// Carries store events to the tools running here, and to whoever watches their
    /// tasks (`watch.rs`); when it ends, every watch is closed.
    pub(super) async fn pump_events(self: Arc<Self>) {
        let mut events = self.store.events();
        loop {
            let event = tokio::select! {
                _ = self.stopping.cancelled() => break,
                e = events.recv() => e,
            };
            self.watchers.deliver(&event);
            match event {
                Ok(TaskEvent::InputResponded { key, .. }) => {
                    if let Some(r) = self.running().get(&key.id) {
                        r.wake.notify_waiters();
                    }
                }
                Ok(TaskEvent::CancelRequested { key }) => {
                    if let Some(r) = self.running().get(&key.id) {
                        r.cancel.cancel();
                    }
                }
                Ok(TaskEvent::Changed { key, status, .. }) if status.is_terminal() => {
                    // Finished by someone else (e.g. a 2025-11-25 tasks/cancel): stop the work.
                    if let Some(r) = self.running().get(&key.id) {
                        r.cancel.cancel();
                    }
                }
                Ok(TaskEvent::Changed { queued: true, .. }) => {
                    // Created or requeued for a worker: look for work.
                    self.queue_changed.notify_one();
                }
                // Otherwise changed and unfinished, or running somewhere: nothing to claim.
                Ok(TaskEvent::Changed { .. }) => {}
                // A tool's log entries: only the task's watches (its streams) care.
                Ok(TaskEvent::Logged { .. }) => {}
                Err(EventError::Lagged(n)) => {
                    self.queue_changed.notify_one();
                    tracing::warn!(
                        dropped = n,
                        "task events lagged; re-checking every task running here"
                    );
                    for r in self.running().values() {
                        r.wake.notify_waiters();
                    }
                    // A cancel request or a terminal write made elsewhere during the gap
                    // raised no event we heard: read the records (off the pump, which
                    // must keep draining the feed).
                    tokio::spawn(Arc::clone(&self).recheck_running());
                }
                Err(EventError::Closed) => break,
            }
        }
        self.watchers.close();
    }

    /// Re-reads every task running here and stops those that were finished, asked to
    /// stop, or expired meanwhile: what the events lost in a lag would have done.
    async fn recheck_running(self: Arc<Self>) {
        let keys: Vec<TaskKey> = self
            .running()
            .iter()
            .map(|(id, r)| TaskKey {
                owner: r.owner.clone(),
                id: id.clone(),
            })
            .collect();
        for key in keys {
            let stop = match self.store.get(&key.owner, &key.id).await {
                Ok(rec) => rec.is_terminal() || rec.cancel_requested,
                Err(StoreError::NotFound) => true,
                // The store is the truth but unreachable now; the lease renewal and the
                // input re-check will notice a lasting failure.
                Err(_) => false,
            };
            if stop && let Some(r) = self.running().get(&key.id) {
                tracing::info!(task_id = %key.id, "task finished or cancelled elsewhere during an event lag; stopping it");
                r.cancel.cancel();
            }
        }
    }
}
