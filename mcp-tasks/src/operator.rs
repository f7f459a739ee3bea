//! What the operator's view of a store is made of (contract rule 22): the filter of
//! [`TaskStore::operator_list`](crate::TaskStore::operator_list), its pages, and the
//! counts of [`TaskStore::operator_counts`](crate::TaskStore::operator_counts).

use std::collections::BTreeMap;

use mcp_tasks_protocol::tasks::TaskStatus;

use crate::error::StoreError;
use crate::record::{Millis, Owner, TaskId, TaskRecord};

/// Which tasks an operator listing returns: every field set must match (an empty filter
/// lists every task of every owner).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct OperatorFilter {
    /// Only tasks in this status.
    pub status: Option<TaskStatus>,
    /// Only tasks running this tool ([`Origin::tool`](crate::Origin::tool)).
    pub tool: Option<String>,
    /// Only this owner's tasks.
    pub owner: Option<Owner>,
    /// Only tasks created at or after this instant.
    pub created_from: Option<Millis>,
    /// Only tasks created strictly before this instant.
    pub created_before: Option<Millis>,
    /// Only tasks whose lease names this holder (the worker node running them, or the
    /// one whose lease lapsed and was not taken over). A finished task holds no lease.
    pub lease_holder: Option<String>,
    /// Only tasks whose status message ([`TaskRecord::status_message`]) holds this text,
    /// ignoring the case of ASCII letters (`A`-`Z` match `a`-`z`; every other character
    /// must match exactly, so that every backend answers alike). A task without a status
    /// message never matches; an empty text matches every task that has one.
    pub text: Option<String>,
}

impl OperatorFilter {
    /// True when `rec` passes every field of the filter.
    pub fn matches(&self, rec: &TaskRecord) -> bool {
        self.status.is_none_or(|s| s == rec.status)
            && self
                .tool
                .as_deref()
                .is_none_or(|t| rec.origin.tool.as_deref() == Some(t))
            && self.owner.as_ref().is_none_or(|o| o == &rec.owner)
            && self.created_from.is_none_or(|at| rec.created_at >= at)
            && self.created_before.is_none_or(|at| rec.created_at < at)
            && self
                .lease_holder
                .as_deref()
                .is_none_or(|h| rec.lease.as_ref().is_some_and(|l| l.holder == h))
            && self.text.as_deref().is_none_or(|t| {
                rec.status_message
                    .as_deref()
                    .is_some_and(|m| contains_ignoring_ascii_case(m, t))
            })
    }

    /// [`text`](Self::text) with its ASCII letters in lower case: what the SQL backends
    /// look for in the status message, itself lowered the same way.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn lowered_text(&self) -> Option<String> {
        self.text.as_deref().map(str::to_ascii_lowercase)
    }

    /// The cursor of the position before `(created_at, id)` in a newest-first listing
    /// with this filter: what a backend's page returns as `next_cursor`.
    pub fn cursor(&self, created_at: Millis, id: &TaskId) -> String {
        crate::cursor::encode_keyed(self.fingerprint(), created_at, id)
    }

    /// The position a cursor made by [`cursor`](Self::cursor) with the same filter holds;
    /// anything else (an owner listing's cursor, another filter's, garbage) is
    /// [`StoreError::InvalidCursor`].
    pub fn decode_cursor(&self, cursor: &str) -> Result<(Millis, TaskId), StoreError> {
        crate::cursor::decode_keyed(self.fingerprint(), cursor)
    }

    /// A stable digest of the filter (the same in every process and build), carried by
    /// its cursors so that a cursor is refused with another filter.
    fn fingerprint(&self) -> u64 {
        let mut h = Fnv::default();
        h.field(self.status.map(TaskStatus::as_str));
        h.field(self.tool.as_deref());
        h.field(self.owner.as_ref().map(Owner::as_str));
        h.field(self.created_from.map(|at| at.to_string()).as_deref());
        h.field(self.created_before.map(|at| at.to_string()).as_deref());
        h.field(self.lease_holder.as_deref());
        // Appended only when set, so that the cursors of filters without text (issued
        // before the field existed, by an older node of a rolling upgrade) stay valid.
        if let Some(text) = &self.text {
            h.field(Some(text));
        }
        h.0
    }
}

/// Whether `haystack` holds `needle`, ignoring the case of ASCII letters only.
fn contains_ignoring_ascii_case(haystack: &str, needle: &str) -> bool {
    let (haystack, needle) = (haystack.as_bytes(), needle.as_bytes());
    needle.is_empty()
        || haystack
            .windows(needle.len())
            .any(|window| window.eq_ignore_ascii_case(needle))
}

/// 64-bit FNV-1a over length-prefixed fields (no two filters share an encoding).
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn bytes(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn field(&mut self, value: Option<&str>) {
        match value {
            None => self.bytes(&[0]),
            Some(v) => {
                self.bytes(&[1]);
                self.bytes(&(v.len() as u64).to_le_bytes());
                self.bytes(v.as_bytes());
            }
        }
    }
}

/// One page of an operator listing, newest first.
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorPage {
    /// The tasks of this page, newest first by `(created_at, id)`.
    pub tasks: Vec<TaskRecord>,
    /// Present when more tasks may follow; opaque, and valid with the same filter only.
    pub next_cursor: Option<String>,
}

impl OperatorPage {
    /// The page of `rows`, the tasks matching `filter` newest first from the page's start,
    /// read `limit + 1` at most: the first `limit`, and a cursor when one more came.
    #[cfg(any(feature = "sqlite", feature = "postgres", feature = "redis"))]
    pub(crate) fn from_rows(
        filter: &OperatorFilter,
        mut rows: Vec<TaskRecord>,
        limit: usize,
    ) -> OperatorPage {
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next_cursor = if more {
            rows.last().map(|t| filter.cursor(t.created_at, &t.id))
        } else {
            None
        };
        OperatorPage {
            tasks: rows,
            next_cursor,
        }
    }
}

/// How many tasks the store keeps, by status and by tool (contract rule 22).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskCounts {
    /// Tasks `working`.
    pub working: u64,
    /// Tasks `input_required`.
    pub input_required: u64,
    /// Tasks `completed`.
    pub completed: u64,
    /// Tasks `failed`.
    pub failed: u64,
    /// Tasks `cancelled`.
    pub cancelled: u64,
    /// Tasks by [`Origin::tool`](crate::Origin::tool) (tasks of no tool are not in it);
    /// tools with no task are left out.
    pub by_tool: BTreeMap<String, u64>,
}

impl TaskCounts {
    /// The count of `status`.
    pub fn status(&self, status: TaskStatus) -> u64 {
        match status {
            TaskStatus::Working => self.working,
            TaskStatus::InputRequired => self.input_required,
            TaskStatus::Completed => self.completed,
            TaskStatus::Failed => self.failed,
            TaskStatus::Cancelled => self.cancelled,
        }
    }

    /// Adds `n` to the count of `status` (a backend building the counts).
    pub fn add_status(&mut self, status: TaskStatus, n: u64) {
        let slot = match status {
            TaskStatus::Working => &mut self.working,
            TaskStatus::InputRequired => &mut self.input_required,
            TaskStatus::Completed => &mut self.completed,
            TaskStatus::Failed => &mut self.failed,
            TaskStatus::Cancelled => &mut self.cancelled,
        };
        *slot += n;
    }

    /// Every task counted.
    pub fn total(&self) -> u64 {
        self.working + self.input_required + self.completed + self.failed + self.cancelled
    }
}

/// The status named `name` as stored (its wire name), if any (the durable stores read
/// their counts by it).
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "redis"))]
pub(crate) fn parse_status(name: &str) -> Option<TaskStatus> {
    [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ]
    .into_iter()
    .find(|s| s.as_str() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_cursor_is_bound_to_its_filter() {
        let id = TaskId::random().expect("rng");
        let all = OperatorFilter::default();
        let mine = OperatorFilter {
            tool: Some("slow".into()),
            ..OperatorFilter::default()
        };
        let c = mine.cursor(42, &id);
        assert_eq!(mine.decode_cursor(&c).expect("valid"), (42, id.clone()));
        for (filter, bad) in [
            (&all, c.clone()),
            (&mine, crate::cursor::encode(42, &id)),
            (&mine, c.replacen("o1.", "o2.", 1)),
            (&mine, format!("{c}0")),
        ] {
            assert!(
                matches!(filter.decode_cursor(&bad), Err(StoreError::InvalidCursor)),
                "{bad}"
            );
        }
        assert!(crate::cursor::decode(&c).is_err());
        let searched = OperatorFilter {
            text: Some("slow".into()),
            ..OperatorFilter::default()
        };
        assert!(matches!(
            searched.decode_cursor(&all.cursor(42, &id)),
            Err(StoreError::InvalidCursor)
        ));
    }

    #[test]
    fn text_ignores_ascii_case_only() {
        assert!(contains_ignoring_ascii_case(
            "Copying FILE 3 of 7",
            "file 3"
        ));
        assert!(contains_ignoring_ascii_case("x", ""));
        assert!(contains_ignoring_ascii_case("50% done", "50%"));
        assert!(!contains_ignoring_ascii_case("50 done", "50%"));
        assert!(!contains_ignoring_ascii_case("a_b", "a%b"));
        assert!(contains_ignoring_ascii_case("Étape 2", "Étape"));
        assert!(!contains_ignoring_ascii_case("Étape 2", "étape"));
        assert!(!contains_ignoring_ascii_case("ab", "abc"));
    }
}
