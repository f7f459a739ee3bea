//! The extension's methods and their params and results: `tasks/get`, `tasks/update`,
//! `tasks/cancel`, `notifications/tasks`, and the `CreateTaskResult` that `tools/call`
//! may return.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::task::{DetailedTask, Task};
use crate::JsonObject;
use crate::meta::Meta;
use crate::method::{TypedNotification, TypedRequest, TypedResultResponse};
use crate::request;
use crate::v2026::{NotificationMeta, ResultMeta};

crate::const_tag!(
    /// The `resultType` of a [`CreateTaskResult`]: always `"task"`.
    TaskResultType = "task"
);
crate::const_tag!(
    /// The `resultType` of a finished, ordinary result: always `"complete"`. A missing
    /// `resultType` reads as this one (older peers leave it out).
    CompleteResultType = "complete"
);

/// Schema transform: lists `resultType` as required. Our types always write it, but read
/// a missing one as `"complete"`, which makes the derived schema call it optional.
pub(super) fn require_result_type(schema: &mut schemars::Schema) {
    if let Some(obj) = schema.as_object_mut() {
        let required = obj
            .entry("required")
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let Some(list) = required.as_array_mut()
            && !list.iter().any(|v| v == "resultType")
        {
            list.push("resultType".into());
        }
    }
}

/// The result of a request the server chose to run as a task (for now only
/// `tools/call`): the task itself, flat, with `resultType: "task"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult {
    /// Always `"task"`; marks this result as a task handle.
    pub result_type: TaskResultType,
    /// The new task.
    #[serde(flatten)]
    pub task: Task,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
}

impl From<Task> for CreateTaskResult {
    fn from(task: Task) -> Self {
        CreateTaskResult {
            result_type: TaskResultType,
            task,
            meta: None,
        }
    }
}

/// The `params` of `tasks/get` and `tasks/cancel`: the task to act on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task's id.
    pub task_id: String,
    /// Request metadata (protocol version, client capabilities, ...).
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

    /// Whether this request's own `_meta` declares the tasks extension.
    pub fn declares_tasks(&self) -> bool {
        self.meta
            .as_ref()
            .is_some_and(super::request_meta_declares_tasks)
    }
}

/// The `params` of `tasks/get`.
pub type GetTaskRequestParams = TaskIdParams;
/// The `params` of `tasks/cancel`.
pub type CancelTaskRequestParams = TaskIdParams;

/// The result of `tasks/get`: the task in its current state, with `resultType: "complete"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = require_result_type)]
pub struct GetTaskResult {
    /// Always `"complete"` (a missing value reads as `"complete"`).
    #[serde(default)]
    pub result_type: CompleteResultType,
    /// The task and its status-specific data.
    #[serde(flatten)]
    pub task: DetailedTask,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
}

impl From<DetailedTask> for GetTaskResult {
    fn from(task: DetailedTask) -> Self {
        GetTaskResult {
            result_type: CompleteResultType,
            task,
            meta: None,
        }
    }
}

/// The `params` of `tasks/update`: answers to some of a task's `inputRequests`.
///
/// `inputResponses` stays a raw JSON object: the server must ignore keys it did not ask
/// for, whatever their shape, so entries are only interpreted after matching their key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskRequestParams {
    /// The task's id.
    pub task_id: String,
    /// Answers by input-request key (values are `CreateMessageResult`, `ListRootsResult`
    /// or `ElicitResult` when the key is known).
    pub input_responses: JsonObject,
    /// Request metadata (protocol version, client capabilities, ...).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl UpdateTaskRequestParams {
    /// Params answering `input_responses` for `task_id`, with no `_meta`.
    pub fn new(task_id: impl Into<String>, input_responses: JsonObject) -> Self {
        UpdateTaskRequestParams {
            task_id: task_id.into(),
            input_responses,
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

    /// The answer under `key`, read as a 2026-07-28 input response; `None` when the key
    /// is absent, `Some(Err(_))` when its value has no known shape.
    pub fn response(
        &self,
        key: &str,
    ) -> Option<Result<crate::v2026::InputResponse, serde_json::Error>> {
        self.input_responses
            .get(key)
            .map(crate::v2026::InputResponse::deserialize)
    }
}

/// Declares an empty acknowledgement result: `{"resultType": "complete"}` (plus `_meta`
/// if any).
macro_rules! ack_result {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "camelCase")]
        #[schemars(transform = require_result_type)]
        pub struct $name {
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
    };
}

ack_result!(
    /// The result of `tasks/update`: an empty acknowledgement. The new state shows up in
    /// a later `tasks/get`.
    UpdateTaskResult
);
ack_result!(
    /// The result of `tasks/cancel`: an empty acknowledgement. Cancellation is
    /// cooperative; the task may still end `completed` or `failed`.
    CancelTaskResult
);

/// The `params` of `notifications/tasks`: the whole task, as `tasks/get` would return it now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskStatusNotificationParams {
    /// The task and its status-specific data.
    #[serde(flatten)]
    pub task: DetailedTask,
    /// Notification metadata (e.g. `io.modelcontextprotocol/subscriptionId`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
}

impl TaskSubscriptionNotifications {
    /// Reads the `taskIds` member of a `subscriptions/listen` filter.
    pub fn from_filter(filter: &crate::v2026::SubscriptionFilter) -> Option<Vec<String>> {
        filter
            .extra
            .get("taskIds")
            .and_then(|v| Vec::<String>::deserialize(v).ok())
    }

    /// Writes `task_ids` into a `subscriptions/listen` filter.
    pub fn set_on_filter(filter: &mut crate::v2026::SubscriptionFilter, task_ids: &[String]) {
        filter
            .extra
            .insert("taskIds".to_owned(), serde_json::json!(task_ids));
    }
}

impl From<DetailedTask> for TaskStatusNotificationParams {
    fn from(task: DetailedTask) -> Self {
        TaskStatusNotificationParams { task, meta: None }
    }
}

/// The `taskIds` a client asks to follow, inside `subscriptions/listen` `params.notifications`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskSubscriptionNotifications {
    /// The tasks whose `notifications/tasks` the client wants on this stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `taskIds` the server agreed to report on, inside
/// `notifications/subscriptions/acknowledged` `params.notifications`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskSubscriptionAcknowledgedNotifications {
    /// The subset of the requested tasks that this stream will report on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

request!(
    /// `tasks/get`: read a task's current state.
    GetTask, super::methods::TASKS_GET, GetTaskRequestParams => GetTaskResult
);
request!(
    /// `tasks/update`: answer some of a task's input requests.
    UpdateTask, super::methods::TASKS_UPDATE, UpdateTaskRequestParams => UpdateTaskResult
);
request!(
    /// `tasks/cancel`: ask the server to stop a task.
    CancelTask, super::methods::TASKS_CANCEL, CancelTaskRequestParams => CancelTaskResult
);
/// `notifications/tasks`: a task's state, pushed on a `subscriptions/listen` stream.
/// (Declared by hand: the spec's name stem `TaskStatus` is taken by the status enum.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatusChanged {}

impl crate::method::Notification for TaskStatusChanged {
    const NAME: &'static str = "TaskStatus";
    const METHOD: &'static str = super::methods::NOTIFICATIONS_TASKS;
    type Params = TaskStatusNotificationParams;
}

/// A `tasks/get` request with its envelope.
pub type GetTaskRequest = TypedRequest<GetTask>;
/// A `tasks/update` request with its envelope.
pub type UpdateTaskRequest = TypedRequest<UpdateTask>;
/// A `tasks/cancel` request with its envelope.
pub type CancelTaskRequest = TypedRequest<CancelTask>;
/// A `notifications/tasks` notification with its envelope.
pub type TaskStatusNotification = TypedNotification<TaskStatusChanged>;
/// A successful response to `tasks/get`.
pub type GetTaskResultResponse = TypedResultResponse<GetTask>;
/// A successful response to `tasks/update`.
pub type UpdateTaskResultResponse = TypedResultResponse<UpdateTask>;
/// A successful response to `tasks/cancel`.
pub type CancelTaskResultResponse = TypedResultResponse<CancelTask>;
