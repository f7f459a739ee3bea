//! Two demo server processes on one shared store (PostgreSQL, then Redis), reaching it
//! through a TCP proxy in this test that cuts every connection for 6 s and then lets
//! them through again:
//!
//! - a short outage (leases of 15 s): `slow_compute` whose tool finishes during the
//!   outage completes, its result readable through both instances; `confirm_delete`,
//!   waiting for input, takes an answer given through the other instance after the
//!   outage; requests during the outage get -32603 saying the store is unavailable and
//!   that a retry is safe; nothing ends failed;
//! - an outage longer than the lease (leases of 2 s): an at-most-once task running
//!   through it (`confirm_delete`) ends failed as worker lost and says why in its status
//!   message; an at-least-once one (`slow_compute`) runs again once the store is back,
//!   as after a worker crash, and completes with its own result.
//!
//! Each backend is skipped (with a line on stderr) only when its service does not answer,
//! by the conformance kit's rules (`MCP_REQUIRE_SERVICES=1` turns that into a failure).

use std::path::Path;
use std::time::{Duration, Instant};

use mcp_tasks::conformance::{Env, PostgresFactory, RedisFactory, StoreFactory, TcpProxy};
use mcp_tasks::{Limits, STORE_UNAVAILABLE_MESSAGE};
use mcp_tests::node_harness::{Cluster, Node, result_text, slow};
use mcp_tests::server_harness::{WAIT, accept, task_params};
use serde_json::json;

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const OUTAGE: Duration = Duration::from_secs(6);
const A: usize = 0;
const B: usize = 1;

/// Nodes A and B on `store_url` (already pointing at the proxy) with `lease_ms`.
async fn two_nodes(store_url: &str, namespace: &str, lease_ms: &str) -> (Vec<Node>, Cluster) {
    let args = [
        "--store",
        store_url,
        "--namespace",
        namespace,
        "--lease-ms",
        lease_ms,
    ];
    let (a, b) = tokio::join!(
        Node::start(Path::new(DEMO), "A", &args),
        Node::start(Path::new(DEMO), "B", &args),
    );
    let urls = vec![a.url.clone(), b.url.clone()];
    (vec![a, b], Cluster::new(urls))
}

/// A namespace of the test's own in the store at `store_url` (the real one, not the
/// proxy), removed when dropped, also when the test fails: the factory that made it drops
/// the schema (PostgreSQL) or deletes the prefix's keys (Redis).
struct Namespace {
    name: String,
    _owner: Box<dyn std::any::Any + Send>,
}

async fn namespace(store_url: &str, what: &str) -> Namespace {
    let env = Env::new(&format!("outage_{what}"), Limits::default());
    if store_url.starts_with("redis") {
        let factory = RedisFactory::new(store_url);
        drop(factory.open(&env).await.expect("the prefix"));
        Namespace {
            name: RedisFactory::prefix(&env.namespace),
            _owner: Box::new(factory),
        }
    } else {
        let factory = PostgresFactory::new(store_url);
        drop(factory.open(&env).await.expect("the schema"));
        Namespace {
            name: PostgresFactory::schema_for(&env.namespace),
            _owner: Box::new(factory),
        }
    }
}

/// The key of the one input request `confirm_delete` asks, once it asks it.
async fn question_key(cluster: &Cluster, id: &str) -> String {
    let waiting = cluster
        .poll(id, WAIT, |t| t["status"] == "input_required")
        .await;
    let requests = waiting["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("inputRequests: {waiting}"));
    requests.keys().next().expect("one question").clone()
}

/// A store outage shorter than the lease loses nothing and fails nothing.
async fn short_outage(store_url: &str, what: &str) {
    let namespace = namespace(store_url, what).await;
    let (proxy, proxied) = TcpProxy::in_front_of(store_url).await.expect("proxy");
    let (_nodes, cluster) = two_nodes(&proxied, &namespace.name, "15000").await;

    let asking = cluster
        .create_task(A, "confirm_delete", json!({ "filename": "kept.txt" }))
        .await;
    let key = question_key(&cluster, &asking).await;
    // Its tool finishes about 3 s into the 6 s outage.
    let computing = cluster
        .create_task(A, "slow_compute", slow(3.0, "outage"))
        .await;

    proxy.cut();
    let cut_at = Instant::now();
    // A request during the outage: answered (not hung), -32603, "retrying is safe".
    let reply = cluster
        .rpc(B, "tasks/get", task_params(&computing, true))
        .await;
    assert_eq!(reply.error_code(), -32603, "{}", reply.text);
    assert_eq!(
        reply.error_message(),
        STORE_UNAVAILABLE_MESSAGE,
        "{}",
        reply.text
    );
    tokio::time::sleep(OUTAGE.saturating_sub(cut_at.elapsed())).await;
    proxy.restore();

    // The finished tool's result was kept and written once the store came back.
    let done = cluster
        .poll(&computing, WAIT, |t| t["status"] != "working")
        .await;
    assert_eq!(done["status"], "completed", "{done}");
    for node in [A, B] {
        let task = cluster.get_task(node, &computing).await;
        assert_eq!(task["status"], "completed", "{task}");
        assert!(
            result_text(&task["result"]).contains("outage: done after 3 s"),
            "{task}"
        );
    }

    // The waiting tool is still there and takes an answer given through B.
    let still = cluster.get_task(A, &asking).await;
    assert_eq!(still["status"], "input_required", "{still}");
    cluster
        .update_task(
            B,
            &asking,
            json!({ key: accept(json!({ "confirm": false })) }),
        )
        .await
        .result();
    let answered = cluster
        .poll(&asking, WAIT, |t| {
            t["status"] != "input_required" && t["status"] != "working"
        })
        .await;
    assert_eq!(answered["status"], "completed", "{answered}");
    assert!(
        result_text(&answered["result"]).contains("Kept kept.txt"),
        "{answered}"
    );
}

/// An outage longer than the lease: the at-most-once task fails as worker lost and says
/// so; the at-least-once one runs again and completes.
async fn outage_longer_than_the_lease(store_url: &str, what: &str) {
    let namespace = namespace(store_url, what).await;
    let (proxy, proxied) = TcpProxy::in_front_of(store_url).await.expect("proxy");
    let (_nodes, cluster) = two_nodes(&proxied, &namespace.name, "2000").await;
    let asking = cluster
        .create_task(A, "confirm_delete", json!({ "filename": "lost.txt" }))
        .await;
    question_key(&cluster, &asking).await;
    // Still running when the lease lapses (2 s into the outage), short enough to run
    // again after it within the wait.
    let computing = cluster
        .create_task(A, "slow_compute", slow(4.0, "long"))
        .await;

    proxy.cut();
    tokio::time::sleep(OUTAGE).await;
    proxy.restore();

    let ended = |t: &serde_json::Value| t["status"] != "working" && t["status"] != "input_required";
    let failed = cluster.poll(&asking, WAIT, ended).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Worker lost"), "{failed}");
    // The status message says why it failed, not what the tool last said.
    let status = failed["statusMessage"].as_str().unwrap_or_default();
    assert!(status.starts_with("Worker lost"), "{failed}");

    let completed = cluster.poll(&computing, WAIT, ended).await;
    assert_eq!(
        completed["status"], "completed",
        "at least once: {completed}"
    );
    assert_eq!(
        result_text(&completed["result"]),
        "long: done after 4 s (attempt 2)",
        "its own result, from its second run: {completed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_short_outage() {
    if PostgresFactory::from_env().is_none() {
        return;
    }
    short_outage(&postgres_url(), "pg").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_outage_longer_than_the_lease() {
    if PostgresFactory::from_env().is_none() {
        return;
    }
    outage_longer_than_the_lease(&postgres_url(), "pg").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_short_outage() {
    if RedisFactory::from_env().is_none() {
        return;
    }
    short_outage(&redis_url(), "redis").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_outage_longer_than_the_lease() {
    if RedisFactory::from_env().is_none() {
        return;
    }
    outage_longer_than_the_lease(&redis_url(), "redis").await;
}

fn postgres_url() -> String {
    std::env::var(PostgresFactory::URL_ENV)
        .unwrap_or_else(|_| PostgresFactory::DEFAULT_URL.to_owned())
}

fn redis_url() -> String {
    std::env::var(RedisFactory::URL_VAR).unwrap_or_else(|_| RedisFactory::DEFAULT_URL.to_owned())
}
