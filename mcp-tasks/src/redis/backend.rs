//! [`Backend`] for [`RedisStore`]: read the record, apply the closure in Rust, write back
//! with a compare-and-set script that also publishes the events; on a lost
//! compare-and-set, read again and re-run the closure.

use std::collections::HashSet;

use super::RedisStore;
use super::db::{Base, Create, MAX_ATTEMPTS, backoff};
use super::feed::Wire;
use super::keys::parse_member;
use super::place::{self, Room};
use crate::backend::{Announce, Backend};
use crate::error::StoreError;
use crate::event::EventStream;
use crate::limits::{Limit, Limits};
use crate::log::{LogDraft, LogPage};
use crate::node::{NodeBeat, NodeRecord};
use crate::operator::{OperatorFilter, OperatorPage, TaskCounts};
use crate::record::{Millis, Owner, SweepReport, TaskId, TaskPage, TaskRecord};

/// The payloads of what `announce` makes of a change.
fn wires<R>(announce: Announce<R>, value: &R, rec: &TaskRecord) -> Vec<Wire> {
    announce(value, rec)
        .into_iter()
        .map(|event| Wire::new(event, rec))
        .collect()
}

/// How many shards a create tries before it gives up (each retry follows counts read
/// after a refusal, so only creates racing for the last units of a limit get that far).
const CREATE_ATTEMPTS: usize = 8;

impl Backend for RedisStore {
    /// A write that lost its compare-and-set re-reads and runs its closure again.
    const RERUNS_UPDATES: bool = true;
    const NAME: &'static str = "redis";
    /// A list per task beside its hash, written by the record's own scripts.
    const LOGS: bool = true;
    /// An entry per owner and key in its task's slot, decided by the create script.
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
        let active = inner.active_shards();
        let keyed = record.idempotency.as_ref().map(|i| {
            // A keyed task goes to its key's shard, so the script sees both (and stays
            // there: no move to a shard with room).
            inner.keys.idempotency_shard(&record.owner, &i.key, active)
        });
        if let Some(shard) = keyed {
            if inner.keys.shard_of(&record.id) != shard {
                record.id = place::id_in_shard(&inner.keys, shard)?;
            }
        } else if inner.keys.shard_of(&record.id) >= active {
            // Only the first `active` shards hold a part of the limits.
            let shard = u16::try_from(place::pick(usize::from(active))).unwrap_or(0);
            record.id = place::id_in_shard(&inner.keys, shard)?;
        }
        let mut refused = None;
        for _ in 0..CREATE_ATTEMPTS {
            let events = wires(announce, &(), &record);
            let limit = match inner.create(&record, &drafts, now, events).await? {
                Create::Stored => {
                    inner.recent.keep(&record);
                    return Ok(record);
                }
                Create::Refused(limit) => limit,
                Create::Held(id) => {
                    // Read as the owner: gone since (expired) means the key is free.
                    match inner.load(&record.owner, &id, inner.clock.now_ms()).await {
                        Ok(task) => {
                            let same = task.idempotency.as_ref().map(|i| &i.fingerprint)
                                == record.idempotency.as_ref().map(|i| &i.fingerprint);
                            return Err(if same {
                                StoreError::AlreadyExists {
                                    task: Box::new(task),
                                }
                            } else {
                                StoreError::IdempotencyConflict
                            });
                        }
                        Err(StoreError::NotFound) => continue,
                        Err(e) => return Err(e),
                    }
                }
            };
            refused = Some(limit);
            if inner.keys.shards() == 1 || keyed.is_some() {
                break;
            }
            // The id's shard is full: move to a shard with room (a new random id there).
            let counts = inner.shard_counts(&record.owner).await?;
            match place::room(&inner.limits, active, &counts, limit) {
                Room::Shard(shard) => record.id = place::id_in_shard(&inner.keys, shard)?,
                Room::Full(limit) => {
                    refused = Some(limit);
                    break;
                }
            }
        }
        Err(inner.limit_error(refused.unwrap_or(Limit::LiveTasksTotal)))
    }

    /// Runs `f` on the owner's unexpired task and, if it changed the record (bumped its
    /// revision), writes it back unless someone else wrote first; then re-reads and runs
    /// `f` again. Publishes what `announce` makes of a committed change in the same script.
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
        // The record this handle wrote last, when it has it: the change goes straight to
        // the compare-and-set; a change it refuses, leaves alone or loses runs again from
        // a read (`recent.rs`).
        let now = inner.clock.now_ms();
        if let Some(mut rec) = inner.recent.take(owner, id, now) {
            let base = Base::of(&rec);
            if let Ok(value) = f(&mut rec, now, &inner.limits)
                && base.changed(&rec)
            {
                let events = wires(announce, &value, &rec);
                if inner.commit(&base, &mut rec, now, events).await? {
                    inner.recent.keep(&rec);
                    return Ok((value, rec));
                }
            }
        }
        for attempt in 0..MAX_ATTEMPTS {
            let now = inner.clock.now_ms();
            let mut rec = inner.load(owner, id, now).await?;
            let base = Base::of(&rec);
            // On error nothing was written.
            let value = f(&mut rec, now, &inner.limits)?;
            if !base.changed(&rec) {
                // Nothing to write: nor any log entry (rule 13).
                rec.log_append.clear();
                return Ok((value, rec));
            }
            let events = wires(announce, &value, &rec);
            if inner.commit(&base, &mut rec, now, events).await? {
                inner.recent.keep(&rec);
                return Ok((value, rec));
            }
            backoff(attempt).await;
        }
        // Contention passes: a later retry is safe.
        Err(StoreError::unavailable(format!(
            "redis: task {id} kept changing; gave up after {MAX_ATTEMPTS} attempts"
        )))
    }

    /// Reads the oldest queue members of `tools` and claims them in order through the
    /// compare-and-set write (which also takes the claimed task out of its queue); a task
    /// another claim took first (`NotQueued`) is passed over; entries of tasks that are
    /// gone or expired are dropped.
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
        const BATCH: usize = 16;
        let inner = &*self.inner;
        let mut passed: HashSet<String> = HashSet::new();
        loop {
            let members = inner.queued(tools, passed.len() + BATCH).await?;
            let fresh: Vec<String> = members
                .into_iter()
                .filter(|m| !passed.contains(m))
                .collect();
            if fresh.is_empty() {
                return Ok(None);
            }
            for m in fresh {
                passed.insert(m.clone());
                let Some((_, id)) = parse_member(&m) else {
                    continue;
                };
                let now = inner.clock.now_ms();
                let rec = match inner.load_raw(&id).await? {
                    Some(rec) if !rec.is_expired(now) => rec,
                    gone => {
                        let tool = gone.and_then(|r| r.origin.tool);
                        for t in tools
                            .iter()
                            .filter(|t| tool.as_ref().is_none_or(|x| x == *t))
                        {
                            inner.drop_queued(t, &m).await;
                        }
                        continue;
                    }
                };
                match self.update_task(&rec.owner, &id, f.clone(), announce).await {
                    Ok(claimed) => return Ok(Some(claimed)),
                    Err(StoreError::NotQueued | StoreError::NotFound) => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }

    async fn read_task(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        self.inner.load(owner, id, self.inner.clock.now_ms()).await
    }

    async fn list_tasks(
        &self,
        owner: &Owner,
        after: Option<(Millis, TaskId)>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        let now = self.inner.clock.now_ms();
        self.inner.page(owner, after, limit, now).await
    }

    async fn operator_list_tasks(
        &self,
        filter: &OperatorFilter,
        before: Option<(Millis, TaskId)>,
        limit: usize,
    ) -> Result<OperatorPage, StoreError> {
        let now = self.inner.clock.now_ms();
        self.inner.operator_page(filter, before, limit, now).await
    }

    async fn operator_read_task(&self, id: &TaskId) -> Result<TaskRecord, StoreError> {
        self.inner
            .operator_read(id, self.inner.clock.now_ms())
            .await
    }

    async fn operator_count_tasks(&self) -> Result<TaskCounts, StoreError> {
        self.inner.operator_counts().await
    }

    async fn beat_node(&self, beat: &NodeBeat) -> Result<NodeRecord, StoreError> {
        self.inner.beat_node(beat).await
    }

    async fn drain_node(&self, id: &str) -> Result<NodeRecord, StoreError> {
        self.inner.drain_node(id).await
    }

    async fn list_node_entries(&self) -> Result<Vec<NodeRecord>, StoreError> {
        self.inner.list_nodes().await
    }

    async fn append_log_entries(
        &self,
        owner: &Owner,
        id: &TaskId,
        drafts: Vec<LogDraft>,
    ) -> Result<u64, StoreError> {
        let inner = &*self.inner;
        if drafts.is_empty() {
            // Nothing to append: the last entry there is.
            let page = self.read_log_entries(owner, id, None, 1).await?;
            return Ok(page.next.saturating_sub(1));
        }
        inner
            .append_log(owner, id, inner.clock.now_ms(), &drafts)
            .await
    }

    async fn read_log_entries(
        &self,
        owner: &Owner,
        id: &TaskId,
        after: Option<u64>,
        limit: usize,
    ) -> Result<LogPage, StoreError> {
        let inner = &*self.inner;
        inner
            .read_log(owner, id, inner.clock.now_ms(), after, limit)
            .await
    }

    async fn sweep_tasks(&self) -> Result<SweepReport, StoreError> {
        self.inner.sweep().await
    }

    fn subscribe(&self) -> EventStream {
        let shared = &self.inner.shared;
        EventStream::with_resync_signal(shared.events.subscribe(), shared.resync.subscribe())
    }

    fn session_store(&self) -> Option<&dyn crate::session::SessionStore> {
        Some(self)
    }
}
