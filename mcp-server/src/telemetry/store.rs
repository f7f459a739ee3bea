//! [`MeteredStore`]: a [`StoreLayer`] that times every operation of the store it
//! decorates (`db.client.operation.duration`, by backend, operation and error kind) and
//! changes nothing else: each call reaches the wrapped store with its arguments and comes
//! back as it came ([`Decorated`] forwards them).
//!
//! **Invariant.** Installed by [`super::instrument_store`] only when metrics are read,
//! so a server without metrics calls its store directly.

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use mcp_tasks::{Decorated, Operation, StoreError, StoreLayer, TaskStore};

use super::metrics::Instruments;

/// Times each operation of the store it decorates into `instruments`.
pub(super) struct MeteredStore {
    instruments: &'static Instruments,
    /// The wrapped store's [`TaskStore::backend`].
    backend: &'static str,
}

impl std::fmt::Debug for MeteredStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeteredStore")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl MeteredStore {
    /// `inner`, each operation timed into `instruments`.
    pub(super) fn new(
        inner: Arc<dyn TaskStore>,
        instruments: &'static Instruments,
    ) -> Decorated<MeteredStore> {
        let backend = inner.backend();
        Decorated::new(
            inner,
            MeteredStore {
                instruments,
                backend,
            },
        )
    }
}

impl StoreLayer for MeteredStore {
    /// Runs `call` and records how long it took and, when it failed, the error's kind.
    fn around<'a, T: Send + 'a>(
        &'a self,
        op: Operation,
        call: BoxFuture<'a, Result<T, StoreError>>,
    ) -> BoxFuture<'a, Result<T, StoreError>> {
        Box::pin(async move {
            let started = Instant::now();
            let result = call.await;
            self.instruments.store_operation(
                started.elapsed(),
                self.backend,
                op.name(),
                result.as_ref().err().map(StoreError::kind),
            );
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use mcp_tasks::{NewTask, Owner, TaskId};

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
                idempotency: None,
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
