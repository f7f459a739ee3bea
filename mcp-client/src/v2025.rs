//! MCP 2025-11-25, for servers without `server/discover`, on the `mcp_tasks_protocol::v2025`
//! types: the `initialize` handshake; `tools/list` and `tools/call` with `params.task`
//! (in this revision the client decides, from the tool's `execution.taskSupport`);
//! `tasks/get`, `tasks/result` and `tasks/cancel` in their 2025-11-25 shapes, and the
//! wait that polls the first and fetches the outcome with the second.
//!
//! Input a 2025-11-25 task needs arrives as server->client requests, which the session's
//! methods answer through the handler (`handler::client_methods`): nothing here answers
//! input. Results come back as the 2026-07-28 `CallToolResult` the client's API returns.
//! Imports `session` and `error` only.

use std::time::{Duration, Instant};

use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::PeerError;
use mcp_tasks_protocol::meta::{IDEMPOTENCY_KEY, PROTOCOL_VERSION_2025_11_25};
use mcp_tasks_protocol::tasks::TaskStatus;
use mcp_tasks_protocol::v2025::{
    self, CallToolRequestParams, CancelTask, CreateTaskResult, GetTask, GetTaskPayload, Initialize,
    InitializeRequestParams, Initialized, ListToolsResult, Task, TaskIdParams, TaskMetadata,
    TaskSupport,
};
use mcp_tasks_protocol::v2026::{self, CallToolResult};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::error::ClientError;
use crate::session::{Creating, ServerInfo, Session};

/// The revisions whose `initialize` handshake this path speaks.
const STATEFUL_VERSIONS: [&str; 3] = [PROTOCOL_VERSION_2025_11_25, "2025-06-18", "2025-03-26"];

/// `initialize` + `notifications/initialized`: starts a 2025-11-25 session (after
/// `server/discover` was answered -32601) and records what the server said.
pub(crate) async fn initialize(session: &Session) -> Result<(), ClientError> {
    let capabilities = session.capabilities_2025()?;
    let params = InitializeRequestParams {
        protocol_version: PROTOCOL_VERSION_2025_11_25.to_owned(),
        capabilities,
        client_info: session.config.client_info.clone(),
        meta: None,
        extra: JsonObject::new(),
    };
    session.set_protocol_version(PROTOCOL_VERSION_2025_11_25);
    let result = session.request::<Initialize>(&params).await?;
    // The earlier revisions share this lifecycle (without tasks); a server that answers
    // one of them is spoken to in it.
    if !STATEFUL_VERSIONS.contains(&result.protocol_version.as_str()) {
        return Err(ClientError::Protocol(format!(
            "the server offers protocol {}; this client speaks 2026-07-28, 2025-11-25, 2025-06-18 and 2025-03-26",
            result.protocol_version
        )));
    }
    session.set_protocol_version(&result.protocol_version);
    session.peer.notify::<Initialized>(&None).await?;
    session.set_server(ServerInfo::V2025(Box::new(result)));
    Ok(())
}

/// `tools/list` in the 2025-11-25 shape (each tool with its `execution`).
/// `tools/list`, remembering which tools the server flags as deduplicating keyed calls.
pub(crate) async fn list_tools(session: &Session) -> Result<ListToolsResult, ClientError> {
    let listed: ListToolsResult = session
        .request_as(v2025::methods::TOOLS_LIST, &JsonObject::new())
        .await?;
    session.set_idempotent_tools(
        listed
            .tools
            .iter()
            .map(|t| (t.name.as_str(), t.meta.as_ref())),
    );
    Ok(listed)
}

/// A 2025-11-25 listing seen through the 2026-07-28 type (`execution` stays in each
/// tool's extra members).
pub(crate) fn tools_as_2026(
    listed: ListToolsResult,
) -> Result<v2026::ListToolsResult, ClientError> {
    let mut listed = match serde_json::to_value(listed) {
        Ok(Value::Object(o)) => o,
        Ok(other) => {
            return Err(ClientError::Protocol(format!(
                "tools/list answered {other}"
            )));
        }
        Err(e) => return Err(ClientError::Protocol(e.to_string())),
    };
    listed.insert("resultType".into(), Value::String("complete".into()));
    serde_json::from_value(Value::Object(listed))
        .map_err(|e| ClientError::Protocol(format!("malformed tools/list result: {e}")))
}

/// How a 2025-11-25 `tools/call` came back.
#[derive(Debug)]
pub(crate) enum Called {
    /// The server ran the call synchronously.
    Done(Box<CallToolResult>),
    /// The server made a task; its `notifications/tasks/status`, received from before
    /// the call was sent (a server may report the task before the caller follows it);
    /// and the call still counted as creating a task, to drop once the task is routed
    /// (requests naming it that came first are held until then).
    Task(Box<Task>, broadcast::Receiver<Task>, Option<Creating>),
}

/// `tools/call`, with `params.task` when the server supports task tool calls and the
/// tool's `execution.taskSupport` is not `forbidden`.
/// The call carries the idempotency key `key` when given; when it asks for a task of a
/// tool the listing flags as deduplicating keyed calls and has none, a fresh one
/// ([`ClientConfig::idempotency_keys`](crate::ClientConfig::idempotency_keys)). A keyed
/// call is sent again after a failure that never reached the server, and, when it asks
/// for a task of a flagged tool, after a lost answer or a timeout (the timed-out attempt
/// is not cancelled) ([`ClientConfig::retry`](crate::ClientConfig::retry)). Returns the
/// key sent.
pub(crate) async fn call_tool(
    session: &Session,
    name: &str,
    arguments: JsonObject,
    key: Option<String>,
) -> Result<(Called, Option<String>), ClientError> {
    let support = list_tools(session)
        .await?
        .tools
        .iter()
        .find(|t| t.name == name)
        .map(v2025::Tool::task_support)
        .unwrap_or_default();
    let as_task = session.supports_tasks() && support != TaskSupport::Forbidden;
    // The server makes one task per key of this tool: a repeat cannot run it twice.
    let deduplicated = as_task && session.idempotent_tool(name);
    let key = match key {
        None if deduplicated && session.config.idempotency_keys => Some(crate::retry::new_key()),
        key => key,
    };
    let params = CallToolRequestParams {
        name: name.to_owned(),
        arguments: Some(arguments),
        task: as_task.then(TaskMetadata::default),
        idempotency_key: key.clone(),
        // Also in `_meta`, for servers (and SDKs in between) that drop unknown params.
        meta: key.as_ref().map(|key| {
            JsonObject::from_iter([(IDEMPOTENCY_KEY.to_owned(), Value::String(key.clone()))])
        }),
        extra: JsonObject::new(),
    };
    let pushed = session.pushed_2025.subscribe();
    // The server may ask about the task before this call's answer names it.
    let creating = as_task.then(|| session.creating());
    // A retry finds what a timed-out attempt started: it is not cancelled.
    let kept = key.is_some() && deduplicated;
    let reply: Value = crate::retry::retrying(
        &session.config.retry,
        v2025::methods::TOOLS_CALL,
        key.as_deref(),
        deduplicated,
        || async {
            let method = v2025::methods::TOOLS_CALL;
            if kept {
                session.request_as_uncancelled(method, &params).await
            } else {
                session.request_as(method, &params).await
            }
        },
    )
    .await?;
    if reply.get("task").is_some() {
        let created: CreateTaskResult = serde_json::from_value(reply)
            .map_err(|e| ClientError::Protocol(format!("malformed CreateTaskResult: {e}")))?;
        return Ok((Called::Task(Box::new(created.task), pushed, creating), key));
    }
    Ok((Called::Done(Box::new(call_result(reply)?)), key))
}

/// `tasks/get`: the flat task.
pub(crate) async fn get_task(session: &Session, id: &str) -> Result<Task, ClientError> {
    let task = session
        .request::<GetTask>(&TaskIdParams::new(id))
        .await?
        .task;
    if task.task_id != id {
        return Err(ClientError::Protocol(format!(
            "tasks/get for {id} answered task {}",
            task.task_id
        )));
    }
    Ok(task)
}

/// `tasks/cancel`. Cancellation is cooperative: the task may still end otherwise.
pub(crate) async fn cancel_task(session: &Session, id: &str) -> Result<(), ClientError> {
    session
        .request::<CancelTask>(&TaskIdParams::new(id))
        .await?;
    Ok(())
}

/// Polls `tasks/get` (sooner when a `notifications/tasks/status` about the task
/// arrives) until the task needs input or ends, then fetches the outcome with
/// `tasks/result` (which blocks while the server asks us for input through
/// server->client requests). `seen` gets every state read; `finished` is called once
/// `tasks/result` has answered (the task is over, whatever the answer). Bounded by the
/// task's TTL (or the driver's `max_wait`). `pushed` receives the session's status
/// notifications (subscribed when the task was made, or now).
pub(crate) async fn wait(
    session: &Session,
    id: &str,
    pushed: Option<broadcast::Receiver<Task>>,
    seen: impl Fn(&Task),
    finished: impl FnOnce(),
) -> Result<CallToolResult, ClientError> {
    let config = &session.config.driver;
    let started = Instant::now();
    let mut pushed = pushed.unwrap_or_else(|| session.pushed_2025.subscribe());
    loop {
        // What was pushed meanwhile comes first, in order.
        while let Ok(t) = pushed.try_recv() {
            if t.task_id == id && config.push {
                seen(&t);
            }
        }
        let task = get_task(session, id).await?;
        seen(&task);
        let limit = config.wait_limit(task.ttl);
        if task.status.is_terminal() || task.status == TaskStatus::InputRequired {
            let remaining = limit
                .saturating_sub(started.elapsed())
                .max(Duration::from_secs(1));
            let fetched = tokio::time::timeout(
                remaining,
                session
                    .peer
                    .request::<GetTaskPayload>(&TaskIdParams::new(id)),
            )
            .await
            .map_err(|_| ClientError::TaskExpired {
                task_id: id.to_owned(),
            })?;
            finished();
            return match fetched {
                Ok(payload) => serde_json::to_value(payload)
                    .map_err(|e| ClientError::Protocol(format!("tasks/result: {e}")))
                    .and_then(call_result),
                // The outcome of a cancelled task is an error; the status says why.
                Err(PeerError::Rpc(_)) if task.status == TaskStatus::Cancelled => {
                    Err(ClientError::TaskCancelled {
                        task_id: id.to_owned(),
                        message: task.status_message,
                    })
                }
                Err(PeerError::Rpc(e)) => Err(ClientError::TaskFailed {
                    task_id: id.to_owned(),
                    error: Box::new(e),
                }),
                Err(e) => Err(e.into()),
            };
        }
        if started.elapsed() > limit {
            return Err(ClientError::TaskExpired {
                task_id: id.to_owned(),
            });
        }
        // The next poll, or sooner a `notifications/tasks/status` about this task.
        let interval = config.poll_interval(task.poll_interval);
        let _ = tokio::time::timeout(interval, async {
            if config.push {
                loop {
                    match pushed.recv().await {
                        Ok(t) if t.task_id == id => {
                            seen(&t);
                            // Poll now only when there is something to do.
                            if t.status.is_terminal() || t.status == TaskStatus::InputRequired {
                                return;
                            }
                        }
                        Ok(_) => continue,
                        Err(broadcast::error::RecvError::Lagged(_)) => return,
                        Err(broadcast::error::RecvError::Closed) => break,
                    }
                }
            }
            std::future::pending::<()>().await;
        })
        .await;
    }
}

/// A 2025-11-25 `CallToolResult` (no `resultType`) read as the 2026-07-28 type.
pub(crate) fn call_result(reply: Value) -> Result<CallToolResult, ClientError> {
    let mut reply = match reply {
        Value::Object(o) => o,
        other => {
            return Err(ClientError::Protocol(format!(
                "tools/call answered {other}"
            )));
        }
    };
    reply
        .entry("resultType")
        .or_insert_with(|| Value::String("complete".into()));
    serde_json::from_value(Value::Object(reply))
        .map_err(|e| ClientError::Protocol(format!("malformed CallToolResult: {e}")))
}
