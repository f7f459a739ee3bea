//! Client-hosted tasks (MCP 2025-11-25, SEP-1686, with the client as the receiver): a
//! server asks `sampling/createMessage` or `elicitation/create` with `params.task`, the
//! client answers at once with a `CreateTaskResult` and runs the application's handler
//! in the background; the server follows the task with `tasks/get`, `tasks/result`,
//! `tasks/list` and `tasks/cancel`, and hears `notifications/tasks/status`.
//!
//! The tasks live in the application's [`TaskStore`] (any backend, the same contract as
//! the server's), owned by the connection: each connection is its own owner, so one
//! server never sees another connection's tasks, even on a shared store. TTLs and limits
//! are the store's ([`Limits`](mcp_tasks::Limits)): a requested TTL is clamped to its
//! maximum, a task over its limits is refused (-32600), an expired one reads as unknown
//! (-32602).
//!
//! Imports nothing of the crate: `handler.rs` hands it the handler's answer to run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, UNIX_EPOCH};

use futures::FutureExt;
use mcp_tasks::{
    EventError, Idempotency, Millis, NewTask, Origin, Outcome, Owner, TaskEvent, TaskId,
    TaskRecord, TaskStore, WireRevision,
};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::Peer;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::TaskStatus;
use mcp_tasks_protocol::v2025::{
    self, CancelTaskResult, ClientCapabilities, ClientTaskRequests, ClientTasksCapability,
    CreateTaskResult, ElicitationTaskRequests, GetTaskPayloadResult, GetTaskResult,
    ListTasksResult, SamplingTaskRequests, TaskStatusNotificationParams,
};
use serde_json::Value;

/// How many tasks one `tasks/list` page holds.
const LIST_PAGE: usize = 50;

/// How often expired tasks are swept from the store (their handlers stopped).
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// How often a blocking `tasks/result` looks at the store without an event (in case
/// one was lost).
const RESULT_RECHECK: Duration = Duration::from_secs(5);

/// The status message of a task cancelled by `tasks/cancel`.
pub(crate) const CANCELLED_MESSAGE: &str = "The task was cancelled by request.";

/// The status message of a task whose connection ended before it did.
const CLOSED_MESSAGE: &str = "The client's connection ended before the task did.";

/// The tasks one connection hosts.
pub(crate) struct Hosted {
    store: Arc<dyn TaskStore>,
    /// This connection, as the owner of every task it hosts.
    owner: Owner,
    /// The requests the handler declares it answers, so may be hosted as tasks.
    methods: Vec<&'static str>,
    /// Where status notifications go, once the connection is served.
    peer: OnceLock<Peer>,
    /// The handlers running, by task: aborted by `tasks/cancel`, an expiry, or the
    /// connection's end.
    running: Mutex<HashMap<TaskId, tokio::task::AbortHandle>>,
    /// The status notifier and the sweeper.
    background: Mutex<Vec<tokio::task::AbortHandle>>,
    /// Set by [`close`](Hosted::close).
    closed: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Hosted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hosted")
            .field("owner", &self.owner)
            .field("methods", &self.methods)
            .finish_non_exhaustive()
    }
}

impl Drop for Hosted {
    fn drop(&mut self) {
        self.close();
    }
}

impl Hosted {
    /// The client is gone (its last handle dropped) or the connection ended: the
    /// handlers stop, their tasks end `cancelled` (in the background, when a runtime is
    /// there to run it) so that none stays `working` in a shared store until its TTL, and
    /// no task is started any more. Idempotent.
    pub(crate) fn close(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        let running: Vec<TaskId> = lock(&self.running)
            .drain()
            .map(|(id, handle)| {
                handle.abort();
                id
            })
            .collect();
        for handle in lock(&self.background).iter() {
            handle.abort();
        }
        if running.is_empty() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (store, owner) = (Arc::clone(&self.store), self.owner.clone());
            runtime.spawn(async move {
                for id in running {
                    let message = Some(CLOSED_MESSAGE.to_owned());
                    if let Err(e) = store.cancel(&owner, &id, message).await {
                        tracing::debug!(task_id = %id, error = %e, "a hosted task was left unfinished");
                    }
                }
            });
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The idempotency key of a task-augmented request of `method` (our extension,
/// rs.mcp-tasks): `params.idempotencyKey` or `_meta.idempotencyKey`, checked as a
/// server checks a `tools/call`'s ([`meta::idempotency_key`](mcp_tasks_protocol::meta::idempotency_key));
/// with the fingerprint of the method and its params without `_meta`, `task` and the
/// key ([`meta::idempotency_fingerprint`](mcp_tasks_protocol::meta::idempotency_fingerprint)).
/// -32602 for a key that is not a string of 1 to 255 bytes (`params.idempotencyKey: null`
/// is no key), or two that differ.
pub(crate) fn idempotency_of(
    method: &str,
    params: &Value,
) -> Result<Option<Idempotency>, ErrorObject> {
    use mcp_tasks_protocol::meta::{IDEMPOTENCY_KEY, idempotency_fingerprint, idempotency_key};
    let Some(object) = params.as_object() else {
        return Ok(None);
    };
    let in_meta = object.get("_meta").and_then(|m| m.get(IDEMPOTENCY_KEY));
    // `params.idempotencyKey: null` is no key, as a server's typed params read it;
    // `_meta.idempotencyKey: null` is refused, as on a server.
    let in_params = object.get(IDEMPOTENCY_KEY).filter(|v| !v.is_null());
    let Some(key) = idempotency_key(in_params, in_meta).map_err(invalid)? else {
        return Ok(None);
    };
    let mut rest = object.clone();
    for member in ["_meta", "task", IDEMPOTENCY_KEY] {
        rest.remove(member);
    }
    Idempotency::new(key, idempotency_fingerprint(method, &rest))
        .map(Some)
        .map_err(|e| invalid(format!("Invalid params: {e}")))
}

fn invalid(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(error_codes::INVALID_PARAMS, message)
}

fn internal(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(error_codes::INTERNAL_ERROR, message)
}

fn store_error(e: &mcp_tasks::StoreError) -> ErrorObject {
    ErrorObject::from(e)
}

/// An ISO 8601 / RFC 3339 timestamp with milliseconds, in UTC.
fn timestamp(ms: Millis) -> String {
    let at = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(at).to_string()
}

fn millis(v: Option<u64>) -> Option<i64> {
    v.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}

/// A record in the 2025-11-25 view (`ttl`, `pollInterval`).
pub(crate) fn task_view(rec: &TaskRecord) -> v2025::Task {
    let mut task = v2025::Task::new(
        rec.id.as_str(),
        rec.status,
        timestamp(rec.created_at),
        timestamp(rec.last_updated_at),
    );
    task.status_message = rec.status_message.clone();
    task.ttl = millis(rec.ttl_ms);
    task.poll_interval = millis(rec.poll_interval_ms);
    task
}

/// The `taskId` of a `tasks/get`, `tasks/result` or `tasks/cancel`.
fn task_id_of(params: &Value) -> Result<TaskId, ErrorObject> {
    let params: v2025::TaskIdParams = serde_json::from_value(params.clone())
        .map_err(|e| invalid(format!("malformed task request: {e}")))?;
    Ok(TaskId::from_wire(params.task_id))
}

impl Hosted {
    /// Tasks hosted in `store` for one connection, for the requests `declared` says the
    /// handler answers (sampling, elicitation). Refused when no owner id can be drawn.
    pub(crate) fn new(
        store: Arc<dyn TaskStore>,
        declared: &ClientCapabilities,
    ) -> Result<Hosted, String> {
        let id = TaskId::random().map_err(|e| format!("no random connection id: {e}"))?;
        let mut methods = Vec::new();
        if declared.sampling.is_some() {
            methods.push(v2025::methods::SAMPLING_CREATE_MESSAGE);
        }
        if declared.elicitation.is_some() {
            methods.push(v2025::methods::ELICITATION_CREATE);
        }
        Ok(Hosted {
            store,
            owner: Owner::new(format!("client-connection:{id}")),
            methods,
            peer: OnceLock::new(),
            running: Mutex::default(),
            background: Mutex::default(),
            closed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The `tasks` capability the client declares at `initialize`: `list`, `cancel` and
    /// the requests it hosts.
    pub(crate) fn capability(&self) -> ClientTasksCapability {
        let hosts = |m: &str| self.methods.contains(&m).then(JsonObject::new);
        ClientTasksCapability {
            list: Some(JsonObject::new()),
            cancel: Some(JsonObject::new()),
            requests: Some(ClientTaskRequests {
                sampling: hosts(v2025::methods::SAMPLING_CREATE_MESSAGE).map(|create| {
                    SamplingTaskRequests {
                        create_message: Some(create),
                        ..Default::default()
                    }
                }),
                elicitation: hosts(v2025::methods::ELICITATION_CREATE).map(|create| {
                    ElicitationTaskRequests {
                        create: Some(create),
                        ..Default::default()
                    }
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Whether a request of `method` with `params.task` becomes a task here (otherwise
    /// it is answered as a plain request, `params.task` ignored).
    pub(crate) fn hosts(&self, method: &str) -> bool {
        self.methods.contains(&method)
    }

    /// Starts sending `notifications/tasks/status` through `peer` and sweeping expired
    /// tasks; both end with the connection.
    pub(crate) fn serve(self: &Arc<Self>, peer: Peer) {
        if self.peer.set(peer).is_err() {
            return;
        }
        let notifier = tokio::spawn(notify_statuses(Arc::downgrade(self), self.store.events()));
        let sweeper = tokio::spawn(sweep(Arc::downgrade(self)));
        lock(&self.background).extend([notifier.abort_handle(), sweeper.abort_handle()]);
    }

    /// A task-augmented request of `method` with this `params.task`: the task is
    /// created (durable) and answered at once; `run` (the handler answering the request)
    /// goes on in the background, and its answer or error becomes the task's outcome.
    ///
    /// With an idempotency key (`idempotency`, from [`idempotency_of`]) the store makes
    /// at most one task per key: a repeat is answered with the task the key names, as it
    /// is now, and runs nothing; a reuse with other params is -32602.
    pub(crate) async fn start<F>(
        self: &Arc<Self>,
        method: &'static str,
        task: Value,
        idempotency: Option<Idempotency>,
        run: F,
    ) -> Result<Value, ErrorObject>
    where
        F: std::future::Future<Output = Result<Value, ErrorObject>> + Send + 'static,
    {
        let task: v2025::TaskMetadata = serde_json::from_value(task)
            .map_err(|e| invalid(format!("malformed params.task: {e}")))?;
        if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(internal("the client is closing: it starts no task"));
        }
        let new = NewTask {
            trace_context: None,
            owner: self.owner.clone(),
            ttl_ms: task.ttl.and_then(|t| u64::try_from(t).ok()),
            poll_interval_ms: None,
            origin: Origin {
                method: method.to_owned(),
                tool: None,
                revision: WireRevision::V2025_11_25,
            },
            status_message: None,
            job: None,
            idempotency,
        };
        let record = match self.store.create(new).await {
            Ok(record) => record,
            // The key names a task already: that one, and nothing runs.
            Err(mcp_tasks::StoreError::AlreadyExists { task }) => {
                return serde_json::to_value(CreateTaskResult::new(task_view(&task)))
                    .map_err(|e| internal(e.to_string()));
            }
            // A store that keeps no keys: the caller's error, as on a server.
            Err(mcp_tasks::StoreError::Unsupported {
                operation: "idempotency keys",
            }) => {
                return Err(invalid(
                    "Invalid params: this client's task store does not support idempotency keys",
                ));
            }
            Err(e) => return Err(store_error(&e)),
        };
        let id = record.id.clone();
        let hosted = Arc::downgrade(self);
        let (store, owner, task_id) = (Arc::clone(&self.store), self.owner.clone(), id.clone());
        // Registered before it can finish, so it is never left in the table.
        let mut running = lock(&self.running);
        let run = tokio::spawn(async move {
            // A handler that panics fails its task (-32603), never the connection.
            let outcome = std::panic::AssertUnwindSafe(run).catch_unwind().await;
            let outcome =
                outcome.unwrap_or_else(|_| Err(internal("the client's handler panicked")));
            let written = match outcome {
                Ok(Value::Object(result)) => store.complete(&owner, &task_id, result).await,
                Ok(other) => {
                    let error = internal(format!("the handler answered {other}, not an object"));
                    store.fail(&owner, &task_id, error).await
                }
                Err(error) => store.fail(&owner, &task_id, error).await,
            };
            if let Err(e) = written {
                tracing::debug!(task_id = %task_id, error = %e, "a hosted task's outcome was not written");
            }
            if let Some(hosted) = hosted.upgrade() {
                lock(&hosted.running).remove(&task_id);
            }
        });
        running.insert(id, run.abort_handle());
        drop(running);
        if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            // Closed while the task was being made: it ends with the others.
            self.close();
        }
        serde_json::to_value(CreateTaskResult::new(task_view(&record)))
            .map_err(|e| internal(e.to_string()))
    }

    /// `tasks/get`.
    pub(crate) async fn get(&self, params: &Value) -> Result<Value, ErrorObject> {
        let id = task_id_of(params)?;
        let record = self
            .store
            .get(&self.owner, &id)
            .await
            .map_err(|e| store_error(&e))?;
        encode(GetTaskResult::from(task_view(&record)))
    }

    /// `tasks/result`: waits until the task ends, then the original result with the
    /// related-task `_meta`, or the original JSON-RPC error.
    pub(crate) async fn result(&self, params: &Value) -> Result<Value, ErrorObject> {
        let id = task_id_of(params)?;
        let mut events = self.store.events();
        loop {
            let record = self
                .store
                .get(&self.owner, &id)
                .await
                .map_err(|e| store_error(&e))?;
            match (&record.outcome, record.status) {
                (Some(Outcome::Result(result)), _) => {
                    return encode(GetTaskPayloadResult::for_task(id.as_str(), result.clone()));
                }
                (Some(Outcome::Error(error)), _) => return Err(error.clone()),
                (None, TaskStatus::Cancelled) => {
                    return Err(internal(
                        record
                            .status_message
                            .unwrap_or_else(|| CANCELLED_MESSAGE.to_owned()),
                    ));
                }
                _ => {}
            }
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
            let _ = tokio::time::timeout(RESULT_RECHECK, woken).await;
        }
    }

    /// `tasks/list`: this connection's tasks, oldest first.
    pub(crate) async fn list(&self, params: &Value) -> Result<Value, ErrorObject> {
        let params: Option<v2025::PaginatedRequestParams> = match params {
            Value::Null => None,
            other => serde_json::from_value(other.clone())
                .map_err(|e| invalid(format!("malformed tasks/list params: {e}")))?,
        };
        let cursor = params.and_then(|p| p.cursor);
        let page = self
            .store
            .list(&self.owner, cursor.as_deref(), LIST_PAGE)
            .await
            .map_err(|e| store_error(&e))?;
        encode(ListTasksResult {
            tasks: page.tasks.iter().map(task_view).collect(),
            next_cursor: page.next_cursor,
            meta: None,
            extra: JsonObject::new(),
        })
    }

    /// `tasks/cancel`: the task is `cancelled` (and its handler stopped) before the
    /// answer goes out; a finished task is -32602.
    pub(crate) async fn cancel(&self, params: &Value) -> Result<Value, ErrorObject> {
        let id = task_id_of(params)?;
        let t = self
            .store
            .cancel(&self.owner, &id, Some(CANCELLED_MESSAGE.to_owned()))
            .await
            .map_err(|e| store_error(&e))?;
        if !t.won {
            return Err(invalid(format!(
                "Cannot cancel task: already in terminal status '{}'",
                t.record.status.as_str()
            )));
        }
        if let Some(run) = lock(&self.running).remove(&id) {
            run.abort();
        }
        encode(CancelTaskResult::from(task_view(&t.record)))
    }
}

fn encode(value: impl serde::Serialize) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|e| internal(e.to_string()))
}

/// Sends `notifications/tasks/status` for each change of a task the connection hosts
/// (events wake; the record read afterwards is what is sent). A lag loses notifications,
/// never state: the server can always poll `tasks/get`.
async fn notify_statuses(hosted: Weak<Hosted>, mut events: mcp_tasks::EventStream) {
    loop {
        let key = match events.recv().await {
            Ok(TaskEvent::Changed { key, .. }) => key,
            Ok(_) => continue,
            Err(EventError::Lagged(n)) => {
                tracing::debug!(dropped = n, "hosted task events lagged; statuses skipped");
                continue;
            }
            Err(EventError::Closed) => return,
        };
        let Some(hosted) = hosted.upgrade() else {
            return;
        };
        if key.owner != hosted.owner {
            continue;
        }
        let Ok(record) = hosted.store.get(&hosted.owner, &key.id).await else {
            continue;
        };
        let Some(peer) = hosted.peer.get().cloned() else {
            continue;
        };
        drop(hosted);
        let params = TaskStatusNotificationParams::from(task_view(&record));
        if let Err(e) = peer.notify::<v2025::TaskStatusChanged>(&params).await {
            tracing::debug!(error = %e, "task status notification not delivered");
        }
    }
}

/// Deletes expired tasks now and then, stopping the handlers of those unfinished.
async fn sweep(hosted: Weak<Hosted>) {
    let mut every = tokio::time::interval(SWEEP_EVERY);
    every.tick().await;
    loop {
        every.tick().await;
        let Some(hosted) = hosted.upgrade() else {
            return;
        };
        match hosted.store.sweep().await {
            Ok(report) => {
                let mut running = lock(&hosted.running);
                for key in report.expired_unfinished.iter() {
                    if let Some(run) = running.remove(&key.id) {
                        run.abort();
                    }
                }
            }
            Err(e) => tracing::debug!(error = %e, "sweeping hosted tasks failed"),
        }
    }
}

#[cfg(test)]
#[path = "hosted_tests.rs"]
mod tests;
