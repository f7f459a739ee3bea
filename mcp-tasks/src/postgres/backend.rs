//! [`Backend`] for [`PostgresStore`]: every write one transaction on a pooled connection
//! (the task's row locked `FOR UPDATE`), its events queued with `pg_notify` inside it and
//! published to this handle's feed right after the commit; each operation a spawned task.

use std::sync::Arc;

use super::schema::{self, backend, pg};
use super::{PostgresStore, db};
use crate::backend::{Announce, Backend};
use crate::error::StoreError;
use crate::event::EventStream;
use crate::limits::Limits;
use crate::record::{Millis, Owner, SweepReport, TaskId, TaskPage, TaskRecord};

impl Backend for PostgresStore {
    /// The row lock serializes the writes to a task: each closure runs once.
    const RERUNS_UPDATES: bool = false;

    fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    async fn insert_task<M>(
        &self,
        make: M,
        announce: Announce<()>,
    ) -> Result<TaskRecord, StoreError>
    where
        M: FnOnce(&Limits, Millis) -> TaskRecord + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        self.spawn(async move {
            let mut client = inner.pool.get().await.map_err(backend)?;
            let tx = client.transaction().await.map_err(pg)?;
            let record = make(&inner.limits, inner.clock.now_ms());
            let events: Vec<_> = announce(&(), &record).into_iter().collect();
            db::insert_row(&tx, &record).await?;
            inner.notify(&tx, &events).await?;
            // The shared counter rows last: locked only until the commit that follows.
            db::count_new(&tx, &record, &inner.limits).await?;
            inner.commit(tx, events).await?;
            Ok(record)
        })
        .await
    }

    /// The row stays locked from the read to the commit.
    async fn update_task<R, F>(
        &self,
        owner: &Owner,
        id: &TaskId,
        mut f: F,
        announce: Announce<R>,
    ) -> Result<(R, TaskRecord), StoreError>
    where
        R: Send + 'static,
        F: FnMut(&mut TaskRecord, Millis, &Limits) -> Result<R, StoreError> + Send + 'static,
    {
        let (owner, id, inner) = (owner.clone(), id.clone(), Arc::clone(&self.inner));
        self.spawn(async move {
            let mut client = inner.pool.get().await.map_err(backend)?;
            let tx = client.transaction().await.map_err(pg)?;
            let now = inner.clock.now_ms();
            let mut rec = db::load(&tx, &owner, &id, now, true)
                .await?
                .ok_or(StoreError::NotFound)?;
            let (revision, was_live) = (rec.revision, !rec.is_terminal());
            // On error the transaction is dropped: rolled back, nothing changed.
            let value = f(&mut rec, now, &inner.limits)?;
            if rec.revision != revision {
                db::save(&tx, &rec).await?;
                let events: Vec<_> = announce(&value, &rec).into_iter().collect();
                inner.notify(&tx, &events).await?;
                // The shared counter rows last: locked only until the commit that follows.
                if was_live && rec.is_terminal() {
                    db::release_live(&tx, owner.as_str().as_bytes(), 1).await?;
                }
                inner.commit(tx, events).await?;
            }
            Ok((value, rec))
        })
        .await
    }

    /// The oldest queued task no other claim holds, locked (`FOR UPDATE SKIP LOCKED`),
    /// changed and committed in one transaction.
    async fn claim_task<R, F>(
        &self,
        tools: &[String],
        mut f: F,
        announce: Announce<R>,
    ) -> Result<Option<(R, TaskRecord)>, StoreError>
    where
        R: Send + 'static,
        F: FnMut(&mut TaskRecord, Millis, &Limits) -> Result<R, StoreError>
            + Clone
            + Send
            + 'static,
    {
        let (tools, inner) = (tools.to_vec(), Arc::clone(&self.inner));
        self.spawn(async move {
            let mut client = inner.pool.get().await.map_err(backend)?;
            let tx = client.transaction().await.map_err(pg)?;
            let now = inner.clock.now_ms();
            let Some(mut rec) = db::next_queued(&tx, &tools, now).await? else {
                return Ok(None);
            };
            let value = f(&mut rec, now, &inner.limits)?;
            db::save(&tx, &rec).await?;
            let events: Vec<_> = announce(&value, &rec).into_iter().collect();
            inner.notify(&tx, &events).await?;
            inner.commit(tx, events).await?;
            Ok(Some((value, rec)))
        })
        .await
    }

    async fn read_task(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        let client = self.inner.pool.get().await.map_err(backend)?;
        let now = self.inner.clock.now_ms();
        db::load(&client, owner, id, now, false)
            .await?
            .ok_or(StoreError::NotFound)
    }

    async fn list_tasks(
        &self,
        owner: &Owner,
        after: Option<(Millis, TaskId)>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        let client = self.inner.pool.get().await.map_err(backend)?;
        let now = self.inner.clock.now_ms();
        db::list(&client, owner, after, limit, now).await
    }

    async fn sweep_tasks(&self) -> Result<SweepReport, StoreError> {
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

    fn subscribe(&self) -> EventStream {
        EventStream::with_resync(self.inner.events.subscribe())
    }

    fn session_store(&self) -> Option<&dyn crate::SessionStore> {
        Some(self)
    }
}
