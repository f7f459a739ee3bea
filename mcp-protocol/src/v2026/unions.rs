//! The message unions of 2026-07-28: every request a client sends, every notification
//! either side sends, every result a server returns, and the JSON-RPC envelope names.

use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::base::Result;
use super::call::{CallTool, CallToolResult};
use super::completion::{Complete, CompleteResult};
use super::discover::{Discover, DiscoverResult};
use super::mrtr::InputRequiredResult;
use super::notifications::{Cancelled, LoggingMessage, Progress, ToolListChanged};
use super::prompts::{
    GetPrompt, GetPromptResult, ListPrompts, ListPromptsResult, PromptListChanged,
};
use super::resources::{
    ListResourceTemplates, ListResourceTemplatesResult, ListResources, ListResourcesResult,
    ReadResource, ReadResourceResult, ResourceListChanged, ResourceUpdated,
};
use super::subscriptions::{
    SubscriptionsAcknowledged, SubscriptionsListen, SubscriptionsListenResult,
};
use super::tools::{ListTools, ListToolsResult};
use crate::method::{Notification, Request, TypedNotification, TypedRequest};

/// Declares an enum of typed envelopes that deserializes by looking at `method`.
macro_rules! method_union {
    ($(#[$m:meta])* $name:ident: $trait:ident => $envelope:ident { $($variant:ident),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
        #[serde(untagged)]
        pub enum $name {
            $(
                #[doc = concat!("A [`", stringify!($variant), "`] message.")]
                $variant($envelope<$variant>),
            )*
        }

        impl $name {
            /// The method name.
            pub fn method(&self) -> &'static str {
                match self {
                    $($name::$variant(_) => <$variant as $trait>::METHOD,)*
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let v = Value::deserialize(d)?;
                let method = v
                    .get("method")
                    .and_then(Value::as_str)
                    .ok_or_else(|| D::Error::custom("no string `method` member"))?
                    .to_owned();
                $(
                    if method == <$variant as $trait>::METHOD {
                        return serde_json::from_value(v).map($name::$variant).map_err(D::Error::custom);
                    }
                )*
                Err(D::Error::custom(format_args!(concat!("unknown method {:?} for ", stringify!($name)), method)))
            }
        }

        $(
            impl From<$envelope<$variant>> for $name {
                fn from(m: $envelope<$variant>) -> Self {
                    $name::$variant(m)
                }
            }
        )*
    };
}

method_union!(
    /// Any request a 2026-07-28 client sends.
    ClientRequest: Request => TypedRequest {
        Discover,
        ListResources,
        ListResourceTemplates,
        ReadResource,
        SubscriptionsListen,
        ListPrompts,
        GetPrompt,
        ListTools,
        CallTool,
        Complete,
    }
);

method_union!(
    /// Any notification a 2026-07-28 client sends.
    ClientNotification: Notification => TypedNotification { Cancelled }
);

method_union!(
    /// Any notification a 2026-07-28 server sends.
    ServerNotification: Notification => TypedNotification {
        Cancelled,
        Progress,
        ResourceListChanged,
        SubscriptionsAcknowledged,
        ResourceUpdated,
        PromptListChanged,
        ToolListChanged,
        LoggingMessage,
    }
);

/// A result a 2026-07-28 client returns. Clients answer server requests only inside MRTR
/// exchanges, so this is the base [`Result`].
pub type ClientResult = Result;

/// Any result a 2026-07-28 server returns.
///
/// Deserialization tries the variants in order; each specific result is recognised by
/// its required members, an input-required result by `resultType`, and anything else falls
/// back to the base [`Result`].
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ServerResult {
    /// `resultType: "input_required"`.
    InputRequired(InputRequiredResult),
    /// Answer to `server/discover`.
    Discover(DiscoverResult),
    /// Answer to `resources/list`.
    ListResources(ListResourcesResult),
    /// Answer to `resources/templates/list`.
    ListResourceTemplates(ListResourceTemplatesResult),
    /// Answer to `resources/read`.
    ReadResource(ReadResourceResult),
    /// End of `subscriptions/listen`.
    SubscriptionsListen(SubscriptionsListenResult),
    /// Answer to `prompts/list`.
    ListPrompts(ListPromptsResult),
    /// Answer to `prompts/get`.
    GetPrompt(GetPromptResult),
    /// Answer to `tools/list`.
    ListTools(ListToolsResult),
    /// Answer to `tools/call`.
    CallTool(CallToolResult),
    /// Answer to `completion/complete`.
    Complete(CompleteResult),
    /// Any other result.
    Result(Result),
}

/// [`ServerResult`] minus its input-required variant, in the order tried on input.
#[derive(Deserialize)]
#[serde(untagged)]
enum CompleteServerResult {
    Discover(DiscoverResult),
    ListResources(ListResourcesResult),
    ListResourceTemplates(ListResourceTemplatesResult),
    ReadResource(ReadResourceResult),
    ListPrompts(ListPromptsResult),
    GetPrompt(GetPromptResult),
    ListTools(ListToolsResult),
    CallTool(CallToolResult),
    Complete(CompleteResult),
    SubscriptionsListen(SubscriptionsListenResult),
    Result(Result),
}

impl<'de> Deserialize<'de> for ServerResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if v.get("resultType").and_then(Value::as_str) == Some("input_required") {
            return serde_json::from_value(v)
                .map(ServerResult::InputRequired)
                .map_err(D::Error::custom);
        }
        let r = serde_json::from_value(v).map_err(D::Error::custom)?;
        Ok(match r {
            CompleteServerResult::Discover(r) => ServerResult::Discover(r),
            CompleteServerResult::ListResources(r) => ServerResult::ListResources(r),
            CompleteServerResult::ListResourceTemplates(r) => {
                ServerResult::ListResourceTemplates(r)
            }
            CompleteServerResult::ReadResource(r) => ServerResult::ReadResource(r),
            CompleteServerResult::ListPrompts(r) => ServerResult::ListPrompts(r),
            CompleteServerResult::GetPrompt(r) => ServerResult::GetPrompt(r),
            CompleteServerResult::ListTools(r) => ServerResult::ListTools(r),
            CompleteServerResult::CallTool(r) => ServerResult::CallTool(r),
            CompleteServerResult::Complete(r) => ServerResult::Complete(r),
            CompleteServerResult::SubscriptionsListen(r) => ServerResult::SubscriptionsListen(r),
            CompleteServerResult::Result(r) => ServerResult::Result(r),
        })
    }
}

/// A JSON-RPC request of any method (spec name).
pub type JSONRPCRequest = crate::jsonrpc::JsonRpcRequest;
/// A JSON-RPC notification of any method (spec name).
pub type JSONRPCNotification = crate::jsonrpc::JsonRpcNotification;
/// A successful JSON-RPC response whose result is a 2026-07-28 [`Result`] (spec name).
pub type JSONRPCResultResponse = crate::jsonrpc::JsonRpcResultResponse<Result>;
/// A JSON-RPC error response (spec name).
pub type JSONRPCErrorResponse = crate::jsonrpc::JsonRpcErrorResponse;
/// A JSON-RPC response of either kind (spec name).
pub type JSONRPCResponse = crate::jsonrpc::JsonRpcResponse<Result>;
/// Any JSON-RPC message (spec name).
pub type JSONRPCMessage = crate::jsonrpc::JsonRpcMessage;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn client_request_dispatches_on_method() {
        let v = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}});
        let r: ClientRequest = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(r.method(), "tools/list");
        assert!(matches!(r, ClientRequest::ListTools(_)));
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
        let bad = json!({"jsonrpc": "2.0", "id": 1, "method": "nope", "params": {}});
        assert!(serde_json::from_value::<ClientRequest>(bad).is_err());
    }

    #[test]
    fn server_result_picks_the_specific_variant() {
        let cases = [
            (
                json!({"resultType": "input_required", "requestState": "s"}),
                "InputRequired",
            ),
            (json!({"resultType": "complete", "content": []}), "CallTool"),
            (
                json!({"resultType": "complete", "tools": [], "cacheScope": "public", "ttlMs": 0}),
                "ListTools",
            ),
            (
                json!({"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": 3}}),
                "SubscriptionsListen",
            ),
            (
                json!({"resultType": "task", "task": {"taskId": "t"}}),
                "Result",
            ),
        ];
        for (v, want) in cases {
            let r: ServerResult = serde_json::from_value(v.clone()).unwrap();
            let got = format!("{r:?}");
            assert!(got.starts_with(want), "{v} read as {got}");
            assert_eq!(serde_json::to_value(&r).unwrap(), v);
        }
    }
}
