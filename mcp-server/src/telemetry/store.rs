//! [`MeteredStore`]: a [`TaskStore`] that times every operation of the store it wraps
//! (`db.client.operation.duration`, by backend, operation and error kind) and changes
//! nothing else: each method forwards its arguments and returns the wrapped store's
//! answer as it came.
//!
//! **Invariant.** Installed by [`super::instrument_store`] only when metrics are read,
//! so a server without metrics calls its store directly.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use mcp_tasks::{
    EventStream, Lease, NewTask, OperatorFilter, OperatorPage, Owner, Recovery, Resolved,
    StoreError, SweepReport, TaskCounts, TaskId, TaskPage, TaskRecord, TaskStore, Transition,
};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use serde_json::Value;

use super::metrics::Instruments;

/// Times each operation of `inner` into `instruments`.
pub(super) struct MeteredStore {
    inner: Arc<dyn TaskStore>,
    instruments: &'static Instruments,
}

impl std::fmt::Debug for MeteredStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeteredStore")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl MeteredStore {
    pub(super) fn new(inner: Arc<dyn TaskStore>, instruments: &'static Instruments) -> Self {
        MeteredStore { inner, instruments }
    }

    /// Runs `operation` (the `TaskStore` method `name`) and records how long it took
    /// and, when it failed, the error's kind.
    async fn timed<T>(
        &self,
        name: &'static str,
        operation: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let started = Instant::now();
        let result = operation.await;
        self.instruments.store_operation(
            started.elapsed(),
            self.inner.backend(),
            name,
            result.as_ref().err().map(StoreError::kind),
        );
        result
    }
}

#[async_trait]
impl TaskStore for MeteredStore {
    async fn create(&self, new: NewTask) -> Result<TaskRecord, StoreError> {
        self.timed("create", self.inner.create(new)).await
    }

    async fn create_leased(
        &self,
        new: NewTask,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<TaskRecord, StoreError> {
        self.timed(
            "create_leased",
            self.inner.create_leased(new, holder, ttl_ms),
        )
        .await
    }

    async fn get(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        self.timed("get", self.inner.get(owner, id)).await
    }

    async fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        self.timed("list", self.inner.list(owner, cursor, limit))
            .await
    }

    async fn set_status_message(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<TaskRecord, StoreError> {
        self.timed(
            "set_status_message",
            self.inner.set_status_message(owner, id, message),
        )
        .await
    }

    async fn request_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        requests: BTreeMap<String, Value>,
    ) -> Result<TaskRecord, StoreError> {
        self.timed(
            "request_input",
            self.inner.request_input(owner, id, requests),
        )
        .await
    }

    async fn resolve_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        responses: BTreeMap<String, Value>,
    ) -> Result<Resolved, StoreError> {
        self.timed(
            "resolve_input",
            self.inner.resolve_input(owner, id, responses),
        )
        .await
    }

    async fn take_input_response(
        &self,
        owner: &Owner,
        id: &TaskId,
        key: &str,
    ) -> Result<Option<Value>, StoreError> {
        self.timed(
            "take_input_response",
            self.inner.take_input_response(owner, id, key),
        )
        .await
    }

    async fn complete(
        &self,
        owner: &Owner,
        id: &TaskId,
        result: JsonObject,
    ) -> Result<Transition, StoreError> {
        self.timed("complete", self.inner.complete(owner, id, result))
            .await
    }

    async fn fail(
        &self,
        owner: &Owner,
        id: &TaskId,
        error: ErrorObject,
    ) -> Result<Transition, StoreError> {
        self.timed("fail", self.inner.fail(owner, id, error)).await
    }

    async fn cancel(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<Transition, StoreError> {
        self.timed("cancel", self.inner.cancel(owner, id, message))
            .await
    }

    async fn request_cancel(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        self.timed("request_cancel", self.inner.request_cancel(owner, id))
            .await
    }

    async fn claim_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        self.timed(
            "claim_lease",
            self.inner.claim_lease(owner, id, holder, ttl_ms),
        )
        .await
    }

    async fn renew_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        self.timed(
            "renew_lease",
            self.inner.renew_lease(owner, id, holder, ttl_ms),
        )
        .await
    }

    async fn release_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
    ) -> Result<(), StoreError> {
        self.timed("release_lease", self.inner.release_lease(owner, id, holder))
            .await
    }

    async fn claim_next(
        &self,
        tools: &[String],
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.timed("claim_next", self.inner.claim_next(tools, holder, ttl_ms))
            .await
    }

    async fn recover_lapsed(
        &self,
        owner: &Owner,
        id: &TaskId,
        lost: ErrorObject,
    ) -> Result<Recovery, StoreError> {
        self.timed("recover_lapsed", self.inner.recover_lapsed(owner, id, lost))
            .await
    }

    async fn sweep(&self) -> Result<SweepReport, StoreError> {
        self.timed("sweep", self.inner.sweep()).await
    }

    async fn operator_list(
        &self,
        filter: &OperatorFilter,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<OperatorPage, StoreError> {
        self.timed(
            "operator_list",
            self.inner.operator_list(filter, cursor, limit),
        )
        .await
    }

    async fn operator_get(&self, id: &TaskId) -> Result<TaskRecord, StoreError> {
        self.timed("operator_get", self.inner.operator_get(id))
            .await
    }

    async fn operator_counts(&self) -> Result<TaskCounts, StoreError> {
        self.timed("operator_counts", self.inner.operator_counts())
            .await
    }

    fn events(&self) -> EventStream {
        self.inner.events()
    }

    fn sessions(&self) -> Option<&dyn mcp_tasks::SessionStore> {
        self.inner.sessions()
    }

    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation reaches the wrapped store and comes back unchanged, errors too;
    /// each is timed by backend and operation, a failed one by its error kind.
    #[tokio::test]
    async fn forwards_answers_and_errors_unchanged() {
        let reader = Arc::new(opentelemetry_sdk::metrics::ManualReader::builder().build());
        let meter = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
            .with_reader(super::super::prometheus::SharedReader(Arc::clone(&reader)))
            .build();
        let prometheus = super::super::Prometheus { reader };
        let instruments: &'static Instruments = Box::leak(Box::new(Instruments::new(
            &opentelemetry::metrics::MeterProvider::meter(&meter, "test"),
        )));
        let inner: Arc<dyn TaskStore> = Arc::new(mcp_tasks::MemoryStore::default());
        let store = MeteredStore::new(Arc::clone(&inner), instruments);
        assert_eq!(store.backend(), "memory");
        let owner = Owner::new("o");
        let created = store
            .create(NewTask {
                owner: owner.clone(),
                ttl_ms: Some(60_000),
                poll_interval_ms: None,
                origin: mcp_tasks::Origin {
                    method: "tools/call".into(),
                    tool: Some("t".into()),
                    revision: mcp_tasks::WireRevision::V2026_07_28,
                },
                status_message: None,
                job: None,
                trace_context: None,
            })
            .await
            .expect("create");
        let read = inner.get(&owner, &created.id).await.expect("in the inner");
        assert_eq!(read.revision, created.revision);
        let unknown = TaskId::random().expect("an id");
        assert!(matches!(
            store.get(&owner, &unknown).await,
            Err(StoreError::NotFound)
        ));
        let counts = store.operator_counts().await.expect("counts");
        assert_eq!(counts.working, 1);
        assert!(store.sessions().is_some() == inner.sessions().is_some());
        store
            .cancel(&owner, &created.id, None)
            .await
            .expect("cancel");
        assert!(matches!(
            store
                .request_input(&owner, &created.id, BTreeMap::new())
                .await,
            Err(StoreError::Terminal { .. })
        ));

        // The count of `operation`'s series with exactly these labels besides the backend.
        let text = prometheus.render();
        let count = |operation: &str, error: Option<&str>| {
            let mut wanted = vec![
                ("db_operation_name".to_owned(), operation.to_owned()),
                ("db_system_name".to_owned(), "memory".to_owned()),
            ];
            wanted.extend(error.map(|e| ("error_type".to_owned(), e.to_owned())));
            wanted.sort();
            text.lines()
                .filter_map(|l| l.strip_prefix("db_client_operation_duration_seconds_count{"))
                .find_map(|l| {
                    let (labels, value) = l.split_once("} ")?;
                    let mut got: Vec<(String, String)> = labels
                        .split(',')
                        .filter_map(|kv| kv.split_once('='))
                        .map(|(k, v)| (k.to_owned(), v.trim_matches('"').to_owned()))
                        .collect();
                    got.sort();
                    (got == wanted).then(|| value.to_owned())
                })
                .unwrap_or_else(|| panic!("no {operation} {error:?} in {text}"))
        };
        assert_eq!(count("create", None), "1");
        assert_eq!(count("operator_counts", None), "1");
        assert_eq!(count("cancel", None), "1");
        assert_eq!(count("get", Some("not_found")), "1");
        assert_eq!(count("request_input", Some("terminal")), "1");
    }
}
