//! OpenTelemetry traces of the demo server (feature `otel`), as a collector receives them:
//! demo processes export over OTLP/HTTP (protobuf) to an in-process receiver. They run
//! with `--trace-parents everyone`: the callers here send no credentials, and their trace
//! context is continued only then (`telemetry_bounds` tests the default).
//!
//! - a request continues the caller's trace (`traceparent` in `params._meta`, else the
//!   HTTP header) with a SERVER span named and attributed by the MCP conventions, and
//!   `OTEL_SERVICE_NAME` names the service;
//! - a JSON-RPC error and a tool's `isError` result make the request span ERROR;
//! - a task's execution span is in the creating call's trace, under its SERVER span, with
//!   `mcp.task.id`; a failing tool's execution span is ERROR; a request about the task
//!   carries `mcp.task.id`;
//! - on PostgreSQL, a task created on an API node and run by a worker node: the worker's
//!   execution span continues the API node's trace; when the worker dies, the API
//!   node's sweep fails the task with a `worker_lost` span (ERROR) in that trace;
//! - a 2025-11-25 request span carries the session's `mcp.session.id` (its tag);
//! - a task's intermediate status changes (its status message, `input_required` and back
//!   to `working`) are events on its execution span;
//! - the metrics are exported over OTLP as well;
//! - `mcp-call` sends its CLIENT span's context in `_meta`: the server continues it.

use std::path::Path;

use mcp_tasks::Limits;
use mcp_tasks::conformance::{Env, PostgresFactory, StoreFactory};
use mcp_tests::legacy::{LEGACY_VERSION, init_params};
use mcp_tests::node_harness::{Cluster, Node, slow};
use mcp_tests::otlp::{OtlpReceiver, ReceivedSpan};
use mcp_tests::server_harness::{
    WAIT, accept, call_params, request, standard_headers, task_params,
};
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
/// OTLP span kind SERVER, INTERNAL; status ERROR.
const SERVER: i32 = 2;
const INTERNAL: i32 = 1;
const ERROR: i32 = 2;

/// A random-enough trace id and parent span id for one caller's trace.
fn caller_trace(seed: u64) -> (String, String) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    (
        format!("{:016x}{:016x}", nanos as u64, seed | 1),
        format!("{:016x}", (nanos as u64).rotate_left(17) | 1),
    )
}

fn traceparent(trace: &str, parent: &str) -> String {
    format!("00-{trace}-{parent}-01")
}

/// `params` with the caller's trace context in `_meta`.
fn traced(mut params: Value, trace: &str, parent: &str) -> Value {
    params["_meta"]["traceparent"] = json!(traceparent(trace, parent));
    params["_meta"]["tracestate"] = json!("test=1");
    params
}

fn otel_env<'a>(receiver: &'a OtlpReceiver, service: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
        ("OTEL_SERVICE_NAME", service),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "200"),
    ]
}

fn assert_attr(span: &ReceivedSpan, key: &str, value: &str) {
    assert_eq!(
        span.attr(key).as_deref(),
        Some(value),
        "{key} of {:?}: {:#?}",
        span.span.name,
        span.span.attributes
    );
}

async fn task_id_of(
    cluster: &Cluster,
    tool: &str,
    arguments: Value,
    trace: &str,
    parent: &str,
) -> String {
    let reply = cluster
        .rpc(
            0,
            "tools/call",
            traced(call_params(tool, arguments, true), trace, parent),
        )
        .await;
    let result = reply.result();
    assert_eq!(result["resultType"], "task", "{}", reply.text);
    result["taskId"].as_str().expect("taskId").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_and_tasks_continue_the_callers_trace() {
    let receiver = OtlpReceiver::start().await;
    let env = otel_env(&receiver, "otel-test-demo");
    let node = Node::start_with_env(
        Path::new(DEMO),
        "T",
        &["--store", "memory", "--trace-parents", "everyone"],
        &env,
    )
    .await;
    let cluster = Cluster::new(vec![node.url.clone()]);

    // A synchronous call, its trace context in `_meta`.
    let (trace, parent) = caller_trace(1);
    let reply = cluster
        .rpc(
            0,
            "tools/call",
            traced(
                call_params("greet", json!({ "name": "otel" }), false),
                &trace,
                &parent,
            ),
        )
        .await;
    reply.result();
    let server = receiver
        .wait_for("tools/call greet", |s| {
            s.trace_id() == trace && s.span.name == "tools/call greet"
        })
        .await;
    assert_eq!(server.service, "otel-test-demo", "OTEL_SERVICE_NAME");
    assert_eq!(server.span.kind, SERVER);
    assert_eq!(
        server.parent_span_id(),
        parent,
        "the caller's span is the parent"
    );
    assert_attr(&server, "mcp.method.name", "tools/call");
    assert_attr(&server, "gen_ai.tool.name", "greet");
    assert_attr(&server, "gen_ai.operation.name", "execute_tool");
    assert_attr(&server, "mcp.protocol.version", "2026-07-28");
    assert_attr(&server, "network.transport", "tcp");
    assert_attr(&server, "network.protocol.name", "http");
    assert!(server.attr("jsonrpc.request.id").is_some(), "{server:?}");
    assert_ne!(server.status_code(), ERROR);

    // No `_meta` context: the HTTP `traceparent` header is continued.
    let (header_trace, header_parent) = caller_trace(2);
    let message = request(
        99,
        "tools/list",
        json!({ "_meta": mcp_tests::server_harness::meta(true) }),
    );
    let mut post = reqwest::Client::new()
        .post(&node.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("traceparent", traceparent(&header_trace, &header_parent));
    for (name, value) in standard_headers(&message) {
        post = post.header(name, value);
    }
    let sent = tokio::time::timeout(WAIT, post.body(message.to_string()).send())
        .await
        .expect("in time")
        .expect("tools/list");
    assert!(sent.status().is_success());
    let listed = receiver
        .wait_for("tools/list", |s| s.trace_id() == header_trace)
        .await;
    assert_eq!(listed.span.name, "tools/list");
    assert_eq!(listed.parent_span_id(), header_parent);
    assert_attr(&listed, "jsonrpc.request.id", "99");

    // A JSON-RPC error: the request span is ERROR with the code.
    let (bad_trace, bad_parent) = caller_trace(3);
    let reply = cluster
        .rpc(
            0,
            "tools/call",
            traced(
                call_params("no_such_tool", json!({}), false),
                &bad_trace,
                &bad_parent,
            ),
        )
        .await;
    let code = reply.error_code().to_string();
    let refused = receiver
        .wait_for("the refused call", |s| s.trace_id() == bad_trace)
        .await;
    assert_eq!(refused.status_code(), ERROR);
    assert_attr(&refused, "error.type", &code);
    assert_attr(&refused, "rpc.response.status_code", &code);

    // A task whose tool fails (`isError`): its execution span is in the creating call's
    // trace, under its SERVER span, and ERROR.
    let (task_trace, task_parent) = caller_trace(4);
    let id = task_id_of(
        &cluster,
        "failing_job",
        json!({}),
        &task_trace,
        &task_parent,
    )
    .await;
    let call = receiver
        .wait_for("tools/call failing_job", |s| {
            s.trace_id() == task_trace && s.span.kind == SERVER
        })
        .await;
    assert_eq!(call.span.name, "tools/call failing_job");
    let run = receiver
        .wait_for("execute_tool failing_job", |s| {
            s.trace_id() == task_trace && s.span.name == "execute_tool failing_job"
        })
        .await;
    assert_eq!(run.span.kind, INTERNAL);
    assert_eq!(
        run.parent_span_id(),
        call.span_id(),
        "under the creating call"
    );
    assert_attr(&run, "mcp.task.id", &id);
    assert_attr(&run, "gen_ai.tool.name", "failing_job");
    assert_attr(&run, "mcp.task.attempt", "1");
    assert_attr(&run, "mcp.task.status", "completed");
    assert_attr(&run, "error.type", "tool_error");
    assert_eq!(run.status_code(), ERROR, "a failing tool's span is ERROR");
    assert!(
        run.span.events.iter().any(|e| e.name == "task status"),
        "{:?}",
        run.span.events
    );

    // A JSON-RPC error from the tool: the task fails, its span names the code.
    let (rpc_trace, rpc_parent) = caller_trace(5);
    let failed = task_id_of(
        &cluster,
        "protocol_error_job",
        json!({}),
        &rpc_trace,
        &rpc_parent,
    )
    .await;
    let run = receiver
        .wait_for("execute_tool protocol_error_job", |s| {
            s.trace_id() == rpc_trace && s.span.name == "execute_tool protocol_error_job"
        })
        .await;
    assert_attr(&run, "mcp.task.id", &failed);
    assert_attr(&run, "mcp.task.status", "failed");
    assert_attr(&run, "error.type", "-32603");
    assert_eq!(run.status_code(), ERROR);

    // A request about the task carries its id.
    let (get_trace, get_parent) = caller_trace(6);
    cluster
        .rpc(
            0,
            "tasks/get",
            traced(task_params(&id, true), &get_trace, &get_parent),
        )
        .await
        .result();
    let get = receiver
        .wait_for("tasks/get", |s| s.trace_id() == get_trace)
        .await;
    assert_eq!(get.span.name, "tasks/get");
    assert_attr(&get, "mcp.task.id", &id);

    // The metrics go over OTLP too.
    receiver
        .wait_for_metric("mcp.server.operation.duration")
        .await;
    receiver.wait_for_metric("mcp.task.finished").await;
    drop(node);
}

/// A request of an MCP 2025-11-25 session (`Mcp-Session-Id`): its span says the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_11_25_request_span_names_its_session() {
    let receiver = OtlpReceiver::start().await;
    let env = otel_env(&receiver, "otel-test-demo");
    let node = Node::start_with_env(
        Path::new(DEMO),
        "S",
        &["--store", "memory", "--trace-parents", "everyone"],
        &env,
    )
    .await;
    let client = reqwest::Client::new();
    let post = |message: Value, session: Option<&str>| {
        let mut post = client
            .post(&node.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(id) = session {
            post = post
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", LEGACY_VERSION);
        }
        let sent = post.body(message.to_string()).send();
        async move {
            tokio::time::timeout(WAIT, sent)
                .await
                .expect("in time")
                .expect("POST")
        }
    };
    let opened = post(request(1, "initialize", init_params()), None).await;
    assert!(opened.status().is_success(), "{opened:?}");
    let session = opened
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("initialize returns Mcp-Session-Id")
        .to_owned();
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(post(initialized, Some(&session)).await.status(), 202);
    let (trace, parent) = caller_trace(9);
    let listed = post(
        request(2, "tools/list", traced(json!({}), &trace, &parent)),
        Some(&session),
    )
    .await;
    assert!(listed.status().is_success(), "{listed:?}");
    let span = receiver
        .wait_for("the session's tools/list", |s| s.trace_id() == trace)
        .await;
    assert_eq!(span.span.name, "tools/list");
    assert_eq!(span.span.kind, SERVER);
    assert_eq!(span.parent_span_id(), parent);
    // The session's tag, a keyed hash of its id (never the id itself).
    let tag = span.attr("mcp.session.id").unwrap_or_default();
    assert!(
        tag.len() == 13 && tag.starts_with('#') && !session.contains(&tag[1..]),
        "{tag:?} of session {session}"
    );
    assert_attr(&span, "mcp.protocol.version", LEGACY_VERSION);
    drop(node);
}

/// A task's status message and its rounds of input (`input_required`, then `working`
/// again) are events on its execution span.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_changes_are_events_on_the_execution_span() {
    let receiver = OtlpReceiver::start().await;
    let env = otel_env(&receiver, "otel-test-demo");
    let node = Node::start_with_env(
        Path::new(DEMO),
        "E",
        &["--store", "memory", "--trace-parents", "everyone"],
        &env,
    )
    .await;
    let cluster = Cluster::new(vec![node.url.clone()]);
    let (trace, parent) = caller_trace(10);
    let id = task_id_of(
        &cluster,
        "confirm_delete",
        json!({ "filename": "b.txt" }),
        &trace,
        &parent,
    )
    .await;
    let waiting = cluster.poll_status(&id, "input_required", WAIT).await;
    let key = waiting["inputRequests"]
        .as_object()
        .and_then(|r| r.keys().next().cloned())
        .unwrap_or_else(|| panic!("inputRequests: {waiting}"));
    cluster
        .update_task(0, &id, json!({ key: accept(json!({ "confirm": true })) }))
        .await
        .result();
    cluster.poll_status(&id, "completed", WAIT).await;
    let run = receiver
        .wait_for("execute_tool confirm_delete", |s| {
            s.trace_id() == trace && s.span.name == "execute_tool confirm_delete"
        })
        .await;
    let names: Vec<&str> = run.span.events.iter().map(|e| e.name.as_str()).collect();
    let at = |name: &str| {
        names
            .iter()
            .position(|n| *n == name)
            .unwrap_or_else(|| panic!("no event {name}: {names:?}"))
    };
    assert!(at("input requested") < at("input answered"), "{names:?}");
    assert_eq!(
        run.event_attrs("task status", "status"),
        ["input_required", "working", "completed"],
        "{names:?}"
    );

    let (trace, parent) = caller_trace(11);
    task_id_of(&cluster, "slow_compute", slow(0.05, "e"), &trace, &parent).await;
    let run = receiver
        .wait_for("execute_tool slow_compute", |s| {
            s.trace_id() == trace && s.span.name == "execute_tool slow_compute"
        })
        .await;
    let messages = run.event_attrs("task status message", "status_message");
    assert!(
        messages.iter().any(|m| m.starts_with("e: working for")),
        "{:?}",
        run.span.events
    );
    drop(node);
}

/// A task created on an API node and run by a worker node (PostgreSQL): the worker's
/// execution span is in the creating call's trace, under the API node's SERVER span.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_continues_the_creating_calls_trace_on_postgres() {
    let Some(factory) = PostgresFactory::from_env() else {
        return;
    };
    let env = Env::new("otel", Limits::default());
    drop(factory.open(&env).await.expect("create the schema"));
    let url = std::env::var(PostgresFactory::URL_ENV)
        .unwrap_or_else(|_| PostgresFactory::DEFAULT_URL.to_owned());
    let schema = PostgresFactory::schema_for(&env.namespace);
    let receiver = OtlpReceiver::start().await;
    let args = [
        "--store",
        url.as_str(),
        "--namespace",
        schema.as_str(),
        "--lease-ms",
        "2000",
        "--trace-parents",
        "everyone",
    ];
    let api_env = otel_env(&receiver, "otel-test-api");
    let api = Node::start_with_env(
        Path::new(DEMO),
        "A",
        &[&["--role", "api"], &args[..]].concat(),
        &api_env,
    )
    .await;
    let worker_env = otel_env(&receiver, "otel-test-worker");
    let worker = Node::start_worker_with_env(Path::new(DEMO), "W", &args, &worker_env).await;
    let cluster = Cluster::new(vec![api.url.clone()]);

    let (trace, parent) = caller_trace(7);
    let id = task_id_of(
        &cluster,
        "slow_compute",
        slow(0.2, "traced"),
        &trace,
        &parent,
    )
    .await;
    cluster.poll_status(&id, "completed", WAIT).await;
    let call = receiver
        .wait_for("the API node's tools/call", |s| {
            s.trace_id() == trace && s.span.kind == SERVER
        })
        .await;
    assert_eq!(call.service, "otel-test-api");
    assert_eq!(call.span.name, "tools/call slow_compute");
    assert_eq!(call.parent_span_id(), parent);
    let run = receiver
        .wait_for("the worker's execution span", |s| {
            s.trace_id() == trace && s.span.name == "execute_tool slow_compute"
        })
        .await;
    assert_eq!(run.service, "otel-test-worker", "run by the worker node");
    assert_eq!(
        run.parent_span_id(),
        call.span_id(),
        "under the creating call"
    );
    assert_attr(&run, "mcp.task.id", &id);
    assert_attr(&run, "mcp.task.status", "completed");
    assert_ne!(run.status_code(), ERROR);
    assert!(
        run.span.events.iter().any(|e| e.name == "task claimed"),
        "the worker's claim: {:?}",
        run.span.events
    );

    // The worker dies while its (at most once) task waits for input: the API node's
    // sweep fails the task as worker lost, with a span in the creating call's trace.
    let mut worker = worker;
    let (lost_trace, lost_parent) = caller_trace(8);
    let lost = task_id_of(
        &cluster,
        "confirm_delete",
        json!({ "filename": "a.txt" }),
        &lost_trace,
        &lost_parent,
    )
    .await;
    cluster.poll_status(&lost, "input_required", WAIT).await;
    worker.kill().await;
    cluster.poll_status(&lost, "failed", WAIT).await;
    let swept = receiver
        .wait_for("worker_lost confirm_delete", |s| {
            s.trace_id() == lost_trace && s.span.name == "worker_lost confirm_delete"
        })
        .await;
    assert_eq!(swept.service, "otel-test-api", "the API node's sweep");
    assert_eq!(swept.status_code(), ERROR);
    assert_attr(&swept, "error.type", "worker_lost");
    assert_attr(&swept, "mcp.task.id", &lost);
    assert_attr(&swept, "mcp.task.status", "failed");
    drop((api, worker));
}

/// `mcp-call` (the client) exports a CLIENT span per request and sends its context in
/// `params._meta`: the server's SERVER span and the task's execution span are in the
/// client's trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_call_starts_the_trace_the_server_continues() {
    const CLIENT: i32 = 3;
    let receiver = OtlpReceiver::start().await;
    let env = otel_env(&receiver, "otel-test-demo");
    let node = Node::start_with_env(
        Path::new(DEMO),
        "C",
        &["--store", "memory", "--trace-parents", "everyone"],
        &env,
    )
    .await;
    let tokens = std::env::temp_dir().join(format!("otel-mcp-call-{}.json", std::process::id()));
    let mut call = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-call"));
    call.args(["--http", node.url.as_str(), "--no-browser", "--token-file"])
        .arg(&tokens)
        .args(["slow_compute", r#"{"seconds":0.1,"label":"c"}"#])
        .envs(otel_env(&receiver, "otel-test-client"))
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(WAIT, call.output())
        .await
        .expect("mcp-call in time")
        .expect("mcp-call runs");
    let _ = std::fs::remove_file(&tokens);
    assert!(out.status.success(), "{out:?}");

    let client = receiver
        .wait_for("mcp-call's tools/call", |s| {
            s.service == "otel-test-client" && s.span.name == "tools/call slow_compute"
        })
        .await;
    assert_eq!(client.span.kind, CLIENT);
    assert_attr(&client, "mcp.method.name", "tools/call");
    assert_attr(&client, "gen_ai.tool.name", "slow_compute");
    let trace = client.trace_id();
    let server = receiver
        .wait_for("the server's tools/call", |s| {
            s.trace_id() == trace && s.span.kind == SERVER
        })
        .await;
    assert_eq!(server.service, "otel-test-demo");
    assert_eq!(server.span.name, "tools/call slow_compute");
    assert_eq!(
        server.parent_span_id(),
        client.span_id(),
        "under the client's span"
    );
    let run = receiver
        .wait_for("the task's run", |s| {
            s.trace_id() == trace && s.span.name == "execute_tool slow_compute"
        })
        .await;
    assert_eq!(run.parent_span_id(), server.span_id());
    drop(node);
}
