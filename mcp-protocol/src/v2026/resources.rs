//! Resources: `resources/list`, `resources/templates/list`, `resources/read`, and the
//! notifications about them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::base::{CacheScope, NotificationParams, PaginatedRequestParams, ResultType};
use super::meta::{NotificationMeta, RequestMeta, ResultMeta};
use super::mrtr::{InputRequiredOr, InputResponses};
use crate::JsonObject;
use crate::method::{TypedNotification, TypedRequest, TypedResultResponse};
use crate::types::{Cursor, Resource, ResourceTemplate, TextOrBlobResourceContents};

/// One page of the server's resources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// `"complete"`.
    pub result_type: ResultType,
    /// The resources on this page.
    pub resources: Vec<Resource>,
    /// Where the next page starts; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Who may cache this page.. Required by the schema; `None` only for input from a peer that
    /// left it out (constructors fill it in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// How long this page stays fresh, in milliseconds.. Required by the schema; `None` only for input from a peer
    /// that left it out (constructors fill it in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ListResourcesResult {
    /// A complete last page holding `resources`, private and not to be cached.
    pub fn new(resources: Vec<Resource>) -> Self {
        ListResourcesResult {
            resources,
            cache_scope: Some(CacheScope::Private),
            ttl_ms: Some(0),
            result_type: ResultType::Complete,
            next_cursor: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// One page of the server's resource templates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// `"complete"`.
    pub result_type: ResultType,
    /// The templates on this page.
    pub resource_templates: Vec<ResourceTemplate>,
    /// Where the next page starts; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Who may cache this page.. Required by the schema; `None` only for input from a peer that
    /// left it out (constructors fill it in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// How long this page stays fresh, in milliseconds.. Required by the schema; `None` only for input from a peer
    /// that left it out (constructors fill it in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ListResourceTemplatesResult {
    /// A complete last page holding `templates`, private and not to be cached.
    pub fn new(templates: Vec<ResourceTemplate>) -> Self {
        ListResourceTemplatesResult {
            resource_templates: templates,
            cache_scope: Some(CacheScope::Private),
            ttl_ms: Some(0),
            result_type: ResultType::Complete,
            next_cursor: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The params of a request about one resource: `_meta` and `uri`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRequestParams {
    /// Protocol version, client capabilities and the rest.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// The resource's URI.
    pub uri: String,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The params of `resources/read`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceRequestParams {
    /// Protocol version, client capabilities and the rest.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// The resource to read.
    pub uri: String,
    /// Answers to the server's input requests, when retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The server's `requestState`, when retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ReadResourceRequestParams {
    /// Read `uri`.
    pub fn new(meta: RequestMeta, uri: impl Into<String>) -> Self {
        ReadResourceRequestParams {
            meta,
            uri: uri.into(),
            ..Default::default()
        }
    }
}

/// A resource's contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// `"complete"`.
    pub result_type: ResultType,
    /// The contents (several when the URI names a collection).
    pub contents: Vec<TextOrBlobResourceContents>,
    /// Who may cache the contents.. Required by the schema; `None` only for input from a peer that
    /// left it out (constructors fill it in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// How long the contents stay fresh, in milliseconds.. Required by the schema; `None` only for input from a peer
    /// that left it out (constructors fill it in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ReadResourceResult {
    /// A complete result holding `contents`, private and not to be cached.
    pub fn new(contents: Vec<TextOrBlobResourceContents>) -> Self {
        ReadResourceResult {
            contents,
            cache_scope: Some(CacheScope::Private),
            ttl_ms: Some(0),
            result_type: ResultType::Complete,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

impl From<ReadResourceResult> for InputRequiredOr<ReadResourceResult> {
    fn from(r: ReadResourceResult) -> Self {
        InputRequiredOr::Complete(r)
    }
}

/// The params of `notifications/resources/updated`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUpdatedNotificationParams {
    /// The resource that changed (possibly a sub-resource of the one subscribed to).
    pub uri: String,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResourceUpdatedNotificationParams {
    /// `uri` changed.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceUpdatedNotificationParams {
            uri: uri.into(),
            ..Default::default()
        }
    }
}

crate::request!(
    /// `resources/list`: one page of the server's resources.
    ListResources, "resources/list", PaginatedRequestParams => ListResourcesResult
);
crate::request!(
    /// `resources/templates/list`: one page of the server's resource templates.
    ListResourceTemplates, "resources/templates/list", PaginatedRequestParams => ListResourceTemplatesResult
);
crate::request!(
    /// `resources/read`: read a resource. The server may first ask for client input.
    ReadResource, "resources/read", ReadResourceRequestParams => InputRequiredOr<ReadResourceResult>
);
crate::notification!(
    /// `notifications/resources/list_changed`: the list of resources changed.
    ResourceListChanged, "notifications/resources/list_changed", optional Option<NotificationParams>
);
crate::notification!(
    /// `notifications/resources/updated`: a subscribed resource changed.
    ResourceUpdated, "notifications/resources/updated", ResourceUpdatedNotificationParams
);

/// A `resources/list` request.
pub type ListResourcesRequest = TypedRequest<ListResources>;
/// The response to `resources/list`.
pub type ListResourcesResultResponse = TypedResultResponse<ListResources>;
/// A `resources/templates/list` request.
pub type ListResourceTemplatesRequest = TypedRequest<ListResourceTemplates>;
/// The response to `resources/templates/list`.
pub type ListResourceTemplatesResultResponse = TypedResultResponse<ListResourceTemplates>;
/// A `resources/read` request.
pub type ReadResourceRequest = TypedRequest<ReadResource>;
/// The response to `resources/read`: a [`ReadResourceResult`] or an input-required result.
pub type ReadResourceResultResponse = TypedResultResponse<ReadResource>;
/// A `notifications/resources/list_changed` notification.
pub type ResourceListChangedNotification = TypedNotification<ResourceListChanged>;
/// A `notifications/resources/updated` notification.
pub type ResourceUpdatedNotification = TypedNotification<ResourceUpdated>;
