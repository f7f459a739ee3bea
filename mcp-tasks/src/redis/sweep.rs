//! The sweep: purging expired tasks (with their index entries and live counts) and
//! finding lapsed leases.

use super::Inner;
use super::db::{MAX_ATTEMPTS, backoff};
use super::keys::member;
use super::operator::{holder_arg, tool_arg};
use super::{scripts, store_error};
use crate::error::StoreError;
use crate::record::{Millis, Owner, SweepReport, TaskId, TaskKey};
use crate::rules;

/// How many expired tasks a sweep reads at a time.
const SWEEP_BATCH: usize = 500;

impl Inner {
    /// Deletes expired tasks and finds lapsed leases (rule 12), shard by shard.
    pub(super) async fn sweep(&self) -> Result<SweepReport, StoreError> {
        let now = self.clock.now_ms();
        let mut report = SweepReport::default();
        for shard in 0..self.keys.shards() {
            self.sweep_shard(shard, now, &mut report).await?;
        }
        Ok(report)
    }

    async fn sweep_shard(
        &self,
        shard: u16,
        now: Millis,
        report: &mut SweepReport,
    ) -> Result<(), StoreError> {
        let inner = self;
        // Expired tasks still in their TTL by the rule (never, short of clock trouble)
        // are skipped, so the batches move past them.
        let mut skipped = 0usize;
        loop {
            let ids: Vec<String> = redis::cmd("ZRANGEBYSCORE")
                .arg(inner.keys.expiries(shard))
                .arg("-inf")
                .arg(now)
                .arg("LIMIT")
                .arg(skipped)
                .arg(SWEEP_BATCH)
                .query_async(&mut inner.conn())
                .await
                .map_err(store_error)?;
            if ids.is_empty() {
                break;
            }
            for id in ids {
                match inner.purge(&TaskId::from_wire(id), now).await? {
                    Some((key, unfinished)) => {
                        report.purged += 1;
                        if unfinished {
                            report.expired_unfinished.push(key);
                        }
                    }
                    None => skipped += 1,
                }
            }
        }
        let leased: Vec<String> = redis::cmd("ZRANGEBYSCORE")
            .arg(inner.keys.leases(shard))
            .arg("-inf")
            .arg(now)
            .query_async(&mut inner.conn())
            .await
            .map_err(store_error)?;
        for id in leased {
            match inner.load_raw(&TaskId::from_wire(id.as_str())).await? {
                // The index mirrors the record; the rule decides.
                Some(rec) => {
                    if !rec.is_expired(now) && rules::lease_lapsed(&rec, now) {
                        report.lease_lapsed.push(rec.key());
                    }
                }
                None => {
                    // Best effort: a lease entry of a vanished task.
                    let _: Result<i64, _> = redis::cmd("ZREM")
                        .arg(inner.keys.leases(shard))
                        .arg(&id)
                        .query_async(&mut inner.conn())
                        .await;
                }
            }
        }
        Ok(())
    }

    /// Purges expired task `id` (if it still is expired and nobody purges it first).
    /// Returns its key and whether it was unfinished.
    async fn purge(&self, id: &TaskId, now: Millis) -> Result<Option<(TaskKey, bool)>, StoreError> {
        for attempt in 0..MAX_ATTEMPTS {
            let rec = self.load_raw(id).await?;
            if rec.as_ref().is_some_and(|rec| !rec.is_expired(now)) {
                return Ok(None);
            }
            let shard = self.keys.shard_of(id);
            let mut call = scripts::PURGE.prepare_invoke();
            call.key(self.keys.task(id))
                .key(self.keys.expiries(shard))
                .key(self.keys.leases(shard))
                .key(self.keys.live(shard))
                .key(self.keys.live_per_owner(shard));
            let keys = &self.keys;
            match &rec {
                Some(rec) => {
                    call.key(keys.owner_index(shard, &rec.owner))
                        .key(keys.op_all(shard))
                        .key(keys.op_status(shard, rec.status.as_str()))
                        .key(keys.op_tool(shard, rec.origin.tool.as_deref().unwrap_or_default()))
                        .key(
                            keys.op_holder(
                                shard,
                                rec.lease.as_ref().map_or("", |l| l.holder.as_str()),
                            ),
                        )
                        .key(keys.op_counts(shard))
                        .arg(rec.revision)
                        .arg(id.as_str())
                        .arg(member(rec.created_at, id))
                        .arg(rec.status.as_str())
                        .arg(tool_arg(rec))
                        .arg(holder_arg(rec));
                }
                None => {
                    // Unused (no member): any keys of the shard.
                    for _ in 0..6 {
                        call.key(keys.op_all(shard));
                    }
                    call.arg("")
                        .arg(id.as_str())
                        .arg("")
                        .arg("")
                        .arg("-")
                        .arg("-");
                }
            }
            // The task's log goes with it, and its idempotency key.
            call.key(keys.log(id));
            if let Some(rec) = &rec
                && let Some(i) = &rec.idempotency
            {
                call.key(keys.idempotency(shard, &rec.owner, &i.key));
            }
            let (purged, live_owner): (i64, String) = call
                .invoke_async(&mut self.conn())
                .await
                .map_err(store_error)?;
            match (purged, rec) {
                (1, Some(rec)) => return Ok(Some((rec.key(), !rec.is_terminal()))),
                (1, None) => {
                    let unfinished = !live_owner.is_empty();
                    let key = TaskKey {
                        owner: Owner::new(live_owner),
                        id: id.clone(),
                    };
                    return Ok(Some((key, unfinished)));
                }
                // Someone else purged it.
                (_, None) => return Ok(None),
                // A write raced the purge: look again.
                (_, Some(_)) => backoff(attempt).await,
            }
        }
        Err(StoreError::unavailable(format!(
            "redis: task {id} kept changing during the sweep"
        )))
    }
}
