//! Tools in MCP 2025-11-25: `Tool` with `execution.taskSupport`, `tools/list`, and
//! `tools/call` with its optional `task` param.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::base::{NotificationParams, PaginatedRequestParams};
use super::tasks::TaskMetadata;
use crate::JsonObject;
use crate::meta::Meta;
use crate::method::{TypedNotification, TypedRequest, TypedResultResponse};
use crate::types::{ContentBlock, Icon, ObjectTypeTag, ToolAnnotations};
use crate::{notification, request};

/// The JSON Schema of a tool's arguments or structured output: always an object schema.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolSchema {
    /// The JSON Schema dialect, if the tool names one.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    #[serde(rename = "type")]
    pub r#type: ObjectTypeTag,
    /// The object's properties, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<JsonObject>,
    /// The properties that must be present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// Other schema keywords, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Whether a tool may, must or must not be called as a task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskSupport {
    /// Never as a task (also what an absent value means).
    #[default]
    Forbidden,
    /// With or without a `task` param.
    Optional,
    /// Only with a `task` param.
    Required,
}

/// How a tool runs (2025-11-25: only whether it supports tasks).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Task support; absent means [`TaskSupport::Forbidden`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ToolExecution {
    /// An execution block declaring `task_support`.
    pub fn with_task_support(task_support: TaskSupport) -> Self {
        ToolExecution {
            task_support: Some(task_support),
            extra: JsonObject::new(),
        }
    }

    /// The declared task support, with absence read as `forbidden`.
    pub fn effective_task_support(&self) -> TaskSupport {
        self.task_support.unwrap_or_default()
    }
}

/// A tool the server offers (2025-11-25 shape, with `execution`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The tool's name, used in `tools/call`.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The schema of the tool's arguments.
    pub input_schema: ToolSchema,
    /// The schema of the tool's `structuredContent`, if it returns any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<ToolSchema>,
    /// How the tool runs (task support).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// Hints about the tool's behaviour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons to display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Tool metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Tool {
    /// A tool with a name and an input schema that accepts any object.
    pub fn new(name: impl Into<String>) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: None,
            input_schema: ToolSchema::default(),
            output_schema: None,
            execution: None,
            annotations: None,
            icons: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// The tool's task support, with an absent `execution` or `taskSupport` read as `forbidden`.
    pub fn task_support(&self) -> TaskSupport {
        self.execution
            .as_ref()
            .map(ToolExecution::effective_task_support)
            .unwrap_or_default()
    }
}

/// The `params` of `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// The tool to call.
    pub name: String,
    /// The tool's arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Present when the caller wants the call run as a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// **Our extension (rs.mcp-tasks), not the spec's** (the shape SEP-3182 proposed).
    /// A key of 1 to 255 bytes that makes a call creating a task (with `task`) idempotent: the
    /// server creates at most one task per caller and key for the task's TTL. A repeat
    /// with the same tool and arguments answers with that task as it is now; one with
    /// other arguments is -32602. SDKs that drop unknown params may send it as
    /// `_meta.idempotencyKey` instead (both present must be equal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub idempotency_key: Option<String>,
    /// Request metadata (e.g. `progressToken`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// What a tool call returned (2025-11-25 shape, no `resultType`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// A structured result matching the tool's `outputSchema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<JsonObject>,
    /// `true` when the tool itself reports a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The result of `tools/list`: one page of tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
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
    /// `tools/list`: list the server's tools.
    ListTools, super::methods::TOOLS_LIST, optional Option<PaginatedRequestParams> => ListToolsResult
);
request!(
    /// `tools/call`: call a tool. With `task`, the answer is a `CreateTaskResult` instead
    /// (read the response as [`CallToolResponse`](super::CallToolResponse)).
    CallTool, super::methods::TOOLS_CALL, CallToolRequestParams => CallToolResult
);
notification!(
    /// `notifications/tools/list_changed`: the tool list changed.
    ToolListChanged, super::methods::NOTIFICATIONS_TOOLS_LIST_CHANGED, optional Option<NotificationParams>
);

/// A `tools/list` request with its envelope.
pub type ListToolsRequest = TypedRequest<ListTools>;
/// A `tools/call` request with its envelope.
pub type CallToolRequest = TypedRequest<CallTool>;
/// A `notifications/tools/list_changed` notification with its envelope.
pub type ToolListChangedNotification = TypedNotification<ToolListChanged>;
/// A successful response to `tools/list`.
pub type ListToolsResultResponse = TypedResultResponse<ListTools>;
