//! Interop with the official MCP tasks client library (`@modelcontextprotocol/ext-tasks`
//! on `@modelcontextprotocol/client`, the library of the MCP Inspector's Tasks tab, pinned
//! in `tests/ext-tasks/package.json` with its Node.js): `tests/ext-tasks/interop.mjs`
//! drives the demo server with it on MCP 2025-11-25 (a session, `params.task`) and on MCP
//! 2026-07-28 with the `io.modelcontextprotocol/tasks` extension, over Streamable HTTP
//! (in-process, 127.0.0.1:0, bearer principal `alice` so a second client may resume a
//! task) and over stdio (the `demo-stdio` child); every step of its report must pass
//! (`mcp_tests::ts_sdk`).
//!
//! Skipped when `npm ci --prefix tests/ext-tasks` has not run, unless
//! `MCP_REQUIRE_SERVICES=1`.

use std::sync::Arc;

use mcp_tasks::conformance::{Env, PostgresFactory, StoreFactory};
use mcp_tasks::{Limits, MemoryStore, TaskStore};
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{RuntimeConfig, Server};
use mcp_tests::server_harness::{TestServer, bearer_principal, demo_tools};
use mcp_tests::ts_sdk::{EXT_TASKS, Sdk};

/// The steps the script reports on every revision and transport, before the rounds.
const STEPS: [&str; 10] = [
    "connect",
    "greet (synchronous)",
    "slow_compute completes as a task",
    "failing_job: tool error",
    "confirm_delete: elicitation accepted",
    "multi_input: two input rounds",
    "cancel",
    "update stream",
    "pushed status",
    "hand-off to a new client, resumed there",
];

/// Rounds of 12 concurrent `confirm_delete` tasks, six started at a time.
const ROUNDS: usize = 5;

/// The step of MCP 2025-11-25 only: each status change pushed on the session before the
/// library's first poll (issue 43; 2026-07-28 pushes on `subscriptions/listen`, checked
/// by "pushed status").
const PUSHED_BEFORE_POLL: &str = "statuses pushed before the first poll";

fn steps(revision: &str) -> Vec<String> {
    let rounds =
        (1..=ROUNDS).map(|r| format!("12 confirm_delete 6 at a time (round {r}/{ROUNDS})"));
    let before_poll = (revision == "2025-11-25").then_some(PUSHED_BEFORE_POLL);
    STEPS
        .iter()
        .copied()
        .chain(before_poll)
        .map(str::to_owned)
        .chain(rounds)
        .collect()
}

async fn over_http(revision: &str) {
    over_http_on(revision, Arc::new(MemoryStore::default())).await;
}

/// The script over Streamable HTTP against the demo tools on `store`.
async fn over_http_on(revision: &str, store: Arc<dyn TaskStore>) {
    let Some(library) = Sdk::find_package(EXT_TASKS) else {
        return;
    };
    let mut builder = Server::builder("ext-tasks-interop", "0")
        .store(store)
        .runtime(RuntimeConfig::default());
    for tool in demo_tools() {
        builder = builder.tool(tool);
    }
    let http = HttpConfig {
        principal: Some(bearer_principal()),
        ..HttpConfig::default()
    };
    let server = TestServer::start_server(builder.build(), http).await;
    let steps = steps(revision);
    let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
    let args = [
        "--revision",
        revision,
        "--bearer",
        "alice",
        "--url",
        &server.url,
    ];
    let report = library.run_script("interop.mjs", &args, &steps).await;
    assert_eq!(report["transport"], "streamable-http");
    assert_eq!(report["revision"], revision);
    server.stop().await;
}

async fn over_stdio(revision: &str) {
    let Some(library) = Sdk::find_package(EXT_TASKS) else {
        return;
    };
    let steps = steps(revision);
    let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
    let args = [
        "--revision",
        revision,
        "--command",
        env!("CARGO_BIN_EXE_demo-stdio"),
    ];
    let report = library.run_script("interop.mjs", &args, &steps).await;
    assert_eq!(report["transport"], "stdio");
    assert_eq!(report["revision"], revision);
}

#[tokio::test]
async fn ext_tasks_2025_11_25_over_streamable_http() {
    over_http("2025-11-25").await;
}

#[tokio::test]
async fn ext_tasks_2025_11_25_over_stdio() {
    over_stdio("2025-11-25").await;
}

#[tokio::test]
async fn ext_tasks_2026_07_28_over_streamable_http() {
    over_http("2026-07-28").await;
}

#[tokio::test]
async fn ext_tasks_2026_07_28_over_stdio() {
    over_stdio("2026-07-28").await;
}

/// MCP 2025-11-25 on PostgreSQL: the statuses come through the store's `NOTIFY`, and
/// are pushed as promptly (issue 43).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ext_tasks_2025_11_25_over_streamable_http_on_postgres() {
    let Some(factory) = PostgresFactory::from_env() else {
        return;
    };
    let env = Env::new("ext_tasks_interop", Limits::default());
    // The kit's clock stands still unless moved: start it at the wall clock's time, so
    // the timestamps the library reads are today's.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    env.clock.set(i64::try_from(now).unwrap_or(i64::MAX));
    let store = factory.open(&env).await.expect("a PostgreSQL store");
    over_http_on("2025-11-25", Arc::new(store)).await;
}
