//! Elicitation in MCP 2025-11-25: form and URL mode (each may be task-augmented), the
//! completion notification of URL mode, and the -32042 error.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::tasks::TaskMetadata;
use crate::JsonObject;
use crate::jsonrpc::{ErrorObject, RequestId, Version};
use crate::meta::Meta;
use crate::method::{TypedNotification, TypedRequest, TypedResultResponse};
use crate::types::{ElicitResult, RequestedSchema};
use crate::{notification, request};

crate::const_tag!(
    /// The `"mode": "form"` of form-mode elicitation.
    FormModeTag = "form"
);
crate::const_tag!(
    /// The `"mode": "url"` of URL-mode elicitation.
    UrlModeTag = "url"
);
/// The `params` of a form-mode `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// `"form"`; may be left out, since form is the default mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<FormModeTag>,
    /// What to ask the user.
    pub message: String,
    /// The form's fields.
    pub requested_schema: RequestedSchema,
    /// Present when the server wants the elicitation run as a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata (related-task when part of a task).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `params` of a URL-mode `elicitation/create`: send the user to a URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestURLParams {
    /// Always `"url"`.
    pub mode: UrlModeTag,
    /// Why the user should open the URL.
    pub message: String,
    /// Identifies this elicitation in `notifications/elicitation/complete`.
    pub elicitation_id: String,
    /// The URL to open.
    pub url: String,
    /// Present when the server wants the elicitation run as a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata (related-task when part of a task).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `params` of `elicitation/create`, either mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ElicitRequestParams {
    /// `"mode": "url"`.
    Url(ElicitRequestURLParams),
    /// `"mode": "form"` or no mode.
    Form(ElicitRequestFormParams),
}

impl ElicitRequestParams {
    /// The `task` param, whichever the mode.
    pub fn task(&self) -> Option<&TaskMetadata> {
        match self {
            ElicitRequestParams::Url(p) => p.task.as_ref(),
            ElicitRequestParams::Form(p) => p.task.as_ref(),
        }
    }
}

/// The `params` of `notifications/elicitation/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleteNotificationParams {
    /// The finished URL-mode elicitation.
    pub elicitation_id: String,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

request!(
    /// `elicitation/create`: ask the client's user for input.
    Elicit, super::methods::ELICITATION_CREATE, ElicitRequestParams => ElicitResult
);
notification!(
    /// `notifications/elicitation/complete`: a URL-mode elicitation finished.
    ElicitationComplete, super::methods::NOTIFICATIONS_ELICITATION_COMPLETE, ElicitationCompleteNotificationParams
);

/// An `elicitation/create` request with its envelope.
pub type ElicitRequest = TypedRequest<Elicit>;
/// A `notifications/elicitation/complete` notification with its envelope.
pub type ElicitationCompleteNotification = TypedNotification<ElicitationComplete>;
/// A successful response to `elicitation/create`.
pub type ElicitResultResponse = TypedResultResponse<Elicit>;

/// The `data` of a -32042 error: the URL elicitations the user must complete first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct URLElicitationRequiredData {
    /// The elicitations to complete.
    pub elicitations: Vec<ElicitRequestURLParams>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The error response a server sends when a request needs URL-mode elicitations first
/// (code -32042).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct URLElicitationRequiredError {
    /// Always `"2.0"`.
    pub jsonrpc: Version,
    /// The failed request's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
    /// The error, with code -32042 and the elicitations as data.
    pub error: ErrorObject,
}

impl URLElicitationRequiredError {
    /// The error response for request `id`, listing `elicitations`.
    pub fn new(
        id: Option<RequestId>,
        message: impl Into<String>,
        elicitations: Vec<ElicitRequestURLParams>,
    ) -> Self {
        let data = URLElicitationRequiredData {
            elicitations,
            extra: JsonObject::new(),
        };
        let data = serde_json::to_value(data).unwrap_or(Value::Null);
        URLElicitationRequiredError {
            jsonrpc: Version,
            id,
            error: ErrorObject::new(crate::error_codes::URL_ELICITATION_REQUIRED, message)
                .with_data(data),
        }
    }

    /// The elicitations named in the error's data, if it has the expected shape.
    pub fn elicitations(&self) -> Option<Vec<ElicitRequestURLParams>> {
        let data = self.error.data.clone()?;
        serde_json::from_value::<URLElicitationRequiredData>(data)
            .ok()
            .map(|d| d.elicitations)
    }
}
