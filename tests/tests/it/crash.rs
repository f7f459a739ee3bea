//! Crash recovery, with real processes killed by SIGKILL (no shutdown, no cleanup):
//!
//! - PostgreSQL (and the same on Redis), two instances with 2 s leases: when A dies, B's
//!   sweep recovers A's unfinished tasks within about one lease period plus a sweep
//!   (bounded by 3 leases): the one waiting for input (`confirm_delete`, at most once)
//!   fails with the "worker lost" error, the running `slow_compute` (at least once) runs
//!   again on B as attempt 2; B's own running task is untouched;
//!   every task completed before the kill reads back exactly as before.
//! - SQLite, one instance: a new process started on the same file recovers the tasks the
//!   killed one left unfinished before it serves anything (the one waiting for input, at
//!   most once, fails as worker lost; the running `slow_compute`, at least once, runs
//!   again as attempt 2); completed tasks are intact, and the new process runs new tasks.
//!
//! PostgreSQL and Redis are each skipped only when they do not answer
//! (`MCP_TEST_POSTGRES_URL`, `MCP_TEST_REDIS_URL`; `MCP_REQUIRE_SERVICES=1` makes that a
//! failure).

use std::path::Path;
use std::time::{Duration, Instant};

use mcp_tasks::Limits;
use mcp_tasks::conformance::{Env, PostgresFactory, RedisFactory, StoreFactory};
use mcp_tasks_server::WORKER_LOST_MESSAGE;
use mcp_tests::node_harness::{Cluster, Node, TempDb, result_text, slow};
use mcp_tests::server_harness::WAIT;
use serde_json::{Value, json};

const DEMO: &str = env!("CARGO_BIN_EXE_demo-server");
const LEASE: Duration = Duration::from_secs(2);

/// Runs a few short tasks on `node` to completion; returns their ids and final states.
async fn completed_tasks(cluster: &Cluster, node: usize) -> Vec<(String, Value)> {
    let mut done = Vec::new();
    for i in 0..4 {
        let label = format!("before-crash-{i}");
        let id = cluster
            .create_task(node, "slow_compute", slow(0.1, &label))
            .await;
        let task = cluster.poll_status(&id, "completed", WAIT).await;
        assert_eq!(
            result_text(&task["result"]),
            format!("{label}: done after 0.1 s"),
            "{task}"
        );
        done.push((id, task));
    }
    done
}

/// Tasks on `node` left unfinished by a crash: one running, one waiting for input.
async fn unfinished_tasks(cluster: &Cluster, node: usize) -> Vec<String> {
    let running = cluster
        .create_task(node, "slow_compute", slow(600.0, "interrupted"))
        .await;
    let waiting = cluster
        .create_task(node, "confirm_delete", json!({ "filename": "b.txt" }))
        .await;
    cluster.poll_status(&running, "working", WAIT).await;
    cluster.poll_status(&waiting, "input_required", WAIT).await;
    vec![running, waiting]
}

fn assert_worker_lost(task: &Value) {
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["error"]["message"], WORKER_LOST_MESSAGE, "{task}");
    assert!(task["error"]["code"].is_i64(), "{task}");
}

/// What a restarted SQLite server (through `cluster`'s only node) did with the tasks of
/// [`unfinished_tasks`] that the killed process left: the one waiting for input
/// (`confirm_delete`, at most once) failed as worker lost before anything was served; the
/// running `slow_compute` (at least once) runs again, as attempt 2 (cancelled here).
async fn assert_recovered_on_restart(cluster: &Cluster, orphans: &[String]) {
    assert_worker_lost(&cluster.get_task(0, &orphans[1]).await);
    let rerun = cluster
        .poll(&orphans[0], WAIT, |t| {
            t["statusMessage"]
                .as_str()
                .is_some_and(|m| m.contains("(attempt 2)"))
        })
        .await;
    assert_eq!(rerun["status"], "working", "{rerun}");
    cluster.cancel_task(0, &orphans[0]).await.result();
    cluster.poll_status(&orphans[0], "cancelled", WAIT).await;
}

/// Completed tasks read back (through `node`) exactly as they were.
async fn assert_intact(cluster: &Cluster, node: usize, completed: &[(String, Value)]) {
    for (id, before) in completed {
        let after = cluster.get_task(node, id).await;
        assert_eq!(&after, before, "a completed task changed");
    }
}

/// Two instances on `url` / `namespace`; A is killed; B fails A's unfinished tasks.
async fn peer_fails_the_tasks_of_a_killed_instance(url: &str, namespace: &str) {
    let lease_ms = LEASE.as_millis().to_string();
    let args = [
        "--store",
        url,
        "--namespace",
        namespace,
        "--lease-ms",
        lease_ms.as_str(),
    ];
    let (mut a, b) = tokio::join!(
        Node::start(Path::new(DEMO), "A", &args),
        Node::start(Path::new(DEMO), "B", &args),
    );
    let cluster = Cluster::new(vec![a.url.clone(), b.url.clone()]);
    const A: usize = 0;
    const B: usize = 1;

    let completed = completed_tasks(&cluster, A).await;
    let orphans = unfinished_tasks(&cluster, A).await;
    let survivor = cluster
        .create_task(B, "slow_compute", slow(600.0, "survivor"))
        .await;
    // Longer than a lease: A renews its leases while alive, so nothing fails yet.
    tokio::time::sleep(LEASE + Duration::from_millis(500)).await;
    for id in &orphans {
        let task = cluster.get_task(B, id).await;
        assert_ne!(task["status"], "failed", "failed while A was alive: {task}");
    }

    a.kill().await;
    let killed = Instant::now();
    // Only B answers from now on.
    let only_b = Cluster::new(vec![b.url.clone()]);
    let bound = LEASE * 3;
    // `confirm_delete` is delivered at most once: it fails.
    let task = only_b
        .poll(&orphans[1], bound.saturating_sub(killed.elapsed()), |t| {
            t["status"] == "failed"
        })
        .await;
    assert_worker_lost(&task);
    // `slow_compute` is delivered at least once: B runs it again.
    let rerun = only_b
        .poll(&orphans[0], bound.saturating_sub(killed.elapsed()), |t| {
            t["statusMessage"]
                .as_str()
                .is_some_and(|m| m.contains("(attempt 2)"))
        })
        .await;
    assert_eq!(rerun["status"], "working", "{rerun}");
    eprintln!(
        "A's unfinished tasks failed {:?} after the kill (lease {LEASE:?})",
        killed.elapsed()
    );
    assert_intact(&only_b, 0, &completed).await;
    let task = only_b.get_task(0, &survivor).await;
    assert_eq!(
        task["status"], "working",
        "B's own task must run on: {task}"
    );
    for id in [&survivor, &orphans[0]] {
        only_b.cancel_task(0, id).await.result();
        only_b.poll_status(id, "cancelled", WAIT).await;
    }
    drop(b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_peer_fails_the_tasks_of_a_killed_instance() {
    let Some(factory) = PostgresFactory::from_env() else {
        return;
    };
    let env = Env::new("crash", Limits::default());
    // A fresh schema, dropped when the factory is.
    drop(factory.open(&env).await.expect("create the schema"));
    let url = std::env::var(PostgresFactory::URL_ENV)
        .unwrap_or_else(|_| PostgresFactory::DEFAULT_URL.to_owned());
    peer_fails_the_tasks_of_a_killed_instance(&url, &PostgresFactory::schema_for(&env.namespace))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_peer_fails_the_tasks_of_a_killed_instance() {
    let Some(factory) = RedisFactory::from_env() else {
        return;
    };
    let env = Env::new("crash", Limits::default());
    // The prefix's keys are deleted when the factory is dropped.
    drop(factory.open(&env).await.expect("connect"));
    let url = std::env::var(RedisFactory::URL_VAR)
        .unwrap_or_else(|_| RedisFactory::DEFAULT_URL.to_owned());
    peer_fails_the_tasks_of_a_killed_instance(&url, &RedisFactory::prefix(&env.namespace)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_restart_recovers_the_tasks_a_killed_process_left() {
    let db = TempDb::new("crash");
    let store = format!("sqlite:{}", db.0.display());
    let args = ["--store", store.as_str()];

    let mut first = Node::start(Path::new(DEMO), "first", &args).await;
    let cluster = Cluster::new(vec![first.url.clone()]);
    let completed = completed_tasks(&cluster, 0).await;
    let orphans = unfinished_tasks(&cluster, 0).await;
    first.kill().await;
    assert!(!first.is_running());

    let second = Node::start(Path::new(DEMO), "second", &args).await;
    let cluster = Cluster::new(vec![second.url.clone()]);
    // The restart recovered them before serving.
    assert_recovered_on_restart(&cluster, &orphans).await;
    assert_intact(&cluster, 0, &completed).await;
    // The restarted server works.
    let id = cluster
        .create_task(0, "slow_compute", slow(0.1, "after-restart"))
        .await;
    let task = cluster.poll_status(&id, "completed", WAIT).await;
    assert_eq!(
        result_text(&task["result"]),
        "after-restart: done after 0.1 s"
    );
    drop(second);
}

/// A second server process on a SQLite file another one serves is refused, naming the
/// first; the first one's running tasks are untouched (before, the second one's start-up
/// recovery failed them as worker lost). After the first is killed, the file is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_on_one_sqlite_file_is_refused() {
    let db = TempDb::new("second");
    let store = format!("sqlite:{}", db.0.display());
    let args = ["--store", store.as_str()];
    let mut first = Node::start(Path::new(DEMO), "first", &args).await;
    let pid = first.pid().expect("running");
    let cluster = Cluster::new(vec![first.url.clone()]);
    let running = unfinished_tasks(&cluster, 0).await;

    for extra in [&["--http", "127.0.0.1:0"][..], &["--stdio"][..]] {
        let refused = tokio::time::timeout(
            WAIT,
            tokio::process::Command::new(DEMO)
                .args(args)
                .args(extra)
                .stdin(std::process::Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("the second process exits in time")
        .expect("run the second process");
        assert!(!refused.status.success(), "{extra:?}: {refused:?}");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(
            said.contains(&format!("is in use by process {pid}")),
            "{extra:?}: names the holder: {said}"
        );
        assert!(
            said.contains(&db.0.display().to_string()),
            "names the file: {said}"
        );
    }
    // The first server's tasks run on, untouched.
    assert_eq!(cluster.get_task(0, &running[0]).await["status"], "working");
    assert_eq!(
        cluster.get_task(0, &running[1]).await["status"],
        "input_required"
    );

    first.kill().await;
    let second = Node::start(Path::new(DEMO), "second", &args).await;
    let cluster = Cluster::new(vec![second.url.clone()]);
    assert_recovered_on_restart(&cluster, &running).await;
}
