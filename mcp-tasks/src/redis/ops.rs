//! The [`TaskStore`] operations of [`RedisStore`]: read, apply the rule in Rust, write back
//! with a compare-and-set script.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use mcp_protocol::JsonObject;
use mcp_protocol::jsonrpc::ErrorObject;
use serde_json::Value;

use super::feed::{Kind, Wire};
use super::keys::{member, parse_member};
use super::{Inner, RedisStore, backend, scripts};
use crate::cursor;
use crate::error::StoreError;
use crate::event::EventStream;
use crate::limits::{Limit, Limits};
use crate::record::{
    Lease, Millis, NewTask, Owner, Resolved, SweepReport, TaskId, TaskPage, TaskRecord, Transition,
};
use crate::rules::{self, Finish};
use crate::store::TaskStore;

/// How often a write re-reads and retries after losing a compare-and-set.
pub(super) const MAX_ATTEMPTS: u32 = 100;

fn encode(rec: &TaskRecord) -> Result<String, StoreError> {
    serde_json::to_string(rec).map_err(backend)
}

fn decode(json: &str) -> Result<TaskRecord, StoreError> {
    serde_json::from_str(json).map_err(|e| backend(format!("corrupt task record: {e}")))
}

/// The events of a committed change, from the operation's value and the record after.
type Announce<R> = fn(&R, &TaskRecord) -> Vec<Wire>;

fn changed(rec: &TaskRecord) -> Wire {
    Wire::new(Kind::Changed, rec)
}

fn silent<R>(_: &R, _: &TaskRecord) -> Vec<Wire> {
    Vec::new()
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

impl Inner {
    pub(super) fn conn(&self) -> redis::aio::ConnectionManager {
        // Cheap: a handle on the one multiplexed connection.
        self.conn.clone()
    }

    /// The stored record `id`, whoever owns it and whether expired.
    pub(super) async fn load_raw(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        let json: Option<String> = redis::cmd("HGET")
            .arg(self.keys.task(id))
            .arg("rec")
            .query_async(&mut self.conn())
            .await
            .map_err(backend)?;
        json.as_deref().map(decode).transpose()
    }

    /// The owner's unexpired task, or `NotFound`.
    async fn load(
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

    /// Runs `f` on the owner's unexpired task and, if it changed the record (bumped its
    /// revision), writes it back unless someone else wrote first; then re-reads and runs
    /// `f` again. Publishes what `announce` makes of a committed change in the same script.
    async fn update<R>(
        &self,
        owner: &Owner,
        id: &TaskId,
        mut f: impl FnMut(&mut TaskRecord, Millis, &Limits) -> Result<R, StoreError> + Send,
        announce: Announce<R>,
    ) -> Result<(R, TaskRecord), StoreError>
    where
        R: Send,
    {
        for attempt in 0..MAX_ATTEMPTS {
            let now = self.clock.now_ms();
            let mut rec = self.load(owner, id, now).await?;
            let (revision, was_live) = (rec.revision, !rec.is_terminal());
            // On error nothing was written.
            let value = f(&mut rec, now, &self.limits)?;
            if rec.revision == revision {
                return Ok((value, rec));
            }
            let finished = was_live && rec.is_terminal();
            if self
                .commit(revision, &rec, finished, announce(&value, &rec))
                .await?
            {
                return Ok((value, rec));
            }
            backoff(attempt).await;
        }
        // Contention passes: a later retry is safe.
        Err(StoreError::unavailable(format!(
            "redis: task {id} kept changing; gave up after {MAX_ATTEMPTS} attempts"
        )))
    }

    /// The compare-and-set write. `false`: the record changed (or vanished) since it was
    /// read at `expected`; nothing was written.
    async fn commit(
        &self,
        expected: u64,
        rec: &TaskRecord,
        finished: bool,
        events: Vec<Wire>,
    ) -> Result<bool, StoreError> {
        let json = encode(rec)?;
        let lease = rec
            .lease
            .as_ref()
            .filter(|_| !rec.is_terminal())
            .map(|l| l.expires_at.to_string())
            .unwrap_or_default();
        let (payloads, echo) = self.shared.stamp(events);
        let mut call = scripts::COMMIT.prepare_invoke();
        call.key(self.keys.task(&rec.id))
            .key(self.keys.leases())
            .key(self.keys.live())
            .key(self.keys.live_per_owner())
            .arg(expected)
            .arg(rec.revision)
            .arg(json)
            .arg(lease)
            .arg(if finished { "1" } else { "0" })
            .arg(rec.id.as_str())
            .arg(self.keys.channel());
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
                Err(backend(e))
            }
        }
    }

    async fn finish(
        &self,
        owner: &Owner,
        id: &TaskId,
        finish: Finish,
    ) -> Result<Transition, StoreError> {
        rules::check_finish(&finish, &self.limits)?;
        let (won, record) = self
            .update(
                owner,
                id,
                |rec, now, _| Ok(rules::finish(rec, finish.clone(), now)),
                |won, rec| if *won { vec![changed(rec)] } else { Vec::new() },
            )
            .await?;
        Ok(Transition { won, record })
    }
}

#[async_trait]
impl TaskStore for RedisStore {
    async fn create(&self, new: NewTask) -> Result<TaskRecord, StoreError> {
        let inner = &*self.inner;
        let id = TaskId::random().map_err(StoreError::backend)?;
        let rec = rules::new_record(id, new, &inner.limits, inner.clock.now_ms());
        let safety = match (inner.safety_slack, rec.ttl_ms) {
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
        let (mut payloads, echo) = inner.shared.stamp(vec![changed(&rec)]);
        let payload = payloads.pop().unwrap_or_default();
        let keys = &inner.keys;
        let code: Result<i64, _> = scripts::CREATE
            .key(keys.task(&rec.id))
            .key(keys.owner_index(&rec.owner))
            .key(keys.expiries())
            .key(keys.live())
            .key(keys.live_per_owner())
            .arg(rec.owner.as_str())
            .arg(rec.id.as_str())
            .arg(encode(&rec)?)
            .arg(rec.revision)
            .arg(member(rec.created_at, &rec.id))
            .arg(
                rec.expires_at()
                    .map(|at| at.to_string())
                    .unwrap_or_default(),
            )
            .arg(inner.limits.max_live_tasks_per_owner)
            .arg(inner.limits.max_live_tasks_total)
            .arg(keys.channel())
            .arg(payload)
            .arg(safety)
            .invoke_async(&mut inner.conn())
            .await;
        let refused = match code {
            Ok(1) => {
                inner.shared.echo(echo).await;
                return Ok(rec);
            }
            Ok(-1) => StoreError::LimitExceeded {
                limit: Limit::LiveTasksPerOwner,
                max: inner.limits.max_live_tasks_per_owner as u64,
            },
            Ok(-2) => StoreError::LimitExceeded {
                limit: Limit::LiveTasksTotal,
                max: inner.limits.max_live_tasks_total as u64,
            },
            Ok(other) => backend(format!("create refused ({other}): id collision")),
            Err(e) => backend(e),
        };
        inner.shared.forget(echo);
        Err(refused)
    }

    async fn get(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        self.inner.load(owner, id, self.inner.clock.now_ms()).await
    }

    async fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<TaskPage, StoreError> {
        let inner = &*self.inner;
        let after = cursor.map(cursor::decode).transpose()?;
        let limit = limit.max(1);
        let index = inner.keys.owner_index(owner);
        let min = match &after {
            Some((at, id)) => format!("({}", member(*at, id)),
            None => "-".to_owned(),
        };
        let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
        let members: Vec<String> = redis::cmd("ZRANGEBYLEX")
            .arg(&index)
            .arg(min)
            .arg("+")
            .arg("LIMIT")
            .arg(0)
            .arg(fetch)
            .query_async(&mut inner.conn())
            .await
            .map_err(backend)?;
        let more = members.len() > limit;
        let page = &members[..members.len().min(limit)];
        let ids = page
            .iter()
            .map(|m| parse_member(m).map(|(_, id)| id))
            .collect::<Option<Vec<TaskId>>>()
            .ok_or_else(|| backend("corrupt listing index entry"))?;
        let mut pipe = redis::pipe();
        for id in &ids {
            pipe.cmd("HGET").arg(inner.keys.task(id)).arg("rec");
        }
        let records: Vec<Option<String>> = if ids.is_empty() {
            Vec::new()
        } else {
            pipe.query_async(&mut inner.conn()).await.map_err(backend)?
        };
        let now = inner.clock.now_ms();
        let mut tasks = Vec::with_capacity(records.len());
        let mut dangling = Vec::new();
        for (json, m) in records.iter().zip(page) {
            match json {
                Some(json) => {
                    let rec = decode(json)?;
                    if &rec.owner == owner && !rec.is_expired(now) {
                        tasks.push(rec);
                    }
                }
                // Removed by the key-expiry safety net: drop its entry.
                None => dangling.push(m.clone()),
            }
        }
        if !dangling.is_empty() {
            // Best effort: the entry only costs a lookup until removed.
            let _: Result<i64, _> = redis::cmd("ZREM")
                .arg(&index)
                .arg(dangling)
                .query_async(&mut inner.conn())
                .await;
        }
        let next_cursor = match page.last() {
            Some(last) if more => {
                let (at, id) = parse_member(last).ok_or_else(|| backend("corrupt index"))?;
                Some(cursor::encode(at, &id))
            }
            _ => None,
        };
        Ok(TaskPage { tasks, next_cursor })
    }

    async fn set_status_message(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<TaskRecord, StoreError> {
        let ((), record) = self
            .inner
            .update(
                owner,
                id,
                |rec, now, _| rules::set_status_message(rec, message.clone(), now),
                |(), rec| vec![changed(rec)],
            )
            .await?;
        Ok(record)
    }

    async fn request_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        requests: BTreeMap<String, Value>,
    ) -> Result<TaskRecord, StoreError> {
        let ((), record) = self
            .inner
            .update(
                owner,
                id,
                |rec, now, limits| rules::request_input(rec, requests.clone(), limits, now),
                // Only a change is committed and announced (no requests: no change).
                |(), rec| vec![changed(rec)],
            )
            .await?;
        Ok(record)
    }

    async fn resolve_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        responses: BTreeMap<String, Value>,
    ) -> Result<Resolved, StoreError> {
        let (accepted, record) = self
            .inner
            .update(
                owner,
                id,
                |rec, now, _| Ok(rules::resolve_input(rec, responses.clone(), now)),
                |accepted, rec| {
                    let mut answered = Wire::new(Kind::InputResponded, rec);
                    answered.keys.clone_from(accepted);
                    vec![changed(rec), answered]
                },
            )
            .await?;
        Ok(Resolved { accepted, record })
    }

    async fn take_input_response(
        &self,
        owner: &Owner,
        id: &TaskId,
        key: &str,
    ) -> Result<Option<Value>, StoreError> {
        let (value, _) = self
            .inner
            .update(
                owner,
                id,
                |rec, now, _| Ok(rules::take_input_response(rec, key, now)),
                silent,
            )
            .await?;
        Ok(value)
    }

    async fn complete(
        &self,
        owner: &Owner,
        id: &TaskId,
        result: JsonObject,
    ) -> Result<Transition, StoreError> {
        self.inner.finish(owner, id, Finish::Complete(result)).await
    }

    async fn fail(
        &self,
        owner: &Owner,
        id: &TaskId,
        error: ErrorObject,
    ) -> Result<Transition, StoreError> {
        self.inner.finish(owner, id, Finish::Fail(error)).await
    }

    async fn cancel(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<Transition, StoreError> {
        self.inner.finish(owner, id, Finish::Cancel(message)).await
    }

    async fn request_cancel(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError> {
        let (_, record) = self
            .inner
            .update(
                owner,
                id,
                |rec, now, _| Ok(rules::request_cancel(rec, now)),
                |_, rec| vec![Wire::new(Kind::CancelRequested, rec)],
            )
            .await?;
        Ok(record)
    }

    async fn claim_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        let (lease, _) = self
            .inner
            .update(
                owner,
                id,
                |rec, now, _| rules::claim_lease(rec, holder, ttl_ms, now),
                silent,
            )
            .await?;
        Ok(lease)
    }

    async fn renew_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError> {
        let (lease, _) = self
            .inner
            .update(
                owner,
                id,
                |rec, now, _| rules::renew_lease(rec, holder, ttl_ms, now),
                silent,
            )
            .await?;
        Ok(lease)
    }

    async fn release_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
    ) -> Result<(), StoreError> {
        self.inner
            .update(
                owner,
                id,
                |rec, now, _| rules::release_lease(rec, holder, now),
                silent,
            )
            .await?;
        Ok(())
    }

    async fn sweep(&self) -> Result<SweepReport, StoreError> {
        self.inner.sweep().await
    }

    fn events(&self) -> EventStream {
        let shared = &self.inner.shared;
        EventStream::with_resync_signal(shared.events.subscribe(), shared.resync.subscribe())
    }
}
