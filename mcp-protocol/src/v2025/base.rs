//! Params and results that many 2025-11-25 methods share: bare `_meta` params,
//! pagination, and the empty result.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::JsonObject;
use crate::meta::Meta;

/// Params that carry nothing but `_meta` (e.g. `ping`, `roots/list`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequestParams {
    /// Request metadata (e.g. `progressToken`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Notification params that carry nothing but `_meta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The params of a list method: an optional cursor.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaginatedRequestParams {
    /// Where to continue: the `nextCursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl PaginatedRequestParams {
    /// Params asking for the page after `cursor`.
    pub fn after(cursor: impl Into<String>) -> Self {
        PaginatedRequestParams {
            cursor: Some(cursor.into()),
            ..Default::default()
        }
    }
}

/// A result with no content beyond `_meta`: the answer to `ping`, `logging/setLevel`,
/// `resources/subscribe`, ...
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EmptyResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}
