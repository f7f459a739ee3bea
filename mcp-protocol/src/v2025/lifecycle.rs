//! Session lifecycle and cross-cutting utilities of MCP 2025-11-25: `initialize`,
//! `notifications/initialized`, `ping`, `notifications/cancelled`, `notifications/progress`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::base::{EmptyResult, NotificationParams, RequestParams};
use super::capabilities::{ClientCapabilities, ServerCapabilities};
use crate::JsonObject;
use crate::jsonrpc::RequestId;
use crate::meta::Meta;
use crate::method::{TypedNotification, TypedRequest, TypedResultResponse};
use crate::types::{Implementation, ProgressToken};
use crate::{notification, request};

/// The `params` of `initialize`: what the client is and supports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequestParams {
    /// The protocol version the client wants (the latest it supports).
    pub protocol_version: String,
    /// The client's capabilities.
    pub capabilities: ClientCapabilities,
    /// The client software.
    pub client_info: Implementation,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The result of `initialize`: what the server is and supports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The protocol version the server will speak.
    pub protocol_version: String,
    /// The server's capabilities.
    pub capabilities: ServerCapabilities,
    /// The server software.
    pub server_info: Implementation,
    /// How to use the server, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `params` of `notifications/cancelled`: a request the sender no longer needs.
/// (Tasks are cancelled with `tasks/cancel`, never with this.)
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The id of the request to cancel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    /// Why, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `params` of `notifications/progress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token from the request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far; grows with each notification.
    pub progress: f64,
    /// The total, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// A human-readable description of the progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

request!(
    /// `initialize`: open a session.
    Initialize, super::methods::INITIALIZE, InitializeRequestParams => InitializeResult
);
request!(
    /// `ping`: check that the peer answers.
    Ping, super::methods::PING, optional Option<RequestParams> => EmptyResult
);
notification!(
    /// `notifications/initialized`: the client is ready for normal traffic.
    Initialized, super::methods::NOTIFICATIONS_INITIALIZED, optional Option<NotificationParams>
);
notification!(
    /// `notifications/cancelled`: the sender gives up on one of its requests.
    Cancelled, super::methods::NOTIFICATIONS_CANCELLED, CancelledNotificationParams
);
notification!(
    /// `notifications/progress`: progress of a long-running request.
    Progress, super::methods::NOTIFICATIONS_PROGRESS, ProgressNotificationParams
);

/// An `initialize` request with its envelope.
pub type InitializeRequest = TypedRequest<Initialize>;
/// A `ping` request with its envelope.
pub type PingRequest = TypedRequest<Ping>;
/// A `notifications/initialized` notification with its envelope.
pub type InitializedNotification = TypedNotification<Initialized>;
/// A `notifications/cancelled` notification with its envelope.
pub type CancelledNotification = TypedNotification<Cancelled>;
/// A `notifications/progress` notification with its envelope.
pub type ProgressNotification = TypedNotification<Progress>;
/// A successful response to `initialize`.
pub type InitializeResultResponse = TypedResultResponse<Initialize>;
