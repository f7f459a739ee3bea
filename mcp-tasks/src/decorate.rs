//! [`Decorated`]: the one way to decorate a [`TaskStore`]. A decorator (metrics, fault
//! injection, a test double) is a [`StoreLayer`] that says only what it changes: a hook
//! [`around`](StoreLayer::around) every operation, named by its [`Operation`], and, when
//! it must, the event feed and the session store. [`Decorated`] forwards every
//! [`TaskStore`] method to the store it wraps through that hook, so each method is
//! forwarded here, once, and a method added to [`TaskStore`] is added here and in
//! [`Operation`], nowhere else.
//!
//! **Invariant.** A decorated store answers every call with what its layer returns for
//! the wrapped store's answer, and reports the wrapped store's [`TaskStore::backend`]
//! (a decorator describes the store it wraps, not itself).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use serde_json::Value;

use crate::error::StoreError;
use crate::event::EventStream;
use crate::log::{LogDraft, LogPage};
use crate::node::{NodeBeat, NodeRecord};
use crate::operator::{OperatorFilter, OperatorPage, TaskCounts};
use crate::record::{
    Lease, NewTask, Owner, Recovery, Resolved, SweepReport, TaskId, TaskPage, TaskRecord,
    Transition,
};
use crate::session::SessionStore;
use crate::store::TaskStore;

/// One [`TaskStore`] operation, as a [`StoreLayer`] sees it: the method called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// [`TaskStore::create`].
    Create,
    /// [`TaskStore::create_leased`].
    CreateLeased,
    /// [`TaskStore::get`].
    Get,
    /// [`TaskStore::list`].
    List,
    /// [`TaskStore::set_status_message`].
    SetStatusMessage,
    /// [`TaskStore::request_input`].
    RequestInput,
    /// [`TaskStore::resolve_input`].
    ResolveInput,
    /// [`TaskStore::take_input_response`].
    TakeInputResponse,
    /// [`TaskStore::complete`].
    Complete,
    /// [`TaskStore::fail`].
    Fail,
    /// [`TaskStore::cancel`].
    Cancel,
    /// [`TaskStore::request_cancel`].
    RequestCancel,
    /// [`TaskStore::claim_lease`].
    ClaimLease,
    /// [`TaskStore::renew_lease`].
    RenewLease,
    /// [`TaskStore::release_lease`].
    ReleaseLease,
    /// [`TaskStore::claim_next`].
    ClaimNext,
    /// [`TaskStore::recover_lapsed`].
    RecoverLapsed,
    /// [`TaskStore::sweep`].
    Sweep,
    /// [`TaskStore::operator_list`].
    OperatorList,
    /// [`TaskStore::operator_get`].
    OperatorGet,
    /// [`TaskStore::operator_counts`].
    OperatorCounts,
    /// [`TaskStore::append_log`].
    AppendLog,
    /// [`TaskStore::read_log`].
    ReadLog,
    /// [`TaskStore::heartbeat_node`].
    HeartbeatNode,
    /// [`TaskStore::list_nodes`].
    ListNodes,
    /// [`TaskStore::request_drain`].
    RequestDrain,
}

impl Operation {
    /// The name of the [`TaskStore`] method, e.g. `"create_leased"` (what telemetry
    /// reports as the operation's name).
    pub fn name(self) -> &'static str {
        match self {
            Operation::Create => "create",
            Operation::CreateLeased => "create_leased",
            Operation::Get => "get",
            Operation::List => "list",
            Operation::SetStatusMessage => "set_status_message",
            Operation::RequestInput => "request_input",
            Operation::ResolveInput => "resolve_input",
            Operation::TakeInputResponse => "take_input_response",
            Operation::Complete => "complete",
            Operation::Fail => "fail",
            Operation::Cancel => "cancel",
            Operation::RequestCancel => "request_cancel",
            Operation::ClaimLease => "claim_lease",
            Operation::RenewLease => "renew_lease",
            Operation::ReleaseLease => "release_lease",
            Operation::ClaimNext => "claim_next",
            Operation::RecoverLapsed => "recover_lapsed",
            Operation::Sweep => "sweep",
            Operation::OperatorList => "operator_list",
            Operation::OperatorGet => "operator_get",
            Operation::OperatorCounts => "operator_counts",
            Operation::AppendLog => "append_log",
            Operation::ReadLog => "read_log",
            Operation::HeartbeatNode => "heartbeat_node",
            Operation::ListNodes => "list_nodes",
            Operation::RequestDrain => "request_drain",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a decorator changes of the store it wraps; everything it does not override
/// passes through unchanged. Wrap a store with it in a [`Decorated`].
pub trait StoreLayer: Send + Sync + fmt::Debug + 'static {
    /// Runs `op`: `call` is the wrapped store's answer to it, with the caller's
    /// arguments. Return it (the default), await it and look at the result (time it,
    /// count it), or return something else: `call` does nothing until polled (every
    /// [`TaskStore`] method is an `async fn`), so a layer that refuses without polling it
    /// leaves the wrapped store untouched.
    fn around<'a, T: Send + 'a>(
        &'a self,
        op: Operation,
        call: BoxFuture<'a, Result<T, StoreError>>,
    ) -> BoxFuture<'a, Result<T, StoreError>> {
        let _ = op;
        call
    }

    /// The decorated store's event feed ([`TaskStore::events`]); by default `inner`'s.
    fn events(&self, inner: &dyn TaskStore) -> EventStream {
        inner.events()
    }

    /// The decorated store's session records ([`TaskStore::sessions`]); by default
    /// `inner`'s.
    fn sessions<'a>(&'a self, inner: &'a dyn TaskStore) -> Option<&'a dyn SessionStore> {
        inner.sessions()
    }
}

/// A [`TaskStore`] that forwards every method to the store it wraps through its
/// [`StoreLayer`]: each operation through [`StoreLayer::around`], the event feed and the
/// session store through their hooks, and [`TaskStore::backend`] as it is. A
/// `Decorated` is a store like any other, so layers stack.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// use futures::future::BoxFuture;
/// use mcp_tasks::{Decorated, MemoryStore, Operation, Owner, StoreError, StoreLayer, TaskId, TaskStore};
///
/// /// Counts reads and changes nothing else.
/// #[derive(Debug, Default)]
/// struct CountReads(AtomicU64);
///
/// impl StoreLayer for CountReads {
///     fn around<'a, T: Send + 'a>(
///         &'a self,
///         op: Operation,
///         call: BoxFuture<'a, Result<T, StoreError>>,
///     ) -> BoxFuture<'a, Result<T, StoreError>> {
///         if op == Operation::Get {
///             self.0.fetch_add(1, Ordering::Relaxed);
///         }
///         call
///     }
/// }
///
/// let store = Decorated::new(Arc::new(MemoryStore::default()), CountReads::default());
/// let unknown = TaskId::from_wire("unknown");
/// assert!(matches!(store.get(&Owner::new("alice"), &unknown).await, Err(StoreError::NotFound)));
/// assert_eq!(store.layer().0.load(Ordering::Relaxed), 1);
/// // It describes the store it wraps.
/// assert_eq!(store.backend(), "memory");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Decorated<L> {
    inner: Arc<dyn TaskStore>,
    layer: L,
}

impl<L: StoreLayer> Decorated<L> {
    /// `inner`, decorated by `layer`.
    pub fn new(inner: Arc<dyn TaskStore>, layer: L) -> Decorated<L> {
        Decorated { inner, layer }
    }

    /// The store this one wraps: calls on it bypass the layer.
    pub fn inner(&self) -> &Arc<dyn TaskStore> {
        &self.inner
    }

    /// The layer.
    pub fn layer(&self) -> &L {
        &self.layer
    }
}

#[async_trait]
impl<L: StoreLayer> TaskStore for Decorated<L> {
    async fn create(&self, new: NewTask) -> Result<TaskRecord, StoreError> {
        self.layer
            .around(Operation::Create, self.inner.create(new))
            .await
    }

    async fn create_leased(
        &self,
        new: NewTask,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<TaskRecord, StoreError> {
        let call = self.inner.create_leased(new, holder, ttl_ms);
        self.layer.around(Operation::CreateLeased, call).await
    }

    async fn get(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        self.layer
            .around(Operation::Get, self.inner.get(owner, id))
            .await
    }

    async fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        let call = self.inner.list(owner, cursor, limit);
        self.layer.around(Operation::List, call).await
    }

    async fn set_status_message(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<TaskRecord, StoreError> {
        let call = self.inner.set_status_message(owner, id, message);
        self.layer.around(Operation::SetStatusMessage, call).await
    }

    async fn request_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        requests: BTreeMap<String, Value>,
    ) -> Result<TaskRecord, StoreError> {
        let call = self.inner.request_input(owner, id, requests);
        self.layer.around(Operation::RequestInput, call).await
    }

    async fn resolve_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        responses: BTreeMap<String, Value>,
    ) -> Result<Resolved, StoreError> {
        let call = self.inner.resolve_input(owner, id, responses);
        self.layer.around(Operation::ResolveInput, call).await
    }

    async fn take_input_response(
        &self,
        owner: &Owner,
        id: &TaskId,
        key: &str,
    ) -> Result<Option<Value>, StoreError> {
        let call = self.inner.take_input_response(owner, id, key);
        self.layer.around(Operation::TakeInputResponse, call).await
    }

    async fn complete(
        &self,
        owner: &Owner,
        id: &TaskId,
        result: JsonObject,
    ) -> Result<Transition, StoreError> {
        let call = self.inner.complete(owner, id, result);
        self.layer.around(Operation::Complete, call).await
    }

    async fn fail(
        &self,
        owner: &Owner,
        id: &TaskId,
        error: ErrorObject,
    ) -> Result<Transition, StoreError> {
        let call = self.inner.fail(owner, id, error);
        self.layer.around(Operation::Fail, call).await
    }

    async fn cancel(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<Transition, StoreError> {
        let call = self.inner.cancel(owner, id, message);
        self.layer.around(Operation::Cancel, call).await
    }

    async fn request_cancel(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        let call = self.inner.request_cancel(owner, id);
        self.layer.around(Operation::RequestCancel, call).await
    }

    async fn claim_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        let call = self.inner.claim_lease(owner, id, holder, ttl_ms);
        self.layer.around(Operation::ClaimLease, call).await
    }

    async fn renew_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        let call = self.inner.renew_lease(owner, id, holder, ttl_ms);
        self.layer.around(Operation::RenewLease, call).await
    }

    async fn release_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
    ) -> Result<(), StoreError> {
        let call = self.inner.release_lease(owner, id, holder);
        self.layer.around(Operation::ReleaseLease, call).await
    }

    async fn claim_next(
        &self,
        tools: &[String],
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let call = self.inner.claim_next(tools, holder, ttl_ms);
        self.layer.around(Operation::ClaimNext, call).await
    }

    async fn recover_lapsed(
        &self,
        owner: &Owner,
        id: &TaskId,
        lost: ErrorObject,
    ) -> Result<Recovery, StoreError> {
        let call = self.inner.recover_lapsed(owner, id, lost);
        self.layer.around(Operation::RecoverLapsed, call).await
    }

    async fn sweep(&self) -> Result<SweepReport, StoreError> {
        self.layer
            .around(Operation::Sweep, self.inner.sweep())
            .await
    }

    async fn operator_list(
        &self,
        filter: &OperatorFilter,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<OperatorPage, StoreError> {
        let call = self.inner.operator_list(filter, cursor, limit);
        self.layer.around(Operation::OperatorList, call).await
    }

    async fn operator_get(&self, id: &TaskId) -> Result<TaskRecord, StoreError> {
        let call = self.inner.operator_get(id);
        self.layer.around(Operation::OperatorGet, call).await
    }

    async fn operator_counts(&self) -> Result<TaskCounts, StoreError> {
        let call = self.inner.operator_counts();
        self.layer.around(Operation::OperatorCounts, call).await
    }

    fn keeps_logs(&self) -> bool {
        self.inner.keeps_logs()
    }

    fn supports_idempotency(&self) -> bool {
        self.inner.supports_idempotency()
    }

    async fn append_log(
        &self,
        owner: &Owner,
        id: &TaskId,
        entries: Vec<LogDraft>,
    ) -> Result<u64, StoreError> {
        let call = self.inner.append_log(owner, id, entries);
        self.layer.around(Operation::AppendLog, call).await
    }

    async fn read_log(
        &self,
        owner: &Owner,
        id: &TaskId,
        after: Option<u64>,
        limit: usize,
    ) -> Result<LogPage, StoreError> {
        let call = self.inner.read_log(owner, id, after, limit);
        self.layer.around(Operation::ReadLog, call).await
    }

    async fn heartbeat_node(&self, beat: &NodeBeat) -> Result<NodeRecord, StoreError> {
        let call = self.inner.heartbeat_node(beat);
        self.layer.around(Operation::HeartbeatNode, call).await
    }

    async fn list_nodes(&self) -> Result<Vec<NodeRecord>, StoreError> {
        let call = self.inner.list_nodes();
        self.layer.around(Operation::ListNodes, call).await
    }

    async fn request_drain(&self, id: &str) -> Result<NodeRecord, StoreError> {
        let call = self.inner.request_drain(id);
        self.layer.around(Operation::RequestDrain, call).await
    }

    fn events(&self) -> EventStream {
        self.layer.events(&*self.inner)
    }

    fn sessions(&self) -> Option<&dyn SessionStore> {
        self.layer.sessions(&*self.inner)
    }

    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::{MemoryStore, Origin, WireRevision};

    /// Records every operation it sees; refuses `create` when told to.
    #[derive(Debug, Default)]
    struct Recorder {
        seen: Mutex<Vec<Operation>>,
        refuse_create: bool,
    }

    impl StoreLayer for Recorder {
        fn around<'a, T: Send + 'a>(
            &'a self,
            op: Operation,
            call: BoxFuture<'a, Result<T, StoreError>>,
        ) -> BoxFuture<'a, Result<T, StoreError>> {
            self.seen.lock().expect("not poisoned").push(op);
            if self.refuse_create && op == Operation::Create {
                return Box::pin(async { Err(StoreError::unavailable("refused")) });
            }
            call
        }
    }

    fn new_task(owner: &Owner) -> NewTask {
        NewTask {
            owner: owner.clone(),
            ttl_ms: Some(60_000),
            poll_interval_ms: None,
            origin: Origin {
                method: "tools/call".into(),
                tool: Some("t".into()),
                revision: WireRevision::V2026_07_28,
            },
            status_message: None,
            job: None,
            trace_context: None,
            idempotency: None,
        }
    }

    /// Each method reaches the wrapped store through the hook, once, under its own name.
    #[tokio::test]
    async fn every_operation_passes_through_the_hook_once() {
        let inner: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
        let store = Decorated::new(Arc::clone(&inner), Recorder::default());
        let o = Owner::new("o");
        let id = store.create(new_task(&o)).await.expect("create").id;
        let leased = store.create_leased(new_task(&o), "w", 1_000).await;
        assert!(leased.is_ok());
        assert!(store.get(&o, &id).await.is_ok());
        assert!(store.list(&o, None, 10).await.is_ok());
        let _ = store.set_status_message(&o, &id, None).await;
        let _ = store.request_input(&o, &id, BTreeMap::new()).await;
        let _ = store.resolve_input(&o, &id, BTreeMap::new()).await;
        let _ = store.take_input_response(&o, &id, "k").await;
        let _ = store.claim_lease(&o, &id, "w", 1_000).await;
        let _ = store.renew_lease(&o, &id, "w", 1_000).await;
        let _ = store.release_lease(&o, &id, "w").await;
        let _ = store.claim_next(&["t".to_owned()], "w", 1_000).await;
        let lost = ErrorObject::new(-32603, "lost");
        let _ = store.recover_lapsed(&o, &id, lost.clone()).await;
        let _ = store.request_cancel(&o, &id).await;
        let _ = store.complete(&o, &id, JsonObject::new()).await;
        let _ = store.fail(&o, &id, lost).await;
        let _ = store.cancel(&o, &id, None).await;
        let _ = store.sweep().await;
        let _ = store
            .operator_list(&OperatorFilter::default(), None, 10)
            .await;
        let _ = store.operator_get(&id).await;
        let _ = store.operator_counts().await;
        let seen: Vec<&str> = store
            .layer()
            .seen
            .lock()
            .expect("not poisoned")
            .iter()
            .map(|op| op.name())
            .collect();
        assert_eq!(
            seen,
            [
                "create",
                "create_leased",
                "get",
                "list",
                "set_status_message",
                "request_input",
                "resolve_input",
                "take_input_response",
                "claim_lease",
                "renew_lease",
                "release_lease",
                "claim_next",
                "recover_lapsed",
                "request_cancel",
                "complete",
                "fail",
                "cancel",
                "sweep",
                "operator_list",
                "operator_get",
                "operator_counts",
            ]
        );
        assert_eq!(store.backend(), inner.backend());
        assert_eq!(store.sessions().is_some(), inner.sessions().is_some());
    }

    /// A layer that refuses without polling the call leaves the wrapped store as it was.
    #[tokio::test]
    async fn a_refused_call_never_reaches_the_wrapped_store() {
        let inner: Arc<dyn TaskStore> = Arc::new(MemoryStore::default());
        let layer = Recorder {
            refuse_create: true,
            ..Recorder::default()
        };
        let store = Decorated::new(Arc::clone(&inner), layer);
        let refused = store.create(new_task(&Owner::new("o"))).await;
        assert!(matches!(refused, Err(StoreError::Unavailable(_))));
        let counts = inner.operator_counts().await.expect("counts");
        assert_eq!(counts.working, 0);
    }
}
