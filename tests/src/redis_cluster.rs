//! A throwaway three-node Redis Cluster whose every node is reached through its own
//! [`TcpProxy`], for tests that cut the store (`tests/chaos.rs`).
//!
//! Each node is a `redis-server` in cluster mode on a free port of 127.0.0.1 (no
//! persistence, its files in a temporary directory) that announces its proxy's port
//! (`--cluster-announce-port`): `CLUSTER SLOTS`, `CLUSTER NODES` and `MOVED` name the
//! proxies, so a client that discovers the cluster from one node reaches every node
//! through a proxy, and cutting every one of [`proxies`](ProxiedCluster::proxies) cuts them all. The cluster bus
//! (node to node, on a port of its own) does not go through the proxies: a cut is what
//! the clients see, the cluster itself stays up. Joined by `redis-cli --cluster create`
//! through the proxies. Every wait is bounded; dropping the cluster kills the nodes and
//! deletes their directory.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use mcp_tasks::conformance::{TcpProxy, report_skip};
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// How many nodes (all primaries, no replicas).
pub const NODES: usize = 3;
/// How long a node has to answer `PING` after it started.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// How long `redis-cli --cluster create` may take.
const CREATE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the nodes have to agree that the cluster is up (`cluster_state:ok`).
const STATE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one `redis-cli` query may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// A running cluster behind its proxies; dropping it kills the nodes (SIGKILL: nothing
/// is kept) and deletes their directory.
#[derive(Debug)]
pub struct ProxiedCluster {
    nodes: Vec<Child>,
    proxies: Vec<TcpProxy>,
    dir: PathBuf,
    /// `redis://127.0.0.1:PROXY_PORT/` of each node, through its proxy.
    pub urls: Vec<String>,
}

impl ProxiedCluster {
    /// Whether `redis-server` and `redis-cli` can be run: `Err` says why not.
    pub async fn available() -> Result<(), String> {
        for exe in ["redis-server", "redis-cli"] {
            let mut version = Command::new(exe);
            version.arg("--version");
            run(&mut version, QUERY_TIMEOUT)
                .await
                .map_err(|e| format!("`{exe} --version` failed ({e}); is Redis installed?"))?;
        }
        Ok(())
    }

    /// A cluster, or `None` after [`report_skip`] when `redis-server` or `redis-cli`
    /// cannot be run. Under `MCP_REQUIRE_SERVICES=1` or `CI=true` that panics instead, as
    /// does a cluster that does not come up (with the reason and the nodes' logs).
    pub async fn start_or_skip(what: &str) -> Option<ProxiedCluster> {
        if let Err(why) = ProxiedCluster::available().await {
            let required = std::env::var("MCP_REQUIRE_SERVICES").as_deref() == Ok("1")
                || std::env::var("CI").as_deref() == Ok("true");
            if required {
                panic!("{what}: {why}, and MCP_REQUIRE_SERVICES=1 / CI=true requires it");
            }
            report_skip(&format!("{what}: {why}"));
            return None;
        }
        match ProxiedCluster::start().await {
            Ok(cluster) => Some(cluster),
            Err(why) => panic!("{what}: the Redis Cluster did not come up: {why}"),
        }
    }

    /// Starts the proxies, then the nodes announcing them, and joins the nodes. On
    /// failure whatever was started is stopped again (dropped).
    pub async fn start() -> Result<ProxiedCluster, String> {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "mcp-tests-redis-cluster-{}-{stamp}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut cluster = ProxiedCluster {
            nodes: Vec::new(),
            proxies: Vec::new(),
            dir,
            urls: Vec::new(),
        };
        cluster
            .launch()
            .await
            .map_err(|why| cluster.with_logs(why))?;
        Ok(cluster)
    }

    async fn launch(&mut self) -> Result<(), String> {
        // Client and cluster-bus ports of the nodes, all free at once.
        let ports = free_ports(NODES * 2)?;
        let (node_ports, bus_ports) = ports.split_at(NODES);
        for (port, bus) in node_ports.iter().zip(bus_ports) {
            // The proxy first: the node announces its port.
            let upstream = SocketAddr::from((Ipv4Addr::LOCALHOST, *port));
            let proxy = TcpProxy::start(upstream)
                .await
                .map_err(|e| format!("cannot start a TCP proxy: {e}"))?;
            let announced = proxy.addr().port();
            let mut server = Command::new("redis-server");
            server
                .args(["--port", &port.to_string()])
                .args(["--bind", "127.0.0.1"])
                .args(["--cluster-enabled", "yes"])
                .args(["--cluster-port", &bus.to_string()])
                .args(["--cluster-announce-ip", "127.0.0.1"])
                .args(["--cluster-announce-port", &announced.to_string()])
                .args(["--cluster-announce-bus-port", &bus.to_string()])
                .arg("--cluster-config-file")
                .arg(self.dir.join(format!("nodes-{port}.conf")))
                .arg("--dir")
                .arg(&self.dir)
                .args(["--save", ""])
                .args(["--appendonly", "no"])
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
            self.nodes.push(child);
            self.urls.push(format!("redis://127.0.0.1:{announced}/"));
            self.proxies.push(proxy);
        }
        let proxy_ports: Vec<u16> = self.proxies.iter().map(|p| p.addr().port()).collect();
        for port in node_ports {
            wait_until(START_TIMEOUT, || async move {
                cli(*port, &["PING"])
                    .await
                    .is_ok_and(|o| o.trim() == "PONG")
            })
            .await
            .map_err(|()| {
                format!("redis-server on port {port} did not answer in {START_TIMEOUT:?}")
            })?;
        }
        // Joined at the announced addresses: every address the nodes learn is a proxy's.
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for port in &proxy_ports {
            create.arg(format!("127.0.0.1:{port}"));
        }
        create.args(["--cluster-replicas", "0", "--cluster-yes"]);
        run(&mut create, CREATE_TIMEOUT)
            .await
            .map_err(|e| format!("redis-cli --cluster create: {e}"))?;
        for port in &proxy_ports {
            wait_until(STATE_TIMEOUT, || async move {
                cli(*port, &["CLUSTER", "INFO"])
                    .await
                    .is_ok_and(|o| o.lines().any(|l| l.trim() == "cluster_state:ok"))
            })
            .await
            .map_err(|()| {
                format!("the node behind port {port} did not reach cluster_state:ok in {STATE_TIMEOUT:?}")
            })?;
        }
        Ok(())
    }

    /// The proxies, one per node, in the order of [`urls`](Self::urls).
    pub fn proxies(&self) -> &[TcpProxy] {
        &self.proxies
    }

    /// `why`, followed by the last lines of each node's log.
    fn with_logs(&self, why: String) -> String {
        let mut text = why;
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "log") {
                    let log = std::fs::read_to_string(&path).unwrap_or_default();
                    let lines: Vec<&str> = log.lines().collect();
                    let tail = lines[lines.len().saturating_sub(10)..].join("\n");
                    text.push_str(&format!("\n--- {}:\n{tail}", path.display()));
                }
            }
        }
        text
    }
}

impl Drop for ProxiedCluster {
    fn drop(&mut self) {
        for child in &mut self.nodes {
            // Our own children, by handle: SIGKILL, and reaped if they are gone already.
            let _ = child.start_kill();
            let _ = child.try_wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `n` distinct free TCP ports on 127.0.0.1 (held together while they are picked).
pub(crate) fn free_ports(n: usize) -> Result<Vec<u16>, String> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot find a free port: {e}"))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot find a free port: {e}"))
}

/// `redis-cli -h 127.0.0.1 -p PORT ARGS` (bounded): its standard output.
pub(crate) async fn cli(port: u16, args: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new("redis-cli");
    cmd.args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args);
    run(&mut cmd, QUERY_TIMEOUT).await
}

/// Runs `cmd` to its end (killed after `timeout`): its standard output if it succeeded,
/// else what it printed.
pub(crate) async fn run(cmd: &mut Command, timeout: Duration) -> Result<String, String> {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", cmd.as_std().get_program().display()))?;
    let out = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .map_err(|_| format!("{cmd:?} did not finish within {timeout:?}"))?
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "{cmd:?} exited with {}: {stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Polls `ready` every 100 ms until it holds or `timeout` passed.
pub(crate) async fn wait_until<F, Fut>(timeout: Duration, mut ready: F) -> Result<(), ()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if ready().await {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
