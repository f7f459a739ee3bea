//! [`Backend`] for [`PostgresStore`]: a create goes out in a batch of creates
//! (`create_tasks_v10`), a change is a read then a compare-and-set on the row's
//! revision, each in a batch of its kind (`save_tasks_v10`; see `batch.rs`), a claim
//! one transaction (`FOR UPDATE SKIP LOCKED`); each publishes its events to this
//! handle's feed right after the commit and hands them to the notifier (`notify.rs`),
//! which tells the other handles; each operation a spawned task.
//!
//! Task logs (contract rule 13, schema version 9): the entries a write appends
//! ([`TaskRecord::log_append`]) travel in the row the write sends and are numbered from
//! the row's `log_next` in the same statement as its compare-and-set, so a write that
//! loses appends nothing; a tool's entries are one statement (`append_log`) that takes
//! the row's lock to number them.

use std::sync::Arc;

use super::schema::{self, backend, pg};
use super::{PostgresStore, db, nodes, operator};
use crate::backend::{Announce, Backend};
use crate::error::{BackendError, StoreError};
use crate::event::{EventStream, TaskEvent};
use crate::limits::Limits;
use crate::log::{LogDraft, LogPage};
use crate::node::{NodeBeat, NodeRecord};
use crate::operator::{OperatorFilter, OperatorPage, TaskCounts};
use crate::record::{Millis, Owner, SweepReport, TaskId, TaskKey, TaskPage, TaskRecord};

/// How often a write reads again after losing its compare-and-set.
const MAX_ATTEMPTS: u32 = 100;

/// How often a create runs again while every live count shard with room is held by
/// other creates (or its shard rows were missing), and the pauses between (doubling).
const BUSY_ATTEMPTS: u32 = 100;
const BUSY_PAUSE: std::time::Duration = std::time::Duration::from_micros(100);
const BUSY_PAUSE_MAX: std::time::Duration = std::time::Duration::from_millis(5);

/// What a keyed create did.
enum Keyed {
    /// Claimed the key and ran the create: its outcome (stored only when `Stored`).
    Created(db::Created),
    /// A task still kept holds the key: nothing was written.
    Held { task: String, same: bool },
}

/// A create with an idempotency key (contract rule 25): one transaction that claims the
/// key (`claim_idempotency_key`) and stores the task (`create_tasks_v10`, one row), so a
/// concurrent claim of the key on any handle waits for it and then finds the task. Not
/// batched with other creates: a refusal or a busy count rolls the claim back with it.
async fn create_keyed(
    inner: &super::Inner,
    row: &db::NewRow,
    idempotency: &crate::record::Idempotency,
    now: Millis,
) -> Result<Keyed, StoreError> {
    let mut client = inner.pool.get().await.map_err(backend)?;
    let tx = client.transaction().await.map_err(pg)?;
    if let db::KeyClaim::Held { task, same } =
        db::claim_key(&tx, row, &idempotency.key, &idempotency.fingerprint, now).await?
    {
        // Dropped: rolled back, nothing written.
        return Ok(Keyed::Held { task, same });
    }
    let created = db::create_batch(&tx, std::slice::from_ref(row), &inner.limits)
        .await?
        .pop()
        .ok_or_else(|| backend("create_tasks_v10 returned no outcome"))??;
    if created == db::Created::Stored {
        tx.commit().await.map_err(pg)?;
    }
    Ok(Keyed::Created(created))
}

impl Backend for PostgresStore {
    /// Writes are compare-and-set on the row's revision: one that lost reads again.
    const RERUNS_UPDATES: bool = true;
    const NAME: &'static str = "postgresql";
    /// Logs in `task_log` (schema version 9), written with the record they belong to.
    const LOGS: bool = true;
    /// Keys in `idempotency_keys` (schema version 12), claimed in the create's transaction.
    const IDEMPOTENCY: bool = true;

    fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// In a batch of creates (`create_tasks_v10`): counted, stored and announced, or refused;
    /// run again while the count shards with room are all held, or after making missing
    /// shard rows.
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
            let now = inner.clock.now_ms();
            let mut record = make(&inner.limits, now);
            let log = db::LogRows::of(std::mem::take(&mut record.log_append), now)?;
            let events: Vec<_> = announce(&(), &record).into_iter().collect();
            let row = db::NewRow::of(&record, log, inner.next_shard())?;
            let limits = &inner.limits;
            let mut pause = BUSY_PAUSE;
            for _ in 0..BUSY_ATTEMPTS {
                let created = match &record.idempotency {
                    None => inner.batches.create.call(row.clone()).await?,
                    Some(idempotency) => {
                        match create_keyed(&inner, &row, idempotency, now).await? {
                            Keyed::Created(created) => created,
                            Keyed::Held { task, same: false } => {
                                let _ = task;
                                return Err(StoreError::IdempotencyConflict);
                            }
                            Keyed::Held { task, same: true } => {
                                let key = db::ReadKey {
                                    owner: record.owner.clone(),
                                    id: TaskId::from_wire(task),
                                    now: inner.clock.now_ms(),
                                };
                                match inner.batches.read.call(key).await? {
                                    Some(task) => {
                                        return Err(StoreError::AlreadyExists {
                                            task: Box::new(task),
                                        });
                                    }
                                    // Gone since (expired): the key is free, claim it again.
                                    None => continue,
                                }
                            }
                        }
                    }
                };
                let (owner, max) = match created {
                    db::Created::Stored => {
                        inner.recent.keep(&record);
                        inner.publish(events);
                        return Ok(record);
                    }
                    db::Created::Busy => {
                        // Every shard with room is held by another create: again, shortly.
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(BUSY_PAUSE_MAX);
                        continue;
                    }
                    db::Created::OwnerShardsMissing => {
                        (Some(&record.owner), limits.max_live_tasks_per_owner)
                    }
                    db::Created::TotalShardsMissing => (None, limits.max_live_tasks_total),
                };
                let client = inner.pool.get().await.map_err(backend)?;
                db::make_shards(&client, owner, max).await?;
            }
            Err(StoreError::Unavailable(BackendError::new(
                "PostgreSQL: the live task counts stayed busy; try again",
            )))
        })
        .await
    }

    /// Read, change, then a write (in a batch, `save_tasks_v10`) that lands only if the
    /// revision read is still the row's; otherwise again, up to 100 times
    /// (`MAX_ATTEMPTS`).
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
            // The record this handle wrote last, when it has it: the change goes straight
            // to the compare-and-set; a change it refuses, leaves alone or loses runs
            // again from a read (`recent.rs`).
            let now = inner.clock.now_ms();
            if let Some(mut rec) = inner.recent.take(&owner, &id, now) {
                let (revision, was_live) = (rec.revision, !rec.is_terminal());
                if let Ok(value) = f(&mut rec, now, &inner.limits)
                    && rec.revision != revision
                {
                    let log = db::LogRows::of(std::mem::take(&mut rec.log_append), now)?;
                    let events: Vec<_> = announce(&value, &rec).into_iter().collect();
                    let row = db::SavedRow::of(&rec, revision, was_live, log)?;
                    if inner.batches.save.call(row).await? {
                        inner.recent.keep(&rec);
                        inner.publish(events);
                        return Ok((value, rec));
                    }
                }
            }
            for _ in 0..MAX_ATTEMPTS {
                let now = inner.clock.now_ms();
                let key = db::ReadKey {
                    owner: owner.clone(),
                    id: id.clone(),
                    now,
                };
                let mut rec = inner
                    .batches
                    .read
                    .call(key)
                    .await?
                    .ok_or(StoreError::NotFound)?;
                let (revision, was_live) = (rec.revision, !rec.is_terminal());
                let value = f(&mut rec, now, &inner.limits)?;
                let drafts = std::mem::take(&mut rec.log_append);
                if rec.revision == revision {
                    // Unchanged: nothing is written, its entries neither.
                    return Ok((value, rec));
                }
                let log = db::LogRows::of(drafts, now)?;
                let events: Vec<_> = announce(&value, &rec).into_iter().collect();
                let row = db::SavedRow::of(&rec, revision, was_live, log)?;
                if inner.batches.save.call(row).await? {
                    inner.recent.keep(&rec);
                    inner.publish(events);
                    return Ok((value, rec));
                }
            }
            Err(StoreError::Unavailable(BackendError::new(format!(
                "task {id} kept changing under {MAX_ATTEMPTS} writes in a row"
            ))))
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
            let (revision, was_live) = (rec.revision, !rec.is_terminal());
            let value = f(&mut rec, now, &inner.limits)?;
            let log = db::LogRows::of(std::mem::take(&mut rec.log_append), now)?;
            let events: Vec<_> = announce(&value, &rec).into_iter().collect();
            // The row is locked: the revision read is the row's. The claim's write is
            // a batch of one, in this transaction.
            let row = db::SavedRow::of(&rec, revision, was_live, log)?;
            let saved = db::save_batch(&tx, std::slice::from_ref(&row), &inner.limits).await?;
            if saved.first() != Some(&true) {
                return Err(backend("a claimed task changed under its row lock"));
            }
            tx.commit().await.map_err(pg)?;
            inner.recent.keep(&rec);
            inner.publish(events);
            Ok(Some((value, rec)))
        })
        .await
    }

    async fn read_task(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        let key = db::ReadKey {
            owner: owner.clone(),
            id: id.clone(),
            now: self.inner.clock.now_ms(),
        };
        self.inner
            .batches
            .read
            .call(key)
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

    async fn operator_list_tasks(
        &self,
        filter: &OperatorFilter,
        before: Option<(Millis, TaskId)>,
        limit: usize,
    ) -> Result<OperatorPage, StoreError> {
        let client = self.inner.pool.get().await.map_err(backend)?;
        let now = self.inner.clock.now_ms();
        operator::list(&client, filter, before, limit, now).await
    }

    async fn operator_read_task(&self, id: &TaskId) -> Result<TaskRecord, StoreError> {
        let client = self.inner.pool.get().await.map_err(backend)?;
        operator::read(&client, id, self.inner.clock.now_ms()).await
    }

    async fn operator_count_tasks(&self) -> Result<TaskCounts, StoreError> {
        let client = self.inner.pool.get().await.map_err(backend)?;
        operator::counts(&client).await
    }

    async fn beat_node(&self, beat: &NodeBeat) -> Result<NodeRecord, StoreError> {
        let client = self.inner.pool.get().await.map_err(backend)?;
        nodes::beat(&client, beat, self.inner.clock.now_ms()).await
    }

    async fn drain_node(&self, id: &str) -> Result<NodeRecord, StoreError> {
        let client = self.inner.pool.get().await.map_err(backend)?;
        nodes::drain(&client, id, self.inner.clock.now_ms()).await
    }

    async fn list_node_entries(&self) -> Result<Vec<NodeRecord>, StoreError> {
        let client = self.inner.pool.get().await.map_err(backend)?;
        nodes::list(&client, self.inner.clock.now_ms()).await
    }

    /// One statement (`append_log`) on a pooled connection, announced once committed.
    async fn append_log_entries(
        &self,
        owner: &Owner,
        id: &TaskId,
        drafts: Vec<LogDraft>,
    ) -> Result<u64, StoreError> {
        let (owner, id, inner) = (owner.clone(), id.clone(), Arc::clone(&self.inner));
        self.spawn(async move {
            let log = db::LogRows::of(drafts, inner.clock.now_ms())?;
            let client = inner.pool.get().await.map_err(backend)?;
            match db::append_log(&client, &owner, &id, &log, &inner.limits).await? {
                db::Appended::Last(seq) => {
                    inner.publish(vec![TaskEvent::Logged {
                        key: TaskKey { owner, id },
                        seq,
                    }]);
                    Ok(seq)
                }
                db::Appended::Finished(status) => Err(StoreError::Terminal { status }),
                db::Appended::Missing => Err(StoreError::NotFound),
            }
        })
        .await
    }

    /// One statement: the task's counters and the page together.
    async fn read_log_entries(
        &self,
        owner: &Owner,
        id: &TaskId,
        after: Option<u64>,
        limit: usize,
    ) -> Result<LogPage, StoreError> {
        let client = self.inner.pool.get().await.map_err(backend)?;
        let now = self.inner.clock.now_ms();
        db::read_log(&client, owner, id, now, after, limit)
            .await?
            .ok_or(StoreError::NotFound)
    }

    /// One statement (`sweep_expired`): its locks last that statement only. A task's log
    /// goes with its row (`ON DELETE CASCADE`).
    async fn sweep_tasks(&self) -> Result<SweepReport, StoreError> {
        let inner = Arc::clone(&self.inner);
        self.spawn(async move {
            let client = inner.pool.get().await.map_err(backend)?;
            // One sweep at a time per schema: concurrent DELETEs of the same expired rows
            // could lock them in different orders.
            let key = i64::from_ne_bytes(
                schema::fnv1a(&format!("mcp_tasks.sweep.{}", inner.schema)).to_ne_bytes(),
            );
            db::sweep(&client, inner.clock.now_ms(), key).await
        })
        .await
    }

    fn subscribe(&self) -> EventStream {
        EventStream::with_resync(self.inner.events.subscribe())
    }

    fn session_store(&self) -> Option<&dyn crate::session::SessionStore> {
        Some(self)
    }
}
