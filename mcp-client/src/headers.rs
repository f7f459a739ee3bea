//! Tool arguments mirrored as `Mcp-Param-{Name}` headers (SEP-2243, MCP 2026-07-28): a
//! top-level input property annotated `x-mcp-header: Name` travels in the header too,
//! so intermediaries can route on it. A tool whose annotations are invalid (empty, not
//! a header token, not on a string, integer or boolean property, or repeated
//! case-insensitively) is
//! refused: the client leaves it out of its tool list.

use base64::Engine;
use mcp_protocol::http::X_MCP_HEADER;
use serde_json::Value;

/// One mirrored argument: the input property `param` goes in `Mcp-Param-{header}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The input property.
    pub param: String,
    /// The name after `Mcp-Param-`.
    pub header: String,
}

/// RFC 9110 `tchar`: the characters of a header name.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// The mirrored arguments of a tool with input schema `schema`, or why its annotations
/// are invalid.
pub fn param_headers(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    let mut out: Vec<ParamHeader> = Vec::new();
    for (param, property) in properties {
        let Some(annotation) = property.get(X_MCP_HEADER) else {
            continue;
        };
        let Some(header) = annotation.as_str() else {
            return Err(format!("{X_MCP_HEADER} of {param:?} is not a string"));
        };
        if header.is_empty() {
            return Err(format!("{X_MCP_HEADER} of {param:?} is empty"));
        }
        if !header.chars().all(is_tchar) {
            return Err(format!(
                "{X_MCP_HEADER} {header:?} of {param:?} is not a header name (token characters only)"
            ));
        }
        let primitive = matches!(
            property.get("type").and_then(Value::as_str),
            Some("string" | "integer" | "boolean")
        );
        if !primitive {
            return Err(format!(
                "{X_MCP_HEADER} on {param:?}, which is not a string, integer or boolean"
            ));
        }
        if let Some(other) = out.iter().find(|h| h.header.eq_ignore_ascii_case(header)) {
            return Err(format!(
                "{X_MCP_HEADER} {header:?} of {param:?} repeats that of {:?}",
                other.param
            ));
        }
        out.push(ParamHeader {
            param: param.clone(),
            header: header.to_owned(),
        });
    }
    Ok(out)
}

/// The header value of an argument: strings as they are when plain visible ASCII
/// without surrounding whitespace, else `=?base64?...?=` of their UTF-8; numbers and
/// booleans as JSON writes them. `None` (no header) for null, objects and arrays.
pub fn encode_value(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => {
            let plain = s.chars().all(|c| (' '..='~').contains(&c)) && s.trim() == s;
            Some(if plain {
                s.clone()
            } else {
                format!(
                    "=?base64?{}?=",
                    base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
                )
            })
        }
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn valid_annotations_are_read() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "Priority"},
            "q": {"type": "string"}
        }});
        let headers = param_headers(&schema).expect("valid");
        assert_eq!(headers.len(), 2);
        assert_eq!(headers[0].header, "Region");
    }

    #[test]
    fn invalid_annotations_are_refused() {
        for (property, why) in [
            (json!({"type": "string", "x-mcp-header": ""}), "empty"),
            (json!({"type": "object", "x-mcp-header": "Data"}), "object"),
            (json!({"type": "array", "x-mcp-header": "Items"}), "array"),
            (json!({"type": "null", "x-mcp-header": "Nil"}), "null"),
            (json!({"type": "number", "x-mcp-header": "Ratio"}), "number"),
            (
                json!({"type": "string", "x-mcp-header": "My Region"}),
                "space",
            ),
            (
                json!({"type": "string", "x-mcp-header": "Region:Primary"}),
                "colon",
            ),
            (
                json!({"type": "string", "x-mcp-header": "Région"}),
                "non-ASCII",
            ),
            (
                json!({"type": "string", "x-mcp-header": "Region\t1"}),
                "control",
            ),
        ] {
            let schema = json!({"properties": {"v": property}});
            assert!(param_headers(&schema).is_err(), "{why}");
        }
        let duplicate = json!({"properties": {
            "a": {"type": "string", "x-mcp-header": "MyField"},
            "b": {"type": "string", "x-mcp-header": "myfield"}
        }});
        assert!(param_headers(&duplicate).is_err());
    }

    #[test]
    fn values_are_encoded() {
        assert_eq!(
            encode_value(&json!("us-west1")).as_deref(),
            Some("us-west1")
        );
        assert_eq!(
            encode_value(&json!("us west 1")).as_deref(),
            Some("us west 1")
        );
        assert_eq!(encode_value(&json!("")).as_deref(), Some(""));
        assert_eq!(encode_value(&json!(42)).as_deref(), Some("42"));
        assert_eq!(encode_value(&json!(3.5)).as_deref(), Some("3.5"));
        assert_eq!(encode_value(&json!(false)).as_deref(), Some("false"));
        assert_eq!(encode_value(&json!(null)), None);
        assert_eq!(
            encode_value(&json!(" padded ")).as_deref(),
            Some("=?base64?IHBhZGRlZCA=?=")
        );
        assert_eq!(
            encode_value(&json!("Hello, 世界")).as_deref(),
            Some("=?base64?SGVsbG8sIOS4lueVjA==?=")
        );
        assert!(encode_value(&json!("line1\nline2")).is_some_and(|v| v.starts_with("=?base64?")));
    }
}
