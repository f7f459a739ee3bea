//! Chaos: two API nodes (`--role api`) and two worker nodes (`--role worker`) of the demo
//! on one shared store (PostgreSQL, Redis, a Redis Cluster of three nodes), leases of 1 s,
//! the store reached through TCP proxies in this test (one per cluster node, each node
//! announcing its proxy, so that the nodes found through the cluster are proxied too).
//!
//! Six clients create `slow_compute` tasks (0.05-1.5 s, delivered at least once) for
//! [`LOAD`], each following its task for a while before creating the next. Meanwhile, every
//! [`FAULT_EVERY`], in turn: a worker is SIGKILLed and restarted; every store connection is
//! cut for [`CUT`] (closed, new ones refused, then accepted again; on the cluster, through
//! all three nodes at once); an API node is
//! SIGKILLed and restarted (on a new port: until then the clients meet refused connections
//! there and go on through the other node); both workers are SIGKILLed at once and
//! restarted. A refused request (a killed node, -32603 "store unavailable" while it is
//! cut) is retried and counted; any other error is an anomaly.
//!
//! Then every task id handed to a client is followed through a live API node to its end
//! (within [`DRAIN`]): none may be unknown (lost), every one must be completed, each with
//! its own result (`LABEL: done after SECONDS s`, from its own arguments, on whichever
//! run), and no request may get an answer other than a result or a refusal. The figures go
//! to stderr past the test harness's capture, so CI logs show them.
//!
//! Skipped (a line on stderr) when the store does not answer, or for the cluster (which
//! the test starts itself, see [`ProxiedCluster`]) when `redis-server` cannot be run;
//! `MCP_REQUIRE_SERVICES=1` (and `CI=true` for the cluster) makes that a failure.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use mcp_tasks::Limits;
use mcp_tasks::conformance::{Env, PostgresFactory, RedisFactory, StoreFactory, TcpProxy};
use mcp_tasks_protocol::error_codes;
use mcp_tests::chaos::{Handed, LoadClients, POLL_EVERY, Reply, is_terminal, own_result_run};
use mcp_tests::node_harness::{Node, result_text};
use mcp_tests::redis_cluster::ProxiedCluster;
use mcp_tests::server_harness::task_params;
use tokio::time::Instant;

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const LEASE_MS: &str = "1000";
const CLIENTS: usize = 6;
/// How long the clients create tasks.
const LOAD: Duration = Duration::from_secs(40);
/// When the first fault comes, and how far apart they start.
const FIRST_FAULT: Duration = Duration::from_secs(3);
const FAULT_EVERY: Duration = Duration::from_secs(4);
/// How long a store cut lasts.
const CUT: Duration = Duration::from_secs(3);
/// How long a killed node stays down before it is started again.
const DOWN: Duration = Duration::from_secs(1);
/// How long every handed task gets, after the load, to end.
const DRAIN: Duration = Duration::from_secs(30);

/// One chaos run at a time in this binary: each is four server processes and six
/// clients on a small machine, with leases of 1 s.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The faults, injected in this order, over and over. The API node's kill (which stops
/// no task) sits between the store cut and the kill of both workers: two faults that stop
/// running tasks are then at least [`FAULT_EVERY`] apart, so a task meets two of them at
/// most and stays within `slow_compute`'s 3 runs (a cut followed by a kill 1 s after the
/// store is back took tasks to their third run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    KillWorker,
    CutStore,
    KillApi,
    KillBothWorkers,
}

const FAULTS: [Fault; 4] = [
    Fault::KillWorker,
    Fault::CutStore,
    Fault::KillApi,
    Fault::KillBothWorkers,
];

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::KillWorker => "worker killed and restarted",
            Fault::KillApi => "API node killed and restarted",
            Fault::CutStore => "store connections cut for 3 s",
            Fault::KillBothWorkers => "both workers killed and restarted",
        }
    }
}

/// The processes of one deployment, and how to start them again.
struct Deployment {
    /// The store URLs (one per cluster node, else one), given to the nodes in turn.
    stores: Vec<String>,
    namespace: String,
    apis: Vec<Node>,
    workers: Vec<Node>,
    /// Every node started so far (names each incarnation).
    started: usize,
}

impl Deployment {
    async fn start(stores: &[String], namespace: &str) -> Deployment {
        let mut deployment = Deployment {
            stores: stores.to_vec(),
            namespace: namespace.to_owned(),
            apis: Vec::new(),
            workers: Vec::new(),
            started: 0,
        };
        for _ in 0..2 {
            let api = deployment.start_api().await;
            deployment.apis.push(api);
            let worker = deployment.start_worker().await;
            deployment.workers.push(worker);
        }
        deployment
    }

    /// The next node's store arguments: the next store URL in turn.
    fn next_store_args(&mut self) -> Vec<String> {
        let store = &self.stores[self.started % self.stores.len()];
        self.started += 1;
        [
            "--store",
            store,
            "--namespace",
            &self.namespace,
            "--lease-ms",
            LEASE_MS,
        ]
        .map(String::from)
        .to_vec()
    }

    async fn start_api(&mut self) -> Node {
        let store_args = self.next_store_args();
        let args: Vec<&str> = ["--role", "api"]
            .into_iter()
            .chain(store_args.iter().map(String::as_str))
            .collect();
        Node::start(Path::new(DEMO), &format!("api-{}", self.started), &args).await
    }

    async fn start_worker(&mut self) -> Node {
        let store_args = self.next_store_args();
        let args: Vec<&str> = store_args.iter().map(String::as_str).collect();
        Node::start_worker(Path::new(DEMO), &format!("worker-{}", self.started), &args).await
    }

    /// Injects `fault` (on node `which` of its kind when it takes one; a store cut cuts
    /// every proxy at once).
    async fn inject(
        &mut self,
        fault: Fault,
        which: usize,
        proxies: &[TcpProxy],
        clients: &LoadClients,
    ) {
        match fault {
            Fault::KillWorker => {
                self.workers[which].kill().await;
                tokio::time::sleep(DOWN).await;
                self.workers[which] = self.start_worker().await;
            }
            Fault::KillApi => {
                self.apis[which].kill().await;
                tokio::time::sleep(DOWN).await;
                let api = self.start_api().await;
                clients.set_endpoint(which, api.url.clone());
                self.apis[which] = api;
            }
            Fault::CutStore => {
                for proxy in proxies {
                    proxy.cut();
                }
                tokio::time::sleep(CUT).await;
                for proxy in proxies {
                    proxy.restore();
                }
            }
            Fault::KillBothWorkers => {
                let (first, second) = self.workers.split_at_mut(1);
                tokio::join!(first[0].kill(), second[0].kill());
                tokio::time::sleep(DOWN).await;
                for i in 0..self.workers.len() {
                    self.workers[i] = self.start_worker().await;
                }
            }
        }
    }

    /// Injects the faults in turn, one every [`FAULT_EVERY`], each starting early enough
    /// to end before `until`.
    async fn inject_faults(
        &mut self,
        proxies: &[TcpProxy],
        clients: &LoadClients,
        until: Instant,
    ) -> BTreeMap<Fault, u64> {
        let mut injected: BTreeMap<Fault, u64> = FAULTS.iter().map(|f| (*f, 0)).collect();
        let mut next = Instant::now() + FIRST_FAULT;
        let mut round = 0;
        while next + FAULT_EVERY <= until {
            let fault = FAULTS[round % FAULTS.len()];
            let which = (round / FAULTS.len()) % 2;
            round += 1;
            tokio::time::sleep_until(next).await;
            self.inject(fault, which, proxies, clients).await;
            *injected.entry(fault).or_default() += 1;
            next = (next + FAULT_EVERY).max(Instant::now());
        }
        injected
    }
}

/// How the handed tasks ended.
#[derive(Debug, Default)]
struct Outcomes {
    /// Completed with their own result, by run (1, 2, 3).
    completed_by_attempt: BTreeMap<u32, u64>,
    /// Failed or cancelled, by status, statusMessage and error message.
    not_completed: BTreeMap<String, Vec<String>>,
    /// Unknown to `tasks/get` (the error's whole body).
    lost: Vec<String>,
    /// Still not terminal after [`DRAIN`] (the last state seen).
    unfinished: Vec<String>,
    /// Completed with a result that is not their own.
    wrong: Vec<String>,
}

/// Follows every handed task to its end (within [`DRAIN`]) through the live API nodes.
async fn drain(clients: &LoadClients, handed: &[Handed]) -> Outcomes {
    let mut outcomes = Outcomes::default();
    let mut pending: Vec<(usize, String)> = (0..handed.len())
        .map(|i| (i, "never read".into()))
        .collect();
    let deadline = Instant::now() + DRAIN;
    while !pending.is_empty() && Instant::now() < deadline {
        let read: Vec<(usize, Reply)> = futures::stream::iter(pending.iter().map(|(i, _)| *i))
            .map(|i| async move {
                (
                    i,
                    clients
                        .rpc("tasks/get", task_params(&handed[i].id, true))
                        .await,
                )
            })
            .buffer_unordered(8)
            .collect()
            .await;
        let mut still = Vec::new();
        for (i, reply) in read {
            let task = &handed[i];
            match reply {
                Reply::Refused => still.push((i, "refused".into())),
                Reply::Error(error_codes::INVALID_PARAMS, text) => {
                    outcomes
                        .lost
                        .push(format!("{} ({}): {text}", task.id, task.label));
                }
                Reply::Error(code, text) => {
                    clients.anomaly(format!("tasks/get {}: error {code}: {text}", task.id));
                    still.push((i, text));
                }
                Reply::Result(state) if !is_terminal(&state) => {
                    still.push((i, state.to_string()));
                }
                Reply::Result(state) if state["status"] == "completed" => {
                    let text = result_text(&state["result"]);
                    match own_result_run(task, text) {
                        Some(run) if state["result"]["isError"] != true => {
                            *outcomes.completed_by_attempt.entry(run).or_default() += 1;
                        }
                        _ => outcomes.wrong.push(format!(
                            "{} ({}, {} s): {state}",
                            task.id, task.label, task.seconds
                        )),
                    }
                }
                Reply::Result(state) => {
                    let why = format!(
                        "{} with statusMessage {} and error {}",
                        state["status"], state["statusMessage"], state["error"]["message"]
                    );
                    outcomes
                        .not_completed
                        .entry(why)
                        .or_default()
                        .push(task.id.clone());
                }
            }
        }
        pending = still;
        if !pending.is_empty() {
            tokio::time::sleep(POLL_EVERY).await;
        }
    }
    outcomes.unfinished = pending
        .into_iter()
        .map(|(i, last)| format!("{} ({}): {last}", handed[i].id, handed[i].label))
        .collect();
    outcomes
}

/// Writes `lines` to stderr past the test harness's capture, so that CI logs show them
/// even when the test passes.
fn show(lines: &[String]) {
    let mut err = std::io::stderr().lock();
    for line in lines {
        let _ = writeln!(err, "{line}");
    }
}

/// The chaos run under `namespace` on the store the nodes reach at `stores` (given to
/// them in turn), through `proxies`, which the store-cut fault cuts.
async fn chaos(what: &str, stores: &[String], proxies: &[TcpProxy], namespace: &str) {
    let mut deployment = Deployment::start(stores, namespace).await;
    let clients = Arc::new(LoadClients::new(
        deployment.apis.iter().map(|a| a.url.clone()).collect(),
    ));

    let started = Instant::now();
    let until = started + LOAD;
    let load: Vec<_> = (0..CLIENTS)
        .map(|me| tokio::spawn(Arc::clone(&clients).run_client(me, until)))
        .collect();
    let injected = deployment.inject_faults(proxies, &clients, until).await;
    for client in load {
        client.await.expect("a client panicked");
    }
    let load_took = started.elapsed();

    let handed = clients.handed();
    let drain_started = Instant::now();
    let outcomes = drain(&clients, &handed).await;
    let drain_took = drain_started.elapsed();
    drop(deployment);

    let refusals = clients.refusals();
    let anomalies = clients.anomalies();
    let completed: u64 = outcomes.completed_by_attempt.values().sum();
    let failed: usize = outcomes.not_completed.values().map(Vec::len).sum();
    let mut lines = vec![
        format!(
            "chaos[{what}]: 2 API nodes, 2 workers, leases of {LEASE_MS} ms, {CLIENTS} clients, \
             load {load_took:.1?}, drain {drain_took:.1?}"
        ),
        format!(
            "chaos[{what}]: faults: {}",
            injected
                .iter()
                .map(|(fault, n)| format!("{} x{n}", fault.name()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        format!(
            "chaos[{what}]: tasks created {} ({} create requests), refusals {} ({})",
            handed.len(),
            clients.create_requests(),
            refusals.values().sum::<u64>(),
            refusals
                .iter()
                .map(|(kind, n)| format!("{kind}: {n}"))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        format!(
            "chaos[{what}]: completed {completed} (by run: {:?}), failed {failed}, lost {}, \
             unfinished {}, wrong answers {}, anomalies {}",
            outcomes.completed_by_attempt,
            outcomes.lost.len(),
            outcomes.unfinished.len(),
            outcomes.wrong.len(),
            anomalies.len()
        ),
    ];
    for (why, ids) in &outcomes.not_completed {
        lines.push(format!(
            "chaos[{what}]: {} tasks ended {why} (e.g. {})",
            ids.len(),
            ids.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    for (kind, list) in [
        ("lost", &outcomes.lost),
        ("unfinished", &outcomes.unfinished),
        ("wrong answer", &outcomes.wrong),
        ("anomaly", &anomalies),
    ] {
        for item in list.iter().take(5) {
            lines.push(format!("chaos[{what}]: {kind}: {item}"));
        }
    }
    show(&lines);

    assert!(!handed.is_empty(), "no task was created");
    let clean = failed == 0
        && outcomes.lost.is_empty()
        && outcomes.unfinished.is_empty()
        && outcomes.wrong.is_empty()
        && anomalies.is_empty();
    assert!(clean, "chaos on {what}:\n{}", lines.join("\n"));
}

/// The chaos run on the single server at `url`, through one proxy.
async fn chaos_through_a_proxy(what: &str, url: &str, namespace: &str) {
    let (proxy, proxied) = TcpProxy::in_front_of(url).await.expect("TCP proxy");
    chaos(what, &[proxied], &[proxy], namespace).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_on_postgres() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let Some(factory) = PostgresFactory::from_env() else {
        return;
    };
    let env = Env::new("chaos", Limits::default());
    // A fresh schema, dropped when the factory is (after the nodes are gone).
    drop(factory.open(&env).await.expect("create the schema"));
    let url = std::env::var(PostgresFactory::URL_ENV)
        .unwrap_or_else(|_| PostgresFactory::DEFAULT_URL.to_owned());
    let schema = PostgresFactory::schema_for(&env.namespace);
    chaos_through_a_proxy("postgres", &url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_on_redis() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let Some(factory) = RedisFactory::from_env() else {
        return;
    };
    let env = Env::new("chaos", Limits::default());
    // The prefix's keys are deleted when the factory is dropped.
    drop(factory.open(&env).await.expect("connect"));
    let url = std::env::var(RedisFactory::URL_VAR)
        .unwrap_or_else(|_| RedisFactory::DEFAULT_URL.to_owned());
    chaos_through_a_proxy("redis", &url, &RedisFactory::prefix(&env.namespace)).await;
}

/// On a Redis Cluster of three nodes that the test starts (and throws away: nothing to
/// clean up), each node behind its own proxy and announcing it; each demo node is given a
/// different cluster node's proxied URL, and a store cut cuts all three proxies. Skipped
/// without `redis-server` (a failure under `MCP_REQUIRE_SERVICES=1` or `CI=true`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_on_redis_cluster() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let Some(cluster) = ProxiedCluster::start_or_skip("Redis Cluster chaos").await else {
        return;
    };
    let env = Env::new("chaos_cluster", Limits::default());
    chaos(
        "redis-cluster",
        &cluster.urls,
        cluster.proxies(),
        &RedisFactory::prefix(&env.namespace),
    )
    .await;
    // Each node was reached through its proxy (none was left out of the cuts).
    let through: Vec<u64> = cluster
        .proxies()
        .iter()
        .map(TcpProxy::connections)
        .collect();
    show(&[format!(
        "chaos[redis-cluster]: connections through each node's proxy: {through:?}"
    )]);
    assert!(
        through.iter().all(|n| *n > 0),
        "a cluster node was never reached through its proxy: {through:?}"
    );
}
