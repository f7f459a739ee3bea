//! mcp-call's safe retries (issue 50): each task-creating call carries an idempotency
//! key (a fresh one, or `--idempotency-key KEY`), and a call whose answer was lost is
//! sent again with it (`--no-retry`: never), each retry one line on stderr.
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
/// client's own for a task-augmented call).
pub(crate) async fn call(
    client: &McpClient,
    tool: &str,
    arguments: JsonObject,
    key: Option<String>,
) -> Result<Started, ClientError> {
    let mut call = ToolCall::new(tool, arguments);
    if let Some(key) = key {
        call = call.with_idempotency_key(key);
    }
    client.call_as_task(call).await
}
