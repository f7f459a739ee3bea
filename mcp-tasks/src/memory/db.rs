//! The memory store's data: tasks in 64 mutex shards by id (each with its expiry index
//! and its set of leased tasks), per-owner listing indexes in 64 shards by owner, an
//! atomic live total, the queue of tasks waiting for a worker, the operator index, and
//! the event feed. Every map and index names a task by its [`Id`] or [`Pos`] (`key.rs`),
//! values without a heap copy of the id. Lock order: owner shard, then task shard, then
//! the queue or the operator index (never both); never two task shards.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasher, Hash};
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use mcp_tasks_protocol::JsonObject;
use tokio::sync::broadcast;

use crate::clock::Clock;
use crate::cursor;
use crate::error::StoreError;
use crate::event::{EVENT_BUFFER, TaskEvent};
use crate::limits::{Limit, Limits};
use crate::log::{LogDraft, LogPage, TaskLog};

use crate::record::{Millis, Outcome, Owner, SweepReport, TaskId, TaskKey, TaskPage, TaskRecord};
use crate::rules;

use super::key::{Id, Pos};
use super::ops::{Facets, OperatorIndex};

const SHARDS: usize = 64;

/// Everything a [`MemoryStore`](crate::MemoryStore) and its clones share.
#[derive(Debug)]
pub(super) struct Inner {
    tasks: Box<[Mutex<TaskShard>]>,
    owners: Box<[Mutex<HashMap<Owner, OwnerIndex>>]>,
    live_total: AtomicUsize,
    /// Tasks waiting for a worker, by tool, in claim order `(created_at, id)`.
    queue: Mutex<Queue>,
    /// Every task for the operator's view (rule 22).
    pub(super) operator: Mutex<OperatorIndex>,
    hasher: RandomState,
    pub(super) limits: Limits,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) events: broadcast::Sender<TaskEvent>,
    /// MCP 2025-11-25 session records.
    pub(super) sessions: crate::session::LocalSessions,
    /// The node registry (contract rule 24).
    pub(super) nodes: super::nodes::Nodes,
}

/// A record as the memory store keeps it. A completed task's result is kept as compact
/// JSON text, as the durable stores keep it: a `serde_json` map tree costs several
/// times its text (an index map per object, a heap string per key). Everything else is
/// kept as is; `record` is the only way to the whole record.
#[derive(Debug)]
pub(super) struct Stored {
    /// The record; its `outcome` is `None` while `result` holds it.
    pub(super) record: TaskRecord,
    result: Option<Box<str>>,
    /// The task's log (contract rule 23); boxed, so a task costs a pointer for it.
    log: Box<TaskLog>,
}

impl Stored {
    /// Keeps `record`, its log starting with the entries `drafts`, written at `now`.
    fn new(record: TaskRecord, drafts: Vec<LogDraft>, now: Millis, limits: &Limits) -> Box<Stored> {
        let mut log = Box::<TaskLog>::default();
        log.append(drafts, now, limits);
        let mut stored = Box::new(Stored {
            record,
            result: None,
            log,
        });
        stored.compact();
        stored
    }

    /// Runs `f` on the whole record, in place; returns its value and a copy of the
    /// record after. The result is compact again afterwards, whatever `f` returned. The
    /// log entries `f` leaves in the record are appended when it succeeded.
    fn update<R>(
        &mut self,
        now: Millis,
        limits: &Limits,
        f: impl FnOnce(&mut TaskRecord) -> Result<R, StoreError>,
    ) -> Result<(R, TaskRecord), StoreError> {
        if let Some(text) = &self.result {
            let map = serde_json::from_str(text).map_err(StoreError::backend)?;
            self.record.outcome = Some(Outcome::Result(map));
            self.result = None;
        }
        let out = f(&mut self.record);
        let drafts = std::mem::take(&mut self.record.log_append);
        if out.is_ok() && !drafts.is_empty() {
            self.log.append(drafts, now, limits);
        }
        // Compact before copying: the copy then takes the result map itself, not a deep
        // copy of it.
        let result = self.compact();
        out.map(|value| {
            let mut record = self.record.clone();
            if let Some(map) = result {
                record.outcome = Some(Outcome::Result(map));
            }
            (value, record)
        })
    }

    /// Moves a completed result out of the record into compact text; returns the map.
    fn compact(&mut self) -> Option<JsonObject> {
        let Some(Outcome::Result(map)) = &self.record.outcome else {
            return None;
        };
        let text = serde_json::to_string(map).ok()?;
        self.result = Some(text.into_boxed_str());
        match self.record.outcome.take() {
            Some(Outcome::Result(map)) => Some(map),
            _ => None,
        }
    }

    /// The whole record.
    pub(super) fn record(&self) -> Result<TaskRecord, StoreError> {
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
pub(super) struct TaskShard {
    /// Boxed: a map slot is then a pointer, not a whole record, and the slots a hash
    /// table keeps free cost 8 bytes each instead of the size of a record.
    pub(super) tasks: HashMap<Id, Box<Stored>>,
    /// `(expires_at, id)` of every task with a TTL.
    expiries: BTreeSet<(Millis, Id)>,
    /// Unfinished tasks that hold a lease.
    leased: HashSet<Id>,
}

/// Tasks waiting for a worker: tool -> `(created_at, id)` -> owner.
type Queue = HashMap<String, BTreeMap<Pos, Owner>>;

/// Moves the queue entry of `rec`, at `key`, from tool `before` to tool `after` (`None`:
/// not queued); called under the task's shard lock.
fn requeue(
    queue: &Mutex<Queue>,
    before: Option<&str>,
    after: Option<&str>,
    key: Pos,
    rec: &TaskRecord,
) {
    if before == after {
        return;
    }
    let mut queue = lock(queue);
    if let Some(tool) = before
        && let Some(entries) = queue.get_mut(tool)
    {
        entries.remove(&key);
        if entries.is_empty() {
            queue.remove(tool);
        }
    }
    if let Some(tool) = after {
        queue
            .entry(tool.to_owned())
            .or_default()
            .insert(key, rec.owner.clone());
    }
}

#[derive(Debug, Default)]
pub(super) struct OwnerIndex {
    /// `(created_at, id)`: the listing order (the operator's view walks it too).
    pub(super) order: BTreeSet<Pos>,
    /// Unfinished tasks of this owner.
    live: usize,
    /// Idempotency keys (contract rule 25) -> the task created with each; an entry whose
    /// task is gone or expired no longer holds its key.
    keys: HashMap<String, Id>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned shard only means a panic elsewhere mid-operation; every operation
    // validates before it mutates, so the data is still consistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Inner {
    pub(super) fn new(limits: Limits, clock: Arc<dyn Clock>) -> Inner {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        Inner {
            tasks: (0..SHARDS).map(|_| Mutex::default()).collect(),
            owners: (0..SHARDS).map(|_| Mutex::default()).collect(),
            live_total: AtomicUsize::new(0),
            queue: Mutex::default(),
            operator: Mutex::default(),
            hasher: RandomState::new(),
            limits,
            clock,
            events,
            sessions: Default::default(),
            nodes: Default::default(),
        }
    }

    /// How many tasks are stored.
    pub(super) fn len(&self) -> usize {
        self.tasks.iter().map(|s| lock(s).tasks.len()).sum()
    }

    fn shard_of<K: Hash>(&self, key: &K) -> usize {
        (self.hasher.hash_one(key) as usize) % SHARDS
    }

    pub(super) fn task_shard(&self, id: &Id) -> MutexGuard<'_, TaskShard> {
        lock(&self.tasks[self.shard_of(id)])
    }

    pub(super) fn owner_shard(&self, owner: &Owner) -> MutexGuard<'_, HashMap<Owner, OwnerIndex>> {
        lock(&self.owners[self.shard_of(owner)])
    }

    /// Publishes `event` to every subscriber of every clone.
    pub(super) fn publish(&self, event: TaskEvent) {
        // No subscriber is not an error.
        let _ = self.events.send(event);
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

    /// Stores a new record within the owner's and the total live limits, with its
    /// index entries.
    pub(super) fn insert(
        &self,
        record: &TaskRecord,
        drafts: Vec<LogDraft>,
        now: Millis,
    ) -> Result<(), StoreError> {
        let id = Id::of_new(record)?;
        let pos = Pos::of(record, id);
        // Lock order: owner shard, then task shard.
        let mut owners = self.owner_shard(&record.owner);
        let index = owners.entry(record.owner.clone()).or_default();
        if let Some(idempotency) = &record.idempotency
            && let Some(first) = index.keys.get(&idempotency.key)
        {
            // Under the owner shard's lock: no other insert of this owner runs meanwhile.
            let shard = self.task_shard(first);
            if let Some(s) = shard.tasks.get(first)
                && !s.record.is_expired(now)
            {
                let same = s
                    .record
                    .idempotency
                    .as_ref()
                    .is_some_and(|i| i.fingerprint == idempotency.fingerprint);
                return Err(if same {
                    StoreError::AlreadyExists {
                        task: Box::new(s.record()?),
                    }
                } else {
                    StoreError::IdempotencyConflict
                });
            }
        }
        if index.live >= self.limits.max_live_tasks_per_owner {
            return Err(StoreError::LimitExceeded {
                limit: Limit::LiveTasksPerOwner,
                max: self.limits.max_live_tasks_per_owner as u64,
            });
        }
        self.reserve_total()?;
        index.live += 1;
        index.order.insert(pos);
        if let Some(idempotency) = &record.idempotency {
            index.keys.insert(idempotency.key.clone(), id);
        }
        let mut shard = self.task_shard(&id);
        if let Some(at) = record.expires_at() {
            shard.expiries.insert((at, id));
        }
        if record.lease.is_some() {
            shard.leased.insert(id);
        }
        requeue(&self.queue, None, record.queued_tool(), pos, record);
        lock(&self.operator).insert(pos, &Facets::of(record));
        let stored = Stored::new(record.clone(), drafts, now, &self.limits);
        shard.tasks.insert(id, stored);
        Ok(())
    }

    /// The oldest queued task of `tools` not in `passed`: its owner and id.
    pub(super) fn next_queued(
        &self,
        tools: &[String],
        passed: &HashSet<TaskId>,
    ) -> Option<(Owner, TaskId)> {
        let passed: HashSet<Id> = passed.iter().filter_map(Id::of).collect();
        let queue = lock(&self.queue);
        tools
            .iter()
            .filter_map(|tool| {
                queue
                    .get(tool)?
                    .iter()
                    .find(|(pos, _)| !passed.contains(&pos.id))
            })
            .min_by(|a, b| a.0.cmp(b.0))
            .map(|(pos, owner)| (owner.clone(), pos.id.task_id()))
    }

    /// Runs `f` on the owner's task unexpired at `now`, in place under its shard lock;
    /// keeps the leased set and the live counts in step. Returns `f`'s value, the record
    /// after, and whether `f` changed it (bumped its revision).
    pub(super) fn update<R>(
        &self,
        owner: &Owner,
        id: &TaskId,
        now: Millis,
        f: impl FnOnce(&mut TaskRecord) -> Result<R, StoreError>,
    ) -> Result<(R, TaskRecord, bool), StoreError> {
        let id = Id::of(id).ok_or(StoreError::NotFound)?;
        let (value, record, changed, finished) = {
            let mut shard = self.task_shard(&id);
            let stored = match shard.tasks.get_mut(&id) {
                Some(s) if &s.record.owner == owner && !s.record.is_expired(now) => s,
                _ => return Err(StoreError::NotFound),
            };
            let (was_terminal, revision) = (stored.record.is_terminal(), stored.record.revision);
            let queued = stored.record.queued_tool().map(str::to_owned);
            let facets = Facets::of(&stored.record);
            let (value, record) = stored.update(now, &self.limits, f)?;
            let pos = Pos::of(&record, id);
            requeue(
                &self.queue,
                queued.as_deref(),
                record.queued_tool(),
                pos,
                &record,
            );
            lock(&self.operator).change(pos, &facets, &Facets::of(&record));
            let finished = !was_terminal && record.is_terminal();
            if record.lease.is_some() && !record.is_terminal() {
                shard.leased.insert(id);
            } else {
                shard.leased.remove(&id);
            }
            let changed = record.revision != revision;
            (value, record, changed, finished)
        };
        if finished {
            self.release_live(owner);
        }
        Ok((value, record, changed))
    }

    /// Appends `drafts` to the log of the owner's unfinished task unexpired at `now`;
    /// returns the `seq` of the last.
    pub(super) fn append_log(
        &self,
        owner: &Owner,
        id: &TaskId,
        now: Millis,
        drafts: Vec<LogDraft>,
    ) -> Result<u64, StoreError> {
        let id = Id::of(id).ok_or(StoreError::NotFound)?;
        let mut shard = self.task_shard(&id);
        match shard.tasks.get_mut(&id) {
            Some(s) if &s.record.owner == owner && !s.record.is_expired(now) => {
                if s.record.is_terminal() {
                    return Err(StoreError::Terminal {
                        status: s.record.status,
                    });
                }
                s.log
                    .append(drafts, now, &self.limits)
                    .ok_or_else(|| StoreError::backend("nothing to append"))
            }
            _ => Err(StoreError::NotFound),
        }
    }

    /// At most `limit` entries of the log of the owner's task unexpired at `now`, after
    /// `after`.
    pub(super) fn read_log(
        &self,
        owner: &Owner,
        id: &TaskId,
        now: Millis,
        after: Option<u64>,
        limit: usize,
    ) -> Result<LogPage, StoreError> {
        let id = Id::of(id).ok_or(StoreError::NotFound)?;
        match self.task_shard(&id).tasks.get(&id) {
            Some(s) if &s.record.owner == owner && !s.record.is_expired(now) => {
                Ok(s.log.read(after, limit))
            }
            _ => Err(StoreError::NotFound),
        }
    }

    /// The owner's task unexpired at `now`.
    pub(super) fn read(
        &self,
        owner: &Owner,
        id: &TaskId,
        now: Millis,
    ) -> Result<TaskRecord, StoreError> {
        let id = Id::of(id).ok_or(StoreError::NotFound)?;
        match self.task_shard(&id).tasks.get(&id) {
            Some(s) if &s.record.owner == owner && !s.record.is_expired(now) => s.record(),
            _ => Err(StoreError::NotFound),
        }
    }

    /// One page of the owner's tasks unexpired at `now`, after `after`.
    pub(super) fn page(
        &self,
        owner: &Owner,
        after: Option<(Millis, TaskId)>,
        limit: usize,
        now: Millis,
    ) -> Result<TaskPage, StoreError> {
        let lower = match &after {
            Some(cursor) => {
                Bound::Excluded(Pos::of_cursor(cursor).ok_or(StoreError::InvalidCursor)?)
            }
            None => Bound::Unbounded,
        };
        let keys: Vec<Pos> = match self.owner_shard(owner).get(owner) {
            Some(index) => index
                .order
                .range((lower, Bound::Unbounded))
                .take(limit + 1)
                .copied()
                .collect(),
            None => Vec::new(),
        };
        let more = keys.len() > limit;
        let page = &keys[..keys.len().min(limit)];
        let mut tasks = Vec::with_capacity(page.len());
        for pos in page {
            if let Some(s) = self.task_shard(&pos.id).tasks.get(&pos.id)
                && &s.record.owner == owner
                && !s.record.is_expired(now)
            {
                tasks.push(s.record()?);
            }
        }
        let next_cursor = if more {
            page.last()
                .map(|pos| cursor::encode(pos.at, &pos.id.task_id()))
        } else {
            None
        };
        Ok(TaskPage { tasks, next_cursor })
    }

    /// Deletes the tasks expired at `now` and finds lapsed leases.
    pub(super) fn sweep(&self, now: Millis) -> SweepReport {
        let mut report = SweepReport::default();
        let mut purged: Vec<(TaskKey, Pos, bool, Option<String>)> = Vec::new();
        for shard in self.tasks.iter() {
            let mut shard = lock(shard);
            while let Some(&(at, id)) = shard.expiries.first() {
                if at > now {
                    break;
                }
                shard.expiries.pop_first();
                shard.leased.remove(&id);
                if let Some(s) = shard.tasks.remove(&id) {
                    let rec = &s.record;
                    let pos = Pos::of(rec, id);
                    requeue(&self.queue, rec.queued_tool(), None, pos, rec);
                    lock(&self.operator).remove(pos, &Facets::of(rec));
                    let key = rec.idempotency.as_ref().map(|i| i.key.clone());
                    purged.push((rec.key(), pos, !rec.is_terminal(), key));
                }
            }
            for id in &shard.leased {
                if let Some(s) = shard.tasks.get(id)
                    && rules::lease_lapsed(&s.record, now)
                {
                    report.lease_lapsed.push(s.record.key());
                }
            }
        }
        for (key, pos, was_live, idempotency_key) in purged {
            if let Some(index) = self.owner_shard(&key.owner).get_mut(&key.owner) {
                index.order.remove(&pos);
                if let Some(k) = idempotency_key
                    && index.keys.get(&k) == Some(&pos.id)
                {
                    index.keys.remove(&k);
                }
                if was_live {
                    index.live = index.live.saturating_sub(1);
                }
            }
            if was_live {
                self.live_total.fetch_sub(1, Ordering::AcqRel);
                report.expired_unfinished.push(key);
            }
            report.purged += 1;
        }
        // Drop owners with nothing left, so the index does not grow without bound.
        for shard in self.owners.iter() {
            lock(shard).retain(|_, index| {
                !index.order.is_empty() || index.live > 0 || !index.keys.is_empty()
            });
        }
        report
    }
}
