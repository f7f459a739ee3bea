//! `mcp-tasks-client` against servers that answer wrongly: each misbehaviour must come back as a
//! typed [`ClientError`], never a panic or a hang. Every test is bounded by [`BOUND`].
//!
//! Most fakes are scripted in-process endpoints on one end of [`Connection::memory`]; the
//! HTTP ones are small axum apps on 127.0.0.1:0.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_client::{
    ClientConfig, ClientError, ClientHandler, DriverConfig, McpClient, Started,
};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::Connection;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::types::ElicitResult;
use mcp_tasks_protocol::v2026::ElicitRequestParams;
use mcp_tests::server_harness::{TASKS_EXTENSION, TestServer};
use serde_json::{Value, json};

/// The bound of one whole test.
const BOUND: Duration = Duration::from_secs(20);

/// What the fake does with one request.
enum Reply {
    /// Answers with this `result`.
    Result(Value),
    /// Answers with this JSON-RPC error.
    Error(i64, &'static str),
    /// Never answers.
    Silent,
    /// Drops the connection.
    Hangup,
}

type Script = Box<dyn FnMut(&str, &Value) -> Reply + Send>;

/// The requests a fake received, by method, in order.
#[derive(Debug, Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    fn methods(&self) -> Vec<String> {
        self.0.lock().expect("not poisoned").clone()
    }

    fn count(&self, method: &str) -> usize {
        self.methods().iter().filter(|m| *m == method).count()
    }
}

fn discover_result() -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": { "tools": {}, "extensions": { TASKS_EXTENSION: {} } },
    })
}

/// A task object with `status` (and whatever `extra` adds).
fn task(id: &str, status: &str, extra: Value) -> Value {
    let mut t = json!({
        "taskId": id,
        "status": status,
        "createdAt": "2026-07-28T10:00:00Z",
        "lastUpdatedAt": "2026-07-28T10:00:00Z",
        "ttlMs": 60000,
        "pollIntervalMs": 20,
    });
    if let (Value::Object(t), Value::Object(extra)) = (&mut t, extra) {
        t.extend(extra);
    }
    t
}

fn created(id: &str) -> Value {
    let mut t = task(id, "working", json!({}));
    t["resultType"] = json!("task");
    t
}

fn get_result(t: Value) -> Value {
    let mut t = t;
    t["resultType"] = json!("complete");
    t
}

fn ack() -> Value {
    json!({ "resultType": "complete" })
}

/// Serves the client's other end: `server/discover` is answered well, `subscriptions/listen`
/// with -32601 (no push), everything else by `script`.
fn fake(mut script: Script) -> (Connection, Seen) {
    let (client_end, mut server_end) = Connection::memory();
    let seen = Seen::default();
    let record = seen.clone();
    tokio::spawn(async move {
        while let Some(Ok(frame)) = server_end.receiver.recv().await {
            let message: Value = serde_json::from_str(&frame).expect("the client sends JSON");
            let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str()) else {
                continue; // notifications and responses
            };
            record
                .0
                .lock()
                .expect("not poisoned")
                .push(method.to_owned());
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            let reply = match method {
                "server/discover" => Reply::Result(discover_result()),
                "subscriptions/listen" => Reply::Error(-32601, "Method not found"),
                _ => script(method, &params),
            };
            let response = match reply {
                Reply::Result(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
                Reply::Error(code, message) => json!({
                    "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message }
                }),
                Reply::Silent => continue,
                Reply::Hangup => return, // drops both directions
            };
            if server_end.sender.send(response.to_string()).await.is_err() {
                return;
            }
        }
    });
    (client_end, seen)
}

fn config() -> ClientConfig {
    ClientConfig {
        request_timeout: Duration::from_secs(3),
        driver: DriverConfig {
            default_poll: Duration::from_millis(20),
            min_poll: Duration::from_millis(10),
            max_poll: Duration::from_millis(50),
            stuck_after_polls: 3,
            ..DriverConfig::default()
        },
        ..ClientConfig::default()
    }
}

/// Answers every elicitation by accepting it empty, and counts them.
#[derive(Debug, Default)]
struct Counting(Mutex<u32>);

#[async_trait]
impl ClientHandler for Counting {
    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        *self.0.lock().expect("not poisoned") += 1;
        Ok(
            serde_json::from_value(json!({ "action": "accept", "content": {} }))
                .expect("a valid ElicitResult"),
        )
    }
}

async fn connect(conn: Connection, config: ClientConfig) -> McpClient {
    McpClient::connect(conn, Arc::new(Counting::default()), config)
        .await
        .expect("the fake answers server/discover well")
}

/// `call_tool("job")` against a fake running `script`, bounded.
async fn call_against(
    script: Script,
) -> (
    Result<mcp_tasks_protocol::v2026::CallToolResult, ClientError>,
    Seen,
) {
    let (conn, seen) = fake(script);
    let client = connect(conn, config()).await;
    let result = tokio::time::timeout(BOUND, client.call_tool("job", JsonObject::new()))
        .await
        .expect("a typed answer, not a hang");
    (result, seen)
}

fn assert_protocol(result: &Result<impl std::fmt::Debug, ClientError>, needle: &str) {
    match result {
        Err(ClientError::Protocol(message)) => {
            assert!(message.contains(needle), "{message:?} lacks {needle:?}")
        }
        other => panic!("expected ClientError::Protocol({needle}..), got {other:?}"),
    }
}

#[tokio::test]
async fn a_tools_call_result_of_the_wrong_shape_is_a_protocol_error() {
    let (result, _) = call_against(Box::new(|_, _| {
        Reply::Result(json!({ "content": "not an array" }))
    }))
    .await;
    assert_protocol(&result, "malformed CallToolResult");

    let (result, _) = call_against(Box::new(|_, _| Reply::Result(json!(42)))).await;
    assert_protocol(&result, "");

    // input_required without its inputRequests
    let (result, _) = call_against(Box::new(|_, _| {
        Reply::Result(json!({ "resultType": "input_required", "requestState": 7 }))
    }))
    .await;
    assert_protocol(&result, "InputRequiredResult");
}

#[tokio::test]
async fn a_create_task_result_without_task_id_is_a_protocol_error() {
    let (result, seen) = call_against(Box::new(|_, _| {
        let mut t = created("t1");
        t.as_object_mut().expect("object").remove("taskId");
        Reply::Result(t)
    }))
    .await;
    assert_protocol(&result, "malformed CreateTaskResult");
    assert_eq!(seen.count("tasks/get"), 0);
}

#[tokio::test]
async fn an_unknown_task_status_is_a_protocol_error() {
    let (result, seen) = call_against(Box::new(|method, _| match method {
        "tools/call" => Reply::Result(created("t1")),
        "tasks/get" => Reply::Result(get_result(task("t1", "exploded", json!({})))),
        _ => Reply::Result(ack()),
    }))
    .await;
    assert_protocol(&result, "exploded");
    assert!(seen.count("tasks/get") >= 1);
}

#[tokio::test]
async fn malformed_task_states_are_protocol_errors() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "completed without result",
            task("t1", "completed", json!({})),
            "result",
        ),
        (
            "failed without error",
            task("t1", "failed", json!({})),
            "error",
        ),
        (
            "input_required without inputRequests",
            task("t1", "input_required", json!({})),
            "inputRequests",
        ),
        (
            "completed with a result that is no CallToolResult",
            task("t1", "completed", json!({ "result": { "content": 5 } })),
            "not a CallToolResult",
        ),
        (
            "another task's id",
            task("t2", "working", json!({})),
            "answered task t2",
        ),
    ];
    for (what, state, needle) in cases {
        let (result, _) = call_against(Box::new(move |method, _| match method {
            "tools/call" => Reply::Result(created("t1")),
            "tasks/get" => Reply::Result(get_result(state.clone())),
            _ => Reply::Result(ack()),
        }))
        .await;
        match &result {
            Err(ClientError::Protocol(message)) => {
                assert!(
                    message.contains(needle),
                    "{what}: {message:?} lacks {needle:?}"
                )
            }
            other => panic!("{what}: expected a protocol error, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_endless_input_required_is_task_stuck_and_cancelled() {
    let (conn, seen) = fake(Box::new(|method, _| match method {
        "tools/call" => Reply::Result(created("t1")),
        // The same key on every poll, whatever the client answers.
        "tasks/get" => Reply::Result(get_result(task(
            "t1",
            "input_required",
            json!({ "inputRequests": { "q1": {
                "method": "elicitation/create",
                "params": { "mode": "form", "message": "Again?",
                            "requestedSchema": { "type": "object", "properties": {} } }
            } } }),
        ))),
        _ => Reply::Result(ack()),
    }));
    let handler = Arc::new(Counting::default());
    let client = McpClient::connect(conn, handler.clone(), config())
        .await
        .expect("connect");
    let result = tokio::time::timeout(BOUND, client.call_tool("job", JsonObject::new()))
        .await
        .expect("a typed answer, not a hang");
    match result {
        Err(ClientError::TaskStuck { task_id, polls }) => {
            assert_eq!(task_id, "t1");
            assert!(
                polls > 3,
                "stuck after more than stuck_after_polls: {polls}"
            );
        }
        other => panic!("expected TaskStuck, got {other:?}"),
    }
    assert_eq!(*handler.0.lock().expect("not poisoned"), 1, "q1 asked once");
    assert_eq!(seen.count("tasks/update"), 1, "q1 answered once");
    assert_eq!(
        seen.count("tasks/cancel"),
        1,
        "the stuck task was cancelled"
    );
}

#[tokio::test]
async fn a_connection_dropped_mid_task_is_closed() {
    let mut polls = 0;
    let (result, seen) = call_against(Box::new(move |method, _| match method {
        "tools/call" => Reply::Result(created("t1")),
        "tasks/get" => {
            polls += 1;
            if polls < 3 {
                Reply::Result(get_result(task("t1", "working", json!({}))))
            } else {
                Reply::Hangup
            }
        }
        _ => Reply::Result(ack()),
    }))
    .await;
    assert!(
        matches!(result, Err(ClientError::Closed)),
        "expected Closed, got {result:?}"
    );
    assert_eq!(seen.count("tasks/get"), 3);
}

#[tokio::test]
async fn a_silent_server_is_a_timeout() {
    let mut cfg = config();
    cfg.request_timeout = Duration::from_millis(300);

    // Silent on tools/call.
    let (conn, _) = fake(Box::new(|_, _| Reply::Silent));
    let client = connect(conn, cfg.clone()).await;
    let result = tokio::time::timeout(BOUND, client.call_tool("job", JsonObject::new()))
        .await
        .expect("a typed answer, not a hang");
    assert!(
        matches!(result, Err(ClientError::Timeout(d)) if d == Duration::from_millis(300)),
        "{result:?}"
    );

    // Silent on tasks/get, mid-task.
    let (conn, _) = fake(Box::new(|method, _| match method {
        "tools/call" => Reply::Result(created("t1")),
        _ => Reply::Silent,
    }));
    let client = connect(conn, cfg.clone()).await;
    let result = tokio::time::timeout(BOUND, client.call_tool("job", JsonObject::new()))
        .await
        .expect("a typed answer, not a hang");
    assert!(matches!(result, Err(ClientError::Timeout(_))), "{result:?}");

    // Silent from the start: connecting times out.
    let (client_end, server_end) = Connection::memory();
    let connected = tokio::time::timeout(
        BOUND,
        McpClient::connect(client_end, Arc::new(Counting::default()), cfg),
    )
    .await
    .expect("a typed answer, not a hang");
    assert!(
        matches!(connected, Err(ClientError::Timeout(_))),
        "{connected:?}"
    );
    drop(server_end);
}

#[tokio::test]
async fn a_server_that_never_returns_a_terminal_state_expires() {
    let mut cfg = config();
    cfg.driver.max_wait = Duration::from_millis(300);
    let (conn, _) = fake(Box::new(|method, _| match method {
        "tools/call" => Reply::Result(created("t1")),
        "tasks/get" => Reply::Result(get_result(task("t1", "working", json!({})))),
        _ => Reply::Result(ack()),
    }));
    let client = connect(conn, cfg).await;
    let result = tokio::time::timeout(BOUND, client.call_tool("job", JsonObject::new()))
        .await
        .expect("a typed answer, not a hang");
    assert!(
        matches!(&result, Err(ClientError::TaskExpired { task_id }) if task_id == "t1"),
        "{result:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Over HTTP.
// ---------------------------------------------------------------------------------------

/// An axum app on 127.0.0.1:0 answering `server/discover` well and everything else with
/// `status` and `body`.
async fn http_fake(status: u16, content_type: &'static str, body: &'static str) -> String {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |request: String| async move {
            let message: Value = serde_json::from_str(&request).unwrap_or(Value::Null);
            if message["method"] == "server/discover" {
                let reply =
                    json!({ "jsonrpc": "2.0", "id": message["id"], "result": discover_result() });
                return (
                    StatusCode::OK,
                    [(header::CONTENT_TYPE, "application/json")],
                    reply.to_string(),
                )
                    .into_response();
            }
            let body = body.replace("\"ID\"", &message["id"].to_string());
            (
                StatusCode::from_u16(status).expect("a status"),
                [(header::CONTENT_TYPE, content_type)],
                body,
            )
                .into_response()
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}/mcp")
}

async fn http_call(url: &str) -> Result<mcp_tasks_protocol::v2026::CallToolResult, ClientError> {
    let client = McpClient::connect_http(url, Arc::new(Counting::default()), config())
        .await
        .expect("connect");
    tokio::time::timeout(BOUND, client.call_tool("job", JsonObject::new()))
        .await
        .expect("a typed answer, not a hang")
}

#[tokio::test]
async fn http_a_wrong_shape_is_a_protocol_error() {
    let url = http_fake(
        200,
        "application/json",
        r#"{"jsonrpc":"2.0","id":"ID","result":{"content":"nope"}}"#,
    )
    .await;
    assert_protocol(&http_call(&url).await, "malformed CallToolResult");
}

#[tokio::test]
async fn http_a_500_page_is_a_transport_error() {
    let url = http_fake(500, "text/html", "<h1>Internal Server Error</h1>").await;
    match http_call(&url).await {
        Err(ClientError::Transport(message)) => assert!(message.contains("500"), "{message}"),
        other => panic!("expected Transport, got {other:?}"),
    }
}

#[tokio::test]
async fn http_an_empty_event_stream_is_a_transport_error() {
    // 200 text/event-stream that ends without the response.
    let url = http_fake(200, "text/event-stream", ": nothing here\n\n").await;
    match http_call(&url).await {
        Err(ClientError::Transport(_)) => {}
        other => panic!("expected Transport, got {other:?}"),
    }
}

#[tokio::test]
async fn http_the_server_gone_mid_task_is_a_transport_error() {
    let server = TestServer::start().await;
    // Polling only: an open listen stream would hold the server's shutdown up.
    let mut cfg = config();
    cfg.driver.push = false;
    let client = McpClient::connect_http(&server.url, Arc::new(Counting::default()), cfg)
        .await
        .expect("connect");
    let started = client
        .call_tool_as_task("slow_compute", {
            let mut args = JsonObject::new();
            args.insert("seconds".into(), json!(30));
            args
        })
        .await
        .expect("tools/call");
    let Started::Task(handle) = started else {
        panic!("slow_compute {{seconds: 30}} made no task");
    };
    let waiting = tokio::spawn(async move { handle.wait().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.stop().await;
    let result = tokio::time::timeout(BOUND, waiting)
        .await
        .expect("a typed answer, not a hang")
        .expect("no panic");
    assert!(
        matches!(result, Err(ClientError::Transport(_) | ClientError::Closed)),
        "{result:?}"
    );
}
