//! Typed views of the `_meta` objects that 2026-07-28 gives a shape: on requests (protocol
//! version, client capabilities, ...), on results (server info), on notifications
//! (subscription id). Unknown keys are kept in `extra`.
//!
//! The serde names below must equal the constants in [`crate::meta`]; a unit test checks.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::capabilities::ClientCapabilities;
use crate::JsonObject;
use crate::jsonrpc::RequestId;
use crate::meta::PROTOCOL_VERSION_2026_07_28;
use crate::types::{Implementation, LoggingLevel, ProgressToken};

/// The `_meta` of every 2026-07-28 request: each request carries the protocol version and
/// the client's capabilities, since there is no session to remember them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "RequestMetaObject")]
pub struct RequestMeta {
    /// The protocol version this request is written in.
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    pub protocol_version: String,
    /// The client's capabilities for this request.
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    pub client_capabilities: ClientCapabilities,
    /// The client program sending the request.
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_info: Option<Implementation>,
    /// The least severe log level the client wants for this request.
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub log_level: Option<LoggingLevel>,
    /// Asks for progress notifications carrying this token.
    #[serde(
        rename = "progressToken",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub progress_token: Option<ProgressToken>,
    /// Other keys, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The spec's name for [`RequestMeta`].
pub type RequestMetaObject = RequestMeta;

impl RequestMeta {
    /// Request `_meta` for protocol version 2026-07-28 with these capabilities.
    pub fn new(client_capabilities: ClientCapabilities) -> Self {
        RequestMeta {
            protocol_version: PROTOCOL_VERSION_2026_07_28.to_owned(),
            client_capabilities,
            client_info: None,
            log_level: None,
            progress_token: None,
            extra: JsonObject::new(),
        }
    }

    /// The same, naming the client program.
    pub fn with_client_info(mut self, info: Implementation) -> Self {
        self.client_info = Some(info);
        self
    }

    /// The same, asking for progress notifications with `token`.
    pub fn with_progress_token(mut self, token: impl Into<ProgressToken>) -> Self {
        self.progress_token = Some(token.into());
        self
    }
}

impl Default for RequestMeta {
    fn default() -> Self {
        RequestMeta::new(ClientCapabilities::default())
    }
}

/// The `_meta` of a 2026-07-28 result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "ResultMetaObject")]
pub struct ResultMeta {
    /// The server program producing the result.
    #[serde(
        rename = "io.modelcontextprotocol/serverInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub server_info: Option<Implementation>,
    /// Other keys, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The spec's name for [`ResultMeta`].
pub type ResultMetaObject = ResultMeta;

/// The `_meta` of a 2026-07-28 notification.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "NotificationMetaObject")]
pub struct NotificationMeta {
    /// The id of the `subscriptions/listen` request this notification is delivered on.
    #[serde(
        rename = "io.modelcontextprotocol/subscriptionId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub subscription_id: Option<RequestId>,
    /// Other keys, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The spec's name for [`NotificationMeta`].
pub type NotificationMetaObject = NotificationMeta;

/// The `_meta` of a `subscriptions/listen` result: names the subscription it ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "SubscriptionsListenResultMetaObject")]
pub struct SubscriptionsListenResultMeta {
    /// The id of the `subscriptions/listen` request.
    #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
    pub subscription_id: RequestId,
    /// The server program producing the result.
    #[serde(
        rename = "io.modelcontextprotocol/serverInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub server_info: Option<Implementation>,
    /// Other keys, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The spec's name for [`SubscriptionsListenResultMeta`].
pub type SubscriptionsListenResultMetaObject = SubscriptionsListenResultMeta;

impl SubscriptionsListenResultMeta {
    /// `_meta` for the subscription opened by request `subscription_id`.
    pub fn new(subscription_id: RequestId) -> Self {
        SubscriptionsListenResultMeta {
            subscription_id,
            server_info: None,
            extra: JsonObject::new(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::meta;

    #[test]
    fn serde_names_match_meta_constants() {
        let m = RequestMeta::new(ClientCapabilities::default())
            .with_client_info(Implementation::new("c", "1"))
            .with_progress_token(7);
        let m = RequestMeta {
            log_level: Some(LoggingLevel::Info),
            ..m
        };
        let v = serde_json::to_value(&m).unwrap();
        for key in [
            meta::PROTOCOL_VERSION,
            meta::CLIENT_CAPABILITIES,
            meta::CLIENT_INFO,
            meta::LOG_LEVEL,
            meta::PROGRESS_TOKEN,
        ] {
            assert!(v.get(key).is_some(), "{key} missing from {v}");
        }
        let r = serde_json::to_value(ResultMeta {
            server_info: Some(Implementation::new("s", "1")),
            ..Default::default()
        })
        .unwrap();
        assert!(r.get(meta::SERVER_INFO).is_some());
        let n = serde_json::to_value(NotificationMeta {
            subscription_id: Some(1.into()),
            ..Default::default()
        })
        .unwrap();
        assert!(n.get(meta::SUBSCRIPTION_ID).is_some());
    }

    #[test]
    fn request_meta_keeps_unknown_keys() {
        let v = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"roots": {}, "x-cap": {"a": 1}},
            "io.modelcontextprotocol/tasks/whatever": {"k": [1, 2]},
            "com.example/trace": "abc",
            "progressToken": "p1"
        });
        let m: RequestMeta = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(m.progress_token, Some(ProgressToken::String("p1".into())));
        assert_eq!(m.extra["com.example/trace"], json!("abc"));
        assert!(
            m.extra
                .contains_key("io.modelcontextprotocol/tasks/whatever")
        );
        assert_eq!(serde_json::to_value(&m).unwrap(), v);
    }

    #[test]
    fn request_meta_requires_version_and_capabilities() {
        let v = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        assert!(serde_json::from_value::<RequestMeta>(v).is_err());
    }
}
