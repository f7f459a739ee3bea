//! The pieces every 2026-07-28 message builds on: `resultType`, the base `Result`,
//! cacheable and paginated results, and the base request/notification params.

use std::borrow::Cow;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::meta::{NotificationMeta, RequestMeta, ResultMeta};
use crate::JsonObject;
use crate::types::Cursor;

/// What kind of result a server sent: finished, waiting for client input, or (with the
/// tasks extension) a task. Values this crate doesn't know are kept in `Other`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum ResultType {
    /// `"complete"`: the request is done and this is its answer.
    #[default]
    Complete,
    /// `"input_required"`: the server needs client input first ([`InputRequiredResult`](super::InputRequiredResult)).
    InputRequired,
    /// `"task"`: the request became a task (tasks extension).
    Task,
    /// Any other value, as sent.
    Other(String),
}

impl ResultType {
    /// The value on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Task => "task",
            ResultType::Other(s) => s,
        }
    }
}

impl From<&str> for ResultType {
    fn from(s: &str) -> Self {
        match s {
            "complete" => ResultType::Complete,
            "input_required" => ResultType::InputRequired,
            "task" => ResultType::Task,
            other => ResultType::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for ResultType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s: Cow<'de, str> = Deserialize::deserialize(d)?;
        Ok(ResultType::from(s.as_ref()))
    }
}

impl JsonSchema for ResultType {
    fn schema_name() -> Cow<'static, str> {
        "ResultType".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The kind of a result: \"complete\", \"input_required\", \"task\", or another string.",
            "type": "string"
        })
    }
}

/// A result with no particular members: `resultType`, optional `_meta`, and anything else.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Result {
    /// The kind of result.
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A result that says only "done".
pub type EmptyResult = Result;

/// Who may cache a result: only this client (`private`) or anyone (`public`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Only the requesting client may reuse it.
    #[default]
    Private,
    /// Shared caches may reuse it.
    Public,
}

/// The members of a result that may be cached: scope and time to live.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CacheableResult {
    /// The kind of result.
    pub result_type: ResultType,
    /// Who may cache it.. Required by the schema; `None` only for input from a peer that
    /// left it out (constructors fill it in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// How long it stays fresh, in milliseconds.. Required by the schema; `None` only for input from a peer
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

/// The members of a result that is one page of a list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaginatedResult {
    /// The kind of result.
    pub result_type: ResultType,
    /// Where the next page starts; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The params every 2026-07-28 request has: its `_meta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestParams {
    /// Protocol version, client capabilities and the rest.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl RequestParams {
    /// Params with only this `_meta`.
    pub fn new(meta: RequestMeta) -> Self {
        RequestParams {
            meta,
            extra: JsonObject::new(),
        }
    }
}

/// The params of a request for one page of a list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaginatedRequestParams {
    /// Protocol version, client capabilities and the rest.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// Where to start; the first page when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
    /// Members this crate does not know about, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl PaginatedRequestParams {
    /// Params asking for the page at `cursor` (the first page when `None`).
    pub fn new(meta: RequestMeta, cursor: Option<Cursor>) -> Self {
        PaginatedRequestParams {
            meta,
            cursor,
            extra: JsonObject::new(),
        }
    }
}

/// The params every notification may have: an optional `_meta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
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
    fn result_type_keeps_unknown_values() {
        for (s, t) in [
            ("complete", ResultType::Complete),
            ("input_required", ResultType::InputRequired),
            ("task", ResultType::Task),
            ("streaming", ResultType::Other("streaming".into())),
        ] {
            assert_eq!(serde_json::from_value::<ResultType>(json!(s)).unwrap(), t);
            assert_eq!(serde_json::to_value(&t).unwrap(), json!(s));
        }
        assert!(serde_json::from_value::<ResultType>(json!(1)).is_err());
    }

    #[test]
    fn base_result_keeps_every_member() {
        let v = json!({"resultType": "weird", "_meta": {"x": 1}, "anything": [true]});
        let r: Result = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(r.result_type, ResultType::Other("weird".into()));
        assert_eq!(r.meta.as_ref().unwrap().extra["x"], json!(1));
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
    }
}
