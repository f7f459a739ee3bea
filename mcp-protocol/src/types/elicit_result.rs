//! The user's answer to an elicitation ([`ElicitResult`]), shared by both revisions.

use indexmap::IndexMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::JsonObject;
use crate::meta::Meta;

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted the form or confirmed.
    Accept,
    /// Said no.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}

/// One submitted form value.
///
/// The spec allows strings, integers, booleans and string lists; a non-integer number is
/// accepted too (as [`ElicitValue::Number`]) since a `"number"` field can produce one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ElicitValue {
    /// A text or single-select value.
    String(String),
    /// An integer.
    Integer(i64),
    /// A number that is not an integer (beyond the spec's schema).
    Number(f64),
    /// A yes/no value.
    Boolean(bool),
    /// A multi-select value.
    StringArray(Vec<String>),
}

/// The client's answer to an elicitation.
///
/// Shared by both revisions: `_meta` is declared by 2025-11-25 only, but the 2026-07-28
/// schema allows it as an extra member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted values by field name; only for `accept` of a form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<IndexMap<String, ElicitValue>>,
    /// Free-form metadata (declared in 2025-11-25 only).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitResult {
    /// An answer with `action` and no content.
    pub fn new(action: ElicitAction) -> Self {
        ElicitResult {
            action,
            content: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// An `accept` answer with these values.
    pub fn accept(content: IndexMap<String, ElicitValue>) -> Self {
        ElicitResult {
            content: Some(content),
            ..Self::new(ElicitAction::Accept)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn elicit_result_values_round_trip() {
        let v = json!({
            "action": "accept",
            "content": {"name": "x", "n": 3, "f": 1.5, "ok": true, "tags": ["a", "b"]},
            "_meta": {"m": 1},
            "future": "kept"
        });
        let r: ElicitResult = serde_json::from_value(v.clone()).unwrap();
        let content = r.content.as_ref().unwrap();
        assert_eq!(content["n"], ElicitValue::Integer(3));
        assert_eq!(content["f"], ElicitValue::Number(1.5));
        assert_eq!(r.extra["future"], json!("kept"));
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
    }
}
