//! The unfinished records a shared-store handle wrote last, so that its next change of
//! the same task can skip reading the record back (PostgreSQL and Redis).
//!
//! A task's lease holder writes it several times in a row (its status message, its
//! input requests, its lease, its outcome), and each change used to cost a read and a
//! compare-and-set write. With the record it wrote last at hand, the handle applies the
//! change to that copy and sends only the compare-and-set, which checks the revision in
//! the store: when another writer changed the task meanwhile, or it expired and was
//! removed, the write changes nothing and the change runs again from a fresh read.
//!
//! **Invariant.** A copy is only ever a guess: nothing is answered from it. A change
//! applied to it counts only when the store's compare-and-set accepts it, i.e. when the
//! stored revision is still the copy's. A change that the copy refuses (the rule's
//! error) or leaves unchanged is never answered from the copy either: the caller reads
//! the record and applies the change again, so a stale copy can cost a wasted try but
//! never a wrong answer. Finished records are not kept (nothing writes them again in
//! the normal course), so the map holds at most [`CAPACITY`] unfinished tasks.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use crate::record::{Millis, Owner, TaskId, TaskRecord};

/// How many records a handle keeps; the oldest kept goes first.
pub(crate) const CAPACITY: usize = 4096;

/// The records this handle wrote last, by task id.
#[derive(Debug, Default)]
pub(crate) struct Recent {
    inner: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    records: HashMap<TaskId, TaskRecord>,
    /// Ids in the order they were first kept (an id may outlive its record here: it is
    /// skipped when it comes up).
    order: VecDeque<TaskId>,
}

impl Recent {
    /// Keeps `record` as the task's last written state (forgets the task when finished).
    pub(crate) fn keep(&self, record: &TaskRecord) {
        let mut kept = self.lock();
        if record.is_terminal() {
            kept.records.remove(&record.id);
            return;
        }
        if kept
            .records
            .insert(record.id.clone(), record.clone())
            .is_none()
        {
            kept.order.push_back(record.id.clone());
        }
        while kept.records.len() > CAPACITY {
            let Some(oldest) = kept.order.pop_front() else {
                break;
            };
            kept.records.remove(&oldest);
        }
        // Ids of records taken or finished pile up in `order`, and an id taken and kept
        // again comes twice: past twice the capacity, keep each kept id once.
        if kept.order.len() > 2 * CAPACITY {
            let Kept { records, order } = &mut *kept;
            let mut seen = std::collections::HashSet::with_capacity(records.len());
            order.retain(|id| records.contains_key(id) && seen.insert(id.clone()));
        }
    }

    /// Takes the copy of `owner`'s task `id`, when one is kept and unexpired at `now`.
    /// The caller keeps the record again once its write is accepted.
    pub(crate) fn take(&self, owner: &Owner, id: &TaskId, now: Millis) -> Option<TaskRecord> {
        let record = self.lock().records.remove(id)?;
        (&record.owner == owner && !record.is_expired(now)).then_some(record)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        // A panic while holding the lock leaves a map of whole records: still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::record::{NewTask, Origin, WireRevision};
    use crate::rules;
    use mcp_tasks_protocol::tasks::TaskStatus;

    fn record(owner: &str, id: &str, now: Millis) -> TaskRecord {
        let new = NewTask {
            owner: Owner::new(owner),
            ttl_ms: Some(60_000),
            poll_interval_ms: None,
            origin: Origin {
                method: "tools/call".into(),
                tool: Some("t".into()),
                revision: WireRevision::V2026_07_28,
            },
            status_message: None,
            job: None,
            trace_context: None,
            idempotency: None,
        };
        rules::new_record(TaskId::from_wire(id), new, &Limits::default(), now)
    }

    #[test]
    fn a_kept_record_is_taken_once_by_its_owner_only() {
        let recent = Recent::default();
        let rec = record("alice", "a", 0);
        recent.keep(&rec);
        assert!(
            recent.take(&Owner::new("bob"), &rec.id, 1).is_none(),
            "another owner's"
        );
        // The wrong owner's take dropped the copy: the next change reads.
        assert!(recent.take(&Owner::new("alice"), &rec.id, 1).is_none());
        recent.keep(&rec);
        assert_eq!(recent.take(&rec.owner, &rec.id, 1), Some(rec.clone()));
        assert!(recent.take(&rec.owner, &rec.id, 1).is_none(), "taken once");
    }

    #[test]
    fn expired_and_finished_records_are_not_handed_out() {
        let recent = Recent::default();
        let rec = record("alice", "a", 0);
        recent.keep(&rec);
        assert!(
            recent.take(&rec.owner, &rec.id, 60_000).is_none(),
            "expired"
        );
        let mut done = rec.clone();
        done.status = TaskStatus::Completed;
        recent.keep(&rec);
        recent.keep(&done);
        assert!(recent.take(&rec.owner, &rec.id, 1).is_none(), "finished");
    }

    #[test]
    fn the_oldest_goes_first_past_the_capacity() {
        let recent = Recent::default();
        for n in 0..CAPACITY + 10 {
            recent.keep(&record("alice", &format!("t{n}"), 0));
        }
        let alice = Owner::new("alice");
        assert!(recent.take(&alice, &TaskId::from_wire("t0"), 1).is_none());
        assert!(recent.take(&alice, &TaskId::from_wire("t9"), 1).is_none());
        assert!(
            recent
                .take(&alice, &TaskId::from_wire(format!("t{}", CAPACITY + 9)), 1)
                .is_some()
        );
        // Taking and keeping again many times leaves the queue of ids bounded.
        for _ in 0..3 * CAPACITY {
            let rec = record("alice", "again", 0);
            recent.keep(&rec);
            recent.take(&alice, &rec.id, 1);
        }
        assert!(recent.lock().order.len() <= 2 * CAPACITY + 1);
    }
}
