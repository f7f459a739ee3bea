//! The demo server's `/metrics` (`--metrics ADDR`, Prometheus text format) after a run:
//! the series exist with the right labels and counts.
//!
//! - one node (memory store): request durations by method, tool, protocol version and
//!   error; tasks created, finished and their durations by tool, status and error type
//!   (`tool_error` for a result with `isError`, none for a plain completion); runs in
//!   progress back at zero; store operations by backend, operation and error kind; the
//!   store's tasks by status;
//! - one node on SQLite: its store operations and tasks by status;
//! - an API node and a worker node on PostgreSQL: the worker's claims and queue waits,
//!   the API node's creations, both nodes' store operations and tasks by status.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use mcp_tasks::Limits;
use mcp_tasks::conformance::{Env, PostgresFactory, StoreFactory};
use mcp_tests::node_harness::{Cluster, Node, TempDb, slow};
use mcp_tests::server_harness::{WAIT, call_params, task_params};
use serde_json::json;

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");

/// One sample: its labels and value.
type Samples = Vec<(BTreeMap<String, String>, f64)>;

/// Parses the text format into samples by series name (comments skipped). Label values
/// here hold no `,` or `"`.
fn parse(text: &str) -> BTreeMap<String, Samples> {
    let mut series: BTreeMap<String, Samples> = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (head, value) = line.rsplit_once(' ').expect("NAME VALUE");
        let value: f64 = value.parse().expect("a number");
        let (name, labels) = match head.split_once('{') {
            Some((name, rest)) => {
                let inner = rest.strip_suffix('}').expect("closing brace");
                let labels = inner
                    .split(',')
                    .map(|kv| {
                        let (k, v) = kv.split_once('=').expect("k=v");
                        (k.to_owned(), v.trim_matches('"').to_owned())
                    })
                    .collect();
                (name, labels)
            }
            None => (head, BTreeMap::new()),
        };
        series
            .entry(name.to_owned())
            .or_default()
            .push((labels, value));
    }
    series
}

/// The value of series `name` whose labels are exactly `labels`; panics listing the
/// series' samples when there is none.
fn value(series: &BTreeMap<String, Samples>, name: &str, labels: &[(&str, &str)]) -> f64 {
    let wanted: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let samples = series
        .get(name)
        .unwrap_or_else(|| panic!("no series {name}; have {:?}", series.keys()));
    samples
        .iter()
        .find(|(l, _)| *l == wanted)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no {name}{wanted:?}; have {samples:#?}"))
}

/// A free port on 127.0.0.1 for `--metrics`.
async fn free_addr() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    listener.local_addr().expect("address").to_string()
}

async fn scrape(addr: &str) -> BTreeMap<String, Samples> {
    let url = format!("http://{addr}/metrics");
    let response = tokio::time::timeout(WAIT, reqwest::get(&url))
        .await
        .expect("scrape in time")
        .expect("scrape");
    assert!(response.status().is_success());
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    parse(&response.text().await.expect("body"))
}

/// Scrapes until `ready` holds (bounded by [`WAIT`]): the runs' last writes land just
/// after their tasks read as finished.
async fn scrape_until(
    addr: &str,
    ready: impl Fn(&BTreeMap<String, Samples>) -> bool,
) -> BTreeMap<String, Samples> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let series = scrape(addr).await;
        if ready(&series) || tokio::time::Instant::now() >= deadline {
            return series;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The count of store operations `operation` on `system`, failed with `error` (or not).
fn store_ops(
    series: &BTreeMap<String, Samples>,
    system: &str,
    operation: &str,
    error: Option<&str>,
) -> f64 {
    let mut labels = vec![("db_operation_name", operation), ("db_system_name", system)];
    labels.extend(error.map(|e| ("error_type", e)));
    value(
        series,
        "db_client_operation_duration_seconds_count",
        &labels,
    )
}

/// Whether `mcp_task_live` says `n` tasks of status `status`.
fn live_is(series: &BTreeMap<String, Samples>, status: &str, n: f64) -> bool {
    series.get("mcp_task_live").is_some_and(|samples| {
        samples
            .iter()
            .any(|(l, v)| l.get("mcp_task_status").map(String::as_str) == Some(status) && *v == n)
    })
}

/// Counting every 100 ms, for the `mcp_task_live` checks.
const LIVE_EVERY: [&str; 2] = ["--live-tasks-every-ms", "100"];

fn has(series: &BTreeMap<String, Samples>, name: &str, labels: &[(&str, &str)]) -> bool {
    series.get(name).is_some_and(|samples| {
        samples.iter().any(|(l, _)| {
            labels
                .iter()
                .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_and_tasks() {
    let metrics = free_addr().await;
    let node = Node::start(
        Path::new(DEMO),
        "M",
        &[
            &["--store", "memory", "--metrics", metrics.as_str()],
            &LIVE_EVERY[..],
        ]
        .concat(),
    )
    .await;
    let cluster = Cluster::new(vec![node.url.clone()]);
    // A task the store does not know: its read fails as not found.
    let unknown = mcp_tasks::TaskId::random().expect("an id").to_string();
    cluster
        .rpc(0, "tasks/get", task_params(&unknown, true))
        .await
        .error_code();
    for _ in 0..3 {
        cluster
            .rpc(
                0,
                "tools/call",
                call_params("greet", json!({ "name": "m" }), false),
            )
            .await
            .result();
    }
    let refused = cluster
        .rpc(
            0,
            "tools/call",
            call_params("no_such_tool", json!({}), false),
        )
        .await
        .error_code()
        .to_string();
    let a = cluster.create_task(0, "slow_compute", slow(0.1, "a")).await;
    let b = cluster.create_task(0, "slow_compute", slow(0.1, "b")).await;
    let failing = cluster.create_task(0, "failing_job", json!({})).await;
    for id in [&a, &b, &failing] {
        cluster.poll_status(id, "completed", WAIT).await;
    }
    let series = scrape_until(&metrics, |s| {
        has(
            s,
            "mcp_task_finished_total",
            &[("gen_ai_tool_name", "failing_job")],
        ) && s
            .get("mcp_task_finished_total")
            .is_some_and(|v| v.len() == 2)
            && live_is(s, "completed", 3.0)
    })
    .await;

    // The store's operations, by backend and operation; a failed one by its error kind.
    assert_eq!(store_ops(&series, "memory", "create_leased", None), 3.0);
    assert!(
        store_ops(&series, "memory", "get", None) >= 3.0,
        "the polls"
    );
    assert_eq!(
        store_ops(&series, "memory", "get", Some("not_found")),
        1.0,
        "the unknown task"
    );
    assert!(store_ops(&series, "memory", "complete", None) >= 3.0);
    assert!(store_ops(&series, "memory", "operator_counts", None) >= 1.0);
    // The store's tasks by status.
    for (status, n) in [
        ("completed", 3.0),
        ("working", 0.0),
        ("input_required", 0.0),
        ("failed", 0.0),
        ("cancelled", 0.0),
    ] {
        assert_eq!(
            value(&series, "mcp_task_live", &[("mcp_task_status", status)]),
            n,
            "{status}"
        );
    }

    let op = "mcp_server_operation_duration_seconds_count";
    let v = "2026-07-28";
    assert_eq!(
        value(
            &series,
            op,
            &[
                ("gen_ai_tool_name", "greet"),
                ("mcp_method_name", "tools/call"),
                ("mcp_protocol_version", v)
            ]
        ),
        3.0
    );
    assert_eq!(
        value(
            &series,
            op,
            &[
                ("gen_ai_tool_name", "slow_compute"),
                ("mcp_method_name", "tools/call"),
                ("mcp_protocol_version", v)
            ]
        ),
        2.0
    );
    // A call the server refused: the error code, and no tool name (labels stay bounded).
    assert_eq!(
        value(
            &series,
            op,
            &[
                ("error_type", refused.as_str()),
                ("mcp_method_name", "tools/call"),
                ("mcp_protocol_version", v)
            ]
        ),
        1.0
    );
    assert!(
        value(
            &series,
            op,
            &[
                ("mcp_method_name", "tasks/get"),
                ("mcp_protocol_version", v)
            ]
        ) >= 3.0,
        "the polls"
    );
    let buckets = &series["mcp_server_operation_duration_seconds_bucket"];
    assert!(
        buckets
            .iter()
            .any(|(l, n)| l.get("le").map(String::as_str) == Some("+Inf")
                && l.get("gen_ai_tool_name").map(String::as_str) == Some("greet")
                && *n == 3.0),
        "{buckets:#?}"
    );

    let created = "mcp_task_created_total";
    assert_eq!(
        value(&series, created, &[("gen_ai_tool_name", "slow_compute")]),
        2.0
    );
    assert_eq!(
        value(&series, created, &[("gen_ai_tool_name", "failing_job")]),
        1.0
    );
    let finished = "mcp_task_finished_total";
    let done = |tool| [("gen_ai_tool_name", tool), ("mcp_task_status", "completed")];
    // A completion is counted without an error type (the labels are matched exactly);
    // a result with `isError` is completed too, with `error.type` `tool_error`.
    assert_eq!(value(&series, finished, &done("slow_compute")), 2.0);
    let tool_error = [
        ("error_type", "tool_error"),
        ("gen_ai_tool_name", "failing_job"),
        ("mcp_task_status", "completed"),
    ];
    assert_eq!(value(&series, finished, &tool_error), 1.0);
    assert!(
        series[finished]
            .iter()
            .filter(|(l, _)| l.get("gen_ai_tool_name").map(String::as_str) == Some("failing_job"))
            .all(|(l, _)| l.get("error_type").map(String::as_str) == Some("tool_error")),
        "a tool error is never a plain completion: {:#?}",
        series[finished]
    );
    assert_eq!(
        value(&series, "mcp_task_duration_seconds_count", &tool_error),
        1.0
    );
    assert_eq!(
        value(
            &series,
            "mcp_task_duration_seconds_count",
            &done("slow_compute")
        ),
        2.0
    );
    assert!(
        value(
            &series,
            "mcp_task_duration_seconds_sum",
            &done("slow_compute")
        ) >= 0.2
    );
    assert_eq!(
        value(
            &series,
            "mcp_task_running",
            &[("gen_ai_tool_name", "slow_compute")]
        ),
        0.0
    );
    // No series is labelled with a task id.
    for samples in series.values() {
        for (labels, _) in samples {
            assert!(
                labels.values().all(|v| v != &a && v != &b && v != &failing),
                "{labels:?}"
            );
        }
    }
    drop(node);
}

/// On SQLite: the store's operations by the backend's name, and its tasks by status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_operations_and_live_tasks() {
    let db = TempDb::new("metrics");
    let store = db.store();
    let metrics = free_addr().await;
    let args = [
        &["--store", store.as_str(), "--metrics", metrics.as_str()][..],
        &LIVE_EVERY[..],
    ]
    .concat();
    let node = Node::start(Path::new(DEMO), "S", &args).await;
    let cluster = Cluster::new(vec![node.url.clone()]);
    let done = cluster
        .create_task(0, "slow_compute", slow(0.05, "s1"))
        .await;
    let waiting = cluster
        .create_task(0, "confirm_delete", json!({ "filename": "s.txt" }))
        .await;
    cluster.poll_status(&done, "completed", WAIT).await;
    cluster.poll_status(&waiting, "input_required", WAIT).await;
    let series = scrape_until(&metrics, |s| {
        live_is(s, "completed", 1.0) && live_is(s, "input_required", 1.0)
    })
    .await;
    assert_eq!(
        value(
            &series,
            "mcp_task_live",
            &[("mcp_task_status", "completed")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &series,
            "mcp_task_live",
            &[("mcp_task_status", "input_required")]
        ),
        1.0
    );
    assert_eq!(store_ops(&series, "sqlite", "create_leased", None), 2.0);
    assert!(store_ops(&series, "sqlite", "request_input", None) >= 1.0);
    assert!(store_ops(&series, "sqlite", "set_status_message", None) >= 1.0);
    assert!(
        !series
            .get("db_client_operation_duration_seconds_count")
            .is_some_and(|v| v
                .iter()
                .any(|(l, _)| l.get("db_system_name").map(String::as_str) != Some("sqlite"))),
        "one backend"
    );
    drop(node);
    drop(db);
}

/// On PostgreSQL with an API node and a worker node: the worker counts its claims, the
/// time each task waited for it and the tasks it finished; the API node the creations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_counts_its_claims_and_queue_waits() {
    let Some(factory) = PostgresFactory::from_env() else {
        return;
    };
    let env = Env::new("metrics", Limits::default());
    drop(factory.open(&env).await.expect("create the schema"));
    let url = std::env::var(PostgresFactory::URL_ENV)
        .unwrap_or_else(|_| PostgresFactory::DEFAULT_URL.to_owned());
    let schema = PostgresFactory::schema_for(&env.namespace);
    let (api_metrics, worker_metrics) = (free_addr().await, free_addr().await);
    let store = ["--store", url.as_str(), "--namespace", schema.as_str()];
    let api_args = [
        &["--role", "api", "--metrics", api_metrics.as_str()],
        &store[..],
        &LIVE_EVERY[..],
    ]
    .concat();
    let api = Node::start(Path::new(DEMO), "A", &api_args).await;
    let worker_args = [&["--metrics", worker_metrics.as_str()], &store[..]].concat();
    let worker = Node::start_worker(Path::new(DEMO), "W", &worker_args).await;
    let cluster = Cluster::new(vec![api.url.clone()]);
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(
            cluster
                .create_task(0, "slow_compute", slow(0.05, &format!("q{i}")))
                .await,
        );
    }
    for id in &ids {
        cluster.poll_status(id, "completed", WAIT).await;
    }
    let tool = [("gen_ai_tool_name", "slow_compute")];
    let on_worker = scrape_until(&worker_metrics, |s| {
        s.get("mcp_task_finished_total")
            .is_some_and(|v| v.iter().any(|(_, n)| *n == 3.0))
    })
    .await;
    assert_eq!(value(&on_worker, "mcp_task_claims_total", &tool), 3.0);
    assert_eq!(
        value(&on_worker, "mcp_task_queue_duration_seconds_count", &tool),
        3.0
    );
    assert_eq!(
        value(
            &on_worker,
            "mcp_task_finished_total",
            &[
                ("gen_ai_tool_name", "slow_compute"),
                ("mcp_task_status", "completed")
            ]
        ),
        3.0
    );
    assert!(store_ops(&on_worker, "postgresql", "claim_next", None) >= 3.0);
    assert!(store_ops(&on_worker, "postgresql", "complete", None) >= 3.0);
    let on_api = scrape_until(&api_metrics, |s| live_is(s, "completed", 3.0)).await;
    assert_eq!(value(&on_api, "mcp_task_created_total", &tool), 3.0);
    assert_eq!(store_ops(&on_api, "postgresql", "create", None), 3.0);
    assert_eq!(
        value(
            &on_api,
            "mcp_task_live",
            &[("mcp_task_status", "completed")]
        ),
        3.0,
        "the tasks the worker finished, counted in the shared store"
    );
    assert!(
        !on_api.contains_key("mcp_task_claims_total"),
        "an API node claims nothing"
    );
    drop((api, worker));
}
