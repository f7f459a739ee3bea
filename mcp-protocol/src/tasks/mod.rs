//! The tasks extension to MCP 2026-07-28, `io.modelcontextprotocol/tasks` (SEP-2663).
//!
//! The server alone decides to run a `tools/call` as a task and answers with a flat
//! [`CreateTaskResult`] (`resultType: "task"`). The client then polls `tasks/get`
//! ([`GetTaskResult`], a [`DetailedTask`]), answers input requests with `tasks/update`
//! and may ask to stop with `tasks/cancel`; both return an empty acknowledgement.
//! Durations are `ttlMs` / `pollIntervalMs`.
//!
//! [`TaskStatus`] is defined here and shared with [`crate::v2025`].

mod call;
mod capability;
mod messages;
mod stream;
mod task;

pub use call::{CallToolReply, CallToolWithTasks};
pub use capability::{
    TasksExtensionCapability, capabilities_value_declare_tasks, client_declares_tasks,
    extensions_declare_tasks, missing_capability_error, missing_capability_error_data,
    request_meta_declares_tasks, server_declares_tasks, server_offers_event_streams,
};
pub use messages::{
    CancelTask, CancelTaskRequest, CancelTaskRequestParams, CancelTaskResult,
    CancelTaskResultResponse, CompleteResultType, CreateTaskResult, GetTask, GetTaskRequest,
    GetTaskRequestParams, GetTaskResult, GetTaskResultResponse, TaskIdParams, TaskResultType,
    TaskStatusChanged, TaskStatusNotification, TaskStatusNotificationParams,
    TaskSubscriptionAcknowledgedNotifications, TaskSubscriptionNotifications, UpdateTask,
    UpdateTaskRequest, UpdateTaskRequestParams, UpdateTaskResult, UpdateTaskResultResponse,
};
pub use stream::{
    EVENT_META_PREFIX, EVENTS_GONE, EVENTS_GONE_REASON, EventsGoneData, StreamTask,
    StreamTaskRequest, StreamTaskRequestParams, StreamTaskResult, StreamTaskResultResponse,
    TaskEvent, TaskEventNotification, TaskEventNotificationParams,
};
pub(crate) use task::RequiredNullableInt;
pub use task::{
    CancelledStatus, CancelledTask, CompletedStatus, CompletedTask, DetailedTask, FailedStatus,
    FailedTask, InputRequiredStatus, InputRequiredTask, Task, TaskStatus, WorkingStatus,
    WorkingTask,
};

/// The requests an `input_required` task waits on (the 2026-07-28 core type).
pub use crate::v2026::InputRequests;

/// The extension's method names.
pub mod methods {
    /// Read a task's state.
    pub const TASKS_GET: &str = "tasks/get";
    /// Answer a task's input requests.
    pub const TASKS_UPDATE: &str = "tasks/update";
    /// Ask the server to stop a task.
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// A task's state, pushed on a `subscriptions/listen` stream.
    pub const NOTIFICATIONS_TASKS: &str = "notifications/tasks";
    /// Start or resume the stream of a task's events (draft SEP-2694).
    pub const TASKS_STREAM: &str = "tasks/stream";
    /// One event of a streamed task (draft SEP-2694).
    pub const NOTIFICATIONS_TASKS_EVENT: &str = "notifications/tasks/event";
}

/// Registers every top-level type of the extension with `g`.
pub(crate) fn register_schemas(g: &mut schemars::SchemaGenerator) {
    g.subschema_for::<Task>();
    g.subschema_for::<TaskStatus>();
    g.subschema_for::<WorkingTask>();
    g.subschema_for::<InputRequiredTask>();
    g.subschema_for::<CompletedTask>();
    g.subschema_for::<FailedTask>();
    g.subschema_for::<CancelledTask>();
    g.subschema_for::<DetailedTask>();
    g.subschema_for::<CreateTaskResult>();
    g.subschema_for::<GetTaskRequest>();
    g.subschema_for::<GetTaskResult>();
    g.subschema_for::<UpdateTaskRequest>();
    g.subschema_for::<UpdateTaskResult>();
    g.subschema_for::<CancelTaskRequest>();
    g.subschema_for::<CancelTaskResult>();
    g.subschema_for::<TaskStatusNotification>();
    g.subschema_for::<TaskStatusNotificationParams>();
    g.subschema_for::<TaskSubscriptionNotifications>();
    g.subschema_for::<TaskSubscriptionAcknowledgedNotifications>();
    g.subschema_for::<TasksExtensionCapability>();
    // Task event streams (draft SEP-2694), served beside the extension.
    g.subschema_for::<StreamTaskRequest>();
    g.subschema_for::<StreamTaskResult>();
    g.subschema_for::<TaskEventNotification>();
    g.subschema_for::<EventsGoneData>();
    // Core types the extension's messages refer to.
    g.subschema_for::<crate::v2026::InputRequests>();
    g.subschema_for::<crate::v2026::InputResponses>();
    g.subschema_for::<crate::jsonrpc::ErrorObject>();
    g.subschema_for::<crate::jsonrpc::JsonRpcRequest>();
    g.subschema_for::<crate::jsonrpc::JsonRpcNotification>();
}
