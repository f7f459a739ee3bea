//! The error shapes 2026-07-28 names. The JSON-RPC standard errors (`ParseError`, ...) are
//! error *objects* (`{code, message, data?}`); the MCP-specific ones
//! (`HeaderMismatchError`, ...) are whole error *responses*, as the spec defines them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::capabilities::ClientCapabilities;
use crate::JsonObject;
use crate::error_codes;
use crate::jsonrpc::{ErrorObject, JsonRpcErrorResponse, RequestId, Version};
use crate::types::ConstCode;

/// Flattens a typed error object into a plain [`ErrorObject`] (members beyond
/// `code`/`message`/`data` are dropped; JSON-RPC defines none).
fn to_error_object(code: i64, message: String, data: Option<Value>) -> ErrorObject {
    ErrorObject {
        code,
        message,
        data,
    }
}

macro_rules! standard_error {
    ($(#[$m:meta])* $name:ident = $code:path) => {
        $(#[$m])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
        pub struct $name {
            /// The fixed error code.
            pub code: ConstCode<{ $code }>,
            /// A short description.
            pub message: String,
            /// More about the error, as the sender sees fit.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub data: Option<Value>,
            /// Members this crate does not know about, kept as they came.
            #[serde(flatten)]
            pub extra: JsonObject,
        }

        impl $name {
            /// This error with `message` and no data.
            pub fn new(message: impl Into<String>) -> Self {
                $name { message: message.into(), ..Default::default() }
            }
        }

        impl From<$name> for ErrorObject {
            fn from(e: $name) -> Self {
                to_error_object($code, e.message, e.data)
            }
        }
    };
}

standard_error!(
    /// The JSON-RPC error object for invalid JSON (-32700).
    ParseError = error_codes::PARSE_ERROR
);
standard_error!(
    /// The JSON-RPC error object for a message that is not a valid request (-32600).
    InvalidRequestError = error_codes::INVALID_REQUEST
);
standard_error!(
    /// The JSON-RPC error object for an unknown or unavailable method (-32601).
    MethodNotFoundError = error_codes::METHOD_NOT_FOUND
);
standard_error!(
    /// The JSON-RPC error object for bad params (-32602).
    InvalidParamsError = error_codes::INVALID_PARAMS
);
standard_error!(
    /// The JSON-RPC error object for a failure inside the receiver (-32603).
    InternalError = error_codes::INTERNAL_ERROR
);

/// The error object of a [`HeaderMismatchError`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HeaderMismatchErrorObject {
    /// Always -32020.
    pub code: ConstCode<{ error_codes::HEADER_MISMATCH }>,
    /// Which header disagreed with the body.
    pub message: String,
    /// More about the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `data` of a missing-capability error: the capabilities the request needs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MissingRequiredClientCapabilityData {
    /// The capabilities the client must declare for this request.
    pub required_capabilities: ClientCapabilities,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The error object of a [`MissingRequiredClientCapabilityError`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MissingRequiredClientCapabilityErrorObject {
    /// Always -32021.
    pub code: ConstCode<{ error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY }>,
    /// A short description.
    pub message: String,
    /// The capabilities needed.
    pub data: MissingRequiredClientCapabilityData,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `data` of an unsupported-version error: what was asked for and what is offered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnsupportedProtocolVersionData {
    /// The version the request named.
    pub requested: String,
    /// The versions the server speaks.
    pub supported: Vec<String>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The error object of an [`UnsupportedProtocolVersionError`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UnsupportedProtocolVersionErrorObject {
    /// Always -32022.
    pub code: ConstCode<{ error_codes::UNSUPPORTED_PROTOCOL_VERSION }>,
    /// A short description.
    pub message: String,
    /// The requested and supported versions.
    pub data: UnsupportedProtocolVersionData,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

macro_rules! error_response {
    ($(#[$m:meta])* $name:ident($object:ty), |$e:ident| $to_object:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
        pub struct $name {
            /// `"2.0"`.
            pub jsonrpc: Version,
            /// The failed request's id; absent when it could not be read.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub id: Option<RequestId>,
            /// The error.
            pub error: $object,
            /// Members this crate does not know about, kept as they came.
            #[serde(flatten)]
            pub extra: JsonObject,
        }

        impl $name {
            /// The response to request `id` carrying `error`.
            pub fn new(id: Option<RequestId>, error: $object) -> Self {
                $name { jsonrpc: Version, id, error, extra: JsonObject::new() }
            }
        }

        impl From<$object> for ErrorObject {
            fn from($e: $object) -> Self {
                $to_object
            }
        }

        impl From<$name> for JsonRpcErrorResponse {
            fn from(r: $name) -> Self {
                JsonRpcErrorResponse { jsonrpc: Version, id: r.id, error: r.error.into() }
            }
        }
    };
}

error_response!(
    /// The error response when an HTTP routing header (e.g. `Mcp-Method`) disagrees with
    /// the body (-32020).
    HeaderMismatchError(HeaderMismatchErrorObject),
    |e| to_error_object(error_codes::HEADER_MISMATCH, e.message, e.data)
);
error_response!(
    /// The error response when a request needs a client capability its `_meta` did not
    /// declare (-32021).
    MissingRequiredClientCapabilityError(MissingRequiredClientCapabilityErrorObject),
    |e| to_error_object(
        error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        e.message,
        serde_json::to_value(e.data).ok(),
    )
);
error_response!(
    /// The error response when the server does not speak the request's protocol version
    /// (-32022).
    UnsupportedProtocolVersionError(UnsupportedProtocolVersionErrorObject),
    |e| to_error_object(error_codes::UNSUPPORTED_PROTOCOL_VERSION, e.message, serde_json::to_value(e.data).ok())
);
