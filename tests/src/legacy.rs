//! Shared pieces of the MCP 2025-11-25 wire tests (`legacy_http`, `legacy_stdio`):
//! `initialize` params and the checks every 2025-11-25 Task must pass, and
//! [`HttpSession`], a session with a server in another process.

use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::{Value, json};

use crate::server_harness::{Reply, SseEvent, WAIT, is_iso_timestamp, request, sse_events};

/// The protocol version of a 2025-11-25 session.
pub const LEGACY_VERSION: &str = "2025-11-25";
/// The `_meta` key tying a message to a task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// The demo tools and the `execution.taskSupport` each must list.
pub const TASK_SUPPORT: [(&str, &str); 7] = [
    ("greet", "forbidden"),
    ("slow_compute", "optional"),
    ("failing_job", "required"),
    ("protocol_error_job", "optional"),
    ("confirm_delete", "optional"),
    ("multi_input", "optional"),
    ("test_tool_with_task", "required"),
];
/// The store's default TTL and maximum TTL (`mcp_tasks::Limits::default()`).
pub const DEFAULT_TTL_MS: u64 = 60 * 60 * 1000;
/// The largest TTL the store grants (`Limits::default()`).
pub const MAX_TTL_MS: u64 = 24 * 60 * 60 * 1000;

/// `initialize` params of a client that can answer form elicitations.
pub fn init_params() -> Value {
    json!({
        "protocolVersion": LEGACY_VERSION,
        "capabilities": { "elicitation": { "form": {} } },
        "clientInfo": { "name": "mcp-tests-legacy", "version": "0" },
    })
}

/// Checks the `initialize` result: 2025-11-25 and the three task capabilities.
pub fn assert_initialize_result(result: &Value) {
    assert_eq!(result["protocolVersion"], LEGACY_VERSION, "{result}");
    let tasks = &result["capabilities"]["tasks"];
    assert!(tasks["list"].is_object(), "tasks.list: {result}");
    assert!(tasks["cancel"].is_object(), "tasks.cancel: {result}");
    assert!(
        tasks["requests"]["tools"]["call"].is_object(),
        "tasks.requests.tools.call: {result}"
    );
    assert!(result["serverInfo"]["name"].is_string(), "{result}");
}

/// Checks a `tools/list` result lists every demo tool with its `execution.taskSupport`.
pub fn assert_task_support(result: &Value) {
    let tools = result["tools"].as_array().expect("tools array");
    for (name, support) in TASK_SUPPORT {
        let tool = tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed: {result}"));
        assert_eq!(tool["execution"]["taskSupport"], support, "{tool}");
        assert!(tool["inputSchema"]["type"] == "object", "{tool}");
    }
}

/// Checks a 2025-11-25 Task (flat, as tasks/get, tasks/cancel, tasks/list and
/// notifications/tasks/status carry it): the required fields and their types, and none of
/// the 2026-07-28 names.
pub fn assert_task(task: &Value) {
    let id = task["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("taskId: {task}"));
    assert!(!id.is_empty(), "{task}");
    assert!(
        matches!(
            task["status"].as_str(),
            Some("working" | "input_required" | "completed" | "failed" | "cancelled")
        ),
        "status: {task}"
    );
    for field in ["createdAt", "lastUpdatedAt"] {
        let at = task[field]
            .as_str()
            .unwrap_or_else(|| panic!("{field}: {task}"));
        assert!(is_iso_timestamp(at), "{field}: {task}");
    }
    let ttl = task
        .get("ttl")
        .unwrap_or_else(|| panic!("ttl is required: {task}"));
    assert!(
        ttl.is_null() || ttl.is_u64(),
        "ttl is a number or null: {task}"
    );
    if let Some(p) = task.get("pollInterval") {
        assert!(p.is_u64(), "pollInterval: {task}");
    }
    for absent in [
        "ttlMs",
        "pollIntervalMs",
        "resultType",
        "inputRequests",
        "result",
    ] {
        assert!(
            task.get(absent).is_none(),
            "{absent} in a 2025-11-25 Task: {task}"
        );
    }
}

/// Checks a CreateTaskResult: the Task nested under `task`, status `working`, and returns
/// the Task.
pub fn created_task(result: &Value) -> &Value {
    let task = &result["task"];
    assert!(
        task.is_object(),
        "CreateTaskResult nests the task: {result}"
    );
    assert!(result.get("taskId").is_none(), "not flat: {result}");
    assert!(result.get("resultType").is_none(), "{result}");
    assert_task(task);
    assert_eq!(task["status"], "working", "a new task is working: {result}");
    task
}

/// The related-task id in `value`'s `_meta`, if any.
pub fn related_task(value: &Value) -> Option<&str> {
    value["_meta"][RELATED_TASK]["taskId"].as_str()
}

/// An MCP 2025-11-25 session over HTTP with the server at `url` (e.g. a demo process):
/// opened with `initialize` and `notifications/initialized`, every later message sent
/// with its `Mcp-Session-Id`.
#[derive(Debug)]
pub struct HttpSession {
    client: reqwest::Client,
    url: String,
    /// The session id the server gave.
    pub id: String,
    next_id: AtomicI64,
}

impl HttpSession {
    /// Opens a session with the server at `url` (both steps checked).
    pub async fn open(url: &str) -> HttpSession {
        let mut session = HttpSession {
            client: reqwest::Client::builder()
                .no_proxy()
                .timeout(WAIT)
                .build()
                .expect("HTTP client"),
            url: url.to_owned(),
            id: String::new(),
            next_id: AtomicI64::new(1),
        };
        let opened = session
            .post(&request(0, "initialize", init_params()), &[])
            .await;
        assert_eq!(opened.status, 200, "initialize: {}", opened.text);
        session.id = opened
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("initialize returns Mcp-Session-Id: {opened:?}"))
            .to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let ack = session.post(&initialized, &[]).await;
        assert_eq!(ack.status, 202, "notifications/initialized: {}", ack.text);
        session
    }

    /// POSTs `message` in the session (once opened) with `headers` added.
    pub async fn post(&self, message: &Value, headers: &[(&str, &str)]) -> Reply {
        let mut post = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if !self.id.is_empty() {
            post = post
                .header("mcp-session-id", self.id.as_str())
                .header("mcp-protocol-version", LEGACY_VERSION);
        }
        for (name, value) in headers {
            post = post.header(*name, *value);
        }
        let sent = tokio::time::timeout(WAIT, post.body(message.to_string()).send())
            .await
            .unwrap_or_else(|_| panic!("no reply in {WAIT:?}"))
            .unwrap_or_else(|e| panic!("POST: {e}"));
        Reply::read(sent).await
    }

    /// Sends a request for `method` and returns its JSON-RPC response (from a JSON or an
    /// event-stream reply), a result or an error.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let reply = self.post(&request(id, method, params), &[]).await;
        assert_eq!(reply.status, 200, "{method}: {}", reply.text);
        response_in(&reply, &json!(id))
    }
}

/// The JSON-RPC response with id `id` in `reply`: its JSON body, or that response's
/// event in an event-stream body.
pub fn response_in(reply: &Reply, id: &Value) -> Value {
    let candidates: Vec<Value> = if reply.body.is_object() {
        vec![reply.body.clone()]
    } else {
        sse_events(&reply.text).iter().map(SseEvent::json).collect()
    };
    candidates
        .into_iter()
        .find(|m| m.get("method").is_none() && m["id"] == *id)
        .unwrap_or_else(|| panic!("no response in HTTP {} {}", reply.status, reply.text))
}
