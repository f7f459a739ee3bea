//! Elicitation form schemas shared by both revisions: the restricted JSON Schemas a form
//! may ask for (one per field) and the form itself ([`RequestedSchema`]).

use indexmap::IndexMap;

use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::JsonObject;

crate::const_tag!(
    /// The `"type": "string"` of string-valued field schemas.
    StringTypeTag = "string"
);
crate::const_tag!(
    /// The `"type": "boolean"` of [`BooleanSchema`].
    BooleanTypeTag = "boolean"
);
crate::const_tag!(
    /// The `"type": "array"` of multi-select field schemas.
    ArrayTypeTag = "array"
);

/// A string format a [`StringSchema`] may require.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum StringFormat {
    /// An email address.
    #[serde(rename = "email")]
    Email,
    /// A URI.
    #[serde(rename = "uri")]
    Uri,
    /// A calendar date.
    #[serde(rename = "date")]
    Date,
    /// A date and time.
    #[serde(rename = "date-time")]
    DateTime,
}

/// A free-text form field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub r#type: StringTypeTag,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text for the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum length in characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Maximum length in characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// A format the value must have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<StringFormat>,
    /// The initial value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Whether a [`NumberSchema`] field takes any number or integers only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NumberType {
    /// Any number.
    Number,
    /// Integers only.
    Integer,
}

/// A numeric form field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NumberSchema {
    /// `"number"` or `"integer"`.
    #[serde(rename = "type")]
    pub r#type: NumberType,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text for the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The smallest allowed value (a JSON number as written: `1` stays an integer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<serde_json::Number>,
    /// The largest allowed value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<serde_json::Number>,
    /// The initial value (an `integer` field's default goes out as an integer: `30`, not
    /// `30.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Number>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl NumberSchema {
    /// A field of the given numeric type with no bounds.
    pub fn new(r#type: NumberType) -> Self {
        NumberSchema {
            r#type,
            title: None,
            description: None,
            minimum: None,
            maximum: None,
            default: None,
            extra: JsonObject::new(),
        }
    }
}

/// A yes/no form field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BooleanSchema {
    /// Always `"boolean"`.
    #[serde(rename = "type")]
    pub r#type: BooleanTypeTag,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text for the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The initial value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One choice of a titled select: its value and its label.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnumOption {
    /// The value sent back when chosen.
    #[serde(rename = "const")]
    pub r#const: String,
    /// The label shown.
    pub title: String,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl EnumOption {
    /// A choice with value `value` shown as `title`.
    pub fn new(value: impl Into<String>, title: impl Into<String>) -> Self {
        EnumOption {
            r#const: value.into(),
            title: title.into(),
            extra: JsonObject::new(),
        }
    }
}

/// Pick one of a list of strings, shown as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UntitledSingleSelectEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub r#type: StringTypeTag,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text for the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    #[serde(rename = "enum")]
    pub r#enum: Vec<String>,
    /// The initially chosen value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Pick one of a list of values, each shown by its own label.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TitledSingleSelectEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub r#type: StringTypeTag,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text for the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices with their labels.
    pub one_of: Vec<EnumOption>,
    /// The initially chosen value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `items` of an [`UntitledMultiSelectEnumSchema`]: the allowed strings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UntitledMultiSelectItems {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub r#type: StringTypeTag,
    /// The choices.
    #[serde(rename = "enum")]
    pub r#enum: Vec<String>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `items` of a [`TitledMultiSelectEnumSchema`]: the allowed values with labels.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectItems {
    /// The choices with their labels.
    pub any_of: Vec<EnumOption>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Pick any number of a list of strings, shown as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UntitledMultiSelectEnumSchema {
    /// Always `"array"`.
    #[serde(rename = "type")]
    pub r#type: ArrayTypeTag,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text for the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fewest choices allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most choices allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The allowed strings.
    pub items: UntitledMultiSelectItems,
    /// The initially chosen values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Pick any number of a list of values, each shown by its own label.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectEnumSchema {
    /// Always `"array"`.
    #[serde(rename = "type")]
    pub r#type: ArrayTypeTag,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text for the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fewest choices allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most choices allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The allowed values with labels.
    pub items: TitledMultiSelectItems,
    /// The initially chosen values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The older single select with labels in a parallel `enumNames` list. Deprecated by the
/// spec in favour of [`TitledSingleSelectEnumSchema`]; still accepted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LegacyTitledEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub r#type: StringTypeTag,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text for the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    #[serde(rename = "enum")]
    pub r#enum: Vec<String>,
    /// Labels for the choices, in the same order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// The initially chosen value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Which field schema an object is, judged by `type` and the members that set the kinds
/// apart (`oneOf`, `enum` + `enumNames`, `enum`, `items.anyOf`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Number,
    Boolean,
    UntitledSingle,
    TitledSingle,
    UntitledMulti,
    TitledMulti,
    Legacy,
}

fn classify(obj: &JsonObject) -> Option<Kind> {
    let has = |k: &str| obj.contains_key(k);
    Some(match obj.get("type").and_then(Value::as_str)? {
        "boolean" => Kind::Boolean,
        "number" | "integer" => Kind::Number,
        "array" => {
            let titled = obj.get("items").and_then(|i| i.get("anyOf")).is_some();
            if titled {
                Kind::TitledMulti
            } else {
                Kind::UntitledMulti
            }
        }
        "string" if has("oneOf") => Kind::TitledSingle,
        "string" if has("enum") && has("enumNames") => Kind::Legacy,
        "string" if has("enum") => Kind::UntitledSingle,
        "string" => Kind::String,
        _ => return None,
    })
}

fn from_obj<T: serde::de::DeserializeOwned, E: serde::de::Error>(obj: JsonObject) -> Result<T, E> {
    serde_json::from_value(Value::Object(obj)).map_err(E::custom)
}

/// The schema of one form field: a string, number, boolean, or one of the enum kinds.
///
/// Input is classified by `type` and the distinguishing members, so an enum schema with
/// `enumNames` reads as [`LegacyTitledEnumSchema`] and one without as
/// [`UntitledSingleSelectEnumSchema`].
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum PrimitiveSchemaDefinition {
    /// Free text.
    String(StringSchema),
    /// A number.
    Number(NumberSchema),
    /// Yes or no.
    Boolean(BooleanSchema),
    /// One of some strings.
    UntitledSingleSelect(UntitledSingleSelectEnumSchema),
    /// One of some labelled values.
    TitledSingleSelect(TitledSingleSelectEnumSchema),
    /// Any of some strings.
    UntitledMultiSelect(UntitledMultiSelectEnumSchema),
    /// Any of some labelled values.
    TitledMultiSelect(TitledMultiSelectEnumSchema),
    /// One of some strings labelled by `enumNames`.
    LegacyTitled(LegacyTitledEnumSchema),
}

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let obj = JsonObject::deserialize(d)?;
        let kind = classify(&obj).ok_or_else(|| {
            D::Error::custom(
                "not a form field schema: `type` must be string, number, integer, boolean or array",
            )
        })?;
        Ok(match kind {
            Kind::String => Self::String(from_obj(obj)?),
            Kind::Number => Self::Number(from_obj(obj)?),
            Kind::Boolean => Self::Boolean(from_obj(obj)?),
            Kind::UntitledSingle => Self::UntitledSingleSelect(from_obj(obj)?),
            Kind::TitledSingle => Self::TitledSingleSelect(from_obj(obj)?),
            Kind::UntitledMulti => Self::UntitledMultiSelect(from_obj(obj)?),
            Kind::TitledMulti => Self::TitledMultiSelect(from_obj(obj)?),
            Kind::Legacy => Self::LegacyTitled(from_obj(obj)?),
        })
    }
}

/// Any of the enum (select) field schemas.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum EnumSchema {
    /// One of some strings.
    UntitledSingleSelect(UntitledSingleSelectEnumSchema),
    /// One of some labelled values.
    TitledSingleSelect(TitledSingleSelectEnumSchema),
    /// Any of some strings.
    UntitledMultiSelect(UntitledMultiSelectEnumSchema),
    /// Any of some labelled values.
    TitledMultiSelect(TitledMultiSelectEnumSchema),
    /// One of some strings labelled by `enumNames`.
    LegacyTitled(LegacyTitledEnumSchema),
}

impl<'de> Deserialize<'de> for EnumSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let obj = JsonObject::deserialize(d)?;
        Ok(match classify(&obj) {
            Some(Kind::UntitledSingle) => Self::UntitledSingleSelect(from_obj(obj)?),
            Some(Kind::TitledSingle) => Self::TitledSingleSelect(from_obj(obj)?),
            Some(Kind::UntitledMulti) => Self::UntitledMultiSelect(from_obj(obj)?),
            Some(Kind::TitledMulti) => Self::TitledMultiSelect(from_obj(obj)?),
            Some(Kind::Legacy) => Self::LegacyTitled(from_obj(obj)?),
            _ => return Err(D::Error::custom("not an enum field schema")),
        })
    }
}

/// A single-select field schema, titled or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SingleSelectEnumSchema {
    /// Has `oneOf` (tried first).
    Titled(TitledSingleSelectEnumSchema),
    /// Has `enum`.
    Untitled(UntitledSingleSelectEnumSchema),
}

/// A multi-select field schema, titled or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MultiSelectEnumSchema {
    /// `items` has `anyOf` (tried first).
    Titled(TitledMultiSelectEnumSchema),
    /// `items` has `enum`.
    Untitled(UntitledMultiSelectEnumSchema),
}

/// The form of a form-mode elicitation: a flat object schema whose properties are
/// [`PrimitiveSchemaDefinition`]s. (Field order is not kept: `properties` is a sorted map.)
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestedSchema {
    /// The JSON Schema dialect, if stated.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    #[serde(rename = "type")]
    pub r#type: super::common::ObjectTypeTag,
    /// The fields, by name.
    pub properties: IndexMap<String, PrimitiveSchemaDefinition>,
    /// The names of the fields that must be filled in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn round_trip(v: Value) -> PrimitiveSchemaDefinition {
        let s: PrimitiveSchemaDefinition = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&s).unwrap(), v);
        s
    }

    #[test]
    fn field_schemas_are_classified() {
        use PrimitiveSchemaDefinition as P;
        assert!(matches!(
            round_trip(json!({"type": "string", "format": "email"})),
            P::String(_)
        ));
        assert!(matches!(
            round_trip(json!({"type": "integer", "minimum": 1.5})),
            P::Number(_)
        ));
        assert!(matches!(
            round_trip(json!({"type": "boolean", "default": true})),
            P::Boolean(_)
        ));
        assert!(matches!(
            round_trip(json!({"type": "string", "enum": ["a"]})),
            P::UntitledSingleSelect(_)
        ));
        assert!(matches!(
            round_trip(json!({"type": "string", "enum": ["a"], "enumNames": ["A"]})),
            P::LegacyTitled(_)
        ));
        assert!(matches!(
            round_trip(json!({"type": "string", "oneOf": [{"const": "a", "title": "A"}]})),
            P::TitledSingleSelect(_)
        ));
        assert!(matches!(
            round_trip(
                json!({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 2})
            ),
            P::UntitledMultiSelect(_)
        ));
        assert!(matches!(
            round_trip(
                json!({"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}})
            ),
            P::TitledMultiSelect(_)
        ));
        assert!(
            serde_json::from_value::<PrimitiveSchemaDefinition>(json!({"type": "object"})).is_err()
        );
    }
}
