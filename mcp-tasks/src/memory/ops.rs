//! The memory store's operator index (contract rule 22): every stored task by
//! `(created_at, id)` with what the filters look at, the same positions by owner, status,
//! tool and lease holder, and so the counts. Its lock is taken under a task shard's
//! lock, never the other way round, and never with the queue's.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;

use mcp_tasks_protocol::tasks::TaskStatus;

use crate::cursor;
use crate::operator::{OperatorFilter, TaskCounts};
use crate::record::{Millis, Owner, TaskId, TaskRecord};

type Position = (Millis, TaskId);

/// What the filters look at of one task.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Summary {
    owner: Owner,
    status: TaskStatus,
    tool: Option<String>,
    holder: Option<String>,
    expires_at: Option<Millis>,
}

impl Summary {
    fn of(rec: &TaskRecord) -> Summary {
        Summary {
            owner: rec.owner.clone(),
            status: rec.status,
            tool: rec.origin.tool.clone(),
            holder: rec.lease.as_ref().map(|l| l.holder.clone()),
            expires_at: rec.expires_at(),
        }
    }

    fn matches(&self, filter: &OperatorFilter, at: Millis, now: Millis) -> bool {
        self.expires_at.is_none_or(|e| now < e)
            && filter.status.is_none_or(|s| s == self.status)
            && filter
                .tool
                .as_deref()
                .is_none_or(|t| self.tool.as_deref() == Some(t))
            && filter.owner.as_ref().is_none_or(|o| o == &self.owner)
            && filter.created_from.is_none_or(|from| at >= from)
            && filter.created_before.is_none_or(|before| at < before)
            && filter
                .lease_holder
                .as_deref()
                .is_none_or(|h| self.holder.as_deref() == Some(h))
    }
}

/// Positions by a key, each set in creation order.
#[derive(Debug)]
struct Sets<K>(HashMap<K, BTreeSet<Position>>);

impl<K: std::hash::Hash + Eq> Default for Sets<K> {
    fn default() -> Self {
        Sets(HashMap::new())
    }
}

impl<K: std::hash::Hash + Eq + Clone> Sets<K> {
    fn insert(&mut self, key: &K, pos: &Position) {
        self.0.entry(key.clone()).or_default().insert(pos.clone());
    }

    fn remove(&mut self, key: &K, pos: &Position) {
        if let Some(set) = self.0.get_mut(key) {
            set.remove(pos);
            if set.is_empty() {
                self.0.remove(key);
            }
        }
    }

    fn get(&self, key: &K) -> Option<&BTreeSet<Position>> {
        self.0.get(key)
    }
}

/// The operator index of a memory store.
#[derive(Debug, Default)]
pub(super) struct OperatorIndex {
    all: BTreeMap<Position, Summary>,
    by_owner: Sets<Owner>,
    by_status: Sets<TaskStatus>,
    by_tool: Sets<String>,
    by_holder: Sets<String>,
}

impl OperatorIndex {
    fn add(&mut self, pos: Position, s: Summary) {
        self.by_owner.insert(&s.owner, &pos);
        self.by_status.insert(&s.status, &pos);
        if let Some(tool) = &s.tool {
            self.by_tool.insert(tool, &pos);
        }
        if let Some(holder) = &s.holder {
            self.by_holder.insert(holder, &pos);
        }
        self.all.insert(pos, s);
    }

    /// Removes the task at `pos`, if indexed.
    pub(super) fn remove(&mut self, pos: &Position) {
        let Some(s) = self.all.remove(pos) else {
            return;
        };
        self.by_owner.remove(&s.owner, pos);
        self.by_status.remove(&s.status, pos);
        if let Some(tool) = &s.tool {
            self.by_tool.remove(tool, pos);
        }
        if let Some(holder) = &s.holder {
            self.by_holder.remove(holder, pos);
        }
    }

    /// Indexes `rec` as it now stands (a new task, or one just written).
    pub(super) fn put(&mut self, rec: &TaskRecord) {
        let pos = (rec.created_at, rec.id.clone());
        let summary = Summary::of(rec);
        if self.all.get(&pos) == Some(&summary) {
            return;
        }
        self.remove(&pos);
        self.add(pos, summary);
    }

    /// The positions of up to `limit` tasks matching `filter` and visible at `now`,
    /// before `before`, newest first, and the position the page ends at when more may
    /// follow. It walks the narrowest set the filter names.
    pub(super) fn page(
        &self,
        filter: &OperatorFilter,
        before: Option<&Position>,
        limit: usize,
        now: Millis,
    ) -> (Vec<Position>, Option<Position>) {
        let empty = BTreeSet::new();
        let set = if let Some(owner) = &filter.owner {
            Some(self.by_owner.get(owner).unwrap_or(&empty))
        } else if let Some(holder) = &filter.lease_holder {
            Some(self.by_holder.get(holder).unwrap_or(&empty))
        } else if let Some(tool) = &filter.tool {
            Some(self.by_tool.get(tool).unwrap_or(&empty))
        } else {
            filter
                .status
                .map(|s| self.by_status.get(&s).unwrap_or(&empty))
        };
        let end = filter.created_before.map(|at| (at, TaskId::from_wire("")));
        let upper = match (before, &end) {
            (Some(pos), Some(end)) => Bound::Excluded(pos.min(end).clone()),
            (Some(pos), None) => Bound::Excluded(pos.clone()),
            (None, Some(end)) => Bound::Excluded(end.clone()),
            (None, None) => Bound::Unbounded,
        };
        let lower = match filter.created_from {
            Some(at) => Bound::Included((at, TaskId::from_wire(""))),
            None => Bound::Unbounded,
        };
        let range = (lower, upper);
        if matches!((&range.0, &range.1), (Bound::Included(lo), Bound::Excluded(hi)) if lo >= hi) {
            return (Vec::new(), None);
        }
        let mut walk: Box<dyn Iterator<Item = (&Position, &Summary)>> = match set {
            Some(set) => Box::new(
                set.range::<Position, _>(range)
                    .rev()
                    .filter_map(|pos| self.all.get_key_value(pos)),
            ),
            None => Box::new(self.all.range::<Position, _>(range).rev()),
        };
        let mut found = Vec::new();
        for (pos, summary) in &mut walk {
            if !summary.matches(filter, pos.0, now) {
                continue;
            }
            if found.len() == limit {
                return (found.clone(), found.last().cloned());
            }
            found.push(pos.clone());
        }
        (found, None)
    }

    /// The stored tasks by status and tool.
    pub(super) fn counts(&self) -> TaskCounts {
        let mut counts = TaskCounts::default();
        for (status, set) in &self.by_status.0 {
            counts.add_status(*status, set.len() as u64);
        }
        counts.by_tool = self
            .by_tool
            .0
            .iter()
            .map(|(tool, set)| (tool.clone(), set.len() as u64))
            .collect();
        counts
    }
}

/// The cursor of a page that ends at `last`.
pub(super) fn next_cursor(filter: &OperatorFilter, last: Option<Position>) -> Option<String> {
    last.map(|(at, id)| cursor::encode_operator(filter, at, &id))
}
