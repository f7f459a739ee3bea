//! Asking an MCP 2025-11-25 client as a task (SEP-1686, the client as receiver): when
//! the client declared `capabilities.tasks.requests.elicitation.create` (or
//! `.sampling.createMessage`), a tool's `elicit` (`sample`) goes out with `params.task`;
//! the client answers with a `CreateTaskResult`, and the server follows the task with
//! `tasks/get` (within the client's `pollInterval`, bounded) until it ends or needs
//! input, then fetches the answer with `tasks/result`. Stopping the asker (the tool's
//! task cancelled, or answered elsewhere) cancels the client's task with `tasks/cancel`
//! when the client declared `tasks.cancel`: at once when its id is known, else as soon as
//! the reply naming it comes (waited for in the background, [`LATE_REPLY_WAIT`] at most).
//!
//! A leaf: imports nothing of the server (`context.rs` and `v2025/input.rs` use it).

use std::time::Duration;

use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::{Peer, PeerError};
use mcp_tasks_protocol::meta::RELATED_TASK;
use mcp_tasks_protocol::tasks::TaskStatus;
use mcp_tasks_protocol::v2025::{self, CreateTaskResult, TaskIdParams};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

/// The fastest a client's task is polled, whatever its `pollInterval` says.
const MIN_POLL: Duration = Duration::from_millis(50);
/// The slowest: a client suggesting more is polled at this.
const MAX_POLL: Duration = Duration::from_secs(2);

/// What an MCP 2025-11-25 client declared it hosts as tasks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ClientHosts {
    elicitation: bool,
    sampling: bool,
    cancel: bool,
}

impl ClientHosts {
    /// From the client's `initialize` capabilities (as sent, or as the tools see them:
    /// `tasks` is kept among their extra members); nothing when they do not parse.
    pub(crate) fn of(capabilities: &Value) -> ClientHosts {
        let Ok(caps) = serde_json::from_value::<v2025::ClientCapabilities>(capabilities.clone())
        else {
            return ClientHosts::default();
        };
        ClientHosts {
            elicitation: caps.supports_task_elicitation(),
            sampling: caps.supports_task_sampling(),
            cancel: caps.supports_task_cancel(),
        }
    }

    /// Whether a request of `method` is asked as a task.
    pub(crate) fn hosts(&self, method: &str) -> bool {
        match method {
            v2025::methods::ELICITATION_CREATE => self.elicitation,
            v2025::methods::SAMPLING_CREATE_MESSAGE => self.sampling,
            _ => false,
        }
    }
}

/// Asks `method` with `params` through `peer` as a task of the client and follows it to
/// its answer (the client's related-task `_meta` taken out of it). A client that answers
/// at once (no `task` in its reply) has answered. `stop` ends the wait and cancels the
/// client's task (when it declared `tasks.cancel`) through `cancel_via` when given (a
/// stream that outlives this question's, e.g. the session's standalone stream: the
/// question's own may end with the task that asked), else `peer`; the error is then
/// [`PeerError::Transport`] "cancelled".
pub(crate) async fn ask_as_task(
    peer: &Peer,
    method: &str,
    mut params: JsonObject,
    hosts: ClientHosts,
    stop: &CancellationToken,
    cancel_via: Option<&Peer>,
) -> Result<Box<RawValue>, PeerError> {
    params.insert("task".to_owned(), Value::Object(JsonObject::new()));
    let raw = serde_json::value::to_raw_value(&params)?;
    // Owned, so that a stop while the request is on its way can leave it running.
    let mut request = Box::pin({
        let (peer, method) = (peer.clone(), method.to_owned());
        async move { peer.request_raw(&method, Some(&raw)).await }
    });
    let reply = tokio::select! {
        _ = stop.cancelled() => {
            // The client may have made its task already (it starts the work before it
            // answers): its id comes with the reply, and then the task is cancelled.
            if hosts.cancel {
                let via = cancel_via.unwrap_or(peer).clone();
                tokio::spawn(async move {
                    let Ok(Ok(reply)) = tokio::time::timeout(LATE_REPLY_WAIT, request).await
                    else {
                        return;
                    };
                    if let Ok(created) = serde_json::from_str::<CreateTaskResult>(reply.get()) {
                        let id = created.task.task_id;
                        if let Err(e) = via.request::<v2025::CancelTask>(&TaskIdParams::new(&id)).await {
                            tracing::debug!(task_id = %id, error = %e, "cancelling the client's task failed");
                        }
                    }
                });
            }
            return Err(stopped());
        }
        reply = &mut request => reply?,
    };
    let reply: Value = serde_json::from_str(reply.get())?;
    if reply.get("task").is_none() {
        return Ok(serde_json::value::to_raw_value(&reply)?);
    }
    let created: CreateTaskResult = serde_json::from_value(reply)?;
    let id = created.task.task_id.clone();
    let mut task = created.task;
    let followed = async {
        // Until the task ends (or asks for input, which tasks/result carries).
        while !task.status.is_terminal() && task.status != TaskStatus::InputRequired {
            tokio::time::sleep(poll_interval(task.poll_interval)).await;
            task = peer
                .request::<v2025::GetTask>(&TaskIdParams::new(&id))
                .await?
                .task;
        }
        peer.request::<v2025::GetTaskPayload>(&TaskIdParams::new(&id))
            .await
    };
    let payload = tokio::select! {
        _ = stop.cancelled() => {
            let via = cancel_via.unwrap_or(peer);
            if hosts.cancel
                && let Err(e) = via.request::<v2025::CancelTask>(&TaskIdParams::new(&id)).await
            {
                tracing::debug!(task_id = %id, error = %e, "cancelling the client's task failed");
            }
            return Err(stopped());
        }
        payload = followed => payload?,
    };
    let mut answer = payload.extra;
    if let Some(mut meta) = payload.meta {
        meta.remove(RELATED_TASK);
        if !meta.is_empty() {
            answer.insert("_meta".to_owned(), Value::Object(meta));
        }
    }
    Ok(serde_json::value::to_raw_value(&answer)?)
}

/// How long a stopped asker still waits for the client's reply to its request, to cancel
/// the task the client may have made of it.
const LATE_REPLY_WAIT: Duration = Duration::from_secs(60);

fn stopped() -> PeerError {
    PeerError::Transport("cancelled".to_owned())
}

/// The client's suggested interval (ms) within our bounds.
fn poll_interval(suggested_ms: Option<i64>) -> Duration {
    suggested_ms
        .and_then(|ms| u64::try_from(ms).ok())
        .map_or(MAX_POLL / 4, Duration::from_millis)
        .clamp(MIN_POLL, MAX_POLL)
}
