//! The Streamable HTTP conventions both sides follow: header names, and which member of
//! a request's params the `Mcp-Name` header repeats.

use serde::Deserialize;

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

/// The prefix of the headers that mirror tool arguments (SEP-2243): `Mcp-Param-{Name}`.
pub const MCP_PARAM_PREFIX: &str = "mcp-param-";

/// The JSON Schema annotation of a tool's input property that names the header mirroring
/// it (SEP-2243).
pub const X_MCP_HEADER: &str = "x-mcp-header";

#[cfg(test)]
mod tests {
    use super::routed_name;

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
