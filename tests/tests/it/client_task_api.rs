//! The task client API against our demo server, in both revisions where the behaviour
//! exists in both: a [`TaskRef`] persisted and resumed by a new client (and by the
//! `mcp-call` binary), the update stream, `settle` with a deadline, the bound on input
//! rounds, and the poll floor / `pollIntervalMs` / push (requests counted on the wire).
//!
//! HTTP servers bind 127.0.0.1; in-process servers are reached over a memory connection
//! relayed through a counter of `tasks/get` frames. Every wait is bounded by [`WAIT`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use mcp_tasks_client::{
    ClientConfig, ClientError, ClientHandler, DriverConfig, Endpoint, McpClient, Revision, Started,
    TaskHandle, TaskRef, TaskUpdate,
};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::Connection;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::TaskStatus;
use mcp_tasks_protocol::types::{ElicitAction, ElicitResult, ElicitValue};
use mcp_tasks_protocol::v2026::{CallToolResult, ElicitRequestParams};
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{Server, demo};
use mcp_tests::server_harness::{TestServer, bearer_principal};
use serde_json::{Value, json};

/// The bound of one scenario.
const WAIT: Duration = Duration::from_secs(40);

/// Accepts every elicitation: `confirm: true`, `name: Ada`.
struct Confirm;

#[async_trait]
impl ClientHandler for Confirm {
    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        let mut content = indexmap::IndexMap::new();
        content.insert("confirm".to_owned(), ElicitValue::Boolean(true));
        content.insert("name".to_owned(), ElicitValue::String("Ada".into()));
        Ok(ElicitResult::accept(content))
    }
}

/// Declines every elicitation.
struct Decline;

#[async_trait]
impl ClientHandler for Decline {
    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        Ok(ElicitResult::new(ElicitAction::Decline))
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Rev {
    V2026,
    V2025,
}

fn revision(rev: Rev) -> Revision {
    match rev {
        Rev::V2026 => Revision::V2026_07_28,
        Rev::V2025 => Revision::V2025_11_25,
    }
}

/// Fast polls within the driver's bounds (the demo suggests no interval).
fn config(rev: Rev) -> ClientConfig {
    ClientConfig {
        request_timeout: Duration::from_secs(10),
        revision: revision(rev),
        driver: DriverConfig {
            default_poll: Duration::from_millis(50),
            min_poll: Duration::from_millis(20),
            max_poll: Duration::from_millis(200),
            ..DriverConfig::default()
        },
        ..ClientConfig::default()
    }
}

fn args(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        other => panic!("arguments must be an object, not {other}"),
    }
}

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

async fn start_task(client: &McpClient, tool: &str, arguments: Value) -> TaskHandle {
    match client.call_tool_as_task(tool, args(arguments)).await {
        Ok(Started::Task(handle)) => *handle,
        Ok(Started::Done(result)) => panic!("{tool} ran synchronously: {result:?}"),
        Err(e) => panic!("{tool}: {e}"),
    }
}

/// The demo tools on a server speaking both revisions, or only 2025-11-25, suggesting
/// `poll_ms` as the poll interval when given.
fn demo_server(rev: Rev, poll_ms: Option<u64>) -> Server {
    let mut builder = Server::builder("task-api", "1");
    if rev == Rev::V2025 {
        builder = builder.only_2025_11_25();
    }
    if let Some(ms) = poll_ms {
        builder = builder.poll_interval_ms(ms);
    }
    for tool in demo::tools().expect("demo tools") {
        builder = builder.tool(tool);
    }
    builder.build()
}

/// A client of `server` over a memory connection relayed through a counter of the
/// `tasks/get` requests the client sends.
async fn counted_client(
    server: &Server,
    handler: Arc<dyn ClientHandler>,
    config: ClientConfig,
) -> (McpClient, Arc<AtomicUsize>) {
    let (server_end, relay_server) = Connection::memory();
    let (relay_client, client_end) = Connection::memory();
    let _ = server.serve_connection(server_end);
    let gets = Arc::new(AtomicUsize::new(0));
    let Connection {
        sender: to_server,
        receiver: mut from_server,
    } = relay_server;
    let Connection {
        sender: to_client,
        receiver: mut from_client,
    } = relay_client;
    let counter = Arc::clone(&gets);
    tokio::spawn(async move {
        while let Some(Ok(frame)) = from_client.recv().await {
            if serde_json::from_str::<Value>(&frame)
                .is_ok_and(|m| m.get("method").and_then(Value::as_str) == Some("tasks/get"))
            {
                counter.fetch_add(1, Ordering::SeqCst);
            }
            if to_server.send(frame).await.is_err() {
                break;
            }
        }
    });
    tokio::spawn(async move {
        while let Some(Ok(frame)) = from_server.recv().await {
            if to_client.send(frame).await.is_err() {
                break;
            }
        }
    });
    let client = McpClient::connect(client_end, handler, config)
        .await
        .expect("connect");
    (client, gets)
}

/// HTTP with `Authorization: Bearer alice` (a 2025-11-25 task belongs to its principal,
/// or without one to its session, which a new client does not share).
async fn http_server() -> TestServer {
    TestServer::start_http(HttpConfig {
        principal: Some(bearer_principal()),
        ..HttpConfig::default()
    })
    .await
}

fn as_alice(mut config: ClientConfig) -> ClientConfig {
    config
        .http_headers
        .push(("Authorization".into(), "Bearer alice".into()));
    config
}

// ---------------------------------------------------------------------------------------
// The reference: detach, serialize, resume in a new client.
// ---------------------------------------------------------------------------------------

async fn detach_then_resume_in_a_new_client(rev: Rev) {
    let server = http_server().await;
    let first = McpClient::connect_http(&server.url, Arc::new(Confirm), as_alice(config(rev)))
        .await
        .expect("connect");
    let handle = start_task(&first, "slow_compute", json!({ "seconds": 1 })).await;
    let id = handle.id().to_owned();
    let saved = handle.detach().to_json();
    // The first client goes away; the task must go on (detached, not cancelled).
    drop(first);

    let reference: TaskRef = serde_json::from_str(&saved).expect("the reference reads back");
    assert_eq!(reference.task_id, id);
    assert_eq!(
        reference.endpoint,
        Some(Endpoint::Http {
            url: server.url.clone()
        })
    );
    let expected_revision = match rev {
        Rev::V2026 => "2026-07-28",
        Rev::V2025 => "2025-11-25",
    };
    assert_eq!(reference.revision, expected_revision);
    let operation = reference.operation.clone().expect("the call is kept");
    assert_eq!(operation.name, "slow_compute");
    assert_eq!(Value::Object(operation.arguments), json!({ "seconds": 1 }));

    let (second, resumed) =
        McpClient::connect_to(&reference, Arc::new(Confirm), as_alice(config(rev)))
            .await
            .expect("connect to the reference's endpoint");
    assert_eq!(resumed.id(), id);
    assert_eq!(resumed.reference(), reference);
    let result = resumed.wait().await.expect("the task completes");
    assert!(text(&result).contains("done after"), "{result:?}");

    // The other revision's client refuses the reference, typed.
    let other = match rev {
        Rev::V2026 => Rev::V2025,
        Rev::V2025 => Rev::V2026,
    };
    let mismatched =
        McpClient::connect_http(&server.url, Arc::new(Confirm), as_alice(config(other)))
            .await
            .expect("connect");
    assert!(matches!(
        mismatched.resume(&reference),
        Err(ClientError::Reference(_))
    ));
    drop(second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detach_then_resume_in_a_new_client_2026() {
    tokio::time::timeout(WAIT, detach_then_resume_in_a_new_client(Rev::V2026))
        .await
        .expect("in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detach_then_resume_in_a_new_client_2025() {
    tokio::time::timeout(WAIT, detach_then_resume_in_a_new_client(Rev::V2025))
        .await
        .expect("in time");
}

// ---------------------------------------------------------------------------------------
// The update stream.
// ---------------------------------------------------------------------------------------

async fn stream_sees_the_asking_tool_through(rev: Rev) {
    let server = demo_server(rev, None);
    let (client, _) = counted_client(&server, Arc::new(Confirm), config(rev)).await;
    let handle = start_task(&client, "confirm_delete", json!({ "filename": "a.txt" })).await;
    let mut updates = handle.into_updates();
    let mut statuses: Vec<TaskStatus> = Vec::new();
    let mut asked = Vec::new();
    let mut finished = None;
    while let Some(update) = updates.next().await {
        assert!(finished.is_none(), "nothing comes after Finished");
        match update {
            TaskUpdate::Status(view) => {
                if statuses.last() != Some(&view.status()) {
                    statuses.push(view.status());
                }
            }
            TaskUpdate::InputRequested { request, .. } => {
                asked.push(request.method().to_owned());
            }
            TaskUpdate::Finished(result) => finished = Some(result),
        }
    }
    // Working, input required, then (after the answer, when a read catches it) working
    // again, and completed.
    assert_eq!(statuses.first(), Some(&TaskStatus::Working), "{statuses:?}");
    assert_eq!(
        statuses.get(1),
        Some(&TaskStatus::InputRequired),
        "{statuses:?}"
    );
    assert_eq!(
        statuses.last(),
        Some(&TaskStatus::Completed),
        "{statuses:?}"
    );
    assert!(statuses.len() <= 4, "{statuses:?}");
    assert_eq!(asked, ["elicitation/create"]);
    let result = finished
        .expect("the stream ends with Finished")
        .expect("completed");
    assert!(text(&result).starts_with("Deleted a.txt"), "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_sees_working_input_required_completed_2026() {
    tokio::time::timeout(WAIT, stream_sees_the_asking_tool_through(Rev::V2026))
        .await
        .expect("in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_sees_working_input_required_completed_2025() {
    tokio::time::timeout(WAIT, stream_sees_the_asking_tool_through(Rev::V2025))
        .await
        .expect("in time");
}

/// A stream detached mid-way leaves its task running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_stream_leaves_the_task_running() {
    let run = async {
        let server = demo_server(Rev::V2026, None);
        let (client, _) = counted_client(&server, Arc::new(Confirm), config(Rev::V2026)).await;
        let handle = start_task(&client, "slow_compute", json!({ "seconds": 1 })).await;
        let mut updates = handle.into_updates();
        assert!(matches!(updates.next().await, Some(TaskUpdate::Status(_))));
        let reference = updates.detach();
        let result = client
            .resume(&reference)
            .expect("same revision")
            .wait()
            .await
            .expect("still running, then completed");
        assert!(text(&result).contains("done after"));
    };
    tokio::time::timeout(WAIT, run).await.expect("in time");
}

// ---------------------------------------------------------------------------------------
// settle: a deadline, typed; the task goes on.
// ---------------------------------------------------------------------------------------

async fn settle_times_out_then_succeeds(rev: Rev) {
    let server = demo_server(rev, None);
    let (client, _) = counted_client(&server, Arc::new(Confirm), config(rev)).await;
    let handle = start_task(&client, "slow_compute", json!({ "seconds": 2 })).await;
    match handle
        .settle(Instant::now() + Duration::from_millis(300))
        .await
    {
        Err(ClientError::Deadline {
            task_id,
            last_status,
        }) => {
            assert_eq!(task_id, handle.id());
            assert_eq!(last_status, Some(TaskStatus::Working));
        }
        other => panic!("expected ClientError::Deadline, got {other:?}"),
    }
    let result = handle
        .settle(Instant::now() + Duration::from_secs(20))
        .await
        .expect("the task was left running and completes");
    assert!(text(&result).contains("done after"), "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_times_out_typed_then_succeeds_2026() {
    tokio::time::timeout(WAIT, settle_times_out_then_succeeds(Rev::V2026))
        .await
        .expect("in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_times_out_typed_then_succeeds_2025() {
    tokio::time::timeout(WAIT, settle_times_out_then_succeeds(Rev::V2025))
        .await
        .expect("in time");
}

// ---------------------------------------------------------------------------------------
// Input: per-task handlers and the bound on rounds.
// ---------------------------------------------------------------------------------------

/// Runs `confirm_delete` on `handle`, expecting the input bound `limit` to stop it,
/// typed, and the task to end other than completed.
async fn exceeds(client: &McpClient, handle: TaskHandle, limit: u32) {
    let id = handle.id().to_owned();
    match handle.wait().await {
        Err(ClientError::InputRoundsExceeded {
            task_id,
            limit: said,
        }) => {
            assert_eq!(task_id.as_deref(), Some(id.as_str()));
            assert_eq!(said, limit);
        }
        other => panic!("expected InputRoundsExceeded, got {other:?}"),
    }
    let watcher = client.resume_task(&id);
    let status = loop {
        let status = watcher.status().await.expect("tasks/get").status();
        if status.is_terminal() {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert_ne!(status, TaskStatus::Completed, "the task was stopped");
    let _ = watcher.detach();
}

async fn input_rounds_past_the_bound_are_typed(rev: Rev) {
    // The client's bound, which holds from the task's first request in both revisions.
    let server = demo_server(rev, None);
    let mut none = config(rev);
    none.max_input_rounds = 0;
    let (client, _) = counted_client(&server, Arc::new(Confirm), none).await;
    let handle = start_task(&client, "confirm_delete", json!({ "filename": "b.txt" })).await;
    exceeds(&client, handle, 0).await;

    if rev == Rev::V2025 {
        // A 2025-11-25 server asks as soon as the task exists, before a handle's own
        // settings can apply (see TaskHandle::with_max_input_rounds).
        return;
    }
    // A handle's own bound and handler.
    let (client, _) = counted_client(&server, Arc::new(Confirm), config(rev)).await;
    let handle = start_task(&client, "confirm_delete", json!({ "filename": "c.txt" }))
        .await
        .with_max_input_rounds(0);
    exceeds(&client, handle, 0).await;
    let handle = start_task(&client, "confirm_delete", json!({ "filename": "d.txt" }))
        .await
        .with_max_input_rounds(1)
        .with_handler(Arc::new(Decline));
    let result = handle.wait().await.expect("one round is allowed");
    assert_eq!(
        text(&result),
        "Kept d.txt.",
        "the task's own handler declined"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_rounds_past_the_bound_are_typed_2026() {
    tokio::time::timeout(WAIT, input_rounds_past_the_bound_are_typed(Rev::V2026))
        .await
        .expect("in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_rounds_past_the_bound_are_typed_2025() {
    tokio::time::timeout(WAIT, input_rounds_past_the_bound_are_typed(Rev::V2025))
        .await
        .expect("in time");
}

/// MRTR rounds of a synchronous `tools/call` (2026-07-28 only) are bounded the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mrtr_rounds_past_the_bound_are_typed() {
    let run = async {
        let server = demo_server(Rev::V2026, None);
        let mut config = config(Rev::V2026);
        config.max_input_rounds = 0;
        let (client, _) = counted_client(&server, Arc::new(Confirm), config).await;
        match client
            .call_tool("test_tool_with_task", JsonObject::new())
            .await
        {
            Err(ClientError::InputRoundsExceeded {
                task_id: None,
                limit: 0,
            }) => {}
            other => panic!("expected InputRoundsExceeded for tools/call, got {other:?}"),
        }
    };
    tokio::time::timeout(WAIT, run).await.expect("in time");
}

// ---------------------------------------------------------------------------------------
// Polling: the floor, the server's pollIntervalMs, push in 2025-11-25.
// ---------------------------------------------------------------------------------------

/// Polls only, the given bounds.
fn polling(rev: Rev, default_poll: u64, min_poll: u64) -> ClientConfig {
    let mut config = config(rev);
    config.driver = DriverConfig {
        default_poll: Duration::from_millis(default_poll),
        min_poll: Duration::from_millis(min_poll),
        max_poll: Duration::from_secs(5),
        push: false,
        ..DriverConfig::default()
    };
    config
}

/// `tasks/get` requests of a 1 s task, polled with `config` against a server suggesting
/// `server_poll_ms`.
async fn gets_for_one_second(rev: Rev, server_poll_ms: Option<u64>, config: ClientConfig) -> usize {
    let server = demo_server(rev, server_poll_ms);
    let (client, gets) = counted_client(&server, Arc::new(Confirm), config).await;
    let handle = start_task(&client, "slow_compute", json!({ "seconds": 1 })).await;
    let result = handle.wait().await.expect("completes");
    assert!(text(&result).contains("done after"));
    gets.load(Ordering::SeqCst)
}

async fn poll_floor_and_interval_are_honoured(rev: Rev) {
    // The server suggests 1 ms; the floor (300 ms, jitter down to 240) wins: at most
    // 1000 / 240 + the first read and the last, not hundreds.
    let floored = gets_for_one_second(rev, Some(1), polling(rev, 10, 300)).await;
    assert!(floored <= 8, "{floored} tasks/get with a 300 ms floor");
    // The server suggests 400 ms; the client's 10 ms default does not apply.
    let suggested = gets_for_one_second(rev, Some(400), polling(rev, 10, 10)).await;
    assert!(
        suggested <= 7,
        "{suggested} tasks/get at the server's 400 ms"
    );
    // The server suggests 20 ms and the floor is 10 ms: it polls far more often (the
    // counter does count, and the floor above is what held it back).
    let fast = gets_for_one_second(rev, Some(20), polling(rev, 10, 10)).await;
    assert!(fast >= 15, "{fast} tasks/get at the server's 20 ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poll_floor_and_interval_are_honoured_2026() {
    tokio::time::timeout(WAIT, poll_floor_and_interval_are_honoured(Rev::V2026))
        .await
        .expect("in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poll_floor_and_interval_are_honoured_2025() {
    tokio::time::timeout(WAIT, poll_floor_and_interval_are_honoured(Rev::V2025))
        .await
        .expect("in time");
}

/// With polls 60 s apart, a 1 s task ends well within the bound only through push:
/// `subscriptions/listen` (2026-07-28) or `notifications/tasks/status` (2025-11-25).
async fn push_ends_the_wait_without_polls(rev: Rev) {
    let mut config = config(rev);
    config.driver = DriverConfig {
        default_poll: Duration::from_secs(60),
        min_poll: Duration::from_secs(60),
        max_poll: Duration::from_secs(60),
        push: true,
        ..DriverConfig::default()
    };
    let server = demo_server(rev, None);
    let (client, gets) = counted_client(&server, Arc::new(Confirm), config).await;
    let handle = start_task(&client, "slow_compute", json!({ "seconds": 1 })).await;
    let result = tokio::time::timeout(Duration::from_secs(20), handle.wait())
        .await
        .expect("a pushed update ended the wait (polls are 60 s apart)")
        .expect("completes");
    assert!(text(&result).contains("done after"));
    let gets = gets.load(Ordering::SeqCst);
    assert!(gets <= 3, "{gets} tasks/get");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_ends_the_wait_without_polls_2026() {
    push_ends_the_wait_without_polls(Rev::V2026).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_ends_the_wait_without_polls_2025() {
    push_ends_the_wait_without_polls(Rev::V2025).await;
}

// ---------------------------------------------------------------------------------------
// mcp-call --detach / --resume.
// ---------------------------------------------------------------------------------------

async fn mcp_call(args: &[&str]) -> std::process::Output {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-call"));
    command.args(args).kill_on_drop(true);
    tokio::time::timeout(WAIT, command.output())
        .await
        .expect("mcp-call ends in time")
        .expect("mcp-call runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_call_detach_prints_a_reference_and_resume_follows_it() {
    let server = TestServer::start().await;
    let dir = std::env::temp_dir().join(format!("mcp-task-api-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let tokens = dir.join("tokens.json");
    let tokens = tokens.to_str().expect("utf-8 path");
    let detached = mcp_call(&[
        "--http",
        &server.url,
        "--token-file",
        tokens,
        "--no-browser",
        "--detach",
        "slow_compute",
        r#"{"seconds":1}"#,
    ])
    .await;
    assert!(
        detached.status.success(),
        "{}",
        String::from_utf8_lossy(&detached.stderr)
    );
    let printed = String::from_utf8_lossy(&detached.stdout).trim().to_owned();
    let reference: TaskRef = serde_json::from_str(&printed)
        .unwrap_or_else(|e| panic!("--detach printed no reference ({e}): {printed:?}"));
    assert_eq!(
        reference.endpoint,
        Some(Endpoint::Http {
            url: server.url.clone()
        })
    );
    assert_eq!(
        reference.operation.as_ref().map(|o| o.name.as_str()),
        Some("slow_compute")
    );

    let file = dir.join("task.json");
    std::fs::write(&file, &printed).expect("write the reference");
    let at_file = format!("@{}", file.display());
    // No --http: the reference's endpoint is used.
    let resumed = mcp_call(&["--token-file", tokens, "--resume", &at_file]).await;
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let out = String::from_utf8_lossy(&resumed.stdout);
    assert!(out.contains("done after 1 s"), "{out}");
}
