//! The task driver: follows a task to its end, answering its input requests, and the
//! [`TaskHandle`] that exposes it.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_protocol::JsonObject;
use mcp_protocol::method::Request;
use mcp_protocol::tasks::{
    self, CancelTask, DetailedTask, GetTask, GetTaskResult, Task, TaskIdParams, TaskStatus,
    UpdateTask, UpdateTaskRequestParams,
};
use mcp_protocol::v2026::{self, CallToolResult, SubscriptionsListen};
use serde_json::Value;
use tokio::sync::watch;

use crate::client::McpClient;
use crate::error::ClientError;
use crate::handler::answer;

/// How tasks are followed.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// Poll interval when the server suggests none.
    pub default_poll: Duration,
    /// Never poll faster than this, whatever the server says.
    pub min_poll: Duration,
    /// Never wait longer than this between polls.
    pub max_poll: Duration,
    /// Subscribe to pushed updates (`subscriptions/listen`) when the server offers them.
    pub push: bool,
    /// Polls in `input_required` with nothing new before the task counts as stuck.
    pub stuck_after_polls: u32,
    /// The longest a task is followed when it has no TTL.
    pub max_wait: Duration,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            default_poll: Duration::from_secs(1),
            min_poll: Duration::from_millis(100),
            max_poll: Duration::from_secs(10),
            push: true,
            stuck_after_polls: 30,
            max_wait: Duration::from_secs(24 * 60 * 60),
        }
    }
}

#[derive(Debug)]
struct HandleState {
    answered: BTreeSet<String>,
    /// Answers the handler gave that the server has not taken yet (its store was
    /// unavailable): sent again as they are, never asked twice.
    unsent: JsonObject,
    finished: bool,
    cancel_on_drop: bool,
}

/// A task being followed.
///
/// Dropping a handle that owns the task before the task finished sends `tasks/cancel`
/// (unless [`detach`](TaskHandle::detach)ed). A handle from
/// [`call_tool_as_task`](McpClient::call_tool_as_task) owns its task from the start; a
/// handle from [`resume_task`](McpClient::resume_task) owns it once
/// [`wait`](TaskHandle::wait) has been called, so a resumed handle that only reads the
/// task ([`status`](TaskHandle::status), [`updates`](TaskHandle::updates)) leaves it
/// running when dropped.
#[derive(Debug)]
pub struct TaskHandle {
    client: McpClient,
    id: String,
    latest: watch::Sender<Option<DetailedTask>>,
    created: Option<Task>,
    state: Arc<Mutex<HandleState>>,
}

impl TaskHandle {
    /// A handle for task `id`; `created` is the task as `tools/call` returned it (then
    /// the handle owns the task), `None` for a resumed handle (which owns it only once
    /// it waits for it).
    pub(crate) fn new(client: McpClient, id: String, created: Option<Task>) -> TaskHandle {
        let (latest, _) = watch::channel(None);
        let cancel_on_drop = created.is_some();
        TaskHandle {
            client,
            id,
            latest,
            created,
            state: Arc::new(Mutex::new(HandleState {
                answered: BTreeSet::new(),
                unsent: JsonObject::new(),
                finished: false,
                cancel_on_drop,
            })),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, HandleState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The task id (persist it to [`resume`](McpClient::resume_task) after a restart).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The task as the server created it (absent for a resumed handle).
    pub fn created(&self) -> Option<&Task> {
        self.created.as_ref()
    }

    /// Keeps the task running when this handle is dropped.
    pub fn detach(self) -> String {
        self.state().cancel_on_drop = false;
        self.id.clone()
    }

    /// Every state the driver sees, latest first; for progress displays.
    pub fn updates(&self) -> watch::Receiver<Option<DetailedTask>> {
        self.latest.subscribe()
    }

    /// The input request keys answered so far.
    pub fn answered(&self) -> Vec<String> {
        self.state().answered.iter().cloned().collect()
    }

    fn id_params(&self) -> TaskIdParams {
        let mut params = TaskIdParams::new(&self.id);
        params.meta = serde_json::to_value(self.client.request_meta())
            .ok()
            .and_then(|v| match v {
                Value::Object(m) => Some(m),
                _ => None,
            });
        params
    }

    /// Reads the task now (`tasks/get`). In a 2025-11-25 session the flat task is shown as
    /// a `DetailedTask` without its result (which `tasks/result` fetches).
    pub async fn status(&self) -> Result<DetailedTask, ClientError> {
        if self.client.is_2025() {
            let task: mcp_protocol::v2025::Task = self
                .client
                .request_as(GetTask::METHOD, &TaskIdParams::new(&self.id))
                .await?;
            let detailed = detailed_2025(task)?;
            self.latest.send_replace(Some(detailed.clone()));
            return Ok(detailed);
        }
        let result: GetTaskResult = self.client.request::<GetTask>(&self.id_params()).await?;
        let task = result.task;
        if task.task_id() != self.id {
            return Err(ClientError::Protocol(format!(
                "tasks/get for {} answered task {}",
                self.id,
                task.task_id()
            )));
        }
        self.latest.send_replace(Some(task.clone()));
        Ok(task)
    }

    /// Asks the server to stop the task (`tasks/cancel`). Cancellation is cooperative: the
    /// task may still end `completed` or `failed`.
    pub async fn cancel(&self) -> Result<(), ClientError> {
        if self.client.is_2025() {
            let _: Value = self
                .client
                .request_as(CancelTask::METHOD, &TaskIdParams::new(&self.id))
                .await?;
            return Ok(());
        }
        self.client.request::<CancelTask>(&self.id_params()).await?;
        Ok(())
    }

    /// Follows the task to its end and returns the tool's result. From now on, dropping
    /// this handle before the task ends cancels the task (see [`TaskHandle`]).
    pub async fn wait(&self) -> Result<CallToolResult, ClientError> {
        self.state().cancel_on_drop = true;
        if self.client.is_2025() {
            return self.wait_2025().await;
        }
        let config = self.client.inner.config.driver.clone();
        let started = Instant::now();
        let mut pushed = self.client.inner.pushed.subscribe();
        let _listen = if config.push && self.client.server().is_some_and(|s| s.supports_tasks()) {
            Some(self.listen())
        } else {
            None
        };
        let mut stale_polls = 0u32;
        let mut task = self.status().await?;
        loop {
            match &task {
                DetailedTask::Completed(done) => {
                    self.state().finished = true;
                    return serde_json::from_value(Value::Object(done.result.clone())).map_err(
                        |e| {
                            ClientError::Protocol(format!(
                                "completed task's result is not a CallToolResult: {e}"
                            ))
                        },
                    );
                }
                DetailedTask::Failed(failed) => {
                    self.state().finished = true;
                    return Err(ClientError::TaskFailed {
                        task_id: self.id.clone(),
                        error: Box::new(failed.error.clone()),
                    });
                }
                DetailedTask::Cancelled(c) => {
                    self.state().finished = true;
                    return Err(ClientError::TaskCancelled {
                        task_id: self.id.clone(),
                        message: c.status_message.clone(),
                    });
                }
                DetailedTask::InputRequired(waiting) => {
                    let fresh = match self.answer_new(&waiting.input_requests).await {
                        Ok(fresh) => fresh,
                        // Sent again after the next poll (the answers are kept).
                        Err(e) if e.is_retryable() => {
                            tracing::debug!(task_id = %self.id, error = %e, "answers not taken; sending them again");
                            true
                        }
                        Err(e) => return Err(e),
                    };
                    if fresh {
                        stale_polls = 0;
                    } else {
                        stale_polls += 1;
                        if stale_polls > config.stuck_after_polls {
                            let _ = self.cancel().await;
                            self.state().finished = true;
                            return Err(ClientError::TaskStuck {
                                task_id: self.id.clone(),
                                polls: stale_polls,
                            });
                        }
                    }
                }
                DetailedTask::Working(_) => stale_polls = 0,
            }
            let base = task.to_task();
            if self.expired(&base, started, &config) {
                return Err(ClientError::TaskExpired {
                    task_id: self.id.clone(),
                });
            }
            let interval = poll_interval(&base, &config);
            // Wait for a push about this task or the next poll, whichever comes first.
            let next = tokio::time::timeout(interval, async {
                loop {
                    match pushed.recv().await {
                        Ok(t) if t.task_id() == self.id => return Some(t),
                        Ok(_) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return None,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                            std::future::pending::<()>().await;
                        }
                    }
                }
            })
            .await;
            task = match next {
                Ok(Some(t)) => {
                    self.latest.send_replace(Some(t.clone()));
                    t
                }
                _ => match self.status().await {
                    Ok(t) => t,
                    // The server's store is unavailable; the task goes on: poll again.
                    Err(e) if e.is_retryable() => {
                        tracing::debug!(task_id = %self.id, error = %e, "tasks/get not served now; polling again");
                        task
                    }
                    Err(e) => return Err(e),
                },
            };
        }
    }

    /// 2025-11-25: poll `tasks/get` until the task needs input or ends, then fetch the
    /// outcome with `tasks/result` (which blocks while the server asks us for input through
    /// server->client requests that our handler answers).
    async fn wait_2025(&self) -> Result<CallToolResult, ClientError> {
        let config = self.client.inner.config.driver.clone();
        let started = Instant::now();
        loop {
            let task = self.status().await?;
            let base = task.to_task();
            if task.status().is_terminal() || task.status() == TaskStatus::InputRequired {
                let limit = self.remaining(&base, started, &config);
                let fetched = tokio::time::timeout(
                    limit,
                    self.client.inner.peer.request_raw(
                        mcp_protocol::v2025::methods::TASKS_RESULT,
                        serde_json::value::to_raw_value(&TaskIdParams::new(&self.id))
                            .ok()
                            .as_deref(),
                    ),
                )
                .await
                .map_err(|_| ClientError::TaskExpired {
                    task_id: self.id.clone(),
                })?;
                self.state().finished = true;
                return match fetched {
                    Ok(raw) => {
                        let value: Value = serde_json::from_str(raw.get())
                            .map_err(|e| ClientError::Protocol(format!("tasks/result: {e}")))?;
                        call_result_2025(value)
                    }
                    Err(mcp_protocol::engine::PeerError::Rpc(e))
                        if task.status() == TaskStatus::Cancelled =>
                    {
                        let _ = e;
                        Err(ClientError::TaskCancelled {
                            task_id: self.id.clone(),
                            message: task.status_message().map(str::to_owned),
                        })
                    }
                    Err(mcp_protocol::engine::PeerError::Rpc(e)) => Err(ClientError::TaskFailed {
                        task_id: self.id.clone(),
                        error: Box::new(e),
                    }),
                    Err(e) => Err(e.into()),
                };
            }
            if self.expired(&base, started, &config) {
                return Err(ClientError::TaskExpired {
                    task_id: self.id.clone(),
                });
            }
            tokio::time::sleep(poll_interval(&base, &config)).await;
        }
    }

    fn remaining(&self, task: &Task, started: Instant, config: &DriverConfig) -> Duration {
        let limit = task
            .ttl_ms
            .and_then(|ttl| u64::try_from(ttl).ok())
            .map(Duration::from_millis)
            .unwrap_or(config.max_wait)
            .min(config.max_wait);
        limit
            .saturating_sub(started.elapsed())
            .max(Duration::from_secs(1))
    }

    fn expired(&self, task: &Task, started: Instant, config: &DriverConfig) -> bool {
        let limit = task
            .ttl_ms
            .and_then(|ttl| u64::try_from(ttl).ok())
            .map(Duration::from_millis)
            .unwrap_or(config.max_wait)
            .min(config.max_wait);
        started.elapsed() > limit
    }

    /// Answers the input requests not answered yet; returns whether there were any.
    async fn answer_new(&self, requests: &v2026::InputRequests) -> Result<bool, ClientError> {
        let mut responses = JsonObject::new();
        for (key, request) in requests.iter() {
            if self.state().answered.contains(key) {
                continue;
            }
            if let Some(kept) = self.state().unsent.get(key) {
                responses.insert(key.clone(), kept.clone());
                continue;
            }
            let request =
                serde_json::to_value(request).map_err(|e| ClientError::Protocol(e.to_string()))?;
            let response = answer(self.client.handler(), &request)
                .await
                .map_err(ClientError::rpc)?;
            self.state().unsent.insert(key.clone(), response.clone());
            responses.insert(key.clone(), response);
        }
        if responses.is_empty() {
            return Ok(false);
        }
        let keys: Vec<String> = responses.keys().cloned().collect();
        let mut params = UpdateTaskRequestParams::new(&self.id, responses);
        params.meta = self.id_params().meta;
        self.client.request::<UpdateTask>(&params).await?;
        let mut state = self.state();
        for key in &keys {
            state.unsent.remove(key);
        }
        state.answered.extend(keys);
        Ok(true)
    }

    /// Opens `subscriptions/listen` for this task; the stream's notifications reach the
    /// client's push channel. The returned guard ends the subscription when dropped.
    fn listen(&self) -> ListenGuard {
        let client = self.client.clone();
        let mut filter = v2026::SubscriptionFilter::default();
        tasks::TaskSubscriptionNotifications::set_on_filter(
            &mut filter,
            std::slice::from_ref(&self.id),
        );
        let params = v2026::SubscriptionsListenRequestParams {
            meta: client.request_meta(),
            notifications: filter,
            extra: JsonObject::new(),
        };
        let task = tokio::spawn(async move {
            // No timeout: the stream lasts until dropped. Errors (-32601 from a server
            // without it) just leave the driver polling.
            if let Err(e) = client
                .inner
                .peer
                .request::<SubscriptionsListen>(&params)
                .await
            {
                tracing::debug!(error = %e, "no pushed updates; polling");
            }
        });
        ListenGuard(task)
    }
}

/// Ends a `subscriptions/listen` when dropped (the request future is dropped, which sends
/// `notifications/cancelled`).
struct ListenGuard(tokio::task::JoinHandle<()>);

impl Drop for ListenGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The server's suggested interval, kept within the client's bounds, with ±20% jitter so
/// many clients do not poll in lockstep.
fn poll_interval(task: &Task, config: &DriverConfig) -> Duration {
    let suggested = task
        .poll_interval_ms
        .and_then(|ms| u64::try_from(ms).ok())
        .map(Duration::from_millis)
        .unwrap_or(config.default_poll);
    let bounded = suggested.clamp(config.min_poll, config.max_poll);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    let jitter = 0.8 + f64::from(nanos % 400) / 1000.0;
    bounded.mul_f64(jitter)
}

impl Drop for TaskHandle {
    fn drop(&mut self) {
        let state = self.state();
        if state.finished || !state.cancel_on_drop {
            return;
        }
        drop(state);
        let client = self.client.clone();
        let params = self.id_params();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = client.request::<CancelTask>(&params).await {
                    tracing::debug!(error = %e, "cancelling a dropped task failed");
                }
            });
        }
    }
}

/// For [`TaskStatus`] displays.
pub fn status_of(task: &DetailedTask) -> TaskStatus {
    task.status()
}

/// A 2025-11-25 flat task as the 2026-07-28 `DetailedTask` the handle reports (without
/// the inputs or outcome, which 2025-11-25 carries elsewhere).
fn detailed_2025(task: mcp_protocol::v2025::Task) -> Result<DetailedTask, ClientError> {
    let mut value =
        serde_json::to_value(&task).map_err(|e| ClientError::Protocol(e.to_string()))?;
    if let Value::Object(obj) = &mut value {
        let ttl = obj.remove("ttl").unwrap_or(Value::Null);
        obj.insert("ttlMs".into(), ttl);
        if let Some(p) = obj.remove("pollInterval") {
            obj.insert("pollIntervalMs".into(), p);
        }
        match task.status {
            TaskStatus::InputRequired => {
                obj.insert("inputRequests".into(), Value::Object(JsonObject::new()));
            }
            TaskStatus::Completed => {
                obj.insert("result".into(), serde_json::json!({"content": []}));
            }
            TaskStatus::Failed => {
                obj.insert(
                    "error".into(),
                    serde_json::json!({"code": -32603, "message": "failed"}),
                );
            }
            _ => {}
        }
    }
    serde_json::from_value(value).map_err(|e| ClientError::Protocol(format!("malformed task: {e}")))
}

/// A 2025-11-25 `CallToolResult` (no `resultType`) read as the 2026-07-28 type.
pub(crate) fn call_result_2025(reply: Value) -> Result<CallToolResult, ClientError> {
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
