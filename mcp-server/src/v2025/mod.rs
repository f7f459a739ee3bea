//! MCP 2025-11-25 sessions and their tasks (SEP-1686), served from the same store as the
//! 2026-07-28 wire.
//!
//! A session starts with `initialize`. Its tasks belong to the authenticated principal,
//! or to the session itself when there is none. The client asks for a task
//! (`params.task`) within each tool's `execution.taskSupport`; `tasks/result` blocks until
//! the task ends and carries the related-task `_meta`; input a task needs is asked with
//! server->client requests on the stream of a pending `tasks/result` (or the session's
//! standalone stream), and the answers go into the store like 2026-07-28 answers do
//! (`input.rs`). The session's state is `crate::session`, below this module and
//! `v2026`.
//!
//! **Invariant.** Handlers here serve only requests of a 2025-11-25 session (the dispatch
//! chose); they never branch on the revision.

pub(crate) mod features;
mod input;
mod watcher;

use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::Extensions;
use mcp_tasks::{EventError, Outcome, Owner, TaskId, TaskKey, WireRevision};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::{Peer, ReplyWritten, RequestContext};
use mcp_tasks_protocol::meta::PROTOCOL_VERSION_2025_11_25;
use mcp_tasks_protocol::method::Request;
use mcp_tasks_protocol::v2025::{
    self, CallToolRequestParams, CancelTaskResult, CreateTaskResult, GetTaskPayloadResult,
    GetTaskResult, InitializeRequestParams, InitializeResult, ListTasksResult, ResourcesCapability,
    ServerCapabilities, ServerTasksCapability, TaskStatus, TaskSupport, ToolExecution,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::audit;
use crate::auth::Identity;
use crate::auth::Principal;
use crate::call::{Requester, find_tool, idempotency, idempotency_key, start_task};
use crate::context::{CallScope, ToolContext};
use crate::errors::ServerError;
use crate::errors::call_error;
use crate::report::{self, Report};
use crate::retry::Backoff;
use crate::runtime::CANCELLED_MESSAGE;
use crate::session::Standalone;
use crate::session::subscriptions::SessionSubscriptions;
use crate::session::{
    McpSession, SESSION_OWNER_PREFIX, SESSION_VERSIONS, SessionSlot, StandaloneIsRequestPeer,
};
use crate::state::State;
use crate::tool::TaskPolicy;
use crate::views::{result_2025, task_2025};
pub(crate) use features::{listen_for_resource_updates, notify_resource_updated};
pub(crate) use input::answer_input;
use input::ask_pending;
use watcher::watch;

/// How many tasks one `tasks/list` page holds.
const LIST_PAGE: usize = 50;

fn invalid(message: impl Into<String>) -> ServerError {
    ServerError::InvalidParams(message.into())
}

/// `initialize`: negotiates the session's revision (the one the client asks for when it is
/// 2025-11-25, 2025-06-18, 2025-03-26 or 2024-11-05, else 2025-11-25, the newest) and
/// opens the session in the request's slot. Tasks exist in 2025-11-25 sessions only.
pub(crate) async fn initialize(
    state: &State,
    served: &SessionSubscriptions,
    params: InitializeRequestParams,
    ext: &Extensions,
) -> Result<InitializeResult, ServerError> {
    let version = SESSION_VERSIONS
        .iter()
        .find(|v| **v == params.protocol_version)
        .copied()
        .unwrap_or(PROTOCOL_VERSION_2025_11_25);
    let slot = ext.get::<SessionSlot>().ok_or_else(|| {
        ServerError::InvalidRequest("initialize is not available on this transport".to_owned())
    })?;
    if slot.get().is_some() {
        return Err(already_initialized());
    }
    let id = TaskId::random()
        .map_err(|e| ServerError::Internal(e.to_string()))?
        .as_str()
        .to_owned();
    let owner = ext.get::<Principal>().map_or_else(
        || Owner::new(format!("{SESSION_OWNER_PREFIX}{id}")),
        |p| Owner::new(p.0.clone()),
    );
    let tag = state.cursor_key().session_tag(&id);
    let client = (
        serde_json::to_value(&params.capabilities).unwrap_or_default(),
        serde_json::to_value(&params.client_info).unwrap_or_default(),
    );
    let session = McpSession::new(
        id,
        tag,
        owner,
        ext.get::<Principal>().map(|p| p.0.clone()),
        version.to_owned(),
        client,
        state.runtime.config().node_id.clone(),
    );
    if let Some(peer) = ext
        .get::<StandaloneIsRequestPeer>()
        .and_then(|_| ext.get::<Peer>().cloned())
    {
        *session.standalone.lock().unwrap_or_else(|e| e.into_inner()) = Some(Standalone {
            peer,
            gone: CancellationToken::new(),
        });
    }
    let session = Arc::new(session);
    if slot.0.set(Arc::clone(&session)).is_err() {
        return Err(already_initialized());
    }
    served.hold(&session);
    if session.has_tasks() {
        tokio::spawn(watch(
            state.runtime.clone(),
            Arc::clone(&session),
            state.shutdown_token(),
        ));
    }
    let catalog = &state.catalog;
    let capabilities = ServerCapabilities {
        tools: Some(Default::default()),
        tasks: session
            .has_tasks()
            .then(|| ServerTasksCapability::tool_calls(true)),
        resources: catalog.has_resources().then(|| ResourcesCapability {
            subscribe: Some(true),
            ..Default::default()
        }),
        prompts: catalog.has_prompts().then(Default::default),
        completions: catalog.has_completions().then(Default::default),
        // `logging/setLevel` is served in every session; tools log through their context.
        logging: Some(JsonObject::new()),
        ..Default::default()
    };
    Ok(InitializeResult {
        protocol_version: version.to_owned(),
        capabilities,
        server_info: state.info().clone(),
        instructions: state.instructions().map(str::to_owned),
        meta: None,
        extra: JsonObject::new(),
    })
}

/// A session another instance opened, from its record in the shared store: served here
/// from now on, as if `initialize` had run here (its watcher started).
pub(crate) fn restore(
    state: &State,
    served: &SessionSubscriptions,
    record: mcp_tasks::SessionRecord,
) -> Arc<McpSession> {
    let subscriptions = record.subscriptions;
    let tag = state.cursor_key().session_tag(&record.id);
    let session = Arc::new(McpSession::new(
        record.id,
        tag,
        record.owner,
        record.principal,
        record.protocol_version,
        (record.client_capabilities, record.client_info),
        state.runtime.config().node_id.clone(),
    ));
    if let Some(level) = record.log_level {
        session.set_log_level(level);
    }
    served.hold(&session);
    for uri in &subscriptions {
        served.subscribe(uri, &session);
    }
    if session.has_tasks() {
        tokio::spawn(watch(
            state.runtime.clone(),
            Arc::clone(&session),
            state.shutdown_token(),
        ));
    }
    session
}

/// `logging/setLevel`: the session's log level from now on; on a shared store, in its
/// record too, so every instance logs at that level.
pub(crate) async fn set_level(
    state: &State,
    session: &McpSession,
    params: v2025::SetLevelRequestParams,
) -> Result<v2025::EmptyResult, ServerError> {
    session.set_log_level(params.level);
    if let Some(sessions) = state.store.sessions().filter(|s| s.is_shared()) {
        let change = mcp_tasks::SessionChange::LogLevel(params.level);
        sessions.change_session(&session.id, change).await?;
    }
    Ok(v2025::EmptyResult::default())
}

pub(crate) fn already_initialized() -> ServerError {
    ServerError::InvalidRequest("The session is already initialized".to_owned())
}

/// `tools/list` in the 2025-11-25 shape: `execution.taskSupport` from each tool's policy.
pub(crate) fn tools_list(state: &State, session: &McpSession) -> v2025::ListToolsResult {
    let keys = session.has_tasks() && state.store.supports_idempotency();
    let tools = state
        .tools()
        .map(|tool| {
            let support = match tool.policy() {
                TaskPolicy::Synchronous => TaskSupport::Forbidden,
                TaskPolicy::Optional | TaskPolicy::After(_) => TaskSupport::Optional,
                TaskPolicy::Required => TaskSupport::Required,
            };
            let schema = serde_json::from_value(Value::Object(tool.input_schema.clone()))
                .unwrap_or_default();
            let mut listed = v2025::Tool::new(tool.name());
            listed.input_schema = schema;
            listed.title = tool.title.clone();
            listed.description = tool.description.clone();
            // Earlier revisions have no tasks, so no `execution.taskSupport`.
            listed.execution = session
                .has_tasks()
                .then(|| ToolExecution::with_task_support(support));
            if keys && tool.dedupes_keyed_calls(true) {
                crate::tool::flag_idempotent(&mut listed.meta);
            }
            listed
        })
        .collect();
    v2025::ListToolsResult {
        tools,
        next_cursor: None,
        meta: None,
        extra: JsonObject::new(),
    }
}

/// `tools/call` in a 2025-11-25 session: a task when the client asks (`params.task`) and
/// the tool allows it; otherwise synchronous, with input asked directly.
pub(crate) async fn tools_call(
    state: &State,
    session: &McpSession,
    mut params: CallToolRequestParams,
    ext: &Extensions,
) -> Result<Value, ServerError> {
    let mut args = params.arguments.take().unwrap_or_default();
    let identity = ext.get::<Identity>().cloned();
    let tool = find_tool(state, &params.name, &mut args, identity.as_ref())?;
    let peer = ext
        .get::<Peer>()
        .cloned()
        .ok_or_else(|| ServerError::Internal("no peer".to_owned()))?;
    let cancel = RequestContext::from_extensions(ext)
        .map(|c| c.cancel.clone())
        .unwrap_or_default();
    // A revision without tasks has no `params.task` either: the call runs now.
    let wants_task = params.task.is_some() && session.has_tasks();
    // Checked on every call; used only by one that creates a task (a synchronous answer
    // creates nothing to repeat). Fingerprinted on the arguments as the client sent them.
    let key = idempotency_key(params.idempotency_key.take(), params.meta.as_ref())?;
    let keyed = match key {
        Some(key) if wants_task => idempotency(Some(key), tool.name(), &args)?,
        _ => None,
    };
    let scope = || CallScope {
        report: Report {
            peer: Some(peer.clone()),
            progress_token: report::progress_token(params.meta.as_ref()),
            log_level: Some(session.log_level()),
        },
        client_capabilities: session.declared.clone(),
        identity: identity.clone(),
        related_tasks: Vec::new(),
    };
    match (tool.policy(), wants_task) {
        (TaskPolicy::Required, false) => {
            return Err(ServerError::MethodNotFound(format!(
                "Tool {} requires task augmentation (execution.taskSupport is \"required\")",
                tool.name()
            )));
        }
        (TaskPolicy::Synchronous, true) => {
            return Err(ServerError::MethodNotFound(format!(
                "Tool {} does not support task augmentation",
                tool.name()
            )));
        }
        _ => {}
    }
    if !wants_task {
        let ctx = ToolContext::direct(peer.clone(), cancel, scope());
        let result = tool.run(ctx, args).await.map_err(call_error)?;
        let value =
            serde_json::to_value(result).map_err(|e| ServerError::Internal(e.to_string()))?;
        return Ok(match value {
            Value::Object(obj) => Value::Object(result_2025(obj)),
            other => other,
        });
    }
    // Input the tool needs before its task exists is asked directly, on this request.
    let args = tool
        .preflight_args(ToolContext::direct(peer.clone(), cancel, scope()), args)
        .await
        .map_err(call_error)?;
    let ttl = params
        .task
        .and_then(|t| t.ttl)
        .and_then(|t| u64::try_from(t).ok());
    // Boxed: a synchronous call's future (the common case) stays small instead of
    // carrying the task path's state on every request.
    let record = Box::pin(start_task(
        state,
        &session.owner,
        tool,
        args,
        ttl,
        WireRevision::V2025_11_25,
        Requester {
            related_tasks: Vec::new(),
            identity,
            declarations: None,
            // The tool starts once the `CreateTaskResult` is written (when the transport
            // says so): its questions and statuses never precede it.
            announced: ext.get::<ReplyWritten>().cloned(),
            idempotency: keyed,
        },
    ))
    .await?;
    let created = CreateTaskResult::new(task_2025(&record));
    serde_json::to_value(created).map_err(|e| ServerError::Internal(e.to_string()))
}

/// `tasks/get` (audited).
pub(crate) async fn tasks_get(
    state: &State,
    session: &McpSession,
    task_id: &str,
) -> Result<GetTaskResult, ServerError> {
    let outcome: Result<GetTaskResult, ServerError> = async {
        let record = state
            .store()
            .get(&session.owner, &TaskId::from_wire(task_id))
            .await?;
        if !record.is_terminal() {
            session.mark_known(&record.id);
        }
        let record = state.metered(record);
        Ok(GetTaskResult::from(task_2025(&record)))
    }
    .await;
    audit::audited(
        state.cursor_key(),
        v2025::GetTask::METHOD,
        &session.owner,
        task_id,
        outcome,
    )
}

/// `tasks/cancel`: the task is `cancelled` before the answer goes out; a finished task is
/// -32602.
pub(crate) async fn tasks_cancel(
    state: &State,
    session: &McpSession,
    task_id: &str,
) -> Result<CancelTaskResult, ServerError> {
    let outcome: Result<CancelTaskResult, ServerError> = async {
        let id = TaskId::from_wire(task_id);
        let t = state
            .store()
            .cancel(&session.owner, &id, Some(CANCELLED_MESSAGE.to_owned()))
            .await?;
        // Named by the client: its `cancelled` status goes out at once.
        session.mark_known(&id);
        if !t.won {
            let shown = task_2025(&t.record).status;
            return Err(invalid(format!(
                "Cannot cancel task: already in terminal status '{}'",
                shown.as_str()
            )));
        }
        Ok(CancelTaskResult::from(task_2025(&t.record)))
    }
    .await;
    audit::audited(
        state.cursor_key(),
        v2025::CancelTask::METHOD,
        &session.owner,
        task_id,
        outcome,
    )
}

/// `tasks/list`: the session's (or principal's) tasks, oldest first.
pub(crate) async fn tasks_list(
    state: &State,
    session: &McpSession,
    cursor: Option<&str>,
) -> Result<ListTasksResult, ServerError> {
    let outcome: Result<ListTasksResult, ServerError> = async {
        // Cursors are sealed for their owner: a forged, tampered or foreign one is refused.
        let inner = match cursor {
            None => None,
            Some(token) => Some(
                state
                    .cursor_key()
                    .open(&session.owner, token)
                    .ok_or_else(|| invalid("Invalid cursor"))?,
            ),
        };
        let page = state
            .store()
            .list(&session.owner, inner.as_deref(), LIST_PAGE)
            .await?;
        Ok(ListTasksResult {
            tasks: page.tasks.iter().map(task_2025).collect(),
            next_cursor: page
                .next_cursor
                .map(|c| state.cursor_key().seal(&session.owner, &c)),
            meta: None,
            extra: JsonObject::new(),
        })
    }
    .await;
    audit::audited(
        state.cursor_key(),
        v2025::ListTasks::METHOD,
        &session.owner,
        "*",
        outcome,
    )
}

/// `tasks/result`: waits (woken by store events) until the task ends, asking the client
/// for any input it needs meanwhile on this request's stream; then the original result
/// with the related-task `_meta`, or the original JSON-RPC error.
pub(crate) async fn tasks_result(
    state: &State,
    session: &Arc<McpSession>,
    task_id: &str,
    ext: &Extensions,
) -> Result<GetTaskPayloadResult, ServerError> {
    let outcome: Result<GetTaskPayloadResult, ServerError> = async {
        let id = TaskId::from_wire(task_id);
        // This request's stream, when it can carry the task's questions (not a JSON reply).
        let peer = ext
            .get::<Peer>()
            .filter(|p| !p.sender().is_closed())
            .cloned();
        let cancel = RequestContext::from_extensions(ext)
            .map(|c| c.cancel.clone())
            .unwrap_or_default();
        let mut events = state.runtime.watch_tasks([TaskKey {
            owner: session.owner.clone(),
            id: id.clone(),
        }]);
        let mut backoff = Backoff::default();
        loop {
            // A blocking wait rides out an unavailable store: the task goes on meanwhile.
            let record = match state.store().get(&session.owner, &id).await {
                Ok(record) => record,
                Err(e) if e.is_transient() => {
                    tokio::select! {
                        _ = cancel.cancelled() => return Err(ServerError::Internal("cancelled".to_owned())),
                        _ = backoff.wait() => continue,
                    }
                }
                Err(e) => return Err(e.into()),
            };
            backoff = Backoff::default();
            if !record.is_terminal() {
                session.mark_known(&record.id);
            }
            match (&record.outcome, record.status) {
                (Some(Outcome::Result(result)), _) => {
                    return Ok(GetTaskPayloadResult::for_task(
                        task_id,
                        result_2025(result.clone()),
                    ));
                }
                (Some(Outcome::Error(error)), _) => return Err(ServerError::Rpc(error.clone())),
                (None, TaskStatus::Cancelled) => {
                    return Err(ServerError::Internal(
                        record
                            .status_message
                            .clone()
                            .unwrap_or_else(|| "The task was cancelled".into()),
                    ));
                }
                (None, TaskStatus::InputRequired) => {
                    if let Some(peer) = &peer {
                        let stop = state.shutdown_token();
                        ask_pending(&state.runtime, session, &record, peer, &cancel, &stop);
                    }
                }
                _ => {}
            }
            // Until the next change of this task (or a periodic re-check, in case an event
            // was lost).
            let woken = async {
                loop {
                    match events.recv().await {
                        Ok(e) if e.key().id == id => return,
                        Ok(_) => continue,
                        Err(EventError::Lagged(_)) => return,
                        Err(EventError::Closed) => std::future::pending::<()>().await,
                    }
                }
            };
            tokio::select! {
                _ = cancel.cancelled() => return Err(ServerError::Internal("cancelled".to_owned())),
                _ = woken => {}
                _ = session.released.notified() => {}
                _ = tokio::time::sleep(Duration::from_secs(5)) => {}
            }
        }
    }
    .await;
    audit::audited(
        state.cursor_key(),
        v2025::GetTaskPayload::METHOD,
        &session.owner,
        task_id,
        outcome,
    )
}
