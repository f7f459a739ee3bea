//! MCP 2025-11-25, the revision with sessions (`initialize`) and tasks in core (SEP-1686).
//!
//! Types shared with 2026-07-28 live in [`crate::types`]; this module holds the ones
//! whose 2025 shape is its own (capabilities with `tasks`, `Tool` with
//! `execution.taskSupport`, requests with a `task` param, the nested `CreateTaskResult`,
//! `ttl`/`pollInterval` durations, ...). [`TaskStatus`] is [`crate::tasks::TaskStatus`].

mod base;
mod capabilities;
mod tasks;

pub use base::{EmptyResult, NotificationParams, PaginatedRequestParams, RequestParams};
pub use capabilities::{
    ClientCapabilities, ClientTaskRequests, ClientTasksCapability, ElicitationCapability,
    ElicitationTaskRequests, PromptsCapability, ResourcesCapability, RootsCapability,
    SamplingCapability, SamplingTaskRequests, ServerCapabilities, ServerTaskRequests,
    ServerTasksCapability, ToolsCapability, ToolsTaskRequests,
};
pub use tasks::{
    CancelTask, CancelTaskRequest, CancelTaskResult, CancelTaskResultResponse, CreateTaskResult,
    GetTask, GetTaskPayload, GetTaskPayloadRequest, GetTaskPayloadResult,
    GetTaskPayloadResultResponse, GetTaskRequest, GetTaskResult, GetTaskResultResponse, ListTasks,
    ListTasksRequest, ListTasksResult, ListTasksResultResponse, RelatedTaskMetadata, Task,
    TaskIdParams, TaskMetadata, TaskStatus, TaskStatusChanged, TaskStatusNotification,
    TaskStatusNotificationParams,
};

/// Every method name of MCP 2025-11-25.
pub mod methods {
    /// Start a session.
    pub const INITIALIZE: &str = "initialize";
    /// Check that the peer is alive.
    pub const PING: &str = "ping";
    /// Poll a task.
    pub const TASKS_GET: &str = "tasks/get";
    /// Fetch a task's payload (blocks until the task ends).
    pub const TASKS_RESULT: &str = "tasks/result";
    /// List tasks.
    pub const TASKS_LIST: &str = "tasks/list";
    /// Cancel a task.
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// List resources.
    pub const RESOURCES_LIST: &str = "resources/list";
    /// List resource templates.
    pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
    /// Read a resource.
    pub const RESOURCES_READ: &str = "resources/read";
    /// Subscribe to a resource's updates.
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// Stop a resource subscription.
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    /// List prompts.
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// Get a prompt.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// List tools.
    pub const TOOLS_LIST: &str = "tools/list";
    /// Call a tool.
    pub const TOOLS_CALL: &str = "tools/call";
    /// Set the server's log level.
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// Ask for argument completions.
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    /// Ask the client to sample an LLM.
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// Ask the client for user input.
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    /// Ask the client for its roots.
    pub const ROOTS_LIST: &str = "roots/list";
    /// The client finished initializing.
    pub const NOTIFICATIONS_INITIALIZED: &str = "notifications/initialized";
    /// A request was cancelled.
    pub const NOTIFICATIONS_CANCELLED: &str = "notifications/cancelled";
    /// Progress of a long-running request.
    pub const NOTIFICATIONS_PROGRESS: &str = "notifications/progress";
    /// A task's status changed.
    pub const NOTIFICATIONS_TASKS_STATUS: &str = "notifications/tasks/status";
    /// A log message.
    pub const NOTIFICATIONS_MESSAGE: &str = "notifications/message";
    /// The resource list changed.
    pub const NOTIFICATIONS_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// A subscribed resource changed.
    pub const NOTIFICATIONS_RESOURCES_UPDATED: &str = "notifications/resources/updated";
    /// The prompt list changed.
    pub const NOTIFICATIONS_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// The tool list changed.
    pub const NOTIFICATIONS_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// The client's roots changed.
    pub const NOTIFICATIONS_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
    /// A URL-mode elicitation finished.
    pub const NOTIFICATIONS_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
}

/// Registers every top-level type of MCP 2025-11-25 with `g`.
#[allow(dead_code)] // called by crate::schema
pub(crate) fn register_schemas(g: &mut schemars::SchemaGenerator) {
    g.subschema_for::<Task>();
    g.subschema_for::<TaskStatus>();
    g.subschema_for::<TaskMetadata>();
    g.subschema_for::<RelatedTaskMetadata>();
    g.subschema_for::<CreateTaskResult>();
    g.subschema_for::<GetTaskRequest>();
    g.subschema_for::<GetTaskResult>();
    g.subschema_for::<GetTaskPayloadRequest>();
    g.subschema_for::<GetTaskPayloadResult>();
    g.subschema_for::<ListTasksRequest>();
    g.subschema_for::<ListTasksResult>();
    g.subschema_for::<CancelTaskRequest>();
    g.subschema_for::<CancelTaskResult>();
    g.subschema_for::<TaskStatusNotification>();
    g.subschema_for::<TaskStatusNotificationParams>();
    g.subschema_for::<ClientCapabilities>();
    g.subschema_for::<ServerCapabilities>();
    g.subschema_for::<EmptyResult>();
    g.subschema_for::<PaginatedRequestParams>();
}
