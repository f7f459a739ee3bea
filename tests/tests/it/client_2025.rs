//! Our client against a server that offers only MCP 2025-11-25: `server/discover` fails
//! with -32601, the client falls back to `initialize`, asks for tasks within each tool's
//! `execution.taskSupport`, and answers input the server asks for during `tasks/result`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_client::{
    ClientConfig, ClientError, ClientHandler, McpClient, ServerInfo, Started, TaskStatusView,
};
use mcp_tasks_protocol::engine::Connection;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::TaskStatus;
use mcp_tasks_protocol::types::{ElicitResult, ElicitValue};
use mcp_tasks_protocol::v2026::ElicitRequestParams;
use mcp_tasks_server::{Server, demo};

const WAIT: Duration = Duration::from_secs(30);

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

async fn connect() -> McpClient {
    let mut builder = Server::builder("legacy-only", "1").only_2025_11_25();
    for tool in demo::tools().expect("demo tools") {
        builder = builder.tool(tool);
    }
    let server = builder.build();
    let (server_end, client_end) = Connection::memory();
    let _ = server.serve_connection(server_end);
    McpClient::connect(client_end, Arc::new(Confirm), ClientConfig::default())
        .await
        .expect("connect")
}

fn text(result: &mcp_tasks_protocol::v2026::CallToolResult) -> String {
    serde_json::to_value(&result.content[0]).expect("json")["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn falls_back_to_initialize_and_runs_tasks() {
    let client = tokio::time::timeout(WAIT, connect())
        .await
        .expect("in time");
    assert!(
        matches!(client.server(), Some(ServerInfo::V2025(_))),
        "negotiated 2025-11-25"
    );
    let tools = client.list_tools().await.expect("tools/list");
    assert!(tools.tools.iter().any(|t| t.name == "slow_compute"));

    let greeting = tokio::time::timeout(
        WAIT,
        client.call_tool(
            "greet",
            serde_json::Map::from_iter([("name".into(), "Bo".into())]),
        ),
    )
    .await
    .expect("in time")
    .expect("greet");
    assert_eq!(text(&greeting), "Hello, Bo!");

    let started = client
        .call_tool_as_task(
            "slow_compute",
            serde_json::Map::from_iter([("seconds".into(), 0.3.into())]),
        )
        .await
        .expect("slow_compute");
    let Started::Task(handle) = started else {
        panic!("slow_compute should run as a task")
    };
    let done = tokio::time::timeout(WAIT, handle.wait())
        .await
        .expect("in time")
        .expect("result");
    assert!(text(&done).contains("done"), "{done:?}");

    // Input during a task: the server asks while our tasks/result waits.
    let confirmed = tokio::time::timeout(
        WAIT,
        client.call_tool(
            "confirm_delete",
            serde_json::Map::from_iter([("filename".into(), "a.txt".into())]),
        ),
    )
    .await
    .expect("in time")
    .expect("confirm_delete");
    assert!(
        text(&confirmed).starts_with("Deleted a.txt"),
        "{confirmed:?}"
    );

    // A required tool gets its task; a JSON-RPC error ends it failed.
    let failing = tokio::time::timeout(WAIT, client.call_tool("failing_job", Default::default()))
        .await
        .expect("in time")
        .expect("failing_job");
    assert_eq!(failing.is_error, Some(true));
    let protocol = tokio::time::timeout(
        WAIT,
        client.call_tool("protocol_error_job", Default::default()),
    )
    .await
    .expect("in time");
    assert!(
        matches!(protocol, Err(ClientError::TaskFailed { .. })),
        "{protocol:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_in_a_2025_session() {
    let client = tokio::time::timeout(WAIT, connect())
        .await
        .expect("in time");
    let Started::Task(handle) = client
        .call_tool_as_task(
            "slow_compute",
            serde_json::Map::from_iter([("seconds".into(), 30.into())]),
        )
        .await
        .expect("slow_compute")
    else {
        panic!("a task")
    };
    handle.cancel().await.expect("cancel");
    let outcome = tokio::time::timeout(WAIT, handle.wait())
        .await
        .expect("in time");
    assert!(
        matches!(outcome, Err(ClientError::TaskCancelled { .. })),
        "{outcome:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_in_a_2025_session_is_the_flat_2025_task() {
    let client = tokio::time::timeout(WAIT, connect())
        .await
        .expect("in time");
    let Started::Task(handle) = client
        .call_tool_as_task(
            "slow_compute",
            serde_json::Map::from_iter([("seconds".into(), 30.into())]),
        )
        .await
        .expect("slow_compute")
    else {
        panic!("a task")
    };
    let view = tokio::time::timeout(WAIT, handle.status())
        .await
        .expect("in time")
        .expect("tasks/get");
    let TaskStatusView::V2025(task) = &view else {
        panic!("a 2025-11-25 session reports the flat task: {view:?}")
    };
    assert_eq!(task.task_id, handle.id());
    assert_eq!(view.status(), TaskStatus::Working);
    assert_eq!(view.ttl_ms(), task.ttl);
    assert_eq!(
        handle.updates().borrow().as_ref(),
        Some(&view),
        "updates show what status read"
    );
    handle.cancel().await.expect("cancel");
}

/// A handle fresh from `call_tool_as_task` owns its task in a 2025-11-25 session too:
/// dropping it unfinished cancels the task (as in 2026-07-28).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_fresh_2025_handle_cancels_its_task() {
    let client = tokio::time::timeout(WAIT, connect())
        .await
        .expect("in time");
    let Started::Task(handle) = client
        .call_tool_as_task(
            "slow_compute",
            serde_json::Map::from_iter([("seconds".into(), 30.into())]),
        )
        .await
        .expect("slow_compute")
    else {
        panic!("a task")
    };
    let id = handle.id().to_owned();
    drop(handle);
    let watcher = client.resume_task(id);
    let cancelled = tokio::time::timeout(WAIT, async {
        loop {
            let view = watcher.status().await.expect("tasks/get");
            if view.status() == TaskStatus::Cancelled {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
    })
    .await;
    assert!(
        cancelled.is_ok(),
        "the dropped handle's task was not cancelled"
    );
}
