//! Task event streams, the draft SEP-2694 ("Resumable Task Event Streams") on top of the
//! tasks extension: `tasks/stream` starts or resumes the stream of one task's events,
//! delivered as `notifications/tasks/event` on the request's own stream, each numbered by
//! `seq` (from 0, no gaps); the request ends with an empty result once the task is
//! terminal and its last event went out. A client that lost its stream calls again with
//! `after` (the last `seq` it processed). Events no longer kept are refused with
//! [`EVENTS_GONE`] and [`EventsGoneData`].
//!
//! Where the draft is silent we chose, and say so on each item: how support is advertised
//! ([`TasksExtensionCapability::EVENT_STREAMS`](super::TasksExtensionCapability::EVENT_STREAMS)),
//! the time, node and actor of an event (in `_meta` under [`EVENT_META_PREFIX`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::messages::{CompleteResultType, require_result_type};
use crate::JsonObject;
use crate::jsonrpc::ErrorObject;
use crate::meta::Meta;
use crate::method::{TypedNotification, TypedRequest, TypedResultResponse};
use crate::request;
use crate::v2026::ResultMeta;

/// The code of the `events_gone` error (the draft's; it lies in the range MCP 2026-07-28
/// calls legacy, so a client should key on [`EventsGoneData::reason`] too).
pub const EVENTS_GONE: i64 = -32010;

/// [`EventsGoneData::reason`] of the `events_gone` error.
pub const EVENTS_GONE_REASON: &str = "events_gone";

/// The prefix of the `_meta` keys this implementation adds to an event: `…/at` (RFC 3339
/// time it was written), `…/node` (the node that wrote it), `…/actor` (`owner`,
/// `operator`, `worker` or `server`). Our own prefix: the draft's event has no time.
pub const EVENT_META_PREFIX: &str = "rs.mcp-tasks/";

/// The `params` of `tasks/stream`: the task, and where to resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamTaskRequestParams {
    /// The task whose events to stream.
    pub task_id: String,
    /// Exclusive cursor: only events with a greater `seq`. Absent: from the earliest
    /// event the server still keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
    /// Request metadata (protocol version, client capabilities, ...).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl StreamTaskRequestParams {
    /// Params streaming `task_id` after `after`, with no `_meta`.
    pub fn new(task_id: impl Into<String>, after: Option<u64>) -> Self {
        StreamTaskRequestParams {
            task_id: task_id.into(),
            after,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// Whether this request's own `_meta` declares the tasks extension.
    pub fn declares_tasks(&self) -> bool {
        self.meta
            .as_ref()
            .is_some_and(super::request_meta_declares_tasks)
    }
}

/// The result of `tasks/stream`, once the stream ends: an empty acknowledgement.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = require_result_type)]
pub struct StreamTaskResult {
    /// Always `"complete"` (a missing value reads as `"complete"`).
    #[serde(default)]
    pub result_type: CompleteResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `params` of `notifications/tasks/event`: one event of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskEventNotificationParams {
    /// The event's place in its task's stream: 0 for the first, then one more each.
    pub seq: u64,
    /// The task.
    pub task_id: String,
    /// The event's type: vendor-prefixed (unprefixed types are reserved for MCP).
    #[serde(rename = "type")]
    pub kind: String,
    /// What it says; its shape is the type's.
    pub payload: JsonObject,
    /// Metadata: `io.modelcontextprotocol/related-task` as the draft asks, and this
    /// implementation's time, node and actor ([`EVENT_META_PREFIX`]).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// `error.data` of the `events_gone` error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventsGoneData {
    /// Always [`EVENTS_GONE_REASON`].
    pub reason: String,
    /// The task.
    pub task_id: String,
    /// The earliest event still kept: resume with `after = earliestSeq - 1`, or without
    /// `after`.
    pub earliest_seq: u64,
}

impl EventsGoneData {
    /// The `events_gone` error for `task_id`, whose earliest kept event is `earliest_seq`.
    pub fn error(task_id: impl Into<String>, earliest_seq: u64) -> ErrorObject {
        let data = EventsGoneData {
            reason: EVENTS_GONE_REASON.to_owned(),
            task_id: task_id.into(),
            earliest_seq,
        };
        ErrorObject::new(EVENTS_GONE, "Task events are no longer available")
            .with_data(serde_json::to_value(data).unwrap_or_default())
    }

    /// The data of an `events_gone` error, when `error` is one (by its `reason`).
    pub fn of(error: &ErrorObject) -> Option<EventsGoneData> {
        let data = EventsGoneData::deserialize(error.data.as_ref()?).ok()?;
        (data.reason == EVENTS_GONE_REASON).then_some(data)
    }
}

request!(
    /// `tasks/stream`: start or resume the stream of a task's events (draft SEP-2694).
    StreamTask, super::methods::TASKS_STREAM, StreamTaskRequestParams => StreamTaskResult
);
crate::notification!(
    /// `notifications/tasks/event`: one event of a streamed task (draft SEP-2694).
    TaskEvent, super::methods::NOTIFICATIONS_TASKS_EVENT, TaskEventNotificationParams
);

/// A `tasks/stream` request with its envelope.
pub type StreamTaskRequest = TypedRequest<StreamTask>;
/// A successful response to `tasks/stream`.
pub type StreamTaskResultResponse = TypedResultResponse<StreamTask>;
/// A `notifications/tasks/event` notification with its envelope.
pub type TaskEventNotification = TypedNotification<TaskEvent>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_gone_round_trips_and_is_told_by_its_reason() {
        let e = EventsGoneData::error("t1", 100);
        assert_eq!(e.code, EVENTS_GONE);
        let wire = serde_json::to_value(&e).expect("serializes");
        assert_eq!(wire["data"]["reason"], "events_gone");
        assert_eq!(wire["data"]["earliestSeq"], 100);
        assert_eq!(EventsGoneData::of(&e).map(|d| d.earliest_seq), Some(100));
        assert_eq!(
            EventsGoneData::of(&ErrorObject::new(EVENTS_GONE, "other")),
            None
        );
    }

    #[test]
    fn an_event_has_the_drafts_shape() {
        let event: TaskEventNotificationParams = serde_json::from_value(serde_json::json!({
            "seq": 42, "taskId": "task-123", "type": "com.example.content.partial",
            "payload": { "content": [] },
            "_meta": { "io.modelcontextprotocol/related-task": { "taskId": "task-123" } }
        }))
        .expect("the draft's example reads");
        assert_eq!(
            (event.seq, event.kind.as_str()),
            (42, "com.example.content.partial")
        );
        let params: StreamTaskRequestParams =
            serde_json::from_value(serde_json::json!({ "taskId": "t", "after": 1 }))
                .expect("reads");
        assert_eq!(params.after, Some(1));
        assert!(
            serde_json::from_value::<StreamTaskRequestParams>(
                serde_json::json!({ "taskId": "t", "after": -1 })
            )
            .is_err(),
            "a negative cursor is refused"
        );
    }
}

#[cfg(test)]
mod schema_tests {
    #[test]
    fn the_extension_schema_has_the_stream_types() {
        let schema = crate::schema::generate(crate::schema::Revision::TasksExtension);
        for name in [
            "StreamTaskRequest",
            "StreamTaskResult",
            "TaskEventNotification",
            "EventsGoneData",
        ] {
            assert!(schema["$defs"].get(name).is_some(), "{name}");
        }
    }
}
