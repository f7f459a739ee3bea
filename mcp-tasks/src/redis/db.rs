//! The Redis side of each operation: reading records, the compare-and-set commit, the
//! create script, the listing query.

use std::time::Duration;

use super::conn::Conn;
use super::feed::Wire;
use super::keys::{member, parse_member};
use super::logs::LogBlock;
use super::operator::{Facets, holder_arg, tool_arg};
use super::place::quota;
use super::{Inner, scripts, store_error};
use crate::cursor;
use crate::error::StoreError;
use crate::limits::Limit;
use crate::log::LogDraft;
use crate::record::{Millis, Owner, TaskId, TaskPage, TaskRecord};

/// How often a write re-reads and retries after losing a compare-and-set.
pub(super) const MAX_ATTEMPTS: u32 = 100;

fn encode(rec: &TaskRecord) -> Result<String, StoreError> {
    serde_json::to_string(rec).map_err(store_error)
}

fn decode(json: &str) -> Result<TaskRecord, StoreError> {
    serde_json::from_str(json).map_err(|e| store_error(format!("corrupt task record: {e}")))
}

/// A short random pause before retrying a lost compare-and-set, growing with `attempt`.
pub(super) async fn backoff(attempt: u32) {
    if attempt == 0 {
        tokio::task::yield_now().await;
        return;
    }
    let cap = u64::from(attempt.min(20));
    let jitter = getrandom::u64().unwrap_or(0) % (cap * 500 + 1);
    tokio::time::sleep(Duration::from_micros(jitter)).await;
}

/// What a compare-and-set write is based on: the record as read, before the change.
#[derive(Debug)]
pub(super) struct Base {
    /// The revision read.
    revision: u64,
    /// Whether the task was unfinished.
    live: bool,
    /// Whether it waited for a worker.
    queued: bool,
    /// Its place in the operator's view.
    facets: Facets,
}

impl Base {
    pub(super) fn of(rec: &TaskRecord) -> Base {
        Base {
            revision: rec.revision,
            live: !rec.is_terminal(),
            queued: rec.queued_tool().is_some(),
            facets: Facets::of(rec),
        }
    }

    /// Whether `rec` changed since (its revision moved).
    pub(super) fn changed(&self, rec: &TaskRecord) -> bool {
        rec.revision != self.revision
    }
}

impl Inner {
    pub(super) fn conn(&self) -> Conn {
        // Cheap: a handle on the multiplexed connection(s).
        self.conn.clone()
    }

    /// Runs `cmds` at once (each on its own slot's node, no pipeline: a pipeline goes to
    /// one node) and returns their answers in order.
    pub(super) async fn each<T: redis::FromRedisValue>(
        &self,
        cmds: Vec<redis::Cmd>,
    ) -> Result<Vec<T>, StoreError> {
        futures::future::try_join_all(cmds.into_iter().map(|cmd| {
            let mut conn = self.conn();
            async move { cmd.query_async::<T>(&mut conn).await }
        }))
        .await
        .map_err(store_error)
    }

    /// The stored record `id`, whoever owns it and whether expired.
    pub(super) async fn load_raw(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        let json: Option<String> = redis::cmd("HGET")
            .arg(self.keys.task(id))
            .arg("rec")
            .query_async(&mut self.conn())
            .await
            .map_err(store_error)?;
        json.as_deref().map(decode).transpose()
    }

    /// The owner's unexpired task, or `NotFound`.
    pub(super) async fn load(
        &self,
        owner: &Owner,
        id: &TaskId,
        now: Millis,
    ) -> Result<TaskRecord, StoreError> {
        match self.load_raw(id).await? {
            Some(rec) if &rec.owner == owner && !rec.is_expired(now) => Ok(rec),
            _ => Err(StoreError::NotFound),
        }
    }

    /// The compare-and-set write of `rec`, changed from `base` at `now`, with the log
    /// entries it carries (taken out of `rec`, whatever the outcome). `false`: the record
    /// changed (or vanished) since it was read; nothing was written.
    pub(super) async fn commit(
        &self,
        base: &Base,
        rec: &mut TaskRecord,
        now: Millis,
        events: Vec<Wire>,
    ) -> Result<bool, StoreError> {
        let drafts = std::mem::take(&mut rec.log_append);
        let rec = &*rec;
        let log = LogBlock::new(&self.limits, now, &drafts)?;
        let (expected, before) = (base.revision, &base.facets);
        let finished = base.live && rec.is_terminal();
        let queued = rec.queued_tool().is_some();
        let queue_change = match (base.queued, queued) {
            (false, true) => format!("+{}", member(rec.created_at, &rec.id)),
            (true, false) => format!("-{}", member(rec.created_at, &rec.id)),
            _ => String::new(),
        };
        let json = encode(rec)?;
        let lease = rec
            .lease
            .as_ref()
            .filter(|_| !rec.is_terminal())
            .map(|l| l.expires_at.to_string())
            .unwrap_or_default();
        let (payloads, echo) = self.shared.stamp(events);
        let shard = self.keys.shard_of(&rec.id);
        let after = Facets::of(rec);
        let keys = &self.keys;
        let mut call = scripts::COMMIT.prepare_invoke();
        call.key(keys.task(&rec.id))
            .key(keys.leases(shard))
            .key(keys.live(shard))
            .key(keys.live_per_owner(shard))
            .key(keys.queue(shard, rec.origin.tool.as_deref().unwrap_or_default()))
            .key(keys.op_all(shard))
            .key(keys.op_status(shard, before.status))
            .key(keys.op_status(shard, after.status))
            .key(keys.op_holder(shard, before.holder.as_deref().unwrap_or_default()))
            .key(keys.op_holder(shard, after.holder.as_deref().unwrap_or_default()))
            .key(keys.op_tool(shard, rec.origin.tool.as_deref().unwrap_or_default()))
            .key(keys.op_counts(shard))
            .key(keys.log(&rec.id))
            .arg(expected)
            .arg(rec.revision)
            .arg(json)
            .arg(lease)
            .arg(if finished { "1" } else { "0" })
            .arg(rec.id.as_str())
            .arg(self.keys.channel())
            .arg(queue_change)
            .arg(member(rec.created_at, &rec.id))
            .arg(before.status)
            .arg(after.status)
            .arg(before.holder_arg())
            .arg(after.holder_arg())
            .arg(tool_arg(rec));
        log.push(&mut call);
        for payload in &payloads {
            call.arg(payload);
        }
        let done: Result<i64, _> = call.invoke_async(&mut self.conn()).await;
        match done {
            Ok(1) => {
                self.shared.echo(echo).await;
                Ok(true)
            }
            Ok(_) => {
                self.shared.forget(echo);
                Ok(false)
            }
            Err(e) => {
                self.shared.forget(echo);
                Err(store_error(e))
            }
        }
    }

    /// Inserts the new record `rec` in its shard if the shard's part of the live-task
    /// limits allows it, with its first log entries `drafts` written at `now`, publishing
    /// `events` in the same script; returns once their echo came back.
    /// `Ok(Some(limit))`: the shard refused it for `limit`.
    pub(super) async fn create(
        &self,
        rec: &TaskRecord,
        drafts: &[LogDraft],
        now: Millis,
        events: Vec<Wire>,
    ) -> Result<Create, StoreError> {
        let log = LogBlock::new(&self.limits, now, drafts)?;
        let safety = match (self.safety_slack, rec.ttl_ms) {
            (None, _) => "off".to_owned(),
            (Some(_), None) => "forever".to_owned(),
            (Some(slack), Some(ttl)) => {
                let slack = u64::try_from(slack.as_millis()).unwrap_or(u64::MAX);
                // Redis refuses expiries past ~2^62 ms; such a task is kept for ever.
                match ttl.checked_add(slack).filter(|ms| *ms < 1 << 46) {
                    Some(ms) => ms.to_string(),
                    None => "forever".to_owned(),
                }
            }
        };
        let lease = rec
            .lease
            .as_ref()
            .map(|l| l.expires_at.to_string())
            .unwrap_or_default();
        let (payloads, echo) = self.shared.stamp(events);
        let keys = &self.keys;
        let shard = keys.shard_of(&rec.id);
        let active = self.active_shards();
        let mut call = scripts::CREATE.prepare_invoke();
        call.key(keys.task(&rec.id))
            .key(keys.owner_index(shard, &rec.owner))
            .key(keys.expiries(shard))
            .key(keys.live(shard))
            .key(keys.live_per_owner(shard))
            .key(keys.leases(shard))
            .key(keys.queue(shard, rec.origin.tool.as_deref().unwrap_or_default()))
            .key(keys.op_all(shard))
            .key(keys.op_status(shard, rec.status.as_str()))
            .key(keys.op_tool(shard, rec.origin.tool.as_deref().unwrap_or_default()))
            .key(keys.op_holder(shard, rec.lease.as_ref().map_or("", |l| l.holder.as_str())))
            .key(keys.op_counts(shard))
            .key(keys.log(&rec.id));
        if let Some(i) = &rec.idempotency {
            call.key(keys.idempotency(shard, &rec.owner, &i.key));
        }
        call.arg(rec.owner.as_str())
            .arg(rec.id.as_str())
            .arg(encode(rec)?)
            .arg(rec.revision)
            .arg(member(rec.created_at, &rec.id))
            .arg(
                rec.expires_at()
                    .map(|at| at.to_string())
                    .unwrap_or_default(),
            )
            .arg(quota(self.limits.max_live_tasks_per_owner, active, shard))
            .arg(quota(self.limits.max_live_tasks_total, active, shard))
            .arg(keys.channel())
            .arg(safety)
            .arg(lease)
            .arg(if rec.queued_tool().is_some() { "1" } else { "" })
            .arg(rec.status.as_str())
            .arg(tool_arg(rec))
            .arg(holder_arg(rec));
        log.push(&mut call);
        for payload in &payloads {
            call.arg(payload);
        }
        let code: Result<redis::Value, _> = call.invoke_async(&mut self.conn()).await;
        let refused = match code {
            Ok(redis::Value::Int(1)) => {
                self.shared.echo(echo).await;
                return Ok(Create::Stored);
            }
            Ok(redis::Value::Int(-1)) => Ok(Create::Refused(Limit::LiveTasksPerOwner)),
            Ok(redis::Value::Int(-2)) => Ok(Create::Refused(Limit::LiveTasksTotal)),
            Ok(redis::Value::BulkString(held)) => {
                let held = String::from_utf8_lossy(&held);
                let id = held.split(':').next().unwrap_or_default();
                Ok(Create::Held(TaskId::from_wire(id)))
            }
            Ok(other) => Err(store_error(format!(
                "create refused ({other:?}): id collision"
            ))),
            Err(e) => Err(store_error(e)),
        };
        self.shared.forget(echo);
        refused
    }

    /// The error of a create refused for `limit`.
    pub(super) fn limit_error(&self, limit: Limit) -> StoreError {
        let max = match limit {
            Limit::LiveTasksPerOwner => self.limits.max_live_tasks_per_owner,
            _ => self.limits.max_live_tasks_total,
        };
        StoreError::LimitExceeded {
            limit,
            max: max as u64,
        }
    }

    /// Up to `n` of the oldest queue members of each of `tools` in each shard, merged in
    /// claim order.
    pub(super) async fn queued(
        &self,
        tools: &[String],
        n: usize,
    ) -> Result<Vec<String>, StoreError> {
        let fetch = i64::try_from(n).unwrap_or(i64::MAX);
        let mut cmds = Vec::new();
        for tool in tools {
            for shard in 0..self.keys.shards() {
                cmds.push(
                    redis::cmd("ZRANGEBYLEX")
                        .arg(self.keys.queue(shard, tool))
                        .arg("-")
                        .arg("+")
                        .arg("LIMIT")
                        .arg(0)
                        .arg(fetch)
                        .to_owned(),
                );
            }
        }
        let per_queue: Vec<Vec<String>> = self.each(cmds).await?;
        let mut members: Vec<String> = per_queue.into_iter().flatten().collect();
        members.sort();
        members.dedup();
        Ok(members)
    }

    /// The records of the index entries `members` (`created_at:id`), in their order; an
    /// entry whose record the key-expiry safety net removed is skipped and dropped from
    /// its index, `index(shard)` (best effort: it only costs a lookup until removed).
    pub(super) async fn records_of(
        &self,
        members: &[String],
        index: impl Fn(u16) -> String,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let ids = members
            .iter()
            .map(|m| parse_member(m).map(|(_, id)| id))
            .collect::<Option<Vec<TaskId>>>()
            .ok_or_else(|| store_error("corrupt index entry"))?;
        let cmds = ids
            .iter()
            .map(|id| {
                redis::cmd("HGET")
                    .arg(self.keys.task(id))
                    .arg("rec")
                    .to_owned()
            })
            .collect();
        let records: Vec<Option<String>> = self.each(cmds).await?;
        let mut found = Vec::with_capacity(records.len());
        let mut dangling = Vec::new();
        for ((json, m), id) in records.iter().zip(members).zip(&ids) {
            match json {
                Some(json) => found.push(decode(json)?),
                None => dangling.push(
                    redis::cmd("ZREM")
                        .arg(index(self.keys.shard_of(id)))
                        .arg(m)
                        .to_owned(),
                ),
            }
        }
        if !dangling.is_empty() {
            let _: Result<Vec<i64>, _> = self.each(dangling).await;
        }
        Ok(found)
    }

    /// Drops `member` from `tool`'s queue: its task is gone or expired (best effort).
    pub(super) async fn drop_queued(&self, tool: &str, member: &str) {
        let Some((_, id)) = parse_member(member) else {
            return;
        };
        let _: Result<i64, _> = redis::cmd("ZREM")
            .arg(self.keys.queue(self.keys.shard_of(&id), tool))
            .arg(member)
            .query_async(&mut self.conn())
            .await;
    }

    /// One page of the owner's tasks unexpired at `now`, after `after`; drops the index
    /// entries of records the key-expiry safety net removed.
    pub(super) async fn page(
        &self,
        owner: &Owner,
        after: Option<(Millis, TaskId)>,
        limit: usize,
        now: Millis,
    ) -> Result<TaskPage, StoreError> {
        let min = match &after {
            Some((at, id)) => format!("({}", member(*at, id)),
            None => "-".to_owned(),
        };
        let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
        // Each shard's index is in order: the page is the first entries of their merge.
        let cmds = (0..self.keys.shards())
            .map(|shard| {
                redis::cmd("ZRANGEBYLEX")
                    .arg(self.keys.owner_index(shard, owner))
                    .arg(&min)
                    .arg("+")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(fetch)
                    .to_owned()
            })
            .collect();
        let per_shard: Vec<Vec<String>> = self.each(cmds).await?;
        let mut members: Vec<String> = per_shard.into_iter().flatten().collect();
        members.sort();
        members.truncate(limit.saturating_add(1));
        let more = members.len() > limit;
        let page = &members[..members.len().min(limit)];
        let mut tasks = self
            .records_of(page, |shard| self.keys.owner_index(shard, owner))
            .await?;
        tasks.retain(|rec| &rec.owner == owner && !rec.is_expired(now));
        let next_cursor = match page.last() {
            Some(last) if more => {
                let (at, id) = parse_member(last).ok_or_else(|| store_error("corrupt index"))?;
                Some(cursor::encode(at, &id))
            }
            _ => None,
        };
        Ok(TaskPage { tasks, next_cursor })
    }
}

/// What a create script did.
#[derive(Debug)]
pub(super) enum Create {
    /// The task is stored.
    Stored,
    /// The shard's part of this limit is used up: nothing written.
    Refused(Limit),
    /// A task still kept holds the record's idempotency key (contract rule 25): nothing
    /// written.
    Held(TaskId),
}
