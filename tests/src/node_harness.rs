//! A harness for multi-process tests: demo server processes (the `demo-server` binary of
//! this crate, which is the demo example's own source) on `127.0.0.1:0`, and a client that
//! talks MCP 2026-07-28 over HTTP to any of them. Every wait is bounded.
//!
//! Each [`Node`] is killed (SIGKILL) when dropped, so a failing test leaves no process
//! behind. A [`NodeStore`] is the shared store (PostgreSQL, Redis, a Redis Cluster) the
//! processes of one test run on, in a namespace of their own.

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks::Limits;
use mcp_tasks::conformance::{Env, PostgresFactory, RedisFactory, StoreFactory};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::server_harness::{Reply, WAIT, call_params, request, task_params, update_params};

/// How long a demo server may take to start and print its URL.
pub const START_WAIT: Duration = Duration::from_secs(30);

/// What a node wrote to its stderr (its log lines), as it comes. Clones share it.
#[derive(Debug, Clone, Default)]
pub struct Logs(Arc<Mutex<String>>);

impl Logs {
    /// Everything written so far.
    pub fn text(&self) -> String {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn push(&self, line: &str) {
        let mut text = self.0.lock().unwrap_or_else(|e| e.into_inner());
        text.push_str(line);
        text.push('\n');
    }

    /// Waits (at most `within`) until a line contains `needle`; whether one did.
    pub async fn wait_for(&self, needle: &str, within: Duration) -> bool {
        tokio::time::timeout(within, async {
            while !self.text().contains(needle) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .is_ok()
    }
}

/// One demo server process.
#[derive(Debug)]
pub struct Node {
    /// A short name for messages (`A`, `B`, ...).
    pub name: String,
    /// Its MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// The first line it printed, which names its store (`... (store: URL)`).
    pub banner: String,
    child: Child,
}

impl Node {
    /// Starts `exe --http 127.0.0.1:0 --node-id NAME` with `args` and waits (at most
    /// [`START_WAIT`]) for the line that names its URL. Its logs (`RUST_LOG=warn` unless
    /// set) go to this process's stderr.
    pub async fn start(exe: &Path, name: &str, args: &[&str]) -> Node {
        Node::start_with_env(exe, name, args, &[]).await
    }

    /// [`Node::start`] with `env` added to its environment.
    pub async fn start_with_env(
        exe: &Path,
        name: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Node {
        Node::launch(exe, name, args, env, None).await
    }

    /// [`Node::start_with_env`] logging at `rust_log` (a `RUST_LOG` filter) into the
    /// returned [`Logs`] instead of this process's stderr.
    pub async fn start_logged(
        exe: &Path,
        name: &str,
        args: &[&str],
        env: &[(&str, &str)],
        rust_log: &str,
    ) -> (Node, Logs) {
        let logs = Logs::default();
        let node = Node::launch(exe, name, args, env, Some((rust_log, &logs))).await;
        (node, logs)
    }

    /// Starts an HTTP node; `logged`: its `RUST_LOG` and where its stderr goes (else
    /// inherited, at this process's `RUST_LOG` or `warn`).
    async fn launch(
        exe: &Path,
        name: &str,
        args: &[&str],
        env: &[(&str, &str)],
        logged: Option<(&str, &Logs)>,
    ) -> Node {
        let mut command = Command::new(exe);
        let rust_log = match logged {
            Some((filter, _)) => filter.to_owned(),
            None => std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
        };
        command
            .args(["--http", "127.0.0.1:0", "--node-id", name])
            .args(args)
            .envs(env.iter().copied())
            .env("RUST_LOG", rust_log)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(if logged.is_some() {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", exe.display()));
        if let (Some((_, logs)), Some(stderr)) = (logged, child.stderr.take()) {
            let logs = logs.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    logs.push(&line);
                }
            });
        }
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout);
        let mut first = String::new();
        let read = tokio::time::timeout(START_WAIT, lines.read_line(&mut first)).await;
        match read {
            Ok(Ok(n)) if n > 0 => {}
            other => panic!("node {name} did not start ({args:?}): {other:?}"),
        }
        // "MCP tasks demo server on http://127.0.0.1:PORT/mcp (store: ...)"
        let url = first
            .split_whitespace()
            .find(|w| w.starts_with("http://127.0.0.1:"))
            .unwrap_or_else(|| panic!("node {name} did not print its URL: {first:?}"))
            .to_owned();
        // Keep reading what else it prints, so its writes never block or fail.
        tokio::spawn(async move {
            let mut sink = Vec::new();
            let _ = lines.read_to_end(&mut sink).await;
        });
        Node {
            name: name.to_owned(),
            url,
            banner: first.trim().to_owned(),
            child,
        }
    }

    /// Starts `exe --role worker --node-id NAME` with `args` and waits (at most
    /// [`START_WAIT`]) for the line that says it runs. A worker serves no HTTP: its `url`
    /// is empty.
    pub async fn start_worker(exe: &Path, name: &str, args: &[&str]) -> Node {
        Node::start_worker_with_env(exe, name, args, &[]).await
    }

    /// [`Node::start_worker`] with `env` added to its environment.
    pub async fn start_worker_with_env(
        exe: &Path,
        name: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Node {
        let mut command = Command::new(exe);
        command
            .args(["--role", "worker", "--node-id", name])
            .args(args)
            .envs(env.iter().copied())
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", exe.display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout);
        let mut first = String::new();
        let read = tokio::time::timeout(START_WAIT, lines.read_line(&mut first)).await;
        match read {
            Ok(Ok(n)) if n > 0 && first.contains("worker") => {}
            other => panic!("worker {name} did not start ({args:?}): {other:?} {first:?}"),
        }
        tokio::spawn(async move {
            let mut sink = Vec::new();
            let _ = lines.read_to_end(&mut sink).await;
        });
        Node {
            name: name.to_owned(),
            url: String::new(),
            banner: first.trim().to_owned(),
            child,
        }
    }

    /// Kills the process with SIGKILL (no shutdown, no cleanup: a crash) and reaps it.
    pub async fn kill(&mut self) {
        self.child.start_kill().expect("kill the node");
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("killed node exits in time")
            .expect("wait for the killed node");
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// A client of several nodes of one deployment (stateless 2026-07-28 wire, the tasks
/// extension declared on every request).
#[derive(Debug)]
pub struct Cluster {
    /// Each node's MCP endpoint.
    pub urls: Vec<String>,
    client: reqwest::Client,
    next_id: AtomicI64,
    next_node: AtomicUsize,
}

impl Cluster {
    /// A client of the nodes at `urls`.
    pub fn new(urls: Vec<String>) -> Cluster {
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(WAIT)
            .pool_max_idle_per_host(32)
            .build()
            .expect("HTTP client");
        Cluster {
            urls,
            client,
            next_id: AtomicI64::new(1),
            next_node: AtomicUsize::new(0),
        }
    }

    /// The next node in round-robin order.
    pub fn round_robin(&self) -> usize {
        self.next_node.fetch_add(1, Ordering::Relaxed) % self.urls.len()
    }

    /// Sends a request for `method` to node `node` (an index into `urls`).
    pub async fn rpc(&self, node: usize, method: &str, params: Value) -> Reply {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let to = format!("{method} to node {node}");
        post_request(
            &self.client,
            &self.urls[node],
            None,
            &to,
            request(id, method, params),
        )
        .await
    }

    /// Calls tool `name` as a task on `node`; returns the task id.
    pub async fn create_task(&self, node: usize, name: &str, arguments: Value) -> String {
        let reply = self
            .rpc(node, "tools/call", call_params(name, arguments, true))
            .await;
        let result = reply.result();
        assert_eq!(result["resultType"], "task", "{}", reply.text);
        result["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("no taskId: {}", reply.text))
            .to_owned()
    }

    /// `tasks/get` on `node`: the detailed task.
    pub async fn get_task(&self, node: usize, task_id: &str) -> Value {
        self.rpc(node, "tasks/get", task_params(task_id, true))
            .await
            .result()
            .clone()
    }

    /// `tasks/cancel` on `node`.
    pub async fn cancel_task(&self, node: usize, task_id: &str) -> Reply {
        self.rpc(node, "tasks/cancel", task_params(task_id, true))
            .await
    }

    /// `tasks/update` on `node`, answering `responses`.
    pub async fn update_task(&self, node: usize, task_id: &str, responses: Value) -> Reply {
        self.rpc(node, "tasks/update", update_params(task_id, responses))
            .await
    }

    /// Polls `tasks/get` through the nodes in round-robin order until `done` holds,
    /// within `within`; returns that task. Panics with the last state seen otherwise.
    pub async fn poll(
        &self,
        task_id: &str,
        within: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let mut last = Value::Null;
        let polled = tokio::time::timeout(within, async {
            loop {
                let task = self.get_task(self.round_robin(), task_id).await;
                if done(&task) {
                    return task;
                }
                last = task;
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        })
        .await;
        polled.unwrap_or_else(|_| {
            panic!("task {task_id} did not get there in {within:?}; last: {last}")
        })
    }

    /// Polls until the task's status is `status`.
    pub async fn poll_status(&self, task_id: &str, status: &str, within: Duration) -> Value {
        self.poll(task_id, within, |t| t["status"] == status).await
    }
}

/// POSTs the JSON-RPC `message` to `url` (bearing `token` if given) with the default and
/// standard headers, waiting at most [`WAIT`]; `what` names it in a panic.
pub async fn post_request(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    what: &str,
    message: Value,
) -> Reply {
    let mut post = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(token) = token {
        post = post.bearer_auth(token);
    }
    for (name, value) in crate::server_harness::standard_headers(&message) {
        post = post.header(name, value);
    }
    let send = post.body(message.to_string()).send();
    let response = tokio::time::timeout(WAIT, send)
        .await
        .unwrap_or_else(|_| panic!("{what}: no reply in {WAIT:?}"))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    Reply::read(response).await
}

/// The `--store` URL of process `i` of a deployment whose store answers at `urls`: one
/// URL (PostgreSQL, Redis) for every process, or a Redis Cluster's node URLs, taken in
/// turn so that each process connects through another node.
pub fn store_for(urls: &[String], i: usize) -> &str {
    assert!(!urls.is_empty(), "a store URL");
    &urls[i % urls.len()]
}

/// Asserts that `node` says (on its first line) that it uses the store at `url`, in the
/// deployment `namespace`: with a Redis Cluster's node URLs given in turn ([`store_for`]),
/// that the processes connect through different nodes. (A password in `url` would be
/// shown as `***`: not for those.)
pub fn assert_store(node: &Node, url: &str, namespace: &str) {
    let want = format!("(store: {url}, namespace {namespace})");
    assert!(
        node.banner.contains(&want),
        "node {} should say {want}: {:?}",
        node.name,
        node.banner
    );
}

/// The shared store of one test's processes: the `--store` URLs and a fresh namespace of
/// that test alone (a PostgreSQL schema, a Redis key prefix), kept while this lives.
///
/// Each constructor is `None` (after a `skipped: ...` line on stderr) when its service
/// does not answer, by the conformance kit's rules: `MCP_TEST_POSTGRES_URL` /
/// `MCP_TEST_REDIS_URL` (defaults on 127.0.0.1), `MCP_TEST_REDIS_CLUSTER_NODES` (no
/// default), and `MCP_REQUIRE_SERVICES=1` turns a missing service into a failure.
#[derive(Debug)]
pub struct NodeStore {
    /// The `--store` URLs: one (PostgreSQL, Redis), or a Redis Cluster's nodes, taken in
    /// turn by [`store_for`].
    pub urls: Vec<String>,
    /// The `--namespace`: the schema or key prefix of this test.
    pub namespace: String,
    /// Keeps the namespace: dropping the factory drops the schema or deletes the prefix's
    /// keys, also when the test panics.
    _factory: Factory,
}

/// The conformance kit's factory that made a [`NodeStore`]'s namespace.
#[derive(Debug)]
#[expect(dead_code, reason = "held only to be dropped with the NodeStore")]
enum Factory {
    Postgres(PostgresFactory),
    Redis(RedisFactory),
}

impl NodeStore {
    /// A fresh schema named after `test` on the PostgreSQL database.
    pub async fn postgres(test: &str) -> Option<NodeStore> {
        let factory = PostgresFactory::from_env()?;
        let env = Env::new(test, Limits::default());
        // The factory makes the schema fresh now and drops it when dropped.
        drop(factory.open(&env).await.expect("create the schema"));
        let url = std::env::var(PostgresFactory::URL_ENV)
            .unwrap_or_else(|_| PostgresFactory::DEFAULT_URL.to_owned());
        Some(NodeStore {
            urls: vec![url],
            namespace: PostgresFactory::schema_for(&env.namespace),
            _factory: Factory::Postgres(factory),
        })
    }

    /// A fresh key prefix named after `test` on the standalone Redis.
    pub async fn redis(test: &str) -> Option<NodeStore> {
        let factory = RedisFactory::from_env()?;
        Some(NodeStore::on_redis(factory, test, "connect").await)
    }

    /// A fresh key prefix named after `test` on the Redis Cluster, with every node's URL
    /// (so that the processes connect through different nodes).
    pub async fn redis_cluster(test: &str) -> Option<NodeStore> {
        let factory = RedisFactory::cluster_from_env()?;
        // Its open checks that the nodes are a cluster's.
        Some(NodeStore::on_redis(factory, test, "connect to the cluster").await)
    }

    async fn on_redis(factory: RedisFactory, test: &str, what: &str) -> NodeStore {
        let env = Env::new(test, Limits::default());
        // The factory deletes the prefix's keys (on every node) when dropped.
        drop(
            factory
                .open(&env)
                .await
                .unwrap_or_else(|e| panic!("{what}: {e}")),
        );
        NodeStore {
            urls: factory.nodes().to_vec(),
            namespace: RedisFactory::prefix(&env.namespace),
            _factory: Factory::Redis(factory),
        }
    }

    /// The `--store` URL of process `i` ([`store_for`]).
    pub fn url(&self, i: usize) -> &str {
        store_for(&self.urls, i)
    }

    /// The arguments of process `i` on this store: `--store` (its [`url`](Self::url)),
    /// `--namespace` and `--lease-ms 3000`.
    pub fn args(&self, i: usize) -> [&str; 6] {
        [
            "--store",
            self.url(i),
            "--namespace",
            &self.namespace,
            "--lease-ms",
            "3000",
        ]
    }
}

/// The text of a `CallToolResult`'s first content block ("" when there is none).
pub fn result_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

/// `slow_compute`'s arguments.
pub fn slow(seconds: f64, label: &str) -> Value {
    json!({ "seconds": seconds, "label": label })
}

/// A database file under the temp dir for a node's `--store sqlite:PATH`, removed (with
/// `-wal`, `-shm` and its lock) on drop.
#[derive(Debug)]
pub struct TempDb(pub std::path::PathBuf);

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm", ".lock"] {
            let mut file = self.0.clone().into_os_string();
            file.push(suffix);
            let _ = std::fs::remove_file(file);
        }
    }
}

impl TempDb {
    /// A fresh path named after `what`.
    pub fn new(what: &str) -> TempDb {
        let salt = mcp_tasks::TaskId::random().expect("random");
        TempDb(std::env::temp_dir().join(format!(
            "mcp-tests-{what}-{}-{}.sqlite3",
            std::process::id(),
            &salt.as_str()[..12]
        )))
    }

    /// The `--store` argument: `sqlite:PATH`.
    pub fn store(&self) -> String {
        format!("sqlite:{}", self.0.display())
    }
}
