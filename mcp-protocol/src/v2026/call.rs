//! `tools/call`: the request, its params and the tool's result.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::base::ResultType;
use super::meta::{RequestMeta, ResultMeta};
use super::mrtr::{InputRequiredOr, InputResponses};
use crate::JsonObject;
use crate::method::{TypedRequest, TypedResultResponse};
use crate::types::ContentBlock;

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
    /// **Our extension (rs.mcp-tasks), not the spec's** (the shape SEP-3182 proposed).
    /// A key of 1 to 255 bytes that makes a call creating a task idempotent: the
    /// server creates at most one task per caller and key for the task's TTL. A repeat
    /// with the same tool and arguments answers with that task as it is now; one with
    /// other arguments is -32602. SDKs that drop unknown params may send it as
    /// `_meta.idempotencyKey` instead (both present must be equal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub idempotency_key: Option<String>,
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

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult::new(vec![ContentBlock::text(text)])
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
    /// `tools/call`: run a tool. The server may first ask for client input.
    CallTool, "tools/call", CallToolRequestParams => InputRequiredOr<CallToolResult>
);

/// A `tools/call` request.
pub type CallToolRequest = TypedRequest<CallTool>;
/// The response to `tools/call`: a [`CallToolResult`] or an input-required result.
pub type CallToolResultResponse = TypedResultResponse<CallTool>;
