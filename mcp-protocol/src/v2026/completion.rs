//! Completion (`completion/complete`): suggestions for a prompt's or resource template's
//! argument values.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::base::ResultType;
use super::meta::{RequestMeta, ResultMeta};
use crate::JsonObject;
use crate::method::{TypedRequest, TypedResultResponse};
use crate::types::{PromptReference, ResourceTemplateReference};

/// What is being completed: a prompt's or a resource template's argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CompleteReference {
    /// `"type": "ref/prompt"`.
    Prompt(PromptReference),
    /// `"type": "ref/resource"`.
    ResourceTemplate(ResourceTemplateReference),
}

/// The argument being completed and what has been typed so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompleteArgument {
    /// The argument's name.
    pub name: String,
    /// The partial value.
    pub value: String,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Values of other arguments that are already settled.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompleteContext {
    /// Settled argument values by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The params of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompleteRequestParams {
    /// Protocol version, client capabilities and the rest.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// The prompt or resource template.
    #[serde(rename = "ref")]
    pub r#ref: CompleteReference,
    /// The argument to complete.
    pub argument: CompleteArgument,
    /// Other arguments' values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The suggestions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Suggested values, at most 100.
    pub values: Vec<String>,
    /// How many suggestions there are in all, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than `values` holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The answer to `completion/complete`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// `"complete"`.
    pub result_type: ResultType,
    /// The suggestions.
    pub completion: Completion,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CompleteResult {
    /// A complete result suggesting `values`.
    pub fn new(values: Vec<String>) -> Self {
        CompleteResult {
            completion: Completion {
                values,
                ..Default::default()
            },
            ..Default::default()
        }
    }
}

crate::request!(
    /// `completion/complete`: suggest values for an argument.
    Complete, "completion/complete", CompleteRequestParams => CompleteResult
);

/// A `completion/complete` request.
pub type CompleteRequest = TypedRequest<Complete>;
/// The response to `completion/complete`.
pub type CompleteResultResponse = TypedResultResponse<Complete>;
