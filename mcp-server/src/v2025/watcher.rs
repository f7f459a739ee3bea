//! The per-session watcher of MCP 2025-11-25 sessions: `notifications/tasks/status` on
//! each change of the session's tasks, pushed as soon as the change is written, and their
//! input requests asked on the standalone stream (through `input.rs`).
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
//! watcher never sends (the `CreateTaskResult` says the same). So a status this watcher
//! sends, on any instance, is of a change made after the response was written: it goes
//! out at once, never held back.
//!
//! A question is another matter: a client that reads it in the same breath as the
//! `CreateTaskResult` (on another connection) may handle it first, and the official
//! tasks client library then answers "cancel" for the user. So `input.rs`'s `Asking`
//! holds a question on the standalone stream until the client named its task in a
//! request here (`tasks/get`, `tasks/result`, `tasks/cancel`: `McpSession::mark_known`)
//! or `known_hold` passed (twice its poll interval, 1-10 s). A status reaching a client
//! that has not read the `CreateTaskResult` yet costs nothing: the client does not follow
//! that task yet, and its first `tasks/get` reads the same.
//!
//! A task queued for workers (role `api`) is claimable at once, so a worker's first
//! change may be written before the creating instance's response: its status may then
//! precede the `CreateTaskResult` on the wire (harmless, as above); its questions are
//! held like any other.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::{EventError, Millis, StoreError, TaskEvent, TaskId, TaskRecord};
use mcp_tasks_protocol::v2025::{self, TaskStatus, TaskStatusNotificationParams};
use tokio_util::sync::CancellationToken;

use super::input::ask_pending;
use crate::retry::Backoff;
use crate::runtime::TaskRuntime;
use crate::session::{McpSession, Standalone};
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
        let mut reopened = false;
        let event = tokio::select! {
            _ = session.closed.cancelled() => return,
            _ = shutdown.cancelled() => return,
            e = events.recv() => Some(e),
            _ = backoff.wait(), if resync => None,
            // A stream to send to again: what changed meanwhile goes out now.
            _ = session.stream_opened.notified() => {
                reopened = true;
                None
            }
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
                tracing::debug!(session = %session.tag, dropped = n, "task events lagged; resyncing the session's task statuses");
                resync = true;
            }
            Some(Err(EventError::Closed)) => return,
            // The backoff after a resync that met an unavailable store.
            None => {}
        }
        if reopened && !seen.send_missed(&runtime, &session, &shutdown).await {
            resync = true;
        }
        if resync {
            match seen.resync(&runtime, &session, &shutdown).await {
                Ok(()) => {
                    resync = false;
                    backoff = Backoff::default();
                }
                Err(e) => {
                    tracing::debug!(session = %session.tag, error = %e, "resync failed; trying again")
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
    /// Tasks whose change found no standalone stream to go to: sent when one opens. Past
    /// [`MISSED_CAP`], `missed_overflow` says a resync must find them.
    missed: HashSet<TaskId>,
    missed_overflow: bool,
}

/// How many tasks whose status found no stream a watcher remembers by id.
const MISSED_CAP: usize = 1024;

impl Seen {
    /// Sends `record`'s status (and asks its pending input) unless already sent.
    async fn send(
        &mut self,
        runtime: &TaskRuntime,
        session: &Arc<McpSession>,
        record: &TaskRecord,
        stop: &CancellationToken,
    ) {
        // A task as created says nothing its `CreateTaskResult` did not (and may be
        // read here before that result is written): only its changes are sent.
        if record.revision <= 1 || self.revisions.get(&record.id) >= Some(&record.revision) {
            return;
        }
        let Some(Standalone { peer, gone }) = session.standalone() else {
            // Nowhere to send: the next stream opened gets it (`send_missed`).
            if self.missed.len() < MISSED_CAP {
                self.missed.insert(record.id.clone());
            } else {
                self.missed_overflow = true;
            }
            return;
        };
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
            // Asked once the client knows the task (`input.rs`'s `Asking`).
            ask_pending(runtime, session, record, &peer, &gone, stop);
        }
    }

    /// Sends the statuses that found no stream, now that one opened; `false` when some
    /// could not be read (or were not remembered): a resync must find them.
    async fn send_missed(
        &mut self,
        runtime: &TaskRuntime,
        session: &Arc<McpSession>,
        stop: &CancellationToken,
    ) -> bool {
        let mut complete = !std::mem::take(&mut self.missed_overflow);
        for id in std::mem::take(&mut self.missed) {
            match runtime.store().get(&session.owner, &id).await {
                Ok(record) => self.send(runtime, session, &record, stop).await,
                Err(e) if e.is_transient() => complete = false,
                // Expired meanwhile: nothing to say.
                Err(_) => {}
            }
        }
        complete
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
