//! Tools: `tools/list` and `tools/call`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::base::{CacheScope, PaginatedRequestParams, ResultType};
use super::meta::ResultMeta;
use crate::JsonObject;
use crate::meta::Meta;
use crate::method::{TypedRequest, TypedResultResponse};
use crate::types::{Cursor, Icon, ObjectTypeTag, ToolAnnotations};

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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
            result_type: ResultType::Complete,
            next_cursor: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

crate::request!(
    /// `tools/list`: one page of the server's tools.
    ListTools, "tools/list", PaginatedRequestParams => ListToolsResult
);

/// A `tools/list` request.
pub type ListToolsRequest = TypedRequest<ListTools>;
/// The response to `tools/list`.
pub type ListToolsResultResponse = TypedResultResponse<ListTools>;
