//! `subscriptions/listen`: one long-lived request on which the server delivers the
//! notifications the client asked for, acknowledged first by
//! `notifications/subscriptions/acknowledged`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::base::ResultType;
use super::meta::{NotificationMeta, RequestMeta, SubscriptionsListenResultMeta};
use crate::JsonObject;
use crate::method::{TypedNotification, TypedRequest, TypedResultResponse};

/// Which notifications a subscription covers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// Tool list changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// Prompt list changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// Resource list changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// Updates of these resource URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The params of `subscriptions/listen`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenRequestParams {
    /// Protocol version, client capabilities and the rest.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// What to listen for.
    pub notifications: SubscriptionFilter,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Sent when a subscription ends normally.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenResult {
    /// `"complete"`.
    pub result_type: ResultType,
    /// Names the subscription that ended.
    #[serde(rename = "_meta")]
    pub meta: SubscriptionsListenResultMeta,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SubscriptionsListenResult {
    /// The end of the subscription with this `_meta`.
    pub fn new(meta: SubscriptionsListenResultMeta) -> Self {
        SubscriptionsListenResult {
            result_type: ResultType::Complete,
            meta,
            extra: JsonObject::new(),
        }
    }
}

/// The params of `notifications/subscriptions/acknowledged`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// The notifications the server agreed to deliver.
    pub notifications: SubscriptionFilter,
    /// Notification metadata (the subscription id).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

crate::request!(
    /// `subscriptions/listen`: open a notification subscription.
    SubscriptionsListen, "subscriptions/listen", SubscriptionsListenRequestParams => SubscriptionsListenResult
);
crate::notification!(
    /// `notifications/subscriptions/acknowledged`: the server accepted a subscription.
    SubscriptionsAcknowledged, "notifications/subscriptions/acknowledged", SubscriptionsAcknowledgedNotificationParams
);

/// A `subscriptions/listen` request.
pub type SubscriptionsListenRequest = TypedRequest<SubscriptionsListen>;
/// The response that ends a `subscriptions/listen` request.
pub type SubscriptionsListenResultResponse = TypedResultResponse<SubscriptionsListen>;
/// A `notifications/subscriptions/acknowledged` notification.
pub type SubscriptionsAcknowledgedNotification = TypedNotification<SubscriptionsAcknowledged>;
