//! The spans themselves (see the module docs for their names and attributes), and the
//! W3C trace context read from and written to text.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use jsonrpsee::core::server::MethodResponse;
use jsonrpsee::types::{Id, Request};
use mcp_tasks::{TaskId, TraceContext};
use mcp_tasks_protocol::http::ParamsHead;
use mcp_tasks_protocol::otel::parent_context as extract;
use opentelemetry::trace::{SpanContext, Status, TraceContextExt, TraceState};
use serde::Deserialize;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::{HttpTraceHeaders, Served, TARGET, Targets, bounded};

/// Whose W3C trace context (`traceparent` and `tracestate`, from `params._meta` or the
/// HTTP headers) a request span continues. A context it does not continue is kept as a
/// span link (without its `tracestate`), so the caller's trace can still be found from
/// the request's span; the span itself starts a trace of this server's, sampled by this
/// server's sampler.
///
/// Continuing a context hands the caller the trace's id, the span's place in it and,
/// with the parent-based sampler, the decision to record it: an anonymous caller could
/// otherwise graft this server's spans onto any trace it names (a victim's included) or
/// have every one of its requests sampled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TraceParents {
    /// Every caller's context is the request span's parent.
    Everyone,
    /// The context of an authenticated HTTP caller (one the server's authenticator
    /// accepted) and of the stdio peer (the process that started the server) is the
    /// parent; an HTTP caller without credentials is linked. The default.
    #[default]
    Authenticated,
    /// No caller's context is a parent: every request span starts a trace, linked to the
    /// caller's.
    Nobody,
}

impl TraceParents {
    /// Every setting, by the name [`FromStr`](std::str::FromStr) reads.
    pub const ALL: [(&'static str, TraceParents); 3] = [
        ("everyone", TraceParents::Everyone),
        ("authenticated", TraceParents::Authenticated),
        ("nobody", TraceParents::Nobody),
    ];
}

/// A [`TraceParents`] name that is none of `everyone`, `authenticated`, `nobody`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown trace parents {0:?}: expected everyone, authenticated or nobody")]
pub struct TraceParentsError(pub String);

impl std::str::FromStr for TraceParents {
    type Err = TraceParentsError;

    fn from_str(name: &str) -> Result<TraceParents, TraceParentsError> {
        TraceParents::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, setting)| *setting)
            .ok_or_else(|| TraceParentsError(name.to_owned()))
    }
}

/// What a span and the metrics carry instead of a method, tool or prompt name the server
/// does not have: names stay bounded and never a caller's text.
const OTHER: &str = "_OTHER";

/// [`TraceParents`] as `init` set it: 0 everyone, 1 authenticated (the default), 2
/// nobody.
static TRACE_PARENTS: AtomicU8 = AtomicU8::new(1);

/// Sets whose trace context request spans continue.
pub(super) fn set_trace_parents(setting: TraceParents) {
    let code = match setting {
        TraceParents::Everyone => 0,
        TraceParents::Authenticated => 1,
        TraceParents::Nobody => 2,
    };
    TRACE_PARENTS.store(code, Ordering::Relaxed);
}

fn trace_parents() -> TraceParents {
    match TRACE_PARENTS.load(Ordering::Relaxed) {
        0 => TraceParents::Everyone,
        2 => TraceParents::Nobody,
        _ => TraceParents::Authenticated,
    }
}

/// Whether a request's trace context is its span's parent (else a link): `http` is the
/// request's HTTP edge, `None` over stdio.
fn continues(setting: TraceParents, http: Option<&HttpTraceHeaders>) -> bool {
    match setting {
        TraceParents::Everyone => true,
        TraceParents::Authenticated => http.is_none_or(|h| h.authenticated),
        TraceParents::Nobody => false,
    }
}

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

pub(super) fn request_span(
    req: &Request<'_>,
    known: bool,
    targets: &Targets,
    served: Served<'_>,
) -> tracing::Span {
    let method = if known { req.method_name() } else { OTHER };
    let head = ParamsHead::read(req.params.as_ref().map(|p| p.get()));
    // A tool or prompt by the registry's name; anything else a request names is `_OTHER`.
    let registered = |name: String, has: fn(&Targets, &str) -> bool| {
        if has(targets, &name) {
            name
        } else {
            OTHER.to_owned()
        }
    };
    let (tool, prompt, uri) = match method {
        "tools/call" => (
            text(head.name).map(|n| registered(n, Targets::has_tool)),
            None,
            None,
        ),
        "prompts/get" => (
            None,
            text(head.name).map(|n| registered(n, Targets::has_prompt)),
            None,
        ),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            (None, None, text(head.uri))
        }
        _ => (None, None, None),
    };
    let task_id = text(head.task_id);
    let name = match tool.as_deref().or(prompt.as_deref()) {
        Some(target) if target != OTHER => format!("{method} {target}"),
        _ => method.to_owned(),
    };
    let ext = req.extensions();
    let (version, session) = (served.protocol_version, served.session);
    let http = ext.get::<HttpTraceHeaders>();
    let span = tracing::info_span!(
        target: TARGET,
        "mcp.request",
        otel.name = bounded(&name),
        otel.kind = "server",
        "mcp.method.name" = method,
        "mcp.protocol.version" = version.map(bounded),
        "mcp.session.id" = session.map(bounded),
        "jsonrpc.request.id" = bounded(&request_id(&req.id)),
        "gen_ai.tool.name" = tool.as_deref().map(bounded),
        "gen_ai.operation.name" = tool.as_ref().map(|_| "execute_tool"),
        "gen_ai.prompt.name" = prompt.as_deref().map(bounded),
        "mcp.resource.uri" = uri.as_deref().map(bounded),
        "mcp.task.id" = task_id.as_deref().map(bounded),
        "network.transport" = if http.is_some() { "tcp" } else { "pipe" },
        "network.protocol.name" = http.map(|_| "http"),
    );
    let meta = head
        .meta
        .and_then(|m| serde_json::from_str::<MetaTrace<'_>>(m.get()).ok())
        .unwrap_or_default();
    let inbound = match meta.traceparent.as_deref() {
        Some(tp) => extract(Some(tp), meta.tracestate.as_deref()),
        None => http.and_then(|h| extract(h.traceparent.as_deref(), h.tracestate.as_deref())),
    };
    if let Some(inbound) = inbound {
        if continues(trace_parents(), http) {
            // Fails only for a span OpenTelemetry does not see: nothing to continue then.
            let _ = span.set_parent(inbound);
        } else {
            span.add_link(link_to(inbound.span().span_context()));
        }
    }
    span
}

/// A link to the caller's span `caller`: its trace and span ids and flags, without its
/// `tracestate` (vendor data of a caller the server does not follow).
fn link_to(caller: &SpanContext) -> SpanContext {
    SpanContext::new(
        caller.trace_id(),
        caller.span_id(),
        caller.trace_flags(),
        caller.is_remote(),
        TraceState::default(),
    )
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
    pub(super) fn start(
        req: &Request<'_>,
        known: bool,
        targets: &Targets,
        served: Served<'_>,
    ) -> Metered {
        let method = if known { req.method_name() } else { OTHER }.to_owned();
        let tool = (method == "tools/call")
            .then(|| text(ParamsHead::read(req.params.as_ref().map(|p| p.get())).name))
            .flatten()
            .filter(|t| targets.has_tool(t));
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
            span.set_attribute("error.type", bounded(error).to_owned());
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
        otel.name = bounded(&format!("execute_tool {tool}")),
        otel.kind = "internal",
        "mcp.task.id" = bounded(task_id.as_str()),
        "mcp.task.attempt" = attempt,
        "gen_ai.tool.name" = bounded(tool),
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
        otel.name = bounded(&format!("worker_lost {tool}")),
        otel.kind = "internal",
        "mcp.task.id" = bounded(record.id.as_str()),
        "gen_ai.tool.name" = bounded(tool),
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
    let status = bounded(status);
    span.set_attribute("mcp.task.status", status.to_owned());
    tracing::info!(target: TARGET, parent: span, status, "task status");
    if let Some(error) = error.map(bounded) {
        span.set_attribute("error.type", error.to_owned());
        span.set_status(Status::error(
            bounded(&format!("task {status}: {error}")).to_owned(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{SpanId, TraceFlags, TraceId};

    use super::*;

    #[test]
    fn only_the_trusted_are_continued() {
        let anonymous = HttpTraceHeaders::default();
        let authenticated = HttpTraceHeaders {
            authenticated: true,
            ..HttpTraceHeaders::default()
        };
        let cases = [
            (TraceParents::Everyone, [true, true, true]),
            (TraceParents::Authenticated, [false, true, true]),
            (TraceParents::Nobody, [false, false, false]),
        ];
        for (setting, [anon, auth, stdio]) in cases {
            assert_eq!(continues(setting, Some(&anonymous)), anon, "{setting:?}");
            assert_eq!(
                continues(setting, Some(&authenticated)),
                auth,
                "{setting:?}"
            );
            assert_eq!(continues(setting, None), stdio, "{setting:?} over stdio");
        }
    }

    #[test]
    fn the_setting_is_kept() {
        for (_, setting) in TraceParents::ALL {
            set_trace_parents(setting);
            assert_eq!(trace_parents(), setting);
        }
        set_trace_parents(TraceParents::default());
    }

    #[test]
    fn a_link_keeps_the_ids_not_the_tracestate() {
        let caller = SpanContext::new(
            TraceId::from_bytes([1; 16]),
            SpanId::from_bytes([2; 8]),
            TraceFlags::SAMPLED,
            true,
            "vendor=secret".parse().unwrap_or_default(),
        );
        let link = link_to(&caller);
        assert_eq!(
            (link.trace_id(), link.span_id()),
            (caller.trace_id(), caller.span_id())
        );
        assert_eq!(link.trace_state().header(), "");
    }
}
