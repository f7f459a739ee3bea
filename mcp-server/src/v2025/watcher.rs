//! The per-session watcher of MCP 2025-11-25 sessions: `notifications/tasks/status` on
//! each change of the session's tasks, and their input requests asked on the standalone
//! stream (through `input.rs`), nothing about a task the client may not know yet.
//!
//! # A task is announced before anything about it
//!
//! No status, question or other message naming a task reaches the client before the
//! `CreateTaskResult` that names it. The transport puts the engine's `ReplyWritten` into
//! a session's `tools/call` and fires it once the connection has taken the response
//! (HTTP: the body's end, or the body dropped unsent; stdio: the response queued on the
//! one outgoing channel, ahead of anything sent after it); `tools_call` hands it to
//! `call::start_task`, and the runtime starts the tool only once it fired (the lease kept
//! meanwhile). Until then the task is its record as created (revision 1), which this
//! watcher never sends (the `CreateTaskResult` says the same), so no stream of any
//! instance has anything to say about it.
//!
//! The wire order is not always enough: a client that reads a question in the same
//! breath as the `CreateTaskResult` may handle the question first (the official tasks
//! client library does, and answers "cancel"). So the standalone stream carries nothing
//! about a task until the client named it in a request here (`tasks/get`,
//! `tasks/result`, `tasks/cancel`: `McpSession::mark_known`) or `known_hold` passed (twice
//! its poll interval, 1-10 s): `Seen::deferred` keeps its latest status meanwhile, and
//! `input.rs`'s `Asking` waits the same before it claims a question. A task queued for
//! workers (role `api`) is claimable at once: there only this hold keeps the order, and
//! on a shared store the client's poll may reach another instance, so it is a bounded
//! delay, not a proof.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::{EventError, Millis, StoreError, TaskEvent, TaskId, TaskRecord};
use mcp_tasks_protocol::v2025::{self, TaskStatus, TaskStatusNotificationParams};
use tokio_util::sync::CancellationToken;

use super::input::{ask_pending, known_hold};
use super::session::{McpSession, Standalone};
use crate::retry::Backoff;
use crate::runtime::TaskRuntime;
use crate::views;

/// Per session: `notifications/tasks/status` on each change of its tasks, and input
/// requests on the standalone stream, until the session or the server ends.
///
/// Events only wake; the store is the truth. After a lag (events dropped, or a shared
/// store's notification connection came back after an outage), or when a record could
/// not be read because the store was unavailable, the watcher resyncs: it lists the
/// owner's tasks and sends what changed since it last sent (by revision), retrying with
/// a backoff while the store is unavailable.
pub(super) async fn watch(
    runtime: TaskRuntime,
    session: Arc<McpSession>,
    shutdown: CancellationToken,
) {
    let mut events = runtime.watch_owner(session.owner.clone());
    let mut seen = Seen::default();
    let mut resync = false;
    let mut backoff = Backoff::default();
    loop {
        let due = seen.next_due();
        let event = tokio::select! {
            _ = session.closed.cancelled() => return,
            _ = shutdown.cancelled() => return,
            e = events.recv() => Some(e),
            _ = backoff.wait(), if resync => None,
            // A deferred status whose task the client named, or whose time came.
            _ = session.known_changed.notified(), if due.is_some() => None,
            _ = tokio::time::sleep_until(due.unwrap_or_else(tokio::time::Instant::now)), if due.is_some() => None,
            _ = session.taken_over.notified() => {
                let since = Millis::try_from(
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap_or_default()
                        .saturating_sub(TAKEOVER_WINDOW)
                        .as_millis(),
                )
                .unwrap_or(0);
                seen.newest = since;
                // Every task changed in the window again: what the lost stream carried.
                seen.revisions.clear();
                resync = true;
                None
            }
        };
        match event {
            Some(Ok(TaskEvent::Changed { key, .. })) => {
                match runtime.store().get(&session.owner, &key.id).await {
                    Ok(record) => seen.send(&runtime, &session, &record, &shutdown).await,
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
        if due.is_some() {
            seen.send_deferred(&runtime, &session, &shutdown).await;
        }
        if resync {
            match seen.resync(&runtime, &session, &shutdown).await {
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

/// How far back a watcher that took over another instance's standalone stream sends
/// statuses again: tasks not finished, and those that changed within this.
pub(super) const TAKEOVER_WINDOW: Duration = Duration::from_secs(60);

/// What a session's watcher last told the client, per task: the revision notified.
#[derive(Debug, Default)]
struct Seen {
    revisions: HashMap<TaskId, u64>,
    /// The newest `last_updated_at` of a record notified: on a resync, a task never seen
    /// and already finished is sent only if it changed after this (it finished during
    /// the gap), not if it finished long before the session watched.
    newest: Millis,
    /// The latest record of each task the client has not named here yet and nothing was
    /// sent about, with when to send it anyway ([`known_hold`]): a client may handle a
    /// status before the `CreateTaskResult` it read at the same time.
    deferred: HashMap<TaskId, (TaskRecord, tokio::time::Instant)>,
}

impl Seen {
    /// Sends `record`'s status (and asks its pending input) unless already sent, or
    /// keeps it in `deferred` while the client may not know the task yet.
    async fn send(
        &mut self,
        runtime: &TaskRuntime,
        session: &Arc<McpSession>,
        record: &TaskRecord,
        stop: &CancellationToken,
    ) {
        self.send_unless(runtime, session, record, stop, true).await;
    }

    /// [`send`](Self::send), deferring only when `may_defer`.
    async fn send_unless(
        &mut self,
        runtime: &TaskRuntime,
        session: &Arc<McpSession>,
        record: &TaskRecord,
        stop: &CancellationToken,
        may_defer: bool,
    ) {
        // A task as created says nothing its `CreateTaskResult` did not (and may be
        // read here before that result is written): only its changes are sent.
        if record.revision <= 1 || self.revisions.get(&record.id) == Some(&record.revision) {
            return;
        }
        let Some(Standalone { peer, gone }) = session.standalone() else {
            // Nowhere to send: a stream opened later gets the statuses by a resync.
            self.deferred.remove(&record.id);
            return;
        };
        if may_defer && !self.revisions.contains_key(&record.id) && !session.knows(&record.id) {
            let now = tokio::time::Instant::now();
            let hold = known_hold(record.poll_interval_ms);
            let due = self.deferred.get(&record.id).map_or(now + hold, |d| d.1);
            if now < due {
                self.deferred
                    .insert(record.id.clone(), (record.clone(), due));
                // Its questions wait for the same, in `Asking`.
                if record.status == TaskStatus::InputRequired {
                    ask_pending(runtime, session, record, &peer, &gone, stop);
                }
                return;
            }
        }
        self.deferred.remove(&record.id);
        self.revisions.insert(record.id.clone(), record.revision);
        self.newest = self.newest.max(record.last_updated_at);
        if record.is_terminal() {
            session.forget_known(&record.id);
        }
        let params = TaskStatusNotificationParams::from(views::task_2025(record));
        if let Err(e) = peer.notify::<v2025::TaskStatusChanged>(&params).await {
            tracing::debug!(error = %e, "status notification not delivered");
        }
        if record.status == TaskStatus::InputRequired {
            ask_pending(runtime, session, record, &peer, &gone, stop);
        }
    }

    /// When the next deferred status is due.
    fn next_due(&self) -> Option<tokio::time::Instant> {
        self.deferred.values().map(|d| d.1).min()
    }

    /// Sends the deferred statuses whose task the client named meanwhile, or whose time
    /// came.
    async fn send_deferred(
        &mut self,
        runtime: &TaskRuntime,
        session: &Arc<McpSession>,
        stop: &CancellationToken,
    ) {
        let now = tokio::time::Instant::now();
        let ready: Vec<TaskRecord> = self
            .deferred
            .values()
            .filter(|(record, due)| *due <= now || session.knows(&record.id))
            .map(|(record, _)| record.clone())
            .collect();
        for record in ready {
            self.deferred.remove(&record.id);
            self.send_unless(runtime, session, &record, stop, false)
                .await;
        }
    }

    /// Lists the owner's tasks and sends each that changed since it was last sent.
    async fn resync(
        &mut self,
        runtime: &TaskRuntime,
        session: &Arc<McpSession>,
        stop: &CancellationToken,
    ) -> Result<(), StoreError> {
        if session.standalone().is_none() {
            return Ok(());
        }
        let watermark = self.newest;
        let mut listed = HashSet::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = runtime
                .store()
                .list(&session.owner, cursor.as_deref(), 100)
                .await?;
            for record in &page.tasks {
                listed.insert(record.id.clone());
                let known = self.revisions.contains_key(&record.id);
                if known || !record.is_terminal() || record.last_updated_at > watermark {
                    self.send(runtime, session, record, stop).await;
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
