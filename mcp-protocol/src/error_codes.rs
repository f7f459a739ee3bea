//! JSON-RPC and MCP error codes, as named by the specifications.

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters; also "unknown task" and "bad cursor" in MCP tasks.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;

/// MCP 2025-11-25: `resources/read` named a resource the server does not have (`data.uri`
/// names it). MCP 2026-07-28 uses [`INVALID_PARAMS`] instead (SEP-2164).
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// MCP 2025-11-25: the server needs the user to open a URL (URL-mode elicitation).
pub const URL_ELICITATION_REQUIRED: i64 = -32042;

/// MCP 2026-07-28: an HTTP routing header (`Mcp-Method`, `Mcp-Name`, ...) disagrees with the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// MCP 2026-07-28: the request needs a client capability that its `_meta` did not declare.
/// `data.requiredCapabilities` names it.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// MCP 2026-07-28: the request's protocol version is not supported by the server.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Server-defined (JSON-RPC reserves -32000..-32099 for servers): a per-session or
/// per-principal limit was reached (requests in flight, open subscriptions). The
/// message names the limit; retry once earlier requests have finished.
pub const LIMIT_EXCEEDED: i64 = -32029;

/// The code an older draft used for [`MISSING_REQUIRED_CLIENT_CAPABILITY`]; accepted on input
/// by clients talking to peers that predate the renumbering, never sent.
pub const LEGACY_MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32003;
