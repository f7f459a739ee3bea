//! OpenTelemetry: the MCP request spans of the OTel MCP semantic conventions, the task
//! spans and metrics this crate defines, over OTLP when the standard `OTEL_*` variables
//! say so, and the metrics for a Prometheus scrape ([`Prometheus`]) (feature `otel`;
//! [`init`] sets it up). Without the feature, or with it and nothing configured, every
//! hook here is a no-op that costs an atomic load or two.
//!
//! # Spans
//!
//! - **Request** (kind SERVER), one per JSON-RPC request, named `{mcp.method.name}
//!   {target}` (`tools/call greet`, `prompts/get summary`) when the request names one of
//!   the server's tools or prompts, else `{mcp.method.name}` (`tasks/get`,
//!   `resources/read`), by the MCP conventions: `mcp.method.name` (`_OTHER` for a method
//!   the server does not have), `mcp.protocol.version`, `mcp.session.id` (MCP
//!   2025-11-25: the session's tag, a keyed hash of its id, never the id itself, see
//!   [`SealKey::session_tag`](crate::seal::SealKey::session_tag)), `jsonrpc.request.id`,
//!   `gen_ai.tool.name` and `gen_ai.operation.name` (`execute_tool`) for `tools/call`,
//!   `gen_ai.prompt.name` (both the registry's name, `_OTHER` for a name the server does
//!   not have), `mcp.resource.uri`, `network.transport` (`tcp` over HTTP, `pipe` over
//!   stdio), `network.protocol.name` (`http`); on an error response the status is ERROR
//!   with `error.type` (the JSON-RPC code) and `rpc.response.status_code`; a tool result
//!   with `isError` is ERROR with `error.type` `tool_error`. The caller's W3C trace
//!   context is read from `params._meta` (`traceparent`, `tracestate`), else the HTTP
//!   `traceparent`/`tracestate` headers; whether it becomes the span's parent or only a
//!   link is [`TelemetryConfig::trace_parents`] (by default an HTTP caller without
//!   credentials gets a trace of its own, linked to the one it named).
//! - **Task execution** (kind INTERNAL), named `execute_tool {gen_ai.tool.name}`: one per
//!   run of a task's tool, **in the trace of the `tools/call` that created the task**
//!   whichever process runs it (the creating call's trace context is kept with the task
//!   in the store, [`mcp_tasks::TraceContext`]). Attributes: `mcp.task.id`,
//!   `gen_ai.tool.name`, `gen_ai.operation.name`, `mcp.task.attempt` (the run, from 1)
//!   and `mcp.task.status` (the status the run left the task in: `completed`, `failed`,
//!   `cancelled`, or `lease_lost`). A failing tool or a run that lost its lease ends
//!   ERROR with `error.type` (`tool_error`, the JSON-RPC code of a failed task,
//!   `lease_lost`). Events: `task claimed` (a worker node took it), `input requested`
//!   and `input answered` (each input round), `task status` (attribute `status`: each
//!   change the run makes, `input_required` when it asks and `working` when answered, and
//!   the status it ends in), `task status message` (attribute `status_message`: each
//!   status message the tool sets), `lease renewal failed`.
//! - **Worker lost** (kind INTERNAL), `worker_lost {gen_ai.tool.name}`, in the same trace:
//!   the sweep of this process failed the task because its worker stopped renewing the
//!   lease; ERROR, `error.type` `worker_lost`, `mcp.task.id`, `mcp.task.status`.
//! - Every request about a task (`tasks/get|update|cancel|result`) carries `mcp.task.id`
//!   on its request span.
//!
//! `mcp.task.id` and `mcp.task.*` are this crate's own attributes: the MCP conventions
//! define none for tasks yet, and these are named as they would be (the `mcp.` namespace,
//! the protocol's own `taskId`).
//!
//! Every span name and string attribute (and the status message of an event) is cut to
//! [`MAX_ATTRIBUTE_BYTES`] (256) bytes, on a character boundary: what a caller writes in a
//! request (a resource URI, a request or task id, up to a whole request body) costs the
//! exporter no more than that.
//!
//! Spans go to the tracing target [`TARGET`]; [`init`] routes that target to
//! OpenTelemetry only, never to the log output.
//!
//! # Metrics
//!
//! As OpenTelemetry instruments (name, unit), with the Prometheus name. Label values are
//! bounded: tool names come from the server's registry (a call the server refused with a
//! JSON-RPC error is not labelled with its tool), methods from its method table (`_OTHER`
//! otherwise); never a task id, owner or session id.
//!
//! - `mcp.server.operation.duration` (s, histogram; the MCP conventions' buckets)
//!   (Prometheus `mcp_server_operation_duration_seconds`): `mcp.method.name`,
//!   `gen_ai.tool.name`, `mcp.protocol.version`, `error.type` (the JSON-RPC code,
//!   `tool_error` for `isError`).
//! - `mcp.task.created` ({task}, counter) (Prometheus `mcp_task_created_total`): by
//!   `gen_ai.tool.name`.
//! - `mcp.task.finished` ({task}, counter) (Prometheus `mcp_task_finished_total`): tasks
//!   this process moved to a terminal status (a run's outcome, or its sweep failing a task
//!   as worker lost), by `gen_ai.tool.name`, `mcp.task.status` and, for a task that did
//!   not succeed, `error.type`: `tool_error` for a result with `isError` (status
//!   `completed`: the tool ran and said it failed), the JSON-RPC code of a `failed` task,
//!   `worker_lost` for the sweep's. A task that succeeded has no `error.type`.
//! - `mcp.task.duration` (s, histogram) (Prometheus `mcp_task_duration_seconds`): from
//!   creation to that terminal status, by the same attributes.
//! - `mcp.task.queue.duration` (s, histogram) (Prometheus
//!   `mcp_task_queue_duration_seconds`): how long a task waited for the worker that claimed
//!   it (first runs), by tool.
//! - `mcp.task.input.duration` (s, histogram) (Prometheus
//!   `mcp_task_input_duration_seconds`): how long one input round waited for its answers.
//! - `mcp.task.running` ({task}, up-down counter) (Prometheus `mcp_task_running`): runs in
//!   progress in this process, by tool.
//! - `mcp.task.claims` ({task}, counter) (Prometheus `mcp_task_claims_total`): queued tasks
//!   this worker claimed, by tool.
//! - `mcp.task.lease.renewal.failures` ({renewal}, counter) (Prometheus
//!   `mcp_task_lease_renewal_failures_total`): lease renewals that failed.
//! - `db.client.operation.duration` (s, histogram; the OTel database conventions'
//!   buckets) (Prometheus `db_client_operation_duration_seconds`): each task store
//!   operation, by `db.system.name` (the store's [`backend`](mcp_tasks::TaskStore::backend):
//!   `memory`, `sqlite`, `postgresql`, `redis`, or a third-party store's own name) and
//!   `db.operation.name` (the `TaskStore` method: `create`, `get`, `resolve_input`,
//!   `claim_next`, `sweep`, `operator_counts`, ...); a failed one also by `error.type`, the
//!   [`StoreError` kind](mcp_tasks::StoreError::kind) (`not_found`, `terminal`,
//!   `lease_lost`, `unavailable`, `backend`, ...). The failures are this histogram's
//!   counts with an `error.type`: `unavailable` and `backend` are the store's faults, the
//!   other kinds its answers. Measured by a decorator around the server's store,
//!   installed by `ServerBuilder::build` only when metrics are read; the session store
//!   (`TaskStore::sessions`) and the event feed are not timed.
//! - `mcp.task.live` ({task}, gauge) (Prometheus `mcp_task_live`): the store's tasks by
//!   `mcp.task.status` (every status, zeros included), from the store's
//!   `operator_counts` at start and then every
//!   [`TelemetryConfig::live_tasks_every`] (default 30 s). A count costs O(statuses +
//!   tools) on the memory store and Redis (per shard on a Cluster: the counts are kept
//!   with every write) and one grouped pass over the stored tasks on SQLite and
//!   PostgreSQL (O(tasks)); tasks past their TTL count until the sweep deletes them. On a
//!   shared store every node reports the same totals (aggregate with `max`). A store
//!   without the operator's counts has no such gauge (said once at DEBUG).
//!
//! # Logs
//!
//! What the server writes as log lines (stderr, by `RUST_LOG`; [`init`] sets that up)
//! grows with its tasks, not with its requests:
//!
//! - **INFO**: one line per task, when this process moves it to its terminal status, on
//!   the target [`TASK_LOG_TARGET`] (`mcp_tasks_server::task`): `task finished`, its
//!   `task_id`, `status`, `tool`, `duration_ms` (from creation) and, when it did not
//!   succeed, `error` (as `error.type` above: `tool_error`, a JSON-RPC code), about 160
//!   bytes with the timestamp; the audit trail's acts that are not routine (a cancel, an
//!   answer, a refusal, an operator's act: see [`audit`](crate::audit)); and what is
//!   rare (start, shutdown, a store outage and its end, a task the sweep failed).
//! - **DEBUG**: what each request or poll does: the audit of a task's creation and of
//!   the reads that succeed, a run that found its task finished already, a worker's claim.
//! - **WARN**, **ERROR**: what an operator should look at.
//!
//! The audit trail, creations included, can go to a file of its own whatever `RUST_LOG`
//! says for stderr ([`TelemetryConfig::audit_file`]).

// Without `otel`, what the links above name (`init`, `Prometheus`...) is not built.
#![cfg_attr(not(feature = "otel"), allow(rustdoc::broken_intra_doc_links))]

#[cfg(feature = "otel")]
mod live;
#[cfg(feature = "otel")]
mod metrics;
#[cfg(feature = "otel")]
mod prometheus;
#[cfg(feature = "otel")]
mod setup;
#[cfg(feature = "otel")]
mod spans;
#[cfg(feature = "otel")]
mod store;

#[cfg(feature = "otel")]
pub use live::DEFAULT_LIVE_TASKS_EVERY;
#[cfg(feature = "otel")]
pub use prometheus::Prometheus;
#[cfg(feature = "otel")]
pub use setup::{Telemetry, TelemetryConfig, TelemetryError, init};
#[cfg(feature = "otel")]
pub use spans::{TraceParents, TraceParentsError};

/// The tracing target of the spans this module makes.
pub const TARGET: &str = "mcp_tasks_server::telemetry";

/// The tracing target of the one INFO line a task writes when this process moves it to
/// its terminal status (`task finished`, see the module docs' "Logs").
pub const TASK_LOG_TARGET: &str = "mcp_tasks_server::task";

/// The longest span name or string attribute this module exports, in bytes.
pub const MAX_ATTRIBUTE_BYTES: usize = 256;

/// `text` cut to at most [`MAX_ATTRIBUTE_BYTES`] bytes, on a character boundary.
pub(crate) fn bounded(text: &str) -> &str {
    &text[..text.floor_char_boundary(MAX_ATTRIBUTE_BYTES)]
}

/// The names a request span may carry as its target: the server's tools and prompts.
#[derive(Debug, Default)]
// Read by the spans and metrics only (feature `otel`).
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) struct Targets {
    tools: std::collections::HashSet<String>,
    prompts: std::collections::HashSet<String>,
}

#[cfg_attr(not(feature = "otel"), allow(dead_code))]
impl Targets {
    /// The server's `tools` and `prompts`.
    pub(crate) fn new(
        tools: impl IntoIterator<Item = String>,
        prompts: impl IntoIterator<Item = String>,
    ) -> Targets {
        Targets {
            tools: tools.into_iter().collect(),
            prompts: prompts.into_iter().collect(),
        }
    }

    /// Whether the server has the tool `name`.
    pub(crate) fn has_tool(&self, name: &str) -> bool {
        self.tools.contains(name)
    }

    /// Whether the server has the prompt `name`.
    pub(crate) fn has_prompt(&self, name: &str) -> bool {
        self.prompts.contains(name)
    }
}

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
/// edge when tracing is on: the caller's context when `_meta` names none, whether the
/// caller authenticated (see [`TelemetryConfig::trace_parents`]), and the mark of the
/// `tcp` transport.
#[cfg(feature = "otel")]
#[derive(Debug, Clone, Default)]
pub(crate) struct HttpTraceHeaders {
    pub(crate) traceparent: Option<String>,
    pub(crate) tracestate: Option<String>,
    pub(crate) authenticated: bool,
}

/// The HTTP edge's hook: keeps the request's trace headers for its span, and whether
/// its caller is `authenticated`.
#[inline]
pub(crate) fn http_edge(
    ext: &mut jsonrpsee::Extensions,
    headers: &axum::http::HeaderMap,
    authenticated: bool,
) {
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
            authenticated,
        });
    }
    let _ = (ext, headers, authenticated);
}

/// What is observed of one request while telemetry is on: its span and when it began.
#[derive(Debug)]
pub(crate) struct RequestObserver {
    span: tracing::Span,
    #[cfg(feature = "otel")]
    method: String,
    #[cfg(feature = "otel")]
    metered: Option<spans::Metered>,
}

/// What the front decided about a request that its span and metrics report: its protocol
/// version and, on MCP 2025-11-25, its session. Handed in by the caller, so that this
/// module knows nothing of how a revision is decided.
#[derive(Debug, Clone, Copy, Default)]
// Read by the spans and metrics only (feature `otel`).
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) struct Served<'a> {
    /// The protocol version the request is served in, when known.
    pub(crate) protocol_version: Option<&'a str>,
    /// The MCP 2025-11-25 session, by its tag (never its id).
    pub(crate) session: Option<&'a str>,
}

/// The observer of `req` (`known`: a method this server has; `targets`: the server's
/// tools and prompts; `served`: its version and session), or `None` when neither traces
/// nor metrics are on.
#[inline]
pub(crate) fn observe(
    req: &jsonrpsee::types::Request<'_>,
    known: bool,
    targets: &Targets,
    served: Served<'_>,
) -> Option<RequestObserver> {
    #[cfg(feature = "otel")]
    if enabled() || metrics::get().is_some() {
        let span = if enabled() {
            spans::request_span(req, known, targets, served)
        } else {
            tracing::Span::none()
        };
        let metered = metrics::get().map(|_| spans::Metered::start(req, known, targets, served));
        let method = req.method_name().to_owned();
        return Some(RequestObserver {
            span,
            method,
            metered,
        });
    }
    let _ = (req, known, targets, served);
    None
}

impl RequestObserver {
    /// The request's span (to run the request in).
    pub(crate) fn span(&self) -> tracing::Span {
        self.span.clone()
    }

    /// Records how the request ended, on its span and in the metrics.
    pub(crate) fn done(self, response: &jsonrpsee::core::server::MethodResponse) {
        #[cfg(feature = "otel")]
        spans::request_done(&self.span, &self.method, self.metered, response);
        let _ = response;
    }
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

/// The store a server uses: `store` itself, or, when metrics are read, `store` wrapped
/// to time its operations (`db.client.operation.duration`).
pub(crate) fn instrument_store(
    store: std::sync::Arc<dyn mcp_tasks::TaskStore>,
) -> std::sync::Arc<dyn mcp_tasks::TaskStore> {
    #[cfg(feature = "otel")]
    if let Some(m) = metrics::get() {
        return std::sync::Arc::new(store::MeteredStore::new(store, m));
    }
    store
}

/// When metrics are read, counts `store`'s tasks by status (`mcp.task.live`) now and
/// then periodically, until `stop`.
pub(crate) fn count_live(
    store: &std::sync::Arc<dyn mcp_tasks::TaskStore>,
    stop: &tokio_util::sync::CancellationToken,
) {
    #[cfg(feature = "otel")]
    if let Some(m) = metrics::get() {
        tokio::spawn(live::count(std::sync::Arc::clone(store), m, stop.clone()));
    }
    let _ = (store, stop);
}

/// A task was created by this process (counted by tool).
#[inline]
pub(crate) fn task_created(tool: &str) {
    #[cfg(feature = "otel")]
    if let Some(m) = metrics::get() {
        m.created(tool);
    }
    let _ = tool;
}

/// What is observed of one run of a task's tool: its span, in the trace of the creating
/// call (`caller.trace_context`), and its place in the metrics.
#[derive(Debug)]
pub(crate) struct TaskRun {
    span: tracing::Span,
    /// The tool.
    tool: String,
    /// Whether the run is counted in the metrics.
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    metered: bool,
}

/// Starts observing the run `attempt` of the task `task_id` of `tool`, in the trace of
/// `trace` (the creating call's); `claimed`: the node that claimed it from the queue
/// (else it runs where it was created), which waited there since `created_at`.
#[inline]
pub(crate) fn task_run(
    task_id: &mcp_tasks::TaskId,
    tool: &str,
    attempt: u32,
    trace: Option<&mcp_tasks::TraceContext>,
    created_at: Option<mcp_tasks::Millis>,
    claimed: Option<&str>,
) -> TaskRun {
    #[cfg(feature = "otel")]
    {
        let span = if enabled() {
            spans::task_span(task_id, tool, attempt, trace)
        } else {
            tracing::Span::none()
        };
        if let Some(node) = claimed {
            task_event!(parent: &span, node, "task claimed");
        }
        let metered = metrics::get().map(|m| {
            let queued = created_at
                .filter(|_| claimed.is_some() && attempt <= 1)
                .and_then(since);
            m.started(tool, queued);
            if claimed.is_some() {
                m.claimed(tool);
            }
        });
        TaskRun {
            span,
            tool: tool.to_owned(),
            metered: metered.is_some(),
        }
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = (task_id, tool, attempt, trace, created_at, claimed);
        TaskRun {
            span: tracing::Span::none(),
            tool: tool.to_owned(),
            metered: false,
        }
    }
}

/// The time from `at` (store milliseconds) to now, if not negative.
#[cfg(feature = "otel")]
fn since(at: mcp_tasks::Millis) -> Option<std::time::Duration> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_millis();
    let elapsed = i128::try_from(now).ok()? - i128::from(at);
    u64::try_from(elapsed)
        .ok()
        .map(std::time::Duration::from_millis)
}

impl TaskRun {
    /// The run's span (the parent of the run's log span).
    pub(crate) fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// The tool being run.
    pub(crate) fn tool(&self) -> &str {
        &self.tool
    }

    /// The run wrote its outcome (`written`: the terminal write, `None` when it did
    /// not land): the task's status and its [`error_type`] on the span; counted as
    /// finished (with that `error.type`) when this write moved the task.
    pub(crate) fn finished(self, written: Option<&mcp_tasks::Transition>) {
        let Some(t) = written else {
            return self.ended("unwritten", Some("unwritten"), None);
        };
        let record = &t.record;
        let error = error_type(record);
        let moved = t.won.then_some(record);
        self.ended(record.status.as_str(), error.as_deref(), moved);
    }

    /// The run stopped because it lost its lease (the task waits again, or failed).
    pub(crate) fn lease_lost(self) {
        self.ended("lease_lost", Some("lease_lost"), None);
    }

    fn ended(self, status: &str, error: Option<&str>, moved: Option<&mcp_tasks::TaskRecord>) {
        #[cfg(feature = "otel")]
        {
            if !self.span.is_none() {
                spans::task_done(&self.span, status, error);
            }
            if let (true, Some(m)) = (self.metered, metrics::get()) {
                m.stopped(&self.tool);
                if let Some(record) = moved {
                    m.finished(&self.tool, record.status.as_str(), error, lived(record));
                }
            }
        }
        let _ = (status, error, moved, self);
    }
}

/// What a task's terminal record says went wrong, as `error.type`: the JSON-RPC code of
/// a failed task, `tool_error` for a result with `isError: true`; `None` when it
/// succeeded (or is not terminal).
pub(crate) fn error_type(record: &mcp_tasks::TaskRecord) -> Option<String> {
    match &record.outcome {
        Some(mcp_tasks::Outcome::Error(e)) => Some(e.code.to_string()),
        Some(mcp_tasks::Outcome::Result(r)) => (r.get("isError")
            == Some(&serde_json::Value::Bool(true)))
        .then(|| "tool_error".to_owned()),
        None => None,
    }
}

/// From a record's creation to its last change.
#[cfg(feature = "otel")]
fn lived(record: &mcp_tasks::TaskRecord) -> std::time::Duration {
    let ms = record.last_updated_at.saturating_sub(record.created_at);
    std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// A task this process's sweep failed as worker lost: a span in the creating call's
/// trace (ERROR, `error.type` `worker_lost`) and a finished task in the metrics.
pub(crate) fn worker_lost(record: &mcp_tasks::TaskRecord) {
    #[cfg(feature = "otel")]
    {
        let tool = record.origin.tool.as_deref().unwrap_or("");
        if enabled() {
            let span = spans::lost_span(record, tool);
            spans::task_done(&span, record.status.as_str(), Some("worker_lost"));
        }
        if let Some(m) = metrics::get() {
            m.finished(
                tool,
                record.status.as_str(),
                Some("worker_lost"),
                lived(record),
            );
        }
    }
    let _ = record;
}

/// Whether anything observes tasks (traces or metrics).
#[inline]
pub(crate) fn observing() -> bool {
    #[cfg(feature = "otel")]
    {
        enabled() || metrics::get().is_some()
    }
    #[cfg(not(feature = "otel"))]
    {
        false
    }
}

/// Time spent waiting for the answers of one input round.
#[inline]
pub(crate) fn input_waited(waited: std::time::Duration) {
    #[cfg(feature = "otel")]
    if let Some(m) = metrics::get() {
        m.input_waited(waited);
    }
    let _ = waited;
}

/// A lease renewal of a running task failed.
#[inline]
pub(crate) fn renewal_failed() {
    task_event!("lease renewal failed");
    #[cfg(feature = "otel")]
    if let Some(m) = metrics::get() {
        m.renewal_failed();
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_cut_at_the_bound_on_a_character_boundary() {
        assert_eq!(bounded("short"), "short");
        let exact = "a".repeat(MAX_ATTRIBUTE_BYTES);
        assert_eq!(bounded(&exact), exact);
        let long = "b".repeat(MAX_ATTRIBUTE_BYTES * 4096);
        assert_eq!(bounded(&long).len(), MAX_ATTRIBUTE_BYTES);
        // A two-byte character astride the bound is left out whole.
        let astride = format!("{}é{}", "c".repeat(MAX_ATTRIBUTE_BYTES - 1), "d".repeat(10));
        assert_eq!(bounded(&astride), "c".repeat(MAX_ATTRIBUTE_BYTES - 1));
        let wide = "字".repeat(MAX_ATTRIBUTE_BYTES);
        assert!(bounded(&wide).len() <= MAX_ATTRIBUTE_BYTES);
        assert!(bounded(&wide).chars().all(|c| c == '字'));
    }
}
