//! Input and status outside a request, for MCP 2025-11-25 sessions: a task's input
//! requests asked as server->client requests (on a pending `tasks/result` stream or the
//! session's standalone stream) with the answers written to the store, and the
//! per-session watcher that sends `notifications/tasks/status`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use mcp_protocol::JsonObject;
use mcp_protocol::engine::Peer;
use mcp_protocol::meta::RELATED_TASK;
use mcp_protocol::v2025::{self, TaskStatus, TaskStatusNotificationParams};
use mcp_tasks::{EventError, Millis, StoreError, TaskEvent, TaskId, TaskRecord};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::session::{LegacySession, Standalone};
use crate::retry::{Backoff, while_transient};
use crate::views;

/// Asks the client, through `peer`, for every input request of `record` not being asked
/// already; each answer goes into the store, which wakes the tool.
///
/// `gone` is cancelled when the stream `peer` writes to ends (the client dropped its
/// `tasks/result` or its standalone stream). A question still unanswered then is
/// released, so that the next stream asks it again: without this it stayed marked as
/// being asked, and a later `tasks/result` waited without ever asking it.
///
/// An answer that meets an unavailable store is retried until it is written (or `stop`,
/// the server's shutdown): the client gave it once and will not give it again.
pub(super) fn ask_pending(
    store: Arc<dyn mcp_tasks::TaskStore>,
    session: &Arc<LegacySession>,
    record: &TaskRecord,
    peer: &Peer,
    gone: &CancellationToken,
    stop: &CancellationToken,
) {
    for (key, request) in &record.input_requests {
        let marker = (record.id.clone(), key.clone());
        if !session
            .asking
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(marker.clone())
        {
            continue;
        }
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut params = match request.get("params") {
            Some(Value::Object(p)) => p.clone(),
            _ => JsonObject::new(),
        };
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => JsonObject::new(),
        };
        meta.insert(
            RELATED_TASK.to_owned(),
            serde_json::json!({ "taskId": record.id.as_str() }),
        );
        params.insert("_meta".to_owned(), Value::Object(meta));
        let (store, session, peer, key, owner, gone, stop) = (
            Arc::clone(&store),
            Arc::clone(session),
            peer.clone(),
            key.clone(),
            record.owner.clone(),
            gone.clone(),
            stop.clone(),
        );
        tokio::spawn(async move {
            let raw = serde_json::value::to_raw_value(&params).ok();
            let asked = tokio::select! {
                answer = peer.request_raw(&method, raw.as_deref()) => answer,
                _ = gone.cancelled() => {
                    tracing::debug!("the stream of an input request ended unanswered; it will be asked again");
                    release(&session, &marker);
                    return;
                }
            };
            match asked {
                Ok(answer) => match serde_json::from_str::<Value>(answer.get()) {
                    Ok(answer) => {
                        let answers: BTreeMap<String, Value> = [(key, answer)].into();
                        let written = while_transient(&stop, "writing an input answer", || {
                            store.resolve_input(&owner, &marker.0, answers.clone())
                        })
                        .await;
                        match written {
                            Ok(_) => {}
                            Err(e) if e.is_transient() => {
                                tracing::error!(task_id = %marker.0, error = %e, "shutting down with an input answer unwritten: the store stayed unavailable");
                            }
                            Err(e) => {
                                tracing::debug!(error = %e, "answer arrived for a task that is gone");
                            }
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "client answered an input request with invalid JSON")
                    }
                },
                Err(e) => {
                    tracing::debug!(error = %e, "input request not answered; it can be asked again");
                    release(&session, &marker);
                }
            }
        });
    }
}

/// Marks an input request as no longer being asked, and wakes pending `tasks/result`s.
fn release(session: &LegacySession, marker: &(TaskId, String)) {
    session
        .asking
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(marker);
    session.released.notify_waiters();
}

/// Per session: `notifications/tasks/status` on each change of its tasks, and input
/// requests on the standalone stream, until the session or the server ends.
///
/// Events only wake; the store is the truth. After a lag (events dropped, or a shared
/// store's notification connection came back after an outage), or when a record could
/// not be read because the store was unavailable, the watcher resyncs: it lists the
/// owner's tasks and sends what changed since it last sent (by revision), retrying with
/// a backoff while the store is unavailable.
pub(super) async fn watch(
    store: Arc<dyn mcp_tasks::TaskStore>,
    session: Arc<LegacySession>,
    shutdown: CancellationToken,
) {
    let mut events = store.events();
    let mut seen = Seen::default();
    let mut resync = false;
    let mut backoff = Backoff::default();
    loop {
        let event = tokio::select! {
            _ = session.closed.cancelled() => return,
            _ = shutdown.cancelled() => return,
            e = events.recv() => Some(e),
            _ = backoff.wait(), if resync => None,
        };
        match event {
            Some(Ok(TaskEvent::Changed { key, .. })) if key.owner == session.owner => {
                match store.get(&session.owner, &key.id).await {
                    Ok(record) => seen.send(&store, &session, &record, &shutdown).await,
                    Err(e) if e.is_transient() => resync = true,
                    Err(_) => {}
                }
            }
            Some(Ok(_)) => {}
            Some(Err(EventError::Lagged(n))) => {
                tracing::debug!(session = %session.id, dropped = n, "task events lagged; resyncing the session's task statuses");
                resync = true;
            }
            Some(Err(EventError::Closed)) => return,
            // The backoff after a resync that met an unavailable store.
            None => {}
        }
        if resync {
            match seen.resync(&store, &session, &shutdown).await {
                Ok(()) => {
                    resync = false;
                    backoff = Backoff::default();
                }
                Err(e) => {
                    tracing::debug!(session = %session.id, error = %e, "resync failed; trying again")
                }
            }
        }
    }
}

/// What a session's watcher last told the client, per task: the revision notified.
#[derive(Debug, Default)]
struct Seen {
    revisions: HashMap<TaskId, u64>,
    /// The newest `last_updated_at` of a record notified: on a resync, a task never seen
    /// and already finished is sent only if it changed after this (it finished during
    /// the gap), not if it finished long before the session watched.
    newest: Millis,
}

impl Seen {
    /// Sends `record`'s status (and asks its pending input) unless already sent.
    async fn send(
        &mut self,
        store: &Arc<dyn mcp_tasks::TaskStore>,
        session: &Arc<LegacySession>,
        record: &TaskRecord,
        stop: &CancellationToken,
    ) {
        if self.revisions.get(&record.id) == Some(&record.revision) {
            return;
        }
        let Some(Standalone { peer, gone }) = session.standalone() else {
            return;
        };
        self.revisions.insert(record.id.clone(), record.revision);
        self.newest = self.newest.max(record.last_updated_at);
        let params = TaskStatusNotificationParams::from(views::task_2025(record));
        if let Err(e) = peer.notify::<v2025::TaskStatusChanged>(&params).await {
            tracing::debug!(error = %e, "status notification not delivered");
        }
        if record.status == TaskStatus::InputRequired {
            ask_pending(Arc::clone(store), session, record, &peer, &gone, stop);
        }
    }

    /// Lists the owner's tasks and sends each that changed since it was last sent.
    async fn resync(
        &mut self,
        store: &Arc<dyn mcp_tasks::TaskStore>,
        session: &Arc<LegacySession>,
        stop: &CancellationToken,
    ) -> Result<(), StoreError> {
        if session.standalone().is_none() {
            return Ok(());
        }
        let watermark = self.newest;
        let mut listed = HashSet::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = store.list(&session.owner, cursor.as_deref(), 100).await?;
            for record in &page.tasks {
                listed.insert(record.id.clone());
                let known = self.revisions.contains_key(&record.id);
                if known || !record.is_terminal() || record.last_updated_at > watermark {
                    self.send(store, session, record, stop).await;
                }
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        // Tasks gone from the store (expired) need no memory.
        self.revisions.retain(|id, _| listed.contains(id));
        Ok(())
    }
}
