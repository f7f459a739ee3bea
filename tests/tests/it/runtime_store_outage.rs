//! The runtime while its store is unavailable (in process, on a [`DeafStore`] the test
//! takes down and brings back): lease renewals and terminal writes are retried, so an
//! outage shorter than the lease loses nothing; a longer one stops the tool and the task
//! is recovered as after a worker crash (at least once: it waits for a worker again; at
//! most once: failed as worker lost, saying the store was unavailable); a shutdown during an outage gives up the unwritten outcome after its grace
//! periods, and another node's sweep then fails the task as worker lost.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::{Delivery, Outcome, Owner, TaskId, TaskRecord, TaskStore};
use mcp_tasks_protocol::tasks::TaskStatus;
use mcp_tasks_server::{LEASE_LAPSED_MESSAGE, RuntimeConfig, TaskRuntime, WORKER_LOST_MESSAGE};
use mcp_tests::deaf_store::{Deaf, DeafStore};
use mcp_tests::server_harness::{launch_demo_job, launch_demo_task};
use serde_json::json;

fn owner() -> Owner {
    Owner::new("outage")
}

fn config(lease_ms: u64) -> RuntimeConfig {
    RuntimeConfig {
        lease: Duration::from_millis(lease_ms),
        renew_every: Duration::from_millis(lease_ms / 5),
        sweep_every: Duration::from_millis(100),
        shutdown_grace: Duration::from_millis(200),
        ..RuntimeConfig::default()
    }
}

async fn launch_slow(runtime: &TaskRuntime, seconds: f64) -> TaskId {
    let args = json!({ "seconds": seconds, "label": "job" });
    launch_demo_task(runtime, &owner(), "slow_compute", args).await
}

async fn wait_terminal(store: &DeafStore, id: &TaskId) -> TaskRecord {
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(rec) = store.get(&owner(), id).await
                && rec.is_terminal()
            {
                return rec;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    waited.unwrap_or_else(|_| panic!("task {id} did not finish in time"))
}

fn result_text(rec: &TaskRecord) -> String {
    match &rec.outcome {
        Some(Outcome::Result(r)) => r["content"][0]["text"].as_str().unwrap_or("").to_owned(),
        other => panic!("no result: {other:?} ({rec:?})"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_shorter_than_the_lease_loses_nothing() {
    let store = Arc::new(Deaf::store());
    let runtime = TaskRuntime::start(store.clone(), config(2_000));
    // One tool finishes during the outage; the other runs through it (its renewals fail,
    // then succeed again).
    let short = launch_slow(&runtime, 0.3).await;
    let long = launch_slow(&runtime, 2.5).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    store.layer().set_down(true);
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        runtime.running_count(),
        2,
        "the finished tool's outcome waits for the store"
    );
    store.layer().set_down(false);

    for (id, text) in [
        (&short, "job: done after 0.3 s"),
        (&long, "job: done after 2.5 s"),
    ] {
        let rec = wait_terminal(&store, id).await;
        assert_eq!(rec.status, TaskStatus::Completed, "{rec:?}");
        assert_eq!(result_text(&rec), text);
    }
    tokio::time::timeout(Duration::from_secs(5), runtime.shutdown())
        .await
        .expect("shutdown in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_longer_than_the_lease_requeues_an_at_least_once_task() {
    let store = Arc::new(Deaf::store());
    let runtime = TaskRuntime::start(store.clone(), config(500));
    // slow_compute is at least once (3 runs).
    let args = json!({ "seconds": 30.0, "label": "job" });
    let delivery = Delivery::AtLeastOnce { max_attempts: 3 };
    let id = launch_demo_job(&runtime, &owner(), "slow_compute", args, delivery).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    store.layer().set_down(true);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    store.layer().set_down(false);

    // No worker loop here: the task waits for one, its first run counted, nothing
    // written over it.
    let waiting = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(rec) = store.get(&owner(), &id).await
                && rec.lease.is_none()
            {
                return rec;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the task is recovered once the store is back");
    assert_eq!(waiting.status, TaskStatus::Working, "{waiting:?}");
    assert_eq!(waiting.outcome, None, "{waiting:?}");
    assert_eq!(waiting.queued_tool(), Some("slow_compute"), "{waiting:?}");
    assert_eq!(waiting.attempt(), 1, "{waiting:?}");
    assert_eq!(runtime.running_count(), 0);
    tokio::time::timeout(Duration::from_secs(5), runtime.shutdown())
        .await
        .expect("shutdown in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_longer_than_the_lease_fails_an_at_most_once_task_as_worker_lost() {
    let store = Arc::new(Deaf::store());
    let runtime = TaskRuntime::start(store.clone(), config(500));
    // confirm_delete is at most once; it waits for its answer through the outage.
    let args = json!({ "filename": "lost.txt" });
    let delivery = Delivery::AtMostOnce;
    let id = launch_demo_job(&runtime, &owner(), "confirm_delete", args, delivery).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    store.layer().set_down(true);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    store.layer().set_down(false);

    let rec = wait_terminal(&store, &id).await;
    assert_eq!(rec.status, TaskStatus::Failed, "{rec:?}");
    match &rec.outcome {
        Some(Outcome::Error(e)) => assert_eq!(e.message, LEASE_LAPSED_MESSAGE),
        other => panic!("no error: {other:?}"),
    }
    assert_eq!(rec.status_message.as_deref(), Some(LEASE_LAPSED_MESSAGE));
    tokio::time::timeout(Duration::from_secs(5), runtime.shutdown())
        .await
        .expect("shutdown in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_an_outage_gives_up_and_the_sweep_fails_the_task() {
    let store = Arc::new(Deaf::store());
    let a = TaskRuntime::start(store.clone(), config(500));
    let id = launch_slow(&a, 0.05).await;
    store.layer().set_down(true);
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Two grace periods of 200 ms, then the outcome is given up (and logged).
    tokio::time::timeout(Duration::from_secs(5), a.shutdown())
        .await
        .expect("shutdown returns although the outcome could not be written");
    store.layer().set_down(false);
    let rec = store.get(&owner(), &id).await.expect("get");
    assert_eq!(
        rec.status,
        TaskStatus::Working,
        "nothing was written: {rec:?}"
    );

    // Another node's sweep, once the lease lapsed.
    let b = TaskRuntime::start(store.clone(), config(500));
    tokio::time::sleep(Duration::from_millis(600)).await;
    b.sweep_once().await.expect("sweep");
    let rec = store.get(&owner(), &id).await.expect("get");
    assert_eq!(rec.status, TaskStatus::Failed, "{rec:?}");
    match &rec.outcome {
        Some(Outcome::Error(e)) => assert_eq!(e.message, WORKER_LOST_MESSAGE),
        other => panic!("no error: {other:?}"),
    }
    tokio::time::timeout(Duration::from_secs(5), b.shutdown())
        .await
        .expect("shutdown in time");
}
