//! MCP 2025-11-25 tasks over stdio, against the `demo-stdio` child: the session is the
//! connection, so `notifications/tasks/status` and the input requests of a task arrive
//! on it, between the responses. The same D.1 rules as `legacy_http`, where stdio shows
//! them.

use std::collections::{HashSet, VecDeque};
use std::process::Stdio;
use std::time::{Duration, Instant};

use mcp_tasks_protocol::error_codes;
use mcp_tests::legacy::{
    DEFAULT_TTL_MS, MAX_TTL_MS, assert_initialize_result, assert_task, assert_task_support,
    created_task, init_params, related_task,
};
use mcp_tests::server_harness::{POLL_EVERY, WAIT, request};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// A `demo-stdio` child in a 2025-11-25 session. Frames that are not the response being
/// waited for (notifications, server->client requests) are kept, in order.
struct LegacyChild {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: i64,
    /// Notifications and requests from the server, not yet looked at.
    inbox: VecDeque<Value>,
}

impl LegacyChild {
    /// Spawns the child and runs `initialize` (checked) + `notifications/initialized`.
    async fn start() -> LegacyChild {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_demo-stdio"))
            .env("RUST_LOG", "warn")
            .env("SHUTDOWN_GRACE_MS", "200")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn demo-stdio");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let mut c = LegacyChild {
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 1,
            inbox: VecDeque::new(),
        };
        let init = c.rpc("initialize", init_params()).await;
        assert_initialize_result(&init["result"]);
        c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        c
    }

    async fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        let line = format!("{message}\n");
        let write = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.flush().await
        };
        tokio::time::timeout(WAIT, write)
            .await
            .expect("written in time")
            .expect("write to the child");
    }

    /// The next frame from the child, within `within`.
    async fn read_frame(&mut self, within: Duration) -> Value {
        let line = tokio::time::timeout(within, self.stdout.next_line())
            .await
            .unwrap_or_else(|_| panic!("no frame within {within:?}"))
            .expect("read stdout")
            .expect("stdout still open");
        let frame: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        assert_eq!(frame["jsonrpc"], "2.0", "{line}");
        frame
    }

    /// Sends a request and returns its response; frames in between go to the inbox.
    async fn rpc(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&request(id, method, params)).await;
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let frame = self.read_frame(left).await;
            if frame.get("method").is_none() && frame["id"] == id {
                return frame;
            }
            self.inbox.push_back(frame);
        }
    }

    async fn result(&mut self, method: &str, params: Value) -> Value {
        let response = self.rpc(method, params).await;
        assert!(response["result"].is_object(), "{method}: {response}");
        response["result"].clone()
    }

    async fn error(&mut self, method: &str, params: Value) -> Value {
        let response = self.rpc(method, params).await;
        assert!(response["error"].is_object(), "{method}: {response}");
        response["error"].clone()
    }

    async fn create(&mut self, tool: &str, arguments: Value, task: Value) -> Value {
        let result = self
            .result(
                "tools/call",
                json!({"name": tool, "arguments": arguments, "task": task}),
            )
            .await;
        created_task(&result).clone()
    }

    async fn create_id(&mut self, tool: &str, arguments: Value) -> String {
        let task = self.create(tool, arguments, json!({})).await;
        task["taskId"].as_str().expect("taskId").to_owned()
    }

    async fn get(&mut self, task_id: &str) -> Value {
        let task = self.result("tasks/get", json!({"taskId": task_id})).await;
        assert_task(&task);
        task
    }

    async fn poll(&mut self, task_id: &str, status: &str) -> Value {
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

    /// The next kept frame (or the next one read) that `wanted` accepts; others stay.
    async fn wait_for(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.inbox.iter().position(&wanted) {
            return self.inbox.remove(i).expect("present");
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let frame = self.read_frame(left).await;
            if wanted(&frame) {
                return frame;
            }
            self.inbox.push_back(frame);
        }
    }

    /// Sends a request without waiting for its response; returns its id.
    async fn start_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&request(id, method, params)).await;
        id
    }

    /// Closes stdin; the child must exit successfully.
    async fn finish(mut self) {
        drop(self.stdin.take());
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("exits on EOF in time")
            .expect("wait");
        assert!(status.success(), "{status:?}");
    }
}

fn is_response(id: i64) -> impl Fn(&Value) -> bool {
    move |f: &Value| f.get("method").is_none() && f["id"] == id
}

fn is_elicitation(f: &Value) -> bool {
    f["method"] == "elicitation/create"
}

#[tokio::test]
async fn initialize_tools_list_and_ttl() {
    let mut c = LegacyChild::start().await;
    let tools = c.result("tools/list", json!({})).await;
    assert_task_support(&tools);
    let asked = c
        .create(
            "slow_compute",
            json!({"seconds": 0.05}),
            json!({"ttl": 60_000}),
        )
        .await;
    assert_eq!(asked["ttl"], 60_000, "{asked}");
    let huge = c
        .create(
            "slow_compute",
            json!({"seconds": 0.05}),
            json!({"ttl": 10 * MAX_TTL_MS}),
        )
        .await;
    assert_eq!(huge["ttl"], MAX_TTL_MS, "{huge}");
    let none = c
        .create("slow_compute", json!({"seconds": 0.05}), json!({}))
        .await;
    assert_eq!(none["ttl"], DEFAULT_TTL_MS, "{none}");
    // A second initialize on the same connection is refused.
    let again = c.error("initialize", init_params()).await;
    assert_eq!(again["code"], error_codes::INVALID_REQUEST, "{again}");
    c.finish().await;
}

#[tokio::test]
async fn tasks_result_blocks_and_status_notifications_arrive_on_the_connection() {
    let mut c = LegacyChild::start().await;
    let id = c
        .create_id("slow_compute", json!({"seconds": 0.5, "label": "stdio"}))
        .await;
    let started = Instant::now();
    let result = c.result("tasks/result", json!({"taskId": id})).await;
    assert!(started.elapsed() >= Duration::from_millis(250), "{result}");
    assert_eq!(result["content"][0]["text"], "stdio: done after 0.5 s");
    assert_eq!(related_task(&result), Some(id.as_str()), "{result}");
    let done = c
        .wait_for(|f| {
            f["method"] == "notifications/tasks/status"
                && f["params"]["taskId"] == id
                && f["params"]["status"] == "completed"
        })
        .await;
    assert_task(&done["params"]);
    assert!(related_task(&done["params"]).is_none(), "{done}");
    c.finish().await;
}

#[tokio::test]
async fn failures_and_task_support() {
    let mut c = LegacyChild::start().await;
    let job = c.create_id("protocol_error_job", json!({})).await;
    let error = c.error("tasks/result", json!({"taskId": job})).await;
    assert_eq!(error["code"], error_codes::INTERNAL_ERROR, "{error}");
    assert_eq!(error["message"], "The job hit a protocol-level error");
    assert_eq!(c.get(&job).await["status"], "failed");

    let failing = c.create_id("failing_job", json!({})).await;
    let result = c.result("tasks/result", json!({"taskId": failing})).await;
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(related_task(&result), Some(failing.as_str()));
    assert_eq!(c.get(&failing).await["status"], "failed");

    for tool in ["failing_job", "test_tool_with_task"] {
        let error = c
            .error("tools/call", json!({"name": tool, "arguments": {}}))
            .await;
        assert_eq!(error["code"], error_codes::METHOD_NOT_FOUND, "{tool}");
    }
    let error = c
        .error(
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "x"}, "task": {}}),
        )
        .await;
    assert_eq!(error["code"], error_codes::METHOD_NOT_FOUND, "{error}");
    let hello = c
        .result(
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
        )
        .await;
    assert_eq!(hello["content"][0]["text"], "Hello, Ada!");
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let error = c
            .error(
                method,
                json!({"taskId": "0123456789abcdef0123456789abcdef"}),
            )
            .await;
        assert_eq!(error["code"], error_codes::INVALID_PARAMS, "{method}");
    }
    c.finish().await;
}

#[tokio::test]
async fn tasks_list_pages_and_cancel() {
    let mut c = LegacyChild::start().await;
    let mut created = HashSet::new();
    for _ in 0..53 {
        created.insert(c.create_id("slow_compute", json!({"seconds": 0.01})).await);
    }
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0.. {
        assert!(page < 10, "tasks/list never ended");
        let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
        let result = c.result("tasks/list", params).await;
        for task in result["tasks"].as_array().expect("tasks") {
            assert_task(task);
            listed.push(task["taskId"].as_str().expect("id").to_owned());
        }
        if page == 0 {
            assert!(result["nextCursor"].is_string(), "{result}");
        }
        match result["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let unique: HashSet<String> = listed.iter().cloned().collect();
    assert_eq!(unique.len(), listed.len(), "no duplicates");
    assert_eq!(unique, created);
    let bad = c.error("tasks/list", json!({"cursor": "nope"})).await;
    assert_eq!(bad["code"], error_codes::INVALID_PARAMS);

    let running = c.create_id("slow_compute", json!({"seconds": 30})).await;
    let cancelled = c.result("tasks/cancel", json!({"taskId": running})).await;
    assert_task(&cancelled);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let again = c.error("tasks/cancel", json!({"taskId": running})).await;
    assert_eq!(again["code"], error_codes::INVALID_PARAMS, "{again}");
    c.wait_for(|f| {
        f["method"] == "notifications/tasks/status"
            && f["params"]["taskId"] == running
            && f["params"]["status"] == "cancelled"
    })
    .await;
    assert_eq!(c.get(&running).await["status"], "cancelled");
    c.finish().await;
}

#[tokio::test]
async fn input_requests_arrive_on_the_connection_once_and_in_order() {
    let mut c = LegacyChild::start().await;
    let id = c
        .create_id("confirm_delete", json!({"filename": "notes.txt"}))
        .await;
    c.poll(&id, "input_required").await;
    let rid = c.start_request("tasks/result", json!({"taskId": id})).await;
    let ask = c.wait_for(is_elicitation).await;
    assert_eq!(related_task(&ask["params"]), Some(id.as_str()), "{ask}");
    assert_eq!(ask["params"]["message"], "Delete notes.txt?");
    assert_eq!(c.get(&id).await["status"], "input_required");
    c.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"confirm": true}}}))
        .await;
    let response = c.wait_for(is_response(rid)).await;
    assert_eq!(
        response["result"]["content"][0]["text"],
        "Deleted notes.txt (not really: this is a demo)."
    );
    assert_eq!(related_task(&response["result"]), Some(id.as_str()));
    // Asked once, although both the connection's watcher and tasks/result could ask.
    assert!(
        !c.inbox.iter().any(is_elicitation),
        "asked twice: {:?}",
        c.inbox
    );

    let multi = c.create_id("multi_input", json!({})).await;
    let rid = c
        .start_request("tasks/result", json!({"taskId": multi}))
        .await;
    let first = c.wait_for(is_elicitation).await;
    let second = c.wait_for(is_elicitation).await;
    let mut asks = [first, second];
    asks.sort_by_key(|a| a["params"]["message"].as_str().unwrap_or("").to_owned());
    assert_eq!(asks[0]["params"]["message"], "First question");
    assert_eq!(asks[1]["params"]["message"], "Second question");
    for (ask, name) in asks.iter().zip(["A", "B"]) {
        assert_eq!(related_task(&ask["params"]), Some(multi.as_str()));
        c.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": name}}}))
            .await;
    }
    let response = c.wait_for(is_response(rid)).await;
    assert_eq!(response["result"]["content"][0]["text"], "Answers: A, B");
    c.finish().await;
}
