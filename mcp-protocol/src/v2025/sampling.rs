//! Sampling (`sampling/createMessage`, server to client) and roots (`roots/list`) in
//! MCP 2025-11-25. Sampling may be task-augmented with `task`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::base::{NotificationParams, RequestParams};
use super::tasks::TaskMetadata;
use super::tools::Tool;
use crate::JsonObject;
use crate::meta::Meta;
use crate::method::{TypedNotification, TypedRequest, TypedResultResponse};
use crate::types::{
    AudioContent, ContentBlock, ImageContent, ListRootsResult, ModelPreferences, Role, TextContent,
    ToolChoice, ToolResultTag, ToolUseContent,
};
use crate::{notification, request};

/// The result of a tool call, handed back to the model inside a sampling message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// Always `"tool_result"`.
    #[serde(rename = "type")]
    pub r#type: ToolResultTag,
    /// The `id` of the `tool_use` this answers.
    pub tool_use_id: String,
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// A structured result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<JsonObject>,
    /// `true` when the tool reported a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Content metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One piece of a sampling message, told apart by its `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SamplingMessageContentBlock {
    /// `"type": "text"`.
    Text(TextContent),
    /// `"type": "image"`.
    Image(ImageContent),
    /// `"type": "audio"`.
    Audio(AudioContent),
    /// `"type": "tool_use"`.
    ToolUse(ToolUseContent),
    /// `"type": "tool_result"`.
    ToolResult(ToolResultContent),
}

/// The `content` of a sampling message or result: one block or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // message-sized; boxing would only add indirection
pub enum SamplingContent {
    /// A single block.
    Single(SamplingMessageContentBlock),
    /// Several blocks.
    Multiple(Vec<SamplingMessageContentBlock>),
}

/// A message in a sampling conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SamplingMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: SamplingContent,
    /// Message metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Which MCP servers' context the client should add to the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum IncludeContext {
    /// None.
    None,
    /// The requesting server's.
    ThisServer,
    /// All connected servers'.
    AllServers,
}

/// The `params` of `sampling/createMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens to generate.
    pub max_tokens: i64,
    /// What the server would like in a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// A system prompt the client may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Which servers' context to include.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Sequences that stop generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata to pass through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model should choose tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Present when the server wants the sampling run as a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata (related-task when part of a task).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The result of `sampling/createMessage`: the model's message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Who speaks (normally `assistant`).
    pub role: Role,
    /// The generated content.
    pub content: SamplingContent,
    /// The model that was used.
    pub model: String,
    /// Why generation stopped (`endTurn`, `stopSequence`, `maxTokens`, `toolUse`, or other).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

request!(
    /// `sampling/createMessage`: ask the client to run an LLM.
    CreateMessage, super::methods::SAMPLING_CREATE_MESSAGE, CreateMessageRequestParams => CreateMessageResult
);
request!(
    /// `roots/list`: ask the client for its roots.
    ListRoots, super::methods::ROOTS_LIST, optional Option<RequestParams> => ListRootsResult
);
notification!(
    /// `notifications/roots/list_changed`: the client's roots changed.
    RootsListChanged, super::methods::NOTIFICATIONS_ROOTS_LIST_CHANGED, optional Option<NotificationParams>
);

/// A `sampling/createMessage` request with its envelope.
pub type CreateMessageRequest = TypedRequest<CreateMessage>;
/// A `roots/list` request with its envelope.
pub type ListRootsRequest = TypedRequest<ListRoots>;
/// A `notifications/roots/list_changed` notification with its envelope.
pub type RootsListChangedNotification = TypedNotification<RootsListChanged>;
/// A successful response to `sampling/createMessage`.
pub type CreateMessageResultResponse = TypedResultResponse<CreateMessage>;
