//! The node registry through the console, across processes on one shared store
//! (PostgreSQL, Redis): an API node (`--role api`, the console on through
//! `MCP_CONSOLE_CREDENTIALS`) and a worker `W1`, both beating every 200 ms.
//!
//! - `GET /console/api/nodes` lists both with their roles, start and heartbeat (which
//!   moves), `active`, and the tasks W1 holds;
//! - a drain of the API node is 409, of an unknown node 404, without the CSRF header 403;
//! - W1 is drained while it runs two `slow_compute` tasks: once it saw the drain (two
//!   heartbeats after it), the tasks queued next are not claimed by it (they wait, then a
//!   second worker `W2` started afterwards runs them), W1 holds no task but those it held,
//!   they complete (none failed or lost), and W1 then says `drained`.
//! - the three drains asked (409, 404, the one that drained) are in the API node's audit
//!   file (`--audit-log`) with the operator as actor.
//!
//! In process on a memory store, a node of role `all` drained queues what its API creates
//! instead of running it, and says drained once its task is done.
//!
//! The shared stores' tests are skipped only when the store does not answer (`MCP_REQUIRE_SERVICES=1` makes that a
//! failure). Every wait is bounded.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_tasks::MemoryStore;
use mcp_tasks_server::console::ConsoleConfig;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{NodeConfig, RuntimeConfig, Server};
use mcp_tests::console::Remote;
use mcp_tests::node_harness::{Cluster, Node, NodeStore, TempDb, slow};
use mcp_tests::server_harness::{TestServer, WAIT, demo_tools};
use serde_json::Value;

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const CREDENTIALS: &str = "operator:nodes-pass";
const BEAT: [&str; 2] = ["--heartbeat-ms", "200"];

/// The console of the API node whose MCP endpoint is `url`, with the node list.
struct Console(Remote);

impl std::ops::Deref for Console {
    type Target = Remote;

    fn deref(&self) -> &Remote {
        &self.0
    }
}

impl Console {
    fn new(url: &str) -> Console {
        Console(Remote::new(url, CREDENTIALS))
    }

    async fn nodes(&self) -> Vec<Value> {
        let (status, body) = self.get("/api/nodes").await;
        assert_eq!(status, 200, "{body}");
        body.as_array().cloned().expect("a list of nodes")
    }

    async fn node(&self, id: &str) -> Option<Value> {
        self.nodes().await.into_iter().find(|n| n["id"] == id)
    }

    /// Polls the node list until `done` holds for node `id` (at most `within`).
    async fn wait_node(&self, id: &str, within: Duration, done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        let mut last = None;
        while started.elapsed() < within {
            if let Some(node) = self.node(id).await {
                if done(&node) {
                    return node;
                }
                last = Some(node);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("node {id} did not get there in {within:?}; last: {last:?}");
    }
}

fn leases(node: &Value) -> BTreeSet<String> {
    node["leases"]
        .as_array()
        .expect("leases")
        .iter()
        .map(|l| l.as_str().expect("a task id").to_owned())
        .collect()
}

fn millis(node: &Value, field: &str) -> i64 {
    node[field]
        .as_i64()
        .unwrap_or_else(|| panic!("{field} in {node}"))
}

async fn scenario(store: &NodeStore) {
    let env = [("MCP_CONSOLE_CREDENTIALS", CREDENTIALS)];
    let audit = TempDb::new("console_nodes_audit");
    let audit_log = audit.0.to_str().expect("a UTF-8 temp path").to_owned();
    let mut api = store.args(0).to_vec();
    api.extend(["--role", "api", "--audit-log", audit_log.as_str()]);
    api.extend(BEAT);
    let mut worker = store.args(1).to_vec();
    worker.extend(BEAT);
    let (node, _w1) = tokio::join!(
        Node::start_with_env(Path::new(DEMO), "A", &api, &env),
        Node::start_worker(Path::new(DEMO), "W1", &worker),
    );
    let console = Console::new(&node.url);
    let cluster = Cluster::new(vec![node.url.clone()]);

    // Both nodes, with their roles, start and a moving heartbeat.
    let a = console
        .wait_node("A", WAIT, |n| n["state"] == "active")
        .await;
    assert_eq!(a["role"], "api", "{a}");
    let w1 = console
        .wait_node("W1", WAIT, |n| n["state"] == "active")
        .await;
    assert_eq!(w1["role"], "worker", "{w1}");
    assert_eq!(w1["tasksHeld"], 0, "{w1}");
    assert_eq!(w1["heartbeatIntervalMs"], 200, "{w1}");
    for n in [&a, &w1] {
        assert!(millis(n, "startedAt") <= millis(n, "heartbeatAt"), "{n}");
    }
    let beat = millis(&w1, "heartbeatAt");
    console
        .wait_node("W1", WAIT, |n| millis(n, "heartbeatAt") > beat)
        .await;

    // W1 runs two tasks.
    let mut held = BTreeSet::new();
    for label in ["held-1", "held-2"] {
        held.insert(
            cluster
                .create_task(0, "slow_compute", slow(8.0, label))
                .await,
        );
    }
    let w1 = console.wait_node("W1", WAIT, |n| leases(n) == held).await;
    assert_eq!(w1["tasksHeld"], 2, "{w1}");

    // Refused drains: an API node, an unknown node, no CSRF header.
    let (status, body) = console.post("/api/nodes/A/drain", true).await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains("not a worker")),
        "{body}"
    );
    let (status, body) = console.post("/api/nodes/nobody/drain", true).await;
    assert_eq!(status, 404, "{body}");
    assert!(body["error"].is_string(), "{body}");
    let (status, _) = console.post("/api/nodes/W1/drain", false).await;
    assert_eq!(status, 403);
    assert_eq!(
        console.node("W1").await.expect("W1")["state"],
        "active",
        "a refused drain changes nothing"
    );

    // The drain.
    let (status, asked) = console.post("/api/nodes/W1/drain", true).await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(asked["state"], "draining", "{asked}");
    assert_eq!(asked["drainRequested"], true, "{asked}");
    // A beat after the drain's write read it; the node stopped claiming (waiting for
    // any claim in flight) before its next beat.
    let before = millis(&asked, "heartbeatAt");
    let seen = console
        .wait_node("W1", WAIT, |n| millis(n, "heartbeatAt") > before)
        .await;
    let seen_at = millis(&seen, "heartbeatAt");
    let w1 = console
        .wait_node("W1", WAIT, |n| millis(n, "heartbeatAt") > seen_at)
        .await;
    assert_eq!(w1["state"], "draining", "it still holds its tasks: {w1}");
    let snapshot = leases(&w1);
    assert!(snapshot.is_subset(&held), "{w1}");

    // Work queued now is not W1's: it waits until a second worker takes it.
    let mut late = Vec::new();
    for label in ["late-1", "late-2"] {
        late.push(
            cluster
                .create_task(0, "slow_compute", slow(1.0, label))
                .await,
        );
    }
    let quiet = Instant::now();
    while quiet.elapsed() < Duration::from_millis(1_500) {
        let w1 = console.node("W1").await.expect("W1");
        assert!(
            leases(&w1).is_subset(&snapshot),
            "W1 claimed after its drain: {w1}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for id in &late {
        let (status, task) = console.get(&format!("/api/tasks/{id}")).await;
        assert_eq!(status, 200, "{task}");
        assert_eq!(task["status"], "working", "{task}");
        assert!(task["lease"].is_null(), "nobody claimed {id}: {task}");
    }
    let mut w2_args = store.args(2).to_vec();
    w2_args.extend(BEAT);
    let _w2 = Node::start_worker(Path::new(DEMO), "W2", &w2_args).await;

    // Everything completes; W1 never claims again, then says drained.
    let all: Vec<String> = held.iter().cloned().chain(late.iter().cloned()).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let w1 = console.node("W1").await.expect("W1");
        assert!(
            leases(&w1).is_subset(&snapshot),
            "W1 claimed after its drain: {w1}"
        );
        let mut finished = 0;
        for id in &all {
            let task = cluster.get_task(0, id).await;
            match task["status"].as_str() {
                Some("completed") => finished += 1,
                Some("working") => {}
                other => panic!("task {id} ended {other:?}: {task}"),
            }
        }
        if finished == all.len() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every task completed in time: {w1}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let w1 = console
        .wait_node("W1", WAIT, |n| n["state"] == "drained")
        .await;
    assert_eq!(
        (w1["tasksHeld"].clone(), leases(&w1).len()),
        (0.into(), 0),
        "{w1}"
    );
    let w2 = console
        .wait_node("W2", WAIT, |n| n["state"] == "active")
        .await;
    assert_eq!(w2["role"], "worker", "{w2}");

    // The three drains asked are audited with the operator as actor, refused or not.
    let started = Instant::now();
    let drains = loop {
        let text = std::fs::read_to_string(&audit.0).unwrap_or_default();
        let drains: Vec<String> = text
            .lines()
            .filter(|l| l.contains("op=\"console: drain\""))
            .map(str::to_owned)
            .collect();
        if drains.len() >= 3 || started.elapsed() > WAIT {
            break drains;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(drains.len(), 3, "{drains:#?}");
    assert!(
        drains.iter().all(|l| l.contains("actor=operator")),
        "{drains:#?}"
    );
    let line = |node: &str, outcome: &str| {
        drains
            .iter()
            .any(|l| l.contains(&format!("node_id=\"{node}\"")) && l.contains(outcome))
    };
    assert!(line("A", "outcome=\"refused\""), "{drains:#?}");
    assert!(line("nobody", "outcome=\"refused\""), "{drains:#?}");
    assert!(line("W1", "outcome=\"ok\""), "{drains:#?}");
}

/// In process, on a memory store: the one node (role `all`) is listed; drained while
/// it runs a task, it queues the tasks its API creates next instead of running them
/// (nobody claims them here), finishes the one it holds, and says drained.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_all_node_drained_queues_what_its_api_creates() {
    let (user, password) = CREDENTIALS.split_once(':').expect("USER:PASSWORD");
    let mut builder = Server::builder("mcp-tests", "0")
        .store(Arc::new(MemoryStore::default()))
        .runtime(RuntimeConfig {
            node_id: "solo".into(),
            shutdown_grace: Duration::from_millis(100),
            ..RuntimeConfig::default()
        })
        .node(NodeConfig {
            heartbeat: Duration::from_millis(100),
        });
    for tool in demo_tools() {
        builder = builder.tool(tool);
    }
    let http = HttpConfig {
        console: Some(ConsoleConfig::basic(user, password).expect("valid credentials")),
        ..HttpConfig::default()
    };
    let s = TestServer::start_server(builder.build(), http).await;
    let console = Console::new(&s.url);
    let solo = console
        .wait_node("solo", WAIT, |n| n["state"] == "active")
        .await;
    assert_eq!(solo["role"], "all", "{solo}");
    assert_eq!(console.nodes().await.len(), 1);

    let held = s.create_task("slow_compute", slow(3.0, "held")).await;
    console
        .wait_node("solo", WAIT, |n| leases(n).contains(&held))
        .await;
    let (status, asked) = console.post("/api/nodes/solo/drain", true).await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(asked["state"], "draining", "{asked}");
    let before = millis(&asked, "heartbeatAt");
    let seen = console
        .wait_node("solo", WAIT, |n| millis(n, "heartbeatAt") > before)
        .await;
    let seen_at = millis(&seen, "heartbeatAt");
    console
        .wait_node("solo", WAIT, |n| millis(n, "heartbeatAt") > seen_at)
        .await;

    // Created now, queued: this node runs it no more.
    let queued = s.create_task("slow_compute", slow(0.1, "queued")).await;
    let (status, task) = console.get(&format!("/api/tasks/{queued}")).await;
    assert_eq!(status, 200, "{task}");
    assert!(task["lease"].is_null(), "{task}");
    let drained = console
        .wait_node("solo", Duration::from_secs(30), |n| n["state"] == "drained")
        .await;
    assert_eq!(drained["tasksHeld"], 0, "{drained}");
    let (_, done) = console.get(&format!("/api/tasks/{held}")).await;
    assert_eq!(done["status"], "completed", "{done}");
    let (_, waiting) = console.get(&format!("/api/tasks/{queued}")).await;
    assert_eq!(waiting["status"], "working", "{waiting}");
    assert!(waiting["lease"].is_null(), "nobody ran it: {waiting}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_listed_and_a_worker_drained_on_postgres() {
    let Some(store) = NodeStore::postgres("console_nodes").await else {
        return;
    };
    scenario(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_listed_and_a_worker_drained_on_redis() {
    let Some(store) = NodeStore::redis("console_nodes").await else {
        return;
    };
    scenario(&store).await;
}
