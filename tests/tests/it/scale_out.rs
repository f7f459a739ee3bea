//! Scale-out with real processes on one PostgreSQL schema / Redis prefix (a standalone
//! Redis, or a Redis Cluster with the processes' `--store` URLs on its nodes in turn): API
//! nodes (`--role api`: serve MCP, run no tools) and worker nodes (`--role worker`: claim
//! tasks from the store and run them), 2 s leases.
//!
//! - tasks created while no worker runs wait (`working`, unclaimed) and complete once a
//!   worker starts;
//! - input answers and cancel requests given to API nodes reach the worker running the
//!   task;
//! - a worker killed with SIGKILL mid-task: its at-least-once task (`slow_compute`) runs
//!   again and completes on the other worker (attempt 2), its at-most-once task
//!   (`confirm_delete`) fails as worker lost within three leases;
//! - two API nodes and two workers serve `TASKS` tasks created round-robin: each completes
//!   once (its first run's result) and reads the same through both API nodes.
//!
//! Skipped only when the store does not answer (`MCP_REQUIRE_SERVICES=1` makes that a
//! failure).

use std::path::Path;
use std::time::{Duration, Instant};

use futures::StreamExt;
use mcp_tasks::Limits;
use mcp_tasks::conformance::{Env, PostgresFactory, RedisFactory, StoreFactory};
use mcp_tasks_server::WORKER_LOST_MESSAGE;
use mcp_tests::node_harness::{Cluster, Node, assert_store, result_text, slow, store_for};
use mcp_tests::server_harness::WAIT;
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const LEASE: Duration = Duration::from_secs(2);
/// Tasks of the round-robin run.
const TASKS: usize = 500;
const A: usize = 0;
const B: usize = 1;

fn accept(content: Value) -> Value {
    json!({ "action": "accept", "content": content })
}

/// Tasks created on the API nodes with no worker wait, unclaimed; a worker starting
/// later runs them.
async fn tasks_wait_for_a_worker(cluster: &Cluster, args: &[&str]) -> Node {
    let ids: Vec<String> = futures::future::join_all(
        (0..4)
            .map(|i| cluster.create_task(i % 2, "slow_compute", slow(0.1, &format!("early-{i}")))),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    for id in &ids {
        let task = cluster.get_task(B, id).await;
        assert_eq!(task["status"], "working", "{task}");
        // slow_compute sets its status message as soon as it runs: nobody ran it.
        assert!(
            task.get("statusMessage").is_none(),
            "ran without a worker: {task}"
        );
    }
    let started = Instant::now();
    let worker = Node::start_worker(Path::new(DEMO), "W1", args).await;
    for (i, id) in ids.iter().enumerate() {
        let done = cluster.poll_status(id, "completed", WAIT).await;
        assert_eq!(
            result_text(&done["result"]),
            format!("early-{i}: done after 0.1 s"),
            "{done}"
        );
    }
    eprintln!(
        "queued tasks completed {:?} after the worker started",
        started.elapsed()
    );
    worker
}

/// An answer given to API node B reaches the worker running the task created on A; a
/// cancel given to A stops a task a worker runs.
async fn input_and_cancel_cross_to_the_worker(cluster: &Cluster) {
    let id = cluster
        .create_task(A, "confirm_delete", json!({ "filename": "a.txt" }))
        .await;
    let waiting = cluster.poll_status(&id, "input_required", WAIT).await;
    let key = waiting["inputRequests"]
        .as_object()
        .and_then(|r| r.keys().next().cloned())
        .unwrap_or_else(|| panic!("inputRequests: {waiting}"));
    cluster
        .update_task(B, &id, json!({ key: accept(json!({ "confirm": true })) }))
        .await
        .result();
    // The tool re-reads the store on its own only every 5 s.
    let done = cluster
        .poll(&id, Duration::from_secs(4), |t| t["status"] == "completed")
        .await;
    assert!(
        result_text(&done["result"]).contains("Deleted a.txt"),
        "{done}"
    );

    let id = cluster
        .create_task(B, "slow_compute", slow(60.0, "cancel-me"))
        .await;
    // Running on the worker: its status message is set.
    cluster
        .poll(&id, WAIT, |t| t.get("statusMessage").is_some())
        .await;
    cluster.cancel_task(A, &id).await.result();
    let cancelled = cluster
        .poll(&id, Duration::from_secs(2), |t| t["status"] == "cancelled")
        .await;
    assert_eq!(
        cancelled["statusMessage"],
        mcp_tasks_server::CANCELLED_MESSAGE,
        "the worker stopped the tool: {cancelled}"
    );
}

/// W1 runs an at-least-once and an at-most-once task; W2 starts; W1 is killed.
async fn a_killed_workers_tasks(cluster: &Cluster, mut w1: Node, args: &[&str]) -> Node {
    let again = cluster
        .create_task(A, "slow_compute", slow(4.0, "survivor"))
        .await;
    let once = cluster
        .create_task(B, "confirm_delete", json!({ "filename": "b.txt" }))
        .await;
    cluster
        .poll(&again, WAIT, |t| t.get("statusMessage").is_some())
        .await;
    cluster.poll_status(&once, "input_required", WAIT).await;
    let w2 = Node::start_worker(Path::new(DEMO), "W2", args).await;
    w1.kill().await;
    let killed = Instant::now();
    let failed = cluster
        .poll(&once, LEASE * 3, |t| t["status"] == "failed")
        .await;
    assert_eq!(failed["error"]["message"], WORKER_LOST_MESSAGE, "{failed}");
    eprintln!(
        "at-most-once task failed {:?} after the kill",
        killed.elapsed()
    );
    let rerun = cluster
        .poll(&again, LEASE * 3, |t| {
            t["statusMessage"]
                .as_str()
                .is_some_and(|m| m.contains("(attempt 2)"))
        })
        .await;
    assert_eq!(rerun["status"], "working", "{rerun}");
    let done = cluster.poll_status(&again, "completed", WAIT).await;
    assert_eq!(
        result_text(&done["result"]),
        "survivor: done after 4 s (attempt 2)",
        "{done}"
    );
    eprintln!(
        "at-least-once task completed on W2 {:?} after the kill",
        killed.elapsed()
    );
    w2
}

/// `TASKS` tasks created round-robin on the API nodes, run by two workers: each
/// completes with its first run's result, the same through both API nodes.
async fn many_tasks_on_two_workers(cluster: &Cluster) {
    let started = Instant::now();
    let created: Vec<(usize, String)> = futures::stream::iter(0..TASKS)
        .map(|i| async move {
            let id = cluster
                .create_task(i % 2, "slow_compute", slow(0.05, &format!("job-{i}")))
                .await;
            (i, id)
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let mut ids = vec![String::new(); TASKS];
    for (i, id) in created {
        ids[i] = id;
    }
    let created_in = started.elapsed();
    let mut pending: Vec<usize> = (0..TASKS).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pending.is_empty() {
        let states: Vec<(usize, Value, Value)> = futures::stream::iter(pending.clone())
            .map(|i| {
                let id = &ids[i];
                async move {
                    let (a, b) = tokio::join!(cluster.get_task(A, id), cluster.get_task(B, id));
                    (i, a, b)
                }
            })
            .buffer_unordered(16)
            .collect()
            .await;
        pending.clear();
        for (i, a, b) in states {
            match a["status"].as_str() {
                Some("working") => pending.push(i),
                Some("completed") => {
                    assert_eq!(
                        result_text(&a["result"]),
                        format!("job-{i}: done after 0.05 s"),
                        "task {i} ran more than once or wrongly: {a}"
                    );
                    if b["status"] == "completed" {
                        assert_eq!(a, b, "task {i} reads differently on the two API nodes");
                    } else {
                        pending.push(i);
                    }
                }
                _ => panic!("task {i} did not complete: {a}"),
            }
        }
        if !pending.is_empty() {
            assert!(
                Instant::now() < deadline,
                "{} of {TASKS} tasks unfinished after 60 s",
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

/// `stores`: one URL, or a Redis Cluster's nodes, which the processes (A, B, W1, W2, W3
/// in that order) take in turn ([`store_for`]).
async fn scenarios(stores: &[String], namespace: &str) {
    let lease_ms = LEASE.as_millis().to_string();
    // The arguments of the `i`th process.
    let args = |i: usize| {
        [
            "--store",
            store_for(stores, i),
            "--namespace",
            namespace,
            "--lease-ms",
            lease_ms.as_str(),
        ]
    };
    let api_args = |i: usize| {
        let mut all = vec!["--role", "api"];
        all.extend(args(i));
        all
    };
    let (args_a, args_b) = (api_args(0), api_args(1));
    let (a, b) = tokio::join!(
        Node::start(Path::new(DEMO), "A", &args_a),
        Node::start(Path::new(DEMO), "B", &args_b),
    );
    // On a cluster's nodes, each process says it connects through its own.
    let check = |node: &Node, i: usize| {
        if stores.len() > 1 {
            assert_store(node, store_for(stores, i), namespace);
        }
    };
    check(&a, 0);
    check(&b, 1);
    let cluster = Cluster::new(vec![a.url.clone(), b.url.clone()]);
    let w1 = tasks_wait_for_a_worker(&cluster, &args(2)).await;
    check(&w1, 2);
    input_and_cancel_cross_to_the_worker(&cluster).await;
    let w2 = a_killed_workers_tasks(&cluster, w1, &args(3)).await;
    check(&w2, 3);
    let w3 = Node::start_worker(Path::new(DEMO), "W3", &args(4)).await;
    check(&w3, 4);
    many_tasks_on_two_workers(&cluster).await;
    // kill_on_drop: every process is killed here, and on any panic above.
    drop((a, b, w2, w3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_and_worker_nodes_on_postgres() {
    let Some(factory) = PostgresFactory::from_env() else {
        return;
    };
    let env = Env::new("scale", Limits::default());
    // A fresh schema, dropped when the factory is.
    drop(factory.open(&env).await.expect("create the schema"));
    let url = std::env::var(PostgresFactory::URL_ENV)
        .unwrap_or_else(|_| PostgresFactory::DEFAULT_URL.to_owned());
    scenarios(&[url], &PostgresFactory::schema_for(&env.namespace)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_and_worker_nodes_on_redis() {
    let Some(factory) = RedisFactory::from_env() else {
        return;
    };
    let env = Env::new("scale", Limits::default());
    // The prefix's keys are deleted when the factory is dropped.
    drop(factory.open(&env).await.expect("connect"));
    let url = std::env::var(RedisFactory::URL_VAR)
        .unwrap_or_else(|_| RedisFactory::DEFAULT_URL.to_owned());
    scenarios(&[url], &RedisFactory::prefix(&env.namespace)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_and_worker_nodes_on_redis_cluster() {
    let Some(factory) = RedisFactory::cluster_from_env() else {
        return;
    };
    let env = Env::new("scale_cluster", Limits::default());
    // Checks that the nodes are a cluster's; the prefix's keys are deleted when the
    // factory is dropped.
    drop(factory.open(&env).await.expect("connect to the cluster"));
    // Each process connects through the next node's URL.
    scenarios(factory.nodes(), &RedisFactory::prefix(&env.namespace)).await;
}
