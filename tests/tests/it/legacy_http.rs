//! MCP 2025-11-25 tasks over Streamable HTTP with `Mcp-Session-Id` (the numbered rules of
//! tasks-wire.md D.1 that show on the wire): initialize, tools/list `execution.taskSupport`,
//! the nested CreateTaskResult and its TTL, tasks/get, a blocking tasks/result with the
//! related-task `_meta` (the original result, tool error or JSON-RPC error), paginated
//! tasks/list, tasks/cancel, -32601 outside `taskSupport`, `notifications/tasks/status` on
//! the standalone GET stream, input asked on the stream of a pending tasks/result (and on
//! the standalone stream), the session lifecycle (404, DELETE), session isolation, and one
//! store seen through both wires when a principal owns the tasks.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_tasks::FeedItem;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_server::Server;
use mcp_tasks_server::http::HttpConfig;
use mcp_tests::deaf_store::{Deaf, DeafStore};
use mcp_tests::legacy::{
    DEFAULT_TTL_MS, LEGACY_VERSION, MAX_TTL_MS, assert_initialize_result, assert_task,
    assert_task_support, created_task, init_params, related_task,
};
use mcp_tests::server_harness::{
    POLL_EVERY, Reply, SseEvent, SseStream, TestServer, WAIT, bearer_principal, demo_tools, meta,
    request, sse_events, task_params,
};
use serde_json::{Value, json};

const ALICE: &str = "Bearer alice";
const BOB: &str = "Bearer bob";
/// An id no task has.
const UNKNOWN_ID: &str = "0123456789abcdef0123456789abcdef";

/// One 2025-11-25 session of a [`TestServer`].
struct Session<'a> {
    s: &'a TestServer,
    id: String,
    auth: Option<&'static str>,
}

impl<'a> Session<'a> {
    /// `initialize` (checked), then `notifications/initialized`.
    async fn open(s: &'a TestServer, auth: Option<&'static str>) -> Session<'a> {
        let mut headers = Vec::new();
        if let Some(a) = auth {
            headers.push(("authorization", a));
        }
        let reply = s
            .post(&request(s.id(), "initialize", init_params()), &headers)
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        let response = response_of(&reply, None);
        assert_initialize_result(&response["result"]);
        let id = reply
            .headers
            .get("mcp-session-id")
            .unwrap_or_else(|| panic!("initialize returns Mcp-Session-Id: {reply:?}"))
            .to_str()
            .expect("visible ASCII")
            .to_owned();
        assert!(!id.is_empty());
        let session = Session { s, id, auth };
        let ack = session
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(ack.status, 202, "{}", ack.text);
        session
    }

    fn headers(&self) -> Vec<(&str, &str)> {
        let mut h = vec![
            ("mcp-session-id", self.id.as_str()),
            ("mcp-protocol-version", LEGACY_VERSION),
        ];
        if let Some(a) = self.auth {
            h.push(("authorization", a));
        }
        h
    }

    async fn post(&self, message: &Value) -> Reply {
        self.s.post(message, &self.headers()).await
    }

    /// Sends a request; returns its JSON-RPC response (from a JSON or an SSE reply).
    async fn rpc(&self, method: &str, params: Value) -> Value {
        let id = self.s.id();
        let reply = self.post(&request(id, method, params)).await;
        assert_eq!(reply.status, 200, "{method}: {}", reply.text);
        response_of(&reply, Some(id))
    }

    async fn result(&self, method: &str, params: Value) -> Value {
        let response = self.rpc(method, params).await;
        assert!(response["result"].is_object(), "{method}: {response}");
        response["result"].clone()
    }

    async fn error(&self, method: &str, params: Value) -> Value {
        let response = self.rpc(method, params).await;
        assert!(response["error"].is_object(), "{method}: {response}");
        response["error"].clone()
    }

    /// A task-augmented tools/call; returns the (checked) new Task.
    async fn create(&self, tool: &str, arguments: Value, task: Value) -> Value {
        let result = self
            .result(
                "tools/call",
                json!({"name": tool, "arguments": arguments, "task": task}),
            )
            .await;
        created_task(&result).clone()
    }

    async fn create_id(&self, tool: &str, arguments: Value) -> String {
        let task = self.create(tool, arguments, json!({})).await;
        task["taskId"].as_str().expect("taskId").to_owned()
    }

    async fn get(&self, task_id: &str) -> Value {
        let task = self.result("tasks/get", json!({"taskId": task_id})).await;
        assert_task(&task);
        assert_eq!(task["taskId"], task_id);
        task
    }

    async fn poll(&self, task_id: &str, status: &str) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let task = self.get(task_id).await;
            if task["status"] == status {
                return task;
            }
            assert!(
                Instant::now() < deadline,
                "{task_id} never {status}: {task}"
            );
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    /// Every page of tasks/list (at most 100), checked.
    async fn list_all(&self) -> Vec<Value> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..100 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self.result("tasks/list", params).await;
            for task in page["tasks"].as_array().expect("tasks") {
                assert_task(task);
                all.push(task.clone());
            }
            match page["nextCursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => return all,
            }
        }
        panic!("tasks/list never ended");
    }

    /// `tasks/result` whose reply is read as an event stream.
    async fn result_stream(&self, task_id: &str) -> (i64, SseStream) {
        let id = self.s.id();
        let message = request(id, "tasks/result", json!({"taskId": task_id}));
        let stream = self.s.open_stream(&message, &self.headers()).await;
        assert_eq!(stream.status, 200);
        (id, stream)
    }

    /// The standalone GET stream.
    async fn standalone(&self) -> SseStream {
        let stream = self.s.get_stream(&self.headers()).await;
        assert_eq!(stream.status, 200);
        stream
    }

    /// POSTs the client's answer to a server->client request.
    async fn answer(&self, request_id: &Value, result: Value) {
        let reply = self
            .post(&json!({"jsonrpc": "2.0", "id": request_id, "result": result}))
            .await;
        assert_eq!(reply.status, 202, "{}", reply.text);
    }
}

/// The JSON-RPC response in a reply: the JSON body, or the response event of an SSE body
/// (with id `id` when given).
fn response_of(reply: &Reply, id: Option<i64>) -> Value {
    let candidates: Vec<Value> = if reply.body.is_object() {
        vec![reply.body.clone()]
    } else {
        sse_events(&reply.text).iter().map(SseEvent::json).collect()
    };
    candidates
        .into_iter()
        .find(|m| m.get("method").is_none() && id.is_none_or(|id| m["id"] == id))
        .unwrap_or_else(|| panic!("no response in HTTP {} {}", reply.status, reply.text))
}

/// The next event of `stream` as JSON; panics when the stream ends or time runs out.
async fn next(stream: &mut SseStream) -> Value {
    stream.next_event(WAIT).await.expect("an event").json()
}

/// Reads `stream` until a `notifications/tasks/status` for `task_id` with `status`;
/// returns it.
async fn status_notification(stream: &mut SseStream, task_id: &str, status: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = stream
            .next_event(left)
            .await
            .expect("the stream stays open")
            .json();
        if event["method"] == "notifications/tasks/status"
            && event["params"]["taskId"] == task_id
            && event["params"]["status"] == status
        {
            return event;
        }
    }
}

async fn http_with_principal() -> TestServer {
    TestServer::start_http(HttpConfig {
        principal: Some(bearer_principal()),
        ..HttpConfig::default()
    })
    .await
}

#[tokio::test]
async fn initialize_and_tools_list_declare_tasks() {
    let s = TestServer::start().await;
    let session = Session::open(&s, None).await;
    let tools = session.result("tools/list", json!({})).await;
    assert_task_support(&tools);
    // Another initialize opens another session.
    let other = Session::open(&s, None).await;
    assert_ne!(session.id, other.id);
    // A second initialize inside a session is refused.
    // (-32600 travels with HTTP 400 on this server.)
    let again = session
        .post(&request(s.id(), "initialize", init_params()))
        .await;
    assert_eq!(
        again.error_code(),
        error_codes::INVALID_REQUEST,
        "{}",
        again.text
    );
    assert_eq!(again.status, 400, "{}", again.text);
}

#[tokio::test]
async fn create_task_nested_with_clamped_ttl() {
    let s = TestServer::start().await;
    let session = Session::open(&s, None).await;
    let args = json!({"seconds": 0.05});
    let asked = session
        .create("slow_compute", args.clone(), json!({"ttl": 60_000}))
        .await;
    assert_eq!(asked["ttl"], 60_000, "{asked}");
    let huge = session
        .create(
            "slow_compute",
            args.clone(),
            json!({"ttl": 10 * MAX_TTL_MS}),
        )
        .await;
    assert_eq!(
        huge["ttl"], MAX_TTL_MS,
        "clamped to the server's maximum: {huge}"
    );
    let none = session.create("slow_compute", args, json!({})).await;
    assert_eq!(none["ttl"], DEFAULT_TTL_MS, "the default: {none}");
    // Each is its own task, and tasks/get reports the same TTL.
    let ids: HashSet<&str> = [&asked, &huge, &none]
        .iter()
        .map(|t| t["taskId"].as_str().expect("taskId"))
        .collect();
    assert_eq!(ids.len(), 3);
    let got = session.get(asked["taskId"].as_str().expect("id")).await;
    assert_eq!(got["ttl"], 60_000);
    assert_eq!(got["createdAt"], asked["createdAt"]);
}

#[tokio::test]
async fn tasks_result_blocks_until_terminal_and_carries_related_task() {
    let s = TestServer::start().await;
    let session = Session::open(&s, None).await;
    let task = session
        .create(
            "slow_compute",
            json!({"seconds": 1, "label": "blocking"}),
            json!({}),
        )
        .await;
    let id = task["taskId"].as_str().expect("id");
    let working = session.get(id).await;
    assert_eq!(working["status"], "working", "{working}");
    let started = Instant::now();
    let result = session.result("tasks/result", json!({"taskId": id})).await;
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "tasks/result answered before the task ended ({:?}): {result}",
        started.elapsed()
    );
    assert_eq!(result["content"][0]["text"], "blocking: done after 1 s");
    assert_eq!(related_task(&result), Some(id), "{result}");
    assert!(result.get("resultType").is_none(), "{result}");
    let done = session.get(id).await;
    assert_eq!(done["status"], "completed");
    // On a terminal task: the same result again, at once.
    let again = session.result("tasks/result", json!({"taskId": id})).await;
    assert_eq!(again, result);
}

#[tokio::test]
async fn failures_tool_error_is_failed_and_protocol_error_is_returned_as_is() {
    let s = TestServer::start().await;
    let session = Session::open(&s, None).await;

    let job = session.create_id("protocol_error_job", json!({})).await;
    let error = session.error("tasks/result", json!({"taskId": job})).await;
    assert_eq!(error["code"], error_codes::INTERNAL_ERROR, "{error}");
    assert_eq!(error["message"], "The job hit a protocol-level error");
    let failed = session.get(&job).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["statusMessage"].is_string(),
        "statusMessage SHOULD: {failed}"
    );

    let failing = session.create_id("failing_job", json!({})).await;
    let result = session
        .result("tasks/result", json!({"taskId": failing}))
        .await;
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(
        result["content"][0]["text"],
        "The job failed: the input could not be processed."
    );
    assert_eq!(related_task(&result), Some(failing.as_str()));
    let failed = session.get(&failing).await;
    assert_eq!(
        failed["status"], "failed",
        "isError is failed in 2025-11-25: {failed}"
    );
    // A failed task SHOULD say why (the tool error's text), so clients show more than
    // a bare "Task failed".
    assert_eq!(
        failed["statusMessage"], "Tool error: The job failed: the input could not be processed.",
        "{failed}"
    );
}

#[tokio::test]
async fn task_support_is_enforced_with_32601() {
    let s = TestServer::start().await;
    let session = Session::open(&s, None).await;
    for tool in ["failing_job", "test_tool_with_task"] {
        let error = session
            .error("tools/call", json!({"name": tool, "arguments": {}}))
            .await;
        assert_eq!(
            error["code"],
            error_codes::METHOD_NOT_FOUND,
            "{tool}: {error}"
        );
    }
    let error = session
        .error(
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "x"}, "task": {}}),
        )
        .await;
    assert_eq!(error["code"], error_codes::METHOD_NOT_FOUND, "{error}");
    // Within taskSupport: greet synchronously, slow_compute either way.
    let hello = session
        .result(
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
        )
        .await;
    assert_eq!(hello["content"][0]["text"], "Hello, Ada!");
    assert!(hello.get("task").is_none() && hello.get("resultType").is_none());
    let sync = session
        .result(
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 0.01}}),
        )
        .await;
    assert!(sync["content"].is_array(), "{sync}");
    assert!(
        sync.get("task").is_none(),
        "no task without params.task: {sync}"
    );
}

#[tokio::test]
async fn unknown_task_ids_and_bad_cursors_are_32602() {
    let s = TestServer::start().await;
    let session = Session::open(&s, None).await;
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let error = session.error(method, json!({"taskId": UNKNOWN_ID})).await;
        assert_eq!(
            error["code"],
            error_codes::INVALID_PARAMS,
            "{method}: {error}"
        );
    }
    let error = session
        .error("tasks/list", json!({"cursor": "not-a-cursor"}))
        .await;
    assert_eq!(error["code"], error_codes::INVALID_PARAMS, "{error}");
}

#[tokio::test]
async fn tasks_list_pages_without_duplicates() {
    let s = TestServer::start().await;
    let session = Session::open(&s, None).await;
    let empty = session.result("tasks/list", json!({})).await;
    assert_eq!(empty["tasks"], json!([]), "{empty}");
    let mut created = Vec::new();
    for _ in 0..55 {
        created.push(
            session
                .create_id("slow_compute", json!({"seconds": 0.01}))
                .await,
        );
    }
    // params is optional on tasks/list.
    let first = session
        .post(&json!({"jsonrpc": "2.0", "id": 9_000, "method": "tasks/list"}))
        .await;
    let first = &response_of(&first, Some(9_000))["result"];
    assert_eq!(first["tasks"].as_array().map(Vec::len), Some(50), "{first}");
    assert!(
        first["nextCursor"].is_string(),
        "more than a page: nextCursor MUST be present: {first}"
    );
    let listed = session.list_all().await;
    let ids: Vec<&str> = listed
        .iter()
        .map(|t| t["taskId"].as_str().expect("id"))
        .collect();
    let unique: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "no duplicates across pages");
    let wanted: HashSet<&str> = created.iter().map(String::as_str).collect();
    assert_eq!(unique, wanted, "exactly the session's tasks");
}

#[tokio::test]
async fn cancel_returns_the_cancelled_task_and_terminal_tasks_refuse() {
    let s = TestServer::start().await;
    let session = Session::open(&s, None).await;
    let id = session
        .create_id("slow_compute", json!({"seconds": 30}))
        .await;
    let cancelled = session.result("tasks/cancel", json!({"taskId": id})).await;
    assert_task(&cancelled);
    assert_eq!(cancelled["taskId"], id.as_str());
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert_eq!(session.get(&id).await["status"], "cancelled");
    let again = session.error("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(again["code"], error_codes::INVALID_PARAMS, "{again}");
    // tasks/result on a cancelled task answers at once (an error: there is no result).
    let result = session.rpc("tasks/result", json!({"taskId": id})).await;
    assert!(result["error"].is_object(), "{result}");
    // Stays cancelled.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(session.get(&id).await["status"], "cancelled");

    // A completed task cannot be cancelled either, and stays completed.
    let quick = session
        .create_id("slow_compute", json!({"seconds": 0.01}))
        .await;
    session.poll(&quick, "completed").await;
    let refused = session
        .error("tasks/cancel", json!({"taskId": quick}))
        .await;
    assert_eq!(refused["code"], error_codes::INVALID_PARAMS, "{refused}");
    assert_eq!(session.get(&quick).await["status"], "completed");
}

#[tokio::test]
async fn status_notifications_on_the_standalone_stream() {
    let s = TestServer::start().await;
    let session = Session::open(&s, None).await;
    let mut stream = session.standalone().await;
    let id = session
        .create_id("slow_compute", json!({"seconds": 0.2}))
        .await;
    let done = status_notification(&mut stream, &id, "completed").await;
    let params = &done["params"];
    assert_task(params);
    assert!(
        related_task(params).is_none(),
        "SHOULD NOT carry related-task: {done}"
    );
    assert!(done.get("id").is_none(), "a notification: {done}");

    let cancelled = session
        .create_id("slow_compute", json!({"seconds": 30}))
        .await;
    session
        .result("tasks/cancel", json!({"taskId": cancelled}))
        .await;
    status_notification(&mut stream, &cancelled, "cancelled").await;
}

#[tokio::test]
async fn input_is_asked_on_the_pending_tasks_result_stream() {
    let s = TestServer::start().await;
    let session = Session::open(&s, None).await;
    let id = session
        .create_id("confirm_delete", json!({"filename": "notes.txt"}))
        .await;
    session.poll(&id, "input_required").await;
    let (rid, mut stream) = session.result_stream(&id).await;
    let ask = next(&mut stream).await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert!(ask["id"].is_number() || ask["id"].is_string(), "{ask}");
    assert_eq!(related_task(&ask["params"]), Some(id.as_str()), "{ask}");
    assert_eq!(ask["params"]["message"], "Delete notes.txt?");
    assert!(ask["params"]["requestedSchema"]["properties"]["confirm"].is_object());
    // Unanswered, the task keeps asking.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(session.get(&id).await["status"], "input_required");

    session
        .answer(
            &ask["id"],
            json!({"action": "accept", "content": {"confirm": true}}),
        )
        .await;
    let response = next(&mut stream).await;
    assert_eq!(response["id"], rid, "{response}");
    let result = &response["result"];
    assert_eq!(
        result["content"][0]["text"],
        "Deleted notes.txt (not really: this is a demo)."
    );
    assert_eq!(related_task(result), Some(id.as_str()), "{response}");
    assert!(
        stream.next_event(WAIT).await.is_none(),
        "the stream ends after the response"
    );
    assert_eq!(session.get(&id).await["status"], "completed");
}

#[tokio::test]
async fn multi_input_asks_both_questions() {
    let s = TestServer::start().await;
    let session = Session::open(&s, None).await;
    let id = session.create_id("multi_input", json!({})).await;
    let (rid, mut stream) = session.result_stream(&id).await;
    let mut asks = vec![next(&mut stream).await, next(&mut stream).await];
    asks.sort_by_key(|a| a["params"]["message"].as_str().unwrap_or("").to_owned());
    let messages: Vec<&Value> = asks.iter().map(|a| &a["params"]["message"]).collect();
    assert_eq!(messages, ["First question", "Second question"]);
    for ask in &asks {
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        assert_eq!(related_task(&ask["params"]), Some(id.as_str()), "{ask}");
    }
    assert_ne!(asks[0]["id"], asks[1]["id"]);
    // One answer is not enough.
    session
        .answer(
            &asks[0]["id"],
            json!({"action": "accept", "content": {"name": "A"}}),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(session.get(&id).await["status"], "input_required");
    session
        .answer(
            &asks[1]["id"],
            json!({"action": "accept", "content": {"name": "B"}}),
        )
        .await;
    let response = next(&mut stream).await;
    assert_eq!(response["id"], rid, "{response}");
    assert_eq!(response["result"]["content"][0]["text"], "Answers: A, B");
}

#[tokio::test]
async fn input_is_asked_on_the_standalone_stream_without_tasks_result() {
    let s = TestServer::start().await;
    let session = Session::open(&s, None).await;
    let mut stream = session.standalone().await;
    let id = session
        .create_id("confirm_delete", json!({"filename": "a.txt"}))
        .await;
    let ask = loop {
        let event = next(&mut stream).await;
        if event["method"] == "elicitation/create" {
            break event;
        }
        assert_eq!(event["method"], "notifications/tasks/status", "{event}");
    };
    assert_eq!(related_task(&ask["params"]), Some(id.as_str()), "{ask}");
    session
        .answer(&ask["id"], json!({"action": "decline"}))
        .await;
    session.poll(&id, "completed").await;
    let result = session.result("tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["content"][0]["text"], "Kept a.txt.");
}

#[tokio::test]
async fn unknown_and_deleted_sessions_are_404() {
    let s = TestServer::start().await;
    let unknown = [
        ("mcp-session-id", "no-such-session"),
        ("mcp-protocol-version", LEGACY_VERSION),
    ];
    let reply = s.post(&request(1, "tools/list", json!({})), &unknown).await;
    assert_eq!(reply.status, 404, "{}", reply.text);

    let session = Session::open(&s, None).await;
    let id = session
        .create_id("slow_compute", json!({"seconds": 30}))
        .await;
    let delete = |sid: String| {
        let client = s.client.clone();
        let url = s.url.clone();
        async move {
            let send = client
                .delete(&url)
                .header("mcp-session-id", sid)
                .header("mcp-protocol-version", LEGACY_VERSION)
                .send();
            tokio::time::timeout(WAIT, send)
                .await
                .expect("DELETE in time")
                .expect("DELETE")
                .status()
        }
    };
    assert!(delete(session.id.clone()).await.is_success());
    let after = session
        .post(&request(2, "tasks/get", json!({"taskId": id})))
        .await;
    assert_eq!(after.status, 404, "{}", after.text);
    let get = s
        .client
        .get(&s.url)
        .header("mcp-session-id", session.id.as_str())
        .header("accept", "text/event-stream")
        .send();
    let get = tokio::time::timeout(WAIT, get)
        .await
        .expect("GET in time")
        .expect("GET");
    assert_eq!(get.status(), 404);
    assert_eq!(delete(session.id.clone()).await, 404);
}

#[tokio::test]
async fn sessions_do_not_see_each_others_tasks() {
    let s = TestServer::start().await;
    let a = Session::open(&s, None).await;
    let b = Session::open(&s, None).await;
    let running = a.create_id("slow_compute", json!({"seconds": 30})).await;
    let finished = a.create_id("slow_compute", json!({"seconds": 0.01})).await;
    a.poll(&finished, "completed").await;
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let unknown = b.error(method, json!({"taskId": UNKNOWN_ID})).await;
        assert_eq!(unknown["code"], error_codes::INVALID_PARAMS);
        for id in [&running, &finished] {
            let error = b.error(method, json!({"taskId": id})).await;
            assert_eq!(error, unknown, "{method} from B on A's task");
        }
    }
    assert!(b.list_all().await.is_empty());
    // A still has both, untouched by B's cancel.
    assert_eq!(a.get(&running).await["status"], "working");
    assert_eq!(a.list_all().await.len(), 2);
    a.result("tasks/cancel", json!({"taskId": running})).await;
}

#[tokio::test]
async fn a_principals_tasks_span_its_sessions_and_both_wires() {
    let s = http_with_principal().await;
    let alice1 = Session::open(&s, Some(ALICE)).await;
    let alice2 = Session::open(&s, Some(ALICE)).await;
    let bob = Session::open(&s, Some(BOB)).await;

    let failing = alice1.create_id("failing_job", json!({})).await;
    let running = alice1
        .create_id("slow_compute", json!({"seconds": 30}))
        .await;
    // The same principal, another session: visible.
    assert_eq!(alice2.get(&running).await["status"], "working");
    let listed: HashSet<String> = alice2
        .list_all()
        .await
        .iter()
        .map(|t| t["taskId"].as_str().expect("id").to_owned())
        .collect();
    assert!(
        listed.contains(&failing) && listed.contains(&running),
        "{listed:?}"
    );
    // Another principal: like an unknown id.
    let unknown = bob.error("tasks/get", json!({"taskId": UNKNOWN_ID})).await;
    assert_eq!(
        bob.error("tasks/get", json!({"taskId": running})).await,
        unknown
    );
    assert!(bob.list_all().await.is_empty());

    // The 2026-07-28 wire (no session, the extension in _meta), as alice.
    let as_2026 = |method: &'static str, id: String, who: &'static str| {
        let s = &s;
        async move {
            let reply = s
                .post(
                    &request(s.id(), method, task_params(&id, true)),
                    &[("authorization", who)],
                )
                .await;
            reply.body
        }
    };
    alice1.poll(&failing, "failed").await;
    let view = as_2026("tasks/get", failing.clone(), ALICE).await;
    let view = &view["result"];
    assert_eq!(view["resultType"], "complete", "{view}");
    assert_eq!(
        view["status"], "completed",
        "the 2026 view shows an isError result as completed: {view}"
    );
    assert_eq!(view["result"]["isError"], true, "{view}");
    assert!(
        view.get("ttl").is_none() && view.get("ttlMs").is_some(),
        "{view}"
    );
    let bobs = as_2026("tasks/get", failing.clone(), BOB).await;
    assert_eq!(bobs["error"]["code"], error_codes::INVALID_PARAMS, "{bobs}");

    let ack = as_2026("tasks/cancel", running.clone(), ALICE).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let cancelled = alice2.poll(&running, "cancelled").await;
    assert_eq!(cancelled["status"], "cancelled");
    // ...and the 2025 wire then refuses a second cancel.
    let again = alice1
        .error("tasks/cancel", json!({"taskId": running}))
        .await;
    assert_eq!(again["code"], error_codes::INVALID_PARAMS);
    // A plain 2026 request is not part of any session.
    let plain = s
        .post(
            &request(s.id(), "tasks/list", json!({"_meta": meta(true)})),
            &[("authorization", ALICE)],
        )
        .await;
    assert_eq!(
        plain.body["error"]["code"],
        error_codes::METHOD_NOT_FOUND,
        "{}",
        plain.text
    );
}

#[tokio::test]
async fn input_is_asked_again_on_a_new_stream_after_the_client_dropped_one() {
    let s = TestServer::start().await;
    let session = Session::open(&s, None).await;
    let id = session
        .create_id("confirm_delete", json!({"filename": "b.txt"}))
        .await;
    let (_, mut first) = session.result_stream(&id).await;
    let ask = next(&mut first).await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    // The client goes away without answering; the question must not be lost.
    drop(first);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (rid, mut second) = session.result_stream(&id).await;
    let again = next(&mut second).await;
    assert_eq!(
        again["method"], "elicitation/create",
        "asked again: {again}"
    );
    assert_eq!(related_task(&again["params"]), Some(id.as_str()), "{again}");
    session
        .answer(
            &again["id"],
            json!({"action": "accept", "content": {"confirm": false}}),
        )
        .await;
    let response = next(&mut second).await;
    assert_eq!(response["id"], rid, "{response}");
    assert_eq!(response["result"]["content"][0]["text"], "Kept b.txt.");
}

#[tokio::test]
async fn input_asked_on_a_dropped_standalone_stream_is_asked_again_on_tasks_result() {
    let s = TestServer::start().await;
    let session = Session::open(&s, None).await;
    let mut standalone = session.standalone().await;
    let id = session
        .create_id("confirm_delete", json!({"filename": "c.txt"}))
        .await;
    loop {
        let event = next(&mut standalone).await;
        if event["method"] == "elicitation/create" {
            break;
        }
    }
    drop(standalone);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (rid, mut stream) = session.result_stream(&id).await;
    let again = next(&mut stream).await;
    assert_eq!(again["method"], "elicitation/create", "{again}");
    assert_eq!(related_task(&again["params"]), Some(id.as_str()));
    session
        .answer(
            &again["id"],
            json!({"action": "accept", "content": {"confirm": true}}),
        )
        .await;
    let response = next(&mut stream).await;
    assert_eq!(response["id"], rid, "{response}");
    assert_eq!(
        response["result"]["content"][0]["text"],
        "Deleted c.txt (not really: this is a demo)."
    );
}

/// A session id is not a credential: another principal presenting alice's
/// `Mcp-Session-Id` gets 404 on POST, GET and DELETE (exactly like an id never issued),
/// and alice's session keeps working.
#[tokio::test]
async fn another_principal_cannot_use_a_session_id() {
    let s = TestServer::start_http(HttpConfig {
        principal: Some(bearer_principal()),
        ..HttpConfig::default()
    })
    .await;
    let alice = Session::open(&s, Some(ALICE)).await;
    let task = alice
        .create_id("slow_compute", json!({"seconds": 30}))
        .await;
    let hijack = |method: &'static str| {
        let (s, id) = (&s, alice.id.clone());
        async move {
            let headers = [
                ("mcp-session-id", id.as_str()),
                ("mcp-protocol-version", LEGACY_VERSION),
                ("authorization", BOB),
            ];
            s.post(
                &request(s.id(), method, json!({"taskId": task_or_empty()})),
                &headers,
            )
            .await
        }
    };
    fn task_or_empty() -> &'static str {
        "0123456789abcdef0123456789abcdef"
    }
    for method in ["tasks/get", "tasks/list", "tasks/cancel"] {
        let reply = hijack(method).await;
        assert_eq!(
            reply.status, 404,
            "{method} with another principal's session: {}",
            reply.text
        );
    }
    let http = reqwest::Client::new();
    let get = http
        .get(&s.url)
        .header("mcp-session-id", alice.id.as_str())
        .header("accept", "text/event-stream")
        .header("authorization", BOB)
        .send()
        .await
        .expect("GET");
    assert_eq!(get.status(), 404, "GET with another principal's session");
    let delete = http
        .delete(&s.url)
        .header("mcp-session-id", alice.id.as_str())
        .header("authorization", BOB)
        .send()
        .await
        .expect("DELETE");
    assert_eq!(
        delete.status(),
        404,
        "DELETE with another principal's session"
    );
    // Alice's session and task are untouched.
    let got = alice
        .post(&request(s.id(), "tasks/get", json!({"taskId": task})))
        .await;
    assert_eq!(got.status, 200, "{}", got.text);
    assert_eq!(got.body["result"]["status"], "working", "{}", got.text);
}

/// 2025-11-25 sessions are bounded: one `initialize` beyond `max_sessions` is refused with
/// -32029 naming the limit (HTTP 503), a DELETE makes room again, and a session idle past
/// `session_idle_timeout` is ended (its id then reads as unknown, 404).
#[tokio::test]
async fn sessions_are_bounded_and_expire_when_idle() {
    let s = TestServer::start_http(HttpConfig {
        max_sessions: 2,
        session_idle_timeout: std::time::Duration::from_millis(400),
        ..HttpConfig::default()
    })
    .await;
    let first = Session::open(&s, None).await;
    let _second = Session::open(&s, None).await;
    let refused = s
        .post(&request(s.id(), "initialize", init_params()), &[])
        .await;
    assert_eq!(refused.status, 503, "{}", refused.text);
    assert_eq!(
        refused.body["error"]["code"],
        error_codes::LIMIT_EXCEEDED,
        "{}",
        refused.text
    );
    assert!(refused.text.contains("max_sessions"), "{}", refused.text);

    let deleted = reqwest::Client::new()
        .delete(&s.url)
        .header("mcp-session-id", first.id.as_str())
        .send()
        .await
        .expect("DELETE");
    assert_eq!(deleted.status(), 204);
    let third = Session::open(&s, None).await;

    // Idle past the timeout: ended.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let stale = third.post(&request(s.id(), "tools/list", json!({}))).await;
    assert_eq!(stale.status, 404, "{}", stale.text);
}

/// The demo tools served on `store`.
async fn demo_server_on(store: Arc<DeafStore>) -> TestServer {
    let mut builder = Server::builder("mcp-tests", "0").store(store);
    for tool in demo_tools() {
        builder = builder.tool(tool);
    }
    TestServer::start_server(builder.build(), HttpConfig::default()).await
}

/// The per-session watcher after an event lag: status changes it never heard of (the
/// store's events were lost, e.g. its notification connection dropped during a store
/// outage) are sent once the feed reports the lag, and only once.
#[tokio::test]
async fn status_notifications_are_resent_after_an_event_lag() {
    let store = Arc::new(Deaf::store());
    let s = demo_server_on(store.clone()).await;
    let session = Session::open(&s, None).await;
    let mut stream = session.standalone().await;
    let id = session
        .create_id("slow_compute", json!({"seconds": 30}))
        .await;
    // Cancelled by the client: a change only the store's feed tells the watcher of (the
    // terminal write of a run reaches it from the run itself).
    session.result("tasks/cancel", json!({"taskId": id})).await;
    let heard = stream.event_within(Duration::from_millis(500)).await;
    assert!(
        heard.is_none(),
        "without events nothing is sent yet (else this test proves nothing): {heard:?}"
    );

    store
        .layer()
        .feed
        .send(FeedItem::Resync)
        .expect("the watcher listens");
    let done = status_notification(&mut stream, &id, "cancelled").await;
    assert_task(&done["params"]);
    // A second lag with nothing new sends nothing again.
    store
        .layer()
        .feed
        .send(FeedItem::Resync)
        .expect("the watcher listens");
    let again = stream.event_within(Duration::from_millis(500)).await;
    assert!(again.is_none(), "sent twice: {again:?}");
}

/// A run's own completion reaches the session's watcher from the run that wrote it, not
/// through the store's feed: here the feed is deaf, and the status comes all the same,
/// once.
#[tokio::test]
async fn a_completion_reaches_the_watcher_without_the_feed() {
    let s = demo_server_on(Arc::new(Deaf::store())).await;
    let session = Session::open(&s, None).await;
    let mut stream = session.standalone().await;
    let id = session
        .create_id("slow_compute", json!({"seconds": 0.1}))
        .await;
    let done = status_notification(&mut stream, &id, "completed").await;
    assert_task(&done["params"]);
    let again = stream.event_within(Duration::from_millis(500)).await;
    assert!(again.is_none(), "sent twice: {again:?}");
}

/// A client that asks for an earlier revision (2025-06-18, 2025-03-26, 2024-11-05) gets
/// that revision, without tasks; its requests carry that version in the header. A
/// version the server does not know is answered with 2025-11-25, the newest it has.
#[tokio::test]
async fn earlier_revisions_are_negotiated_without_tasks() {
    let s = TestServer::start().await;
    for asked in ["2025-06-18", "2025-03-26", "2024-11-05"] {
        let mut params = init_params();
        params["protocolVersion"] = json!(asked);
        let reply = s
            .post(
                &request(s.id(), "initialize", params),
                &[("accept", "application/json")],
            )
            .await;
        let result = reply.result();
        assert_eq!(result["protocolVersion"], asked, "{}", reply.text);
        assert!(result["capabilities"].get("tasks").is_none(), "{result}");
        let id = reply.headers["mcp-session-id"]
            .to_str()
            .expect("ascii")
            .to_owned();
        let headers = [
            ("mcp-session-id", id.as_str()),
            ("mcp-protocol-version", asked),
            ("accept", "application/json"),
        ];
        let tools = s
            .post(&request(s.id(), "tools/list", json!({})), &headers)
            .await;
        let listed = tools.result()["tools"].as_array().expect("tools").clone();
        assert!(
            listed.iter().all(|t| t.get("execution").is_none()),
            "{}",
            tools.text
        );
        let list = s
            .post(&request(s.id(), "tasks/list", json!({})), &headers)
            .await;
        assert_eq!(
            list.error_code(),
            error_codes::METHOD_NOT_FOUND,
            "{}",
            list.text
        );
        let greeted = s
            .post(
                &request(
                    s.id(),
                    "tools/call",
                    json!({ "name": "greet", "arguments": { "name": "Ada" } }),
                ),
                &headers,
            )
            .await;
        assert_eq!(greeted.result()["content"][0]["text"], "Hello, Ada!");
        // Any revision the server serves is taken inside a session (as the TypeScript
        // and Python SDK servers do); an unknown one is -32022.
        let unknown = s
            .post(
                &request(s.id(), "tools/list", json!({})),
                &[
                    ("mcp-session-id", id.as_str()),
                    ("mcp-protocol-version", "1999-01-01"),
                ],
            )
            .await;
        assert_eq!(unknown.status, 400, "{}", unknown.text);
        assert_eq!(
            unknown.error_code(),
            error_codes::UNSUPPORTED_PROTOCOL_VERSION
        );
    }
    let mut params = init_params();
    params["protocolVersion"] = json!("2099-01-01");
    let reply = s
        .post(
            &request(s.id(), "initialize", params),
            &[("accept", "application/json")],
        )
        .await;
    assert_eq!(reply.result()["protocolVersion"], "2025-11-25");
}
