//! Content blocks: the text, images, audio and resources that prompts, tool results and
//! sampling messages carry.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{Annotations, Icon};
use super::resource::TextOrBlobResourceContents;
use crate::JsonObject;
use crate::meta::Meta;

crate::const_tag!(
    /// The `"type": "text"` tag of [`TextContent`].
    TextTag = "text"
);
crate::const_tag!(
    /// The `"type": "image"` tag of [`ImageContent`].
    ImageTag = "image"
);
crate::const_tag!(
    /// The `"type": "audio"` tag of [`AudioContent`].
    AudioTag = "audio"
);
crate::const_tag!(
    /// The `"type": "resource_link"` tag of [`ResourceLink`].
    ResourceLinkTag = "resource_link"
);
crate::const_tag!(
    /// The `"type": "resource"` tag of [`EmbeddedResource`].
    ResourceTag = "resource"
);

/// Plain text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// Always `"text"`.
    #[serde(rename = "type")]
    pub r#type: TextTag,
    /// The text.
    pub text: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl TextContent {
    /// A text block with no annotations.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            text: text.into(),
            ..Default::default()
        }
    }
}

/// An image, base64-encoded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Always `"image"`.
    #[serde(rename = "type")]
    pub r#type: ImageTag,
    /// The image bytes in base64.
    pub data: String,
    /// The image format, e.g. `image/png`.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ImageContent {
    /// An image from base64 `data` of type `mime_type`.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
            ..Default::default()
        }
    }
}

/// Audio, base64-encoded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// Always `"audio"`.
    #[serde(rename = "type")]
    pub r#type: AudioTag,
    /// The audio bytes in base64.
    pub data: String,
    /// The audio format, e.g. `audio/wav`.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl AudioContent {
    /// Audio from base64 `data` of type `mime_type`.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        AudioContent {
            data: data.into(),
            mime_type: mime_type.into(),
            ..Default::default()
        }
    }
}

/// A pointer to a resource the server can read, without its contents. Not necessarily
/// listed by `resources/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// Always `"resource_link"`.
    #[serde(rename = "type")]
    pub r#type: ResourceLinkTag,
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

impl ResourceLink {
    /// A link to `uri` called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink {
            uri: uri.into(),
            name: name.into(),
            ..Default::default()
        }
    }
}

/// A resource's contents placed inline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    /// Always `"resource"`.
    #[serde(rename = "type")]
    pub r#type: ResourceTag,
    /// The contents, as text or base64.
    pub resource: TextOrBlobResourceContents,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl EmbeddedResource {
    /// The given contents, embedded.
    pub fn new(resource: impl Into<TextOrBlobResourceContents>) -> Self {
        EmbeddedResource {
            r#type: ResourceTag,
            resource: resource.into(),
            annotations: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// Any content block, told apart by its `type` member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ContentBlock {
    /// `"type": "text"`.
    Text(TextContent),
    /// `"type": "image"`.
    Image(ImageContent),
    /// `"type": "audio"`.
    Audio(AudioContent),
    /// `"type": "resource_link"`.
    ResourceLink(ResourceLink),
    /// `"type": "resource"`.
    Resource(EmbeddedResource),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }

    /// The text, when this is a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl From<TextContent> for ContentBlock {
    fn from(c: TextContent) -> Self {
        ContentBlock::Text(c)
    }
}
impl From<ImageContent> for ContentBlock {
    fn from(c: ImageContent) -> Self {
        ContentBlock::Image(c)
    }
}
impl From<AudioContent> for ContentBlock {
    fn from(c: AudioContent) -> Self {
        ContentBlock::Audio(c)
    }
}
impl From<ResourceLink> for ContentBlock {
    fn from(c: ResourceLink) -> Self {
        ContentBlock::ResourceLink(c)
    }
}
impl From<EmbeddedResource> for ContentBlock {
    fn from(c: EmbeddedResource) -> Self {
        ContentBlock::Resource(c)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn content_blocks_round_trip_with_unknown_members() {
        let values = [
            json!({"type": "text", "text": "hi", "x-extra": [1, 2]}),
            json!({"type": "image", "data": "AAA=", "mimeType": "image/png", "annotations": {"priority": 0.5}}),
            json!({"type": "audio", "data": "AAA=", "mimeType": "audio/wav", "_meta": {"k": 1}}),
            json!({"type": "resource_link", "uri": "file:///a", "name": "a", "size": 3}),
            json!({"type": "resource", "resource": {"uri": "file:///b", "blob": "AAA="}}),
            json!({"type": "resource", "resource": {"uri": "file:///c", "text": "c", "mimeType": "text/plain"}}),
        ];
        for v in values {
            let block: ContentBlock = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&block).unwrap(), v);
        }
    }

    #[test]
    fn content_block_variant_follows_type() {
        let block: ContentBlock = serde_json::from_value(
            json!({"type": "resource", "resource": {"uri": "u", "blob": "AA=="}}),
        )
        .unwrap();
        let ContentBlock::Resource(r) = block else {
            panic!("wrong variant: {block:?}")
        };
        assert!(matches!(r.resource, TextOrBlobResourceContents::Blob(_)));
        assert!(
            serde_json::from_value::<ContentBlock>(json!({"type": "video", "text": "x"})).is_err()
        );
        assert!(
            serde_json::from_value::<TextContent>(json!({"type": "image", "text": "x"})).is_err()
        );
    }

    #[test]
    fn constructors_serialize_the_tag() {
        let v = serde_json::to_value(ContentBlock::text("hello")).unwrap();
        assert_eq!(v, json!({"type": "text", "text": "hello"}));
    }
}
