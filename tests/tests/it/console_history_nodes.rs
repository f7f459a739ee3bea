//! A task's timeline across processes on one shared store (PostgreSQL, Redis): an API
//! node (`--role api`, the console on through `MCP_CONSOLE_CREDENTIALS`) and a worker
//! (`--role worker`). `confirm_delete` is created through the API node, asks its question
//! on the worker, is answered through the API node and completes there; `build_log` runs
//! on the worker. Each one's history, read through the API node's console, has every
//! change of state and every line in `seq` order without gaps, and names who wrote each:
//! the API node for what its requests did (created, the answer), the worker's node for
//! the claim, the question, the lines and the end. Skipped only when the store does not
//! answer (`MCP_REQUIRE_SERVICES=1` makes that a failure).

use std::path::Path;
use std::time::Duration;

use mcp_tests::console::{Remote, entries, seqs};
use mcp_tests::node_harness::{Cluster, Node, NodeStore};
use mcp_tests::server_harness::accept;
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const CREDENTIALS: &str = "operator:history-nodes-pass";

/// The history of `id` through the console of the API node at `url` (its MCP endpoint).
async fn history(url: &str, id: &str) -> Value {
    Remote::new(url, CREDENTIALS).history(id).await
}

/// The entries are numbered 0, 1, ... without gaps, and `nextSeq` follows the last.
fn assert_whole(reply: &Value) {
    let list = entries(reply);
    assert_eq!(
        seqs(&list),
        (0..list.len() as u64).collect::<Vec<_>>(),
        "{reply}"
    );
    assert_eq!(reply["nextSeq"], list.len() as u64, "{reply}");
    assert_eq!(reply["earliestSeq"], 0, "{reply}");
}

/// The one entry of `kind`.
fn only<'a>(list: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = list.iter().filter(|e| e["type"] == kind).collect();
    assert_eq!(found.len(), 1, "one {kind} in {list:?}");
    found[0]
}

/// A claim by the worker W1: its payload names it as the holder, the entry as its node.
fn assert_claimed_by_worker(claim: &Value) {
    assert_eq!(claim["payload"]["holder"], "W1", "{claim}");
    assert_eq!(claim["actor"], "worker", "{claim}");
    assert_eq!(claim["node"], "W1", "{claim}");
}

async fn scenario(store: &NodeStore) {
    let mut api = store.args(0).to_vec();
    api.extend(["--role", "api"]);
    let env = [("MCP_CONSOLE_CREDENTIALS", CREDENTIALS)];
    let work = store.args(1);
    let (node, worker) = tokio::join!(
        Node::start_with_env(Path::new(DEMO), "A", &api, &env),
        Node::start_worker(Path::new(DEMO), "W1", &work),
    );
    let cluster = Cluster::new(vec![node.url.clone()]);

    // A question answered through the API node.
    let asking = cluster
        .create_task(0, "confirm_delete", json!({ "filename": "<i>notes</i>" }))
        .await;
    let waiting = cluster
        .poll_status(&asking, "input_required", Duration::from_secs(30))
        .await;
    let key = waiting["inputRequests"]
        .as_object()
        .and_then(|o| o.keys().next().cloned())
        .expect("a question");
    let mut responses = serde_json::Map::new();
    responses.insert(key.clone(), accept(json!({ "confirm": false })));
    let reply = cluster
        .update_task(0, &asking, Value::Object(responses))
        .await;
    assert!(reply.body["error"].is_null(), "{}", reply.text);
    cluster
        .poll_status(&asking, "completed", Duration::from_secs(30))
        .await;
    let reply = history(&node.url, &asking).await;
    assert_whole(&reply);
    let list = entries(&reply);
    let kinds: Vec<&str> = list
        .iter()
        .map(|e| e["type"].as_str().expect("type"))
        .collect();
    let position = |kind: &str| {
        kinds
            .iter()
            .position(|k| *k == kind)
            .unwrap_or_else(|| panic!("no {kind} in {reply}"))
    };
    let (claim, input, answer) = (
        position("rs.mcp-tasks.claim"),
        position("rs.mcp-tasks.input"),
        position("rs.mcp-tasks.answer"),
    );
    assert!(0 < claim && claim < input && input < answer, "{kinds:?}");
    assert_eq!(list[0]["payload"]["status"], "working");
    assert_eq!(list[0]["actor"], "owner");
    assert_eq!(list[0]["node"], "A", "created through the API node");
    assert_claimed_by_worker(&list[claim]);
    assert_eq!(list[input]["node"], "W1", "asked on the worker");
    assert_eq!(
        list[input]["payload"]["inputRequests"][&key]["params"]["message"],
        "Delete <i>notes</i>?"
    );
    assert_eq!(list[answer]["node"], "A", "answered through the API node");
    assert_eq!(list[answer]["actor"], "owner");
    assert_eq!(list[answer]["payload"]["keys"], json!([key]));
    let last = list.last().expect("entries");
    assert_eq!(last["payload"]["status"], "completed", "{last}");
    assert_eq!(last["node"], "W1", "{last}");
    only(&list, "rs.mcp-tasks.answer");

    // A tool's lines, written on the worker.
    let build = cluster
        .create_task(0, "build_log", json!({ "steps": 4, "interval_ms": 50 }))
        .await;
    cluster
        .poll_status(&build, "completed", Duration::from_secs(30))
        .await;
    let reply = history(&node.url, &build).await;
    assert_whole(&reply);
    let list = entries(&reply);
    let lines: Vec<&Value> = list
        .iter()
        .filter(|e| e["type"] == "rs.mcp-tasks.text")
        .collect();
    assert_eq!(lines.len(), 4, "{reply}");
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(
            line["payload"]["text"],
            format!("[{}/4] Compiling demo-unit-{} ... ok", i + 1, i + 1)
        );
        assert_eq!(line["node"], "W1", "{line}");
        assert_eq!(line["actor"], "worker", "{line}");
    }
    assert_claimed_by_worker(only(&list, "rs.mcp-tasks.claim"));
    assert_eq!(
        list.last().expect("entries")["payload"]["status"],
        "completed"
    );
    // kill_on_drop: both processes are killed here, and on any panic above.
    drop((node, worker));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workers_task_history_reads_through_the_api_nodes_console_on_postgres() {
    if let Some(store) = NodeStore::postgres("console_history_nodes").await {
        scenario(&store).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workers_task_history_reads_through_the_api_nodes_console_on_redis() {
    if let Some(store) = NodeStore::redis("console_history_nodes").await {
        scenario(&store).await;
    }
}
