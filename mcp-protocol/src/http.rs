//! The Streamable HTTP conventions both sides follow: header names, which member of a
//! request's params the `Mcp-Name` header repeats, and the tool parameters a tool's input
//! schema mirrors into `Mcp-Param-{Name}` headers (`x-mcp-header`, SEP-2243) with the
//! value encoding both sides share.

use std::borrow::Cow;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::JsonObject;

use crate::method::Request;
use crate::tasks::{CancelTask, GetTask, UpdateTask};
use crate::v2026::{CallTool, GetPrompt, ReadResource};

/// `Mcp-Method`: the JSON-RPC method of the body, for routing.
pub const MCP_METHOD: &str = "mcp-method";
/// `Mcp-Name`: the tool, prompt, resource or task the body names, for routing.
pub const MCP_NAME: &str = "mcp-name";
/// `MCP-Protocol-Version`: the protocol version of the request.
pub const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Session-Id` (MCP 2025-11-25): the session a request belongs to.
pub const MCP_SESSION_ID: &str = "mcp-session-id";

/// What starts a header name carrying a tool parameter: `Mcp-Param-{Name}`.
pub const MCP_PARAM_PREFIX: &str = "mcp-param-";
/// The schema keyword that mirrors a tool parameter into a header.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// The type of a parameter mirrored into a header: only these three may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// A string, sent as it is (Base64-wrapped when it is not plain ASCII).
    String,
    /// An integer within JavaScript's safe range, in decimal.
    Integer,
    /// `true` or `false`.
    Boolean,
}

/// One tool parameter the input schema mirrors into the header `Mcp-Param-{name}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The `x-mcp-header` value: the header is `Mcp-Param-{name}`.
    pub name: String,
    /// The chain of `properties` keys from the schema root to the parameter.
    pub path: Vec<String>,
    /// Its declared type.
    pub kind: ParamType,
}

impl ParamHeader {
    /// The header's name, lowercase (`mcp-param-region`).
    pub fn header_name(&self) -> String {
        format!("{MCP_PARAM_PREFIX}{}", self.name.to_ascii_lowercase())
    }

    /// The argument at this parameter's path, as its header text: `None` when the
    /// arguments have no value there (or `null`: no header is sent then), `Some(Err(()))`
    /// when the value is not of a type a header can carry.
    pub fn text_in(&self, arguments: &JsonObject) -> Option<Result<String, ()>> {
        let (last, parents) = self.path.split_last()?;
        let mut object = arguments;
        for key in parents {
            object = object.get(key)?.as_object()?;
        }
        match object.get(last)? {
            Value::Null => None,
            Value::String(s) => Some(Ok(s.clone())),
            Value::Bool(b) => Some(Ok(b.to_string())),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(Ok(n.to_string())),
            _ => Some(Err(())),
        }
    }
}

/// The largest integer a parameter header may carry (2^53 - 1).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// Why an input schema's `x-mcp-header` annotations are invalid (the tool is then not
/// usable over Streamable HTTP: a client drops it from `tools/list`, a server refuses to
/// register it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid x-mcp-header annotation: {0}")]
pub struct ParamHeaderError(pub String);

/// The parameters `input_schema` mirrors into headers, checked against the rules of
/// SEP-2243: each value a non-empty HTTP token, unique ignoring case, on a `string`,
/// `integer` or `boolean` property reached from the root through `properties` keys only.
pub fn param_headers(input_schema: &JsonObject) -> Result<Vec<ParamHeader>, ParamHeaderError> {
    let mut found = Vec::new();
    collect_reachable(input_schema, &mut Vec::new(), &mut found)?;
    let reachable = found.len();
    let anywhere = count_annotations(&Value::Object(input_schema.clone()), false);
    if anywhere != reachable {
        return Err(ParamHeaderError(
            "an annotation sits where it is not statically reachable through properties \
             (under items, a composition or conditional keyword, $ref or $defs)"
                .to_owned(),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for header in &found {
        if !seen.insert(header.name.to_ascii_lowercase()) {
            return Err(ParamHeaderError(format!(
                "{:?} names two parameters (names are compared ignoring case)",
                header.name
            )));
        }
    }
    Ok(found)
}

fn collect_reachable(
    schema: &JsonObject,
    path: &mut Vec<String>,
    found: &mut Vec<ParamHeader>,
) -> Result<(), ParamHeaderError> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (key, property) in properties {
        let Some(property) = property.as_object() else {
            continue;
        };
        path.push(key.clone());
        if let Some(name) = property.get(X_MCP_HEADER) {
            let at = path.join(".");
            let name = name
                .as_str()
                .ok_or_else(|| ParamHeaderError(format!("on {at}: the value must be a string")))?;
            if name.is_empty() || !name.bytes().all(is_tchar) {
                return Err(ParamHeaderError(format!(
                    "on {at}: {name:?} is not an HTTP field-name token"
                )));
            }
            let kind = primitive_type(property).ok_or_else(|| {
                ParamHeaderError(format!(
                    "on {at}: only string, integer and boolean parameters may be mirrored"
                ))
            })?;
            found.push(ParamHeader {
                name: name.to_owned(),
                path: path.clone(),
                kind,
            });
        }
        collect_reachable(property, path, found)?;
        path.pop();
    }
    Ok(())
}

/// `type: T` or `type: [T, "null"]` with T one of the three header types.
fn primitive_type(schema: &JsonObject) -> Option<ParamType> {
    let one = |t: &str| match t {
        "string" => Some(ParamType::String),
        "integer" => Some(ParamType::Integer),
        "boolean" => Some(ParamType::Boolean),
        _ => None,
    };
    match schema.get("type")? {
        Value::String(t) => one(t),
        Value::Array(types) => {
            let named: Vec<&str> = types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect();
            match named.as_slice() {
                [t] if types.len() <= 2 => one(t),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Every `x-mcp-header` keyword in a schema tree. `names` says `value` is a map of
/// property names (its keys are not keywords); instance-valued keywords are skipped.
fn count_annotations(value: &Value, names: bool) -> usize {
    match value {
        Value::Object(map) => map
            .iter()
            .map(|(key, inner)| {
                if names {
                    return count_annotations(inner, false);
                }
                match key.as_str() {
                    X_MCP_HEADER => 1,
                    "const" | "enum" | "default" | "examples" => 0,
                    "properties" | "patternProperties" | "$defs" | "definitions"
                    | "dependentSchemas" => count_annotations(inner, true),
                    _ => count_annotations(inner, false),
                }
            })
            .sum(),
        Value::Array(items) => items.iter().map(|v| count_annotations(v, false)).sum(),
        _ => 0,
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

/// The header text for `value`: as it is when it is plain ASCII (visible characters
/// and inner spaces) and does not look like the Base64 sentinel, else
/// `=?base64?{Base64 of its UTF-8}?=`.
pub fn encode_header_value(value: &str) -> String {
    let sentinel = value.starts_with(SENTINEL_START) && value.ends_with(SENTINEL_END);
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !sentinel;
    if plain {
        value.to_owned()
    } else {
        format!("{SENTINEL_START}{}{SENTINEL_END}", STANDARD.encode(value))
    }
}

/// Why a header value cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderValueError {
    /// A character a header value may not hold.
    #[error("the value holds characters a header may not carry")]
    InvalidCharacters,
    /// The Base64 between `=?base64?` and `?=` does not decode (alphabet or padding) to UTF-8.
    #[error("the Base64 value does not decode to UTF-8 text (check its alphabet and padding)")]
    InvalidBase64,
}

/// The text a header value stands for: surrounding whitespace dropped (RFC 9110, 5.5),
/// then `=?base64?...?=` decoded (strict alphabet and padding); any other value is
/// literal and must be visible ASCII, spaces or tabs.
pub fn decode_header_value(raw: &[u8]) -> Result<String, HeaderValueError> {
    let text = std::str::from_utf8(raw).map_err(|_| HeaderValueError::InvalidCharacters)?;
    if !text
        .bytes()
        .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
    {
        return Err(HeaderValueError::InvalidCharacters);
    }
    let text = text.trim_matches([' ', '\t']);
    match text
        .strip_prefix(SENTINEL_START)
        .and_then(|rest| rest.strip_suffix(SENTINEL_END))
    {
        Some(encoded) => STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or(HeaderValueError::InvalidBase64),
        None => Ok(text.to_owned()),
    }
}

/// Whether the header text `header` (decoded) stands for the argument text `body` of a
/// parameter of type `kind`: integers compare as numbers (`42.0` equals `42`).
pub fn header_matches(kind: ParamType, header: &str, body: &str) -> bool {
    match kind {
        ParamType::Integer => {
            let number = |s: &str| s.trim().parse::<f64>().ok();
            match (number(header), body.parse::<i64>().ok()) {
                (Some(h), Some(b)) if b.abs() <= MAX_SAFE_INTEGER => h == b as f64,
                _ => header == body,
            }
        }
        ParamType::String | ParamType::Boolean => header == body,
    }
}

/// The members of a request's `params` a server's edge reads before dispatch, borrowed
/// from the params' text in one pass (everything else is skipped, not parsed): the
/// `_meta` object (MCP 2026-07-28 declarations), the members `Mcp-Name` repeats, and a
/// tool call's `arguments` (for its `Mcp-Param-*` headers). Each member is kept as raw
/// JSON, so a member of the wrong type spoils only itself.
#[derive(Debug, Default, Deserialize)]
pub struct ParamsHead<'a> {
    /// `_meta`, present (even `null`) or not.
    #[serde(rename = "_meta", borrow, default, deserialize_with = "present")]
    pub meta: Option<&'a RawValue>,
    /// `name` (`tools/call`, `prompts/get`).
    #[serde(borrow, default)]
    pub name: Option<&'a RawValue>,
    /// `uri` (`resources/read`).
    #[serde(borrow, default)]
    pub uri: Option<&'a RawValue>,
    /// `taskId` (`tasks/get`, `tasks/update`, `tasks/cancel`).
    #[serde(rename = "taskId", borrow, default)]
    pub task_id: Option<&'a RawValue>,
    /// `arguments` (`tools/call`).
    #[serde(borrow, default)]
    pub arguments: Option<&'a RawValue>,
}

impl<'a> ParamsHead<'a> {
    /// Reads `params` (JSON text, or nothing). Params that are not a JSON object have no
    /// head: every member is `None`.
    pub fn read(params: Option<&'a str>) -> ParamsHead<'a> {
        // serde reads a struct from an array too (its members in order): only an object
        // has members.
        params
            .filter(|p| p.trim_start().starts_with('{'))
            .and_then(|p| serde_json::from_str(p).ok())
            .unwrap_or_default()
    }

    /// The value `Mcp-Name` must carry for a request of `method` (see [`routed_name`]).
    pub fn routed_name(&self, method: &str) -> Option<Cow<'a, str>> {
        let raw = match method {
            m if m == CallTool::METHOD || m == GetPrompt::METHOD => self.name,
            m if m == ReadResource::METHOD => self.uri,
            m if m == GetTask::METHOD || m == UpdateTask::METHOD || m == CancelTask::METHOD => {
                self.task_id
            }
            _ => None,
        }?;
        serde_json::from_str::<Cow<'a, str>>(raw.get()).ok()
    }
}

/// `Some` whenever the member is present, `null` included.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// The value `Mcp-Name` must carry for a request of `method` with `params` (JSON text):
/// `params.name` for `tools/call` and `prompts/get`, `params.uri` for `resources/read`,
/// `params.taskId` for `tasks/get`, `tasks/update` and `tasks/cancel`; `None` otherwise.
pub fn routed_name(method: &str, params: Option<&str>) -> Option<String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Names {
        name: Option<String>,
        uri: Option<String>,
        task_id: Option<String>,
    }
    let names: Names = serde_json::from_str(params?).ok()?;
    match method {
        m if m == CallTool::METHOD || m == GetPrompt::METHOD => names.name,
        m if m == ReadResource::METHOD => names.uri,
        m if m == GetTask::METHOD || m == UpdateTask::METHOD || m == CancelTask::METHOD => {
            names.task_id
        }
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> JsonObject {
        match v {
            Value::Object(o) => o,
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_params_head_reads_what_the_edge_needs_in_one_pass() {
        let text = r#"{"name":"greet","arguments":{"who":"ada"},"_meta":{"a":1},"x":[1,2]}"#;
        let head = ParamsHead::read(Some(text));
        assert_eq!(head.routed_name("tools/call").as_deref(), Some("greet"));
        assert_eq!(head.routed_name("tasks/get"), None);
        assert_eq!(head.arguments.map(RawValue::get), Some(r#"{"who":"ada"}"#));
        assert_eq!(head.meta.map(RawValue::get), Some(r#"{"a":1}"#));
        // A member of the wrong type spoils only itself.
        let odd = ParamsHead::read(Some(r#"{"taskId":7,"_meta":null}"#));
        assert_eq!(odd.routed_name("tasks/get"), None);
        assert_eq!(odd.meta.map(RawValue::get), Some("null"));
        assert!(ParamsHead::read(Some("[1]")).meta.is_none());
        assert!(ParamsHead::read(None).name.is_none());
        for (method, text) in [
            ("tools/call", r#"{"name":"a b"}"#),
            ("resources/read", r#"{"uri":"file:///x"}"#),
            ("tasks/cancel", r#"{"taskId":"t-1"}"#),
            ("prompts/get", r#"{"name":"p\u00e9"}"#),
        ] {
            assert_eq!(
                ParamsHead::read(Some(text))
                    .routed_name(method)
                    .map(Cow::into_owned),
                routed_name(method, Some(text)),
                "{method} {text}"
            );
        }
    }

    #[test]
    fn annotated_parameters_are_found_and_checked() {
        let found = param_headers(&schema(json!({
            "type": "object",
            "properties": {
                "region": { "type": "string", "x-mcp-header": "Region" },
                "opts": { "type": "object", "properties": {
                    "dry": { "type": ["boolean", "null"], "x-mcp-header": "Dry-Run" },
                }},
                "x-mcp-header": { "type": "integer", "x-mcp-header": "Count" },
                "query": { "type": "string", "default": { "x-mcp-header": "not a keyword" } },
            },
        })))
        .unwrap();
        let names: Vec<_> = found
            .iter()
            .map(|p| (p.name.as_str(), p.path.join(".")))
            .collect();
        assert_eq!(
            names,
            [
                ("Region", "region".into()),
                ("Dry-Run", "opts.dry".into()),
                ("Count", "x-mcp-header".into())
            ]
        );
        assert_eq!(found[0].header_name(), "mcp-param-region");

        for bad in [
            json!({ "properties": { "a": { "type": "number", "x-mcp-header": "A" } } }),
            json!({ "properties": { "a": { "type": "object", "x-mcp-header": "A" } } }),
            json!({ "properties": { "a": { "type": "string", "x-mcp-header": "" } } }),
            json!({ "properties": { "a": { "type": "string", "x-mcp-header": "Bad Name" } } }),
            json!({ "properties": { "a": { "type": "string", "x-mcp-header": "A" },
                                    "b": { "type": "string", "x-mcp-header": "a" } } }),
            json!({ "properties": { "a": { "type": "array",
                "items": { "type": "string", "x-mcp-header": "A" } } } }),
            json!({ "oneOf": [{ "properties": { "a": { "type": "string", "x-mcp-header": "A" } } }] }),
            json!({ "$defs": { "x": { "type": "string", "x-mcp-header": "A" } } }),
        ] {
            assert!(param_headers(&schema(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn argument_text_by_type() {
        let p = |path: &[&str]| ParamHeader {
            name: "X".into(),
            path: path.iter().map(|s| s.to_string()).collect(),
            kind: ParamType::String,
        };
        let args = schema(json!({ "s": "a", "n": 42, "b": false, "z": null, "f": 1.5,
                                  "o": { "s": "inner" } }));
        assert_eq!(p(&["s"]).text_in(&args), Some(Ok("a".into())));
        assert_eq!(p(&["n"]).text_in(&args), Some(Ok("42".into())));
        assert_eq!(p(&["b"]).text_in(&args), Some(Ok("false".into())));
        assert_eq!(p(&["o", "s"]).text_in(&args), Some(Ok("inner".into())));
        assert_eq!(p(&["z"]).text_in(&args), None);
        assert_eq!(p(&["missing"]).text_in(&args), None);
        assert_eq!(p(&["f"]).text_in(&args), Some(Err(())));
    }

    #[test]
    fn values_round_trip_through_the_encoding() {
        for (value, encoded) in [
            ("us-west1", "us-west1"),
            ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            (" padded ", "=?base64?IHBhZGRlZCA=?="),
            ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
            ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ] {
            assert_eq!(encode_header_value(value), encoded);
            assert_eq!(
                decode_header_value(encoded.as_bytes()).as_deref(),
                Ok(value)
            );
        }
        assert_eq!(decode_header_value(b"  plain  ").as_deref(), Ok("plain"));
        assert_eq!(
            decode_header_value(b"=?base64?SGVsbG8=").as_deref(),
            Ok("=?base64?SGVsbG8=")
        );
        assert_eq!(
            decode_header_value(b"=?base64?SGVsbG8?="),
            Err(HeaderValueError::InvalidBase64)
        );
        assert_eq!(
            decode_header_value(b"=?base64?SGVs!!!bG8=?="),
            Err(HeaderValueError::InvalidBase64)
        );
        assert_eq!(
            decode_header_value(b"caf\xc3\xa9"),
            Err(HeaderValueError::InvalidCharacters)
        );
        assert!(header_matches(ParamType::Integer, "42.0", "42"));
        assert!(!header_matches(ParamType::Integer, "43", "42"));
        assert!(!header_matches(ParamType::String, "42.0", "42"));
    }

    #[test]
    fn names_by_method() {
        assert_eq!(
            routed_name("tools/call", Some(r#"{"name":"greet"}"#)).as_deref(),
            Some("greet")
        );
        assert_eq!(
            routed_name("resources/read", Some(r#"{"uri":"file:///a"}"#)).as_deref(),
            Some("file:///a")
        );
        assert_eq!(
            routed_name("tasks/get", Some(r#"{"taskId":"t1"}"#)).as_deref(),
            Some("t1")
        );
        assert_eq!(routed_name("tools/list", Some("{}")), None);
        assert_eq!(routed_name("tools/call", None), None);
    }
}
