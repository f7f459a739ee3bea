//! Task event streams across processes on one shared store (PostgreSQL, Redis, a Redis
//! Cluster): two API nodes (`--role api`) and a worker (`--role worker`); `build_log` is
//! created through API node A, runs on the worker, and is streamed (`tasks/stream`)
//! through API node B, which only wakes on the store's events and reads the log: every
//! event arrives in order without gaps, the tool's lines named with the worker's node,
//! the stream ends after the terminal event, and a resumed stream on A gives the same
//! tail. Skipped only when the store does not answer (`MCP_REQUIRE_SERVICES=1` makes that
//! a failure).

use std::path::Path;
use std::time::Duration;

use mcp_tasks::Limits;
use mcp_tasks::conformance::{Env, PostgresFactory, RedisFactory, StoreFactory};
use mcp_tests::node_harness::{Cluster, Node, store_for};
use mcp_tests::server_harness::{SseStream, WAIT, meta, request, standard_headers};
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const EVENT_WAIT: Duration = Duration::from_secs(20);

/// Opens `tasks/stream` for `task_id` after `after` on the node at `url`.
async fn open(url: &str, task_id: &str, after: Option<u64>) -> SseStream {
    let mut params = json!({ "taskId": task_id, "_meta": meta(true) });
    if let Some(after) = after {
        params["after"] = json!(after);
    }
    let message = request(1, "tasks/stream", params);
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("HTTP client")
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        // The stream outlives an ordinary request: read it with bounded waits.
        .timeout(Duration::from_secs(3600))
        .body(message.to_string());
    for (name, value) in standard_headers(&message) {
        builder = builder.header(name, value);
    }
    let response = tokio::time::timeout(WAIT, builder.send())
        .await
        .expect("stream opened in time")
        .expect("HTTP request");
    SseStream::from_response(response)
}

/// The events' params up to the response, and the response.
async fn read_to_end(stream: &mut SseStream) -> (Vec<Value>, Value) {
    let mut events = Vec::new();
    loop {
        let frame = stream
            .next_event(EVENT_WAIT)
            .await
            .expect("the stream goes on until its response")
            .json();
        if frame.get("id").is_some() {
            return (events, frame);
        }
        assert_eq!(frame["method"], "notifications/tasks/event", "{frame}");
        events.push(frame["params"].clone());
    }
}

async fn scenario(stores: &[String], namespace: &str) {
    let args = |i: usize| {
        [
            "--store",
            store_for(stores, i),
            "--namespace",
            namespace,
            "--lease-ms",
            "3000",
        ]
    };
    let (a_args, b_args, w_args) = (args(0), args(1), args(2));
    let mut a = a_args.to_vec();
    a.extend(["--role", "api"]);
    let mut b = b_args.to_vec();
    b.extend(["--role", "api"]);
    let (node_a, node_b, worker) = tokio::join!(
        Node::start(Path::new(DEMO), "A", &a),
        Node::start(Path::new(DEMO), "B", &b),
        Node::start_worker(Path::new(DEMO), "W1", &w_args),
    );
    let cluster = Cluster::new(vec![node_a.url.clone(), node_b.url.clone()]);
    let id = cluster
        .create_task(0, "build_log", json!({ "steps": 6, "interval_ms": 150 }))
        .await;
    let mut stream = open(&node_b.url, &id, None).await;
    let (events, response) = read_to_end(&mut stream).await;
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert_eq!(
        seqs,
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
    let Some(factory) = PostgresFactory::from_env() else {
        return;
    };
    let env = Env::new("streams_nodes", Limits::default());
    // The factory makes the schema now and drops it when dropped, also on a panic.
    drop(factory.open(&env).await.expect("create the schema"));
    let schema = PostgresFactory::schema_for(&env.namespace);
    let url = std::env::var(PostgresFactory::URL_ENV)
        .unwrap_or_else(|_| PostgresFactory::DEFAULT_URL.to_owned());
    scenario(&[url], &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_run_on_a_worker_streams_through_an_api_node_on_redis() {
    let Some(factory) = RedisFactory::from_env() else {
        return;
    };
    let env = Env::new("streams_nodes", Limits::default());
    // The factory deletes the prefix's keys when dropped.
    drop(factory.open(&env).await.expect("connect"));
    let prefix = RedisFactory::prefix(&env.namespace);
    let url = std::env::var(RedisFactory::URL_VAR)
        .unwrap_or_else(|_| RedisFactory::DEFAULT_URL.to_owned());
    scenario(&[url], &prefix).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_run_on_a_worker_streams_through_an_api_node_on_redis_cluster() {
    let Some(factory) = RedisFactory::cluster_from_env() else {
        return;
    };
    let env = Env::new("streams_nodes_cluster", Limits::default());
    drop(factory.open(&env).await.expect("connect to the cluster"));
    let prefix = RedisFactory::prefix(&env.namespace);
    scenario(factory.nodes(), &prefix).await;
}
