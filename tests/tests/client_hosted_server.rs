//! Our server asks our client as a task (MCP 2025-11-25, SEP-1686, the client as
//! receiver): the client hosts tasks in a store and declares them, so the demo tools
//! `ask_name` (elicitation) and `ask_model` (sampling) ask with `params.task`, follow the
//! client's task with `tasks/get` and `tasks/result`, and hand its answer to the tool;
//! cancelling the tool's task cancels the client's. Over an in-process connection and
//! over Streamable HTTP, for a tool running as a task and for a synchronous call.

mod client_hosted_common;

use std::sync::Arc;
use std::time::Duration;

use client_hosted_common::{Answers, wait_for};
use mcp_client::{ClientConfig, DriverConfig, McpClient, Revision, Started};
use mcp_protocol::JsonObject;
use mcp_protocol::engine::Connection;
use mcp_protocol::v2025;
use mcp_protocol::v2026::CallToolResult;
use mcp_server::http::HttpConfig;
use mcp_server::{RuntimeConfig, ToolDef, demo};
use mcp_tasks::{MemoryStore, TaskStore};
use mcp_tests::server_harness::{TestServer, build_server};

const WAIT: Duration = Duration::from_secs(30);

fn tools() -> Vec<ToolDef> {
    demo::asking::tools().expect("asking tools")
}

fn config(store: &Arc<MemoryStore>) -> ClientConfig {
    ClientConfig {
        revision: Revision::V2025_11_25,
        request_timeout: WAIT,
        driver: DriverConfig {
            default_poll: Duration::from_millis(50),
            min_poll: Duration::from_millis(20),
            max_poll: Duration::from_millis(200),
            ..DriverConfig::default()
        },
        ..ClientConfig::default()
    }
    .with_client_tasks(Arc::clone(store) as Arc<dyn TaskStore>)
}

async fn in_process(handler: Arc<Answers>, store: &Arc<MemoryStore>) -> McpClient {
    let server = build_server(tools(), RuntimeConfig::default());
    let (server_end, client_end) = Connection::memory();
    let _ = server.serve_connection(server_end);
    tokio::time::timeout(WAIT, McpClient::connect(client_end, handler, config(store)))
        .await
        .expect("in time")
        .expect("connect")
}

async fn over_http(handler: Arc<Answers>, store: &Arc<MemoryStore>) -> (TestServer, McpClient) {
    let server =
        TestServer::start_with(tools(), RuntimeConfig::default(), HttpConfig::default()).await;
    let client = tokio::time::timeout(
        WAIT,
        McpClient::connect_http(&server.url, handler, config(store)),
    )
    .await
    .expect("in time")
    .expect("connect");
    (server, client)
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content[0]).expect("json")["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Both tools as tasks of the server, each question a task of the client.
async fn tasks_ask_tasks(client: &McpClient, store: &MemoryStore) {
    let greeted = tokio::time::timeout(WAIT, client.call_tool("ask_name", JsonObject::new()))
        .await
        .expect("in time")
        .expect("ask_name");
    assert_eq!(text(&greeted), "Hello, Ada!");
    assert_eq!(store.len(), 1, "the elicitation was a task of the client");
    let args = JsonObject::from_iter([("prompt".into(), "The answer?".into())]);
    let sampled = tokio::time::timeout(WAIT, client.call_tool("ask_model", args))
        .await
        .expect("in time")
        .expect("ask_model");
    assert_eq!(text(&sampled), "LLM response: 42");
    assert_eq!(store.len(), 2, "the sampling was a task of the client");
}

/// A synchronous call (no `params.task`): the tool asks on the call's own stream, as a
/// task of the client all the same.
async fn sync_call_asks_a_task(client: &McpClient, store: &MemoryStore) {
    let before = store.len();
    let params = v2025::CallToolRequestParams {
        name: "ask_name".into(),
        arguments: Some(JsonObject::new()),
        task: None,
        meta: None,
        extra: JsonObject::new(),
    };
    let result = tokio::time::timeout(WAIT, client.request::<v2025::CallTool>(&params))
        .await
        .expect("in time")
        .expect("tools/call");
    let text = serde_json::to_value(&result).expect("json")["content"][0]["text"].clone();
    assert_eq!(text, "Hello, Ada!");
    assert_eq!(
        store.len(),
        before + 1,
        "the elicitation was a task of the client"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_the_server_asks_the_client_as_a_task() {
    let store = Arc::new(MemoryStore::default());
    let client = in_process(Arc::new(Answers::default()), &store).await;
    tasks_ask_tasks(&client, &store).await;
    sync_call_asks_a_task(&client, &store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_the_server_asks_the_client_as_a_task() {
    let store = Arc::new(MemoryStore::default());
    let (_server, client) = over_http(Arc::new(Answers::default()), &store).await;
    tasks_ask_tasks(&client, &store).await;
    sync_call_asks_a_task(&client, &store).await;
}

/// Without a store the client declares no tasks, and the server asks as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_tasks_is_asked_plainly() {
    let server = build_server(tools(), RuntimeConfig::default());
    let (server_end, client_end) = Connection::memory();
    let _ = server.serve_connection(server_end);
    let config = ClientConfig {
        revision: Revision::V2025_11_25,
        ..ClientConfig::default()
    };
    let client = McpClient::connect(client_end, Arc::new(Answers::default()), config)
        .await
        .expect("connect");
    let greeted = tokio::time::timeout(WAIT, client.call_tool("ask_name", JsonObject::new()))
        .await
        .expect("in time")
        .expect("ask_name");
    assert_eq!(text(&greeted), "Hello, Ada!");
}

/// Cancelling the tool's task cancels the client's task: its handler is stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_tool_cancels_the_clients_task() {
    let store = Arc::new(MemoryStore::default());
    let handler = Arc::new(Answers {
        hold_all: true,
        ..Answers::default()
    });
    let client = in_process(Arc::clone(&handler), &store).await;
    let Started::Task(task) = client
        .call_tool_as_task("ask_name", JsonObject::new())
        .await
        .expect("ask_name")
    else {
        panic!("ask_name runs as a task when asked to")
    };
    tokio::time::timeout(WAIT, handler.asked.notified())
        .await
        .expect("the client was asked");
    assert_eq!(store.len(), 1);
    task.cancel().await.expect("tasks/cancel");
    wait_for(&handler.dropped, WAIT, "the client's handler was stopped").await;
}
