//! `_meta` keys reserved by MCP and our own (`rs.mcp-tasks/...`), the protocol version
//! strings, and the one parse and fingerprint of an idempotency key.
//!
//! A `_meta` member is a JSON object ([`Meta`]); the typed views in each revision's
//! module read and write the keys named here. Keep every key in this file: no `_meta`
//! key is spelled anywhere else.

use crate::JsonObject;

/// The contents of a `_meta` member. Unknown keys are kept as they are.
pub type Meta = JsonObject;

/// MCP 2026-07-28 (stateless; tasks live in the `io.modelcontextprotocol/tasks` extension).
pub const PROTOCOL_VERSION_2026_07_28: &str = "2026-07-28";
/// MCP 2025-11-25 (sessions via `initialize`; tasks in core, SEP-1686).
pub const PROTOCOL_VERSION_2025_11_25: &str = "2025-11-25";

/// Request `_meta` (2026-07-28): the protocol version of this request. Required.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// Request `_meta` (2026-07-28): the client's capabilities for this request. Required.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// Request `_meta` (2026-07-28): the client software making the request.
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// Request `_meta` (2026-07-28): the log level wanted for this request.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Request `_meta` (both revisions): the token that progress notifications refer to.
pub const PROGRESS_TOKEN: &str = "progressToken";
/// Result `_meta` (2026-07-28): the server software producing the response.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Notification `_meta` (2026-07-28): the `subscriptions/listen` request a notification belongs to.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// 2025-11-25: `{"taskId": ...}` on every message that belongs to a task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// Request `_meta` key (tasks extension draft, advisory): the ids of earlier tasks this
/// request relates to.
pub const RELATED_TASK_IDS: &str = "io.modelcontextprotocol/relatedTaskIds";
/// Request `_meta` key of `tools/call` (both revisions; **our extension**, rs.mcp-tasks, not
/// the spec's): the idempotency key, for SDKs that drop unknown params. The same as
/// `params.idempotencyKey` ([`IDEMPOTENCY_KEY_MAX_BYTES`] at most); both present must be equal.
pub const IDEMPOTENCY_KEY: &str = "idempotencyKey";
/// Tool `_meta` key in `tools/list` (both revisions; **our extension**, rs.mcp-tasks, not
/// the spec's), value `{}`: the server deduplicates this tool's keyed calls (each one
/// from a caller that can take a task creates a task or writes its record up front), so
/// a client may send a call again with the same [`IDEMPOTENCY_KEY`] after its answer was
/// lost without the tool running twice. A tool without it may ignore the key (it may
/// answer synchronously, running again on a repeat).
pub const IDEMPOTENT_TOOL: &str = "rs.mcp-tasks/idempotency";
/// The longest idempotency key, in bytes (UTF-8); an empty key is refused too.
pub const IDEMPOTENCY_KEY_MAX_BYTES: usize = 255;
/// 2025-11-25: optional interim text for the model on a `CreateTaskResult`.
pub const MODEL_IMMEDIATE_RESPONSE: &str = "io.modelcontextprotocol/model-immediate-response";

/// The tasks extension's identifier, the key under `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The idempotency key of a request (our extension, rs.mcp-tasks, not the spec's), from
/// its `params.idempotencyKey` (`param`) and its `_meta.idempotencyKey` (`meta`),
/// checked: a string of 1 to [`IDEMPOTENCY_KEY_MAX_BYTES`] bytes, the same in both
/// places when both are given. `Ok(None)` when the request carries none; `Err` is the
/// message of the -32602 to answer with. Pure: what a server's `tools/call` and a
/// client hosting tasks (MCP 2025-11-25) both check.
pub fn idempotency_key<'a>(
    param: Option<&'a serde_json::Value>,
    meta: Option<&'a serde_json::Value>,
) -> Result<Option<&'a str>, String> {
    let text = |value: Option<&'a serde_json::Value>, at: &str| match value {
        None => Ok(None),
        Some(serde_json::Value::String(key)) => Ok(Some(key.as_str())),
        Some(_) => Err(format!(
            "Invalid params: {at}{IDEMPOTENCY_KEY} must be a string of 1 to \
             {IDEMPOTENCY_KEY_MAX_BYTES} bytes"
        )),
    };
    let key = match (text(param, "params.")?, text(meta, "_meta.")?) {
        (Some(a), Some(b)) if a != b => {
            return Err(format!(
                "Invalid params: params.{IDEMPOTENCY_KEY} and _meta.{IDEMPOTENCY_KEY} differ"
            ));
        }
        (Some(key), _) | (None, Some(key)) => key,
        (None, None) => return Ok(None),
    };
    if key.is_empty() || key.len() > IDEMPOTENCY_KEY_MAX_BYTES {
        return Err(format!(
            "Invalid params: {IDEMPOTENCY_KEY} must be a string of 1 to \
             {IDEMPOTENCY_KEY_MAX_BYTES} bytes (got {} bytes)",
            key.len()
        ));
    }
    Ok(Some(key))
}

/// What a store keeps with a keyed task to tell a repeat from a reuse: the SHA-256
/// (lowercase hex) of `name` (a tool's name, or a request's method), a NUL, and `args`
/// as canonical JSON (object members in byte order of their names, no whitespace,
/// numbers as serde_json writes them). The same call gives the same fingerprint
/// whatever the order of its members.
pub fn idempotency_fingerprint(name: &str, args: &JsonObject) -> String {
    use sha2::{Digest, Sha256};
    let mut text = String::with_capacity(name.len() + 64);
    text.push_str(name);
    text.push('\0');
    canonical_object(args, &mut text);
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `value` as canonical JSON, appended to `out`.
fn canonical(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::Object(obj) => canonical_object(obj, out),
        serde_json::Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn canonical_object(obj: &JsonObject, out: &mut String) {
    let mut members: Vec<(&String, &serde_json::Value)> = obj.iter().collect();
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push('{');
    for (i, (name, value)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::Value::String(name.clone()).to_string());
        out.push(':');
        canonical(value, out);
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn idempotency_keys_are_checked_as_the_server_checks_them() {
        let (k, other) = (json!("k"), json!("other"));
        assert_eq!(idempotency_key(None, None), Ok(None));
        assert_eq!(idempotency_key(Some(&k), None), Ok(Some("k")));
        assert_eq!(idempotency_key(None, Some(&k)), Ok(Some("k")));
        assert_eq!(idempotency_key(Some(&k), Some(&k)), Ok(Some("k")));
        let differ = idempotency_key(Some(&k), Some(&other)).expect_err("keys differ");
        assert!(differ.contains("differ"), "{differ}");
        for bad in [json!(""), json!("x".repeat(256)), json!(7), json!({"k": 1})] {
            assert!(idempotency_key(Some(&bad), None).is_err(), "{bad}");
            assert!(idempotency_key(None, Some(&bad)).is_err(), "{bad}");
        }
        let longest = json!("é".repeat(127));
        assert!(idempotency_key(Some(&longest), None).is_ok());
    }

    #[test]
    fn fingerprints_ignore_member_order_and_tell_arguments_apart() {
        let a = json!({"b": [1, {"y": 2, "x": "s"}], "a": null});
        let b = json!({"a": null, "b": [1, {"x": "s", "y": 2}]});
        let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
            panic!("objects");
        };
        assert_eq!(
            idempotency_fingerprint("tool", a),
            idempotency_fingerprint("tool", b)
        );
        assert_ne!(
            idempotency_fingerprint("tool", a),
            idempotency_fingerprint("other", a)
        );
        // SHA-256 of "tool\0{}" (as `printf 'tool\0{}' | sha256sum` says).
        assert_eq!(
            idempotency_fingerprint("tool", &JsonObject::new()),
            "cea28cfd1128c5c2e5eb2dac8b62c0d17fbd1dd177eaa538b0ef6f18de248964"
        );
    }
}
