//! Following a 2026-07-28 task to its end: `tasks/get` polls within the server's
//! `pollIntervalMs` (with jitter and bounds), or the pushed statuses of a
//! `subscriptions/listen` when the server offers them; each new input round is answered
//! through the task's handler with one `tasks/update`.
//!
//! Invariant: an answer the server did not take (its store unavailable) is kept and sent
//! again as it is, never asked twice; a task in `input_required` that asks nothing new
//! for more than `stuck_after_polls` polls, or past its input bound, is cancelled; the
//! wait never outlives the task's TTL (or `DriverConfig::max_wait`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::tasks::{self, DetailedTask, UpdateTask, UpdateTaskRequestParams};
use mcp_tasks_protocol::v2026::{self, CallToolResult, SubscriptionsListen};
use serde_json::Value;
use tokio::sync::broadcast;

use super::TaskHandle;
use crate::error::ClientError;
use crate::handler::answer;
use crate::status::{TaskStatusView, TaskUpdate};

impl TaskHandle {
    /// The 2026-07-28 wait of [`wait`](TaskHandle::wait): polls (or listens) until the
    /// task ends, answering its input rounds.
    pub(super) async fn follow(&self) -> Result<CallToolResult, ClientError> {
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
            if let Some(outcome) = self.outcome(&task) {
                return outcome;
            }
            stale_polls = match &task {
                DetailedTask::InputRequired(waiting) => {
                    let requests = &waiting.input_requests;
                    self.answer_round(requests, stale_polls, config.stuck_after_polls)
                        .await?
                }
                // Working (an ended task returned above).
                _ => 0,
            };
            let base = task.to_task();
            if started.elapsed() > config.wait_limit(base.ttl_ms) {
                return Err(ClientError::TaskExpired {
                    task_id: self.id.clone(),
                });
            }
            let interval = config.poll_interval(base.poll_interval_ms);
            task = self.next_status(&mut pushed, interval, task).await?;
        }
    }

    /// What the wait returns once the task ended (its result, or the error that says how
    /// it ended), the handle then finished; `None` while the task goes on.
    fn outcome(&self, task: &DetailedTask) -> Option<Result<CallToolResult, ClientError>> {
        let outcome = match task {
            DetailedTask::Completed(done) => {
                serde_json::from_value(Value::Object(done.result.clone())).map_err(|e| {
                    ClientError::Protocol(format!(
                        "completed task's result is not a CallToolResult: {e}"
                    ))
                })
            }
            DetailedTask::Failed(failed) => Err(ClientError::TaskFailed {
                task_id: self.id.clone(),
                error: Box::new(failed.error.clone()),
            }),
            DetailedTask::Cancelled(c) => Err(ClientError::TaskCancelled {
                task_id: self.id.clone(),
                message: c.status_message.clone(),
            }),
            DetailedTask::InputRequired(_) | DetailedTask::Working(_) => return None,
        };
        self.state().finished = true;
        Some(outcome)
    }

    /// Answers the new requests of an input round; returns how many polls in a row asked
    /// nothing new (`stale_polls` before this one), and cancels the task once that passes
    /// `stuck_after` or the task asks past its input bound.
    async fn answer_round(
        &self,
        requests: &v2026::InputRequests,
        stale_polls: u32,
        stuck_after: u32,
    ) -> Result<u32, ClientError> {
        let fresh = match self.answer_new(requests).await {
            Ok(fresh) => fresh,
            // Sent again after the next poll (the answers are kept).
            Err(e) if e.is_retryable() => {
                tracing::debug!(task_id = %self.id, error = %e, "answers not taken; sending them again");
                true
            }
            Err(e @ ClientError::InputRoundsExceeded { .. }) => {
                let _ = self.cancel().await;
                self.state().finished = true;
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        if fresh {
            return Ok(0);
        }
        let stale_polls = stale_polls + 1;
        if stale_polls > stuck_after {
            let _ = self.cancel().await;
            self.state().finished = true;
            return Err(ClientError::TaskStuck {
                task_id: self.id.clone(),
                polls: stale_polls,
            });
        }
        Ok(stale_polls)
    }

    /// The task's next status: pushed, or else polled once `interval` passed (`task`
    /// again when the server cannot serve the poll now).
    async fn next_status(
        &self,
        pushed: &mut broadcast::Receiver<DetailedTask>,
        interval: Duration,
        task: DetailedTask,
    ) -> Result<DetailedTask, ClientError> {
        // Wait for a push about this task or the next poll, whichever comes first.
        let next = tokio::time::timeout(interval, self.pushed_status(pushed)).await;
        match next {
            Ok(Some(t)) => {
                self.seen(TaskStatusView::V2026(t.clone()));
                Ok(t)
            }
            _ => match self.get().await {
                Ok(t) => Ok(t),
                // The server's store is unavailable; the task goes on: poll again.
                Err(e) if e.is_retryable() => {
                    tracing::debug!(task_id = %self.id, error = %e, "tasks/get not served now; polling again");
                    Ok(task)
                }
                Err(e) => Err(e),
            },
        }
    }

    /// The next status of this task pushed on `pushed`; `None` when pushes were missed
    /// (a poll tells what they said); never when the channel closed.
    async fn pushed_status(
        &self,
        pushed: &mut broadcast::Receiver<DetailedTask>,
    ) -> Option<DetailedTask> {
        loop {
            match pushed.recv().await {
                Ok(t) if t.task_id() == self.id => return Some(t),
                Ok(_) => continue,
                Err(broadcast::error::RecvError::Lagged(_)) => return None,
                Err(broadcast::error::RecvError::Closed) => {
                    std::future::pending::<()>().await;
                }
            }
        }
    }

    /// Answers the input requests not answered yet; returns whether there were any.
    async fn answer_new(&self, requests: &v2026::InputRequests) -> Result<bool, ClientError> {
        let mut responses = JsonObject::new();
        let mut new_round = false;
        for (key, request) in requests.iter() {
            if self.state().answered.contains(key) {
                continue;
            }
            if let Some(kept) = self.state().unsent.get(key) {
                responses.insert(key.clone(), kept.clone());
                continue;
            }
            if !new_round {
                new_round = true;
                let mut state = self.state();
                if state.rounds >= self.max_input_rounds {
                    return Err(ClientError::InputRoundsExceeded {
                        task_id: Some(self.id.clone()),
                        limit: self.max_input_rounds,
                    });
                }
                state.rounds += 1;
            }
            self.emit(TaskUpdate::InputRequested {
                key: key.clone(),
                request: request.clone(),
            });
            let request =
                serde_json::to_value(request).map_err(|e| ClientError::Protocol(e.to_string()))?;
            let response = answer(self.handler(), &request)
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
