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

/// Arguments of `work` and `maybe`.
#[derive(Debug, Deserialize, JsonSchema)]
struct WorkArgs {
    /// How long the work takes, in milliseconds.
    #[serde(default)]
    ms: u64,
}

/// Arguments of `emit`.
#[derive(Debug, Deserialize, JsonSchema)]
struct EmitArgs {
    /// How many events the task emits.
    count: u32,
    /// The wait before each event, in milliseconds.
    #[serde(default)]
    interval_ms: u64,
}

fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::new(vec![ContentBlock::Text(TextContent::new(t))])
}

/// The default deadline of `maybe`: 10 ms. Far above what the server itself spends on a
/// call (about 0.1 ms alone, a few ms at p99 under 50 clients) and the timer's 1-ms
/// granularity, so that the tool's work, not queueing, decides which calls are promoted;
/// short enough that each client finishes dozens of calls a second, so that a 5-second
/// run measures the server rather than the sleep.
pub const DEFAULT_DEADLINE_MS: u64 = 10;

/// Waits `ms` (not at all for 0) unless cancelled; then answers `{"done_at_us": T}`.
async fn sleep_then_done(ctx: ToolContext, ms: u64) -> Result<CallToolResult, ToolError> {
    if ms > 0 {
        tokio::select! {
            _ = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
            _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
        }
    }
    Ok(text(tools::done_now()))
}

/// Emits `count` events `rs.mcp-bench.tick` with `{"at_us": T}` (the time of the emit,
/// µs since the epoch), one every `interval_ms`; then answers `{"done_at_us": T}`.
async fn emit_ticks(ctx: ToolContext, args: EmitArgs) -> Result<CallToolResult, ToolError> {
    for _ in 0..args.count {
        tokio::select! {
            _ = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
            _ = tokio::time::sleep(Duration::from_millis(args.interval_ms)) => {}
        }
        let mut payload = mcp_tasks_protocol::JsonObject::new();
        payload.insert("at_us".into(), tools::now_us().into());
        ctx.emit("rs.mcp-bench.tick", payload).await?;
    }
    Ok(text(tools::done_now()))
}

fn build(
    store: Arc<dyn mcp_tasks::TaskStore>,
    clients: usize,
    role: mcp_tasks_server::Role,
    deadline: Duration,
    up_front: bool,
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
        |ctx: ToolContext, args: WorkArgs| sleep_then_done(ctx, args.ms),
    )
    .map_err(|e| e.to_string())?;
    let maybe = ToolDef::new(
        "maybe",
        TaskPolicy::After(deadline),
        |ctx: ToolContext, args: WorkArgs| sleep_then_done(ctx, args.ms),
    )
    .map_err(|e| e.to_string())?
    .description(format!(
        "Waits `ms` milliseconds; a task if that takes over {} ms.",
        deadline.as_millis()
    ));
    let maybe = if up_front {
        maybe.record_up_front()
    } else {
        maybe
    };
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
    let emit = ToolDef::new("emit", TaskPolicy::Required, emit_ticks)
        .map_err(|e| e.to_string())?
        .description("Emits `count` timed events, one every `interval_ms`.");
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
            .tool(maybe)
            .tool(emit)
            .build(),
    )
}

/// Serves until the process is killed; prints the URL on stdout first. `deadline` is
/// `maybe`'s; `up_front` writes its calls' records when they start
/// (`ToolDef::record_up_front`).
pub async fn serve(
    listener: tokio::net::TcpListener,
    store_url: &str,
    namespace: Option<&str>,
    clients: usize,
    role: mcp_tasks_server::Role,
    deadline: Duration,
    up_front: bool,
) -> Result<(), String> {
    let store = mcp_tasks_server::store_url::open(store_url, namespace, Limits::default())
        .await
        .map_err(|e| e.to_string())?;
    let server = build(store, clients, role, deadline, up_front)?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    crate::serving::announce(&format!("http://{addr}/mcp"));
    mcp_tasks_server::http::serve(
        &server,
        listener,
        HttpConfig::default(),
        std::future::pending(),
    )
    .await
    .map_err(|e| e.to_string())
}
