//! Tool pieces shared by both revisions. (`Tool` itself differs between revisions.)

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// Hints about a tool's behaviour. They are claims made by the server, not guarantees:
/// don't base security decisions on them unless the server is trusted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// A change it makes may destroy something (default true; meaningful when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world of outside entities (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}
