//! What a caller writes in a request costs the span exporter a bounded amount, and an
//! unauthenticated caller's trace context is linked, not continued (demo processes
//! exporting to an in-process OTLP receiver):
//!
//! - requests of a 2025-11-25 session (whose body may be 4 MiB) naming a 1 MiB tool, a
//!   1 MiB prompt, a 1 MiB resource URI and a 1 MiB task id, with a 1 MiB request id:
//!   every span's name and every text it carries is at most 256 bytes, an unknown tool or
//!   prompt is `_OTHER` and names no span; a known tool still names its span;
//! - with the default `--trace-parents` (`authenticated`), a caller without credentials
//!   that sends a `traceparent` gets a span in a trace of its own, linking the caller's
//!   span; a caller with a bearer token gets a span under the caller's span.

use std::path::Path;

use mcp_tests::legacy::{HttpSession, response_in};
use mcp_tests::node_harness::{Cluster, Node, post_request};
use mcp_tests::otlp::{OtlpReceiver, ReceivedSpan};
use mcp_tests::server_harness::{meta, request};
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
/// The most a span name or text may take, in bytes.
const BOUND: usize = 256;
/// What a caller writes: 1 MiB.
const HUGE: usize = 1 << 20;

fn otel_env<'a>(receiver: &'a OtlpReceiver, service: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
        ("OTEL_SERVICE_NAME", service),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ]
}

/// 1 MiB of text beginning with `start`, with a two-byte character astride byte 256 (a
/// cut that ignored character boundaries would split it).
fn huge(start: &str) -> String {
    let mut text = start.to_owned();
    text.push_str(&"x".repeat(BOUND - 1 - text.len()));
    text.push('é');
    text.push_str(&"y".repeat(HUGE - text.len()));
    text
}

/// The first 300 characters of `value`, for a message.
fn short(value: &impl std::fmt::Display) -> String {
    value.to_string().chars().take(300).collect()
}

/// The span of `service` for `method` (as `mcp.method.name` says).
async fn span_of(receiver: &OtlpReceiver, service: &str, method: &str) -> ReceivedSpan {
    receiver
        .wait_for(method, |s| {
            s.service == service && s.attr("mcp.method.name").as_deref() == Some(method)
        })
        .await
}

/// A random-enough trace id and span id for a caller.
fn caller_trace(seed: u64) -> (String, String) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    (
        format!("{:016x}{:016x}", nanos as u64, seed | 1),
        format!("{:016x}", (nanos as u64).rotate_left(29) | 1),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_request_yields_a_bounded_span() {
    const SERVICE: &str = "bounds-test";
    let receiver = OtlpReceiver::start().await;
    let node = Node::start_with_env(
        Path::new(DEMO),
        "B",
        &["--store", "memory"],
        &otel_env(&receiver, SERVICE),
    )
    .await;
    let session = HttpSession::open(&node.url).await;

    let tool = huge("tool-");
    let refused = session
        .rpc("tools/call", json!({"name": tool, "arguments": {}}))
        .await;
    assert!(refused.get("jsonrpc").is_some(), "{}", short(&refused));
    for (method, params) in [
        ("prompts/get", json!({"name": huge("prompt-")})),
        ("resources/read", json!({"uri": huge("test://huge/")})),
    ] {
        let answer = session.rpc(method, params).await;
        assert!(
            answer.get("jsonrpc").is_some(),
            "{method}: {}",
            short(&answer)
        );
    }
    // A 1 MiB task id, under a 1 MiB request id.
    let id = json!(huge("id-"));
    let mut get = request(0, "tasks/get", json!({"taskId": huge("task-")}));
    get["id"] = id.clone();
    let reply = session.post(&get, &[]).await;
    assert_eq!(reply.status, 200, "{}", short(&reply.text));
    assert!(response_in(&reply, &id)["error"].is_object());
    // A known tool still names its span.
    let greeted = session
        .rpc(
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "b"}}),
        )
        .await;
    assert!(greeted["result"].is_object(), "{}", short(&greeted));

    let call = receiver
        .wait_for("the huge tools/call", |s| {
            s.service == SERVICE
                && s.attr("mcp.method.name").as_deref() == Some("tools/call")
                && s.attr("gen_ai.tool.name").as_deref() != Some("greet")
        })
        .await;
    assert_eq!(
        call.span.name, "tools/call",
        "an unknown tool names no span"
    );
    assert_eq!(call.attr("gen_ai.tool.name").as_deref(), Some("_OTHER"));
    let prompt = span_of(&receiver, SERVICE, "prompts/get").await;
    assert_eq!(prompt.span.name, "prompts/get");
    assert_eq!(prompt.attr("gen_ai.prompt.name").as_deref(), Some("_OTHER"));
    let read = span_of(&receiver, SERVICE, "resources/read").await;
    assert_eq!(read.span.name, "resources/read", "a URI names no span");
    let uri = read.attr("mcp.resource.uri").unwrap_or_default();
    assert_eq!(uri, "test://huge/".to_owned() + &"x".repeat(BOUND - 13));
    let task = span_of(&receiver, SERVICE, "tasks/get").await;
    assert!(
        task.attr("mcp.task.id")
            .is_some_and(|t| t.starts_with("task-")),
        "{:?}",
        task.span.attributes
    );
    assert!(
        task.attr("jsonrpc.request.id")
            .is_some_and(|t| t.starts_with("id-")),
        "{:?}",
        task.span.attributes
    );
    let greet = receiver
        .wait_for("tools/call greet", |s| s.span.name == "tools/call greet")
        .await;
    assert_eq!(greet.attr("gen_ai.tool.name").as_deref(), Some("greet"));

    let spans = receiver.spans();
    let over: Vec<String> = spans
        .iter()
        .flat_map(|s| {
            s.texts()
                .into_iter()
                .filter(|(_, text)| text.len() > BOUND)
                .map(|(place, text)| format!("{}: {place} of {} bytes", s.span.name, text.len()))
        })
        .collect();
    assert!(over.is_empty(), "texts over {BOUND} bytes: {over:#?}");
    drop(node);
}

/// `params` of a 2026-07-28 request, with the caller's trace context in `_meta`.
fn traced(trace: &str, parent: &str) -> Value {
    let mut params = json!({ "_meta": meta(true) });
    params["_meta"]["traceparent"] = json!(format!("00-{trace}-{parent}-01"));
    params["_meta"]["tracestate"] = json!("caller=secret");
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthenticated_callers_trace_is_linked_not_continued() {
    let receiver = OtlpReceiver::start().await;
    let anonymous = Node::start_with_env(
        Path::new(DEMO),
        "L",
        &["--store", "memory"],
        &otel_env(&receiver, "links-anonymous"),
    )
    .await;
    let (trace, parent) = caller_trace(21);
    let listed = Cluster::new(vec![anonymous.url.clone()])
        .rpc(0, "tools/list", traced(&trace, &parent))
        .await;
    listed.result();
    let span = receiver
        .wait_for("the anonymous caller's tools/list", |s| {
            s.service == "links-anonymous"
                && s.attr("mcp.method.name").as_deref() == Some("tools/list")
        })
        .await;
    assert_ne!(span.trace_id(), trace, "a trace of its own");
    assert_eq!(span.parent_span_id(), "", "a root span");
    assert_eq!(
        span.links(),
        [(trace.clone(), parent.clone())],
        "linking the caller's span"
    );
    assert!(
        span.span.links.iter().all(|l| l.trace_state.is_empty()),
        "the caller's tracestate is not kept: {:?}",
        span.span.links
    );

    // A caller with credentials is continued.
    let authenticated = Node::start_with_env(
        Path::new(DEMO),
        "P",
        &["--store", "memory", "--bearer", "alice:alice-token"],
        &otel_env(&receiver, "links-authenticated"),
    )
    .await;
    let (trace, parent) = caller_trace(22);
    let message = request(1, "tools/list", traced(&trace, &parent));
    let client = reqwest::Client::new();
    let listed = post_request(
        &client,
        &authenticated.url,
        Some("alice-token"),
        "tools/list",
        message,
    )
    .await;
    listed.result();
    let span = receiver
        .wait_for("alice's tools/list", |s| s.trace_id() == trace)
        .await;
    assert_eq!(span.service, "links-authenticated");
    assert_eq!(span.parent_span_id(), parent, "under the caller's span");
    assert!(span.links().is_empty(), "{:?}", span.links());
    drop((anonymous, authenticated));
}
