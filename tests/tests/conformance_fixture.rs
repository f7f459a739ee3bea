//! The conformance fixture's notifications over Streamable HTTP: `ToolContext::progress`
//! and `ToolContext::log` on both revisions (MCP 2026-07-28: on the request's own SSE
//! reply; 2025-11-25: on the request's stream in the session, logs filtered by
//! `logging/setLevel`), and none from a task.

use std::time::Duration;

use mcp_server::http::HttpConfig;
use mcp_server::{RuntimeConfig, TaskPolicy, ToolContext, ToolDef, demo};
use mcp_tests::legacy::init_params;
use mcp_tests::server_harness::{Reply, TestServer, meta, request};
use serde_json::{Value, json};

/// A task tool that reports progress and logs (neither may reach anyone).
fn reporting_task() -> ToolDef {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}
    ToolDef::new(
        "reporting_task",
        TaskPolicy::Required,
        |ctx: ToolContext, _args: NoArgs| async move {
            ctx.progress(1.0, Some(2.0), Some("half".into())).await;
            ctx.log(mcp_protocol::types::LoggingLevel::Error, "from a task")
                .await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok(mcp_protocol::v2026::CallToolResult::new(vec![
                mcp_protocol::types::ContentBlock::text("done"),
            ]))
        },
    )
    .expect("a valid tool")
    .description("Reports progress and logs from a task")
}

async fn fixture_server() -> TestServer {
    let mut tools = demo::fixtures::tools().expect("fixture tools");
    tools.push(reporting_task());
    TestServer::start_with(tools, RuntimeConfig::default(), HttpConfig::default()).await
}

/// The JSON-RPC messages of a reply: the SSE events' data, or the JSON body.
fn messages(reply: &Reply) -> Vec<Value> {
    let sse = reply
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !sse {
        return vec![reply.body.clone()];
    }
    reply
        .text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

fn notifications<'a>(all: &'a [Value], method: &str) -> Vec<&'a Value> {
    all.iter().filter(|m| m["method"] == method).collect()
}

/// The response among `all` (the last message), checked to be a result.
fn response(all: &[Value]) -> &Value {
    let last = all.last().expect("at least the response");
    assert!(last["result"].is_object(), "a result: {all:?}");
    last
}

fn meta_with(extra: Value) -> Value {
    let mut m = meta(false);
    if let (Some(m), Value::Object(extra)) = (m.as_object_mut(), extra) {
        m.extend(extra);
    }
    m
}

#[tokio::test]
async fn progress_streams_on_the_2026_response() {
    let s = fixture_server().await;
    let params = json!({"name": "test_tool_with_progress", "arguments": {},
        "_meta": meta_with(json!({"progressToken": "p-1"}))});
    let reply = s.post(&request(s.id(), "tools/call", params), &[]).await;
    assert_eq!(reply.status, 200);
    let all = messages(&reply);
    let progress = notifications(&all, "notifications/progress");
    let values: Vec<f64> = progress
        .iter()
        .map(|n| {
            assert_eq!(n["params"]["progressToken"], "p-1");
            assert_eq!(n["params"]["total"], 100.0);
            n["params"]["progress"].as_f64().expect("a number")
        })
        .collect();
    assert_eq!(values, [0.0, 50.0, 100.0], "{}", reply.text);
    assert_eq!(response(&all)["result"]["resultType"], "complete");

    // Without a token: a JSON reply, no notification.
    let params = json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": meta(false)});
    let reply = s.post(&request(s.id(), "tools/call", params), &[]).await;
    assert!(reply.body["result"].is_object(), "{}", reply.text);
    assert!(!reply.text.contains("notifications/progress"));
}

#[tokio::test]
async fn logs_reach_2026_callers_only_at_their_level() {
    let s = fixture_server().await;
    let call = |m: Value| json!({"name": "test_logging_tool", "arguments": {}, "_meta": m});
    let silent = s
        .post(&request(s.id(), "tools/call", call(meta(false))), &[])
        .await;
    assert!(
        !silent.text.contains("notifications/message"),
        "{}",
        silent.text
    );

    let info = meta_with(json!({"io.modelcontextprotocol/logLevel": "info"}));
    let reply = s
        .post(&request(s.id(), "tools/call", call(info)), &[])
        .await;
    let all = messages(&reply);
    let logs = notifications(&all, "notifications/message");
    assert_eq!(logs.len(), 3, "{}", reply.text);
    assert!(logs.iter().all(|l| l["params"]["level"] == "info"));
    response(&all);

    let error = meta_with(json!({"io.modelcontextprotocol/logLevel": "error"}));
    let reply = s
        .post(&request(s.id(), "tools/call", call(error)), &[])
        .await;
    assert!(
        !reply.text.contains("notifications/message"),
        "{}",
        reply.text
    );
}

#[tokio::test]
async fn a_task_sends_no_progress() {
    let s = fixture_server().await;
    let mut m = meta(true);
    if let Some(m) = m.as_object_mut() {
        m.insert("progressToken".into(), json!("task-token"));
        m.insert("io.modelcontextprotocol/logLevel".into(), json!("debug"));
    }
    let params = json!({"name": "reporting_task", "arguments": {}, "_meta": m});
    let reply = s.post(&request(s.id(), "tools/call", params), &[]).await;
    let all = messages(&reply);
    assert_eq!(all.len(), 1, "only the response: {}", reply.text);
    let task_id = response(&all)["result"]["task"]["taskId"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| {
            response(&all)["result"]["taskId"]
                .as_str()
                .map(str::to_owned)
        })
        .expect("a task id");
    let done = s.poll_status(&task_id, "completed").await;
    assert_eq!(done["status"], "completed");
}

/// A 2025-11-25 session over HTTP: its id.
async fn open_session(s: &TestServer) -> String {
    let reply = s
        .post(&request(s.id(), "initialize", init_params()), &[])
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert!(
        reply.body["result"]["capabilities"]["logging"].is_object(),
        "logging declared: {}",
        reply.text
    );
    let id = reply
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    s.post(&initialized, &[("mcp-session-id", &id)]).await;
    id
}

#[tokio::test]
async fn progress_and_logs_in_a_2025_session() {
    let s = fixture_server().await;
    let session = open_session(&s).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let params = json!({"name": "test_tool_with_progress", "arguments": {},
        "_meta": {"progressToken": 7}});
    let reply = s
        .post(&request(s.id(), "tools/call", params), &headers)
        .await;
    let all = messages(&reply);
    let progress = notifications(&all, "notifications/progress");
    assert_eq!(progress.len(), 3, "{}", reply.text);
    assert!(progress.iter().all(|p| p["params"]["progressToken"] == 7));
    assert!(response(&all)["result"]["content"].is_array());

    // Every level until the client sets one; then only at or above it.
    let logging = json!({"name": "test_tool_with_logging", "arguments": {}});
    let reply = s
        .post(&request(s.id(), "tools/call", logging.clone()), &headers)
        .await;
    assert_eq!(
        notifications(&messages(&reply), "notifications/message").len(),
        3,
        "{}",
        reply.text
    );
    let set = s
        .post(
            &request(s.id(), "logging/setLevel", json!({"level": "warning"})),
            &headers,
        )
        .await;
    assert_eq!(set.body["result"], json!({}), "{}", set.text);
    let reply = s
        .post(&request(s.id(), "tools/call", logging), &headers)
        .await;
    assert!(
        !reply.text.contains("notifications/message"),
        "{}",
        reply.text
    );

    // Outside a session, logging/setLevel does not exist.
    let outside = s
        .post(
            &request(
                s.id(),
                "logging/setLevel",
                json!({"level": "info", "_meta": meta(false)}),
            ),
            &[],
        )
        .await;
    assert_eq!(outside.status, 404, "{}", outside.text);
}
