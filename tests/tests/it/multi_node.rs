//! Three demo server processes on one shared store (PostgreSQL, Redis, then a Redis
//! Cluster with each process's `--store` on a different node), each on its own 127.0.0.1
//! port, in an isolated schema / key prefix; the client sends each request to a different
//! instance:
//!
//! - (a) durable create: a task created through A is at once readable through B and C;
//! - (b) input across nodes: `confirm_delete` runs on A; its question is read through B
//!   and answered through C (`tasks/update`), which wakes the tool on A;
//! - (c) cancel across nodes: `tasks/cancel` sent to B stops `slow_compute` on A within
//!   one second (status `cancelled`, with the runtime's cancellation message);
//! - (d) 200 short `slow_compute` tasks created round-robin over the instances and polled
//!   round-robin all complete with their own result text.
//!
//! Each backend is skipped (with a line on stderr) only when its service does not answer,
//! by the conformance kit's rules: `MCP_TEST_POSTGRES_URL` / `MCP_TEST_REDIS_URL` (defaults
//! on 127.0.0.1), `MCP_TEST_REDIS_CLUSTER_NODES` (no default: `cargo xtask test` starts a
//! three-node cluster and sets it), and `MCP_REQUIRE_SERVICES=1` turns a missing service
//! into a failure.

use std::path::Path;
use std::time::{Duration, Instant};

use futures::StreamExt;
use mcp_tasks_server::CANCELLED_MESSAGE;
use mcp_tests::node_harness::{Cluster, Node, NodeStore, assert_store, result_text, slow};
use mcp_tests::server_harness::{WAIT, accept};
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");

/// Starts nodes A, B and C on `store` (one URL, or a cluster's nodes: each process on
/// another, see [`NodeStore::url`]).
async fn three_nodes(store: &NodeStore) -> (Vec<Node>, Cluster) {
    let args: Vec<[&str; 6]> = (0..3).map(|i| store.args(i)).collect();
    let (a, b, c) = tokio::join!(
        Node::start(Path::new(DEMO), "A", &args[0]),
        Node::start(Path::new(DEMO), "B", &args[1]),
        Node::start(Path::new(DEMO), "C", &args[2]),
    );
    let nodes = vec![a, b, c];
    // Each process names its store and deployment; a cluster's nodes each connect
    // through their own.
    for (i, node) in nodes.iter().enumerate() {
        assert_store(node, store.url(i), &store.namespace);
    }
    let urls: Vec<String> = nodes.iter().map(|n| n.url.clone()).collect();
    let mut ports: Vec<&str> = urls.iter().map(String::as_str).collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 3, "three different ports: {urls:?}");
    (nodes, Cluster::new(urls))
}

const A: usize = 0;
const B: usize = 1;
const C: usize = 2;

/// (a) A task created through A is readable through B and C as soon as the call returns.
async fn durable_create(cluster: &Cluster) {
    for _ in 0..5 {
        let id = cluster
            .create_task(A, "slow_compute", slow(2.0, "durable"))
            .await;
        for node in [B, C] {
            let task = cluster.get_task(node, &id).await;
            assert_eq!(task["taskId"], id.as_str(), "{task}");
            assert_eq!(task["status"], "working", "{task}");
        }
    }
}

/// (b) The question of a tool running on A, read through B and answered through C, wakes
/// the tool: the task completes with the answer's effect.
async fn input_across_nodes(cluster: &Cluster) {
    let id = cluster
        .create_task(A, "confirm_delete", json!({ "filename": "a.txt" }))
        .await;
    let waiting = cluster
        .poll(&id, WAIT, |t| t["status"] == "input_required")
        .await;
    let requests = waiting["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("inputRequests: {waiting}"));
    assert_eq!(requests.len(), 1, "{waiting}");
    let key = requests.keys().next().expect("one key").clone();
    assert_eq!(requests[&key]["method"], "elicitation/create", "{waiting}");
    let answered = Instant::now();
    let reply = cluster
        .update_task(C, &id, json!({ key: accept(json!({ "confirm": true })) }))
        .await;
    reply.result();
    // The tool re-reads the store on its own only every 5 s: finishing well within that
    // shows that the answer's event reached node A.
    let done = cluster
        .poll(&id, Duration::from_secs(4), |t| t["status"] == "completed")
        .await;
    assert!(
        result_text(&done["result"]).contains("Deleted a.txt"),
        "{done}"
    );
    eprintln!(
        "input answered through C completed the task on A after {:?}",
        answered.elapsed()
    );
}

/// (c) `tasks/cancel` through B stops `slow_compute` running on A within a second.
async fn cancel_across_nodes(cluster: &Cluster) {
    let id = cluster
        .create_task(A, "slow_compute", slow(60.0, "cancel-me"))
        .await;
    let running = cluster.get_task(C, &id).await;
    assert_eq!(running["status"], "working", "{running}");
    let asked = Instant::now();
    cluster.cancel_task(B, &id).await.result();
    let cancelled = cluster
        .poll(&id, Duration::from_secs(1), |t| t["status"] == "cancelled")
        .await;
    // Only the runtime running the tool writes `cancelled` (tasks/cancel raises a flag):
    // this message says node A stopped the tool on the request.
    assert_eq!(cancelled["statusMessage"], CANCELLED_MESSAGE, "{cancelled}");
    eprintln!(
        "tasks/cancel through B cancelled the task on A after {:?}",
        asked.elapsed()
    );
}

/// (d) 200 short tasks spread over the three nodes all complete with their own text.
async fn many_tasks(cluster: &Cluster) {
    const TASKS: usize = 200;
    const SECONDS: [f64; 4] = [0.2, 0.3, 0.4, 0.5];
    let started = Instant::now();
    let created: Vec<(usize, String)> = futures::stream::iter(0..TASKS)
        .map(|i| async move {
            let label = format!("job-{i}");
            let id = cluster
                .create_task(i % 3, "slow_compute", slow(SECONDS[i % 4], &label))
                .await;
            (i, id)
        })
        .buffer_unordered(24)
        .collect()
        .await;
    let mut ids: Vec<String> = vec![String::new(); TASKS];
    for (i, id) in created {
        ids[i] = id;
    }
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), TASKS, "every task has its own id");
    let created_in = started.elapsed();

    let mut pending: Vec<usize> = (0..TASKS).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pending.is_empty() {
        let states: Vec<(usize, Value)> = futures::stream::iter(pending.iter().copied())
            .map(|i| {
                let id = &ids[i];
                async move { (i, cluster.get_task(cluster.round_robin(), id).await) }
            })
            .buffer_unordered(24)
            .collect()
            .await;
        pending.clear();
        for (i, task) in states {
            match task["status"].as_str() {
                Some("working") => pending.push(i),
                Some("completed") => {
                    let want = format!("job-{i}: done after {} s", SECONDS[i % 4]);
                    assert_eq!(result_text(&task["result"]), want, "task {i}: {task}");
                }
                _ => panic!("task {i} did not complete: {task}"),
            }
        }
        if !pending.is_empty() {
            assert!(
                Instant::now() < deadline,
                "{} of {TASKS} tasks still working after 60 s",
                pending.len()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    eprintln!(
        "{TASKS} tasks created in {created_in:?}, all completed after {:?}",
        started.elapsed()
    );
}

async fn scenarios(store: &NodeStore) {
    let (nodes, cluster) = three_nodes(store).await;
    durable_create(&cluster).await;
    input_across_nodes(&cluster).await;
    cancel_across_nodes(&cluster).await;
    many_tasks(&cluster).await;
    // kill_on_drop: every process is killed here, and on any panic above.
    drop(nodes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_share_tasks_on_postgres() {
    if let Some(store) = NodeStore::postgres("multi_node").await {
        scenarios(&store).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_share_tasks_on_redis() {
    if let Some(store) = NodeStore::redis("multi_node").await {
        scenarios(&store).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_share_tasks_on_redis_cluster() {
    if let Some(store) = NodeStore::redis_cluster("multi_node_cluster").await {
        // A, B and C each connect through another node's URL.
        scenarios(&store).await;
    }
}
