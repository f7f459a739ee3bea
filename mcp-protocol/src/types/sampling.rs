//! Sampling pieces shared by both revisions: model preferences, tool choice and tool-use
//! blocks. (`SamplingMessage` and `ToolResultContent` differ between revisions.)

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::JsonObject;
use crate::meta::Meta;

/// What the server would like in a model; the client makes the final choice.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model names or families to prefer, first match wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much low cost matters, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_priority: Option<f64>,
    /// How much low latency matters, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_priority: Option<f64>,
    /// How much capability matters, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intelligence_priority: Option<f64>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A hint towards a model, by (partial) name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelHint {
    /// A model name or a substring of one, e.g. `"claude"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ModelHint {
    /// A hint naming `name`.
    pub fn new(name: impl Into<String>) -> Self {
        ModelHint {
            name: Some(name.into()),
            extra: JsonObject::new(),
        }
    }
}

/// Whether the model may, must, or must not call tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// The model decides.
    Auto,
    /// The model must call at least one tool.
    Required,
    /// The model must not call tools.
    None,
}

/// How the model should use the tools offered in a sampling request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolChoice {
    /// The mode; `auto` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

crate::const_tag!(
    /// The `"type": "tool_use"` tag of [`ToolUseContent`].
    ToolUseTag = "tool_use"
);
crate::const_tag!(
    /// The `"type": "tool_result"` tag of each revision's `ToolResultContent`.
    ToolResultTag = "tool_result"
);

/// The model asking to call a tool, inside a sampling message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolUseContent {
    /// Always `"tool_use"`.
    #[serde(rename = "type")]
    pub r#type: ToolUseTag,
    /// Identifies this call; the matching tool result repeats it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The tool's arguments.
    pub input: JsonObject,
    /// Free-form metadata; keep it when sending the call back in later requests.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ToolUseContent {
    /// A call `id` of tool `name` with `input`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: JsonObject) -> Self {
        ToolUseContent {
            id: id.into(),
            name: name.into(),
            input,
            ..Default::default()
        }
    }
}
