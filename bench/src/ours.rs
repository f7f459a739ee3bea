//! Our server (mcp-tasks-server) with the benchmark tools, on any store.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::Limits;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::types::{ContentBlock, ElicitValue, TextContent};
use mcp_tasks_protocol::v2026::{CallToolResult, ElicitRequestFormParams, ElicitRequestParams};
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{Server, TaskPolicy, ToolContext, ToolDef, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools;

/// Arguments of `echo` and `ask`.
#[derive(Debug, Deserialize, JsonSchema)]
struct NoArgs {}

/// Arguments of `work`.
#[derive(Debug, Deserialize, JsonSchema)]
struct WorkArgs {
    /// How long the work takes, in milliseconds.
    #[serde(default)]
    ms: u64,
}

fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::new(vec![ContentBlock::Text(TextContent::new(t))])
}

fn build(
    store: Arc<dyn mcp_tasks::TaskStore>,
    clients: usize,
    role: mcp_tasks_server::Role,
) -> Result<Server, String> {
    let echo = ToolDef::new(
        "echo",
        TaskPolicy::Synchronous,
        |_ctx, _args: NoArgs| async { Ok(text("hello")) },
    )
    .map_err(|e| e.to_string())?;
    let work = ToolDef::new(
        "work",
        TaskPolicy::Required,
        |ctx: ToolContext, args: WorkArgs| async move {
            if args.ms > 0 {
                tokio::select! {
                    _ = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
                    _ = tokio::time::sleep(Duration::from_millis(args.ms)) => {}
                }
            }
            Ok(text(tools::done_now()))
        },
    )
    .map_err(|e| e.to_string())?;
    let ask = ToolDef::new(
        "ask",
        TaskPolicy::Required,
        |ctx: ToolContext, _args: NoArgs| async move {
            let form: ElicitRequestFormParams = serde_json::from_value(tools::ask_form())
                .map_err(|e| ToolError::rpc(error_codes::INTERNAL_ERROR, e.to_string()))?;
            let answer = ctx.elicit(ElicitRequestParams::Form(form)).await?;
            let name = match answer.content.as_ref().and_then(|c| c.get("name")) {
                Some(ElicitValue::String(s)) => s.clone(),
                _ => "nobody".to_owned(),
            };
            Ok(text(format!("hello {name}")))
        },
    )
    .map_err(|e| e.to_string())?;
    // Room for every load-generator connection: they all come as one anonymous principal,
    // and a push client has two requests in flight (its `subscriptions/listen` stream and
    // its next call).
    Ok(
        Server::builder("mcp-tasks-bench", env!("CARGO_PKG_VERSION"))
            .store(store)
            .role(role)
            .max_inflight_requests(clients.max(128) * 2)
            .max_subscriptions_per_principal(clients.max(16))
            .tool(echo)
            .tool(work)
            .tool(ask)
            .build(),
    )
}

/// Serves until the process is killed; prints the URL on stdout first.
pub async fn serve(
    listener: tokio::net::TcpListener,
    store_url: &str,
    namespace: Option<&str>,
    clients: usize,
    role: mcp_tasks_server::Role,
) -> Result<(), String> {
    let store = mcp_tasks_server::store_url::open(store_url, namespace, Limits::default())
        .await
        .map_err(|e| e.to_string())?;
    let server = build(store, clients, role)?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    crate::announce(&format!("http://{addr}/mcp"));
    mcp_tasks_server::http::serve(
        &server,
        listener,
        HttpConfig::default(),
        std::future::pending(),
    )
    .await
    .map_err(|e| e.to_string())
}
