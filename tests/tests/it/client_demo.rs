//! `mcp-tasks-client` against the demo server, every scenario run twice: over Streamable HTTP
//! (the in-process [`TestServer`] on 127.0.0.1) and over stdio (the `demo-stdio` binary
//! as a child process).
//!
//! A scenario that needs "another client" of the same server gets a second HTTP
//! connection over HTTP; over stdio a server has exactly one connection, so the second
//! client is a clone of the first (same connection, fresh [`TaskHandle`]s). Every wait is
//! bounded by [`SCENARIO`].

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcp_tasks_client::{
    ClientConfig, ClientError, ClientHandler, DriverConfig, McpClient, Started, TaskHandle,
    TaskStatusView,
};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::TaskStatus;
use mcp_tasks_protocol::types::{ElicitAction, ElicitResult};
use mcp_tasks_protocol::v2026::{CallToolResult, ElicitRequestParams};
use mcp_tests::server_harness::TestServer;
use serde_json::{Value, json};

/// The bound of one whole scenario.
const SCENARIO: Duration = Duration::from_secs(40);

#[derive(Debug, Clone, Copy)]
enum Kind {
    Http,
    Stdio,
}

/// One server (HTTP in-process, or a `demo-stdio` child per client) and its clients.
struct Fixture {
    kind: Kind,
    http: Option<TestServer>,
}

impl Fixture {
    async fn new(kind: Kind) -> Fixture {
        let http = match kind {
            Kind::Http => Some(TestServer::start().await),
            Kind::Stdio => None,
        };
        Fixture { kind, http }
    }

    /// A client with `handler` and `config`; over stdio, a new server process.
    async fn client_with(
        &self,
        handler: Arc<dyn ClientHandler>,
        config: ClientConfig,
    ) -> McpClient {
        let connected = match (&self.kind, &self.http) {
            (Kind::Http, Some(server)) => {
                McpClient::connect_http(&server.url, handler, config).await
            }
            _ => {
                McpClient::connect_stdio(env!("CARGO_BIN_EXE_demo-stdio"), &[], handler, config)
                    .await
            }
        };
        connected.unwrap_or_else(|e| panic!("connect over {:?}: {e}", self.kind))
    }

    async fn client(&self, handler: Arc<dyn ClientHandler>) -> McpClient {
        self.client_with(handler, config()).await
    }

    /// Another client of the same server as `first`: a second connection over HTTP, the
    /// same connection over stdio.
    async fn another(&self, first: &McpClient) -> McpClient {
        match self.kind {
            Kind::Http => self.client(Arc::new(Scripted::default())).await,
            Kind::Stdio => first.clone(),
        }
    }
}

/// Tests poll fast: the demo suggests no interval, so the driver's bounds decide.
fn config() -> ClientConfig {
    ClientConfig {
        request_timeout: Duration::from_secs(10),
        driver: DriverConfig {
            default_poll: Duration::from_millis(100),
            min_poll: Duration::from_millis(20),
            max_poll: Duration::from_millis(200),
            ..DriverConfig::default()
        },
        ..ClientConfig::default()
    }
}

/// Answers the demo's questions as scripted, and remembers every question asked.
#[derive(Debug, Default)]
struct Scripted {
    /// `confirm_delete`: accept with `{confirm: true}`, else decline.
    confirm: bool,
    /// `test_tool_with_task`: the name to give.
    name: String,
    asked: Mutex<Vec<String>>,
}

impl Scripted {
    fn confirming() -> Scripted {
        Scripted {
            confirm: true,
            ..Scripted::default()
        }
    }

    fn named(name: &str) -> Scripted {
        Scripted {
            name: name.into(),
            ..Scripted::default()
        }
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().expect("not poisoned").clone()
    }
}

fn accept(content: Value) -> ElicitResult {
    serde_json::from_value(json!({ "action": "accept", "content": content }))
        .expect("a valid ElicitResult")
}

#[async_trait]
impl ClientHandler for Scripted {
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let ElicitRequestParams::Form(form) = params else {
            return Ok(ElicitResult::new(ElicitAction::Decline));
        };
        self.asked
            .lock()
            .expect("not poisoned")
            .push(form.message.clone());
        Ok(match form.message.as_str() {
            m if m.starts_with("Delete ") && self.confirm => accept(json!({ "confirm": true })),
            m if m.starts_with("Delete ") => ElicitResult::new(ElicitAction::Decline),
            "What is your name?" => accept(json!({ "name": self.name })),
            "First question" => accept(json!({ "name": "Ada" })),
            "Second question" => accept(json!({ "name": "Bob" })),
            other => {
                return Err(ErrorObject::new(
                    error_codes::INVALID_PARAMS,
                    format!("unexpected question {other:?}"),
                ));
            }
        })
    }
}

fn args(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        other => panic!("arguments must be an object, not {other}"),
    }
}

/// The result's text blocks, joined.
fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| {
            serde_json::to_value(c)
                .ok()
                .and_then(|v| v.get("text").and_then(Value::as_str).map(str::to_owned))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `call_tool_as_task`, which must make a task.
async fn start_task(client: &McpClient, tool: &str, arguments: Value) -> TaskHandle {
    match client.call_tool_as_task(tool, args(arguments)).await {
        Ok(Started::Task(handle)) => *handle,
        Ok(Started::Done(result)) => panic!("{tool} ran synchronously: {result:?}"),
        Err(e) => panic!("{tool}: {e}"),
    }
}

/// Reads the task through `client` until `done` holds, within `within`.
async fn status_until(
    client: &McpClient,
    id: &str,
    within: Duration,
    done: impl Fn(&TaskStatusView) -> bool,
) -> TaskStatusView {
    let handle = client.resume_task(id);
    let mut last = None;
    let found = tokio::time::timeout(within, async {
        loop {
            let task = handle.status().await.expect("tasks/get");
            if done(&task) {
                return task;
            }
            last = Some(task.status());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    // This handle only read the task: it must not cancel it on the way out.
    let _ = handle.detach();
    found.unwrap_or_else(|_| panic!("task {id} did not get there in {within:?}; last {last:?}"))
}

// ---------------------------------------------------------------------------------------
// Scenarios, each written once.
// ---------------------------------------------------------------------------------------

async fn greet_is_synchronous(f: Fixture) {
    let client = f.client(Arc::new(Scripted::default())).await;
    assert!(client.server().is_some_and(|s| s.supports_tasks()));
    let result = client
        .call_tool("greet", args(json!({ "name": "Ada" })))
        .await
        .expect("greet");
    assert_eq!(text(&result), "Hello, Ada!");
    assert_ne!(result.is_error, Some(true));
    match client
        .call_tool_as_task("greet", args(json!({ "name": "Bo" })))
        .await
        .expect("greet")
    {
        Started::Done(result) => assert_eq!(text(&result), "Hello, Bo!"),
        Started::Task(h) => panic!("greet made a task: {}", h.id()),
    }
}

async fn slow_compute_is_followed_to_completion(f: Fixture) {
    let client = f.client(Arc::new(Scripted::default())).await;
    let handle = start_task(&client, "slow_compute", json!({ "seconds": 1 })).await;
    assert!(!handle.id().is_empty());
    assert_eq!(
        handle.created().map(|t| t.status),
        Some(TaskStatus::Working)
    );
    let started = Instant::now();
    let result = handle.wait().await.expect("slow_compute");
    assert_eq!(text(&result), "computation: done after 1 s");
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "the result came before the work was done"
    );
    // The transparent path gives the same.
    let result = client
        .call_tool(
            "slow_compute",
            args(json!({ "seconds": 1, "label": "again" })),
        )
        .await
        .expect("slow_compute via call_tool");
    assert_eq!(text(&result), "again: done after 1 s");
}

async fn failing_job_is_an_ok_tool_error(f: Fixture) {
    let client = f.client(Arc::new(Scripted::default())).await;
    let result = client
        .call_tool("failing_job", JsonObject::new())
        .await
        .expect("a tool error is a result, not an Err");
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).contains("The job failed"), "{result:?}");
}

async fn protocol_error_job_is_task_failed(f: Fixture) {
    let client = f.client(Arc::new(Scripted::default())).await;
    let handle = start_task(&client, "protocol_error_job", json!({})).await;
    let id = handle.id().to_owned();
    match handle.wait().await {
        Err(ClientError::TaskFailed { task_id, error }) => {
            assert_eq!(task_id, id);
            assert_eq!(error.code, error_codes::INTERNAL_ERROR);
            assert_eq!(error.message, "The job hit a protocol-level error");
        }
        other => panic!("expected TaskFailed, got {other:?}"),
    }
    // And through call_tool.
    let err = client
        .call_tool("protocol_error_job", JsonObject::new())
        .await
        .expect_err("a failed task is an Err");
    assert_eq!(
        mcp_tasks_client::rpc_code(&err),
        Some(error_codes::INTERNAL_ERROR)
    );
    assert!(matches!(err, ClientError::TaskFailed { .. }), "{err:?}");
}

async fn confirm_delete_accepted(f: Fixture) {
    let handler = Arc::new(Scripted::confirming());
    let client = f.client(handler.clone()).await;
    let handle = start_task(
        &client,
        "confirm_delete",
        json!({ "filename": "report.txt" }),
    )
    .await;
    let result = handle.wait().await.expect("confirm_delete");
    assert_eq!(
        text(&result),
        "Deleted report.txt (not really: this is a demo)."
    );
    assert_eq!(handler.asked(), vec!["Delete report.txt?".to_owned()]);
    assert_eq!(handle.answered().len(), 1, "{:?}", handle.answered());
}

async fn confirm_delete_declined(f: Fixture) {
    let handler = Arc::new(Scripted::default());
    let client = f.client(handler.clone()).await;
    let result = client
        .call_tool("confirm_delete", args(json!({ "filename": "report.txt" })))
        .await
        .expect("confirm_delete");
    assert_eq!(text(&result), "Kept report.txt.");
    assert_eq!(handler.asked(), vec!["Delete report.txt?".to_owned()]);
}

async fn multi_input_answers_each_key_once(f: Fixture) {
    let handler = Arc::new(Scripted::default());
    let client = f.client(handler.clone()).await;
    let handle = start_task(&client, "multi_input", json!({})).await;
    let result = handle.wait().await.expect("multi_input");
    assert_eq!(text(&result), "Answers: Ada, Bob");
    let answered = handle.answered();
    assert_eq!(answered.len(), 2, "two keys answered: {answered:?}");
    assert_ne!(answered[0], answered[1]);
    let mut asked = handler.asked();
    asked.sort();
    assert_eq!(
        asked,
        vec!["First question".to_owned(), "Second question".to_owned()],
        "each question asked exactly once"
    );
}

async fn mrtr_round_then_task(f: Fixture) {
    let handler = Arc::new(Scripted::named("Grace"));
    let client = f.client(handler.clone()).await;
    // The MRTR round happens inside call_tool_as_task, before the task exists.
    let handle = start_task(&client, "test_tool_with_task", json!({})).await;
    assert_eq!(handler.asked(), vec!["What is your name?".to_owned()]);
    let result = handle.wait().await.expect("test_tool_with_task");
    assert_eq!(text(&result), "Hello, Grace! (from a task)");
    assert!(
        handle.answered().is_empty(),
        "MRTR keys are not task input keys"
    );
    assert_eq!(
        handler.asked().len(),
        1,
        "asked once: {:?}",
        handler.asked()
    );
}

async fn cancel_ends_the_task(f: Fixture) {
    let client = f.client(Arc::new(Scripted::default())).await;
    let handle = start_task(&client, "slow_compute", json!({ "seconds": 30 })).await;
    let started = Instant::now();
    handle.cancel().await.expect("tasks/cancel");
    let waited = tokio::time::timeout(Duration::from_secs(5), handle.wait())
        .await
        .expect("wait() ended soon after cancel");
    match waited {
        Err(ClientError::TaskCancelled { task_id, .. }) => assert_eq!(task_id, handle.id()),
        other => panic!("expected TaskCancelled, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5));
}

async fn dropping_a_handle_cancels_the_task(f: Fixture) {
    let client = f.client(Arc::new(Scripted::default())).await;
    let other = f.another(&client).await;
    let handle = start_task(&client, "slow_compute", json!({ "seconds": 30 })).await;
    let id = handle.id().to_owned();
    // Still running before the drop.
    let before = status_until(&other, &id, Duration::from_secs(5), |_| true).await;
    assert_eq!(before.status(), TaskStatus::Working);
    drop(handle);
    let after = status_until(&other, &id, Duration::from_secs(5), |t| {
        t.status() == TaskStatus::Cancelled
    })
    .await;
    assert_eq!(after.task_id(), id);
}

async fn reading_a_resumed_handle_does_not_cancel(f: Fixture) {
    let client = f.client(Arc::new(Scripted::default())).await;
    let other = f.another(&client).await;
    let handle = start_task(&client, "slow_compute", json!({ "seconds": 30 })).await;
    let id = handle.detach().task_id;
    // Peek through a temporary resumed handle, dropped at the end of the statement.
    let peeked = other.resume_task(&id).status().await.expect("tasks/get");
    assert_eq!(peeked.status(), TaskStatus::Working);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let later = other.resume_task(&id).status().await.expect("tasks/get");
    assert_eq!(
        later.status(),
        TaskStatus::Working,
        "a handle that only read the task cancelled it on drop"
    );
    other.resume_task(&id).cancel().await.expect("clean up");
}

async fn resume_from_another_client(f: Fixture) {
    let a = f.client(Arc::new(Scripted::default())).await;
    let handle = start_task(&a, "slow_compute", json!({ "seconds": 2 })).await;
    let reference = handle.detach();
    let b = f.another(&a).await;
    let resumed = b.resume(&reference).expect("the same revision");
    assert!(resumed.created().is_none());
    let result = resumed.wait().await.expect("resumed wait");
    assert_eq!(text(&result), "computation: done after 2 s");
}

async fn updates_show_intermediate_states(f: Fixture) {
    let client = f.client(Arc::new(Scripted::default())).await;
    let handle = start_task(&client, "slow_compute", json!({ "seconds": 1 })).await;
    let mut updates = handle.updates();
    let seen = Arc::new(Mutex::new(Vec::<TaskStatus>::new()));
    let watcher = tokio::spawn({
        let seen = Arc::clone(&seen);
        async move {
            while updates.changed().await.is_ok() {
                if let Some(task) = &*updates.borrow_and_update() {
                    seen.lock().expect("not poisoned").push(task.status());
                }
            }
        }
    });
    let result = handle.wait().await.expect("slow_compute");
    assert_eq!(text(&result), "computation: done after 1 s");
    drop(handle); // closes the channel, ending the watcher
    tokio::time::timeout(Duration::from_secs(2), watcher)
        .await
        .expect("watcher ended")
        .expect("watcher did not panic");
    let seen = seen.lock().expect("not poisoned").clone();
    assert_eq!(seen.first(), Some(&TaskStatus::Working), "{seen:?}");
    assert_eq!(seen.last(), Some(&TaskStatus::Completed), "{seen:?}");
}

/// Polling only: with a tiny poll interval the task still completes.
async fn polling_without_push(f: Fixture) {
    let mut cfg = config();
    cfg.driver.push = false;
    let client = f.client_with(Arc::new(Scripted::default()), cfg).await;
    let result = client
        .call_tool("slow_compute", args(json!({ "seconds": 1 })))
        .await
        .expect("slow_compute by polling");
    assert_eq!(text(&result), "computation: done after 1 s");
}

/// Push: with polls 20 s apart, only a pushed `notifications/tasks` can end the wait of
/// a 1-second task within a few seconds.
async fn push_ends_the_wait_before_the_next_poll(f: Fixture) {
    let mut cfg = config();
    cfg.driver.push = true;
    cfg.driver.min_poll = Duration::from_secs(20);
    cfg.driver.max_poll = Duration::from_secs(20);
    let client = f.client_with(Arc::new(Scripted::default()), cfg).await;
    let handle = start_task(&client, "slow_compute", json!({ "seconds": 1 })).await;
    let result = tokio::time::timeout(Duration::from_secs(8), handle.wait())
        .await
        .expect("a pushed update ended the wait before the 20 s poll")
        .expect("slow_compute");
    assert_eq!(text(&result), "computation: done after 1 s");
}

// ---------------------------------------------------------------------------------------
// Each scenario on both transports.
// ---------------------------------------------------------------------------------------

macro_rules! on_both_transports {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn http() {
                let f = Fixture::new(Kind::Http).await;
                tokio::time::timeout(SCENARIO, super::$scenario(f))
                    .await
                    .expect("the scenario finished in time");
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn stdio() {
                let f = Fixture::new(Kind::Stdio).await;
                tokio::time::timeout(SCENARIO, super::$scenario(f))
                    .await
                    .expect("the scenario finished in time");
            }
        }
    )*};
}

on_both_transports!(
    greet_is_synchronous,
    slow_compute_is_followed_to_completion,
    failing_job_is_an_ok_tool_error,
    protocol_error_job_is_task_failed,
    confirm_delete_accepted,
    confirm_delete_declined,
    multi_input_answers_each_key_once,
    mrtr_round_then_task,
    cancel_ends_the_task,
    dropping_a_handle_cancels_the_task,
    reading_a_resumed_handle_does_not_cancel,
    resume_from_another_client,
    updates_show_intermediate_states,
    polling_without_push,
    push_ends_the_wait_before_the_next_poll,
);
