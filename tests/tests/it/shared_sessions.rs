//! MCP 2025-11-25 sessions that any instance serves (issue 21): two demo processes on one
//! PostgreSQL schema / Redis prefix (a standalone Redis, or a Redis Cluster with each
//! process's `--store` on a different node), behind a round-robin load balancer without
//! sticky sessions (`mcp_tests::proxy`), with two bearer principals.
//!
//! Through the balancer, each request landing on either instance in turn: `initialize`,
//! `tools/list`, a task call with `params.task`, `tasks/get`, `tasks/result` (woken
//! wherever the task runs), `tasks/list`, `tasks/cancel`. Straight to each instance: the
//! session is served by both; another principal's use of it and a forged id are 404 on
//! both. Then one instance is SIGKILLed and the session goes on through the other; a
//! `DELETE` ends it, after which it is 404.
//!
//! Each backend is skipped (with a line on stderr) only when its service does not answer,
//! by the conformance kit's rules (`MCP_REQUIRE_SERVICES=1` makes that a failure).

use std::path::Path;
use std::time::{Duration, Instant};

use mcp_tests::node_harness::{Node, NodeStore, assert_store, result_text, slow};
use mcp_tests::proxy::RoundRobinProxy;
use reqwest::StatusCode;
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const ALICE: &str = "alice-token";
const BOB: &str = "bob-token";
const VERSION: &str = "2025-11-25";

/// A 2025-11-25 client of one endpoint (the balancer or one instance), JSON replies only.
struct Client {
    http: reqwest::Client,
    next_id: std::sync::atomic::AtomicI64,
}

struct Answer {
    status: StatusCode,
    session: Option<String>,
    body: Value,
}

impl Client {
    fn new() -> Client {
        Client {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("client"),
            next_id: 1.into(),
        }
    }

    async fn send(&self, url: &str, token: &str, session: Option<&str>, message: Value) -> Answer {
        let mut request = self
            .http
            .post(url)
            .bearer_auth(token)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .header("MCP-Protocol-Version", VERSION)
            .json(&message);
        if let Some(id) = session {
            request = request.header("Mcp-Session-Id", id);
        }
        let response = request.send().await.expect("POST");
        let status = response.status();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let text = response.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer {
            status,
            session,
            body,
        }
    }

    /// A request of the session; its JSON-RPC result (panics on an error).
    async fn call(&self, url: &str, session: &str, method: &str, params: Value) -> Value {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let answer = self.send(url, ALICE, Some(session), message).await;
        assert_eq!(answer.status, StatusCode::OK, "{method}: {}", answer.body);
        assert!(answer.body["error"].is_null(), "{method}: {}", answer.body);
        answer.body["result"].clone()
    }

    /// `initialize` + `notifications/initialized` as `token`; the session id.
    async fn open(&self, url: &str, token: &str) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION,
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "shared-sessions-test", "version": "1.0.0"}
        }});
        let answer = self.send(url, token, None, init).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        assert_eq!(answer.body["result"]["protocolVersion"], VERSION);
        let session = answer.session.expect("Mcp-Session-Id");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let answer = self.send(url, token, Some(&session), initialized).await;
        assert_eq!(answer.status, StatusCode::ACCEPTED);
        session
    }

    async fn delete(&self, url: &str, token: &str, session: &str) -> StatusCode {
        self.http
            .delete(url)
            .bearer_auth(token)
            .header("Mcp-Session-Id", session)
            .send()
            .await
            .expect("DELETE")
            .status()
    }
}

fn tools_list() -> Value {
    json!({"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {}})
}

/// Instances A and B on `store` (one URL, or a cluster's nodes: each on another, see
/// [`NodeStore::url`]).
async fn two_nodes(store: &NodeStore) -> Vec<Node> {
    let alice = format!("alice:{ALICE}");
    let bob = format!("bob:{BOB}");
    let args = |i: usize| {
        let mut args = store.args(i).to_vec();
        args.extend(["--bearer", alice.as_str(), "--bearer", bob.as_str()]);
        args
    };
    let (args_a, args_b) = (args(0), args(1));
    let (a, b) = tokio::join!(
        Node::start(Path::new(DEMO), "A", &args_a),
        Node::start(Path::new(DEMO), "B", &args_b),
    );
    assert_ne!(a.url, b.url);
    if store.urls.len() > 1 {
        // A cluster's nodes: each process says it connects through its own.
        assert_store(&a, store.url(0), &store.namespace);
        assert_store(&b, store.url(1), &store.namespace);
    }
    vec![a, b]
}

async fn scenario(store: &NodeStore) {
    let mut nodes = two_nodes(store).await;
    let urls: Vec<String> = nodes.iter().map(|n| n.url.clone()).collect();
    let proxy = RoundRobinProxy::start(urls.clone()).await;
    let lb = proxy.url.as_str();
    let client = Client::new();

    let session = client.open(lb, ALICE).await;

    // Served by both instances, whichever opened it.
    for url in &urls {
        let tools = client.call(url, &session, "tools/list", json!({})).await;
        let slow_compute = tools["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == "slow_compute"))
            .unwrap_or_else(|| panic!("slow_compute listed: {tools}"));
        assert!(
            slow_compute["execution"]["taskSupport"].is_string(),
            "{slow_compute}"
        );
    }
    for _ in 0..2 {
        client.call(lb, &session, "tools/list", json!({})).await;
    }

    // A task through the balancer: created on one instance, read and awaited on either.
    let created = client
        .call(
            lb,
            &session,
            "tools/call",
            json!({"name": "slow_compute", "arguments": slow(0.5, "lb"), "task": {"ttl": 60_000}}),
        )
        .await;
    let task_id = created["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned();
    let got = client
        .call(lb, &session, "tasks/get", json!({"taskId": task_id}))
        .await;
    assert_eq!(got["taskId"], task_id.as_str(), "{got}");
    let result = client
        .call(lb, &session, "tasks/result", json!({"taskId": task_id}))
        .await;
    assert_eq!(result_text(&result), "lb: done after 0.5 s", "{result}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task_id.as_str(),
        "{result}"
    );
    let listed = client.call(lb, &session, "tasks/list", json!({})).await;
    assert!(
        listed["tasks"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["taskId"] == task_id.as_str())),
        "{listed}"
    );

    // Cancel through the balancer.
    let long = client
        .call(
            lb,
            &session,
            "tools/call",
            json!({"name": "slow_compute", "arguments": slow(30.0, "long"), "task": {"ttl": 60_000}}),
        )
        .await;
    let long_id = long["task"]["taskId"].as_str().expect("task id").to_owned();
    let cancelled = client
        .call(lb, &session, "tasks/cancel", json!({"taskId": long_id}))
        .await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    for _ in 0..2 {
        let got = client
            .call(lb, &session, "tasks/get", json!({"taskId": long_id}))
            .await;
        assert_eq!(got["status"], "cancelled", "{got}");
    }

    // Another principal with alice's session id, and a forged id: 404 on both instances.
    for url in &urls {
        let bob = client.send(url, BOB, Some(&session), tools_list()).await;
        assert_eq!(
            bob.status,
            StatusCode::NOT_FOUND,
            "bob on {url}: {}",
            bob.body
        );
        let forged = client
            .send(
                url,
                ALICE,
                Some("0123456789abcdef0123456789abcdef"),
                tools_list(),
            )
            .await;
        assert_eq!(forged.status, StatusCode::NOT_FOUND, "{}", forged.body);
    }
    let served = proxy.served();
    assert!(
        served.iter().all(|n| *n >= 4),
        "both instances served: {served:?}"
    );

    // One instance dies: the session goes on through the other.
    nodes[0].kill().await;
    let survivor = &urls[1];
    let deadline = Instant::now() + Duration::from_secs(20);
    for i in 0..6 {
        assert!(Instant::now() < deadline, "bounded");
        let got = client
            .call(lb, &session, "tasks/get", json!({"taskId": task_id}))
            .await;
        assert_eq!(
            got["status"], "completed",
            "request {i} after the kill: {got}"
        );
    }
    client
        .call(survivor, &session, "tools/list", json!({}))
        .await;

    // DELETE ends it everywhere.
    assert_eq!(
        client.delete(lb, ALICE, &session).await,
        StatusCode::NO_CONTENT
    );
    let after = client
        .send(survivor, ALICE, Some(&session), tools_list())
        .await;
    assert_eq!(after.status, StatusCode::NOT_FOUND, "{}", after.body);
    drop(nodes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_survive_round_robin_and_a_dead_instance_on_postgres() {
    if let Some(store) = NodeStore::postgres("shared_sessions").await {
        scenario(&store).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_survive_round_robin_and_a_dead_instance_on_redis() {
    if let Some(store) = NodeStore::redis("shared_sessions").await {
        scenario(&store).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_survive_round_robin_and_a_dead_instance_on_redis_cluster() {
    if let Some(store) = NodeStore::redis_cluster("shared_sessions_cluster").await {
        // A and B each connect through another node's URL.
        scenario(&store).await;
    }
}
