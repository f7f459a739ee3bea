//! [`MemoryStore`]: the in-process backend. Concurrent without a global lock: tasks live
//! in shards by id, each owner's listing index in shards by owner. Clones are handles on
//! the same store and share its event feed. Nothing survives the process.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasher, Hash};
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use mcp_protocol::JsonObject;
use mcp_protocol::jsonrpc::ErrorObject;
use serde_json::Value;
use tokio::sync::broadcast;

use crate::clock::{Clock, SystemClock};
use crate::cursor;
use crate::error::StoreError;
use crate::event::{EVENT_BUFFER, EventStream, TaskEvent};
use crate::limits::{Limit, Limits};
use crate::record::{
    Lease, Millis, NewTask, Outcome, Owner, Resolved, SweepReport, TaskId, TaskKey, TaskPage,
    TaskRecord, Transition,
};
use crate::rules::{self, Finish};
use crate::store::TaskStore;

const SHARDS: usize = 64;

/// The in-memory [`TaskStore`].
#[derive(Debug, Clone)]
pub struct MemoryStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    tasks: Box<[Mutex<TaskShard>]>,
    owners: Box<[Mutex<HashMap<Owner, OwnerIndex>>]>,
    live_total: AtomicUsize,
    hasher: RandomState,
    limits: Limits,
    clock: Arc<dyn Clock>,
    events: broadcast::Sender<TaskEvent>,
}

/// A record as the memory store keeps it. A completed task's result is kept as compact
/// JSON text, as the durable stores keep it: a `serde_json` map tree costs several
/// times its text (an index map per object, a heap string per key). Everything else is
/// kept as is; `record` is the only way to the whole record.
#[derive(Debug)]
struct Stored {
    /// The record; its `outcome` is `None` while `result` holds it.
    record: TaskRecord,
    result: Option<Box<str>>,
}

impl Stored {
    fn new(record: TaskRecord) -> Box<Stored> {
        let mut stored = Box::new(Stored {
            record,
            result: None,
        });
        stored.compact();
        stored
    }

    /// Runs `f` on the whole record, in place; returns its value and a copy of the
    /// record after. The result is compact again afterwards, whatever `f` returned.
    fn update<R>(
        &mut self,
        f: impl FnOnce(&mut TaskRecord) -> Result<R, StoreError>,
    ) -> Result<(R, TaskRecord), StoreError> {
        if let Some(text) = &self.result {
            let map = serde_json::from_str(text).map_err(StoreError::backend)?;
            self.record.outcome = Some(Outcome::Result(map));
            self.result = None;
        }
        let out = match f(&mut self.record) {
            Ok(value) => Ok((value, self.record.clone())),
            Err(e) => Err(e),
        };
        self.compact();
        out
    }

    /// Moves a completed result out of the record into compact text.
    fn compact(&mut self) {
        if let Some(Outcome::Result(map)) = &self.record.outcome
            && let Ok(text) = serde_json::to_string(map)
        {
            self.result = Some(text.into_boxed_str());
            self.record.outcome = None;
        }
    }

    /// The whole record.
    fn record(&self) -> Result<TaskRecord, StoreError> {
        let mut record = self.record.clone();
        if let Some(text) = &self.result {
            // Written by `new` from a map: it reads back as the same map.
            let map = serde_json::from_str(text).map_err(StoreError::backend)?;
            record.outcome = Some(Outcome::Result(map));
        }
        Ok(record)
    }
}

#[derive(Debug, Default)]
struct TaskShard {
    /// Boxed: a map slot is then a pointer, not a whole record, and the slots a hash
    /// table keeps free cost 8 bytes each instead of the size of a record.
    tasks: HashMap<TaskId, Box<Stored>>,
    /// `(expires_at, id)` of every task with a TTL.
    expiries: BTreeSet<(Millis, TaskId)>,
    /// Unfinished tasks that hold a lease.
    leased: HashSet<TaskId>,
}

#[derive(Debug, Default)]
struct OwnerIndex {
    /// `(created_at, id)`: the listing order.
    order: BTreeSet<(Millis, TaskId)>,
    /// Unfinished tasks of this owner.
    live: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned shard only means a panic elsewhere mid-operation; every operation
    // validates before it mutates, so the data is still consistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new(Limits::default())
    }
}

impl MemoryStore {
    /// A store with these limits on the system clock.
    pub fn new(limits: Limits) -> MemoryStore {
        MemoryStore::with_clock(limits, Arc::new(SystemClock))
    }

    /// A store reading time from `clock` (a [`ManualClock`](crate::ManualClock) in tests).
    pub fn with_clock(limits: Limits, clock: Arc<dyn Clock>) -> MemoryStore {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        MemoryStore {
            inner: Arc::new(Inner {
                tasks: (0..SHARDS).map(|_| Mutex::default()).collect(),
                owners: (0..SHARDS).map(|_| Mutex::default()).collect(),
                live_total: AtomicUsize::new(0),
                hasher: RandomState::new(),
                limits,
                clock,
                events,
            }),
        }
    }

    /// How many tasks are stored (finished ones included, expired ones until swept).
    pub fn len(&self) -> usize {
        self.inner.tasks.iter().map(|s| lock(s).tasks.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Inner {
    fn shard_of<K: Hash>(&self, key: &K) -> usize {
        (self.hasher.hash_one(key) as usize) % SHARDS
    }

    fn task_shard(&self, id: &TaskId) -> MutexGuard<'_, TaskShard> {
        lock(&self.tasks[self.shard_of(id)])
    }

    fn owner_shard(&self, owner: &Owner) -> MutexGuard<'_, HashMap<Owner, OwnerIndex>> {
        lock(&self.owners[self.shard_of(owner)])
    }

    fn publish(&self, event: TaskEvent) {
        // No subscriber is not an error.
        let _ = self.events.send(event);
    }

    fn changed(&self, rec: &TaskRecord) {
        self.publish(TaskEvent::Changed {
            key: rec.key(),
            status: rec.status,
            revision: rec.revision,
        });
    }

    /// Runs `f` on the owner's unexpired task under its shard lock. Returns `f`'s value,
    /// the record after, and whether this call finished the task.
    fn update<R>(
        &self,
        owner: &Owner,
        id: &TaskId,
        f: impl FnOnce(&mut TaskRecord, Millis) -> Result<R, StoreError>,
    ) -> Result<(R, TaskRecord, bool), StoreError> {
        let now = self.clock.now_ms();
        let (value, record, finished) = {
            let mut shard = self.task_shard(id);
            let stored = match shard.tasks.get_mut(id) {
                Some(s) if &s.record.owner == owner && !s.record.is_expired(now) => s,
                _ => return Err(StoreError::NotFound),
            };
            let was_terminal = stored.record.is_terminal();
            let (value, record) = stored.update(|rec| f(rec, now))?;
            let finished = !was_terminal && record.is_terminal();
            if record.lease.is_some() && !record.is_terminal() {
                shard.leased.insert(id.clone());
            } else {
                shard.leased.remove(id);
            }
            (value, record, finished)
        };
        if finished {
            self.release_live(owner);
        }
        Ok((value, record, finished))
    }

    fn release_live(&self, owner: &Owner) {
        if let Some(index) = self.owner_shard(owner).get_mut(owner) {
            index.live = index.live.saturating_sub(1);
        }
        self.live_total.fetch_sub(1, Ordering::AcqRel);
    }

    fn reserve_total(&self) -> Result<(), StoreError> {
        let max = self.limits.max_live_tasks_total;
        self.live_total
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .map(|_| ())
            .map_err(|_| StoreError::LimitExceeded {
                limit: Limit::LiveTasksTotal,
                max: max as u64,
            })
    }

    fn finish(&self, owner: &Owner, id: &TaskId, finish: Finish) -> Result<Transition, StoreError> {
        rules::check_finish(&finish, &self.limits)?;
        let (won, record, _) =
            self.update(owner, id, |rec, now| Ok(rules::finish(rec, finish, now)))?;
        if won {
            self.changed(&record);
        }
        Ok(Transition { won, record })
    }
}

impl MemoryStore {
    /// Stores a new record (rule 2): the owner's and the total live limits, the indexes.
    fn insert_new(&self, record: TaskRecord) -> Result<TaskRecord, StoreError> {
        let inner = &*self.inner;
        let id = record.id.clone();
        {
            // Lock order: owner shard, then task shard.
            let mut owners = inner.owner_shard(&record.owner);
            let index = owners.entry(record.owner.clone()).or_default();
            if index.live >= inner.limits.max_live_tasks_per_owner {
                return Err(StoreError::LimitExceeded {
                    limit: Limit::LiveTasksPerOwner,
                    max: inner.limits.max_live_tasks_per_owner as u64,
                });
            }
            inner.reserve_total()?;
            index.live += 1;
            index.order.insert((record.created_at, id.clone()));
            let mut shard = inner.task_shard(&id);
            if let Some(at) = record.expires_at() {
                shard.expiries.insert((at, id.clone()));
            }
            if record.lease.is_some() {
                shard.leased.insert(id.clone());
            }
            shard.tasks.insert(id, Stored::new(record.clone()));
        }
        inner.changed(&record);
        Ok(record)
    }
}

#[async_trait]
impl TaskStore for MemoryStore {
    async fn create(&self, new: NewTask) -> Result<TaskRecord, StoreError> {
        let inner = &*self.inner;
        let id = TaskId::random().map_err(StoreError::backend)?;
        self.insert_new(rules::new_record(
            id,
            new,
            &inner.limits,
            inner.clock.now_ms(),
        ))
    }

    async fn create_leased(
        &self,
        new: NewTask,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<TaskRecord, StoreError> {
        let inner = &*self.inner;
        let id = TaskId::random().map_err(StoreError::backend)?;
        let now = inner.clock.now_ms();
        self.insert_new(rules::new_leased_record(
            id,
            new,
            &inner.limits,
            now,
            holder,
            ttl_ms,
        ))
    }

    async fn get(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        let now = self.inner.clock.now_ms();
        match self.inner.task_shard(id).tasks.get(id) {
            Some(s) if &s.record.owner == owner && !s.record.is_expired(now) => s.record(),
            _ => Err(StoreError::NotFound),
        }
    }

    async fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        let after = cursor.map(cursor::decode).transpose()?;
        let limit = limit.max(1);
        let keys: Vec<(Millis, TaskId)> = {
            let owners = self.inner.owner_shard(owner);
            let Some(index) = owners.get(owner) else {
                return Ok(TaskPage {
                    tasks: Vec::new(),
                    next_cursor: None,
                });
            };
            let lower = match &after {
                Some(key) => Bound::Excluded(key),
                None => Bound::Unbounded,
            };
            index
                .order
                .range((lower, Bound::Unbounded))
                .take(limit + 1)
                .cloned()
                .collect()
        };
        let more = keys.len() > limit;
        let page = &keys[..keys.len().min(limit)];
        let now = self.inner.clock.now_ms();
        let mut tasks = Vec::with_capacity(page.len());
        for (_, id) in page {
            if let Some(s) = self.inner.task_shard(id).tasks.get(id)
                && &s.record.owner == owner
                && !s.record.is_expired(now)
            {
                tasks.push(s.record()?);
            }
        }
        let next_cursor = if more {
            page.last().map(|(at, id)| cursor::encode(*at, id))
        } else {
            None
        };
        Ok(TaskPage { tasks, next_cursor })
    }

    async fn set_status_message(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<TaskRecord, StoreError> {
        let (_, record, _) = self.inner.update(owner, id, |rec, now| {
            rules::set_status_message(rec, message, now)
        })?;
        self.inner.changed(&record);
        Ok(record)
    }

    async fn request_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        requests: BTreeMap<String, Value>,
    ) -> Result<TaskRecord, StoreError> {
        let limits = &self.inner.limits;
        let (changed, record, _) = self.inner.update(owner, id, |rec, now| {
            let before = rec.revision;
            rules::request_input(rec, requests, limits, now)?;
            Ok(rec.revision != before)
        })?;
        if changed {
            self.inner.changed(&record);
        }
        Ok(record)
    }

    async fn resolve_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        responses: BTreeMap<String, Value>,
    ) -> Result<Resolved, StoreError> {
        let (accepted, record, _) = self.inner.update(owner, id, |rec, now| {
            Ok(rules::resolve_input(rec, responses, now))
        })?;
        if !accepted.is_empty() {
            self.inner.changed(&record);
            self.inner.publish(TaskEvent::InputResponded {
                key: record.key(),
                keys: accepted.clone(),
            });
        }
        Ok(Resolved { accepted, record })
    }

    async fn take_input_response(
        &self,
        owner: &Owner,
        id: &TaskId,
        key: &str,
    ) -> Result<Option<Value>, StoreError> {
        Ok(self
            .inner
            .update(owner, id, |rec, now| {
                Ok(rules::take_input_response(rec, key, now))
            })?
            .0)
    }

    async fn complete(
        &self,
        owner: &Owner,
        id: &TaskId,
        result: JsonObject,
    ) -> Result<Transition, StoreError> {
        self.inner.finish(owner, id, Finish::Complete(result))
    }

    async fn fail(
        &self,
        owner: &Owner,
        id: &TaskId,
        error: ErrorObject,
    ) -> Result<Transition, StoreError> {
        self.inner.finish(owner, id, Finish::Fail(error))
    }

    async fn cancel(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<Transition, StoreError> {
        self.inner.finish(owner, id, Finish::Cancel(message))
    }

    async fn request_cancel(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        let (changed, record, _) = self
            .inner
            .update(owner, id, |rec, now| Ok(rules::request_cancel(rec, now)))?;
        if changed {
            self.inner
                .publish(TaskEvent::CancelRequested { key: record.key() });
        }
        Ok(record)
    }

    async fn claim_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        Ok(self
            .inner
            .update(owner, id, |rec, now| {
                rules::claim_lease(rec, holder, ttl_ms, now)
            })?
            .0)
    }

    async fn renew_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        Ok(self
            .inner
            .update(owner, id, |rec, now| {
                rules::renew_lease(rec, holder, ttl_ms, now)
            })?
            .0)
    }

    async fn release_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
    ) -> Result<(), StoreError> {
        self.inner
            .update(owner, id, |rec, now| rules::release_lease(rec, holder, now))?;
        Ok(())
    }

    async fn sweep(&self) -> Result<SweepReport, StoreError> {
        let inner = &*self.inner;
        let now = inner.clock.now_ms();
        let mut report = SweepReport::default();
        let mut purged: Vec<(TaskKey, Millis, bool)> = Vec::new();
        for shard in inner.tasks.iter() {
            let mut shard = lock(shard);
            while let Some((at, id)) = shard.expiries.first().cloned() {
                if at > now {
                    break;
                }
                shard.expiries.pop_first();
                shard.leased.remove(&id);
                if let Some(s) = shard.tasks.remove(&id) {
                    let rec = &s.record;
                    purged.push((rec.key(), rec.created_at, !rec.is_terminal()));
                }
            }
            let lapsed: Vec<TaskId> = shard
                .leased
                .iter()
                .filter(|id| {
                    shard
                        .tasks
                        .get(*id)
                        .is_some_and(|s| rules::lease_lapsed(&s.record, now))
                })
                .cloned()
                .collect();
            for id in lapsed {
                if let Some(s) = shard.tasks.get(&id) {
                    report.lease_lapsed.push(s.record.key());
                }
            }
        }
        for (key, created_at, was_live) in purged {
            if let Some(index) = inner.owner_shard(&key.owner).get_mut(&key.owner) {
                index.order.remove(&(created_at, key.id.clone()));
                if was_live {
                    index.live = index.live.saturating_sub(1);
                }
            }
            if was_live {
                inner.live_total.fetch_sub(1, Ordering::AcqRel);
                report.expired_unfinished.push(key);
            }
            report.purged += 1;
        }
        // Drop owners with nothing left, so the index does not grow without bound.
        for shard in inner.owners.iter() {
            lock(shard).retain(|_, index| !index.order.is_empty() || index.live > 0);
        }
        Ok(report)
    }

    fn events(&self) -> EventStream {
        EventStream::new(self.inner.events.subscribe())
    }
}
