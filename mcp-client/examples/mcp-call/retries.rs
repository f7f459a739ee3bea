//! mcp-call's safe retries (issue 50): the tools are listed first, so that a
//! task-creating call of a tool the server flags as deduplicating keyed calls carries an
//! idempotency key (a fresh one; `--idempotency-key KEY` is sent for any tool), and a
//! keyed call is sent again with it after a failure that never reached the server or,
//! for a flagged tool, a lost answer (`--no-retry`: never), each retry one line on stderr.
//!
//! Invariant: the line is the server's text made visible ([`visible`](super::console::visible)):
//! no control character of the server's reaches the terminal.

use std::sync::Arc;

use mcp_tasks_client::{ClientConfig, ClientError, McpClient, RetryConfig, Started, ToolCall};
use mcp_tasks_protocol::JsonObject;

/// `config` with retries told on stderr, or with none (`no_retry`).
pub(crate) fn configure(config: ClientConfig, no_retry: bool) -> ClientConfig {
    if no_retry {
        return ClientConfig {
            retry: RetryConfig::none(),
            ..config
        };
    }
    config.on_retry(Arc::new(|notice| {
        // "retrying tools/call (attempt 2 of 5) in 200 ms: transport: HTTP 502 ..."
        super::console::server_log(&notice.to_string());
    }))
}

/// Calls `tool` with `arguments`, with the idempotency key `key` when given (else the
/// client's own for a task-augmented call of a flagged tool), after listing the tools
/// (what tells the client which are flagged; a listing that fails only leaves none
/// flagged, the call says what is wrong).
pub(crate) async fn call(
    client: &McpClient,
    tool: &str,
    arguments: JsonObject,
    key: Option<String>,
) -> Result<Started, ClientError> {
    if let Err(e) = client.list_tools().await {
        tracing::debug!(%e, "tools/list failed: no tool is known to deduplicate keyed calls");
    }
    let mut call = ToolCall::new(tool, arguments);
    if let Some(key) = key {
        call = call.with_idempotency_key(key);
    }
    client.call_as_task(call).await
}
