//! Notifications not tied to one feature: cancellation, progress, log messages, and the
//! tool list change.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::base::NotificationParams;
use super::meta::NotificationMeta;
use crate::JsonObject;
use crate::jsonrpc::RequestId;
use crate::method::TypedNotification;
use crate::types::{LoggingLevel, ProgressToken};

/// The params of `notifications/cancelled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The request to cancel.
    pub request_id: RequestId,
    /// Why, for logs or display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CancelledNotificationParams {
    /// Cancel `request_id`.
    pub fn new(request_id: impl Into<RequestId>, reason: Option<String>) -> Self {
        CancelledNotificationParams {
            request_id: request_id.into(),
            reason,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The params of `notifications/progress`.
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
    /// What is happening now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ProgressNotificationParams {
    /// `progress` (out of `total`) for the request with `token`.
    pub fn new(token: impl Into<ProgressToken>, progress: f64, total: Option<f64>) -> Self {
        ProgressNotificationParams {
            progress_token: token.into(),
            progress,
            total,
            message: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The params of `notifications/message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoggingMessageNotificationParams {
    /// The message's severity.
    pub level: LoggingLevel,
    /// The logger's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: any JSON value (required, may be `null`).
    pub data: Value,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl LoggingMessageNotificationParams {
    /// A log message `data` at `level`.
    pub fn new(level: LoggingLevel, data: impl Into<Value>) -> Self {
        LoggingMessageNotificationParams {
            level,
            logger: None,
            data: data.into(),
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

crate::notification!(
    /// `notifications/cancelled`: stop working on a request.
    Cancelled, "notifications/cancelled", CancelledNotificationParams
);
crate::notification!(
    /// `notifications/progress`: how far a request has got.
    Progress, "notifications/progress", ProgressNotificationParams
);
crate::notification!(
    /// `notifications/message`: a log message.
    LoggingMessage, "notifications/message", LoggingMessageNotificationParams
);
crate::notification!(
    /// `notifications/tools/list_changed`: the list of tools changed.
    ToolListChanged, "notifications/tools/list_changed", optional Option<NotificationParams>
);

/// A `notifications/cancelled` notification.
pub type CancelledNotification = TypedNotification<Cancelled>;
/// A `notifications/progress` notification.
pub type ProgressNotification = TypedNotification<Progress>;
/// A `notifications/message` notification.
pub type LoggingMessageNotification = TypedNotification<LoggingMessage>;
/// A `notifications/tools/list_changed` notification.
pub type ToolListChangedNotification = TypedNotification<ToolListChanged>;
