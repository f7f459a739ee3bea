//! Prompts: templates a server offers, their arguments, the messages they expand to,
//! and the reference used to complete a prompt's arguments.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{Icon, Role};
use super::content::ContentBlock;
use crate::JsonObject;
use crate::meta::Meta;

/// A prompt or prompt template the server offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// The programmatic name.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments the prompt takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Icons for the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Free-form metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Prompt {
    /// A prompt called `name` with no arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Prompt {
            name: name.into(),
            ..Default::default()
        }
    }
}

/// One argument of a prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// The programmatic name.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the argument means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the argument must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl PromptArgument {
    /// An argument called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PromptArgument {
            name: name.into(),
            ..Default::default()
        }
    }
}

/// One message of an expanded prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: ContentBlock,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl PromptMessage {
    /// A message from `role` with `content`.
    pub fn new(role: Role, content: impl Into<ContentBlock>) -> Self {
        PromptMessage {
            role,
            content: content.into(),
            extra: JsonObject::new(),
        }
    }
}

crate::const_tag!(
    /// The `"type": "ref/prompt"` tag of [`PromptReference`].
    PromptRefTag = "ref/prompt"
);

/// Names a prompt, e.g. to complete one of its arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptReference {
    /// Always `"ref/prompt"`.
    #[serde(rename = "type")]
    pub r#type: PromptRefTag,
    /// The prompt's programmatic name.
    pub name: String,
    /// A human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl PromptReference {
    /// A reference to the prompt `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PromptReference {
            name: name.into(),
            ..Default::default()
        }
    }
}
