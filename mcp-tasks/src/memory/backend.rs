//! [`Backend`] for [`MemoryStore`]: each change made in place under its task's shard
//! lock (so each closure runs once), its events published right after.

use std::collections::HashSet;

use super::MemoryStore;
use crate::backend::{Announce, Backend};
use crate::error::StoreError;
use crate::event::{EventStream, TaskEvent};
use crate::limits::Limits;
use crate::log::{LogDraft, LogPage};
use crate::node::{NodeBeat, NodeRecord};
use crate::operator::{OperatorFilter, OperatorPage, TaskCounts};
use crate::record::{Millis, Owner, SweepReport, TaskId, TaskKey, TaskPage, TaskRecord};

impl Backend for MemoryStore {
    /// The shard lock serializes the writes to a task: each closure runs once.
    const RERUNS_UPDATES: bool = false;
    const NAME: &'static str = "memory";
    const LOGS: bool = true;
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
        let inner = &*self.inner;
        let now = inner.clock.now_ms();
        let mut record = make(&inner.limits, now);
        let drafts = std::mem::take(&mut record.log_append);
        inner.insert(&record, drafts, now)?;
        for event in announce(&(), &record) {
            inner.publish(event);
        }
        Ok(record)
    }

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
        let inner = &*self.inner;
        let now = inner.clock.now_ms();
        let (value, record, changed) =
            inner.update(owner, id, now, |rec| f(rec, now, &inner.limits))?;
        if changed {
            for event in announce(&value, &record) {
                inner.publish(event);
            }
        }
        Ok((value, record))
    }

    async fn read_task(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        self.inner.read(owner, id, self.inner.clock.now_ms())
    }

    async fn list_tasks(
        &self,
        owner: &Owner,
        after: Option<(Millis, TaskId)>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        let now = self.inner.clock.now_ms();
        self.inner.page(owner, after, limit, now)
    }

    /// Picks the oldest queued task, then claims it under its shard lock; a task another
    /// claim took first (`NotQueued`) or that expired is passed over.
    async fn claim_task<R, F>(
        &self,
        tools: &[String],
        f: F,
        announce: Announce<R>,
    ) -> Result<Option<(R, TaskRecord)>, StoreError>
    where
        R: Send + 'static,
        F: FnMut(&mut TaskRecord, Millis, &Limits) -> Result<R, StoreError>
            + Clone
            + Send
            + 'static,
    {
        let mut passed = HashSet::new();
        while let Some((owner, id)) = self.inner.next_queued(tools, &passed) {
            match self.update_task(&owner, &id, f.clone(), announce).await {
                Ok(claimed) => return Ok(Some(claimed)),
                Err(StoreError::NotQueued | StoreError::NotFound) => {
                    passed.insert(id);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    async fn operator_list_tasks(
        &self,
        filter: &OperatorFilter,
        before: Option<(Millis, TaskId)>,
        limit: usize,
    ) -> Result<OperatorPage, StoreError> {
        let now = self.inner.clock.now_ms();
        self.inner.operator_page(filter, before, limit, now)
    }

    async fn operator_read_task(&self, id: &TaskId) -> Result<TaskRecord, StoreError> {
        self.inner.operator_read(id, self.inner.clock.now_ms())
    }

    async fn operator_count_tasks(&self) -> Result<TaskCounts, StoreError> {
        Ok(self.inner.operator_counts())
    }

    async fn beat_node(&self, beat: &NodeBeat) -> Result<NodeRecord, StoreError> {
        Ok(self.inner.nodes.beat(beat, self.inner.clock.now_ms()))
    }

    async fn drain_node(&self, id: &str) -> Result<NodeRecord, StoreError> {
        self.inner.nodes.drain(id, self.inner.clock.now_ms())
    }

    async fn list_node_entries(&self) -> Result<Vec<NodeRecord>, StoreError> {
        Ok(self.inner.nodes.list(self.inner.clock.now_ms()))
    }

    async fn append_log_entries(
        &self,
        owner: &Owner,
        id: &TaskId,
        drafts: Vec<LogDraft>,
    ) -> Result<u64, StoreError> {
        let inner = &*self.inner;
        let seq = inner.append_log(owner, id, inner.clock.now_ms(), drafts)?;
        inner.publish(TaskEvent::Logged {
            key: TaskKey {
                owner: owner.clone(),
                id: id.clone(),
            },
            seq,
        });
        Ok(seq)
    }

    async fn read_log_entries(
        &self,
        owner: &Owner,
        id: &TaskId,
        after: Option<u64>,
        limit: usize,
    ) -> Result<LogPage, StoreError> {
        let inner = &*self.inner;
        inner.read_log(owner, id, inner.clock.now_ms(), after, limit)
    }

    async fn sweep_tasks(&self) -> Result<SweepReport, StoreError> {
        Ok(self.inner.sweep(self.inner.clock.now_ms()))
    }

    fn subscribe(&self) -> EventStream {
        EventStream::new(self.inner.events.subscribe())
    }

    fn session_store(&self) -> Option<&dyn crate::session::SessionStore> {
        Some(self)
    }
}

// Kept in this process (the issue allows it: one node serves these stores).
crate::session::local_session_store!(MemoryStore, |s| s.inner.sessions, s.inner.clock.now_ms());
