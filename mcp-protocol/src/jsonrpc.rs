//! JSON-RPC 2.0 envelopes: requests, notifications, responses and error objects.
//!
//! Ids keep their JSON type: `"1"` and `1` are different ids ([`RequestId`]). The
//! envelopes are generic over their payload so that a typed request such as
//! [`TypedRequest<CallTool>`](crate::method::TypedRequest) and an untyped frame
//! ([`JsonRpcRequest`] with a `serde_json` object) share one shape.

use std::borrow::Cow;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::JsonObject;

/// The only JSON-RPC version MCP speaks.
pub const JSONRPC_VERSION: &str = "2.0";

/// A request id: a string or an integer, never confused with each other.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id, e.g. `7`.
    Number(i64),
    /// A string id, e.g. `"7"` or `"req-abc"`.
    String(String),
}

impl JsonSchema for RequestId {
    fn schema_name() -> Cow<'static, str> {
        "RequestId".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A uniquely identifying ID for a request in JSON-RPC.",
            "type": ["string", "integer"]
        })
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

/// The `"jsonrpc": "2.0"` member. Deserializing any other value fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Version;

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(JSONRPC_VERSION)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v: Cow<'de, str> = Deserialize::deserialize(d)?;
        if v == JSONRPC_VERSION {
            Ok(Version)
        } else {
            Err(serde::de::Error::custom(format_args!(
                "unsupported jsonrpc version {v:?}, expected \"2.0\""
            )))
        }
    }
}

impl JsonSchema for Version {
    fn schema_name() -> Cow<'static, str> {
        "JSONRPCVersion".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "const": "2.0" })
    }
}

/// A request that expects a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "JSONRPCRequest")]
pub struct JsonRpcRequest<P = JsonObject> {
    /// Always `"2.0"`.
    pub jsonrpc: Version,
    /// The id the response will carry.
    pub id: RequestId,
    /// The method to invoke, e.g. `tasks/get`.
    pub method: String,
    /// The method's parameters, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

/// A notification, which does not expect a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "JSONRPCNotification")]
pub struct JsonRpcNotification<P = JsonObject> {
    /// Always `"2.0"`.
    pub jsonrpc: Version,
    /// The method of the notification, e.g. `notifications/cancelled`.
    pub method: String,
    /// The notification's parameters, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

/// A successful (non-error) response to a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "JSONRPCResultResponse")]
pub struct JsonRpcResultResponse<R = JsonObject> {
    /// Always `"2.0"`.
    pub jsonrpc: Version,
    /// The id of the request this answers.
    pub id: RequestId,
    /// The method's result.
    pub result: R,
}

/// A response that reports an error.
///
/// `id` is `None` (serialized as `null`) only when the request's id could not be read,
/// e.g. for a parse error (JSON-RPC 2.0, section 5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "JSONRPCErrorResponse")]
pub struct JsonRpcErrorResponse {
    /// Always `"2.0"`.
    pub jsonrpc: Version,
    /// The id of the request this answers; `null` when it could not be read.
    #[serde(default)]
    pub id: Option<RequestId>,
    /// What went wrong.
    pub error: ErrorObject,
}

/// Either kind of response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "JSONRPCResponse")]
pub enum JsonRpcResponse<R = JsonObject> {
    /// A successful response.
    Result(JsonRpcResultResponse<R>),
    /// An error response.
    Error(JsonRpcErrorResponse),
}

/// Any JSON-RPC message that MCP exchanges (no batches).
///
/// Deserialization classifies by the members present: `method` + `id` is a request,
/// `method` alone a notification, `result` or `error` a response. This never looks at
/// the id's value.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "JSONRPCMessage")]
pub enum JsonRpcMessage {
    /// A request (`method` and `id`).
    Request(JsonRpcRequest),
    /// A notification (`method`, no `id`).
    Notification(JsonRpcNotification),
    /// A successful response (`result`).
    Result(JsonRpcResultResponse<Value>),
    /// An error response (`error`).
    Error(JsonRpcErrorResponse),
}

impl<'de> Deserialize<'de> for JsonRpcMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let value = JsonObject::deserialize(d)?;
        let v = Value::Object(value);
        let has = |k: &str| v.get(k).is_some();
        let msg = if has("method") {
            if has("id") {
                JsonRpcMessage::Request(serde_json::from_value(v).map_err(D::Error::custom)?)
            } else {
                JsonRpcMessage::Notification(serde_json::from_value(v).map_err(D::Error::custom)?)
            }
        } else if has("error") {
            JsonRpcMessage::Error(serde_json::from_value(v).map_err(D::Error::custom)?)
        } else if has("result") {
            JsonRpcMessage::Result(serde_json::from_value(v).map_err(D::Error::custom)?)
        } else {
            return Err(D::Error::custom(
                "not a JSON-RPC message: no `method`, `result` or `error` member",
            ));
        };
        Ok(msg)
    }
}

/// A JSON-RPC error object: `{code, message, data?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Error")]
pub struct ErrorObject {
    /// The error type that occurred; see [`crate::error_codes`].
    pub code: i64,
    /// A short description of the error.
    pub message: String,
    /// Additional information about the error, defined by the sender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with a code and message and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error with `data` attached.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}
