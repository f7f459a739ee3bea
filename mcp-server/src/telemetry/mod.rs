//! OpenTelemetry: the MCP request spans of the OTel MCP semantic conventions, the task
//! spans this crate defines, over OTLP when the standard `OTEL_*` variables say so
//! (feature `otel`; [`init`] sets it up). Without the feature, or with it and nothing
//! configured, every hook here is a no-op that costs one relaxed atomic load.
//!
//! # Spans
//!
//! - **Request** (kind SERVER), one per JSON-RPC request, named `{mcp.method.name}
//!   {target}` (`tools/call greet`, `tasks/get`), by the MCP conventions: `mcp.method.name`,
//!   `mcp.protocol.version`, `mcp.session.id` (MCP 2025-11-25), `jsonrpc.request.id`,
//!   `gen_ai.tool.name` and `gen_ai.operation.name` (`execute_tool`) for `tools/call`,
//!   `gen_ai.prompt.name`, `mcp.resource.uri`, `network.transport` (`tcp` over HTTP,
//!   `pipe` over stdio), `network.protocol.name` (`http`); on an error response the
//!   status is ERROR with `error.type` (the JSON-RPC code) and `rpc.response.status_code`;
//!   a tool result with `isError` is ERROR with `error.type` `tool_error`. Its parent is
//!   the caller's W3C trace context from `params._meta` (`traceparent`, `tracestate`),
//!   else the HTTP `traceparent`/`tracestate` headers.
//! - **Task execution** (kind INTERNAL), named `execute_tool {gen_ai.tool.name}`: one per
//!   run of a task's tool, **in the trace of the `tools/call` that created the task**
//!   whichever process runs it (the creating call's trace context is kept with the task
//!   in the store, [`mcp_tasks::TraceContext`]). Attributes: `mcp.task.id`,
//!   `gen_ai.tool.name`, `gen_ai.operation.name`, `mcp.task.attempt` (the run, from 1)
//!   and `mcp.task.status` (the status the run left the task in: `completed`, `failed`,
//!   `cancelled`, or `lease_lost`). A failing tool, a task failed as worker lost or a run
//!   that lost its lease ends ERROR with `error.type` (`tool_error`, the JSON-RPC code,
//!   `lease_lost`). Events: `task claimed` (a worker node took it), `input requested`
//!   and `input answered` (each input round).
//! - Every request about a task (`tasks/get|update|cancel|result`) carries `mcp.task.id`
//!   on its request span.
//!
//! `mcp.task.id` and `mcp.task.*` are this crate's own attributes: the MCP conventions
//! define none for tasks yet, and these are named as they would be (the `mcp.` namespace,
//! the protocol's own `taskId`).
//!
//! Spans go to the tracing target [`TARGET`]; [`init`] routes that target to
//! OpenTelemetry only, never to the log output.

#[cfg(feature = "otel")]
mod setup;
#[cfg(feature = "otel")]
mod spans;

#[cfg(feature = "otel")]
pub use setup::{Telemetry, TelemetryError, init};

/// The tracing target of the spans this module makes.
pub const TARGET: &str = "mcp_tasks_server::telemetry";

#[cfg(feature = "otel")]
static ENABLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether traces are being exported (set once by [`init`]).
#[inline]
pub(crate) fn enabled() -> bool {
    #[cfg(feature = "otel")]
    {
        ENABLED.load(std::sync::atomic::Ordering::Relaxed)
    }
    #[cfg(not(feature = "otel"))]
    {
        false
    }
}

/// The trace headers an HTTP request came with, put in the request's extensions by the
/// edge when tracing is on: the parent when `_meta` names none, and the mark of the
/// `tcp` transport.
#[cfg(feature = "otel")]
#[derive(Debug, Clone, Default)]
pub(crate) struct HttpTraceHeaders {
    pub(crate) traceparent: Option<String>,
    pub(crate) tracestate: Option<String>,
}

/// The HTTP edge's hook: keeps the request's trace headers for its span.
#[inline]
pub(crate) fn http_edge(ext: &mut jsonrpsee::Extensions, headers: &axum::http::HeaderMap) {
    #[cfg(feature = "otel")]
    if enabled() {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        ext.insert(HttpTraceHeaders {
            traceparent: header("traceparent"),
            tracestate: header("tracestate"),
        });
    }
    let _ = (ext, headers);
}

/// The request span of `req` (disabled when tracing is off).
#[inline]
pub(crate) fn request_span(req: &jsonrpsee::types::Request<'_>) -> tracing::Span {
    #[cfg(feature = "otel")]
    if enabled() {
        return spans::request_span(req);
    }
    let _ = req;
    tracing::Span::none()
}

/// Records on the request span how the request ended.
#[inline]
pub(crate) fn request_done(
    span: &tracing::Span,
    method: &str,
    response: &jsonrpsee::core::server::MethodResponse,
) {
    #[cfg(feature = "otel")]
    if !span.is_none() {
        spans::request_done(span, method, response);
    }
    let _ = (span, method, response);
}

/// The trace context of the current span, to keep with a task being created (`None`
/// when tracing is off).
#[inline]
pub(crate) fn creating_context() -> Option<mcp_tasks::TraceContext> {
    #[cfg(feature = "otel")]
    if enabled() {
        return spans::current_context();
    }
    None
}

/// The span of one run of a task's tool, in the trace of `trace` (the creating call's).
#[inline]
pub(crate) fn task_span(
    task_id: &mcp_tasks::TaskId,
    tool: &str,
    attempt: u32,
    trace: Option<&mcp_tasks::TraceContext>,
) -> tracing::Span {
    #[cfg(feature = "otel")]
    if enabled() {
        return spans::task_span(task_id, tool, attempt, trace);
    }
    let _ = (task_id, tool, attempt, trace);
    tracing::Span::none()
}

/// Records on a task span the status its run left the task in, and `error` (an
/// `error.type`) when it ended in error.
#[inline]
pub(crate) fn task_done(span: &tracing::Span, status: &str, error: Option<&str>) {
    #[cfg(feature = "otel")]
    if !span.is_none() {
        spans::task_done(span, status, error);
    }
    let _ = (span, status, error);
}

/// Records on a task span how its run left the task (`after`: the record after the
/// terminal write; `None`: not written): its status, and an error for a `failed` task
/// (`error.type`: the JSON-RPC code) or a result with `isError` (`tool_error`).
#[inline]
pub(crate) fn task_finished(span: &tracing::Span, after: Option<&mcp_tasks::TaskRecord>) {
    if span.is_none() {
        return;
    }
    let Some(record) = after else {
        return task_done(span, "unwritten", Some("unwritten"));
    };
    let error = match &record.outcome {
        Some(mcp_tasks::Outcome::Error(e)) => Some(e.code.to_string()),
        Some(mcp_tasks::Outcome::Result(r)) => (r.get("isError")
            == Some(&serde_json::Value::Bool(true)))
        .then(|| "tool_error".to_owned()),
        None => None,
    };
    task_done(span, record.status.as_str(), error.as_deref());
}

/// An event on the current span (a task's input rounds, its claim).
macro_rules! task_event {
    ($($arg:tt)+) => {
        if $crate::telemetry::enabled() {
            ::tracing::info!(target: $crate::telemetry::TARGET, $($arg)+);
        }
    };
}
pub(crate) use task_event;
