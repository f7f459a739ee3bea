//! MCP 2025-11-25 sessions and their tasks (SEP-1686), served from the same store as the
//! 2026-07-28 wire.
//!
//! A session starts with `initialize`. Its tasks belong to the authenticated principal,
//! or to the session itself when there is none. The client asks for a task
//! (`params.task`) within each tool's `execution.taskSupport`; `tasks/result` blocks until
//! the task ends and carries the related-task `_meta`; input a task needs is asked with
//! server->client requests on the stream of a pending `tasks/result` (or the session's
//! standalone stream), and the answers go into the store like 2026-07-28 answers do.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use jsonrpsee::Extensions;
use mcp_protocol::JsonObject;
use mcp_protocol::engine::{Peer, RequestContext};
use mcp_protocol::error_codes;
use mcp_protocol::jsonrpc::ErrorObject;
use mcp_protocol::meta::{PROTOCOL_VERSION_2025_11_25, RELATED_TASK};
use mcp_protocol::method::Request;
use mcp_protocol::v2025::{
    self, CallToolRequestParams, CancelTaskResult, CreateTaskResult, GetTaskPayloadResult,
    GetTaskResult, InitializeRequestParams, InitializeResult, ListTasksResult, ServerCapabilities,
    ServerTasksCapability, Task, TaskStatus, TaskStatusNotificationParams, TaskSupport,
    ToolExecution,
};
use mcp_tasks::{
    EventError, Millis, NewTask, Origin, Outcome, Owner, StoreError, TaskEvent, TaskId, TaskRecord,
    WireRevision,
};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::caller::Principal;
use crate::context::{ToolContext, ToolError};
use crate::retry::{Backoff, while_transient};
use crate::runtime::CANCELLED_MESSAGE;
use crate::server::State;
use crate::tool::{TaskPolicy, ToolDef};
use crate::views::timestamp;

/// How many tasks one `tasks/list` page holds.
const LIST_PAGE: usize = 50;

/// An MCP 2025-11-25 session.
#[derive(Debug)]
pub struct LegacySession {
    /// The session id (`Mcp-Session-Id` over HTTP).
    pub id: String,
    /// Who owns the session's tasks: the principal, or the session itself.
    pub owner: Owner,
    /// The authenticated principal that opened the session, if any: only it may use the
    /// session afterwards (a session id is not a credential).
    pub principal: Option<String>,
    /// What the client declared at `initialize`.
    pub client_capabilities: v2025::ClientCapabilities,
    /// Where notifications and input requests go when no request stream fits: the
    /// connection (stdio) or the standalone GET stream (HTTP), once opened.
    standalone: Mutex<Option<Standalone>>,
    /// Input requests being asked right now (task id, key), so each is asked once.
    asking: Mutex<HashSet<(TaskId, String)>>,
    /// Signalled when an input request stops being asked unanswered (its stream went
    /// away), so a pending `tasks/result` asks it again at once.
    released: Notify,
    /// Ends the session's watcher.
    closed: CancellationToken,
}

/// A session's standalone stream: where to send, and a token cancelled once the stream
/// is gone (input requests asked on it are then asked again elsewhere).
#[derive(Debug, Clone)]
struct Standalone {
    peer: Peer,
    gone: CancellationToken,
}

impl LegacySession {
    /// Sets the stream for notifications and input requests outside a request; returns
    /// the token to hand to [`clear_standalone`](Self::clear_standalone) when that stream
    /// ends.
    pub fn set_standalone(&self, peer: Peer) -> CancellationToken {
        let gone = CancellationToken::new();
        *self.standalone.lock().unwrap_or_else(|e| e.into_inner()) = Some(Standalone {
            peer,
            gone: gone.clone(),
        });
        gone
    }

    /// The stream `gone` was returned for has ended: input requests waiting on it are
    /// released, and it stops being the standalone stream unless another replaced it.
    pub fn clear_standalone(&self, gone: &CancellationToken) {
        gone.cancel();
        let mut current = self.standalone.lock().unwrap_or_else(|e| e.into_inner());
        if current.as_ref().is_some_and(|s| s.gone.is_cancelled()) {
            *current = None;
        }
    }

    /// Drops the standalone stream, whichever it is (its connection ended).
    pub fn drop_standalone(&self) {
        let taken = self
            .standalone
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(s) = taken {
            s.gone.cancel();
        }
    }

    fn standalone(&self) -> Option<Standalone> {
        self.standalone
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Ends the session: its watcher stops.
    pub fn close(&self) {
        self.closed.cancel();
    }

    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }
}

/// The session a request belongs to, if it belongs to a 2025-11-25 one. Transports put a
/// slot into every request's extensions; `initialize` fills it.
#[derive(Debug, Clone, Default)]
pub struct SessionSlot(Arc<OnceLock<Arc<LegacySession>>>);

impl SessionSlot {
    /// A slot already holding `session`.
    pub fn with(session: Arc<LegacySession>) -> SessionSlot {
        let slot = SessionSlot::default();
        let _ = slot.0.set(session);
        slot
    }

    pub fn get(&self) -> Option<&Arc<LegacySession>> {
        self.0.get()
    }
}

/// The 2025-11-25 session of a request.
pub(crate) fn session_of(ext: &Extensions) -> Option<Arc<LegacySession>> {
    ext.get::<SessionSlot>().and_then(|s| s.get().cloned())
}

fn invalid(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(error_codes::INVALID_PARAMS, message)
}

fn store_rpc(e: StoreError) -> ErrorObject {
    ErrorObject::from(&e)
}

fn millis(v: Option<u64>) -> Option<i64> {
    v.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}

/// Whether a completed task's result is a tool error (`isError: true`).
fn is_tool_error(rec: &TaskRecord) -> bool {
    matches!(&rec.outcome, Some(Outcome::Result(r)) if r.get("isError") == Some(&Value::Bool(true)))
}

/// A record in the 2025-11-25 view: `ttl`/`pollInterval`, and a tool error shows as
/// `failed` (the 2026-07-28 view shows it `completed`).
pub fn task_view(rec: &TaskRecord) -> Task {
    let status = if rec.status == TaskStatus::Completed && is_tool_error(rec) {
        TaskStatus::Failed
    } else {
        rec.status
    };
    let mut task = Task::new(
        rec.id.as_str(),
        status,
        timestamp(rec.created_at),
        timestamp(rec.last_updated_at),
    );
    task.status_message = rec.status_message.clone();
    task.ttl = millis(rec.ttl_ms);
    task.poll_interval = millis(rec.poll_interval_ms);
    task
}

/// A tool's 2026-shaped result in the 2025-11-25 shape (no `resultType`).
fn result_view(mut result: JsonObject) -> JsonObject {
    result.remove("resultType");
    result
}

/// `initialize`: negotiates 2025-11-25 and opens the session in the request's slot.
pub(crate) async fn initialize(
    state: &State,
    params: InitializeRequestParams,
    ext: &Extensions,
) -> Result<InitializeResult, ErrorObject> {
    let slot = ext.get::<SessionSlot>().ok_or_else(|| {
        ErrorObject::new(
            error_codes::INVALID_REQUEST,
            "initialize is not available on this transport",
        )
    })?;
    if slot.get().is_some() {
        return Err(ErrorObject::new(
            error_codes::INVALID_REQUEST,
            "The session is already initialized",
        ));
    }
    let id = TaskId::random()
        .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))?
        .as_str()
        .to_owned();
    let owner = ext.get::<Principal>().map_or_else(
        || Owner::new(format!("session:{id}")),
        |p| Owner::new(p.0.clone()),
    );
    let session = Arc::new(LegacySession {
        id,
        owner,
        principal: ext.get::<Principal>().map(|p| p.0.clone()),
        client_capabilities: params.capabilities.clone(),
        standalone: Mutex::new(
            ext.get::<StandaloneIsRequestPeer>()
                .and_then(|_| ext.get::<Peer>().cloned())
                .map(|peer| Standalone {
                    peer,
                    gone: CancellationToken::new(),
                }),
        ),
        asking: Mutex::default(),
        released: Notify::new(),
        closed: CancellationToken::new(),
    });
    if slot.0.set(Arc::clone(&session)).is_err() {
        return Err(ErrorObject::new(
            error_codes::INVALID_REQUEST,
            "The session is already initialized",
        ));
    }
    tokio::spawn(watch(
        state.store_arc(),
        Arc::clone(&session),
        state.shutdown_token(),
    ));
    let capabilities = ServerCapabilities {
        tools: Some(Default::default()),
        tasks: Some(ServerTasksCapability::tool_calls(true)),
        ..Default::default()
    };
    Ok(InitializeResult {
        protocol_version: PROTOCOL_VERSION_2025_11_25.to_owned(),
        capabilities,
        server_info: state.info().clone(),
        instructions: state.instructions().map(str::to_owned),
        meta: None,
        extra: JsonObject::new(),
    })
}

/// Marks a connection whose own peer is the session's standalone stream (stdio).
#[derive(Debug, Clone, Copy)]
pub struct StandaloneIsRequestPeer;

/// `tools/list` in the 2025-11-25 shape: `execution.taskSupport` from each tool's policy.
pub(crate) fn tools_list(state: &State) -> v2025::ListToolsResult {
    let tools = state
        .tools()
        .map(|tool| {
            let support = match tool.policy() {
                TaskPolicy::Synchronous => TaskSupport::Forbidden,
                TaskPolicy::Optional => TaskSupport::Optional,
                TaskPolicy::Required => TaskSupport::Required,
            };
            let schema = serde_json::from_value(Value::Object(tool.input_schema.clone()))
                .unwrap_or_default();
            let mut listed = v2025::Tool::new(tool.name());
            listed.input_schema = schema;
            listed.title = tool.title.clone();
            listed.description = tool.description.clone();
            listed.execution = Some(ToolExecution::with_task_support(support));
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
    state: &Arc<State>,
    session: &LegacySession,
    params: CallToolRequestParams,
    ext: &Extensions,
) -> Result<Value, ErrorObject> {
    let tool = state
        .tool(&params.name)
        .ok_or_else(|| invalid(format!("Unknown tool: {}", params.name)))?;
    let args = params.arguments.clone().unwrap_or_default();
    tool.validate(&args)?;
    let peer = ext
        .get::<Peer>()
        .cloned()
        .ok_or_else(|| ErrorObject::new(error_codes::INTERNAL_ERROR, "no peer"))?;
    let cancel = RequestContext::from_extensions(ext)
        .map(|c| c.cancel.clone())
        .unwrap_or_default();
    let wants_task = params.task.is_some();
    match (tool.policy(), wants_task) {
        (TaskPolicy::Required, false) => {
            return Err(ErrorObject::new(
                error_codes::METHOD_NOT_FOUND,
                format!(
                    "Tool {} requires task augmentation (execution.taskSupport is \"required\")",
                    tool.name()
                ),
            ));
        }
        (TaskPolicy::Synchronous, true) => {
            return Err(ErrorObject::new(
                error_codes::METHOD_NOT_FOUND,
                format!("Tool {} does not support task augmentation", tool.name()),
            ));
        }
        _ => {}
    }
    if !wants_task {
        let ctx = ToolContext::direct(peer, cancel);
        return match tool.run(ctx, args).await {
            Ok(result) => {
                let value = serde_json::to_value(result)
                    .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))?;
                Ok(match value {
                    Value::Object(obj) => Value::Object(result_view(obj)),
                    other => other,
                })
            }
            Err(ToolError::Rpc(e)) => Err(e),
            Err(ToolError::Cancelled) => Err(ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                "The call was cancelled",
            )),
            Err(ToolError::InputRequired) => Err(ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                "The tool asked for input in rounds",
            )),
        };
    }
    // Input the tool needs before its task exists is asked directly, on this request.
    let args = match tool.run_preflight(ToolContext::direct(peer, cancel), args.clone()) {
        None => args,
        Some(preflight) => match preflight.await {
            Ok(args) => args,
            Err(ToolError::Rpc(e)) => return Err(e),
            Err(_) => {
                return Err(ErrorObject::new(
                    error_codes::INTERNAL_ERROR,
                    "The call was cancelled",
                ));
            }
        },
    };
    let record = start_task(state, session, tool, args, params.task.and_then(|t| t.ttl)).await?;
    let created = CreateTaskResult::new(task_view(&record));
    serde_json::to_value(created)
        .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))
}

async fn start_task(
    state: &Arc<State>,
    session: &LegacySession,
    tool: &ToolDef,
    args: JsonObject,
    ttl: Option<i64>,
) -> Result<TaskRecord, ErrorObject> {
    if !state.runtime().is_accepting() {
        return Err(ErrorObject::new(
            error_codes::INTERNAL_ERROR,
            "The server is shutting down",
        ));
    }
    let new = NewTask {
        owner: session.owner.clone(),
        ttl_ms: ttl.and_then(|t| u64::try_from(t).ok()),
        poll_interval_ms: state.poll_interval(),
        origin: Origin {
            method: v2025::CallTool::METHOD.to_owned(),
            tool: Some(tool.name().to_owned()),
            revision: WireRevision::V2025_11_25,
        },
        status_message: None,
    };
    let created = state
        .runtime()
        .create_and_launch(new, tool.clone(), args)
        .await
        .map_err(store_rpc);
    let id = created
        .as_ref()
        .map(|r| r.id.as_str().to_owned())
        .unwrap_or_default();
    crate::audit::record("tools/call: create task", &session.owner, &id, &created);
    let record = created?;
    Ok(record)
}

/// `tasks/get`.
pub(crate) async fn tasks_get(
    state: &State,
    session: &LegacySession,
    task_id: &str,
) -> Result<GetTaskResult, ErrorObject> {
    let record = state
        .store()
        .get(&session.owner, &TaskId::from_wire(task_id))
        .await
        .map_err(store_rpc)?;
    let record = state.metered(record);
    Ok(GetTaskResult::from(task_view(&record)))
}

/// `tasks/cancel`: the task is `cancelled` before the answer goes out; a finished task is
/// -32602.
pub(crate) async fn tasks_cancel(
    state: &State,
    session: &LegacySession,
    task_id: &str,
) -> Result<CancelTaskResult, ErrorObject> {
    let id = TaskId::from_wire(task_id);
    let t = state
        .store()
        .cancel(&session.owner, &id, Some(CANCELLED_MESSAGE.to_owned()))
        .await
        .map_err(store_rpc)?;
    if !t.won {
        let shown = task_view(&t.record).status;
        return Err(invalid(format!(
            "Cannot cancel task: already in terminal status '{}'",
            shown.as_str()
        )));
    }
    Ok(CancelTaskResult::from(task_view(&t.record)))
}

/// `tasks/list`: the session's (or principal's) tasks, oldest first.
pub(crate) async fn tasks_list(
    state: &State,
    session: &LegacySession,
    cursor: Option<&str>,
) -> Result<ListTasksResult, ErrorObject> {
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
        .await
        .map_err(store_rpc)?;
    Ok(ListTasksResult {
        tasks: page.tasks.iter().map(task_view).collect(),
        next_cursor: page
            .next_cursor
            .map(|c| state.cursor_key().seal(&session.owner, &c)),
        meta: None,
        extra: JsonObject::new(),
    })
}

/// `tasks/result`: waits (woken by store events) until the task ends, asking the client
/// for any input it needs meanwhile on this request's stream; then the original result
/// with the related-task `_meta`, or the original JSON-RPC error.
pub(crate) async fn tasks_result(
    state: &State,
    session: &Arc<LegacySession>,
    task_id: &str,
    ext: &Extensions,
) -> Result<GetTaskPayloadResult, ErrorObject> {
    let id = TaskId::from_wire(task_id);
    let peer = ext.get::<Peer>().cloned();
    let cancel = RequestContext::from_extensions(ext)
        .map(|c| c.cancel.clone())
        .unwrap_or_default();
    let mut events = state.store().events();
    let mut backoff = Backoff::default();
    loop {
        // A blocking wait rides out an unavailable store: the task goes on meanwhile.
        let record = match state.store().get(&session.owner, &id).await {
            Ok(record) => record,
            Err(e) if e.is_transient() => {
                tokio::select! {
                    _ = cancel.cancelled() => return Err(ErrorObject::new(error_codes::INTERNAL_ERROR, "cancelled")),
                    _ = backoff.wait() => continue,
                }
            }
            Err(e) => return Err(store_rpc(e)),
        };
        backoff = Backoff::default();
        match (&record.outcome, record.status) {
            (Some(Outcome::Result(result)), _) => {
                return Ok(GetTaskPayloadResult::for_task(
                    task_id,
                    result_view(result.clone()),
                ));
            }
            (Some(Outcome::Error(error)), _) => return Err(error.clone()),
            (None, TaskStatus::Cancelled) => {
                return Err(ErrorObject::new(
                    error_codes::INTERNAL_ERROR,
                    record
                        .status_message
                        .clone()
                        .unwrap_or_else(|| "The task was cancelled".into()),
                ));
            }
            (None, TaskStatus::InputRequired) => {
                if let Some(peer) = &peer {
                    let stop = state.shutdown_token();
                    ask_pending(state.store_arc(), session, &record, peer, &cancel, &stop);
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
            _ = cancel.cancelled() => return Err(ErrorObject::new(error_codes::INTERNAL_ERROR, "cancelled")),
            _ = woken => {}
            _ = session.released.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
    }
}

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
fn ask_pending(
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
async fn watch(
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
        let params = TaskStatusNotificationParams::from(task_view(record));
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
