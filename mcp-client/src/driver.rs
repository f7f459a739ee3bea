//! [`TaskHandle`]: a task being followed, the driver's face. It knows the task (id, the
//! call that made it, the state last seen), owns it (an owning handle dropped before the
//! task ends cancels the task, unless [`detach`](TaskHandle::detach)ed) and reads or
//! cancels it in the session's revision. Following a task to its end is in the
//! children: `follow` (2026-07-28: polling or push, answering each input round) and
//! `route_2025` (2025-11-25: the server's requests about the task routed to its handler;
//! the wait is `v2025.rs`'s).
//!
//! Invariant: imports `session`, `events`, `v2025`, `status`, `handler`, `reference`,
//! `error`; never `client.rs` or `updates.rs`. An input request is answered at most once
//! per key, and at most `max_input_rounds` rounds.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::tasks::{
    CancelTask, DetailedTask, GetTask, GetTaskResult, Task, TaskIdParams, TaskStatus,
};
use mcp_tasks_protocol::v2026::CallToolResult;
use tokio::sync::{broadcast, mpsc, watch};

use crate::error::ClientError;
use crate::events::TaskEvents;
use crate::handler::ClientHandler;
use crate::reference::{TaskRef, ToolCall};
use crate::session::Session;
use crate::status::{TaskStatusView, TaskUpdate};
use crate::v2025;

mod follow;
mod route_2025;

#[derive(Debug)]
struct HandleState {
    answered: BTreeSet<String>,
    /// Answers the handler gave that the server has not taken yet (its store was
    /// unavailable): sent again as they are, never asked twice.
    unsent: JsonObject,
    finished: bool,
    cancel_on_drop: bool,
    /// Input rounds answered so far (2026-07-28: `tasks/update`s carrying new answers;
    /// 2025-11-25: the server's requests about the task seen by this handle; the bound
    /// is kept by the session's `Routes` there).
    rounds: u32,
    /// The update stream's sender, when one was made.
    events: Option<mpsc::UnboundedSender<TaskUpdate>>,
    /// Input requests the server sent before an update stream was made (2025-11-25: it
    /// asks as soon as the task exists): the stream starts with them.
    early: Vec<TaskUpdate>,
    /// The status (and message) last sent to the update stream.
    last_emitted: Option<(TaskStatus, Option<String>)>,
}

/// A task being followed.
///
/// Dropping a handle that owns the task before the task finished sends `tasks/cancel`
/// (unless [`detach`](TaskHandle::detach)ed, which hands back the task's [`TaskRef`]). A
/// handle from [`call_tool_as_task`](crate::McpClient::call_tool_as_task) owns its task
/// from the start; a handle from [`resume`](crate::McpClient::resume) owns it once
/// [`wait`](TaskHandle::wait) (or [`settle`](TaskHandle::settle)) has been called, so a
/// resumed handle that only reads the task ([`status`](TaskHandle::status),
/// [`updates`](TaskHandle::updates)) leaves it running when dropped.
pub struct TaskHandle {
    session: Arc<Session>,
    id: String,
    latest: watch::Sender<Option<TaskStatusView>>,
    created: Option<Task>,
    /// The task as the call that made it reported it (either revision).
    first: Option<TaskStatusView>,
    operation: Option<ToolCall>,
    /// Answers this task's input requests (default: the client's handler).
    handler: Option<Arc<dyn ClientHandler>>,
    max_input_rounds: u32,
    /// 2025-11-25: status notifications received since the call that made the task.
    pushed_2025: Mutex<Option<broadcast::Receiver<mcp_tasks_protocol::v2025::Task>>>,
    state: Arc<Mutex<HandleState>>,
}

impl std::fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHandle")
            .field("id", &self.id)
            .field("operation", &self.operation)
            .field("own_handler", &self.handler.is_some())
            .field("max_input_rounds", &self.max_input_rounds)
            .finish_non_exhaustive()
    }
}

impl TaskHandle {
    /// A handle for task `id`; `created` is the task as `tools/call` returned it (then
    /// the handle owns the task), `None` for a resumed handle (which owns it only once
    /// it waits for it). `operation` is the call that made it, when known.
    pub(crate) fn new(
        session: Arc<Session>,
        id: String,
        created: Option<Task>,
        operation: Option<ToolCall>,
    ) -> TaskHandle {
        let (latest, _) = watch::channel(None);
        let cancel_on_drop = created.is_some();
        let max_input_rounds = session.config.max_input_rounds;
        let first = created
            .as_ref()
            .and_then(|t| serde_json::to_value(t).ok())
            .and_then(|t| serde_json::from_value::<DetailedTask>(t).ok())
            .map(TaskStatusView::V2026);
        TaskHandle {
            session,
            id,
            latest,
            created,
            first,
            operation,
            handler: None,
            max_input_rounds,
            pushed_2025: Mutex::new(None),
            state: Arc::new(Mutex::new(HandleState {
                answered: BTreeSet::new(),
                unsent: JsonObject::new(),
                finished: false,
                cancel_on_drop,
                rounds: 0,
                events: None,
                early: Vec::new(),
                last_emitted: None,
            })),
        }
    }

    /// This handle owns its task from now on: dropping it unfinished cancels the task
    /// (what a handle fresh from `call_tool_as_task` does, in either revision).
    pub(crate) fn owning(self) -> TaskHandle {
        self.state().cancel_on_drop = true;
        self
    }

    /// The task as a 2025-11-25 `tools/call` created it, and the status notifications
    /// received since the call was sent.
    pub(crate) fn created_2025(
        mut self,
        task: mcp_tasks_protocol::v2025::Task,
        pushed: broadcast::Receiver<mcp_tasks_protocol::v2025::Task>,
    ) -> TaskHandle {
        self.first = Some(TaskStatusView::V2025(task));
        self.pushed_2025 = Mutex::new(Some(pushed));
        // The server may ask for input before anyone waits.
        self.route_2025();
        self
    }

    fn state(&self) -> std::sync::MutexGuard<'_, HandleState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The task id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The task as the server created it (absent for a resumed handle).
    pub fn created(&self) -> Option<&Task> {
        self.created.as_ref()
    }

    /// The call that made the task, when this handle knows it.
    pub fn operation(&self) -> Option<&ToolCall> {
        self.operation.as_ref()
    }

    /// The task as a [`TaskRef`]: persist it, or hand it to another process, which
    /// follows the task with [`McpClient::resume`](crate::McpClient::resume) or
    /// [`McpClient::connect_to`](crate::McpClient::connect_to).
    pub fn reference(&self) -> TaskRef {
        TaskRef {
            endpoint: self.session.endpoint(),
            task_id: self.id.clone(),
            revision: self.session.protocol_version(),
            operation: self.operation.clone(),
        }
    }

    /// Lets the task run on without this handle: dropping it no longer cancels the task.
    /// Returns the task's [`TaskRef`], to resume it later or elsewhere.
    pub fn detach(self) -> TaskRef {
        self.state().cancel_on_drop = false;
        self.reference()
    }

    /// What clears this handle's cancel-on-drop from outside it.
    pub(crate) fn detacher(&self) -> Detacher {
        Detacher(Arc::clone(&self.state))
    }

    /// Answers this task's input requests with `handler` instead of the client's (per
    /// kind: its `elicit`, `sample` and `list_roots`). In a 2025-11-25 session a request
    /// the server sent before the call's response was held until the response named the
    /// task, then goes to the handler the handle has when it resumes: this one when set
    /// before the caller's next `await` on a current-thread runtime; on a multi-thread
    /// runtime it may resume first and go to the client's handler.
    pub fn with_handler(mut self, handler: Arc<dyn ClientHandler>) -> TaskHandle {
        self.handler = Some(handler);
        if self.session.is_2025() {
            self.route_2025();
        }
        self
    }

    /// Allows at most `rounds` rounds of input for this task (default
    /// [`ClientConfig::max_input_rounds`](crate::ClientConfig::max_input_rounds)); one
    /// more and the task is cancelled with [`ClientError::InputRoundsExceeded`]. In a
    /// 2025-11-25 session the server may ask as soon as the task exists: this bound, like
    /// [`with_handler`](TaskHandle::with_handler), applies from the next request, the
    /// client's bound and handler before it.
    pub fn with_max_input_rounds(mut self, rounds: u32) -> TaskHandle {
        self.max_input_rounds = rounds;
        if self.session.is_2025() {
            self.route_2025();
        }
        self
    }

    /// The latest state the driver saw (in the session's revision), for progress
    /// displays; [`into_updates`](TaskHandle::into_updates) gives every change in order.
    pub fn updates(&self) -> watch::Receiver<Option<TaskStatusView>> {
        self.latest.subscribe()
    }

    /// The task's events (`tasks/stream`, draft SEP-2694), from the earliest the server
    /// still keeps: a stream that resumes by itself after a dropped connection and ends
    /// once the task ended and its last event was yielded (see [`TaskEvents`]). It reads
    /// the task alongside this handle (which still waits, answers input and cancels):
    /// dropping it leaves the task alone.
    pub fn events(&self) -> TaskEvents {
        TaskEvents::new(Arc::clone(&self.session), self.id.clone(), None)
    }

    /// [`events`](TaskHandle::events) after event `seq` (exclusive): the cursor a
    /// reader kept ([`TaskEvents::cursor`]).
    pub fn events_after(&self, seq: u64) -> TaskEvents {
        TaskEvents::new(Arc::clone(&self.session), self.id.clone(), Some(seq))
    }

    /// The input request keys answered so far.
    pub fn answered(&self) -> Vec<String> {
        self.state().answered.iter().cloned().collect()
    }

    /// From now on, what the driver sees goes to `events` (see [`TaskUpdates`](crate::TaskUpdates)).
    pub(crate) fn set_events(&self, events: mpsc::UnboundedSender<TaskUpdate>) {
        let mut state = self.state();
        for update in std::mem::take(&mut state.early) {
            let _ = events.send(update);
        }
        state.events = Some(events);
    }

    /// Records a state seen: for [`updates`](TaskHandle::updates), and for the update
    /// stream when its status or message changed.
    fn seen(&self, view: TaskStatusView) {
        let mut state = self.state();
        let now = (view.status(), view.status_message().map(str::to_owned));
        if state.events.is_some() && state.last_emitted.as_ref() != Some(&now) {
            state.last_emitted = Some(now);
            if let Some(events) = &state.events {
                let _ = events.send(TaskUpdate::Status(view.clone()));
            }
        }
        drop(state);
        self.latest.send_replace(Some(view));
    }

    fn emit(&self, update: TaskUpdate) {
        if let Some(events) = &self.state().events {
            let _ = events.send(update);
        }
    }

    fn handler(&self) -> &dyn ClientHandler {
        match &self.handler {
            Some(h) => h.as_ref(),
            None => self.session.handler(),
        }
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
        self.seen(view.clone());
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
        self.seen(TaskStatusView::V2026(task.clone()));
        Ok(task)
    }

    /// Asks the server to stop the task (`tasks/cancel`). Cancellation is cooperative: the
    /// task may still end `completed` or `failed`.
    pub async fn cancel(&self) -> Result<(), ClientError> {
        cancel(&self.session, &self.id).await
    }

    /// [`wait`](TaskHandle::wait), until `deadline` at the latest. Past it the task is
    /// left running (not cancelled) and the error is [`ClientError::Deadline`] with the
    /// status last seen; `settle` (or `wait`) may be called again, and goes on where
    /// this one stopped (answered input is not asked again).
    pub async fn settle(&self, deadline: Instant) -> Result<CallToolResult, ClientError> {
        let deadline = tokio::time::Instant::from_std(deadline);
        match tokio::time::timeout_at(deadline, self.wait()).await {
            Ok(done) => done,
            Err(_) => Err(ClientError::Deadline {
                task_id: self.id.clone(),
                last_status: self.latest.borrow().as_ref().map(TaskStatusView::status),
            }),
        }
    }

    /// Follows the task to its end and returns the tool's result. From now on, dropping
    /// this handle before the task ends cancels the task (see [`TaskHandle`]).
    pub async fn wait(&self) -> Result<CallToolResult, ClientError> {
        self.state().cancel_on_drop = true;
        // The stream starts with the task as created, when the handle saw it.
        let first = self.first.clone();
        if let Some(first) = first.filter(|_| self.state().last_emitted.is_none()) {
            self.seen(first);
        }
        if self.session.is_2025() {
            return self.wait_2025().await;
        }
        self.follow().await
    }
}

impl Drop for TaskHandle {
    fn drop(&mut self) {
        if self.session.is_2025() {
            self.session.unroute(&self.id);
        }
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

/// Clears a handle's cancel-on-drop from outside: the update stream's handle lives in
/// the future that drives it.
pub(crate) struct Detacher(Arc<Mutex<HandleState>>);

impl Detacher {
    pub(crate) fn detach(&self) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .cancel_on_drop = false;
    }
}
