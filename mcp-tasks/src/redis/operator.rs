//! The operator's view (contract rule 22) on Redis. Each shard keeps, in the same scripts
//! as every write (so under the shard's hash tag, one cluster slot): all its tasks in
//! creation order, the same by status, by tool and by lease holder, and the counts by
//! status and tool. A listing walks the index the filter names (the owner's listing index
//! for an owner) backwards in every shard at once, merging the shards, and checks the
//! other filters on the records it reads; the counts add up the shards' count hashes.
//!
//! Tasks written before these indexes existed enter them at their next write (the
//! commit script adds a task it does not find there, whole); a finished task that is
//! never written again stays out of the operator's view until the sweep deletes it.
//! A record the key-expiry safety net removed leaves its entries behind: the listing
//! passes over (and drops) them; the counts keep it until then.

use std::collections::HashMap;

use super::keys::member;
use super::{Inner, store_error};
use crate::error::StoreError;
use crate::operator::{OperatorFilter, OperatorPage, TaskCounts, parse_status};
use crate::record::{Millis, TaskId, TaskRecord};

/// How many index entries a listing reads per shard at a time.
const WALK_BATCH: usize = 64;

/// What the operator index of a task depends on, besides its position and tool (which
/// never change).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Facets {
    pub(super) status: &'static str,
    pub(super) holder: Option<String>,
}

impl Facets {
    pub(super) fn of(rec: &TaskRecord) -> Facets {
        Facets {
            status: rec.status.as_str(),
            holder: rec.lease.as_ref().map(|l| l.holder.clone()),
        }
    }

    /// `+HOLDER`, or `-` without a lease.
    pub(super) fn holder_arg(&self) -> String {
        self.holder
            .as_deref()
            .map_or_else(|| "-".to_owned(), |h| format!("+{h}"))
    }
}

/// `+TOOL`, or `-` for a task of no tool.
pub(super) fn tool_arg(rec: &TaskRecord) -> String {
    rec.origin
        .tool
        .as_deref()
        .map_or_else(|| "-".to_owned(), |t| format!("+{t}"))
}

/// `+HOLDER`, or `-` without a lease.
pub(super) fn holder_arg(rec: &TaskRecord) -> String {
    Facets::of(rec).holder_arg()
}

/// The smallest index member of tasks created at `at` (below every id).
fn floor_of(at: Millis) -> String {
    member(at, &TaskId::from_wire(""))
}

impl Inner {
    /// The index a listing with `filter` walks in `shard`.
    fn walked(&self, filter: &OperatorFilter, shard: u16) -> String {
        let keys = &self.keys;
        if let Some(owner) = &filter.owner {
            keys.owner_index(shard, owner)
        } else if let Some(holder) = &filter.lease_holder {
            keys.op_holder(shard, holder)
        } else if let Some(tool) = &filter.tool {
            keys.op_tool(shard, tool)
        } else if let Some(status) = filter.status {
            keys.op_status(shard, status.as_str())
        } else {
            keys.op_all(shard)
        }
    }

    /// One page of `filter`'s tasks visible at `now` before `before`, newest first.
    pub(super) async fn operator_page(
        &self,
        filter: &OperatorFilter,
        before: Option<(Millis, TaskId)>,
        limit: usize,
        now: Millis,
    ) -> Result<OperatorPage, StoreError> {
        // Exclusive upper bound (a member, or none: `+`), inclusive lower bound.
        let upper = [
            before.as_ref().map(|(at, id)| member(*at, id)),
            filter.created_before.map(floor_of),
        ]
        .into_iter()
        .flatten()
        .min();
        let min = filter
            .created_from
            .map_or_else(|| "-".to_owned(), |at| format!("[{}", floor_of(at)));
        let mut max = upper.map_or_else(|| "+".to_owned(), |m| format!("({m}"));
        let shards = self.keys.shards();
        let mut exhausted = vec![false; usize::from(shards)];
        let mut found: Vec<TaskRecord> = Vec::new();
        let batch = i64::try_from(WALK_BATCH).unwrap_or(i64::MAX);
        'walk: loop {
            let active: Vec<u16> = (0..shards)
                .filter(|s| !exhausted[usize::from(*s)])
                .collect();
            if active.is_empty() {
                break;
            }
            let cmds = active
                .iter()
                .map(|shard| {
                    redis::cmd("ZREVRANGEBYLEX")
                        .arg(self.walked(filter, *shard))
                        .arg(&max)
                        .arg(&min)
                        .arg("LIMIT")
                        .arg(0)
                        .arg(batch)
                        .to_owned()
                })
                .collect();
            let per_shard: Vec<Vec<String>> = self.each(cmds).await?;
            // Entries down to `floor` are complete in every shard: a shard that gave a
            // whole batch may hold more below its last entry, so nothing under the
            // highest of those last entries is taken this round.
            let mut floor: Option<String> = None;
            let mut members = Vec::new();
            for (shard, got) in active.iter().zip(per_shard) {
                match got.last() {
                    Some(last) if got.len() == WALK_BATCH => {
                        if floor.as_ref().is_none_or(|f| last > f) {
                            floor = Some(last.clone());
                        }
                    }
                    _ => exhausted[usize::from(*shard)] = true,
                }
                members.extend(got);
            }
            members.sort_unstable_by(|a, b| b.cmp(a));
            members.dedup();
            members.retain(|m| floor.as_ref().is_none_or(|f| m >= f));
            for chunk in members.chunks(WALK_BATCH) {
                let records = self
                    .records_of(chunk, |shard| self.walked(filter, shard))
                    .await?;
                for rec in records {
                    if !rec.is_expired(now) && filter.matches(&rec) {
                        found.push(rec);
                        if found.len() > limit {
                            break 'walk;
                        }
                    }
                }
            }
            match floor {
                Some(f) => max = format!("({f}"),
                None => break,
            }
        }
        Ok(OperatorPage::from_rows(filter, found, limit))
    }

    /// Any owner's task `id` visible at `now`.
    pub(super) async fn operator_read(
        &self,
        id: &TaskId,
        now: Millis,
    ) -> Result<TaskRecord, StoreError> {
        match self.load_raw(id).await? {
            Some(rec) if !rec.is_expired(now) => Ok(rec),
            _ => Err(StoreError::NotFound),
        }
    }

    /// The stored tasks by status and tool: the shards' count hashes added up.
    pub(super) async fn operator_counts(&self) -> Result<TaskCounts, StoreError> {
        let cmds = (0..self.keys.shards())
            .map(|shard| {
                redis::cmd("HGETALL")
                    .arg(self.keys.op_counts(shard))
                    .to_owned()
            })
            .collect();
        let per_shard: Vec<HashMap<String, i64>> = self.each(cmds).await?;
        let mut counts = TaskCounts::default();
        for (field, n) in per_shard.into_iter().flatten() {
            let n = u64::try_from(n).unwrap_or(0);
            if let Some(status) = field.strip_prefix("s:") {
                let status = parse_status(status)
                    .ok_or_else(|| store_error(format!("unknown status count {field:?}")))?;
                counts.add_status(status, n);
            } else if let Some(tool) = field.strip_prefix("t:") {
                *counts.by_tool.entry(tool.to_owned()).or_default() += n;
            }
        }
        counts.by_tool.retain(|_, n| *n > 0);
        Ok(counts)
    }
}
