//! Client-hosted tasks (MCP 2025-11-25, SEP-1686) with the official TypeScript SDK
//! (`@modelcontextprotocol/sdk`, pinned in `tests/ts-sdk/package.json`), both ways:
//!
//! - its server asks our client: `tests/ts-sdk/hosted-server.mjs` sends a task-based
//!   elicitation and sampling through its experimental tasks API, follows our client's
//!   tasks (`tasks/get`, `tasks/result`), lists and cancels them;
//! - our server asks its client: `tests/ts-sdk/hosted-client.mjs`, a client hosting tasks
//!   in the SDK's `InMemoryTaskStore`, calls our tools; each question reaches it with
//!   `params.task` and our server follows its task to the answer, and cancels it.
//!
//! Over stdio and Streamable HTTP. Skipped when `npm ci --prefix tests/ts-sdk` has not
//! run, unless `MCP_REQUIRE_SERVICES=1`.

use std::sync::Arc;
use std::time::Duration;

use crate::client_hosted_common::{Answers, wait_for};
use mcp_tasks::{MemoryStore, TaskStore};
use mcp_tasks_client::{ClientConfig, McpClient, Revision};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::v2026::CallToolResult;
use mcp_tasks_server::RuntimeConfig;
use mcp_tasks_server::http::HttpConfig;
use mcp_tests::server_harness::TestServer;
use mcp_tests::ts_sdk::{RUN_BOUND, Sdk};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(30);

fn config(store: &Arc<MemoryStore>) -> ClientConfig {
    ClientConfig {
        revision: Revision::V2025_11_25,
        request_timeout: WAIT,
        ..ClientConfig::default()
    }
    .with_client_tasks(Arc::clone(store) as Arc<dyn TaskStore>)
}

/// The JSON report a `hosted-server.mjs` tool returns as its text.
async fn report(client: &McpClient, tool: &str) -> Value {
    let result: CallToolResult =
        tokio::time::timeout(RUN_BOUND, client.call_tool(tool, JsonObject::new()))
            .await
            .expect("in time")
            .expect(tool);
    let text = serde_json::to_value(&result.content[0]).expect("json")["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_ne!(result.is_error, Some(true), "{tool}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{tool} reported {text}: {e}"))
}

/// What the SDK's server saw of our client's tasks.
async fn the_sdk_server_follows_our_tasks(
    client: &McpClient,
    store: &MemoryStore,
    answers: &Answers,
) {
    let both = report(client, "ask_both").await;
    let elicitation = &both["elicitation"];
    assert_eq!(elicitation["created"]["status"], "working", "{both}");
    assert!(elicitation["created"]["ttl"].is_number(), "{both}");
    assert_eq!(elicitation["result"]["action"], "accept", "{both}");
    assert_eq!(elicitation["result"]["content"]["name"], "Ada", "{both}");
    assert_eq!(elicitation["error"], Value::Null, "{both}");
    let sampling = &both["sampling"];
    assert_eq!(sampling["created"]["status"], "working", "{both}");
    assert_eq!(sampling["result"]["content"]["text"], "42", "{both}");
    let listed: Vec<&Value> = both["listed"]["tasks"]
        .as_array()
        .expect("tasks/list")
        .iter()
        .map(|t| &t["taskId"])
        .collect();
    assert_eq!(
        listed,
        [
            &elicitation["created"]["taskId"],
            &sampling["created"]["taskId"]
        ],
        "{both}"
    );
    for got in both["got"].as_array().expect("tasks/get") {
        assert_eq!(got["status"], "completed", "{both}");
    }
    assert_eq!(store.len(), 2, "both were tasks in our client's store");

    let cancelled = report(client, "cancel_one").await;
    assert_eq!(cancelled["cancelled"]["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["got"]["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["again"]["error"]["code"], -32602, "{cancelled}");
    wait_for(
        &answers.dropped,
        WAIT,
        "our handler was stopped by the SDK's tasks/cancel",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_server_asks_our_client_as_tasks_over_stdio() {
    let Some(sdk) = Sdk::find() else { return };
    let store = Arc::new(MemoryStore::default());
    let answers = Arc::new(Answers::default());
    let node = sdk.node().to_string_lossy().into_owned();
    let script = sdk
        .script("hosted-server.mjs")
        .to_string_lossy()
        .into_owned();
    let client = tokio::time::timeout(
        WAIT,
        McpClient::connect_stdio(
            &node,
            &[script, "--stdio".into()],
            answers.clone(),
            config(&store),
        ),
    )
    .await
    .expect("in time")
    .expect("connect");
    the_sdk_server_follows_our_tasks(&client, &store, &answers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_server_asks_our_client_as_tasks_over_http() {
    let Some(sdk) = Sdk::find() else { return };
    let (_server, line) = sdk.spawn_listening("hosted-server.mjs", &["--http"]).await;
    let url = line
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("hosted-server.mjs printed {line}"))
        .to_owned();
    let store = Arc::new(MemoryStore::default());
    let answers = Arc::new(Answers::default());
    let client = tokio::time::timeout(
        WAIT,
        McpClient::connect_http(&url, answers.clone(), config(&store)),
    )
    .await
    .expect("in time")
    .expect("connect");
    the_sdk_server_follows_our_tasks(&client, &store, &answers).await;
}

/// Every step `hosted-client.mjs` reports.
const CLIENT_STEPS: [&str; 5] = [
    "initialize",
    "confirm_delete as a task: its elicitation is a task of this client",
    "test_sampling synchronously: its sampling is a task of this client",
    "test_elicitation synchronously: its elicitation is a task of this client",
    "cancelling the tool cancels this client's task",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_server_asks_the_sdk_client_as_tasks_over_http() {
    let Some(sdk) = Sdk::find() else { return };
    let mut tools = mcp_tasks_server::demo::fixtures::tools().expect("fixture tools");
    tools.extend(mcp_tasks_server::demo::tools().expect("demo tools"));
    let server =
        TestServer::start_with(tools, RuntimeConfig::default(), HttpConfig::default()).await;
    let report = sdk
        .run_script("hosted-client.mjs", &["--url", &server.url], &CLIENT_STEPS)
        .await;
    assert_eq!(report["transport"], "streamable-http");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_server_asks_the_sdk_client_as_tasks_over_stdio() {
    let Some(sdk) = Sdk::find() else { return };
    let report = sdk
        .run_script(
            "hosted-client.mjs",
            &[
                "--command",
                env!("CARGO_BIN_EXE_conformance-server"),
                "--stdio",
            ],
            &CLIENT_STEPS,
        )
        .await;
    assert_eq!(report["transport"], "stdio");
}
