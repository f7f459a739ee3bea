//! The acceptance test of safe retries (issue 50): two demo server processes on one
//! PostgreSQL schema (then one Redis prefix, then a Redis Cluster's when one is given)
//! behind a round-robin balancer, and in front of it a [`ReplyDropProxy`] that loses the
//! first reply of every task creation, after the server made the task: alternately a
//! `502 Bad Gateway` and the client's connection closed without a response.
//!
//! An `McpClient` with the default configuration (idempotency keys on, retries on; a hook
//! added that only records each retry's notice) lists the tools, then makes [`CALLS`]
//! task-augmented calls of [`TOOL`] (`build_log`, always a task, so flagged in
//! `tools/list` as deduplicating keyed calls: the client keys and retries only such
//! tools; `slow_compute` is not flagged in 2026-07-28, its selector may answer in the
//! request) through the front, each with its own label (an argument the task keeps),
//! [`CONCURRENCY`] at a time; every call must still hand back its task, and every task
//! complete with its result. Then:
//!
//! - the front dropped exactly [`CALLS`] replies (half each way) and saw `CALLS` + the
//!   client's retries `tools/call` POSTs, every one with an idempotency key; each create's
//!   retry was answered with the task its lost reply named, the one the client follows;
//! - the store holds exactly [`CALLS`] tasks (the operator console's listing through each
//!   instance, page by page, and its counts by status and tool), each label in exactly
//!   one of them;
//! - each tool ran exactly once: the task's own log (the console's history of it) holds
//!   one run (the `"building:"` status `build_log` sets when it starts, with the node
//!   that ran it), no lost run (`requeue`), and its result is its run's.
//!
//! First the front itself, on raw HTTP over one in-memory demo node: a dropped reply is
//! not delivered (a 502, a connection closed without a response), the server made the
//! task all the same, and a repeat is passed on.
//!
//! MCP 2026-07-28 on every store; MCP 2025-11-25 (a session shared by the instances
//! through the store) on PostgreSQL and Redis. Skipped only when the store does not
//! answer (`MCP_REQUIRE_SERVICES=1` makes that a failure).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use mcp_tasks_client::{ClientConfig, DeclineAll, McpClient, RetryNotice, Revision, Started};
use mcp_tests::console::Remote;
use mcp_tests::node_harness::{Node, NodeStore, assert_store, result_text};
use mcp_tests::reply_drop_proxy::{Lost, Reply, ReplyDropProxy, Seen};
use mcp_tests::server_harness::{WAIT, call_params, request, standard_headers};
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
/// The creates whose replies are dropped.
const CALLS: usize = 100;
/// Calls in flight at once.
const CONCURRENCY: usize = 10;
/// The tool called: always a task, so deduplicated and flagged in `tools/list`.
const TOOL: &str = "build_log";
/// How long its one step takes, in milliseconds.
const STEP_MS: u64 = 100;
/// What each of its tasks answers.
const RESULT: &str = "build finished: 1 steps, 0 errors";
/// The status it sets when a run starts.
const STARTED: &str = "building:";
/// The bound of the whole run of calls.
const RUN_WITHIN: Duration = Duration::from_secs(60);
/// The console's credentials, given to each node in its environment.
const CONSOLE: &str = "admin:acceptance-test";
/// The console's listing page (its maximum).
const PAGE: usize = 500;

/// One call's label and the task the client was handed.
#[derive(Debug)]
struct Handed {
    label: String,
    task_id: String,
}

/// Nodes A and B on `store` with the console on, behind the balancer and the front.
async fn deploy(store: &NodeStore) -> (Vec<Node>, ReplyDropProxy) {
    let env = [("MCP_CONSOLE_CREDENTIALS", CONSOLE)];
    let (args_a, args_b) = (store.args(0), store.args(1));
    let (a, b) = tokio::join!(
        Node::start_with_env(Path::new(DEMO), "A", &args_a, &env),
        Node::start_with_env(Path::new(DEMO), "B", &args_b, &env),
    );
    let nodes = vec![a, b];
    for (i, node) in nodes.iter().enumerate() {
        assert_store(node, store.url(i), &store.namespace);
    }
    let front = ReplyDropProxy::start(nodes.iter().map(|n| n.url.clone()).collect()).await;
    (nodes, front)
}

/// [`CALLS`] calls of [`TOOL`] labelled `run-NNN`, [`CONCURRENCY`] at a time, each
/// followed to its result.
async fn calls(client: &McpClient, run: &str) -> Vec<Handed> {
    futures::stream::iter(0..CALLS)
        .map(|i| async move {
            let label = format!("{run}-{i:03}");
            let arguments = serde_json::Map::from_iter([
                ("steps".into(), json!(1)),
                ("interval_ms".into(), json!(STEP_MS)),
                ("label".into(), json!(label)),
            ]);
            let started = client
                .call_tool_as_task(TOOL, arguments)
                .await
                .unwrap_or_else(|e| panic!("{label}: the call failed: {e}"));
            let Started::Task(task) = started else {
                panic!("{label}: answered without a task");
            };
            let task_id = task.id().to_owned();
            let result = task
                .wait()
                .await
                .unwrap_or_else(|e| panic!("{label} (task {task_id}): {e}"));
            let result = serde_json::to_value(&result).unwrap_or_default();
            assert_eq!(result_text(&result), RESULT, "task {task_id}: {result}");
            Handed { label, task_id }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await
}

/// What the front saw: every first reply of a create dropped, half each way; each
/// create retried once with its key, answered with the task its lost reply named (the
/// one the client was handed).
fn check_front(seen: &Seen, handed: &[Handed], retries: &[RetryNotice]) {
    assert_eq!(seen.dropped(), CALLS, "{seen:?}");
    assert_eq!(seen.bad_gateways, CALLS / 2, "{seen:?}");
    assert_eq!(seen.closed, CALLS / 2, "{seen:?}");
    assert_eq!(seen.creates.len(), CALLS, "one create per call: {seen:?}");
    assert_eq!(
        seen.keyed, seen.tool_calls,
        "every tools/call carries a key"
    );
    assert_eq!(
        seen.tool_calls,
        CALLS + retries.len(),
        "the front saw each call and each of the client's retries"
    );
    assert_eq!(
        seen.repeats(),
        retries.len(),
        "every retry reached a server"
    );
    let handed_ids: BTreeSet<&str> = handed.iter().map(|h| h.task_id.as_str()).collect();
    for (create, replies) in &seen.creates {
        let [lost, answered] = replies.as_slice() else {
            panic!("{create}: one lost reply and one retry: {replies:?}");
        };
        assert!(
            lost.lost.is_some() && answered.lost.is_none(),
            "{create}: {replies:?}"
        );
        assert_eq!(
            lost.task_id, answered.task_id,
            "{create}: the retry found the task"
        );
        assert!(
            handed_ids.contains(lost.task_id.as_str()),
            "{create}: {replies:?}"
        );
    }
    // Each lost reply was retried once; a 502 is reported with its status.
    assert_eq!(retries.len(), CALLS, "{retries:?}");
    let after_502 = retries.iter().filter(|r| r.status == Some(502)).count();
    assert_eq!(after_502, CALLS / 2, "{retries:?}");
    assert!(
        retries
            .iter()
            .all(|r| r.attempt == 2 && r.method == "tools/call")
    );
    let keys: BTreeSet<&str> = retries.iter().map(|r| r.idempotency_key.as_str()).collect();
    assert_eq!(keys.len(), CALLS, "each retry another call's key");
    let dropped: BTreeSet<String> = seen.creates.keys().cloned().collect();
    let retried: BTreeSet<String> = keys.iter().map(|k| format!("key {k}")).collect();
    assert_eq!(
        dropped, retried,
        "the retries carry the keys of the lost creates"
    );
}

/// Every task of the deployment through `console`, page by page (at most a few pages).
async fn listed(console: &Remote) -> Vec<Value> {
    let mut tasks = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..(CALLS / PAGE + 3) {
        let mut path = format!("/api/tasks?limit={PAGE}");
        if let Some(cursor) = &cursor {
            let encoded: String = url::form_urlencoded::byte_serialize(cursor.as_bytes()).collect();
            path.push_str(&format!("&cursor={encoded}"));
        }
        let (status, page) = console.get(&path).await;
        assert_eq!(status, 200, "{page}");
        tasks.extend(page["tasks"].as_array().cloned().unwrap_or_default());
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return tasks,
        }
    }
    panic!("more pages than {} tasks can fill", CALLS + 2 * PAGE);
}

/// The store holds exactly the tasks handed out, one per label, each run once (its log
/// shows one run); returns how many runs each node made.
async fn check_store(nodes: &[Node], handed: &[Handed]) -> BTreeMap<String, usize> {
    let consoles: Vec<Remote> = nodes.iter().map(|n| Remote::new(&n.url, CONSOLE)).collect();
    let want: BTreeMap<&str, &str> = handed
        .iter()
        .map(|h| (h.task_id.as_str(), h.label.as_str()))
        .collect();
    assert_eq!(want.len(), CALLS, "{CALLS} different tasks handed out");
    for (node, console) in nodes.iter().zip(&consoles) {
        let tasks = listed(console).await;
        let ids: BTreeSet<&str> = tasks.iter().filter_map(|t| t["id"].as_str()).collect();
        assert_eq!(tasks.len(), CALLS, "node {} lists {CALLS} tasks", node.name);
        assert_eq!(ids, want.keys().copied().collect(), "node {}", node.name);
        let owners: BTreeSet<&str> = tasks.iter().filter_map(|t| t["owner"].as_str()).collect();
        assert_eq!(owners.len(), 1, "one owner: {owners:?}");
        let (status, counts) = console.get("/api/counts").await;
        assert_eq!(status, 200, "{counts}");
        assert_eq!(counts["byTool"], json!({ TOOL: CALLS }), "{counts}");
        assert_eq!(counts["byStatus"]["completed"], json!(CALLS), "{counts}");
        let total: u64 = counts["byStatus"]
            .as_object()
            .map(|s| s.values().filter_map(Value::as_u64).sum())
            .unwrap_or_default();
        assert_eq!(total, CALLS as u64, "{counts}");
    }
    let mut labels = BTreeSet::new();
    let mut runs_by_node: BTreeMap<String, usize> = BTreeMap::new();
    for (i, (id, label)) in want.iter().enumerate() {
        let console = &consoles[i % consoles.len()];
        let (status, task) = console.get(&format!("/api/tasks/{id}")).await;
        assert_eq!(status, 200, "{task}");
        assert_eq!(task["arguments"]["label"], json!(label), "{task}");
        assert!(
            labels.insert(label.to_owned()),
            "label {label} in two tasks"
        );
        assert_eq!(result_text(&task["result"]), RESULT, "{task}");
        let history = console.history(id).await;
        assert!(
            history.get("truncated").is_none_or(|t| t == false),
            "{history}"
        );
        let entries = history["entries"].as_array().cloned().unwrap_or_default();
        let runs: Vec<&Value> = entries
            .iter()
            .filter(|e| {
                e["type"] == "rs.mcp-tasks.status"
                    && e["payload"]["statusMessage"]
                        .as_str()
                        .is_some_and(|m| m.starts_with(STARTED))
            })
            .collect();
        assert_eq!(runs.len(), 1, "task {id} ({label}) ran once: {history}");
        assert!(
            !entries.iter().any(|e| e["type"] == "rs.mcp-tasks.requeue"),
            "task {id} lost no run: {history}"
        );
        let node = runs[0]["node"].as_str().unwrap_or("?").to_owned();
        *runs_by_node.entry(node).or_default() += 1;
    }
    assert_eq!(labels.len(), CALLS);
    runs_by_node
}

/// The whole acceptance run on `store` in `revision`, named `run` in its figures.
async fn acceptance(store: NodeStore, revision: Revision, run: &str) {
    let begun = Instant::now();
    let (nodes, front) = deploy(&store).await;
    let retries: Arc<Mutex<Vec<RetryNotice>>> = Arc::default();
    let told = Arc::clone(&retries);
    let config = ClientConfig {
        revision,
        ..ClientConfig::default()
    }
    .on_retry(Arc::new(move |notice: &RetryNotice| {
        told.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(notice.clone());
    }));
    let client = McpClient::connect_http(&front.url, Arc::new(DeclineAll), config)
        .await
        .unwrap_or_else(|e| panic!("{run}: connect through the front: {e}"));
    // The client keys and retries the tools the listing flags as deduplicated.
    let listed = client
        .list_tools()
        .await
        .unwrap_or_else(|e| panic!("{run}: tools/list: {e}"));
    let flagged = listed
        .tools
        .iter()
        .find(|t| t.name == TOOL)
        .and_then(|t| t.meta.as_ref())
        .is_some_and(|m| m.contains_key("rs.mcp-tasks/idempotency"));
    assert!(flagged, "{run}: {TOOL} is flagged as deduplicated");
    front.set_dropping(true);
    let calls_begun = Instant::now();
    let handed = tokio::time::timeout(RUN_WITHIN, calls(&client, run))
        .await
        .unwrap_or_else(|_| panic!("{run}: {CALLS} calls did not end in {RUN_WITHIN:?}"));
    let calls_took = calls_begun.elapsed();
    front.set_dropping(false);
    let seen = front.seen();
    let retries = retries
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    check_front(&seen, &handed, &retries);
    let served = front.balancer.served();
    assert!(
        served.iter().all(|&n| n > 0),
        "both instances served: {served:?}"
    );
    let runs_by_node = check_store(&nodes, &handed).await;
    let mut why: BTreeMap<String, usize> = BTreeMap::new();
    for retry in &retries {
        *why.entry(retry.reason.clone()).or_default() += 1;
    }
    eprintln!(
        "{run}: {CALLS} calls in {calls_took:?}; replies dropped {} ({} as 502, {} closed); \
         client retries {}; tools/call POSTs {}; tasks in the store {CALLS}; runs by node {runs_by_node:?}; \
         requests served by instance {served:?}; whole test {:?}; the client's retry reasons {why:?}",
        seen.dropped(),
        seen.bad_gateways,
        seen.closed,
        retries.len(),
        seen.tool_calls,
        begun.elapsed(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_2026_one_task_per_lost_reply() {
    let Some(store) = NodeStore::postgres("idempotency_retries_pg_2026").await else {
        return;
    };
    acceptance(store, Revision::V2026_07_28, "pg-2026").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_2026_one_task_per_lost_reply() {
    let Some(store) = NodeStore::redis("idempotency_retries_redis_2026").await else {
        return;
    };
    acceptance(store, Revision::V2026_07_28, "redis-2026").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_cluster_2026_one_task_per_lost_reply() {
    let Some(store) = NodeStore::redis_cluster("idempotency_retries_cluster_2026").await else {
        return;
    };
    acceptance(store, Revision::V2026_07_28, "cluster-2026").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_2025_one_task_per_lost_reply() {
    let Some(store) = NodeStore::postgres("idempotency_retries_pg_2025").await else {
        return;
    };
    acceptance(store, Revision::V2025_11_25, "pg-2025").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_2025_one_task_per_lost_reply() {
    let Some(store) = NodeStore::redis("idempotency_retries_redis_2025").await else {
        return;
    };
    acceptance(store, Revision::V2025_11_25, "redis-2025").await;
}

/// POSTs the JSON-RPC `message` to `url` as a 2026-07-28 client would: the HTTP status
/// and the JSON body (`Null` when not JSON), or the transport error.
async fn raw_post(
    client: &reqwest::Client,
    url: &str,
    message: &Value,
) -> Result<(u16, Value), reqwest::Error> {
    let mut post = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in standard_headers(message) {
        post = post.header(name, value);
    }
    let response = post.body(message.to_string()).send().await?;
    let status = response.status().as_u16();
    let text = response.text().await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

/// A 2026-07-28 `tools/call` of `slow_compute` labelled `label`, with `key` if given.
fn create(id: i64, label: &str, key: Option<&str>) -> Value {
    let mut params = call_params(
        "slow_compute",
        json!({ "seconds": 0.1, "label": label }),
        true,
    );
    if let Some(key) = key {
        params["idempotencyKey"] = json!(key);
    }
    request(id, "tools/call", params)
}

/// The task id of a 2026-07-28 create's reply.
fn created(reply: &(u16, Value)) -> String {
    assert_eq!(reply.0, 200, "{reply:?}");
    assert_eq!(reply.1["result"]["resultType"], "task", "{reply:?}");
    reply.1["result"]["taskId"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The front on raw HTTP over one in-memory node: each way of losing a reply, the task
/// made all the same (and found again by its key), a call without a key made twice, and
/// what is not a create passed on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_front_drops_replies_after_the_server_made_the_task() {
    let node = Node::start(Path::new(DEMO), "M", &["--store", "memory"]).await;
    let front = ReplyDropProxy::start(vec![node.url.clone()]).await;
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(WAIT)
        .build()
        .expect("HTTP client");
    front.set_dropping(true);

    // Lost as a 502; the repeat with the key finds the task the lost reply named.
    let first = raw_post(&http, &front.url, &create(1, "raw-1", Some("key-1")))
        .await
        .expect("a response");
    assert_eq!(first.0, 502, "{first:?}");
    assert!(
        first.1.is_null(),
        "no JSON-RPC answer behind a 502: {first:?}"
    );
    let again = created(
        &raw_post(&http, &front.url, &create(2, "raw-1", Some("key-1")))
            .await
            .expect("the repeat answered"),
    );

    // Lost with the connection: no response at all.
    let cut = raw_post(&http, &front.url, &create(3, "raw-2", Some("key-2"))).await;
    let error = cut.expect_err("the connection closed without a response");
    assert!(error.status().is_none() && !error.is_timeout(), "{error:?}");
    let cut_again = created(
        &raw_post(&http, &front.url, &create(4, "raw-2", Some("key-2")))
            .await
            .expect("the repeat answered"),
    );

    // Without a key the front knows the call by its arguments; the repeat makes a second task.
    let plain = raw_post(&http, &front.url, &create(5, "raw-3", None))
        .await
        .expect("a response");
    assert_eq!(plain.0, 502, "{plain:?}");
    let second = created(
        &raw_post(&http, &front.url, &create(6, "raw-3", None))
            .await
            .expect("the repeat answered"),
    );

    // Not a create: passed on as it is.
    let greet = request(
        7,
        "tools/call",
        call_params("greet", json!({ "name": "Ada" }), true),
    );
    let greeted = raw_post(&http, &front.url, &greet)
        .await
        .expect("greet answered");
    assert_eq!(
        result_text(&greeted.1["result"]),
        "Hello, Ada!",
        "{greeted:?}"
    );

    let seen = front.seen();
    assert_eq!((seen.bad_gateways, seen.closed), (2, 1), "{seen:?}");
    assert_eq!((seen.tool_calls, seen.keyed), (7, 4), "{seen:?}");
    assert_eq!(
        seen.creates["key key-1"],
        vec![
            Reply {
                task_id: again.clone(),
                lost: Some(Lost::BadGateway)
            },
            Reply {
                task_id: again.clone(),
                lost: None
            },
        ]
    );
    assert_eq!(
        seen.creates["key key-2"],
        vec![
            Reply {
                task_id: cut_again.clone(),
                lost: Some(Lost::Closed)
            },
            Reply {
                task_id: cut_again.clone(),
                lost: None
            },
        ]
    );
    let unkeyed: Vec<&Reply> = seen
        .creates
        .iter()
        .filter(|(create, _)| create.starts_with("call "))
        .flat_map(|(_, replies)| replies)
        .collect();
    assert_eq!(unkeyed.len(), 2, "{seen:?}");
    assert_ne!(
        unkeyed[0].task_id, second,
        "without a key the lost create made a task of its own"
    );
    assert_eq!(unkeyed[1].task_id, second);

    // The servers made every task whose reply was lost: each completes (read through the front).
    let cluster = mcp_tests::node_harness::Cluster::new(vec![front.url.clone()]);
    for id in [&again, &cut_again, &unkeyed[0].task_id, &second] {
        let done = cluster.poll_status(id, "completed", WAIT).await;
        assert!(
            result_text(&done["result"]).contains("done after"),
            "{done}"
        );
    }
}
