//! Resources in MCP 2025-11-25: listing, templates, reading, subscriptions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::base::{EmptyResult, NotificationParams, PaginatedRequestParams};
use crate::JsonObject;
use crate::meta::Meta;
use crate::method::{TypedNotification, TypedRequest, TypedResultResponse};
use crate::types::{Resource, ResourceTemplate, TextOrBlobResourceContents};
use crate::{notification, request};

/// The result of `resources/list`: one page of resources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// The resources on this page.
    pub resources: Vec<Resource>,
    /// The cursor of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The result of `resources/templates/list`: one page of resource templates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// The templates on this page.
    pub resource_templates: Vec<ResourceTemplate>,
    /// The cursor of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params that name one resource by URI: `resources/read`, `resources/subscribe`,
/// `resources/unsubscribe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRequestParams {
    /// The resource's URI.
    pub uri: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResourceRequestParams {
    /// Params naming `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceRequestParams {
            uri: uri.into(),
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The `params` of `resources/read`.
pub type ReadResourceRequestParams = ResourceRequestParams;
/// The `params` of `resources/subscribe`.
pub type SubscribeRequestParams = ResourceRequestParams;
/// The `params` of `resources/unsubscribe`.
pub type UnsubscribeRequestParams = ResourceRequestParams;

/// The result of `resources/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// The resource's contents (several for a directory-like resource).
    pub contents: Vec<TextOrBlobResourceContents>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `params` of `notifications/resources/updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUpdatedNotificationParams {
    /// The URI of the resource that changed (possibly a sub-resource of the subscribed one).
    pub uri: String,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

request!(
    /// `resources/list`: list the server's resources.
    ListResources, super::methods::RESOURCES_LIST, optional Option<PaginatedRequestParams> => ListResourcesResult
);
request!(
    /// `resources/templates/list`: list the server's resource templates.
    ListResourceTemplates, super::methods::RESOURCES_TEMPLATES_LIST, optional Option<PaginatedRequestParams> => ListResourceTemplatesResult
);
request!(
    /// `resources/read`: read a resource.
    ReadResource, super::methods::RESOURCES_READ, ReadResourceRequestParams => ReadResourceResult
);
request!(
    /// `resources/subscribe`: ask for `notifications/resources/updated` about a resource.
    Subscribe, super::methods::RESOURCES_SUBSCRIBE, SubscribeRequestParams => EmptyResult
);
request!(
    /// `resources/unsubscribe`: stop a subscription.
    Unsubscribe, super::methods::RESOURCES_UNSUBSCRIBE, UnsubscribeRequestParams => EmptyResult
);
notification!(
    /// `notifications/resources/list_changed`: the resource list changed.
    ResourceListChanged, super::methods::NOTIFICATIONS_RESOURCES_LIST_CHANGED, optional Option<NotificationParams>
);
notification!(
    /// `notifications/resources/updated`: a subscribed resource changed.
    ResourceUpdated, super::methods::NOTIFICATIONS_RESOURCES_UPDATED, ResourceUpdatedNotificationParams
);

/// A `resources/list` request with its envelope.
pub type ListResourcesRequest = TypedRequest<ListResources>;
/// A `resources/templates/list` request with its envelope.
pub type ListResourceTemplatesRequest = TypedRequest<ListResourceTemplates>;
/// A `resources/read` request with its envelope.
pub type ReadResourceRequest = TypedRequest<ReadResource>;
/// A `resources/subscribe` request with its envelope.
pub type SubscribeRequest = TypedRequest<Subscribe>;
/// A `resources/unsubscribe` request with its envelope.
pub type UnsubscribeRequest = TypedRequest<Unsubscribe>;
/// A `notifications/resources/list_changed` notification with its envelope.
pub type ResourceListChangedNotification = TypedNotification<ResourceListChanged>;
/// A `notifications/resources/updated` notification with its envelope.
pub type ResourceUpdatedNotification = TypedNotification<ResourceUpdated>;
/// A successful response to `resources/read`.
pub type ReadResourceResultResponse = TypedResultResponse<ReadResource>;
