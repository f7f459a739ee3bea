//! Resources: what a server can be asked to read, templates for them, their contents,
//! and the reference used to complete a template's arguments.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{Annotations, Icon};
use crate::JsonObject;
use crate::meta::Meta;

/// A resource the server can read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// The programmatic name.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is, for people and models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The resource's MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size of the raw contents in bytes, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons for the resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Resource {
    /// A resource at `uri` called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            ..Default::default()
        }
    }
}

/// A family of resources described by an RFC 6570 URI template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// The programmatic name.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resources are, for people and models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type shared by every matching resource, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons for the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResourceTemplate {
    /// A template `uri_template` called `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            ..Default::default()
        }
    }
}

/// The members every kind of resource contents has.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// The URI the contents were read from.
    pub uri: String,
    /// The contents' MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Resource contents that are text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// The URI the contents were read from.
    pub uri: String,
    /// The contents' MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl TextResourceContents {
    /// Text read from `uri`.
    pub fn new(uri: impl Into<String>, text: impl Into<String>) -> Self {
        TextResourceContents {
            uri: uri.into(),
            text: text.into(),
            ..Default::default()
        }
    }
}

/// Resource contents that are binary, base64-encoded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// The URI the contents were read from.
    pub uri: String,
    /// The contents' MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The bytes in base64.
    pub blob: String,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl BlobResourceContents {
    /// Base64 `blob` read from `uri`.
    pub fn new(uri: impl Into<String>, blob: impl Into<String>) -> Self {
        BlobResourceContents {
            uri: uri.into(),
            blob: blob.into(),
            ..Default::default()
        }
    }
}

/// Text or binary resource contents (the spec's inline
/// `TextResourceContents | BlobResourceContents`), told apart by `text` / `blob`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TextOrBlobResourceContents {
    /// Has `text`.
    Text(TextResourceContents),
    /// Has `blob`.
    Blob(BlobResourceContents),
}

impl TextOrBlobResourceContents {
    /// The URI the contents were read from.
    pub fn uri(&self) -> &str {
        match self {
            TextOrBlobResourceContents::Text(t) => &t.uri,
            TextOrBlobResourceContents::Blob(b) => &b.uri,
        }
    }
}

impl From<TextResourceContents> for TextOrBlobResourceContents {
    fn from(c: TextResourceContents) -> Self {
        TextOrBlobResourceContents::Text(c)
    }
}
impl From<BlobResourceContents> for TextOrBlobResourceContents {
    fn from(c: BlobResourceContents) -> Self {
        TextOrBlobResourceContents::Blob(c)
    }
}

crate::const_tag!(
    /// The `"type": "ref/resource"` tag of [`ResourceTemplateReference`].
    ResourceRefTag = "ref/resource"
);

/// Names a resource template, e.g. to complete one of its arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplateReference {
    /// Always `"ref/resource"`.
    #[serde(rename = "type")]
    pub r#type: ResourceRefTag,
    /// The URI or URI template.
    pub uri: String,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResourceTemplateReference {
    /// A reference to `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceTemplateReference {
            uri: uri.into(),
            ..Default::default()
        }
    }
}
