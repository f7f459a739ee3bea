//! MCP 2025-11-25, the revision with sessions (`initialize`) and tasks in core (SEP-1686).
//!
//! Types shared with 2026-07-28 live in [`crate::types`]; this module holds the ones
//! whose 2025 shape is its own (capabilities with `tasks`, `Tool` with
//! `execution.taskSupport`, requests with a `task` param, the nested `CreateTaskResult`,
//! `ttl`/`pollInterval` durations, ...). [`TaskStatus`] is [`crate::tasks::TaskStatus`].

mod base;
mod capabilities;
mod elicitation;
mod lifecycle;
mod prompts;
mod resources;
mod sampling;
mod tasks;
mod tools;
mod unions;

pub use base::*;
pub use capabilities::*;
pub use elicitation::*;
pub use lifecycle::*;
pub use prompts::*;
pub use resources::*;
pub use sampling::*;
pub use tasks::*;
pub use tools::*;
pub use unions::*;

/// The answer to a `tools/call` that may have been task-augmented.
pub type CallToolResponse = TaskOr<CallToolResult>;
/// The answer to a `sampling/createMessage` that may have been task-augmented.
pub type CreateMessageResponse = TaskOr<CreateMessageResult>;
/// The answer to an `elicitation/create` that may have been task-augmented.
pub type ElicitResponse = TaskOr<crate::types::ElicitResult>;

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

/// Registers every top-level type of MCP 2025-11-25 with `g`, shared building blocks
/// included as they appear in this revision.
pub(crate) fn register_schemas(g: &mut schemars::SchemaGenerator) {
    use crate::types as t;
    macro_rules! reg { ($($ty:ty),* $(,)?) => { $( g.subschema_for::<$ty>(); )* }; }
    // Unions first, so that every message type is reachable from them.
    reg!(
        ClientRequest,
        ServerRequest,
        ClientNotification,
        ServerNotification,
        ClientResult,
        ServerResult
    );
    // JSON-RPC envelopes.
    {
        use crate::jsonrpc as j;
        reg!(
            j::JsonRpcMessage,
            j::JsonRpcRequest,
            j::JsonRpcNotification,
            j::JsonRpcResponse,
            j::JsonRpcResultResponse,
            j::JsonRpcErrorResponse,
            j::ErrorObject,
            j::RequestId,
        );
    }
    // Base.
    reg!(
        RequestParams,
        NotificationParams,
        PaginatedRequestParams,
        EmptyResult
    );
    // Lifecycle and utilities.
    reg!(
        InitializeRequest,
        InitializeRequestParams,
        InitializeResult,
        InitializedNotification,
        PingRequest,
        CancelledNotification,
        CancelledNotificationParams,
        ProgressNotification,
        ProgressNotificationParams,
        ClientCapabilities,
        ServerCapabilities,
    );
    // Tasks.
    reg!(
        Task,
        TaskStatus,
        TaskMetadata,
        RelatedTaskMetadata,
        CreateTaskResult,
        GetTaskRequest,
        GetTaskResult,
        GetTaskPayloadRequest,
        GetTaskPayloadResult,
        ListTasksRequest,
        ListTasksResult,
        CancelTaskRequest,
        CancelTaskResult,
        TaskStatusNotification,
        TaskStatusNotificationParams,
    );
    // Tools.
    reg!(
        Tool,
        ToolExecution,
        TaskSupport,
        ListToolsRequest,
        ListToolsResult,
        CallToolRequest,
        CallToolRequestParams,
        CallToolResult,
        ToolListChangedNotification,
    );
    // Resources.
    reg!(
        ListResourcesRequest,
        ListResourcesResult,
        ListResourceTemplatesRequest,
        ListResourceTemplatesResult,
        ReadResourceRequest,
        ReadResourceResult,
        SubscribeRequest,
        UnsubscribeRequest,
        ResourceRequestParams,
        ResourceListChangedNotification,
        ResourceUpdatedNotification,
        ResourceUpdatedNotificationParams,
    );
    // Prompts, completion, logging.
    reg!(
        ListPromptsRequest,
        ListPromptsResult,
        GetPromptRequest,
        GetPromptRequestParams,
        GetPromptResult,
        PromptListChangedNotification,
        CompleteRequest,
        CompleteRequestParams,
        CompleteResult,
        SetLevelRequest,
        SetLevelRequestParams,
        LoggingMessageNotification,
        LoggingMessageNotificationParams,
    );
    // Sampling, roots, elicitation.
    reg!(
        CreateMessageRequest,
        CreateMessageRequestParams,
        CreateMessageResult,
        SamplingMessage,
        SamplingMessageContentBlock,
        ToolResultContent,
        ListRootsRequest,
        RootsListChangedNotification,
        ElicitRequest,
        ElicitRequestParams,
        ElicitRequestFormParams,
        ElicitRequestURLParams,
        ElicitationCompleteNotification,
        URLElicitationRequiredError,
    );
    // Shared building blocks, as used by this revision.
    reg!(
        t::Implementation,
        t::Icon,
        t::Annotations,
        t::Role,
        t::LoggingLevel,
        t::ProgressToken,
        t::ContentBlock,
        t::TextContent,
        t::ImageContent,
        t::AudioContent,
        t::ResourceLink,
        t::EmbeddedResource,
        t::Resource,
        t::ResourceTemplate,
        t::TextResourceContents,
        t::BlobResourceContents,
        t::Prompt,
        t::PromptArgument,
        t::PromptMessage,
        t::PromptReference,
        t::ResourceTemplateReference,
        t::Root,
        t::ListRootsResult,
        t::ElicitResult,
        t::PrimitiveSchemaDefinition,
        t::ModelPreferences,
        t::ModelHint,
        t::ToolChoice,
        t::ToolUseContent,
        t::ToolAnnotations,
    );
}
