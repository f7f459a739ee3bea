//! What a synchronous `tools/call` may send its caller while it runs: progress
//! (`notifications/progress`, when the request carries `_meta.progressToken`) and log
//! messages (`notifications/message`, at or above the level the caller asked for).
//!
//! Both revisions use the same notification shapes. Where they go is the request's own
//! peer: over Streamable HTTP the request's response stream (an SSE reply), on stdio the
//! connection. A task has no [`Report`]: it reports through its status message.
//!
//! **Invariant.** Knows no revision and no session: the handler that builds a `Report`
//! decides the token, the level and the peer.

use mcp_tasks_protocol::engine::Peer;
use mcp_tasks_protocol::meta::PROGRESS_TOKEN;
use mcp_tasks_protocol::types::{LoggingLevel, ProgressToken};
use mcp_tasks_protocol::v2026::{
    LoggingMessage, LoggingMessageNotificationParams, Progress, ProgressNotificationParams,
};
use serde_json::Value;

/// Where a synchronous call's notifications go, and which ones the caller wants.
#[derive(Clone, Debug, Default)]
pub(crate) struct Report {
    /// The request's own peer (its response stream); none: nothing is sent.
    pub(crate) peer: Option<Peer>,
    /// The request's `_meta.progressToken`; none: no progress is sent.
    pub(crate) progress_token: Option<ProgressToken>,
    /// The least severe level the caller wants; none: no log message is sent.
    pub(crate) log_level: Option<LoggingLevel>,
}

impl Report {
    /// Sends `notifications/progress` if the request asked for progress. A send that
    /// fails (the caller went away) is ignored: progress is advisory.
    pub(crate) async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) {
        let (Some(peer), Some(token)) = (&self.peer, &self.progress_token) else {
            return;
        };
        let mut params = ProgressNotificationParams::new(token.clone(), progress, total);
        params.message = message;
        if let Err(e) = peer.notify::<Progress>(&params).await {
            tracing::debug!(error = %e, "progress notification not sent");
        }
    }

    /// Sends `notifications/message` if `level` is at or above the caller's level.
    pub(crate) async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        let (Some(peer), Some(least)) = (&self.peer, self.log_level) else {
            return;
        };
        if level < least {
            return;
        }
        let mut params = LoggingMessageNotificationParams::new(level, data);
        params.logger = logger.map(str::to_owned);
        if let Err(e) = peer.notify::<LoggingMessage>(&params).await {
            tracing::debug!(error = %e, "log notification not sent");
        }
    }
}

/// The `progressToken` of a request `_meta` given as a JSON object (MCP 2025-11-25
/// keeps `_meta` untyped). A token of the wrong type is no token.
pub(crate) fn progress_token(
    meta: Option<&mcp_tasks_protocol::JsonObject>,
) -> Option<ProgressToken> {
    meta.and_then(|m| m.get(PROGRESS_TOKEN))
        .and_then(|t| serde_json::from_value(t.clone()).ok())
}
