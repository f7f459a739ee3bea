//! `tasks/stream` (draft SEP-2694) on the 2026-07-28 wire: a task's log, read from the
//! store after the caller's cursor and sent as `notifications/tasks/event` on the
//! request's own stream, then the entries written meanwhile, until the task is terminal
//! and its last entry went out; then the empty result.
//!
//! **Invariant.** The log in the store is the only source: events of the feed only wake
//! the stream, which then reads what follows its cursor, so a wake-up lost (or heard
//! twice, or from another node) loses or repeats nothing. Entries go out in `seq` order
//! without gaps; when the cursor falls behind what the store keeps, the stream ends with
//! `events_gone` rather than skip.

use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::Extensions;
use mcp_tasks::{EventError, LogEntry, LogPage, StoreError, TaskEvent, TaskKey};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::{Peer, RequestContext};
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::meta::RELATED_TASK;
use mcp_tasks_protocol::method::Request;
use mcp_tasks_protocol::tasks::{
    self, EVENT_META_PREFIX, EventsGoneData, StreamTaskRequestParams, StreamTaskResult,
    TaskEventNotificationParams,
};
use serde_json::{Value, json};

use super::{task_caller, task_id};
use crate::audit;
use crate::errors::ServerError;
use crate::state::State;

/// Entries read from the store at once.
const PAGE: usize = 100;
/// How long the stream waits for a wake-up before it reads the store again anyway (a
/// safety net: the feed's events are the normal way).
const RECHECK: Duration = Duration::from_secs(5);

/// `tasks/stream`: the task's events after `after`, then live ones until it ends.
pub(crate) async fn stream(
    state: Arc<State>,
    params: StreamTaskRequestParams,
    ext: Extensions,
) -> Result<StreamTaskResult, ServerError> {
    let caller = task_caller(&ext)?;
    if !state.store.keeps_logs() {
        return Err(ServerError::MethodNotFound(
            "Method not found: tasks/stream needs a task store that keeps task logs, and this \
             server's does not"
                .to_owned(),
        ));
    }
    let peer = ext
        .get::<Peer>()
        .cloned()
        .ok_or_else(|| ServerError::Internal("no peer".to_owned()))?;
    let request = RequestContext::from_extensions(&ext)
        .cloned()
        .ok_or_else(|| ServerError::Internal("no request context".to_owned()))?;
    let key = TaskKey {
        owner: caller.owner.clone(),
        id: task_id(&params.task_id),
    };
    // Watch before the first read, so no entry written between them goes unheard.
    let mut events = state.runtime.watch_tasks([key.clone()]);
    // Checked like `tasks/get`: another owner's task is as unknown as a missing one.
    let outcome = state.store.get(&key.owner, &key.id).await;
    audit::audited(
        state.cursor_key(),
        tasks::StreamTask::METHOD,
        &caller.owner,
        &params.task_id,
        outcome,
    )?;
    let Some(_slot) = state.subscriptions.acquire(&caller.owner) else {
        return Err(ServerError::TooManySubscriptions(
            state.subscriptions.limit(),
        ));
    };
    let mut cursor = params.after;
    let mut first = true;
    let mut backoff = crate::retry::Backoff::default();
    loop {
        let page = match read(&state, &key, cursor).await {
            Ok(page) => page,
            Err(e) if e.is_transient() => {
                tokio::select! {
                    _ = state.shutdown.cancelled() => break,
                    _ = request.cancel.cancelled() => break,
                    _ = backoff.wait() => continue,
                }
            }
            Err(e) => return Err(e.into()),
        };
        backoff = crate::retry::Backoff::default();
        if page.is_gone_after(cursor) {
            return Err(ServerError::Rpc(EventsGoneData::error(
                key.id.as_str(),
                page.earliest,
            )));
        }
        if first && cursor.is_some_and(|after| after >= page.next) {
            // A cursor ahead of the log cannot name an event this task ever had.
            return Err(ServerError::InvalidParams(format!(
                "Invalid params: after {} is past the task's last event ({})",
                cursor.unwrap_or_default(),
                page.next.saturating_sub(1)
            )));
        }
        first = false;
        for entry in &page.entries {
            send(&peer, key.id.as_str(), entry).await?;
            cursor = Some(entry.seq);
        }
        if !page.entries.is_empty() {
            continue;
        }
        // Caught up. The terminal entry is written with the terminal record, so a
        // terminal record read now means the log above was read to its end.
        match state.store.get(&key.owner, &key.id).await {
            Ok(record) if record.is_terminal() => {
                let last = read(&state, &key, cursor).await?;
                if last.entries.is_empty() {
                    break;
                }
                continue;
            }
            Ok(_) => {}
            Err(e) if e.is_transient() => {}
            Err(e) => return Err(e.into()),
        }
        tokio::select! {
            _ = state.shutdown.cancelled() => break,
            _ = request.cancel.cancelled() => break,
            event = events.recv() => match event {
                Ok(TaskEvent::Changed { .. } | TaskEvent::Logged { .. })
                | Err(EventError::Lagged(_)) => {}
                Ok(_) => {}
                Err(EventError::Closed) => break,
            },
            _ = tokio::time::sleep(RECHECK) => {}
        }
    }
    Ok(StreamTaskResult::default())
}

async fn read(state: &State, key: &TaskKey, after: Option<u64>) -> Result<LogPage, StoreError> {
    state.store.read_log(&key.owner, &key.id, after, PAGE).await
}

/// Sends one entry as `notifications/tasks/event`.
async fn send(peer: &Peer, task_id: &str, entry: &LogEntry) -> Result<(), ErrorObject> {
    let params = TaskEventNotificationParams {
        seq: entry.seq,
        task_id: task_id.to_owned(),
        kind: entry.kind.clone(),
        payload: entry.payload.clone(),
        meta: Some(event_meta(task_id, entry)),
    };
    peer.notify::<tasks::TaskEvent>(&params)
        .await
        .map_err(ErrorObject::from)
}

/// The event's `_meta`: the related task (as the draft asks) and when, where and by whom
/// it was written.
fn event_meta(task_id: &str, entry: &LogEntry) -> JsonObject {
    let mut meta = JsonObject::new();
    meta.insert(RELATED_TASK.to_owned(), json!({ "taskId": task_id }));
    meta.insert(
        format!("{EVENT_META_PREFIX}at"),
        Value::String(crate::views::timestamp(entry.at)),
    );
    if let Some(node) = &entry.node {
        meta.insert(
            format!("{EVENT_META_PREFIX}node"),
            Value::String(node.to_string()),
        );
    }
    meta.insert(
        format!("{EVENT_META_PREFIX}actor"),
        Value::String(entry.actor.as_str().to_owned()),
    );
    meta
}
