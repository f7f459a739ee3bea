//! A task's 10,000 events read through a connection cut at 20 random points (issue 48's
//! acceptance): the client resumes each time with `after` = the last `seq` it yielded,
//! and every sequence number arrives exactly once, in order. In one process on the
//! memory store, and across processes on PostgreSQL and on Redis (the stream held by an
//! API node, the tool run by a worker). The cuts come from a `TcpProxy` between the
//! client and the node that serves the stream; their points and lengths from a seeded
//! generator (the seed is printed, so a failure can be replayed with `CUTS_SEED`).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use mcp_tasks::conformance::TcpProxy;
use mcp_tasks::{Limits, MemoryStore};
use mcp_tasks_client::{
    ClientConfig, DeclineAll, DriverConfig, McpClient, Revision, Started, TaskHandle,
};
use mcp_tasks_protocol::tasks::TaskStatus;
use mcp_tasks_server::http::HttpConfig;
use mcp_tasks_server::{RuntimeConfig, Server};
use mcp_tests::node_harness::{Node, NodeStore};
use mcp_tests::server_harness::{TestServer, demo_tools};
use serde_json::json;

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
/// Lines of build output the tool writes: 10,000 events of its own.
const STEPS: u64 = 10_000;
/// Each node's log retention: every event of the task kept, so that a reader starved by
/// a loaded machine (the writer far ahead) is tested for exactly-once delivery, not for
/// `events_gone`, which task_streams.rs tests.
const KEEP_ENTRIES: &str = "20000";
const KEEP_BYTES: &str = "67108864";
const CUTS: usize = 20;
/// The bound of a whole scenario.
const WAIT: Duration = Duration::from_secs(240);

fn config() -> ClientConfig {
    ClientConfig {
        request_timeout: Duration::from_secs(10),
        revision: Revision::V2026_07_28,
        driver: DriverConfig {
            default_poll: Duration::from_millis(50),
            min_poll: Duration::from_millis(10),
            max_poll: Duration::from_millis(200),
            stream_retries: 200,
            max_wait: WAIT,
            ..DriverConfig::default()
        },
        ..ClientConfig::default()
    }
}

/// A small xorshift generator: the cut points and lengths, from a printed seed.
struct Cuts(u64);

impl Cuts {
    fn new() -> Cuts {
        let seed = std::env::var("CUTS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
                    | 1
            });
        eprintln!("task_streams_cuts: CUTS_SEED={seed}");
        Cuts(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

async fn build_log(client: &McpClient, interval_ms: u64) -> TaskHandle {
    let arguments = json!({ "steps": STEPS, "interval_ms": interval_ms });
    let arguments = arguments.as_object().cloned().expect("an object");
    match client.call_tool_as_task("build_log", arguments).await {
        Ok(Started::Task(handle)) => *handle,
        Ok(Started::Done(result)) => panic!("build_log ran synchronously: {result:?}"),
        Err(e) => panic!("build_log: {e}"),
    }
}

/// Reads every event of `task` through `proxy`, cutting it `CUTS` times at random
/// points (after a random number of new events) for a random 20-200 ms; checks each
/// `seq` came once, in order, up to the terminal event.
async fn read_through_cuts(proxy: &TcpProxy, task: &TaskHandle) {
    let mut events = task.events();
    let read = Arc::new(AtomicU64::new(0));
    let reader = tokio::spawn({
        let read = Arc::clone(&read);
        async move {
            let mut seqs = Vec::new();
            let mut last_status = None;
            while let Some(next) = events.next().await {
                let event = next.unwrap_or_else(|e| panic!("after {} events: {e}", seqs.len()));
                if let Some(status) = event.status() {
                    last_status = Some(status);
                }
                seqs.push(event.seq);
                read.store(seqs.len() as u64, Ordering::Relaxed);
            }
            (seqs, last_status, events.resumes())
        }
    });
    let mut cuts = Cuts::new();
    let started = Instant::now();
    for _ in 0..CUTS {
        // The next cut after 1 to 400 more events (or when the task may have ended).
        let target = read.load(Ordering::Relaxed) + 1 + cuts.below(400);
        while read.load(Ordering::Relaxed) < target && !reader.is_finished() {
            assert!(started.elapsed() < WAIT, "the reader stalled at {target}");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        proxy.cut();
        tokio::time::sleep(Duration::from_millis(20 + cuts.below(180))).await;
        proxy.restore();
    }
    let (seqs, last_status, resumes) = tokio::time::timeout(WAIT, reader)
        .await
        .expect("the reader ends in time")
        .expect("the reader did not panic");
    let n = seqs.len() as u64;
    assert!(n > STEPS, "every line and the task's own entries: {n}");
    assert!(
        seqs.iter().copied().eq(0..n),
        "every seq once, in order (first wrong at {:?})",
        seqs.iter().zip(0..).find(|(s, i)| **s != *i)
    );
    assert_eq!(last_status, Some(TaskStatus::Completed));
    eprintln!(
        "task_streams_cuts: {n} events through {CUTS} cuts, {resumes} resumes, {:?}",
        started.elapsed()
    );
    assert!(resumes >= 1, "resumed after the cuts: {resumes}");
}

/// Starts `build_log` (one line a millisecond) through a proxy in front of the server at
/// `url` (its retention keeping every line: `KEEP_ENTRIES`), and reads it through the
/// proxy's cuts.
async fn build_log_through_cuts(url: &str) {
    let (proxy, proxied) = TcpProxy::in_front_of(url).await.expect("proxy");
    let client = McpClient::connect_http(&proxied, Arc::new(DeclineAll), config())
        .await
        .expect("connect");
    let task = build_log(&client, 1).await;
    tokio::time::timeout(WAIT, read_through_cuts(&proxy, &task))
        .await
        .expect("in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_events_through_twenty_cuts_in_one_process() {
    let limits = Limits {
        max_log_entries: KEEP_ENTRIES.parse().expect("a count"),
        max_log_bytes: KEEP_BYTES.parse().expect("a size"),
        ..Limits::default()
    };
    let mut builder = Server::builder("mcp-tests", "0")
        .store(Arc::new(MemoryStore::new(limits)))
        .runtime(RuntimeConfig::default());
    for tool in demo_tools() {
        builder = builder.tool(tool);
    }
    let s = TestServer::start_server(builder.build(), HttpConfig::default()).await;
    build_log_through_cuts(&s.url).await;
}

/// An API node serving the stream through the proxy, a worker running the tool.
async fn across_nodes(store: &NodeStore) {
    let keep = [
        "--max-log-entries",
        KEEP_ENTRIES,
        "--max-log-bytes",
        KEEP_BYTES,
    ];
    let mut common = store.args(0).to_vec();
    common.extend(keep);
    let mut api = common.clone();
    api.extend(["--role", "api"]);
    let (node, worker) = tokio::join!(
        Node::start(Path::new(DEMO), "A", &api),
        Node::start_worker(Path::new(DEMO), "W1", &common),
    );
    build_log_through_cuts(&node.url).await;
    // kill_on_drop: both processes end here, and on any panic above.
    drop((node, worker));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_events_through_twenty_cuts_across_nodes_on_postgres() {
    if let Some(store) = NodeStore::postgres("streams_cuts").await {
        across_nodes(&store).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_events_through_twenty_cuts_across_nodes_on_redis() {
    if let Some(store) = NodeStore::redis("streams_cuts").await {
        across_nodes(&store).await;
    }
}
