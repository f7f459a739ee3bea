//! The memory store's operator view (contract rule 22) over [`Inner`]: any owner's task,
//! the filtered listing walking the operator index (`ops.rs`) or an owner's index, and
//! the counts. Lock order as in `db.rs`: a task shard's lock before the operator index's.

use super::db::{Inner, lock};
use super::key::{Id, Pos};
use super::ops;
use crate::error::StoreError;
use crate::operator::{OperatorFilter, OperatorPage, TaskCounts};
use crate::record::{Millis, TaskId, TaskRecord};

impl Inner {
    /// Any owner's task unexpired at `now`.
    pub(super) fn operator_read(&self, id: &TaskId, now: Millis) -> Result<TaskRecord, StoreError> {
        let id = Id::of(id).ok_or(StoreError::NotFound)?;
        match self.task_shard(&id).tasks.get(&id) {
            Some(s) if !s.record.is_expired(now) => s.record(),
            _ => Err(StoreError::NotFound),
        }
    }

    /// One page of the operator listing (rule 22), newest first before `before`: the
    /// index the filter names is walked in batches, each task then read from its shard
    /// and checked against the whole filter. The page ends where a task past `limit`
    /// matches, and the cursor is given only then.
    pub(super) fn operator_page(
        &self,
        filter: &OperatorFilter,
        before: Option<(Millis, TaskId)>,
        limit: usize,
        now: Millis,
    ) -> Result<OperatorPage, StoreError> {
        let mut upper = filter.created_before.map(Pos::first_at);
        if let Some(cursor) = &before {
            let pos = Pos::of_cursor(cursor).ok_or(StoreError::InvalidCursor)?;
            upper = Some(upper.map_or(pos, |end| end.min(pos)));
        }
        let lower = filter.created_from.map(Pos::first_at);
        let batch = (limit + 1).clamp(16, 256);
        let mut tasks = Vec::new();
        let mut last = None;
        while let Some(range) = ops::range(lower, upper) {
            let positions = match &filter.owner {
                Some(owner) => match self.owner_shard(owner).get(owner) {
                    Some(index) => ops::newest(&index.order, range, batch),
                    None => Vec::new(),
                },
                None => lock(&self.operator).walk(filter, range, batch),
            };
            for &pos in &positions {
                upper = Some(pos);
                let shard = self.task_shard(&pos.id);
                let Some(s) = shard.tasks.get(&pos.id) else {
                    continue;
                };
                if s.record.is_expired(now) || !filter.matches(&s.record) {
                    continue;
                }
                if tasks.len() == limit {
                    return Ok(OperatorPage {
                        tasks,
                        next_cursor: ops::next_cursor(filter, last),
                    });
                }
                tasks.push(s.record()?);
                last = Some(pos);
            }
            if positions.len() < batch {
                break;
            }
        }
        Ok(OperatorPage {
            tasks,
            next_cursor: None,
        })
    }

    /// The stored tasks by status and tool.
    pub(super) fn operator_counts(&self) -> TaskCounts {
        lock(&self.operator).counts()
    }
}
