//! [`Backend`] for [`SqliteStore`]: every write one `BEGIN IMMEDIATE` transaction on the
//! blocking pool, its events published on the same thread right after the commit.

use rusqlite::TransactionBehavior;

use super::schema::backend;
use super::{SqliteStore, db, log, nodes, operator};
use crate::backend::{Announce, Backend};
use crate::error::StoreError;
use crate::event::{EventStream, TaskEvent};
use crate::limits::Limits;
use crate::log::{LogDraft, LogPage};
use crate::node::{NodeBeat, NodeRecord};
use crate::operator::{OperatorFilter, OperatorPage, TaskCounts};
use crate::record::{Millis, Owner, SweepReport, TaskId, TaskKey, TaskPage, TaskRecord};

impl Backend for SqliteStore {
    /// SQLite's write lock serializes the writes: each closure runs once.
    const RERUNS_UPDATES: bool = false;
    const NAME: &'static str = "sqlite";
    /// Each write's entries go in its transaction (schema version 4).
    const LOGS: bool = true;
    /// Keys in `idempotency_keys`, taken in the insert's transaction (schema version 5).
    const IDEMPOTENCY: bool = true;

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
        self.run(move |conn, inner| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)?;
            let now = inner.clock.now_ms();
            let mut record = make(&inner.limits, now);
            let drafts = std::mem::take(&mut record.log_append);
            db::insert(&tx, &record, drafts, now, &inner.limits)?;
            tx.commit().map_err(backend)?;
            for event in announce(&(), &record) {
                inner.publish(event);
            }
            Ok(record)
        })
        .await
    }

    /// Commit and publication happen together on the blocking thread, so a caller that
    /// stops waiting (its future dropped) cannot leave a committed change unannounced.
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
        let (owner, id) = (owner.clone(), id.clone());
        self.run(move |conn, inner| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)?;
            let now = inner.clock.now_ms();
            let (mut rec, log) = db::load(&tx, &owner, &id, now)?.ok_or(StoreError::NotFound)?;
            let (revision, was_live) = (rec.revision, !rec.is_terminal());
            // On error the transaction is dropped: rolled back, nothing changed.
            let value = f(&mut rec, now, &inner.limits)?;
            // Taken whether or not the record changed: no change, no entries.
            let drafts = std::mem::take(&mut rec.log_append);
            if rec.revision != revision {
                let log = log::append(&tx, &rec.id, log, drafts, now, &inner.limits)?;
                db::save(&tx, &rec, log)?;
                if was_live && rec.is_terminal() {
                    db::release_live(&tx, owner.as_str(), 1)?;
                }
                tx.commit().map_err(backend)?;
                for event in announce(&value, &rec) {
                    inner.publish(event);
                }
            }
            Ok((value, rec))
        })
        .await
    }

    /// The oldest queued task, read and changed in one `BEGIN IMMEDIATE` transaction:
    /// no other write comes in between.
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
        let tools = tools.to_vec();
        self.run(move |conn, inner| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)?;
            let now = inner.clock.now_ms();
            let Some((mut rec, log)) = db::next_queued(&tx, &tools, now)? else {
                return Ok(None);
            };
            let value = f(&mut rec, now, &inner.limits)?;
            let drafts = std::mem::take(&mut rec.log_append);
            let log = log::append(&tx, &rec.id, log, drafts, now, &inner.limits)?;
            db::save(&tx, &rec, log)?;
            tx.commit().map_err(backend)?;
            for event in announce(&value, &rec) {
                inner.publish(event);
            }
            Ok(Some((value, rec)))
        })
        .await
    }

    async fn read_task(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        let (owner, id) = (owner.clone(), id.clone());
        self.run(move |conn, inner| {
            db::load(conn, &owner, &id, inner.clock.now_ms())?
                .map(|(rec, _)| rec)
                .ok_or(StoreError::NotFound)
        })
        .await
    }

    async fn list_tasks(
        &self,
        owner: &Owner,
        after: Option<(Millis, TaskId)>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        let owner = owner.clone();
        self.run(move |conn, inner| db::list(conn, &owner, after, limit, inner.clock.now_ms()))
            .await
    }

    async fn operator_list_tasks(
        &self,
        filter: &OperatorFilter,
        before: Option<(Millis, TaskId)>,
        limit: usize,
    ) -> Result<OperatorPage, StoreError> {
        let filter = filter.clone();
        self.run(move |conn, inner| {
            operator::list(conn, &filter, before, limit, inner.clock.now_ms())
        })
        .await
    }

    async fn operator_read_task(&self, id: &TaskId) -> Result<TaskRecord, StoreError> {
        let id = id.clone();
        self.run(move |conn, inner| operator::read(conn, &id, inner.clock.now_ms()))
            .await
    }

    async fn operator_count_tasks(&self) -> Result<TaskCounts, StoreError> {
        self.run(|conn, _| operator::counts(conn)).await
    }

    async fn beat_node(&self, beat: &NodeBeat) -> Result<NodeRecord, StoreError> {
        let beat = beat.clone();
        self.run(move |conn, inner| nodes::beat(conn, &beat, inner.clock.now_ms()))
            .await
    }

    async fn drain_node(&self, id: &str) -> Result<NodeRecord, StoreError> {
        let id = id.to_owned();
        self.run(move |conn, inner| nodes::drain(conn, &id, inner.clock.now_ms()))
            .await
    }

    async fn list_node_entries(&self) -> Result<Vec<NodeRecord>, StoreError> {
        self.run(|conn, inner| nodes::list(conn, inner.clock.now_ms()))
            .await
    }

    /// Publishes on the blocking thread right after the commit, as `update_task` does.
    async fn append_log_entries(
        &self,
        owner: &Owner,
        id: &TaskId,
        drafts: Vec<LogDraft>,
    ) -> Result<u64, StoreError> {
        let key = TaskKey {
            owner: owner.clone(),
            id: id.clone(),
        };
        self.run(move |conn, inner| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)?;
            let now = inner.clock.now_ms();
            let seq = log::append_to_task(&tx, &key.owner, &key.id, drafts, now, &inner.limits)?;
            tx.commit().map_err(backend)?;
            inner.publish(TaskEvent::Logged { key, seq });
            Ok(seq)
        })
        .await
    }

    async fn read_log_entries(
        &self,
        owner: &Owner,
        id: &TaskId,
        after: Option<u64>,
        limit: usize,
    ) -> Result<LogPage, StoreError> {
        let (owner, id) = (owner.clone(), id.clone());
        self.run(move |conn, inner| {
            log::read(conn, &owner, &id, inner.clock.now_ms(), after, limit)
        })
        .await
    }

    async fn sweep_tasks(&self) -> Result<SweepReport, StoreError> {
        self.run(|conn, inner| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)?;
            let report = db::sweep(&tx, inner.clock.now_ms())?;
            tx.commit().map_err(backend)?;
            Ok(report)
        })
        .await
    }

    fn subscribe(&self) -> EventStream {
        EventStream::new(self.inner.events.subscribe())
    }

    fn session_store(&self) -> Option<&dyn crate::session::SessionStore> {
        Some(self)
    }
}

// Kept in this process (the issue allows it: one node serves these stores).
crate::session::local_session_store!(SqliteStore, |s| s.inner.sessions, s.inner.clock.now_ms());
