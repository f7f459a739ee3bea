//! [`TaskStore`] for [`PostgresStore`]: each operation in terms of `update`, `db` and the
//! rules.

use super::*;

#[async_trait]
impl TaskStore for PostgresStore {
    async fn create(&self, new: NewTask) -> Result<TaskRecord, StoreError> {
        transactional::create(self, new).await
    }

    async fn create_leased(
        &self,
        new: NewTask,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<TaskRecord, StoreError> {
        transactional::create_leased(self, new, holder, ttl_ms).await
    }

    async fn get(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        let client = self.inner.pool.get().await.map_err(backend)?;
        let now = self.inner.clock.now_ms();
        db::load(&client, owner, id, now, false)
            .await?
            .ok_or(StoreError::NotFound)
    }

    async fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        let after = cursor.map(cursor::decode).transpose()?;
        let client = self.inner.pool.get().await.map_err(backend)?;
        let now = self.inner.clock.now_ms();
        db::list(&client, owner, after, limit.max(1), now).await
    }

    async fn set_status_message(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<TaskRecord, StoreError> {
        transactional::set_status_message(self, owner, id, message).await
    }

    async fn request_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        requests: BTreeMap<String, Value>,
    ) -> Result<TaskRecord, StoreError> {
        transactional::request_input(self, owner, id, requests).await
    }

    async fn resolve_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        responses: BTreeMap<String, Value>,
    ) -> Result<Resolved, StoreError> {
        transactional::resolve_input(self, owner, id, responses).await
    }

    async fn take_input_response(
        &self,
        owner: &Owner,
        id: &TaskId,
        key: &str,
    ) -> Result<Option<Value>, StoreError> {
        transactional::take_input_response(self, owner, id, key).await
    }

    async fn complete(
        &self,
        owner: &Owner,
        id: &TaskId,
        result: JsonObject,
    ) -> Result<Transition, StoreError> {
        transactional::complete(self, owner, id, result).await
    }

    async fn fail(
        &self,
        owner: &Owner,
        id: &TaskId,
        error: ErrorObject,
    ) -> Result<Transition, StoreError> {
        transactional::fail(self, owner, id, error).await
    }

    async fn cancel(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<Transition, StoreError> {
        transactional::cancel(self, owner, id, message).await
    }

    async fn request_cancel(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        transactional::request_cancel(self, owner, id).await
    }

    async fn claim_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        transactional::claim_lease(self, owner, id, holder, ttl_ms).await
    }

    async fn renew_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        transactional::renew_lease(self, owner, id, holder, ttl_ms).await
    }

    async fn release_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
    ) -> Result<(), StoreError> {
        transactional::release_lease(self, owner, id, holder).await
    }

    async fn sweep(&self) -> Result<SweepReport, StoreError> {
        let inner = Arc::clone(&self.inner);
        self.spawn(async move {
            let mut client = inner.pool.get().await.map_err(backend)?;
            let tx = client.transaction().await.map_err(pg)?;
            // One sweep at a time per schema: concurrent DELETEs of the same expired rows
            // could lock them in different orders.
            let key = i64::from_ne_bytes(
                schema::fnv1a(&format!("mcp_tasks.sweep.{}", inner.schema)).to_ne_bytes(),
            );
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&key])
                .await
                .map_err(pg)?;
            let report = db::sweep(&tx, inner.clock.now_ms()).await?;
            tx.commit().await.map_err(pg)?;
            Ok(report)
        })
        .await
    }

    fn events(&self) -> EventStream {
        EventStream::with_resync(self.inner.events.subscribe())
    }
}
