//! Durability, checked from histories: two API nodes (`--role api`) and two workers of the
//! demo on one shared store (PostgreSQL, Redis, a Redis Cluster of three nodes), leases of
//! 1 s, the store reached through TCP proxies. Several clients create tasks (`slow_compute`
//! at least once, some cancelled; `confirm_delete` at most once, answered with
//! `tasks/update`) while one fault is injected over and over; every operation is recorded
//! ([`mcp_tests::history`]), every acknowledged task is then followed to its end, read on
//! every API node and its event log read, and the checker must find no violation.
//!
//! Scenarios, each a test per store it runs on:
//! - `kill`: every 3 s, in turn, a worker, an API node, then both workers are SIGKILLed and
//!   started again 1 s later (an API node on a new port);
//! - `restart` (PostgreSQL only): every 4 s, a PostgreSQL server the test started itself
//!   ([`ThrowawayPostgres`]: `initdb` in a temporary directory, a free port) is stopped with
//!   `pg_ctl -m immediate` and started again 1 s later (crash recovery from its WAL);
//! - `partition`: the first API node reaches the store through a [`OneWayProxy`]: every
//!   4 s, for 2.5 s, its requests reach the store but the replies are lost (writes take
//!   effect, their acknowledgements never come); the other nodes are not affected;
//! - `cut`: every 4 s, every store connection is cut at the proxies for 2.5 s (longer than
//!   the lease: running tools stop and their tasks are recovered);
//! - `failover` (Redis Cluster only): on a cluster of three primaries with a replica each
//!   ([`ReplicatedCluster`], started by the test, node timeout 1 s), every 4 s a primary
//!   (another each time) is SIGKILLed, its replica promoted (bounded wait for
//!   `cluster_state:ok`), and the killed node started again: it rejoins as a replica. The
//!   nodes reach the cluster directly, from a seed list of all six nodes;
//! - `skew`: the first worker's store clock runs 2 s ahead, the second's 2 s behind
//!   (the demo's `--clock-offset-ms`, [`SKEW_MS`]: their leases, event times and sweeps
//!   are stamped from it) while, every 3 s, a worker in turn is SIGKILLed and started
//!   again 1 s later with the same skew.
//!
//! Short by default ([`SHORT`] of load, for CI); `DURABILITY_SECONDS=N` runs N seconds of
//! load with more clients (`cargo xtask chaos --seconds N`). Each test writes a summary row
//! (scenario, store, tasks, operations, unknown outcomes, violations) to stderr past the
//! harness's capture. Skipped (a line on stderr) when the store does not answer, or for the
//! cluster when `redis-server` cannot be run; `MCP_REQUIRE_SERVICES=1` (and `CI=true` for
//! the cluster) makes that a failure.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::Limits;
use mcp_tasks::conformance::{Env, RedisFactory, TcpProxy};
use mcp_tests::history::check;
use mcp_tests::history::driver::{Driver, FOLLOW};
use mcp_tests::history::one_way_proxy::OneWayProxy;
use mcp_tests::history::replicated_cluster::ReplicatedCluster;
use mcp_tests::history::throwaway_postgres::ThrowawayPostgres;
use mcp_tests::node_harness::{Node, NodeStore};
use mcp_tests::redis_cluster::ProxiedCluster;
use tokio::time::Instant;

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const LEASE_MS: &str = "1000";
/// The load of the short form.
const SHORT: Duration = Duration::from_secs(12);
/// How long every acknowledged task gets, after the load, to end.
const DRAIN: Duration = Duration::from_secs(40);
/// How long a killed node stays down.
const DOWN: Duration = Duration::from_secs(1);
/// How long a one-way partition lasts.
const PARTITION: Duration = Duration::from_millis(2500);
/// How long a store cut lasts (the lease is 1 s).
const CUT: Duration = Duration::from_millis(2500);
/// The store clock offsets of the workers in the `skew` scenario, in turn.
const SKEW_MS: [i64; 2] = [2000, -2000];

/// One scenario at a time in this binary: four server processes and their clients on a
/// small machine, with leases of 1 s.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The load's length, the number of clients and how long each follows a task: short, or
/// `DURABILITY_SECONDS` of load with more clients that follow each task for less time
/// (more tasks: at least 1,000 in a minute).
fn load() -> (Duration, usize, Duration) {
    match std::env::var("DURABILITY_SECONDS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        Some(seconds) => (
            Duration::from_secs(seconds.max(1)),
            12,
            Duration::from_millis(400),
        ),
        None => (SHORT, 6, FOLLOW),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// Workers and API nodes SIGKILLed.
    Kill,
    /// Store connections cut for longer than the lease.
    Cut,
    /// The PostgreSQL server crashed (`pg_ctl stop -m immediate`) and started again.
    Restart,
    /// One API node's store connections pass requests but lose the replies.
    Partition,
    /// A Redis Cluster primary SIGKILLed, its replica promoted, the node started again.
    Failover,
    /// The workers' clocks 2 s ahead and 2 s behind; workers SIGKILLed in turn.
    Skew,
}

impl Scenario {
    fn name(self) -> &'static str {
        match self {
            Scenario::Kill => "kill",
            Scenario::Cut => "cut",
            Scenario::Restart => "restart",
            Scenario::Partition => "partition",
            Scenario::Failover => "failover",
            Scenario::Skew => "skew",
        }
    }

    fn first_and_every(self) -> (Duration, Duration) {
        match self {
            Scenario::Kill => (Duration::from_secs(2), Duration::from_secs(3)),
            Scenario::Cut => (Duration::from_secs(2), Duration::from_secs(4)),
            Scenario::Restart => (Duration::from_secs(2), Duration::from_secs(4)),
            Scenario::Partition => (Duration::from_secs(2), Duration::from_secs(4)),
            Scenario::Failover => (Duration::from_secs(2), Duration::from_secs(4)),
            Scenario::Skew => (Duration::from_secs(2), Duration::from_secs(3)),
        }
    }
}

/// The processes of one deployment, and how to start them again.
struct Deployment {
    stores: Vec<String>,
    namespace: String,
    apis: Vec<Node>,
    workers: Vec<Node>,
    started: usize,
    /// The store clock offset of worker `i` is `skews[i]` (none: the system's clock).
    skews: &'static [i64],
}

impl Deployment {
    async fn start(stores: &[String], namespace: &str, skews: &'static [i64]) -> Deployment {
        let mut d = Deployment {
            stores: stores.to_vec(),
            namespace: namespace.to_owned(),
            apis: Vec::new(),
            workers: Vec::new(),
            started: 0,
            skews,
        };
        for _ in 0..2 {
            let api = d.start_api().await;
            d.apis.push(api);
            let worker = d.start_worker(d.workers.len()).await;
            d.workers.push(worker);
        }
        d
    }

    fn next_args(&mut self) -> Vec<String> {
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
        let mut args = vec!["--role".to_owned(), "api".to_owned()];
        args.extend(self.next_args());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Node::start(Path::new(DEMO), &format!("api-{}", self.started), &args).await
    }

    /// Starts worker `slot` (the first or the second), with its clock offset if any.
    async fn start_worker(&mut self, slot: usize) -> Node {
        let mut args = self.next_args();
        if let Some(skew) = self.skews.get(slot) {
            args.extend(["--clock-offset-ms".to_owned(), skew.to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Node::start_worker(Path::new(DEMO), &format!("worker-{}", self.started), &args).await
    }

    /// Fault number `round` of `scenario`; returns what it did.
    async fn inject(
        &mut self,
        scenario: Scenario,
        round: usize,
        store: &Faulty<'_>,
        driver: &Driver,
    ) -> &'static str {
        let which = (round / 3) % 2;
        match (scenario, round % 3) {
            (Scenario::Partition, _) => {
                let proxy = store.one_way.expect("a one-way proxy");
                proxy.partition();
                tokio::time::sleep(PARTITION).await;
                proxy.heal();
                "one API node partitioned one way"
            }
            (Scenario::Skew, _) => {
                // The one started in its place runs with the same skew.
                let i = round % 2;
                self.workers[i].kill().await;
                tokio::time::sleep(DOWN).await;
                self.workers[i] = self.start_worker(i).await;
                "skewed worker killed"
            }
            (Scenario::Failover, _) => {
                let cluster = store.cluster.expect("a replicated Redis Cluster");
                if let Err(e) = cluster.fail_over(round).await {
                    panic!("fail-over {round}: {e}");
                }
                "primary killed, replica promoted"
            }
            (Scenario::Restart, _) => {
                let postgres = store
                    .postgres
                    .expect("a PostgreSQL server of the test's own");
                if let Err(e) = postgres.crash().await {
                    panic!("{e}\n{}", postgres.log_tail());
                }
                tokio::time::sleep(DOWN).await;
                if let Err(e) = postgres.start().await {
                    panic!("{e}\n{}", postgres.log_tail());
                }
                "PostgreSQL crashed and restarted"
            }
            (Scenario::Cut, _) => {
                for proxy in store.proxies {
                    proxy.cut();
                }
                tokio::time::sleep(CUT).await;
                for proxy in store.proxies {
                    proxy.restore();
                }
                "store cut"
            }
            (Scenario::Kill, 0) => {
                self.workers[which].kill().await;
                tokio::time::sleep(DOWN).await;
                self.workers[which] = self.start_worker(which).await;
                "worker killed"
            }
            (Scenario::Kill, 1) => {
                self.apis[which].kill().await;
                tokio::time::sleep(DOWN).await;
                let api = self.start_api().await;
                driver.set_endpoint(which, api.url.clone());
                self.apis[which] = api;
                "API node killed"
            }
            (Scenario::Kill, _) => {
                let (first, second) = self.workers.split_at_mut(1);
                tokio::join!(first[0].kill(), second[0].kill());
                tokio::time::sleep(DOWN).await;
                for i in 0..self.workers.len() {
                    self.workers[i] = self.start_worker(i).await;
                }
                "both workers killed"
            }
        }
    }
}

/// What the faults act on: the proxies in front of the store, the PostgreSQL server of
/// the test's own, the one-way proxy of the first API node, the Redis Cluster with
/// replicas of the test's own.
#[derive(Default)]
struct Faulty<'a> {
    proxies: &'a [TcpProxy],
    postgres: Option<&'a ThrowawayPostgres>,
    one_way: Option<&'a OneWayProxy>,
    cluster: Option<&'a ReplicatedCluster>,
}

/// Writes `line` to stderr past the harness's capture.
fn show(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// One scenario on the store the nodes reach at `stores`, `faulty` the faults act on.
async fn run(
    scenario: Scenario,
    store: &str,
    stores: &[String],
    faulty: &Faulty<'_>,
    namespace: &str,
) {
    let (length, clients, follow) = load();
    let skews: &[i64] = if scenario == Scenario::Skew {
        &SKEW_MS
    } else {
        &[]
    };
    let mut deployment = Deployment::start(stores, namespace, skews).await;
    let driver = Arc::new(
        Driver::new(deployment.apis.iter().map(|a| a.url.clone()).collect()).follow_for(follow),
    );
    let until = Instant::now() + length;
    let load: Vec<_> = (0..clients)
        .map(|me| tokio::spawn(Arc::clone(&driver).run_client(me, until)))
        .collect();
    let (first, every) = scenario.first_and_every();
    let mut next = Instant::now() + first;
    let mut faults = std::collections::BTreeMap::<&str, u64>::new();
    let mut round = 0;
    while next + every <= until {
        tokio::time::sleep_until(next).await;
        let what = deployment.inject(scenario, round, faulty, &driver).await;
        *faults.entry(what).or_default() += 1;
        round += 1;
        next = (next + every).max(Instant::now());
    }
    for client in load {
        client.await.expect("a client panicked");
    }
    driver.settle(DRAIN).await;
    drop(deployment);

    let report = check(&driver.recorder().history());
    show(&format!(
        "durability[{} on {store}]: {length:?} of load, {clients} clients, faults {faults:?}, \
         refusals {:?}; {}",
        scenario.name(),
        driver.refusals(),
        report.to_string().trim_end()
    ));
    if let Some(cluster) = faulty.cluster {
        for f in cluster.failovers() {
            show(&format!(
                "durability[{} on {store}]: primary :{} killed, replica :{} promoted in \
                 {:?}, the killed node in sync as a replica {:?} after its restart",
                scenario.name(),
                f.killed,
                f.promoted,
                f.promotion,
                f.rejoin
            ));
        }
    }
    show(&format!(
        "| {} | {store} | {} | {} | {} | {} |",
        scenario.name(),
        report.tasks,
        report.ops,
        report.unknown,
        report.violations.len()
    ));
    assert!(report.tasks > 0, "no task was created");
    assert!(
        report.is_clean(),
        "durability {} on {store}:\n{report}",
        scenario.name()
    );
    // Not vacuous: every task's log was read, answers and cancels were acknowledged.
    assert_eq!(report.logs, report.tasks, "{report}");
    assert!(report.answers > 0 && report.cancels > 0, "{report}");
}

async fn on_postgres(scenario: Scenario) {
    let _alone = ONE_AT_A_TIME.lock().await;
    let Some(store) = NodeStore::postgres(&format!("durability_{}", scenario.name())).await else {
        return;
    };
    let (proxy, proxied) = TcpProxy::in_front_of(store.url(0))
        .await
        .expect("TCP proxy");
    let faulty = Faulty {
        proxies: &[proxy],
        postgres: None,
        one_way: None,
        cluster: None,
    };
    run(scenario, "postgres", &[proxied], &faulty, &store.namespace).await;
}

async fn on_redis(scenario: Scenario) {
    let _alone = ONE_AT_A_TIME.lock().await;
    let Some(store) = NodeStore::redis(&format!("durability_{}", scenario.name())).await else {
        return;
    };
    let (proxy, proxied) = TcpProxy::in_front_of(store.url(0))
        .await
        .expect("TCP proxy");
    let faulty = Faulty {
        proxies: &[proxy],
        postgres: None,
        one_way: None,
        cluster: None,
    };
    run(scenario, "redis", &[proxied], &faulty, &store.namespace).await;
}

async fn on_redis_cluster(scenario: Scenario) {
    let _alone = ONE_AT_A_TIME.lock().await;
    let Some(cluster) = ProxiedCluster::start_or_skip("Redis Cluster durability").await else {
        return;
    };
    let env = Env::new(
        &format!("durability_{}", scenario.name()),
        Limits::default(),
    );
    let prefix = RedisFactory::prefix(&env.namespace);
    run(
        scenario,
        "redis-cluster",
        &cluster.urls,
        &Faulty {
            proxies: cluster.proxies(),
            postgres: None,
            one_way: None,
            cluster: None,
        },
        &prefix,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_on_postgres() {
    on_postgres(Scenario::Kill).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_on_redis() {
    on_redis(Scenario::Kill).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_on_redis_cluster() {
    on_redis_cluster(Scenario::Kill).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skew_on_postgres() {
    on_postgres(Scenario::Skew).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skew_on_redis() {
    on_redis(Scenario::Skew).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_on_postgres() {
    on_postgres(Scenario::Cut).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_on_redis() {
    on_redis(Scenario::Cut).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_on_redis_cluster() {
    on_redis_cluster(Scenario::Cut).await;
}

/// On a PostgreSQL server of the test's own, crashed (`-m immediate`) and started again
/// every 4 s; the nodes connect to it directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_on_postgres() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let Some(postgres) = ThrowawayPostgres::start_or_skip("PostgreSQL restart durability").await
    else {
        return;
    };
    let faulty = Faulty {
        proxies: &[],
        postgres: Some(&postgres),
        one_way: None,
        cluster: None,
    };
    run(
        Scenario::Restart,
        "postgres (own server)",
        &[postgres.url()],
        &faulty,
        "durability_restart",
    )
    .await;
}

/// A one-way partition on `store`: the first API node reaches it through a
/// [`OneWayProxy`] (its requests pass, the replies are lost every 4 s for 2.5 s); the other
/// nodes reach it directly.
async fn partition_on(what: &str, store: Option<NodeStore>) {
    let Some(store) = store else {
        return;
    };
    let (proxy, proxied) = OneWayProxy::in_front_of(store.url(0))
        .await
        .expect("one-way proxy");
    let direct = store.url(0).to_owned();
    // The deployment gives these in turn: API node, worker, API node, worker.
    let stores = [proxied, direct.clone(), direct.clone(), direct];
    let faulty = Faulty {
        proxies: &[],
        postgres: None,
        one_way: Some(&proxy),
        cluster: None,
    };
    run(
        Scenario::Partition,
        what,
        &stores,
        &faulty,
        &store.namespace,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_on_postgres() {
    let _alone = ONE_AT_A_TIME.lock().await;
    partition_on(
        "postgres",
        NodeStore::postgres("durability_partition").await,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_on_redis() {
    let _alone = ONE_AT_A_TIME.lock().await;
    partition_on("redis", NodeStore::redis("durability_partition").await).await;
}

/// On a Redis Cluster of three primaries and three replicas of the test's own: every 4 s
/// a primary is SIGKILLed, its replica promoted and the node started again as a replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_on_redis_cluster() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let Some(cluster) =
        ReplicatedCluster::start_or_skip("Redis Cluster fail-over durability").await
    else {
        return;
    };
    let faulty = Faulty {
        cluster: Some(&cluster),
        ..Faulty::default()
    };
    run(
        Scenario::Failover,
        "redis-cluster (3+3, fail-over)",
        &[cluster.url()],
        &faulty,
        "durability_failover",
    )
    .await;
}
