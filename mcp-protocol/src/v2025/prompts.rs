//! Prompts, argument completion and logging in MCP 2025-11-25.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::base::{EmptyResult, NotificationParams, PaginatedRequestParams};
use crate::JsonObject;
use crate::meta::Meta;
use crate::method::{TypedNotification, TypedRequest};
use crate::types::{
    LoggingLevel, Prompt, PromptMessage, PromptReference, ResourceTemplateReference,
};
use crate::{notification, request};

/// The result of `prompts/list`: one page of prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// The prompts on this page.
    pub prompts: Vec<Prompt>,
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

/// The `params` of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptRequestParams {
    /// The prompt's name.
    pub name: String,
    /// Values for the prompt's arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult {
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The prompt's messages.
    pub messages: Vec<PromptMessage>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// What `completion/complete` completes: a prompt's or a resource template's argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CompletionReference {
    /// `"type": "ref/prompt"`.
    Prompt(PromptReference),
    /// `"type": "ref/resource"`.
    ResourceTemplate(ResourceTemplateReference),
}

/// The argument being completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompletionArgument {
    /// The argument's name.
    pub name: String,
    /// What the user typed so far.
    pub value: String,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Other arguments already filled in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompletionContext {
    /// Values of arguments resolved earlier, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `params` of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompleteRequestParams {
    /// The prompt or resource template.
    #[serde(rename = "ref")]
    pub r#ref: CompletionReference,
    /// The argument to complete.
    pub argument: CompletionArgument,
    /// Arguments already known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The suggestions in a [`CompleteResult`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Suggested values (at most 100).
    pub values: Vec<String>,
    /// How many values exist in all, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<i64>,
    /// Whether more values exist than were sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The result of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompleteResult {
    /// The suggestions.
    pub completion: Completion,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `params` of `logging/setLevel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SetLevelRequestParams {
    /// The least severe level the client wants to receive.
    pub level: LoggingLevel,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `params` of `notifications/message`: one log entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoggingMessageNotificationParams {
    /// The entry's severity.
    pub level: LoggingLevel,
    /// The logger's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The entry itself: any JSON value.
    pub data: serde_json::Value,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

request!(
    /// `prompts/list`: list the server's prompts.
    ListPrompts, super::methods::PROMPTS_LIST, optional Option<PaginatedRequestParams> => ListPromptsResult
);
request!(
    /// `prompts/get`: get a prompt with its arguments filled in.
    GetPrompt, super::methods::PROMPTS_GET, GetPromptRequestParams => GetPromptResult
);
request!(
    /// `completion/complete`: suggest values for an argument.
    Complete, super::methods::COMPLETION_COMPLETE, CompleteRequestParams => CompleteResult
);
request!(
    /// `logging/setLevel`: choose which log entries the server sends.
    SetLevel, super::methods::LOGGING_SET_LEVEL, SetLevelRequestParams => EmptyResult
);
notification!(
    /// `notifications/prompts/list_changed`: the prompt list changed.
    PromptListChanged, super::methods::NOTIFICATIONS_PROMPTS_LIST_CHANGED, optional Option<NotificationParams>
);
notification!(
    /// `notifications/message`: a log entry.
    LoggingMessage, super::methods::NOTIFICATIONS_MESSAGE, LoggingMessageNotificationParams
);

/// A `prompts/list` request with its envelope.
pub type ListPromptsRequest = TypedRequest<ListPrompts>;
/// A `prompts/get` request with its envelope.
pub type GetPromptRequest = TypedRequest<GetPrompt>;
/// A `completion/complete` request with its envelope.
pub type CompleteRequest = TypedRequest<Complete>;
/// A `logging/setLevel` request with its envelope.
pub type SetLevelRequest = TypedRequest<SetLevel>;
/// A `notifications/prompts/list_changed` notification with its envelope.
pub type PromptListChangedNotification = TypedNotification<PromptListChanged>;
/// A `notifications/message` notification with its envelope.
pub type LoggingMessageNotification = TypedNotification<LoggingMessage>;
