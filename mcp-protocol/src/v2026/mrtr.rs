//! Multi-round-trip requests (MRTR): a server that needs something from the client
//! (sampling, roots, elicitation) answers with an [`InputRequiredResult`] listing
//! `inputRequests`; the client retries the original request with `inputResponses` and the
//! opaque `requestState`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::base::ResultType;
use super::elicitation::{ElicitRequest, ElicitRequestParams};
use super::meta::{RequestMeta, ResultMeta};
use super::roots::ListRootsRequest;
use super::sampling::{CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult};
use crate::JsonObject;
use crate::method::MethodCall;
use crate::types::{ElicitResult, ListRootsResult};

/// One thing the server asks of the client: a `{method, params}` pair, no envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum InputRequest {
    /// `sampling/createMessage`.
    CreateMessage(CreateMessageRequest),
    /// `roots/list`.
    ListRoots(ListRootsRequest),
    /// `elicitation/create`.
    Elicit(ElicitRequest),
}

impl InputRequest {
    /// The method name.
    pub fn method(&self) -> &'static str {
        use crate::method::Request as _;
        match self {
            InputRequest::CreateMessage(_) => super::CreateMessage::METHOD,
            InputRequest::ListRoots(_) => super::ListRoots::METHOD,
            InputRequest::Elicit(_) => super::Elicit::METHOD,
        }
    }
}

impl From<CreateMessageRequestParams> for InputRequest {
    fn from(p: CreateMessageRequestParams) -> Self {
        InputRequest::CreateMessage(MethodCall::new(p))
    }
}

impl From<ElicitRequestParams> for InputRequest {
    fn from(p: ElicitRequestParams) -> Self {
        InputRequest::Elicit(MethodCall::new(p))
    }
}

/// The client's answer to one [`InputRequest`]: the bare result of that method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum InputResponse {
    /// Answer to `sampling/createMessage` (has `model`, `role`, `content`).
    CreateMessage(CreateMessageResult),
    /// Answer to `roots/list` (has `roots`).
    ListRoots(ListRootsResult),
    /// Answer to `elicitation/create` (has `action`).
    Elicit(ElicitResult),
}

macro_rules! string_map_newtype {
    ($(#[$m:meta])* $name:ident => $value:ty) => {
        $(#[$m])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(transparent)]
        pub struct $name(pub BTreeMap<String, $value>);

        impl std::ops::Deref for $name {
            type Target = BTreeMap<String, $value>;
            fn deref(&self) -> &Self::Target {
                &self.0
            }
        }

        impl std::ops::DerefMut for $name {
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.0
            }
        }

        impl<K: Into<String>> FromIterator<(K, $value)> for $name {
            fn from_iter<I: IntoIterator<Item = (K, $value)>>(iter: I) -> Self {
                $name(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
            }
        }
    };
}

string_map_newtype!(
    /// The server's requests for client input, by a key the server chooses.
    InputRequests => InputRequest
);
string_map_newtype!(
    /// The client's answers, under the keys of the matching [`InputRequests`].
    InputResponses => InputResponse
);

/// A result saying the server needs client input before it can finish the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// `"input_required"`.
    pub result_type: ResultType,
    /// What the client should answer, by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque server state to send back unchanged with the retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl InputRequiredResult {
    /// An input-required result asking for `requests`.
    pub fn new(requests: InputRequests) -> Self {
        InputRequiredResult {
            result_type: ResultType::InputRequired,
            input_requests: Some(requests),
            request_state: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// The same, with opaque `state` for the retry.
    pub fn with_request_state(mut self, state: impl Into<String>) -> Self {
        self.request_state = Some(state.into());
        self
    }
}

impl Default for InputRequiredResult {
    fn default() -> Self {
        InputRequiredResult::new(InputRequests::default())
    }
}

/// The params members of a request retried with client input: `inputResponses` and
/// `requestState` next to the usual `_meta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InputResponseRequestParams {
    /// Protocol version, client capabilities and the rest.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// The answers to the server's input requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The `requestState` from the input-required result, unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The result of a request that may need client input first: either an
/// [`InputRequiredResult`] (`resultType: "input_required"`) or the method's own result.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "InputRequiredOr{R}")]
pub enum InputRequiredOr<R> {
    /// The server needs client input; retry with the answers.
    InputRequired(InputRequiredResult),
    /// The method's result.
    Complete(R),
}

impl<R> InputRequiredOr<R> {
    /// The method's result, if this is one.
    pub fn complete(self) -> Option<R> {
        match self {
            InputRequiredOr::Complete(r) => Some(r),
            InputRequiredOr::InputRequired(_) => None,
        }
    }
}

impl<R> From<InputRequiredResult> for InputRequiredOr<R> {
    fn from(r: InputRequiredResult) -> Self {
        InputRequiredOr::InputRequired(r)
    }
}

impl<'de, R: DeserializeOwned> Deserialize<'de> for InputRequiredOr<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if v.get("resultType").and_then(Value::as_str) == Some(ResultType::InputRequired.as_str()) {
            serde_json::from_value(v)
                .map(InputRequiredOr::InputRequired)
                .map_err(D::Error::custom)
        } else {
            serde_json::from_value(v)
                .map(InputRequiredOr::Complete)
                .map_err(D::Error::custom)
        }
    }
}
