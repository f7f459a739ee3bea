//! `_meta` keys reserved by MCP, and the protocol version strings.
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
/// The longest idempotency key, in bytes (UTF-8); an empty key is refused too.
pub const IDEMPOTENCY_KEY_MAX_BYTES: usize = 255;
/// 2025-11-25: optional interim text for the model on a `CreateTaskResult`.
pub const MODEL_IMMEDIATE_RESPONSE: &str = "io.modelcontextprotocol/model-immediate-response";

/// The tasks extension's identifier, the key under `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
