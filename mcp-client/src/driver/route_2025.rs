//! A 2025-11-25 task's input requests, which the server sends as server->client
//! requests naming the task (related-task `_meta`): routed through a [`Route2025`] to the
//! task's handler (else the client's), counted, and shown on the task's update stream;
//! and the wait, which `v2025.rs` drives with them routed.
//!
//! Invariant: the bound on input rounds is kept by the session's `Routes` (every request
//! naming the task counts, from the first); a task past it is cancelled and its wait
//! fails with `ClientError::InputRoundsExceeded`.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::types::{ElicitResult, ListRootsResult};
use mcp_tasks_protocol::v2026::{
    CallToolResult, ClientCapabilities, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, InputRequest,
};

use super::{HandleState, TaskHandle};
use crate::error::ClientError;
use crate::handler::ClientHandler;
use crate::session::Session;
use crate::status::{TaskStatusView, TaskUpdate};
use crate::v2025;

impl TaskHandle {
    /// From now on the server's input requests about this task (2025-11-25) go through
    /// a [`Route2025`]: counted, shown on the update stream, answered by the task's
    /// handler.
    pub(super) fn route_2025(&self) {
        let route = Arc::new(Route2025 {
            state: Arc::clone(&self.state),
            handler: self.handler.clone(),
            session: Arc::clone(&self.session),
        });
        let before = self.session.route(
            &self.id,
            Arc::clone(&route) as Arc<dyn ClientHandler>,
            self.max_input_rounds,
        );
        for request in before {
            match serde_json::from_value(request) {
                Ok(request) => route.asked(request),
                Err(e) => {
                    tracing::debug!(task_id = %self.id, error = %e, "an early input request not shown")
                }
            }
        }
    }

    /// The 2025-11-25 wait (`v2025::wait`), with this task's input requests routed to
    /// its handler (counted against the round bound, and shown on the update stream).
    pub(super) async fn wait_2025(&self) -> Result<CallToolResult, ClientError> {
        // Again: the handler and the bound may have been set since the handle was made.
        self.route_2025();
        let seen =
            |task: &mcp_tasks_protocol::v2025::Task| self.seen(TaskStatusView::V2025(task.clone()));
        let pushed = self
            .pushed_2025
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let waited = v2025::wait(&self.session, &self.id, pushed, seen, || {
            self.state().finished = true;
        })
        .await;
        self.session.unroute(&self.id);
        if self.session.rounds_exceeded(&self.id) {
            let _ = self.cancel().await;
            return Err(ClientError::InputRoundsExceeded {
                task_id: Some(self.id.clone()),
                limit: self.max_input_rounds,
            });
        }
        // `tasks/result` answered: the stream shows the final status too.
        let streaming = self.state().events.is_some();
        if streaming && let Ok(task) = v2025::get_task(&self.session, &self.id).await {
            self.seen(TaskStatusView::V2025(task));
        }
        waited
    }
}

/// Answers a 2025-11-25 task's server->client requests (counted against the bound by
/// the session's `Routes`): shows them on the update stream and hands them to the task's
/// handler (or the client's).
struct Route2025 {
    state: Arc<Mutex<HandleState>>,
    handler: Option<Arc<dyn ClientHandler>>,
    session: Arc<Session>,
}

impl Route2025 {
    fn handler(&self) -> &dyn ClientHandler {
        match &self.handler {
            Some(h) => h.as_ref(),
            None => self.session.handler(),
        }
    }

    /// Shows the request on the update stream.
    fn asked(&self, request: InputRequest) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.rounds += 1;
        let key = state.rounds.to_string();
        let update = TaskUpdate::InputRequested { key, request };
        match &state.events {
            Some(events) => {
                let _ = events.send(update);
            }
            None => state.early.push(update),
        }
    }
}

#[async_trait]
impl ClientHandler for Route2025 {
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        self.asked(InputRequest::from(params.clone()));
        self.handler().elicit(params).await
    }

    async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        self.asked(InputRequest::from(params.clone()));
        self.handler().sample(params).await
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorObject> {
        let request =
            serde_json::from_value(serde_json::json!({"method": "roots/list"})).map_err(|e| {
                ErrorObject::new(
                    mcp_tasks_protocol::error_codes::INTERNAL_ERROR,
                    e.to_string(),
                )
            })?;
        self.asked(request);
        self.handler().list_roots().await
    }

    fn capabilities(&self) -> ClientCapabilities {
        self.handler().capabilities()
    }
}
