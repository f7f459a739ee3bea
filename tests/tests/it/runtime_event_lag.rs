//! The runtime after an event lag: a cancel request or a terminal write made elsewhere
//! while its event feed lagged (e.g. a shared store's notification connection dropped)
//! still stops the tool running here, once the feed reports the lag.
//!
//! The store here is a [`DeafStore`]: a `MemoryStore` whose events never reach the
//! runtime; the test owns the runtime's feed and sends it only a resync (`Lagged(0)`).

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::{FeedItem, Owner, TaskId, TaskRecord, TaskStore};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::tasks::TaskStatus;
use mcp_tasks_server::{CANCELLED_MESSAGE, RuntimeConfig, TaskRuntime};
use mcp_tests::deaf_store::{Deaf, DeafStore};
use mcp_tests::server_harness::launch_demo_task;
use serde_json::json;

fn owner() -> Owner {
    Owner::new("lag")
}

async fn launch_slow(runtime: &TaskRuntime) -> TaskId {
    launch_demo_task(
        runtime,
        &owner(),
        "slow_compute",
        json!({ "seconds": 60.0 }),
    )
    .await
}

async fn wait_for(store: &DeafStore, id: &TaskId, done: impl Fn(&TaskRecord) -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(3), async {
        loop {
            let rec = store.get(&owner(), id).await.expect("get");
            if done(&rec) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let rec = store.get(&owner(), id).await.expect("get");
    assert!(waited.is_ok(), "not in time: {rec:?}");
}

#[tokio::test]
async fn a_lag_rechecks_running_tasks_for_cancel_requests_and_terminal_writes() {
    let store = Arc::new(Deaf::store());
    let feed = store.layer().feed.clone();
    let config = RuntimeConfig {
        shutdown_grace: Duration::from_millis(100),
        ..RuntimeConfig::default()
    };
    let runtime = TaskRuntime::start(store.clone(), config);
    let asked = launch_slow(&runtime).await;
    let finished = launch_slow(&runtime).await;
    let untouched = launch_slow(&runtime).await;
    assert_eq!(runtime.running_count(), 3);

    // Elsewhere, unheard: a cancel request, and a terminal write by another node.
    store
        .request_cancel(&owner(), &asked)
        .await
        .expect("request cancel");
    let done = store
        .complete(&owner(), &finished, JsonObject::new())
        .await
        .expect("complete");
    assert!(done.won);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        runtime.running_count(),
        3,
        "without an event nothing stopped yet (else this test proves nothing)"
    );

    feed.send(FeedItem::Resync).expect("the runtime listens");
    wait_for(&store, &asked, |r| r.status == TaskStatus::Cancelled).await;
    let rec = store.get(&owner(), &asked).await.expect("get");
    assert_eq!(rec.status_message.as_deref(), Some(CANCELLED_MESSAGE));
    let waited = tokio::time::timeout(Duration::from_secs(3), async {
        while runtime.running_count() > 1 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "the finished task's tool still runs: {} running",
        runtime.running_count()
    );
    // The completed record is untouched; the third task runs on.
    let rec = store.get(&owner(), &finished).await.expect("get");
    assert_eq!(rec.status, TaskStatus::Completed);
    assert_eq!(rec.revision, done.record.revision);
    let rec = store.get(&owner(), &untouched).await.expect("get");
    assert_eq!(rec.status, TaskStatus::Working);
    tokio::time::timeout(Duration::from_secs(20), runtime.shutdown())
        .await
        .expect("shutdown in time");
}
