//! What a task's tool sees of its caller, wherever the task runs: the client
//! capabilities the creating `tools/call` declared (MCP 2026-07-28) reach
//! `ToolContext::client_capabilities` on the node that created it (`Role::All`) and on a
//! worker node that claimed it (`Role::Api` in front, `Role::Worker` behind, sharing one
//! store), from the task record's job.

use std::sync::Arc;
use std::time::Duration;

use mcp_server::http::HttpConfig;
use mcp_server::{CallToolResult, Role, Server, TaskPolicy, ToolContext, ToolDef, WorkerConfig};
use mcp_tasks::{MemoryStore, TaskStore};
use mcp_tests::server_harness::{PROTOCOL_VERSION, TestServer, WAIT};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize, JsonSchema)]
struct NoArgs {}

/// A task tool that answers with the client capabilities its context shows.
fn declared_tool() -> ToolDef {
    ToolDef::new(
        "declared",
        TaskPolicy::Required,
        |ctx: ToolContext, _args: NoArgs| async move {
            let shown = match ctx.client_capabilities() {
                Some(caps) => serde_json::to_string(caps).unwrap_or_default(),
                None => "none".to_owned(),
            };
            Ok(CallToolResult::text(shown))
        },
    )
    .expect("tool")
}

fn server(store: Arc<dyn TaskStore>, role: Role) -> Server {
    Server::builder("mcp-tests", "0")
        .store(store)
        .role(role)
        .worker(WorkerConfig {
            poll: Duration::from_millis(50),
            ..WorkerConfig::default()
        })
        .tool(declared_tool())
        .build()
}

/// Calls `declared` as a task declaring elicitation (and the tasks extension) and
/// returns what the tool saw, once the task completed.
async fn seen(front: &TestServer) -> Value {
    let params = json!({
        "name": "declared",
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientInfo": { "name": "mcp-tests", "version": "0" },
            "io.modelcontextprotocol/clientCapabilities": {
                "elicitation": { "form": {} },
                "extensions": { "io.modelcontextprotocol/tasks": {} }
            }
        }
    });
    let reply = front.rpc("tools/call", params).await;
    let task_id = reply.result()["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {}", reply.text))
        .to_owned();
    let done = front
        .poll_task(&task_id, WAIT, |r| r["status"] == "completed")
        .await;
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text result: {done}"));
    serde_json::from_str(text).unwrap_or_else(|_| panic!("the tool saw {text:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_run_where_it_was_created_sees_the_declarations() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
    let front = TestServer::start_server(server(store, Role::All), HttpConfig::default()).await;
    let caps = tokio::time::timeout(WAIT, seen(&front))
        .await
        .expect("in time");
    assert!(caps["elicitation"].is_object(), "{caps}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_a_worker_claimed_sees_the_declarations() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
    let front =
        TestServer::start_server(server(Arc::clone(&store), Role::Api), HttpConfig::default())
            .await;
    let worker = server(store, Role::Worker);
    let caps = tokio::time::timeout(WAIT, seen(&front))
        .await
        .expect("in time");
    assert!(caps["elicitation"].is_object(), "{caps}");
    worker.shutdown().await;
}
