//! Tasks as MCP 2025-11-25 defines them (SEP-1686): the requestor opts in with a `task`
//! param, gets a nested [`CreateTaskResult`], polls `tasks/get`, fetches the payload with
//! `tasks/result`, and may list and cancel tasks. Durations are `ttl` / `pollInterval`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::base::PaginatedRequestParams;
use crate::JsonObject;
use crate::meta::{MODEL_IMMEDIATE_RESPONSE, Meta, RELATED_TASK};
use crate::method::{TypedNotification, TypedRequest, TypedResultResponse};
use crate::request;

pub use crate::tasks::TaskStatus;

/// A task as MCP 2025-11-25 reports it.
///
/// `ttl` is required and nullable: `None` (unlimited retention) is written as `null`,
/// never left out. A missing `ttl` on input reads as `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The id the receiver minted for this task.
    pub task_id: String,
    /// The current status.
    pub status: TaskStatus,
    /// Human-readable text about the current status (diagnostics when `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When the task was created (ISO 8601).
    pub created_at: String,
    /// When the task last changed (ISO 8601).
    pub last_updated_at: String,
    /// How long (ms, from creation) the receiver keeps the task; `null` means no limit.
    #[schemars(with = "crate::tasks::RequiredNullableInt")]
    pub ttl: Option<i64>,
    /// How often (ms) the requestor should poll `tasks/get`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<i64>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Task {
    /// A task with the given id, status and timestamps; no TTL limit, no message, no poll hint.
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
        last_updated_at: impl Into<String>,
    ) -> Self {
        Task {
            task_id: task_id.into(),
            status,
            status_message: None,
            created_at: created_at.into(),
            last_updated_at: last_updated_at.into(),
            ttl: None,
            poll_interval: None,
            extra: JsonObject::new(),
        }
    }
}

/// The `task` param of a task-augmented request: asks the receiver to run it as a task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskMetadata {
    /// The retention (ms) the requestor asks for; the receiver may choose another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The value of `_meta["io.modelcontextprotocol/related-task"]`: the task a message belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RelatedTaskMetadata {
    /// The task's id.
    pub task_id: String,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl RelatedTaskMetadata {
    /// Metadata naming `task_id`.
    pub fn new(task_id: impl Into<String>) -> Self {
        RelatedTaskMetadata {
            task_id: task_id.into(),
            extra: JsonObject::new(),
        }
    }

    /// Reads the related-task entry of a `_meta` object: `None` when absent,
    /// `Some(Err(_))` when present but malformed.
    pub fn from_meta(meta: &Meta) -> Option<Result<Self, serde_json::Error>> {
        meta.get(RELATED_TASK).map(RelatedTaskMetadata::deserialize)
    }

    /// Reads the related-task entry of an optional `_meta`, ignoring a malformed one.
    pub fn task_id_in(meta: Option<&Meta>) -> Option<String> {
        meta.and_then(Self::from_meta)
            .and_then(Result::ok)
            .map(|r| r.task_id)
    }

    /// Writes this entry into a `_meta` object, replacing any previous one.
    pub fn insert_into(&self, meta: &mut Meta) {
        meta.insert(RELATED_TASK.to_owned(), self.to_value());
    }

    /// Writes this entry into an optional `_meta`, creating it if needed.
    pub fn insert_into_option(&self, meta: &mut Option<Meta>) {
        self.insert_into(meta.get_or_insert_with(Meta::new));
    }

    /// Removes the related-task entry from a `_meta` object, returning whether one was there.
    pub fn remove_from(meta: &mut Meta) -> bool {
        meta.remove(RELATED_TASK).is_some()
    }

    fn to_value(&self) -> Value {
        let mut obj = self.extra.clone();
        obj.insert("taskId".to_owned(), Value::String(self.task_id.clone()));
        Value::Object(obj)
    }
}

/// The answer to a task-augmented request: the new task, nested under `task`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult {
    /// The task the receiver created.
    pub task: Task,
    /// Result metadata; may hold `io.modelcontextprotocol/model-immediate-response`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CreateTaskResult {
    /// A result wrapping `task`, with no `_meta`.
    pub fn new(task: Task) -> Self {
        CreateTaskResult {
            task,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// The interim text for the model (`_meta["io.modelcontextprotocol/model-immediate-response"]`),
    /// if present and a string.
    pub fn model_immediate_response(&self) -> Option<&str> {
        self.meta.as_ref()?.get(MODEL_IMMEDIATE_RESPONSE)?.as_str()
    }

    /// Sets the interim text for the model.
    pub fn set_model_immediate_response(&mut self, text: impl Into<String>) {
        self.meta.get_or_insert_with(Meta::new).insert(
            MODEL_IMMEDIATE_RESPONSE.to_owned(),
            Value::String(text.into()),
        );
    }

    /// The same result with the interim text for the model set.
    pub fn with_model_immediate_response(mut self, text: impl Into<String>) -> Self {
        self.set_model_immediate_response(text);
        self
    }
}

impl From<Task> for CreateTaskResult {
    fn from(task: Task) -> Self {
        CreateTaskResult::new(task)
    }
}

/// Declares a `Task & {_meta}` struct: the task's members flat, plus `_meta`.
macro_rules! task_with_meta {
    ($(#[$m:meta])* $name:ident, $meta_doc:literal) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        pub struct $name {
            /// The task, flat.
            #[serde(flatten)]
            pub task: Task,
            #[doc = $meta_doc]
            #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
            pub meta: Option<Meta>,
        }

        impl From<Task> for $name {
            fn from(task: Task) -> Self {
                $name { task, meta: None }
            }
        }
    };
}

task_with_meta!(
    /// The result of `tasks/get`: the task, flat.
    GetTaskResult, "Result metadata."
);
task_with_meta!(
    /// The result of `tasks/cancel`: the task, flat, already `cancelled`.
    CancelTaskResult, "Result metadata."
);
task_with_meta!(
    /// The `params` of `notifications/tasks/status`: the whole task, flat.
    TaskStatusNotificationParams, "Notification metadata (should not carry related-task)."
);

/// The `params` of `tasks/get`, `tasks/result` and `tasks/cancel`: the task to act on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task's id (authoritative over any related-task `_meta`).
    pub task_id: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl TaskIdParams {
    /// Params naming `task_id`, with no `_meta`.
    pub fn new(task_id: impl Into<String>) -> Self {
        TaskIdParams {
            task_id: task_id.into(),
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The result of `tasks/result`: whatever the original request returns (e.g. a
/// `CallToolResult`), whose `_meta` must name the task (related-task).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GetTaskPayloadResult {
    /// Result metadata, with `io.modelcontextprotocol/related-task`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The original result's members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl GetTaskPayloadResult {
    /// Wraps a serialized result object (its `_meta`, if any, is kept) and tags it with
    /// the related-task entry for `task_id`.
    pub fn for_task(task_id: impl Into<String>, mut result: JsonObject) -> Self {
        let mut meta = match result.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Meta::new(),
        };
        RelatedTaskMetadata::new(task_id).insert_into(&mut meta);
        GetTaskPayloadResult {
            meta: Some(meta),
            extra: result,
        }
    }

    /// The task id named by the related-task `_meta`, if present and well-formed.
    pub fn related_task_id(&self) -> Option<String> {
        RelatedTaskMetadata::task_id_in(self.meta.as_ref())
    }
}

/// The result of `tasks/list`: one page of tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// The tasks on this page.
    pub tasks: Vec<Task>,
    /// The cursor of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

request!(
    /// `tasks/get`: poll a task's state.
    GetTask, super::methods::TASKS_GET, TaskIdParams => GetTaskResult
);
request!(
    /// `tasks/result`: wait for a task to end and fetch its payload.
    GetTaskPayload, super::methods::TASKS_RESULT, TaskIdParams => GetTaskPayloadResult
);
request!(
    /// `tasks/list`: list the requestor's tasks, a page at a time.
    ListTasks, super::methods::TASKS_LIST, optional Option<PaginatedRequestParams> => ListTasksResult
);
request!(
    /// `tasks/cancel`: cancel a task; the answer is the task, now `cancelled`.
    CancelTask, super::methods::TASKS_CANCEL, TaskIdParams => CancelTaskResult
);

/// `notifications/tasks/status`: the receiver reports a task's new state.
/// (Declared by hand: the spec's name stem `TaskStatus` is taken by the status enum.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatusChanged {}

impl crate::method::Notification for TaskStatusChanged {
    const NAME: &'static str = "TaskStatus";
    const METHOD: &'static str = super::methods::NOTIFICATIONS_TASKS_STATUS;
    type Params = TaskStatusNotificationParams;
}

/// A `tasks/get` request with its envelope.
pub type GetTaskRequest = TypedRequest<GetTask>;
/// A `tasks/result` request with its envelope.
pub type GetTaskPayloadRequest = TypedRequest<GetTaskPayload>;
/// A `tasks/list` request with its envelope.
pub type ListTasksRequest = TypedRequest<ListTasks>;
/// A `tasks/cancel` request with its envelope.
pub type CancelTaskRequest = TypedRequest<CancelTask>;
/// A `notifications/tasks/status` notification with its envelope.
pub type TaskStatusNotification = TypedNotification<TaskStatusChanged>;
/// A successful response to `tasks/get`.
pub type GetTaskResultResponse = TypedResultResponse<GetTask>;
/// A successful response to `tasks/result`.
pub type GetTaskPayloadResultResponse = TypedResultResponse<GetTaskPayload>;
/// A successful response to `tasks/list`.
pub type ListTasksResultResponse = TypedResultResponse<ListTasks>;
/// A successful response to `tasks/cancel`.
pub type CancelTaskResultResponse = TypedResultResponse<CancelTask>;

/// The answer to a request that may have been task-augmented: either a task handle or
/// the request's ordinary result. A value with a `task` member reads as the former.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // message-sized; boxing would only add indirection
pub enum TaskOr<R> {
    /// The receiver created a task.
    Task(CreateTaskResult),
    /// The receiver answered directly.
    Result(R),
}
