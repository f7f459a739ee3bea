//! [`TaskEvent`]: one event as the wire's `notifications/tasks/event` carries it, with
//! what this implementation's servers add in `_meta` read when present.

use std::time::SystemTime;

use mcp_tasks::Actor;
use mcp_tasks::log::kinds;
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::tasks::{EVENT_META_PREFIX, TaskEventNotificationParams, TaskStatus};
use serde::Deserialize;
use serde_json::Value;

/// One event of a task, as [`TaskEvents`] yields it: the wire's `seq`, `type` and
/// `payload`, and what this implementation's servers add in `_meta` (when, where and by
/// whom it was written), read when present.
///
/// [`TaskEvents`]: super::TaskEvents
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEvent {
    /// Its place in the task's stream: 0 for the first event, then one more each.
    pub seq: u64,
    /// The task.
    pub task_id: String,
    /// Its type: vendor-prefixed (e.g. `rs.mcp-tasks.text`, `rs.mcp-tasks.status`).
    pub kind: String,
    /// What it says; its shape is the type's.
    pub payload: JsonObject,
    /// When the server wrote it (`rs.mcp-tasks/at`).
    pub at: Option<SystemTime>,
    /// The node that wrote it (`rs.mcp-tasks/node`).
    pub node: Option<String>,
    /// Who made it (`rs.mcp-tasks/actor`).
    pub actor: Option<Actor>,
    /// The event's whole `_meta` (with the related task).
    pub meta: JsonObject,
}

impl TaskEvent {
    pub(super) fn from_params(params: TaskEventNotificationParams) -> TaskEvent {
        let meta = params.meta.unwrap_or_default();
        let ours = |key: &str| meta.get(&format!("{EVENT_META_PREFIX}{key}"));
        let at = ours("at")
            .and_then(Value::as_str)
            .and_then(|t| humantime::parse_rfc3339_weak(t).ok());
        let node = ours("node").and_then(Value::as_str).map(str::to_owned);
        let actor = ours("actor").and_then(|a| Actor::deserialize(a).ok());
        TaskEvent {
            seq: params.seq,
            task_id: params.task_id,
            kind: params.kind,
            payload: params.payload,
            at,
            node,
            actor,
            meta,
        }
    }

    /// The text of a tool's text output (`rs.mcp-tasks.text`: `{"text"}`).
    pub fn text(&self) -> Option<&str> {
        (self.kind == kinds::TEXT)
            .then(|| self.payload.get("text").and_then(Value::as_str))
            .flatten()
    }

    /// The status a change of status reports (`rs.mcp-tasks.status`: `{"status", ...}`).
    pub fn status(&self) -> Option<TaskStatus> {
        if self.kind != kinds::STATUS {
            return None;
        }
        TaskStatus::deserialize(self.payload.get("status")?).ok()
    }
}
