//! MCP 2025-11-25: a task is announced before anything about it reaches the client. For
//! `confirm_delete`, whose first instruction asks (elicitation), the `tools/call` result
//! (`CreateTaskResult`) that names the task is received before any status notification
//! or question that names it, and each answer reaches its own task ("Deleted <its
//! file>"). Twelve tasks, six at a time: over stdio (one pipe, so the order read is the
//! order written), over Streamable HTTP on one instance (the question on the standalone
//! GET stream, the results as JSON and as event streams), and with two instances on a
//! shared store (the calls on one, the standalone stream on the other).
//!
//! Over HTTP the order is the order in which one client thread reads two connections,
//! as a client library does: a question about a task the client has not heard of is what
//! the official tasks client library answers with "cancel". There the questions must
//! follow; a status is pushed as soon as its change is written (which is after the
//! `CreateTaskResult` was written, but on another connection: issue 43), so it may be
//! read first, which costs the client nothing.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_tests::legacy::{LEGACY_VERSION, related_task};
use mcp_tests::server_harness::{
    TestServer, WAIT, demo_server, open_legacy_session, request, two_instances,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// How many `confirm_delete` tasks each scenario starts, and how many at a time.
const TASKS: usize = 12;
const AT_ONCE: usize = 6;

/// A bound for a whole scenario.
const SCENARIO: Duration = Duration::from_secs(60);

/// What the client saw, in the order it read it: for each task, when its
/// `CreateTaskResult` was read and when the first message naming it was.
#[derive(Debug, Default)]
struct Seen {
    next: u64,
    created: HashMap<String, u64>,
    first_mention: HashMap<String, (u64, String)>,
}

impl Seen {
    fn created(&mut self, task: &str) {
        self.next += 1;
        self.created.insert(task.to_owned(), self.next);
    }

    fn mentioned(&mut self, task: &str, message: &Value) {
        self.next += 1;
        let method = message["method"].as_str().unwrap_or("?").to_owned();
        // The first mention of each kind: a status read early must not hide a question.
        let kind = if method.starts_with("notifications/") {
            "n"
        } else {
            "q"
        };
        self.first_mention
            .entry(format!("{kind}:{task}"))
            .or_insert((self.next, method));
    }

    /// Every task was announced before anything named it (`questions_only`: before any
    /// question named it).
    fn assert_announced_first(&self, questions_only: bool) {
        assert_eq!(self.created.len(), TASKS, "every task created: {self:?}");
        for (key, (mention, method)) in &self.first_mention {
            let task = &key[2..];
            if questions_only && method.starts_with("notifications/") {
                continue;
            }
            let created = self.created.get(task).copied();
            assert!(
                created.is_some_and(|c| c < *mention),
                "{method} about task {task} was read (#{mention}) before its CreateTaskResult (#{created:?})"
            );
        }
    }
}

/// The task a server message names: a status notification's `taskId`, or the
/// related-task `_meta` of a request or notification.
fn task_named(message: &Value) -> Option<String> {
    if message["method"] == "notifications/tasks/status" {
        return message["params"]["taskId"].as_str().map(str::to_owned);
    }
    related_task(&message["params"]).map(str::to_owned)
}

fn confirm(id: i64, file: &str) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": "confirm_delete", "arguments": {"filename": file}, "task": {"ttl": 60000}}),
    )
}

fn accept(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"confirm": true}}})
}

fn session_params() -> Value {
    json!({
        "protocolVersion": LEGACY_VERSION,
        "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "mcp-tests-announce-order", "version": "0"},
    })
}

/// The file each task's result says it deleted; panics on any other result.
fn deleted_file(result: &Value) -> String {
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let file = text
        .strip_prefix("Deleted ")
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("the task did not delete its file: {result}"));
    file.to_owned()
}

// --- stdio -------------------------------------------------------------------------

#[tokio::test]
async fn over_stdio_the_task_is_announced_first() {
    // The demo as users run it: `--stdio` on its default store (a SQLite file).
    let db = std::env::temp_dir().join(format!(
        "mcp-tests-announce-order-{}.sqlite3",
        std::process::id()
    ));
    let store = format!("sqlite:{}", db.display());
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_demo-server"))
        .args(["--stdio", "--store", store.as_str()])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("demo-stdio starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let deadline = Instant::now() + SCENARIO;
    let mut write = async |message: Value| {
        let line = format!("{message}\n");
        stdin.write_all(line.as_bytes()).await.expect("write");
    };
    write(request(0, "initialize", session_params())).await;
    let initialized = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("initialize answered in time")
        .expect("read stdout")
        .expect("an answer");
    assert!(initialized.contains("\"protocolVersion\""), "{initialized}");
    write(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;

    let mut seen = Seen::default();
    // Request id -> file, for the calls; task -> file once created.
    let mut calls: HashMap<i64, String> = HashMap::new();
    let mut files: HashMap<String, String> = HashMap::new();
    let mut results: HashMap<i64, String> = HashMap::new();
    let mut next_id = 100;
    let mut started = 0;
    let mut done = 0;
    // Waves of AT_ONCE, each begun when the previous one's tasks are all created.
    let mut wave_created = 0;
    let mut in_wave = 0;
    loop {
        if started < TASKS && wave_created == in_wave {
            for _ in 0..AT_ONCE {
                let file = format!("stdio-{started}.txt");
                write(confirm(next_id, &file)).await;
                calls.insert(next_id, file);
                next_id += 1;
                started += 1;
            }
            in_wave = AT_ONCE;
            wave_created = 0;
        }
        if done == TASKS {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let line = tokio::time::timeout(left, lines.next_line())
            .await
            .expect("the scenario ends in time")
            .expect("read stdout")
            .expect("the server keeps its stdout open");
        let message: Value = serde_json::from_str(&line).expect("a JSON frame");
        if let Some(task) = task_named(&message) {
            seen.mentioned(&task, &message);
        }
        if message["method"] == "elicitation/create" {
            write(accept(&message["id"])).await;
            continue;
        }
        let Some(id) = message["id"].as_i64() else {
            continue;
        };
        if let Some(file) = calls.remove(&id) {
            let task = message["result"]["task"]["taskId"]
                .as_str()
                .unwrap_or_else(|| panic!("a CreateTaskResult: {message}"))
                .to_owned();
            seen.created(&task);
            wave_created += 1;
            // Its result: `tasks/result` blocks until the task ends.
            let get = request(next_id, "tasks/result", json!({"taskId": task}));
            results.insert(next_id, file.clone());
            next_id += 1;
            files.insert(task, file);
            write(get).await;
        } else if let Some(file) = results.remove(&id) {
            assert_eq!(deleted_file(&message["result"]), file, "{message}");
            done += 1;
        }
    }
    assert_eq!(files.len(), TASKS);
    seen.assert_announced_first(false);
    drop(child);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
}

// --- Streamable HTTP ---------------------------------------------------------------

/// Drives the scenario with the calls (and answers) posted to `calls` and the session's
/// standalone stream read from `stream`.
async fn over_http(calls: &TestServer, stream: &TestServer) {
    let (session, _) = open_legacy_session(calls, session_params()).await;
    let headers = [
        ("mcp-session-id", session.clone()),
        ("mcp-protocol-version", LEGACY_VERSION.to_owned()),
    ];
    let header_refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut standalone = stream.get_stream(&header_refs).await;
    assert_eq!(standalone.status, 200);
    let deadline = Instant::now() + SCENARIO;

    // The standalone stream: every message about a task noted as read, every question
    // answered (accept), until all tasks ended.
    let reader = {
        let seen = Arc::clone(&seen);
        let answers = calls.client.clone();
        let url = calls.url.clone();
        let headers = headers.clone();
        async move {
            let mut asked = 0;
            while asked < TASKS {
                let left = deadline.saturating_duration_since(Instant::now());
                let Some(event) = standalone.next_event(left).await else {
                    panic!("the standalone stream ended after {asked} questions");
                };
                let message = event.json();
                if let Some(task) = task_named(&message) {
                    seen.lock()
                        .expect("not poisoned")
                        .mentioned(&task, &message);
                }
                if message["method"] == "elicitation/create" {
                    asked += 1;
                    let mut post = answers
                        .post(&url)
                        .header("content-type", "application/json")
                        .header("accept", "application/json, text/event-stream");
                    for (name, value) in &headers {
                        post = post.header(*name, value);
                    }
                    let sent = post.body(accept(&message["id"]).to_string()).send();
                    let reply = tokio::time::timeout(WAIT, sent)
                        .await
                        .expect("answer posted in time")
                        .expect("answer posted");
                    assert_eq!(reply.status(), 202, "the answer is taken");
                }
            }
        }
    };

    // The calls, six at a time, half answered as JSON and half as event streams; then
    // each task's result.
    let callers = async {
        let mut tasks = Vec::new();
        for wave in 0..TASKS / AT_ONCE {
            let created = futures::future::join_all((0..AT_ONCE).map(|i| {
                let n = wave * AT_ONCE + i;
                let seen = Arc::clone(&seen);
                let header_refs = &header_refs;
                async move {
                    let file = format!("http-{n}.txt");
                    let message = confirm(calls.id(), &file);
                    let result = if n.is_multiple_of(2) {
                        let json_only =
                            [header_refs.as_slice(), &[("accept", "application/json")]].concat();
                        calls.post(&message, &json_only).await.result().clone()
                    } else {
                        let mut events = calls.open_stream(&message, header_refs).await;
                        loop {
                            let event = events.next_event(WAIT).await.expect("the call's reply");
                            let frame = event.json();
                            if frame["id"] == message["id"] {
                                break frame["result"].clone();
                            }
                        }
                    };
                    let task = result["task"]["taskId"]
                        .as_str()
                        .unwrap_or_else(|| panic!("a CreateTaskResult: {result}"))
                        .to_owned();
                    seen.lock().expect("not poisoned").created(&task);
                    (task, file)
                }
            }))
            .await;
            tasks.extend(created);
        }
        for (task, file) in &tasks {
            let message = request(calls.id(), "tasks/result", json!({"taskId": task}));
            let json_only = [header_refs.as_slice(), &[("accept", "application/json")]].concat();
            let reply = calls.post(&message, &json_only).await;
            assert_eq!(&deleted_file(reply.result()), file, "task {task}");
        }
    };
    tokio::time::timeout(SCENARIO, async { tokio::join!(reader, callers) })
        .await
        .expect("the scenario ends in time");
    seen.lock()
        .expect("not poisoned")
        .assert_announced_first(true);
}

/// One thread reads both connections, as a client library's event loop does.
#[tokio::test(flavor = "current_thread")]
async fn over_http_the_task_is_announced_first() {
    let s = TestServer::start().await;
    over_http(&s, &s).await;
    s.stop().await;
}

async fn on_two_instances<F: mcp_tasks::conformance::StoreFactory>(factory: &F) {
    let (a, b) = two_instances(factory, "announce_order", demo_server).await;
    over_http(&a, &b).await;
    tokio::join!(a.stop(), b.stop());
}

mcp_tests::shared_store_tests! {
    two_instances_announce_the_task_first => super::on_two_instances,
}
