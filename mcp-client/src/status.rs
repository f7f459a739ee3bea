//! [`TaskStatusView`]: a task's state as the session's revision reports it, with the
//! members both revisions share behind one set of accessors; and [`TaskUpdate`], one
//! item of a task's update stream. Imports `error` only.

use mcp_tasks_protocol::tasks::{DetailedTask, TaskStatus};
use mcp_tasks_protocol::v2025;
use mcp_tasks_protocol::v2026::{CallToolResult, InputRequest};

use crate::error::ClientError;

/// What happened to a task, as [`TaskUpdates`](crate::TaskUpdates) yields it, in order.
#[derive(Debug)]
pub enum TaskUpdate {
    /// The task's status (or its status message) changed; the first update is the task
    /// as first seen (as created, for a handle fresh from a call).
    Status(TaskStatusView),
    /// The server asked for input; the handler is asked next. `key` is the input
    /// request's key (2026-07-28) or the JSON-RPC id of the server's request
    /// (2025-11-25).
    InputRequested {
        /// Which request.
        key: String,
        /// What it asks.
        request: InputRequest,
    },
    /// The task ended: the tool's result, or why there is none. Always the last update.
    Finished(Result<CallToolResult, ClientError>),
}

/// A task as `tasks/get` (or a pushed update) reported it, in the revision the session
/// speaks. Nothing is made up: a 2025-11-25 task carries no input requests and no
/// outcome (the server asks for input with server->client requests, and `tasks/result`
/// fetches the outcome), so it is not shown as a 2026-07-28 [`DetailedTask`].
#[derive(Debug, Clone, PartialEq)]
pub enum TaskStatusView {
    /// MCP 2026-07-28 (the tasks extension): the status with what it carries (input
    /// requests, the result or the error).
    V2026(DetailedTask),
    /// MCP 2025-11-25: the flat task.
    V2025(v2025::Task),
}

/// Applies `$e` to the inner struct of a [`DetailedTask`], whatever its variant.
macro_rules! each_2026 {
    ($task:expr, $t:ident => $e:expr) => {
        match $task {
            DetailedTask::Working($t) => $e,
            DetailedTask::InputRequired($t) => $e,
            DetailedTask::Completed($t) => $e,
            DetailedTask::Failed($t) => $e,
            DetailedTask::Cancelled($t) => $e,
        }
    };
}

/// Applies `$e` to a member both revisions name alike.
macro_rules! common {
    ($view:expr, $t:ident => $e:expr) => {
        match $view {
            TaskStatusView::V2026(d) => each_2026!(d, $t => $e),
            TaskStatusView::V2025($t) => $e,
        }
    };
}

impl TaskStatusView {
    /// The task's id.
    pub fn task_id(&self) -> &str {
        common!(self, t => &t.task_id)
    }

    /// The task's status.
    pub fn status(&self) -> TaskStatus {
        match self {
            TaskStatusView::V2026(t) => t.status(),
            TaskStatusView::V2025(t) => t.status,
        }
    }

    /// Human-readable text about the current status, if any.
    pub fn status_message(&self) -> Option<&str> {
        common!(self, t => t.status_message.as_deref())
    }

    /// When the task was created (ISO 8601).
    pub fn created_at(&self) -> &str {
        common!(self, t => &t.created_at)
    }

    /// When the task last changed (ISO 8601).
    pub fn last_updated_at(&self) -> &str {
        common!(self, t => &t.last_updated_at)
    }

    /// How long (ms, from creation) the server keeps the task; `None` means no limit
    /// (`ttlMs`; 2025-11-25 `ttl`).
    pub fn ttl_ms(&self) -> Option<i64> {
        match self {
            TaskStatusView::V2026(d) => each_2026!(d, t => t.ttl_ms),
            TaskStatusView::V2025(t) => t.ttl,
        }
    }

    /// How often (ms) the server suggests polling (`pollIntervalMs`; 2025-11-25
    /// `pollInterval`).
    pub fn poll_interval_ms(&self) -> Option<i64> {
        match self {
            TaskStatusView::V2026(d) => each_2026!(d, t => t.poll_interval_ms),
            TaskStatusView::V2025(t) => t.poll_interval,
        }
    }

    /// The 2026-07-28 task, with its input requests, result or error.
    pub fn as_v2026(&self) -> Option<&DetailedTask> {
        match self {
            TaskStatusView::V2026(t) => Some(t),
            TaskStatusView::V2025(_) => None,
        }
    }

    /// The 2025-11-25 flat task.
    pub fn as_v2025(&self) -> Option<&v2025::Task> {
        match self {
            TaskStatusView::V2025(t) => Some(t),
            TaskStatusView::V2026(_) => None,
        }
    }
}

impl From<DetailedTask> for TaskStatusView {
    fn from(task: DetailedTask) -> Self {
        TaskStatusView::V2026(task)
    }
}

impl From<v2025::Task> for TaskStatusView {
    fn from(task: v2025::Task) -> Self {
        TaskStatusView::V2025(task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_revisions_read_alike_and_keep_their_own_shape() {
        let mut flat = v2025::Task::new(
            "t1",
            TaskStatus::InputRequired,
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:01Z",
        );
        flat.ttl = Some(60_000);
        flat.poll_interval = Some(250);
        flat.status_message = Some("waiting".into());
        let view = TaskStatusView::from(flat.clone());
        assert_eq!(view.task_id(), "t1");
        assert_eq!(view.status(), TaskStatus::InputRequired);
        assert_eq!(view.status_message(), Some("waiting"));
        assert_eq!(view.ttl_ms(), Some(60_000));
        assert_eq!(view.poll_interval_ms(), Some(250));
        assert_eq!(view.last_updated_at(), "2026-01-01T00:00:01Z");
        assert_eq!(view.as_v2025(), Some(&flat));
        assert!(view.as_v2026().is_none());

        let detailed: DetailedTask = serde_json::from_value(serde_json::json!({
            "taskId": "t2", "status": "working", "createdAt": "a", "lastUpdatedAt": "b",
            "ttlMs": null, "pollIntervalMs": 100,
        }))
        .unwrap_or_else(|e| panic!("a working task: {e}"));
        let view = TaskStatusView::from(detailed.clone());
        assert_eq!(view.task_id(), "t2");
        assert_eq!(view.status(), TaskStatus::Working);
        assert_eq!(view.created_at(), "a");
        assert_eq!(view.ttl_ms(), None);
        assert_eq!(view.poll_interval_ms(), Some(100));
        assert_eq!(view.as_v2026(), Some(&detailed));
    }
}
