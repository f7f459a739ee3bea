//! Task event streams across processes on one shared store (PostgreSQL, Redis, a Redis
//! Cluster): two API nodes (`--role api`) and a worker (`--role worker`); `build_log` is
//! created through API node A, runs on the worker, and is streamed (`tasks/stream`)
//! through API node B, which only wakes on the store's events and reads the log: every
//! event arrives in order without gaps, the tool's lines named with the worker's node,
//! the stream ends after the terminal event, and a resumed stream on A gives the same
//! tail. Skipped only when the store does not answer (`MCP_REQUIRE_SERVICES=1` makes that
//! a failure).

use std::path::Path;

use mcp_tests::node_harness::{Cluster, Node, NodeStore};
use mcp_tests::task_stream::{open, read_to_end, seqs};
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");

async fn scenario(store: &NodeStore) {
    let api = |i: usize| {
        let mut args = store.args(i).to_vec();
        args.extend(["--role", "api"]);
        args
    };
    let (a, b, w) = (api(0), api(1), store.args(2));
    let (node_a, node_b, worker) = tokio::join!(
        Node::start(Path::new(DEMO), "A", &a),
        Node::start(Path::new(DEMO), "B", &b),
        Node::start_worker(Path::new(DEMO), "W1", &w),
    );
    let cluster = Cluster::new(vec![node_a.url.clone(), node_b.url.clone()]);
    let id = cluster
        .create_task(0, "build_log", json!({ "steps": 6, "interval_ms": 150 }))
        .await;
    let mut stream = open(&node_b.url, &id, None).await;
    let (events, response) = read_to_end(&mut stream).await;
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    assert_eq!(
        seqs(&events),
        (0..events.len() as u64).collect::<Vec<_>>(),
        "{events:?}"
    );
    assert_eq!(events[0]["payload"]["status"], "working");
    assert_eq!(events[0]["_meta"]["rs.mcp-tasks/actor"], "owner");
    let lines: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "rs.mcp-tasks.text")
        .collect();
    assert_eq!(lines.len(), 6, "{events:?}");
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(
            line["payload"]["text"],
            format!("[{}/6] Compiling demo-unit-{} ... ok", i + 1, i + 1)
        );
        assert_eq!(line["_meta"]["rs.mcp-tasks/node"], "W1", "{line}");
        assert_eq!(line["_meta"]["rs.mcp-tasks/actor"], "worker", "{line}");
    }
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "rs.mcp-tasks.claim" && e["payload"]["holder"] == "W1"),
        "the worker's claim is in the history: {events:?}"
    );
    let last = events.last().expect("events");
    assert_eq!(last["payload"]["status"], "completed", "{last}");
    // Resumed on the other API node: the same tail.
    let mut again = open(&node_a.url, &id, Some(3)).await;
    let (tail, _) = read_to_end(&mut again).await;
    assert_eq!(tail, events[4..].to_vec());
    // kill_on_drop: every process is killed here, and on any panic above.
    drop((node_a, node_b, worker));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_run_on_a_worker_streams_through_an_api_node_on_postgres() {
    if let Some(store) = NodeStore::postgres("streams_nodes").await {
        scenario(&store).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_run_on_a_worker_streams_through_an_api_node_on_redis() {
    if let Some(store) = NodeStore::redis("streams_nodes").await {
        scenario(&store).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_run_on_a_worker_streams_through_an_api_node_on_redis_cluster() {
    if let Some(store) = NodeStore::redis_cluster("streams_nodes_cluster").await {
        // A, B and the worker each connect through another node's URL.
        scenario(&store).await;
    }
}
