//! [`TaskUpdates`]: a task's updates as a `futures::Stream`, owning the task's handle
//! and driving it. Imports `driver`, `status`, `reference`; nothing imports it but the
//! crate root.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use mcp_tasks_protocol::v2026::CallToolResult;
use tokio::sync::mpsc;

use crate::driver::{Detacher, TaskHandle};
use crate::error::ClientError;
use crate::reference::TaskRef;
use crate::status::TaskUpdate;

type Driving = Pin<Box<dyn Future<Output = Result<CallToolResult, ClientError>> + Send>>;

/// Every update of one task, in order: [`TaskUpdate::Status`] on each change of status
/// (or status message), [`TaskUpdate::InputRequested`] before the handler answers, and
/// [`TaskUpdate::Finished`] last; then the stream ends.
///
/// The stream owns the task's handle and drives it while polled (as
/// [`TaskHandle::wait`] does: push or polls, input answered through the handler, every
/// wait bounded). There is one owner: dropping the stream before `Finished` drops the
/// handle, which cancels the task; to leave it running, keep its
/// [`reference`](TaskUpdates::reference) and call [`detach`](TaskUpdates::detach).
///
/// ```no_run
/// use futures::StreamExt;
/// use mcp_tasks_client::{ClientError, McpClient, Started, TaskUpdate};
///
/// async fn watch(client: &McpClient) -> Result<(), ClientError> {
///     let arguments = serde_json::Map::from_iter([("filename".into(), "a.txt".into())]);
///     let Started::Task(task) = client.call_tool_as_task("confirm_delete", arguments).await?
///     else {
///         return Ok(());
///     };
///     let mut updates = task.into_updates();
///     while let Some(update) = updates.next().await {
///         match update {
///             TaskUpdate::Status(now) => println!("{}", now.status()),
///             TaskUpdate::InputRequested { key, request } => {
///                 println!("the server asks ({key}): {}", request.method())
///             }
///             TaskUpdate::Finished(result) => println!("done: {:?}", result?.content),
///         }
///     }
///     Ok(())
/// }
/// ```
pub struct TaskUpdates {
    reference: TaskRef,
    detacher: Detacher,
    events: mpsc::UnboundedReceiver<TaskUpdate>,
    /// The handle, until it is driven (or detached).
    handle: Option<TaskHandle>,
    driving: Option<Driving>,
    /// The outcome, held back until the updates before it are out.
    outcome: Option<Result<CallToolResult, ClientError>>,
    done: bool,
}

impl std::fmt::Debug for TaskUpdates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskUpdates")
            .field("task", &self.reference.task_id)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl TaskHandle {
    /// This task's updates as a stream (see [`TaskUpdates`]), which owns the handle.
    pub fn into_updates(self) -> TaskUpdates {
        let (tx, events) = mpsc::unbounded_channel();
        self.set_events(tx);
        TaskUpdates {
            reference: self.reference(),
            detacher: self.detacher(),
            events,
            handle: Some(self),
            driving: None,
            outcome: None,
            done: false,
        }
    }
}

impl TaskUpdates {
    /// The task's [`TaskRef`].
    pub fn reference(&self) -> &TaskRef {
        &self.reference
    }

    /// Stops following the task and leaves it running; returns its reference. The
    /// updates not yet read are dropped.
    pub fn detach(self) -> TaskRef {
        // Once polled, the handle lives in the driving future, dropped with `self`.
        self.detacher.detach();
        self.reference.clone()
    }
}

impl Stream for TaskUpdates {
    type Item = TaskUpdate;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<TaskUpdate>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Poll::Ready(Some(update)) = this.events.poll_recv(cx) {
            return Poll::Ready(Some(update));
        }
        if this.outcome.is_none() {
            if let Some(handle) = this.handle.take() {
                this.driving = Some(Box::pin(async move { handle.wait().await }));
            }
            if let Some(driving) = this.driving.as_mut() {
                match driving.as_mut().poll(cx) {
                    Poll::Ready(outcome) => {
                        this.driving = None;
                        this.outcome = Some(outcome);
                    }
                    Poll::Pending => return Poll::Pending,
                }
            }
        }
        // Finished: what the driver sent before the end comes first.
        if let Ok(update) = this.events.try_recv() {
            return Poll::Ready(Some(update));
        }
        this.done = true;
        match this.outcome.take() {
            Some(outcome) => Poll::Ready(Some(TaskUpdate::Finished(outcome))),
            None => Poll::Ready(None),
        }
    }
}
