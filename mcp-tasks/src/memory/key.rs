//! How the memory store names a task inside its maps and indexes: [`Id`], the 128-bit
//! value of a task id, and [`Pos`], its place in creation order. Both are plain values,
//! so an index entry holds no heap copy of the id: a million tasks in five maps would
//! otherwise keep five million 32-byte strings.
//!
//! The store mints its ids as 32 lowercase hex digits ([`TaskId::random`]) and the
//! cursors accept no other ids, so every id it holds or is asked to page from has such a
//! value, and the order of the values is the order of the texts. An id of another shape
//! names no task of this store.

use crate::error::StoreError;
use crate::record::{Millis, TaskId, TaskRecord};

/// A task id as its 128-bit value, in two halves so that a [`Pos`] packs into 24 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Id {
    hi: u64,
    lo: u64,
}

impl Id {
    /// The value of `id`; `None` when it is not 32 lowercase hex digits (no task of this
    /// store has it).
    pub(super) fn of(id: &TaskId) -> Option<Id> {
        let text = id.as_str();
        let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        if text.len() != 32 || !text.bytes().all(hex) {
            return None;
        }
        let value = u128::from_str_radix(text, 16).ok()?;
        Some(Id {
            hi: (value >> 64) as u64,
            lo: value as u64,
        })
    }

    /// The id of a record about to be stored; one the store did not mint is refused.
    pub(super) fn of_new(rec: &TaskRecord) -> Result<Id, StoreError> {
        Id::of(&rec.id).ok_or_else(|| {
            StoreError::backend(format!("task id {:?} is not one this store mints", rec.id))
        })
    }

    /// The id as its text.
    pub(super) fn task_id(self) -> TaskId {
        TaskId::from_wire(format!("{:016x}{:016x}", self.hi, self.lo))
    }
}

/// A task's place in creation order, `(created_at, id)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Pos {
    pub(super) at: Millis,
    pub(super) id: Id,
}

impl Pos {
    /// The place of a stored (or about to be stored) record with id `id`.
    pub(super) fn of(rec: &TaskRecord, id: Id) -> Pos {
        Pos {
            at: rec.created_at,
            id,
        }
    }

    /// The place of a cursor's `(created_at, id)`; cursors carry only such ids.
    pub(super) fn of_cursor((at, id): &(Millis, TaskId)) -> Option<Pos> {
        Some(Pos {
            at: *at,
            id: Id::of(id)?,
        })
    }

    /// The first place at `at`, before every task created then.
    pub(super) fn first_at(at: Millis) -> Pos {
        Pos {
            at,
            id: Id { hi: 0, lo: 0 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_in_text_order_and_others_are_refused() {
        let a = TaskId::from_wire("0000000000000000ffffffffffffffff");
        let b = TaskId::from_wire("0000000000000001000000000000000a");
        let (ia, ib) = (Id::of(&a).expect("hex"), Id::of(&b).expect("hex"));
        assert!(ia < ib && a.as_str() < b.as_str());
        assert_eq!(ia.task_id(), a);
        assert_eq!(ib.task_id(), b);
        let minted = TaskId::random().expect("rng");
        assert_eq!(Id::of(&minted).expect("minted").task_id(), minted);
        for bad in [
            "",
            "x",
            "0000000000000000FFFFFFFFFFFFFFFF",
            "+000000000000000ffffffffffffffff",
        ] {
            assert_eq!(Id::of(&TaskId::from_wire(bad)), None, "{bad}");
        }
    }
}
