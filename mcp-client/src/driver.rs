//! The task driver: follows a task to its end, answering its input requests, and the
//! [`TaskHandle`] that exposes it. A 2025-11-25 session hands `status`, `cancel` and
//! `wait` over to `v2025.rs`. Imports `session`, `v2025`, `status`, `handler`, `error`;
//! never `client.rs`.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mcp_protocol::JsonObject;
use mcp_protocol::tasks::{
    self, CancelTask, DetailedTask, GetTask, GetTaskResult, Task, TaskIdParams, TaskStatus,
    UpdateTask, UpdateTaskRequestParams,
};
use mcp_protocol::v2026::{self, CallToolResult, SubscriptionsListen};
use serde_json::Value;
use tokio::sync::watch;

use crate::error::ClientError;
use crate::handler::answer;
use crate::session::Session;
use crate::status::TaskStatusView;
use crate::v2025;

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
/// [`call_tool_as_task`](crate::McpClient::call_tool_as_task) owns its task from the start; a
/// handle from [`resume_task`](crate::McpClient::resume_task) owns it once
/// [`wait`](TaskHandle::wait) has been called, so a resumed handle that only reads the
/// task ([`status`](TaskHandle::status), [`updates`](TaskHandle::updates)) leaves it
/// running when dropped.
#[derive(Debug)]
pub struct TaskHandle {
    session: Arc<Session>,
    id: String,
    latest: watch::Sender<Option<TaskStatusView>>,
    created: Option<Task>,
    state: Arc<Mutex<HandleState>>,
}

impl TaskHandle {
    /// A handle for task `id`; `created` is the task as `tools/call` returned it (then
    /// the handle owns the task), `None` for a resumed handle (which owns it only once
    /// it waits for it).
    pub(crate) fn new(session: Arc<Session>, id: String, created: Option<Task>) -> TaskHandle {
        let (latest, _) = watch::channel(None);
        let cancel_on_drop = created.is_some();
        TaskHandle {
            session,
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

    /// This handle owns its task from now on: dropping it unfinished cancels the task
    /// (what a handle fresh from `call_tool_as_task` does, in either revision).
    pub(crate) fn owning(self) -> TaskHandle {
        self.state().cancel_on_drop = true;
        self
    }

    fn state(&self) -> std::sync::MutexGuard<'_, HandleState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The task id (persist it to [`resume`](crate::McpClient::resume_task) after a restart).
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

    /// Every state the driver sees (in the session's revision), latest first; for
    /// progress displays.
    pub fn updates(&self) -> watch::Receiver<Option<TaskStatusView>> {
        self.latest.subscribe()
    }

    /// The input request keys answered so far.
    pub fn answered(&self) -> Vec<String> {
        self.state().answered.iter().cloned().collect()
    }

    fn id_params(&self) -> TaskIdParams {
        id_params(&self.session, &self.id)
    }

    /// Reads the task now (`tasks/get`), as the session's revision reports it: a
    /// [`DetailedTask`] (2026-07-28) or the flat 2025-11-25 task, whose outcome only
    /// `tasks/result` fetches (see [`TaskStatusView`]).
    pub async fn status(&self) -> Result<TaskStatusView, ClientError> {
        if !self.session.is_2025() {
            return self.get().await.map(TaskStatusView::V2026);
        }
        let view = TaskStatusView::V2025(v2025::get_task(&self.session, &self.id).await?);
        self.latest.send_replace(Some(view.clone()));
        Ok(view)
    }

    /// `tasks/get` (2026-07-28); the state goes to [`updates`](TaskHandle::updates).
    async fn get(&self) -> Result<DetailedTask, ClientError> {
        let result: GetTaskResult = self.session.request::<GetTask>(&self.id_params()).await?;
        let task = result.task;
        if task.task_id() != self.id {
            return Err(ClientError::Protocol(format!(
                "tasks/get for {} answered task {}",
                self.id,
                task.task_id()
            )));
        }
        self.latest
            .send_replace(Some(TaskStatusView::V2026(task.clone())));
        Ok(task)
    }

    /// Asks the server to stop the task (`tasks/cancel`). Cancellation is cooperative: the
    /// task may still end `completed` or `failed`.
    pub async fn cancel(&self) -> Result<(), ClientError> {
        cancel(&self.session, &self.id).await
    }

    /// Follows the task to its end and returns the tool's result. From now on, dropping
    /// this handle before the task ends cancels the task (see [`TaskHandle`]).
    pub async fn wait(&self) -> Result<CallToolResult, ClientError> {
        self.state().cancel_on_drop = true;
        if self.session.is_2025() {
            let seen = |task: &mcp_protocol::v2025::Task| {
                self.latest
                    .send_replace(Some(TaskStatusView::V2025(task.clone())));
            };
            return v2025::wait(&self.session, &self.id, seen, || {
                self.state().finished = true;
            })
            .await;
        }
        let config = self.session.config.driver.clone();
        let started = Instant::now();
        let mut pushed = self.session.pushed.subscribe();
        let _listen = if config.push && self.session.supports_tasks() {
            Some(self.listen())
        } else {
            None
        };
        let mut stale_polls = 0u32;
        let mut task = self.get().await?;
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
            if started.elapsed() > config.wait_limit(base.ttl_ms) {
                return Err(ClientError::TaskExpired {
                    task_id: self.id.clone(),
                });
            }
            let interval = config.poll_interval(base.poll_interval_ms);
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
                    self.latest
                        .send_replace(Some(TaskStatusView::V2026(t.clone())));
                    t
                }
                _ => match self.get().await {
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
            let response = answer(self.session.handler(), &request)
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
        self.session.request::<UpdateTask>(&params).await?;
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
        let session = Arc::clone(&self.session);
        let mut filter = v2026::SubscriptionFilter::default();
        tasks::TaskSubscriptionNotifications::set_on_filter(
            &mut filter,
            std::slice::from_ref(&self.id),
        );
        let params = v2026::SubscriptionsListenRequestParams {
            meta: session.request_meta(),
            notifications: filter,
            extra: JsonObject::new(),
        };
        let task = tokio::spawn(async move {
            // No timeout: the stream lasts until dropped. Errors (-32601 from a server
            // without it) just leave the driver polling.
            if let Err(e) = session.peer.request::<SubscriptionsListen>(&params).await {
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

impl Drop for TaskHandle {
    fn drop(&mut self) {
        let state = self.state();
        if state.finished || !state.cancel_on_drop {
            return;
        }
        drop(state);
        let session = Arc::clone(&self.session);
        let id = self.id.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = cancel(&session, &id).await {
                    tracing::debug!(error = %e, "cancelling a dropped task failed");
                }
            });
        }
    }
}

/// `tasks/get`, `tasks/result` and `tasks/cancel` params for task `id` (2026-07-28: with
/// our `_meta`).
fn id_params(session: &Session, id: &str) -> TaskIdParams {
    let mut params = TaskIdParams::new(id);
    params.meta = session.request_meta_object();
    params
}

/// `tasks/cancel` in the session's revision.
async fn cancel(session: &Session, id: &str) -> Result<(), ClientError> {
    if session.is_2025() {
        return v2025::cancel_task(session, id).await;
    }
    session
        .request::<CancelTask>(&id_params(session, id))
        .await?;
    Ok(())
}

/// For [`TaskStatus`] displays of [`updates`](TaskHandle::updates).
pub fn status_of(task: &TaskStatusView) -> TaskStatus {
    task.status()
}
