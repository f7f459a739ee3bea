//! The conformance fixture over Streamable HTTP on both revisions (MCP 2026-07-28 and a
//! 2025-11-25 session): `ToolContext::progress` and `ToolContext::log` (2026-07-28: on
//! the request's own SSE reply; 2025-11-25: on the request's stream in the session, logs
//! filtered by `logging/setLevel`); none from a task, on any stream (the POST reply, the
//! standalone GET stream, `subscriptions/listen`), where `ToolContext::status` is the
//! progress channel (the task's `statusMessage`); and the JSON Schema 2020-12 input
//! schema of `json_schema_2020_12_tool` listed exactly as registered.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_protocol::error_codes;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{RuntimeConfig, TaskPolicy, ToolContext, ToolDef, demo};
use mcp_tests::legacy::init_params;
use mcp_tests::server_harness::{
    Reply, SseStream, TestServer, WAIT, meta, open_legacy_session, request,
};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// How long a stream is watched for notifications that must not come.
const QUIET: Duration = Duration::from_millis(300);

/// The steps of [`reporting_task`], held by the test.
#[derive(Default)]
struct Gates {
    /// Released by the test: the tool starts reporting.
    start: Notify,
    /// Notified by the tool once it has set its status, reported progress and logged.
    reached: Notify,
    /// Released by the test: the tool finishes.
    release: Notify,
}

/// What [`reporting_task`] sets as its status message.
const STATUS: &str = "1 of 2 steps done";
/// The message of the progress it reports (which must reach no one).
const PROGRESS_MESSAGE: &str = "half";

/// A task tool that sets its status message, reports progress and logs (neither of the
/// last two may reach anyone), each step gated by the test.
fn reporting_task(gates: Arc<Gates>) -> ToolDef {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}
    ToolDef::new(
        "reporting_task",
        TaskPolicy::Required,
        move |ctx: ToolContext, _args: NoArgs| {
            let gates = Arc::clone(&gates);
            async move {
                gates.start.notified().await;
                ctx.status(STATUS).await?;
                ctx.progress(1.0, Some(2.0), Some(PROGRESS_MESSAGE.into()))
                    .await;
                ctx.log(
                    mcp_tasks_protocol::types::LoggingLevel::Error,
                    "from a task",
                )
                .await;
                gates.reached.notify_one();
                gates.release.notified().await;
                Ok(mcp_tasks_protocol::v2026::CallToolResult::new(vec![
                    mcp_tasks_protocol::types::ContentBlock::text("done"),
                ]))
            }
        },
    )
    .expect("a valid tool")
    .description("Sets its status, reports progress and logs from a task")
}

/// The name of the test's own tool registered with [`schema_2020_12`].
const SCHEMA_COPY: &str = "schema_2020_12_copy";

/// The input schema `json_schema_2020_12_tool` registers (mcp-tasks-server's
/// `demo::fixtures`), written out here independently: `$schema`, `$defs` with an
/// `$anchor`, a `$ref`, `allOf`/`anyOf`, `if`/`then`/`else`, `additionalProperties`.
fn schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"}, "email": {"type": "string"}},
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

/// The test's own tool with [`schema_2020_12`] as its input schema.
fn schema_copy() -> ToolDef {
    let Value::Object(schema) = schema_2020_12() else {
        panic!("the schema is an object")
    };
    ToolDef::new(
        SCHEMA_COPY,
        TaskPolicy::Synchronous,
        |_ctx, args: mcp_tasks_protocol::JsonObject| async move {
            Ok(mcp_tasks_protocol::v2026::CallToolResult::new(vec![
                mcp_tasks_protocol::types::ContentBlock::text(Value::Object(args).to_string()),
            ]))
        },
    )
    .and_then(|t| t.input_schema(schema))
    .expect("a valid tool")
}

async fn fixture_server() -> (TestServer, Arc<Gates>) {
    let gates = Arc::new(Gates::default());
    let mut tools = demo::fixtures::tools().expect("fixture tools");
    tools.push(reporting_task(Arc::clone(&gates)));
    tools.push(schema_copy());
    let s = TestServer::start_with(tools, RuntimeConfig::default(), HttpConfig::default()).await;
    (s, gates)
}

/// Waits (bounded) until the tool has reported.
async fn reached(gates: &Gates) {
    tokio::time::timeout(WAIT, gates.reached.notified())
        .await
        .expect("the task reached its report in time");
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
    let (s, _) = fixture_server().await;
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
    let (s, _) = fixture_server().await;
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

/// Reads `stream` until a task status `status` for `task_id` (2026-07-28
/// `notifications/tasks` or 2025-11-25 `notifications/tasks/status`), failing on any
/// `notifications/progress` or `notifications/message`; returns the statuses seen.
async fn statuses_until(stream: &mut SseStream, task_id: &str, status: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    let read = tokio::time::timeout(WAIT, async {
        loop {
            let event = stream
                .next_event(WAIT)
                .await
                .expect("the stream stays open")
                .json();
            let method = event["method"].as_str().unwrap_or_default();
            assert!(
                !matches!(method, "notifications/progress" | "notifications/message"),
                "a task's report reached a stream: {event}"
            );
            if matches!(method, "notifications/tasks" | "notifications/tasks/status")
                && event["params"]["taskId"] == task_id
            {
                seen.push(event["params"].clone());
                if event["params"]["status"] == status {
                    return;
                }
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no {status} for {task_id}; saw {seen:?}");
    seen
}

/// Whatever `stream` carries within [`QUIET`] must be no progress and no log.
async fn no_reports_within_quiet(stream: &mut SseStream) {
    if let Some(event) = stream.event_within(QUIET).await {
        let event = event.json();
        assert!(
            !matches!(
                event["method"].as_str(),
                Some("notifications/progress" | "notifications/message")
            ),
            "a task's report reached a stream: {event}"
        );
    }
}

/// The status message the task shows once it has reported: its `status`, never the
/// progress's message.
fn assert_status_message(task: &Value) {
    assert_eq!(task["status"], "working", "{task}");
    assert_eq!(task["statusMessage"], STATUS, "{task}");
}

#[tokio::test]
async fn a_2026_task_sends_no_progress_on_its_reply_nor_on_listen() {
    let (s, gates) = fixture_server().await;
    let mut m = meta(true);
    if let Some(m) = m.as_object_mut() {
        m.insert("progressToken".into(), json!("task-token"));
        m.insert("io.modelcontextprotocol/logLevel".into(), json!("debug"));
    }
    let params = json!({"name": "reporting_task", "arguments": {}, "_meta": m});
    let reply = s.post(&request(s.id(), "tools/call", params), &[]).await;
    let all = messages(&reply);
    assert_eq!(all.len(), 1, "only the response: {}", reply.text);
    let result = &response(&all)["result"];
    assert_eq!(result["resultType"], "task", "{}", reply.text);
    let task_id = result["taskId"].as_str().expect("a task id").to_owned();

    // Listening (and inviting logs) before the task reports.
    let mut listen_meta = meta(true);
    listen_meta["io.modelcontextprotocol/logLevel"] = json!("debug");
    listen_meta["progressToken"] = json!("listen-token");
    let listen = request(
        s.id(),
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [task_id]}, "_meta": listen_meta}),
    );
    let mut stream = s.open_stream(&listen, &[]).await;
    assert_eq!(stream.status, 200);
    let ack = stream.next_event(WAIT).await.expect("an ack").json();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );

    gates.start.notify_one();
    reached(&gates).await;
    let working = s.get_task(&task_id).await;
    assert_status_message(working.result());
    let seen = statuses_until(&mut stream, &task_id, "working").await;
    assert!(!seen.is_empty());
    no_reports_within_quiet(&mut stream).await;

    gates.release.notify_one();
    let seen = statuses_until(&mut stream, &task_id, "completed").await;
    assert_eq!(
        seen.last().map(|t| &t["result"]["content"][0]["text"]),
        Some(&json!("done")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .all(|t| t.get("statusMessage").is_none_or(|m| m == STATUS)),
        "only the status the tool set: {seen:?}"
    );
    no_reports_within_quiet(&mut stream).await;
}

/// A 2025-11-25 session over HTTP (logging declared): its id.
async fn open_session(s: &TestServer) -> String {
    let (id, result) = open_legacy_session(s, init_params()).await;
    assert!(
        result["capabilities"]["logging"].is_object(),
        "logging declared: {result}"
    );
    id
}

#[tokio::test]
async fn progress_and_logs_in_a_2025_session() {
    let (s, _) = fixture_server().await;
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

#[tokio::test]
async fn a_2025_task_sends_no_progress_on_its_reply_nor_on_the_standalone_stream() {
    let (s, gates) = fixture_server().await;
    let session = open_session(&s).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    // The standalone stream first; no logging/setLevel, so every level would be sent.
    let mut standalone = s.get_stream(&headers).await;
    assert_eq!(standalone.status, 200);

    let params = json!({"name": "reporting_task", "arguments": {}, "task": {},
        "_meta": {"progressToken": "task-token"}});
    let reply = s
        .post(&request(s.id(), "tools/call", params), &headers)
        .await;
    let all = messages(&reply);
    assert_eq!(all.len(), 1, "only the response: {}", reply.text);
    let task = &response(&all)["result"]["task"];
    let task_id = task["taskId"].as_str().expect("a task id").to_owned();

    gates.start.notify_one();
    reached(&gates).await;
    let got = s
        .post(
            &request(s.id(), "tasks/get", json!({"taskId": task_id})),
            &headers,
        )
        .await;
    assert_status_message(got.result());
    no_reports_within_quiet(&mut standalone).await;

    gates.release.notify_one();
    let seen = statuses_until(&mut standalone, &task_id, "completed").await;
    assert!(
        seen.iter()
            .all(|t| t.get("statusMessage").is_none_or(|m| m == STATUS)),
        "only the status the tool set: {seen:?}"
    );
    no_reports_within_quiet(&mut standalone).await;
    let result = s
        .post(
            &request(s.id(), "tasks/result", json!({"taskId": task_id})),
            &headers,
        )
        .await;
    let all = messages(&result);
    assert_eq!(all.len(), 1, "only the result: {}", result.text);
    assert_eq!(response(&all)["result"]["content"][0]["text"], "done");
}

/// Every tool `tools/list` lists (each page), by name.
async fn listed_tools(s: &TestServer, headers: &[(&str, &str)], with_meta: bool) -> Vec<Value> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..20 {
        let mut params = json!({});
        if with_meta {
            params["_meta"] = meta(false);
        }
        if let Some(c) = &cursor {
            params["cursor"] = json!(c);
        }
        let reply = s
            .post(&request(s.id(), "tools/list", params), headers)
            .await;
        let page = reply.result();
        tools.extend(page["tools"].as_array().expect("tools").iter().cloned());
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return tools,
        }
    }
    panic!("tools/list never ended");
}

fn input_schema<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    &tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed: {tools:?}"))["inputSchema"]
}

/// `tools/call` of `name` with `arguments`: the JSON-RPC response.
async fn call(
    s: &TestServer,
    name: &str,
    arguments: Value,
    headers: &[(&str, &str)],
    with_meta: bool,
) -> Value {
    let mut params = json!({"name": name, "arguments": arguments});
    if with_meta {
        params["_meta"] = meta(false);
    }
    let reply = s
        .post(&request(s.id(), "tools/call", params), headers)
        .await;
    response_any(&messages(&reply))
}

/// The last message (the response, a result or an error).
fn response_any(all: &[Value]) -> Value {
    all.last().expect("at least the response").clone()
}

/// `reply` refuses `arguments` without running the tool: invalid params (what the
/// server answers today), or a tool execution error (`isError`, what SEP-1303 asks for
/// input validation from 2025-11-25 on).
fn assert_refused(reply: &Value, arguments: &Value) {
    let protocol_error = reply["error"]["code"] == error_codes::INVALID_PARAMS;
    let tool_error = reply["result"]["isError"] == true
        && !reply["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Received:"));
    assert!(
        protocol_error || tool_error,
        "{arguments} is refused before the tool runs: {reply}"
    );
}

/// The 2020-12 schema is listed as registered, and arguments are checked against it:
/// ones it allows reach the tool, ones it refuses are invalid params.
async fn schema_2020_12_kept(s: &TestServer, headers: &[(&str, &str)], with_meta: bool) {
    let tools = listed_tools(s, headers, with_meta).await;
    assert_eq!(
        input_schema(&tools, "json_schema_2020_12_tool"),
        &schema_2020_12(),
        "the fixture's schema as registered"
    );
    assert_eq!(
        input_schema(&tools, SCHEMA_COPY),
        &schema_2020_12(),
        "the test's copy as registered"
    );
    let allowed = json!({"name": "Ada", "contactMethod": "email", "email": "ada@example.com",
        "address": {"street": "1 Loop", "city": "Lisp"}});
    let ok = call(
        s,
        "json_schema_2020_12_tool",
        allowed.clone(),
        headers,
        with_meta,
    )
    .await;
    let said = ok["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {ok}"));
    let received: Value = serde_json::from_str(
        said.strip_prefix("Received: ")
            .unwrap_or_else(|| panic!("{said}")),
    )
    .expect("the arguments as JSON");
    assert_eq!(received, allowed);
    for refused in [
        // if/then: phone is required when contactMethod is phone.
        json!({"name": "Ada", "contactMethod": "phone", "email": "ada@example.com"}),
        // allOf/anyOf: neither phone nor email.
        json!({"name": "Ada"}),
        // additionalProperties: false.
        json!({"email": "ada@example.com", "nickname": "A"}),
        // $ref into $defs: the address's street is a string.
        json!({"email": "ada@example.com", "address": {"street": 1}}),
    ] {
        let reply = call(
            s,
            "json_schema_2020_12_tool",
            refused.clone(),
            headers,
            with_meta,
        )
        .await;
        assert_refused(&reply, &refused);
    }
}

#[tokio::test]
async fn a_json_schema_2020_12_input_schema_is_listed_as_registered_on_2026() {
    let (s, _) = fixture_server().await;
    schema_2020_12_kept(&s, &[], true).await;
}

#[tokio::test]
async fn a_json_schema_2020_12_input_schema_is_listed_as_registered_in_a_2025_session() {
    let (s, _) = fixture_server().await;
    let session = open_session(&s).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    schema_2020_12_kept(&s, &headers, false).await;
}

/// MCP 2026-07-28 (server/utilities/logging): "Servers that emit log message
/// notifications MUST declare the `logging` capability". This server sends
/// `notifications/message` to a request that asks for them
/// (`logs_reach_2026_callers_only_at_their_level`), so `server/discover` must declare it,
/// as `initialize` does in a 2025-11-25 session (`open_session`).
#[tokio::test]
async fn a_2026_server_that_logs_declares_logging() {
    let (s, _) = fixture_server().await;
    let discover = s
        .rpc("server/discover", json!({"_meta": meta(false)}))
        .await;
    let capabilities = &discover.result()["capabilities"];
    assert!(
        capabilities["logging"].is_object(),
        "logging declared: {}",
        discover.text
    );
}
