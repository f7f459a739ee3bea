//! Small pieces used across the protocol: roles, annotations, icons, implementation
//! info, log levels, progress tokens, cursors and roots.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::JsonObject;
use crate::meta::Meta;

/// Declares a zero-sized type for a string constant, such as the `"type": "text"` tag of
/// a content block: it serializes as that string and refuses any other on input. Its JSON
/// Schema is `{"type": "string", "const": ...}`, inlined.
///
/// `const_tag!(/// doc, TextTag = "text");`
#[macro_export]
macro_rules! const_tag {
    ($(#[$m:meta])* $name:ident = $value:literal) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl $name {
            /// The constant's string value.
            pub const VALUE: &'static str = $value;
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {
                s.serialize_str($value)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                let v: ::std::borrow::Cow<'de, str> = ::serde::Deserialize::deserialize(d)?;
                if v == $value {
                    Ok($name)
                } else {
                    Err(<D::Error as ::serde::de::Error>::custom(format_args!(
                        "expected {:?}, got {:?}",
                        $value, v
                    )))
                }
            }
        }

        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({ "type": "string", "const": $value })
            }
        }
    };
}

crate::const_tag!(
    /// The `"type": "object"` of object schemas (tool input schemas, elicitation forms).
    ObjectTypeTag = "object"
);

/// An integer constant, such as the fixed `code` of a specific error: serializes as `C`
/// and refuses any other number on input. JSON Schema `{"type": "integer", "const": C}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ConstCode<const C: i64>;

impl<const C: i64> ConstCode<C> {
    /// The constant's value.
    pub const VALUE: i64 = C;
}

impl<const C: i64> Serialize for ConstCode<C> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(C)
    }
}

impl<'de, const C: i64> Deserialize<'de> for ConstCode<C> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = i64::deserialize(d)?;
        if v == C {
            Ok(ConstCode)
        } else {
            Err(<D::Error as serde::de::Error>::custom(format_args!(
                "expected {C}, got {v}"
            )))
        }
    }
}

impl<const C: i64> JsonSchema for ConstCode<C> {
    fn schema_name() -> Cow<'static, str> {
        format!("ConstCode{C}").into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "integer", "const": C })
    }
}

/// Who a message or piece of content is meant for / comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human side of the conversation.
    User,
    /// The model.
    Assistant,
}

/// Hints to the client on how to use or display an object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the object is meant for (the user, the model, or both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When the underlying data last changed, as an ISO 8601 timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The background an icon is drawn for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IconTheme {
    /// For light backgrounds.
    Light,
    /// For dark backgrounds.
    Dark,
}

/// An icon a user interface may show, optionally with its sizes and theme.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// Where to fetch the icon: an HTTP(S) URL or a `data:` URI.
    pub src: String,
    /// The image's MIME type, when the source doesn't say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes the icon suits, as `"WxH"` or `"any"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// The background the icon is designed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Icon {
    /// An icon at `src` with nothing else said about it.
    pub fn new(src: impl Into<String>) -> Self {
        Icon {
            src: src.into(),
            ..Default::default()
        }
    }
}

/// The `icons` mixin: a list of icons for something displayable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Icons {
    /// The icons, in no particular order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `name` / `title` pair that named things carry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BaseMetadata {
    /// The programmatic name.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Name and version of an MCP client or server program.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// The programmatic name.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The program's version.
    pub version: String,
    /// What the program is, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The program's home page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Icons for the program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Implementation {
    /// A program with this name and version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            ..Default::default()
        }
    }
}

/// Log severity, syslog style (RFC 5424). Ordered from least to most severe.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Detailed debugging information.
    Debug,
    /// Routine information.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LoggingLevel {
    /// The level's name on the wire, e.g. `"warning"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LoggingLevel::Debug => "debug",
            LoggingLevel::Info => "info",
            LoggingLevel::Notice => "notice",
            LoggingLevel::Warning => "warning",
            LoggingLevel::Error => "error",
            LoggingLevel::Critical => "critical",
            LoggingLevel::Alert => "alert",
            LoggingLevel::Emergency => "emergency",
        }
    }
}

/// The token a request's sender chooses so that progress notifications can name the
/// request. A string or an integer, kept apart like [`RequestId`](crate::jsonrpc::RequestId).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(String),
}

impl JsonSchema for ProgressToken {
    fn schema_name() -> Cow<'static, str> {
        "ProgressToken".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Names a request in the progress notifications about it.",
            "type": ["string", "integer"]
        })
    }
}

impl From<i64> for ProgressToken {
    fn from(n: i64) -> Self {
        ProgressToken::Number(n)
    }
}

impl From<String> for ProgressToken {
    fn from(s: String) -> Self {
        ProgressToken::String(s)
    }
}

impl From<&str> for ProgressToken {
    fn from(s: &str) -> Self {
        ProgressToken::String(s.to_owned())
    }
}

/// An opaque pagination position handed out by a server; send it back unchanged.
pub type Cursor = String;

/// A directory or file the client lets the server work within.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Root {
    /// The root's URI; `file://` for now.
    pub uri: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Root {
    /// A root at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Root {
            uri: uri.into(),
            ..Default::default()
        }
    }
}

/// The client's answer to a `roots/list` request.
///
/// Shared by both revisions: `_meta` is declared by 2025-11-25 only, but the 2026-07-28
/// schema allows it as an extra member.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListRootsResult {
    /// The roots the server may use.
    pub roots: Vec<Root>,
    /// Free-form metadata (declared in 2025-11-25 only).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn progress_token_keeps_its_json_type() {
        let s: ProgressToken = serde_json::from_value(json!("1")).unwrap();
        let n: ProgressToken = serde_json::from_value(json!(1)).unwrap();
        assert_ne!(s, n);
        assert_eq!(serde_json::to_value(&n).unwrap(), json!(1));
    }

    #[test]
    fn logging_levels_are_ordered_and_named() {
        assert!(LoggingLevel::Debug < LoggingLevel::Emergency);
        assert!(LoggingLevel::Warning > LoggingLevel::Notice);
        for l in [
            LoggingLevel::Debug,
            LoggingLevel::Critical,
            LoggingLevel::Emergency,
        ] {
            assert_eq!(serde_json::to_value(l).unwrap(), json!(l.as_str()));
        }
    }

    #[test]
    fn implementation_keeps_unknown_members() {
        let v =
            json!({"name": "srv", "version": "1", "websiteUrl": "https://x", "vendor": {"a": 1}});
        let i: Implementation = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(i.website_url.as_deref(), Some("https://x"));
        assert_eq!(serde_json::to_value(&i).unwrap(), v);
    }
}
