//! Prompts: `prompts/list` and `prompts/get`, and their list-changed notification.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::base::{CacheScope, NotificationParams, PaginatedRequestParams, ResultType};
use super::meta::{RequestMeta, ResultMeta};
use super::mrtr::{InputRequiredOr, InputResponses};
use crate::JsonObject;
use crate::method::{TypedNotification, TypedRequest, TypedResultResponse};
use crate::types::{Cursor, Prompt, PromptMessage};

/// One page of the server's prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// `"complete"`.
    pub result_type: ResultType,
    /// The prompts on this page.
    pub prompts: Vec<Prompt>,
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

impl ListPromptsResult {
    /// A complete last page holding `prompts`, private and not to be cached.
    pub fn new(prompts: Vec<Prompt>) -> Self {
        ListPromptsResult {
            prompts,
            cache_scope: Some(CacheScope::Private),
            ttl_ms: Some(0),
            result_type: ResultType::Complete,
            next_cursor: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The params of `prompts/get`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptRequestParams {
    /// Protocol version, client capabilities and the rest.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// The prompt to expand.
    pub name: String,
    /// Argument values by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
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

impl GetPromptRequestParams {
    /// Expand prompt `name`.
    pub fn new(meta: RequestMeta, name: impl Into<String>) -> Self {
        GetPromptRequestParams {
            meta,
            name: name.into(),
            ..Default::default()
        }
    }
}

/// An expanded prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult {
    /// `"complete"`.
    pub result_type: ResultType,
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl GetPromptResult {
    /// A complete result holding `messages`.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        GetPromptResult {
            messages,
            ..Default::default()
        }
    }
}

impl From<GetPromptResult> for InputRequiredOr<GetPromptResult> {
    fn from(r: GetPromptResult) -> Self {
        InputRequiredOr::Complete(r)
    }
}

crate::request!(
    /// `prompts/list`: one page of the server's prompts.
    ListPrompts, "prompts/list", PaginatedRequestParams => ListPromptsResult
);
crate::request!(
    /// `prompts/get`: expand a prompt. The server may first ask for client input.
    GetPrompt, "prompts/get", GetPromptRequestParams => InputRequiredOr<GetPromptResult>
);
crate::notification!(
    /// `notifications/prompts/list_changed`: the list of prompts changed.
    PromptListChanged, "notifications/prompts/list_changed", optional Option<NotificationParams>
);

/// A `prompts/list` request.
pub type ListPromptsRequest = TypedRequest<ListPrompts>;
/// The response to `prompts/list`.
pub type ListPromptsResultResponse = TypedResultResponse<ListPrompts>;
/// A `prompts/get` request.
pub type GetPromptRequest = TypedRequest<GetPrompt>;
/// The response to `prompts/get`: a [`GetPromptResult`] or an input-required result.
pub type GetPromptResultResponse = TypedResultResponse<GetPrompt>;
/// A `notifications/prompts/list_changed` notification.
pub type PromptListChangedNotification = TypedNotification<PromptListChanged>;
