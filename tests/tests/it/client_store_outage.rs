//! `mcp-tasks-client` following a task while the server's task store is unavailable (an
//! in-process HTTP server on a [`DeafStore`] the test takes down and brings back): polls
//! answered -32603 "retrying is safe" do not end the wait, and an answer the server could
//! not take is sent again as it was, without asking the user twice.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_client::{
    ClientConfig, ClientHandler, DriverConfig, McpClient, Started, TaskHandle, TaskStatusView,
};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::DetailedTask;
use mcp_tasks_protocol::types::ElicitResult;
use mcp_tasks_protocol::v2026::{CallToolResult, ElicitRequestParams};
use mcp_tasks_server::Server;
use mcp_tasks_server::http::HttpConfig;
use mcp_tests::deaf_store::{Deaf, DeafStore};
use mcp_tests::server_harness::{TestServer, demo_tools};
use serde_json::{Value, json};

/// Confirms every deletion; counts the questions and takes the store down while
/// answering the first one when told to.
#[derive(Debug, Default)]
struct Confirming {
    asked: AtomicUsize,
    store: Mutex<Option<Arc<DeafStore>>>,
}

#[async_trait]
impl ClientHandler for Confirming {
    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if let Some(store) = self.store.lock().expect("not poisoned").take() {
            // The answer will meet an unavailable store.
            store.layer().set_down(true);
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(800)).await;
                store.layer().set_down(false);
            });
        }
        Ok(
            serde_json::from_value(json!({ "action": "accept", "content": { "confirm": true } }))
                .expect("a valid ElicitResult"),
        )
    }
}

async fn server(store: Arc<DeafStore>) -> TestServer {
    let mut builder = Server::builder("mcp-tests", "0").store(store);
    for tool in demo_tools() {
        builder = builder.tool(tool);
    }
    TestServer::start_server(builder.build(), HttpConfig::default()).await
}

async fn client(url: &str, handler: Arc<dyn ClientHandler>) -> McpClient {
    let config = ClientConfig {
        request_timeout: Duration::from_secs(10),
        driver: DriverConfig {
            default_poll: Duration::from_millis(100),
            min_poll: Duration::from_millis(20),
            max_poll: Duration::from_millis(200),
            push: false,
            ..DriverConfig::default()
        },
        ..ClientConfig::default()
    };
    McpClient::connect_http(url, handler, config)
        .await
        .expect("connect")
}

fn args(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        other => panic!("arguments must be an object, not {other}"),
    }
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).expect("content")[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn start(client: &McpClient, tool: &str, arguments: Value) -> TaskHandle {
    match client.call_tool_as_task(tool, args(arguments)).await {
        Ok(Started::Task(handle)) => *handle,
        other => panic!("{tool} did not start a task: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polls_ride_out_an_unavailable_store() {
    let store = Arc::new(Deaf::store());
    let s = server(store.clone()).await;
    let client = client(&s.url, Arc::new(Confirming::default())).await;
    let handle = start(
        &client,
        "slow_compute",
        json!({ "seconds": 1, "label": "job" }),
    )
    .await;
    let waiting = tokio::spawn(async move { handle.wait().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    store.layer().set_down(true);
    // Several polls (every 100-200 ms) fail meanwhile.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    store.layer().set_down(false);
    let result = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("the wait ends")
        .expect("no panic")
        .expect("the task's result, despite the failed polls");
    assert_eq!(text(&result), "job: done after 1 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_store_could_not_take_is_sent_again_not_asked_again() {
    let store = Arc::new(Deaf::store());
    let s = server(store.clone()).await;
    let handler = Arc::new(Confirming::default());
    *handler.store.lock().expect("not poisoned") = Some(store.clone());
    let client = client(&s.url, handler.clone()).await;
    let handle = start(&client, "confirm_delete", json!({ "filename": "x.txt" })).await;
    let result = tokio::time::timeout(Duration::from_secs(20), handle.wait())
        .await
        .expect("the wait ends")
        .expect("the task's result");
    assert_eq!(text(&result), "Deleted x.txt (not really: this is a demo).");
    assert_eq!(handler.asked.load(Ordering::SeqCst), 1, "asked once");
    let status = handle.status().await.expect("status");
    assert!(
        matches!(status, TaskStatusView::V2026(DetailedTask::Completed(_))),
        "{status:?}"
    );
}
