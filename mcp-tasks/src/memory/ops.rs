//! The memory store's operator index (contract rule 22): the position of every stored
//! task, and the same positions by status, by tool and by lease holder, and so the
//! counts. By owner, the owner's listing index (`db.rs`) serves. An entry is a [`Pos`],
//! 24 bytes and no heap; what a filter asks beyond the index walked is checked on the
//! task itself (`Inner::operator_page`). Its lock is taken under a task shard's lock,
//! never the other way round, and never with the queue's.

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;

use mcp_tasks_protocol::tasks::TaskStatus;

use super::key::Pos;
use crate::operator::{OperatorFilter, TaskCounts};
use crate::record::TaskRecord;

/// What the index files a task under besides its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Facets {
    status: TaskStatus,
    tool: Option<String>,
    holder: Option<String>,
}

impl Facets {
    pub(super) fn of(rec: &TaskRecord) -> Facets {
        Facets {
            status: rec.status,
            tool: rec.origin.tool.clone(),
            holder: rec.lease.as_ref().map(|l| l.holder.clone()),
        }
    }
}

/// Positions by a key, each set in creation order.
#[derive(Debug)]
struct Sets<K>(HashMap<K, BTreeSet<Pos>>);

impl<K: std::hash::Hash + Eq> Default for Sets<K> {
    fn default() -> Self {
        Sets(HashMap::new())
    }
}

impl<K: std::hash::Hash + Eq + Clone> Sets<K> {
    fn insert(&mut self, key: &K, pos: Pos) {
        if let Some(set) = self.0.get_mut(key) {
            set.insert(pos);
        } else {
            self.0.insert(key.clone(), BTreeSet::from([pos]));
        }
    }

    fn remove(&mut self, key: &K, pos: Pos) {
        if let Some(set) = self.0.get_mut(key) {
            set.remove(&pos);
            if set.is_empty() {
                self.0.remove(key);
            }
        }
    }
}

/// The range `[lower, upper)` of positions; `None` when it is empty (a `BTreeSet`
/// refuses an inverted range).
pub(super) fn range(lower: Option<Pos>, upper: Option<Pos>) -> Option<(Bound<Pos>, Bound<Pos>)> {
    if let (Some(lo), Some(hi)) = (lower, upper)
        && lo >= hi
    {
        return None;
    }
    Some((
        lower.map_or(Bound::Unbounded, Bound::Included),
        upper.map_or(Bound::Unbounded, Bound::Excluded),
    ))
}

/// Up to `n` positions of `set` in `range`, newest first.
pub(super) fn newest(set: &BTreeSet<Pos>, range: (Bound<Pos>, Bound<Pos>), n: usize) -> Vec<Pos> {
    set.range(range).rev().take(n).copied().collect()
}

/// The operator index of a memory store.
#[derive(Debug, Default)]
pub(super) struct OperatorIndex {
    all: BTreeSet<Pos>,
    by_status: Sets<TaskStatus>,
    by_tool: Sets<String>,
    by_holder: Sets<String>,
}

impl OperatorIndex {
    /// Files `pos` under `f` (`add`), or takes it out.
    fn file(&mut self, pos: Pos, f: &Facets, add: bool) {
        fn one<K: std::hash::Hash + Eq + Clone>(
            sets: &mut Sets<K>,
            key: Option<&K>,
            pos: Pos,
            add: bool,
        ) {
            match key {
                Some(key) if add => sets.insert(key, pos),
                Some(key) => sets.remove(key, pos),
                None => {}
            }
        }
        one(&mut self.by_status, Some(&f.status), pos, add);
        one(&mut self.by_tool, f.tool.as_ref(), pos, add);
        one(&mut self.by_holder, f.holder.as_ref(), pos, add);
    }

    /// Indexes a new task.
    pub(super) fn insert(&mut self, pos: Pos, f: &Facets) {
        self.all.insert(pos);
        self.file(pos, f, true);
    }

    /// Moves a task written from `before` to `after`.
    pub(super) fn change(&mut self, pos: Pos, before: &Facets, after: &Facets) {
        if before != after {
            self.file(pos, before, false);
            self.file(pos, after, true);
        }
    }

    /// Removes a deleted task, filed under `f`.
    pub(super) fn remove(&mut self, pos: Pos, f: &Facets) {
        if self.all.remove(&pos) {
            self.file(pos, f, false);
        }
    }

    /// Up to `n` positions in `range`, newest first, from the narrowest index `filter`
    /// names of the lease holder's, the tool's, the status's, or all (the owner's is
    /// the owner index's).
    pub(super) fn walk(
        &self,
        filter: &OperatorFilter,
        range: (Bound<Pos>, Bound<Pos>),
        n: usize,
    ) -> Vec<Pos> {
        let set = if let Some(holder) = &filter.lease_holder {
            self.by_holder.0.get(holder)
        } else if let Some(tool) = &filter.tool {
            self.by_tool.0.get(tool)
        } else if let Some(status) = &filter.status {
            self.by_status.0.get(status)
        } else {
            Some(&self.all)
        };
        set.map(|set| newest(set, range, n)).unwrap_or_default()
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
pub(super) fn next_cursor(filter: &OperatorFilter, last: Option<Pos>) -> Option<String> {
    last.map(|pos| filter.cursor(pos.at, &pos.id.task_id()))
}
