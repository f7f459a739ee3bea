//! The `curl` command the demo prints at start.

/// The `curl` command printed at start: a complete MCP 2026-07-28 `tools/call` of
/// `slow_compute` that asks for a task, with every header and `_meta` key that revision
/// requires (SEP-2243's `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`).
pub(crate) fn try_it(url: &str) -> String {
    use mcp_tasks_protocol::http::{
        MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, encode_header_value,
    };
    use mcp_tasks_protocol::meta::{
        CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION, PROTOCOL_VERSION_2026_07_28,
        TASKS_EXTENSION,
    };
    use mcp_tasks_protocol::method::Request;
    let method = mcp_tasks_protocol::v2026::CallTool::METHOD;
    let tool = "slow_compute";
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {
            "name": tool,
            "arguments": { "seconds": 5 },
            "_meta": {
                PROTOCOL_VERSION: PROTOCOL_VERSION_2026_07_28,
                CLIENT_INFO: { "name": "curl", "version": "0" },
                CLIENT_CAPABILITIES: { "extensions": { TASKS_EXTENSION: {} } },
            },
        },
    });
    let headers = [
        ("content-type", "application/json".to_owned()),
        ("accept", "application/json, text/event-stream".to_owned()),
        (MCP_PROTOCOL_VERSION, PROTOCOL_VERSION_2026_07_28.to_owned()),
        (MCP_METHOD, method.to_owned()),
        (MCP_NAME, encode_header_value(tool)),
    ];
    let mut command = format!("  curl -s {url}");
    for (name, value) in headers {
        command.push_str(&format!(" \\\n    -H '{name}: {value}'"));
    }
    command.push_str(&format!(" \\\n    -d '{body}'"));
    command
}
