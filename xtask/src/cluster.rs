//! A throwaway three-node Redis Cluster for `cargo xtask test`: three `redis-server`
//! processes in cluster mode on free ports of 127.0.0.1 (no persistence, files in a
//! temporary directory), joined by `redis-cli --cluster create`, stopped and deleted when
//! the [`RedisCluster`] is dropped. The tests find it in `MCP_TEST_REDIS_CLUSTER_URL`
//! (one node) and `MCP_TEST_REDIS_CLUSTER_NODES` (every node, comma-separated).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The variable naming one node of the cluster.
pub const URL_ENV: &str = "MCP_TEST_REDIS_CLUSTER_URL";
/// The variable listing every node's URL, comma-separated.
pub const NODES_ENV: &str = "MCP_TEST_REDIS_CLUSTER_NODES";

/// How many nodes (all primaries).
const NODES: usize = 3;
/// How long a node has to answer `PING` after it started.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// How long `redis-cli --cluster create` may take.
const CREATE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the nodes have to agree that the cluster is up (`cluster_state:ok`).
const STATE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a single `redis-cli` query may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// A running cluster; dropping it stops the nodes and deletes their directory.
pub struct RedisCluster {
    nodes: Vec<Child>,
    dir: PathBuf,
    /// `redis://127.0.0.1:PORT` of each node.
    pub urls: Vec<String>,
}

impl RedisCluster {
    /// Starts the nodes and joins them; every wait is bounded. On failure whatever was
    /// started is stopped again.
    pub fn start() -> Result<RedisCluster, String> {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "mcp-xtask-redis-cluster-{}-{stamp}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut cluster = RedisCluster {
            nodes: Vec::new(),
            dir,
            urls: Vec::new(),
        };
        // Client and cluster-bus ports, all free at once.
        let ports = free_ports(NODES * 2)?;
        for (port, bus) in ports[..NODES].iter().zip(&ports[NODES..]) {
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string()])
                .args(["--bind", "127.0.0.1"])
                .args(["--cluster-enabled", "yes"])
                .args(["--cluster-port", &bus.to_string()])
                .arg("--cluster-config-file")
                .arg(cluster.dir.join(format!("nodes-{port}.conf")))
                .arg("--dir")
                .arg(&cluster.dir)
                .args(["--save", ""])
                .args(["--appendonly", "no"])
                .args(["--daemonize", "no"])
                .arg("--logfile")
                .arg(cluster.dir.join(format!("redis-{port}.log")))
                .current_dir(&cluster.dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start redis-server: {e}"))?;
            cluster.nodes.push(child);
            cluster.urls.push(format!("redis://127.0.0.1:{port}"));
        }
        let ports = &ports[..NODES];
        for port in ports {
            wait_until(START_TIMEOUT, || {
                cli(&["-p", &port.to_string(), "PING"]).is_ok_and(|out| out.trim() == "PONG")
            })
            .map_err(|_| {
                format!("redis-server on port {port} did not answer within {START_TIMEOUT:?}")
            })?;
        }
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for port in ports {
            create.arg(format!("127.0.0.1:{port}"));
        }
        create.args(["--cluster-replicas", "0", "--cluster-yes"]);
        let out = run_bounded(&mut create, CREATE_TIMEOUT)?;
        if !out.status.success() {
            return Err(format!(
                "redis-cli --cluster create failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        for port in ports {
            wait_until(STATE_TIMEOUT, || {
                cli(&["-p", &port.to_string(), "CLUSTER", "INFO"])
                    .is_ok_and(|out| out.lines().any(|l| l.trim() == "cluster_state:ok"))
            })
            .map_err(|_| {
                format!("the cluster node on port {port} did not reach cluster_state:ok")
            })?;
        }
        Ok(cluster)
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for child in &mut self.nodes {
            // Our own children, by handle: stop them and reap them.
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `n` distinct free TCP ports on 127.0.0.1 (held together while they are picked).
fn free_ports(n: usize) -> Result<Vec<u16>, String> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind(("127.0.0.1", 0)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot find a free port: {e}"))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot find a free port: {e}"))
}

/// Runs `redis-cli -h 127.0.0.1 ARGS` (bounded) and returns its standard output.
fn cli(args: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new("redis-cli");
    cmd.args(["-h", "127.0.0.1"]).args(args);
    let out = run_bounded(&mut cmd, QUERY_TIMEOUT)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Runs `cmd` to its end, killing it after `timeout`.
fn run_bounded(cmd: &mut Command, timeout: Duration) -> Result<Output, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{cmd:?} did not finish within {timeout:?}"));
            }
            Err(e) => return Err(format!("{cmd:?}: {e}")),
        }
    }
    child
        .wait_with_output()
        .map_err(|e| format!("{cmd:?}: {e}"))
}

/// Polls `ready` every 100 ms until it holds or `timeout` passed.
fn wait_until(timeout: Duration, mut ready: impl FnMut() -> bool) -> Result<(), ()> {
    let deadline = Instant::now() + timeout;
    loop {
        if ready() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts a cluster for the tests of `cmd` unless `MCP_TEST_REDIS_CLUSTER_NODES` or
/// `MCP_TEST_REDIS_CLUSTER_URL` already names one, and says so. A cluster that cannot be
/// started (no `redis-server`, say) leaves its tests SKIPPED, or is an error when
/// services are `required`.
pub fn prepare(cmd: &mut Command, required: bool) -> Result<Option<RedisCluster>, String> {
    if let Ok(nodes) = std::env::var(NODES_ENV).or_else(|_| std::env::var(URL_ENV)) {
        println!("xtask:   Redis Cluster {nodes}: given; its tests will run");
        return Ok(None);
    }
    match RedisCluster::start() {
        Ok(cluster) => {
            println!(
                "xtask:   Redis Cluster {}: started ({NODES} nodes); its tests will run",
                cluster.urls.join(",")
            );
            cmd.env(URL_ENV, &cluster.urls[0])
                .env(NODES_ENV, cluster.urls.join(","));
            Ok(Some(cluster))
        }
        Err(why) if required => Err(format!(
            "cannot start a Redis Cluster ({why}), and every backend must be tested"
        )),
        Err(why) => {
            println!("xtask:   Redis Cluster: SKIPPED: {why} (under CI=true this is an error)");
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Starts a cluster, sees it up, and sees it gone after the drop. Skipped (said on
    /// stderr) without `redis-server`.
    #[test]
    fn starts_and_stops_a_cluster() {
        if Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_err()
        {
            eprintln!("skipped: redis-server is not installed");
            return;
        }
        let cluster = RedisCluster::start().expect("cluster");
        assert_eq!(cluster.urls.len(), NODES);
        let port = cluster.urls[0].rsplit(':').next().expect("port").to_owned();
        let info = cli(&["-p", &port, "CLUSTER", "INFO"]).expect("cluster info");
        assert!(info.contains("cluster_state:ok"), "{info}");
        assert!(info.contains("cluster_known_nodes:3"), "{info}");
        let dir = cluster.dir.clone();
        drop(cluster);
        assert!(!dir.exists());
        let after = cli(&["-p", &port, "PING"]);
        assert!(
            !after.as_deref().is_ok_and(|out| out.trim() == "PONG"),
            "{after:?}"
        );
    }
}
