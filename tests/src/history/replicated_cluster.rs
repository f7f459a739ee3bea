//! A throwaway Redis Cluster of three primaries, each with one replica, whose primaries
//! are killed one at a time so that their replicas are promoted (`tests/durability.rs`,
//! scenario `failover`).
//!
//! Six `redis-server`s in cluster mode on free ports of 127.0.0.1 (no persistence, a node
//! timeout of [`NODE_TIMEOUT_MS`], their files in a temporary directory), joined by
//! `redis-cli --cluster create ... --cluster-replicas 1`; [`start`](ReplicatedCluster::start)
//! returns once every node says `cluster_state:ok` and every replica is in sync with its
//! primary. [`fail_over`](ReplicatedCluster::fail_over) SIGKILLs a primary, waits until
//! its replica was promoted (three primaries that hold slots, none of them the killed one,
//! and `cluster_state:ok` on every live node), starts the killed node again on its port
//! with its `nodes.conf` (it rejoins as a replica of the promoted node) and waits until it
//! is in sync. Redis replication is asynchronous: a write the killed primary acknowledged
//! but had not yet sent to its replica is lost by the promotion. Every wait is bounded;
//! dropping the cluster SIGKILLs the nodes (its own children, by handle) and deletes
//! their directory.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use mcp_tasks::conformance::report_skip;
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::redis_cluster::{ProxiedCluster, cli, free_ports, run, wait_until};

/// How many primaries; each has one replica.
pub const PRIMARIES: usize = 3;
/// `cluster-node-timeout`: how long a primary may be silent before it is failed over.
pub const NODE_TIMEOUT_MS: u64 = 1000;
/// How long a node has to answer `PING` after it started.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// How long `redis-cli --cluster create` may take.
const CREATE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the cluster has to be up (`cluster_state:ok`, replicas in sync) after it was
/// created, after a primary was killed (its replica promoted) or after the killed node
/// was started again (in sync as a replica).
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a killed node has to be reaped.
const REAP_TIMEOUT: Duration = Duration::from_secs(5);

/// One node: its client and cluster-bus ports, its process while it runs.
#[derive(Debug)]
struct Node {
    port: u16,
    bus: u16,
    child: Option<Child>,
}

/// What one [`fail_over`](ReplicatedCluster::fail_over) did.
#[derive(Debug, Clone, Copy)]
pub struct Failover {
    /// The port of the primary killed.
    pub killed: u16,
    /// The port of the replica promoted in its place.
    pub promoted: u16,
    /// From the kill to the cluster up again with the replica promoted.
    pub promotion: Duration,
    /// From the restart of the killed node to it in sync as a replica.
    pub rejoin: Duration,
}

/// A running cluster of [`PRIMARIES`] primaries and as many replicas; dropping it kills
/// the nodes and deletes their directory.
#[derive(Debug)]
pub struct ReplicatedCluster {
    nodes: Mutex<Vec<Node>>,
    dir: PathBuf,
    failovers: Mutex<Vec<Failover>>,
}

/// A node as `CLUSTER NODES` describes it.
#[derive(Debug)]
struct Seen {
    port: u16,
    primary: bool,
    failed: bool,
    has_slots: bool,
    /// The first slot it holds: which shard of the key space it serves.
    first_slot: Option<u32>,
    /// Its node id.
    id: String,
    /// A replica's primary (its node id); `None` for a primary.
    primary_id: Option<String>,
}

impl ReplicatedCluster {
    /// A cluster, or `None` after [`report_skip`] when `redis-server` or `redis-cli`
    /// cannot be run. Under `MCP_REQUIRE_SERVICES=1` or `CI=true` that panics instead, as
    /// does a cluster that does not come up (with the reason and the nodes' logs).
    pub async fn start_or_skip(what: &str) -> Option<ReplicatedCluster> {
        if let Err(why) = ProxiedCluster::available().await {
            let required = std::env::var("MCP_REQUIRE_SERVICES").as_deref() == Ok("1")
                || std::env::var("CI").as_deref() == Ok("true");
            assert!(
                !required,
                "{what}: {why}, and MCP_REQUIRE_SERVICES=1 / CI=true requires it"
            );
            report_skip(&format!("{what}: {why}"));
            return None;
        }
        match ReplicatedCluster::start().await {
            Ok(cluster) => Some(cluster),
            Err(why) => panic!("{what}: the replicated Redis Cluster did not come up: {why}"),
        }
    }

    /// Starts the six nodes, joins them and waits until the cluster is up and every
    /// replica in sync. On failure whatever was started is stopped again (dropped).
    pub async fn start() -> Result<ReplicatedCluster, String> {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "mcp-tests-redis-replicated-{}-{stamp}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let ports = free_ports(PRIMARIES * 4)?;
        let (node_ports, bus_ports) = ports.split_at(PRIMARIES * 2);
        let cluster = ReplicatedCluster {
            nodes: Mutex::new(
                node_ports
                    .iter()
                    .zip(bus_ports)
                    .map(|(&port, &bus)| Node {
                        port,
                        bus,
                        child: None,
                    })
                    .collect(),
            ),
            dir,
            failovers: Mutex::default(),
        };
        cluster
            .launch()
            .await
            .map_err(|why| format!("{why}{}", cluster.logs()))?;
        Ok(cluster)
    }

    async fn launch(&self) -> Result<(), String> {
        for port in self.ports() {
            self.spawn(port)?;
        }
        for port in self.ports() {
            wait_pong(port).await?;
        }
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for port in self.ports() {
            create.arg(format!("127.0.0.1:{port}"));
        }
        create.args(["--cluster-replicas", "1", "--cluster-yes"]);
        run(&mut create, CREATE_TIMEOUT)
            .await
            .map_err(|e| format!("redis-cli --cluster create: {e}"))?;
        self.wait_settled(None).await?;
        Ok(())
    }

    /// The store URL naming every node as a seed: `redis://127.0.0.1:P1,127.0.0.1:P2,.../`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .ports()
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        format!("redis://{}/", hosts.join(","))
    }

    /// Every node's client port, in start order.
    fn ports(&self) -> Vec<u16> {
        self.lock_nodes().iter().map(|n| n.port).collect()
    }

    fn lock_nodes(&self) -> std::sync::MutexGuard<'_, Vec<Node>> {
        self.nodes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the node of `port` (again): the same port, bus port and `nodes.conf`.
    fn spawn(&self, port: u16) -> Result<(), String> {
        let mut nodes = self.lock_nodes();
        let node = nodes
            .iter_mut()
            .find(|n| n.port == port)
            .ok_or_else(|| format!("no node on port {port}"))?;
        let mut server = Command::new("redis-server");
        server
            .args(["--port", &port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .args(["--cluster-enabled", "yes"])
            .args(["--cluster-port", &node.bus.to_string()])
            .args(["--cluster-node-timeout", &NODE_TIMEOUT_MS.to_string()])
            .arg("--cluster-config-file")
            .arg(self.dir.join(format!("nodes-{port}.conf")))
            .arg("--dir")
            .arg(&self.dir)
            .args(["--save", ""])
            .args(["--appendonly", "no"])
            // A replica (re)joining is sent the data at once, not 5 s later.
            .args(["--repl-diskless-sync-delay", "0"])
            .args(["--daemonize", "no"])
            .arg("--logfile")
            .arg(self.dir.join(format!("redis-{port}.log")))
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let child = server
            .spawn()
            .map_err(|e| format!("cannot start redis-server: {e}"))?;
        node.child = Some(child);
        Ok(())
    }

    /// The ports of the nodes running now.
    fn live(&self) -> Vec<u16> {
        self.lock_nodes()
            .iter()
            .filter(|n| n.child.is_some())
            .map(|n| n.port)
            .collect()
    }

    /// Fail-over number `round`: SIGKILLs a primary (the one holding each third of the
    /// slots in turn, so never the node promoted by the last fail-over), waits until its replica was promoted, starts the killed node again
    /// and waits until it is a replica in sync. `Err` (with the nodes' logs) when a step
    /// does not happen within its bound.
    pub async fn fail_over(&self, round: usize) -> Result<Failover, String> {
        let result = self.fail_over_once(round).await;
        result.map_err(|why| format!("{why}{}", self.logs()))
    }

    async fn fail_over_once(&self, round: usize) -> Result<Failover, String> {
        let seen = self.seen().await?;
        let mut primaries: Vec<&Seen> = seen
            .iter()
            .filter(|s| s.primary && s.has_slots && !s.failed)
            .collect();
        // By the slots they hold, which a fail-over hands on: each third of the key space
        // in turn.
        primaries.sort_by_key(|s| s.first_slot);
        let victim = primaries
            .get(round % primaries.len().max(1))
            .ok_or("no primary holds slots")?;
        let killed = victim.port;
        let replica = seen
            .iter()
            .find(|s| s.primary_id.as_deref() == Some(&victim.id))
            .map(|s| s.port)
            .ok_or_else(|| format!("the primary on port {killed} has no replica"))?;
        let child = self
            .lock_nodes()
            .iter_mut()
            .find(|n| n.port == killed)
            .and_then(|n| n.child.take());
        let mut child = child.ok_or_else(|| format!("the node on port {killed} is not running"))?;
        // Our own child, by handle.
        let killed_at = Instant::now();
        child
            .start_kill()
            .map_err(|e| format!("cannot kill the node on port {killed}: {e}"))?;
        tokio::time::timeout(REAP_TIMEOUT, child.wait())
            .await
            .map_err(|_| format!("the node on port {killed} was not reaped in {REAP_TIMEOUT:?}"))?
            .map_err(|e| format!("the node on port {killed}: {e}"))?;
        self.wait_settled(Some(killed)).await?;
        let promotion = killed_at.elapsed();
        let seen = self.seen().await?;
        let promoted = if seen
            .iter()
            .any(|s| s.port == replica && s.primary && s.has_slots)
        {
            replica
        } else {
            return Err(format!(
                "the replica on port {replica} of the killed primary on port {killed} was not \
                 promoted"
            ));
        };
        let restarted_at = Instant::now();
        self.spawn(killed)?;
        wait_pong(killed).await?;
        self.wait_settled(None).await?;
        let failover = Failover {
            killed,
            promoted,
            promotion,
            rejoin: restarted_at.elapsed(),
        };
        self.failovers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(failover);
        Ok(failover)
    }

    /// Every fail-over done so far.
    pub fn failovers(&self) -> Vec<Failover> {
        self.failovers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits (up to [`SETTLE_TIMEOUT`]) until every live node says `cluster_state:ok`,
    /// [`PRIMARIES`] live primaries hold slots (none of them `down`, the node just killed)
    /// and every live replica is in sync with its primary.
    async fn wait_settled(&self, down: Option<u16>) -> Result<(), String> {
        let live = self.live();
        let last = Mutex::new(String::new());
        let settled = wait_until(SETTLE_TIMEOUT, || {
            let (live, last) = (&live, &last);
            async move {
                match settled(live, down).await {
                    Ok(()) => true,
                    Err(why) => {
                        *last.lock().unwrap_or_else(PoisonError::into_inner) = why;
                        false
                    }
                }
            }
        })
        .await;
        let last = last.into_inner().unwrap_or_else(PoisonError::into_inner);
        settled.map_err(|()| format!("the cluster did not settle in {SETTLE_TIMEOUT:?}: {last}"))
    }

    /// The nodes as a live node's `CLUSTER NODES` describes them.
    async fn seen(&self) -> Result<Vec<Seen>, String> {
        let mut why = String::from("no live node");
        for port in self.live() {
            match cli(port, &["CLUSTER", "NODES"]).await {
                Ok(text) => return Ok(parse_nodes(&text)),
                Err(e) => why = e,
            }
        }
        Err(why)
    }

    /// The last lines of every node's log, after a newline (empty when there are none).
    fn logs(&self) -> String {
        let mut text = String::new();
        for port in self.ports() {
            let path = self.dir.join(format!("redis-{port}.log"));
            let log = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(12)..].join("\n");
            text.push_str(&format!("\n--- {}:\n{tail}", path.display()));
        }
        text
    }
}

impl Drop for ReplicatedCluster {
    fn drop(&mut self) {
        for node in self.lock_nodes().iter_mut() {
            if let Some(child) = &mut node.child {
                // Our own children, by handle: SIGKILL, and reaped if they are gone already.
                let _ = child.start_kill();
                let _ = child.try_wait();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Waits until the node on `port` answers `PING`.
async fn wait_pong(port: u16) -> Result<(), String> {
    wait_until(START_TIMEOUT, || async move {
        cli(port, &["PING"]).await.is_ok_and(|o| o.trim() == "PONG")
    })
    .await
    .map_err(|()| format!("redis-server on port {port} did not answer in {START_TIMEOUT:?}"))
}

/// `Ok` when the cluster of the `live` nodes is up (see [`ReplicatedCluster::wait_settled`]),
/// else what is not yet so.
async fn settled(live: &[u16], down: Option<u16>) -> Result<(), String> {
    for &port in live {
        let info = cli(port, &["CLUSTER", "INFO"]).await?;
        if !info.lines().any(|l| l.trim() == "cluster_state:ok") {
            return Err(format!("the node on port {port} is not cluster_state:ok"));
        }
    }
    let first = live.first().ok_or("no live node")?;
    let seen = parse_nodes(&cli(*first, &["CLUSTER", "NODES"]).await?);
    let primaries: Vec<u16> = seen
        .iter()
        .filter(|s| s.primary && s.has_slots && !s.failed && live.contains(&s.port))
        .map(|s| s.port)
        .collect();
    if primaries.len() != PRIMARIES || down.is_some_and(|d| primaries.contains(&d)) {
        return Err(format!("the primaries holding slots are {primaries:?}"));
    }
    for &port in live.iter().filter(|p| !primaries.contains(p)) {
        let info = cli(port, &["INFO", "replication"]).await?;
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(':'))
                .map(str::to_owned)
        };
        let in_sync = field("role").as_deref() == Some("slave")
            && field("master_link_status").as_deref() == Some("up")
            && field("master_sync_in_progress").as_deref() == Some("0");
        if !in_sync {
            return Err(format!("the replica on port {port} is not in sync"));
        }
    }
    Ok(())
}

/// The lines of `CLUSTER NODES`: `ID IP:PORT@BUS FLAGS PRIMARY_ID PING PONG EPOCH LINK SLOTS...`.
fn parse_nodes(text: &str) -> Vec<Seen> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let id = (*fields.first()?).to_owned();
            let address = fields.get(1)?;
            let port = address
                .split('@')
                .next()?
                .rsplit_once(':')?
                .1
                .parse()
                .ok()?;
            let flags: Vec<&str> = fields.get(2)?.split(',').collect();
            let primary_id = fields
                .get(3)
                .filter(|p| **p != "-")
                .map(|p| (*p).to_owned());
            Some(Seen {
                port,
                primary: flags.contains(&"master"),
                failed: flags.iter().any(|f| f.starts_with("fail")),
                has_slots: fields.len() > 8,
                first_slot: fields
                    .get(8)
                    .and_then(|range| range.split('-').next()?.parse().ok()),
                id,
                primary_id,
            })
        })
        .collect()
}
