//! OpenTelemetry on the client's side (feature `otel`): a CLIENT span per request, by the
//! OTel MCP semantic conventions, whose W3C trace context goes to the server in
//! `params._meta` (`traceparent`, `tracestate`; SEP-414), so the server's spans continue
//! the client's trace. [`init`] sets up a process's logs and OTLP/HTTP trace export from
//! the standard `OTEL_*` variables (what `mcp-call` uses); an application with its own
//! `tracing-opentelemetry` layer needs nothing but the feature.
//!
//! The span is named `{mcp.method.name} {target}` (`tools/call greet`, `tasks/get`), with
//! `mcp.method.name`, `gen_ai.tool.name` and `gen_ai.operation.name` (`execute_tool`) for
//! `tools/call`, `mcp.task.id` for requests about a task; an error answer sets status
//! ERROR with `error.type` (the JSON-RPC code, or the client's failure). Spans go to the
//! tracing target [`TARGET`]. Without the feature, or when no OpenTelemetry layer sees
//! the target, requests go out untouched.
// `init` exists with the feature only: the link above resolves in those docs.
#![cfg_attr(not(feature = "otel"), allow(rustdoc::broken_intra_doc_links))]

#[cfg(feature = "otel")]
mod setup;

#[cfg(feature = "otel")]
pub use setup::{Telemetry, TelemetryError, init};

/// The tracing target of the client's spans.
pub const TARGET: &str = "mcp_tasks_client::telemetry";

/// The CLIENT span of a request for `method` with `params`, and the params with the
/// span's trace context added to `_meta`; `None` when nothing traces the request.
#[inline]
pub(crate) fn outgoing(
    method: &str,
    params: &impl serde::Serialize,
) -> Option<(tracing::Span, Box<serde_json::value::RawValue>)> {
    #[cfg(feature = "otel")]
    {
        traced::outgoing(method, params)
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = (method, params);
        None
    }
}

/// Records on a request's span that it failed.
#[inline]
pub(crate) fn failed(span: &tracing::Span, error: &crate::error::ClientError) {
    #[cfg(feature = "otel")]
    traced::failed(span, error);
    let _ = (span, error);
}

#[cfg(feature = "otel")]
mod traced {
    use mcp_tasks_protocol::http::ParamsHead;
    use mcp_tasks_protocol::otel::trace_context;
    use opentelemetry::trace::Status;
    use serde_json::Value;
    use serde_json::value::RawValue;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    use super::TARGET;
    use crate::error::ClientError;

    fn text(raw: Option<&RawValue>) -> Option<String> {
        serde_json::from_str::<String>(raw?.get()).ok()
    }

    pub(super) fn outgoing(
        method: &str,
        params: &impl serde::Serialize,
    ) -> Option<(tracing::Span, Box<RawValue>)> {
        if !tracing::enabled!(target: TARGET, tracing::Level::INFO) {
            return None;
        }
        let mut value = serde_json::to_value(params).ok()?;
        let written_params = value.to_string();
        let head = ParamsHead::read(Some(&written_params));
        let tool = (method == "tools/call").then(|| text(head.name)).flatten();
        let name = match &tool {
            Some(tool) => format!("{method} {tool}"),
            None => method.to_owned(),
        };
        let task_id = text(head.task_id);
        let span = tracing::info_span!(
            target: TARGET,
            "mcp.request",
            otel.name = %name,
            otel.kind = "client",
            "mcp.method.name" = method,
            "gen_ai.tool.name" = tool.as_deref(),
            "gen_ai.operation.name" = tool.as_ref().map(|_| "execute_tool"),
            "mcp.task.id" = task_id.as_deref(),
        );
        let (traceparent, tracestate) = trace_context(&span.context())?;
        if let Value::Object(members) = &mut value {
            let meta = members
                .entry("_meta")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Value::Object(meta) = meta {
                let written = [
                    ("traceparent", Some(traceparent)),
                    ("tracestate", tracestate),
                ];
                for (key, val) in written {
                    if let Some(val) = val {
                        // A context the caller put there itself wins.
                        meta.entry(key).or_insert(Value::String(val));
                    }
                }
            }
        }
        let raw = serde_json::value::to_raw_value(&value).ok()?;
        Some((span, raw))
    }

    pub(super) fn failed(span: &tracing::Span, error: &ClientError) {
        let kind = match error {
            ClientError::Rpc(e) => e.code.to_string(),
            ClientError::Timeout(_) => "timeout".to_owned(),
            _ => "client_error".to_owned(),
        };
        span.set_attribute("error.type", kind.clone());
        if let ClientError::Rpc(e) = error {
            span.set_attribute("rpc.response.status_code", e.code.to_string());
        }
        span.set_status(Status::error(kind));
    }
}
