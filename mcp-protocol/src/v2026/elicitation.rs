//! Elicitation (`elicitation/create`): the server asks the user for input, through a form
//! or by sending them to a URL. In 2026-07-28 it is an input request inside an MRTR
//! exchange; the answer is [`ElicitResult`](crate::types::ElicitResult).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::JsonObject;
use crate::method::MethodCall;
use crate::types::{ElicitResult, RequestedSchema};

crate::const_tag!(
    /// The `"mode": "form"` of [`ElicitRequestFormParams`].
    FormModeTag = "form"
);
crate::const_tag!(
    /// The `"mode": "url"` of [`ElicitRequestURLParams`].
    UrlModeTag = "url"
);

/// Ask the user to fill in a form.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// `"form"`; may be left out, since form is the default mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<FormModeTag>,
    /// What to tell the user.
    pub message: String,
    /// The form's fields.
    pub requested_schema: RequestedSchema,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitRequestFormParams {
    /// A form with `message` and fields `schema` (mode stated explicitly).
    pub fn new(message: impl Into<String>, schema: RequestedSchema) -> Self {
        ElicitRequestFormParams {
            mode: Some(FormModeTag),
            message: message.into(),
            requested_schema: schema,
            extra: JsonObject::new(),
        }
    }
}

/// Ask the user to visit a URL, e.g. to sign in, out of band.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestURLParams {
    /// Always `"url"`.
    pub mode: UrlModeTag,
    /// What to tell the user.
    pub message: String,
    /// The URL to open.
    pub url: String,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitRequestURLParams {
    /// Send the user to `url` with `message`.
    pub fn new(message: impl Into<String>, url: impl Into<String>) -> Self {
        ElicitRequestURLParams {
            mode: UrlModeTag,
            message: message.into(),
            url: url.into(),
            extra: JsonObject::new(),
        }
    }
}

/// The params of `elicitation/create`: URL mode (`mode: "url"`) or form mode (the default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ElicitRequestParams {
    /// `mode: "url"` (tried first, since form's `mode` is optional).
    Url(ElicitRequestURLParams),
    /// `mode: "form"` or no mode.
    Form(ElicitRequestFormParams),
}

impl From<ElicitRequestFormParams> for ElicitRequestParams {
    fn from(p: ElicitRequestFormParams) -> Self {
        ElicitRequestParams::Form(p)
    }
}

impl From<ElicitRequestURLParams> for ElicitRequestParams {
    fn from(p: ElicitRequestURLParams) -> Self {
        ElicitRequestParams::Url(p)
    }
}

crate::request!(
    /// `elicitation/create`: ask the user for input.
    Elicit, "elicitation/create", ElicitRequestParams => ElicitResult
);

/// An elicitation input request: `{method: "elicitation/create", params}`.
pub type ElicitRequest = MethodCall<Elicit>;
