//! The runtime after an event lag: a cancel request or a terminal write made elsewhere
//! while its event feed lagged (e.g. a shared store's notification connection dropped)
//! still stops the tool running here, once the feed reports the lag.
//!
//! The store here is a [`MemoryStore`] whose events never reach the runtime: the test
//! owns the runtime's feed and sends it only a resync (`Lagged(0)`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_protocol::JsonObject;
use mcp_protocol::jsonrpc::ErrorObject;
use mcp_protocol::tasks::TaskStatus;
use mcp_server::{CANCELLED_MESSAGE, RuntimeConfig, TaskRuntime};
use mcp_tasks::{
    EventStream, FeedItem, Lease, MemoryStore, NewTask, Origin, Owner, Resolved, StoreError,
    SweepReport, TaskId, TaskPage, TaskRecord, TaskStore, Transition, WireRevision,
};
use mcp_tests::server_harness::demo_tools;
use serde_json::{Value, json};
use tokio::sync::broadcast;

/// A [`MemoryStore`] whose event feed is the test's, not the store's.
#[derive(Debug)]
struct DeafStore {
    inner: MemoryStore,
    feed: broadcast::Sender<FeedItem>,
}

#[async_trait]
impl TaskStore for DeafStore {
    async fn create(&self, new: NewTask) -> Result<TaskRecord, StoreError> {
        self.inner.create(new).await
    }
    async fn create_leased(
        &self,
        new: NewTask,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<TaskRecord, StoreError> {
        self.inner.create_leased(new, holder, ttl_ms).await
    }
    async fn get(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        self.inner.get(owner, id).await
    }
    async fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        self.inner.list(owner, cursor, limit).await
    }
    async fn set_status_message(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<TaskRecord, StoreError> {
        self.inner.set_status_message(owner, id, message).await
    }
    async fn request_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        requests: BTreeMap<String, Value>,
    ) -> Result<TaskRecord, StoreError> {
        self.inner.request_input(owner, id, requests).await
    }
    async fn resolve_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        responses: BTreeMap<String, Value>,
    ) -> Result<Resolved, StoreError> {
        self.inner.resolve_input(owner, id, responses).await
    }
    async fn take_input_response(
        &self,
        owner: &Owner,
        id: &TaskId,
        key: &str,
    ) -> Result<Option<Value>, StoreError> {
        self.inner.take_input_response(owner, id, key).await
    }
    async fn complete(
        &self,
        owner: &Owner,
        id: &TaskId,
        result: JsonObject,
    ) -> Result<Transition, StoreError> {
        self.inner.complete(owner, id, result).await
    }
    async fn fail(
        &self,
        owner: &Owner,
        id: &TaskId,
        error: ErrorObject,
    ) -> Result<Transition, StoreError> {
        self.inner.fail(owner, id, error).await
    }
    async fn cancel(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<Transition, StoreError> {
        self.inner.cancel(owner, id, message).await
    }
    async fn request_cancel(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        self.inner.request_cancel(owner, id).await
    }
    async fn claim_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        self.inner.claim_lease(owner, id, holder, ttl_ms).await
    }
    async fn renew_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        self.inner.renew_lease(owner, id, holder, ttl_ms).await
    }
    async fn release_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
    ) -> Result<(), StoreError> {
        self.inner.release_lease(owner, id, holder).await
    }
    async fn sweep(&self) -> Result<SweepReport, StoreError> {
        self.inner.sweep().await
    }
    fn events(&self) -> EventStream {
        EventStream::with_resync(self.feed.subscribe())
    }
}

fn owner() -> Owner {
    Owner::new("lag")
}

async fn launch_slow(runtime: &TaskRuntime, store: &DeafStore) -> TaskId {
    let record = store
        .create(NewTask {
            owner: owner(),
            ttl_ms: None,
            poll_interval_ms: None,
            origin: Origin {
                method: "tools/call".into(),
                tool: Some("slow_compute".into()),
                revision: WireRevision::V2026_07_28,
            },
            status_message: None,
        })
        .await
        .expect("create");
    let tool = demo_tools()
        .into_iter()
        .find(|t| t.name() == "slow_compute")
        .expect("slow_compute");
    let args = json!({ "seconds": 60.0 });
    let Value::Object(args) = args else {
        unreachable!()
    };
    runtime.launch(&record, tool, args).await.expect("launch");
    record.id
}

/// Polls the record until `done` holds, within 3 s.
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
    let (feed, _) = broadcast::channel(16);
    let store = Arc::new(DeafStore {
        inner: MemoryStore::default(),
        feed: feed.clone(),
    });
    let config = RuntimeConfig {
        shutdown_grace: Duration::from_millis(100),
        ..RuntimeConfig::default()
    };
    let runtime = TaskRuntime::start(store.clone(), config);
    let asked = launch_slow(&runtime, &store).await;
    let finished = launch_slow(&runtime, &store).await;
    let untouched = launch_slow(&runtime, &store).await;
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
