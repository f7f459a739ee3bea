//! [`DeafStore`]: a [`MemoryStore`] whose event feed is the test's, not the store's, so a
//! test decides which events a server hears, and when it hears of a lag; which the
//! test can take down (every operation fails as unavailable) and bring back; and which
//! counts its [`TaskStore::get`] calls (what a test of reads per change compares).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use async_trait::async_trait;
use mcp_tasks::{
    EventStream, FeedItem, Lease, MemoryStore, NewTask, Owner, Recovery, Resolved, StoreError,
    SweepReport, TaskId, TaskPage, TaskRecord, TaskStore, Transition,
};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use serde_json::Value;
use tokio::sync::broadcast;

/// A [`MemoryStore`] whose event feed is the test's, not the store's.
#[derive(Debug)]
pub struct DeafStore {
    /// The store that keeps the data.
    pub inner: MemoryStore,
    /// What the store's subscribers hear (send [`FeedItem::Resync`] for a lag).
    pub feed: broadcast::Sender<FeedItem>,
    down: AtomicBool,
    /// [`TaskStore::get`] calls so far.
    gets: AtomicU64,
}

impl DeafStore {
    /// An empty store whose subscribers hear only what is sent on `feed`.
    pub fn new() -> DeafStore {
        DeafStore {
            inner: MemoryStore::default(),
            feed: broadcast::channel(16).0,
            down: AtomicBool::new(false),
            gets: AtomicU64::new(0),
        }
    }

    /// How many times [`TaskStore::get`] was called so far (refused calls included).
    pub fn gets(&self) -> u64 {
        self.gets.load(Ordering::SeqCst)
    }

    /// Takes the store down (`true`: every operation fails with
    /// [`StoreError::Unavailable`], nothing changes) or brings it back.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    fn up(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            Err(StoreError::unavailable("the test took the store down"))
        } else {
            Ok(())
        }
    }
}

impl Default for DeafStore {
    fn default() -> Self {
        DeafStore::new()
    }
}

#[async_trait]
impl TaskStore for DeafStore {
    async fn create(&self, new: NewTask) -> Result<TaskRecord, StoreError> {
        self.up()?;
        self.inner.create(new).await
    }
    async fn create_leased(
        &self,
        new: NewTask,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<TaskRecord, StoreError> {
        self.up()?;
        self.inner.create_leased(new, holder, ttl_ms).await
    }
    async fn get(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.up()?;
        self.inner.get(owner, id).await
    }
    async fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        self.up()?;
        self.inner.list(owner, cursor, limit).await
    }
    async fn set_status_message(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<TaskRecord, StoreError> {
        self.up()?;
        self.inner.set_status_message(owner, id, message).await
    }
    async fn request_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        requests: BTreeMap<String, Value>,
    ) -> Result<TaskRecord, StoreError> {
        self.up()?;
        self.inner.request_input(owner, id, requests).await
    }
    async fn resolve_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        responses: BTreeMap<String, Value>,
    ) -> Result<Resolved, StoreError> {
        self.up()?;
        self.inner.resolve_input(owner, id, responses).await
    }
    async fn take_input_response(
        &self,
        owner: &Owner,
        id: &TaskId,
        key: &str,
    ) -> Result<Option<Value>, StoreError> {
        self.up()?;
        self.inner.take_input_response(owner, id, key).await
    }
    async fn complete(
        &self,
        owner: &Owner,
        id: &TaskId,
        result: JsonObject,
    ) -> Result<Transition, StoreError> {
        self.up()?;
        self.inner.complete(owner, id, result).await
    }
    async fn fail(
        &self,
        owner: &Owner,
        id: &TaskId,
        error: ErrorObject,
    ) -> Result<Transition, StoreError> {
        self.up()?;
        self.inner.fail(owner, id, error).await
    }
    async fn cancel(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<Transition, StoreError> {
        self.up()?;
        self.inner.cancel(owner, id, message).await
    }
    async fn request_cancel(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        self.up()?;
        self.inner.request_cancel(owner, id).await
    }
    async fn claim_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        self.up()?;
        self.inner.claim_lease(owner, id, holder, ttl_ms).await
    }
    async fn renew_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        self.up()?;
        self.inner.renew_lease(owner, id, holder, ttl_ms).await
    }
    async fn release_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
    ) -> Result<(), StoreError> {
        self.up()?;
        self.inner.release_lease(owner, id, holder).await
    }
    async fn claim_next(
        &self,
        tools: &[String],
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.up()?;
        self.inner.claim_next(tools, holder, ttl_ms).await
    }
    async fn recover_lapsed(
        &self,
        owner: &Owner,
        id: &TaskId,
        lost: ErrorObject,
    ) -> Result<Recovery, StoreError> {
        self.up()?;
        self.inner.recover_lapsed(owner, id, lost).await
    }
    async fn sweep(&self) -> Result<SweepReport, StoreError> {
        self.up()?;
        self.inner.sweep().await
    }
    fn events(&self) -> EventStream {
        EventStream::with_resync(self.feed.subscribe())
    }
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
}
