//! The official TypeScript SDK client (1.32.2, `mcp_tests::ts_sdk`) through a round-robin
//! load balancer without sticky sessions (`mcp_tests::proxy`) in front of three demo
//! processes on one PostgreSQL schema / Redis prefix (issue 21): the SDK's MCP 2025-11-25
//! interop flow (`tests/ts-sdk/interop.mjs`: tasks with `callToolStream`, elicitation
//! through `tasks/result`, several questions, cancel, failures, `tasks/list`, status
//! notifications, a second session isolated) passes with each request landing on the
//! next instance; and it passes when the instance holding the client's standalone `GET`
//! stream is SIGKILLed mid-session (the script paused between two steps), the session
//! going on through the others.
//!
//! Each backend is skipped (with a line on stderr) only when its service does not answer,
//! and the whole file when the SDK is not installed, by the rules of `shared_sessions.rs`
//! and `legacy_ts_sdk.rs` (`MCP_REQUIRE_SERVICES=1` makes each a failure).

use std::path::Path;
use std::time::{Duration, Instant};

use mcp_tests::node_harness::{Node, NodeStore};
use mcp_tests::proxy::RoundRobinProxy;
use mcp_tests::ts_sdk::Sdk;
use serde_json::Value;

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");

/// The step after which the script pauses for the kill: tasks and an elicitation done
/// before, more of both (and status notifications) after.
const KILL_AFTER: &str = "confirm_delete as a task, elicitation answered";

/// Three demo processes on `store`, and the balancer in front of them.
async fn cluster(store: &NodeStore) -> (Vec<Node>, RoundRobinProxy) {
    let args: Vec<[&str; 6]> = (0..3).map(|i| store.args(i)).collect();
    let exe = Path::new(DEMO);
    let (a, b, c) = tokio::join!(
        Node::start(exe, "A", &args[0]),
        Node::start(exe, "B", &args[1]),
        Node::start(exe, "C", &args[2]),
    );
    let nodes = vec![a, b, c];
    let proxy = RoundRobinProxy::start(nodes.iter().map(|n| n.url.clone()).collect()).await;
    (nodes, proxy)
}

fn step<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .and_then(|steps| steps.iter().find(|s| s["step"] == name))
        .unwrap_or_else(|| panic!("step {name:?} in {report}"))
}

async fn interop_through_the_balancer(store: &NodeStore) {
    let Some(sdk) = Sdk::find() else { return };
    let (nodes, proxy) = cluster(store).await;
    let report = sdk.run(&["--url", &proxy.url]).await;
    assert_eq!(report["transport"], "streamable-http");
    let init = &step(&report, "initialize")["details"];
    assert_eq!(init["protocolVersion"], "2025-11-25", "{init}");
    let served = proxy.served();
    assert!(
        served.iter().all(|n| *n >= 5),
        "every instance served the client: {served:?}"
    );
    drop(nodes);
}

async fn an_instance_killed_mid_session(store: &NodeStore) {
    let Some(sdk) = Sdk::find() else { return };
    let (mut nodes, proxy) = cluster(store).await;
    let mut run = sdk.spawn(&["--pause-after", KILL_AFTER, "--url", &proxy.url]);
    assert_eq!(run.paused().await, KILL_AFTER);
    // The instance holding the client's standalone stream: the hardest one to lose.
    let deadline = Instant::now() + Duration::from_secs(10);
    let holder = loop {
        let open = proxy.open_gets();
        if let Some(i) = open.iter().position(|n| *n > 0) {
            break i;
        }
        assert!(
            Instant::now() < deadline,
            "no standalone GET stream open through the balancer: {open:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let killed = &mut nodes[holder];
    let name = killed.name.clone();
    killed.kill().await;
    eprintln!("killed instance {name}, which held the standalone stream");
    run.resume().await;
    let report = run.finish().await;
    let after = step(&report, "the session outlived the pause");
    assert_eq!(after["ok"], true, "{after}");
    let statuses = &step(&report, "notifications/tasks/status")["details"];
    assert!(
        statuses["afterPause"].as_u64().is_some_and(|n| n > 0),
        "{statuses}"
    );
    let open = proxy.open_gets();
    assert_eq!(
        open[holder], 0,
        "the killed instance holds nothing: {open:?}"
    );
    drop(nodes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_through_the_balancer_on_postgres() {
    if let Some(store) = NodeStore::postgres("shared_sessions_ts_sdk").await {
        interop_through_the_balancer(&store).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_through_the_balancer_on_redis() {
    if let Some(store) = NodeStore::redis("shared_sessions_ts_sdk").await {
        interop_through_the_balancer(&store).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_session_outlives_a_killed_instance_on_postgres() {
    if let Some(store) = NodeStore::postgres("shared_sessions_ts_sdk_kill").await {
        an_instance_killed_mid_session(&store).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_session_outlives_a_killed_instance_on_redis() {
    if let Some(store) = NodeStore::redis("shared_sessions_ts_sdk_kill").await {
        an_instance_killed_mid_session(&store).await;
    }
}
