//! The spans themselves (see the module docs for their names and attributes), and the
//! W3C trace context read from and written to text.

use std::time::Instant;

use jsonrpsee::core::server::MethodResponse;
use jsonrpsee::types::{Id, Request};
use mcp_tasks::{TaskId, TraceContext};
use mcp_tasks_protocol::http::ParamsHead;
use mcp_tasks_protocol::otel::parent_context as extract;
use opentelemetry::trace::Status;
use serde::Deserialize;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::{HttpTraceHeaders, Served, TARGET};

/// The trace members of a request's `_meta` (SEP-414).
#[derive(Deserialize, Default)]
struct MetaTrace<'a> {
    #[serde(borrow, default)]
    traceparent: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    tracestate: Option<std::borrow::Cow<'a, str>>,
}

fn text(raw: Option<&serde_json::value::RawValue>) -> Option<String> {
    serde_json::from_str::<String>(raw?.get()).ok()
}

fn request_id(id: &Id<'_>) -> String {
    match id {
        Id::Null => "null".to_owned(),
        Id::Number(n) => n.to_string(),
        Id::Str(s) => s.to_string(),
    }
}

pub(super) fn request_span(req: &Request<'_>, served: Served<'_>) -> tracing::Span {
    let method = req.method_name();
    let head = ParamsHead::read(req.params.as_ref().map(|p| p.get()));
    let (tool, prompt, uri) = match method {
        "tools/call" => (text(head.name), None, None),
        "prompts/get" => (None, text(head.name), None),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            (None, None, text(head.uri))
        }
        _ => (None, None, None),
    };
    let task_id = text(head.task_id);
    let name = match tool.as_deref().or(prompt.as_deref()).or(uri.as_deref()) {
        Some(target) => format!("{method} {target}"),
        None => method.to_owned(),
    };
    let ext = req.extensions();
    let (version, session) = (served.protocol_version, served.session_id);
    let http = ext.get::<HttpTraceHeaders>();
    let span = tracing::info_span!(
        target: TARGET,
        "mcp.request",
        otel.name = %name,
        otel.kind = "server",
        "mcp.method.name" = method,
        "mcp.protocol.version" = version,
        "mcp.session.id" = session,
        "jsonrpc.request.id" = %request_id(&req.id),
        "gen_ai.tool.name" = tool.as_deref(),
        "gen_ai.operation.name" = tool.as_ref().map(|_| "execute_tool"),
        "gen_ai.prompt.name" = prompt.as_deref(),
        "mcp.resource.uri" = uri.as_deref(),
        "mcp.task.id" = task_id.as_deref(),
        "network.transport" = if http.is_some() { "tcp" } else { "pipe" },
        "network.protocol.name" = http.map(|_| "http"),
    );
    let meta = head
        .meta
        .and_then(|m| serde_json::from_str::<MetaTrace<'_>>(m.get()).ok())
        .unwrap_or_default();
    let parent = match meta.traceparent.as_deref() {
        Some(tp) => extract(Some(tp), meta.tracestate.as_deref()),
        None => http.and_then(|h| extract(h.traceparent.as_deref(), h.tracestate.as_deref())),
    };
    if let Some(parent) = parent {
        // Fails only for a span OpenTelemetry does not see: nothing to continue then.
        let _ = span.set_parent(parent);
    }
    span
}

/// A request being timed for `mcp.server.operation.duration`.
#[derive(Debug)]
pub(super) struct Metered {
    started: Instant,
    /// The method, `_OTHER` for one the server does not have (bounded labels).
    method: String,
    tool: Option<String>,
    version: Option<String>,
}

impl Metered {
    pub(super) fn start(req: &Request<'_>, known: bool, served: Served<'_>) -> Metered {
        let method = if known { req.method_name() } else { "_OTHER" }.to_owned();
        let tool = (method == "tools/call")
            .then(|| text(ParamsHead::read(req.params.as_ref().map(|p| p.get())).name))
            .flatten();
        let version = served.protocol_version.map(str::to_owned);
        Metered {
            started: Instant::now(),
            method,
            tool,
            version,
        }
    }
}

pub(super) fn request_done(
    span: &tracing::Span,
    method: &str,
    metered: Option<Metered>,
    response: &MethodResponse,
) {
    let code = response.as_error_code();
    let error = match code {
        Some(code) => Some(code.to_string()),
        None if method == "tools/call" && tool_failed(response.as_json().get()) => {
            Some("tool_error".to_owned())
        }
        None => None,
    };
    if !span.is_none() {
        if let Some(error) = &error {
            span.set_attribute("error.type", error.clone());
            span.set_status(Status::error(match code {
                Some(code) => format!("JSON-RPC error {code}"),
                None => "the tool's result has isError".to_owned(),
            }));
        }
        if let Some(code) = code {
            span.set_attribute("rpc.response.status_code", code.to_string());
        }
    }
    if let (Some(m), Some(instruments)) = (metered, super::metrics::get()) {
        // A tool is named only once the server knew it (no JSON-RPC error): the label's
        // values stay the registry's.
        let tool = m.tool.as_deref().filter(|_| code.is_none());
        instruments.operation(
            m.started.elapsed(),
            m.method,
            tool,
            m.version.as_deref(),
            error.as_deref(),
        );
    }
}

/// Whether a `tools/call` response's result says `isError: true`.
fn tool_failed(response: &str) -> bool {
    #[derive(Deserialize)]
    struct Reply {
        result: Option<Flag>,
    }
    #[derive(Deserialize)]
    struct Flag {
        #[serde(rename = "isError", default)]
        is_error: bool,
    }
    response.contains("\"isError\"")
        && serde_json::from_str::<Reply>(response)
            .ok()
            .and_then(|r| r.result)
            .is_some_and(|f| f.is_error)
}

pub(super) fn current_context() -> Option<TraceContext> {
    let (traceparent, tracestate) =
        mcp_tasks_protocol::otel::trace_context(&tracing::Span::current().context())?;
    Some(TraceContext {
        traceparent,
        tracestate,
    })
}

pub(super) fn task_span(
    task_id: &TaskId,
    tool: &str,
    attempt: u32,
    trace: Option<&TraceContext>,
) -> tracing::Span {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp.task",
        otel.name = %format_args!("execute_tool {tool}"),
        otel.kind = "internal",
        "mcp.task.id" = %task_id,
        "mcp.task.attempt" = attempt,
        "gen_ai.tool.name" = tool,
        "gen_ai.operation.name" = "execute_tool",
    );
    if let Some(parent) = trace.and_then(|t| extract(Some(&t.traceparent), t.tracestate.as_deref()))
    {
        let _ = span.set_parent(parent);
    }
    span
}

/// The span saying a task failed as worker lost, in its creating call's trace.
pub(super) fn lost_span(record: &mcp_tasks::TaskRecord, tool: &str) -> tracing::Span {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp.task.lost",
        otel.name = %format_args!("worker_lost {tool}"),
        otel.kind = "internal",
        "mcp.task.id" = %record.id,
        "gen_ai.tool.name" = tool,
    );
    if let Some(parent) = record
        .trace_context
        .as_ref()
        .and_then(|t| extract(Some(&t.traceparent), t.tracestate.as_deref()))
    {
        let _ = span.set_parent(parent);
    }
    span
}

pub(super) fn task_done(span: &tracing::Span, status: &str, error: Option<&str>) {
    span.set_attribute("mcp.task.status", status.to_owned());
    tracing::info!(target: TARGET, parent: span, status, "task status");
    if let Some(error) = error {
        span.set_attribute("error.type", error.to_owned());
        span.set_status(Status::error(format!("task {status}: {error}")));
    }
}
