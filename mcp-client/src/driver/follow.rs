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
use std::time::Instant;

use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::tasks::{self, DetailedTask, UpdateTask, UpdateTaskRequestParams};
use mcp_tasks_protocol::v2026::{self, CallToolResult, SubscriptionsListen};
use serde_json::Value;

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
                        Err(e @ ClientError::InputRoundsExceeded { .. }) => {
                            let _ = self.cancel().await;
                            self.state().finished = true;
                            return Err(e);
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
                    self.seen(TaskStatusView::V2026(t.clone()));
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
