//! Tools: `tools/list` and `tools/call`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::base::{CacheScope, PaginatedRequestParams, ResultType};
use super::meta::{RequestMeta, ResultMeta};
use super::mrtr::{InputRequiredOr, InputResponses};
use crate::JsonObject;
use crate::meta::Meta;
use crate::method::{TypedRequest, TypedResultResponse};
use crate::types::{ContentBlock, Cursor, Icon, ObjectTypeTag, ToolAnnotations};

/// The JSON Schema of a tool's arguments: an object schema. Only `$schema` and `type` are
/// typed; the rest of the schema is in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolInputSchema {
    /// The JSON Schema dialect; 2020-12 when absent.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    #[serde(rename = "type")]
    pub r#type: ObjectTypeTag,
    /// The rest of the schema (`properties`, `required`, ...).
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ToolInputSchema {
    /// An object schema with these members besides `type` (e.g. `properties`).
    pub fn from_members(extra: JsonObject) -> Self {
        ToolInputSchema {
            schema: None,
            r#type: ObjectTypeTag,
            extra,
        }
    }
}

/// The JSON Schema of a tool's `structuredContent`. Any schema; only `$schema` is typed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolOutputSchema {
    /// The JSON Schema dialect; 2020-12 when absent.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// The rest of the schema.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A tool the server offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The programmatic name, used in `tools/call`.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for people and models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The schema of the arguments.
    pub input_schema: ToolInputSchema,
    /// The schema of `structuredContent` in results, if the tool produces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<ToolOutputSchema>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons for the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Tool {
    /// A tool called `name` taking arguments described by `input_schema`.
    pub fn new(name: impl Into<String>, input_schema: ToolInputSchema) -> Self {
        Tool {
            name: name.into(),
            input_schema,
            ..Default::default()
        }
    }
}

/// One page of the server's tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// `"complete"`.
    pub result_type: ResultType,
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// Where the next page starts; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Who may cache this page.. Required by the schema; `None` only for input from a peer that
    /// left it out (constructors fill it in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// How long this page stays fresh, in milliseconds.. Required by the schema; `None` only for input from a peer
    /// that left it out (constructors fill it in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ListToolsResult {
    /// A complete last page holding `tools`, private and not to be cached.
    pub fn new(tools: Vec<Tool>) -> Self {
        ListToolsResult {
            tools,
            cache_scope: Some(CacheScope::Private),
            ttl_ms: Some(0),
            ..Default::default()
        }
    }
}

/// The params of `tools/call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// Protocol version, client capabilities and the rest.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// The tool to call.
    pub name: String,
    /// The arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Answers to the server's input requests, when retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The server's `requestState`, when retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CallToolRequestParams {
    /// A call of tool `name` with `arguments`.
    pub fn new(meta: RequestMeta, name: impl Into<String>, arguments: Option<JsonObject>) -> Self {
        CallToolRequestParams {
            meta,
            name: name.into(),
            arguments,
            ..Default::default()
        }
    }
}

/// What a tool call produced. Tool failures are reported here with `isError: true`, not
/// as JSON-RPC errors, so that the model can see them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// `"complete"`.
    pub result_type: ResultType,
    /// The output as content blocks.
    pub content: Vec<ContentBlock>,
    /// The output as structured data, matching the tool's output schema if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CallToolResult {
    /// A successful result with `content`.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        CallToolResult {
            content,
            ..Default::default()
        }
    }

    /// A failed result with one text block explaining why.
    pub fn error(message: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(message)],
            is_error: Some(true),
            ..Default::default()
        }
    }
}

impl From<CallToolResult> for InputRequiredOr<CallToolResult> {
    fn from(r: CallToolResult) -> Self {
        InputRequiredOr::Complete(r)
    }
}

crate::request!(
    /// `tools/list`: one page of the server's tools.
    ListTools, "tools/list", PaginatedRequestParams => ListToolsResult
);
crate::request!(
    /// `tools/call`: run a tool. The server may first ask for client input.
    CallTool, "tools/call", CallToolRequestParams => InputRequiredOr<CallToolResult>
);

/// A `tools/list` request.
pub type ListToolsRequest = TypedRequest<ListTools>;
/// The response to `tools/list`.
pub type ListToolsResultResponse = TypedResultResponse<ListTools>;
/// A `tools/call` request.
pub type CallToolRequest = TypedRequest<CallTool>;
/// The response to `tools/call`: a [`CallToolResult`] or an input-required result.
pub type CallToolResultResponse = TypedResultResponse<CallTool>;
