//! [`Backend`]: what a storage backend provides, and all it provides. The [`TaskStore`]
//! operations are written once on top of it (every `Backend` is a [`TaskStore`]), so a
//! backend never decides which rule an operation runs or which events it announces.
//!
//! [`TaskStore`]: crate::TaskStore

use std::fmt;
use std::future::Future;

use crate::error::StoreError;
use crate::event::{EventStream, TaskEvent};
use crate::limits::Limits;
use crate::log::{LogDraft, LogPage};
use crate::node::{NodeBeat, NodeRecord};
use crate::operator::{OperatorFilter, OperatorPage, TaskCounts};
use crate::record::{Millis, Owner, SweepReport, TaskId, TaskPage, TaskRecord};
use crate::session::SessionStore;

/// The events a committed change announces, made from the operation's value and the
/// record after the change. Plain functions: the operations pass them to
/// [`Backend::update_task`] and [`Backend::insert_task`], the backend calls them once the
/// change is committed and publishes what they return.
pub type Announce<R> = fn(&R, &TaskRecord) -> Events;

/// The events of one change: none, one or two, kept inline (announcing allocates
/// nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Events([Option<TaskEvent>; 2]);

impl Events {
    /// No event.
    pub fn none() -> Events {
        Events([None, None])
    }

    /// One event.
    pub fn one(event: TaskEvent) -> Events {
        Events([Some(event), None])
    }

    /// Two events, in this order.
    pub fn two(first: TaskEvent, second: TaskEvent) -> Events {
        Events([Some(first), Some(second)])
    }

    /// True when there is nothing to publish.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }

    /// The events, in order.
    pub fn iter(&self) -> impl Iterator<Item = &TaskEvent> {
        self.0.iter().flatten()
    }
}

impl IntoIterator for Events {
    type Item = TaskEvent;
    type IntoIter = std::iter::Flatten<std::array::IntoIter<Option<TaskEvent>, 2>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter().flatten()
    }
}

/// A task storage backend: a read-modify-write of one task record, the insertion of a
/// new one, reads, the sweep and the event feed. Implement it (and nothing else) and
/// your type is a [`TaskStore`](crate::TaskStore): the blanket implementation runs each
/// operation's rule of [`rules`](crate::rules) through [`update_task`](Self::update_task)
/// and announces its events, exactly as for the bundled backends, and the conformance
/// kit (feature `conformance`) checks the result.
///
/// # Contract
///
/// Every rule of [`TaskStore`](crate::TaskStore) follows from these, given the
/// operations written on top:
///
/// 1. **Thread-safe, shared.** Every method may be called concurrently from any number of
///    handles (clones, other processes, other machines) on the same data.
/// 2. **Time** is the backend's [`Clock`](crate::Clock), read once per call (`now`).
/// 3. **Visibility.** A task is visible to an owner when it is that owner's and not
///    expired at `now` ([`TaskRecord::is_expired`]); anything else reads as
///    [`StoreError::NotFound`], in every method.
/// 4. **Read-modify-write** ([`update_task`](Self::update_task)): read the visible
///    record, call `f(&mut record, now, limits)`, and:
///    - `Err`: write nothing, return the error;
///    - revision unchanged: write nothing, announce nothing, return the value and record;
///    - revision bumped: write the record back, atomically with respect to every other
///      write of that task on any handle (a lock, a transaction, or a compare-and-set
///      on the revision read); if the task went from unfinished to terminal, release its
///      live slot (rule 16) in the same write. Once the write is durable (never before,
///      never for a write that did not land), publish `announce(&value, &record)` to
///      every handle's feed. Return the value and the record as written.
///
///    An optimistic backend whose compare-and-set lost reads again and calls `f` again
///    (so `f` is `FnMut`); it must say so with [`RERUNS_UPDATES`](Self::RERUNS_UPDATES).
///    One that keeps losing gives up with [`StoreError::Unavailable`].
/// 5. **Insert** ([`insert_task`](Self::insert_task)): call `make(limits, now)` once for
///    the new, unfinished record; refuse with [`StoreError::LimitExceeded`]
///    ([`Limit::LiveTasksPerOwner`](crate::Limit::LiveTasksPerOwner), then
///    [`Limit::LiveTasksTotal`](crate::Limit::LiveTasksTotal)) when the owner's or all
///    owners' unfinished tasks are at their limit, storing nothing; otherwise store it and
///    count it, atomically. When this returns, every handle reads the task (rule 2). Then
///    publish `announce(&(), &record)`.
/// 6. **Listing** ([`list_tasks`](Self::list_tasks)): the owner's visible tasks whose
///    `(created_at, id)` comes after `after`, in that order, at most `limit` (at least 1)
///    of them; `next_cursor` is [`cursor::encode`](crate::cursor::encode) of the page's
///    last position when more may follow, else `None` (rule 13).
/// 7. **Sweep** ([`sweep_tasks`](Self::sweep_tasks)): delete every task with
///    `expires_at <= now`, releasing the live slots of the unfinished ones, and report
///    them; also report the unfinished, unexpired tasks whose lease lapsed
///    ([`rules::lease_lapsed`](crate::rules::lease_lapsed)) (rule 12).
/// 8. **Events** ([`subscribe`](Self::subscribe)): a subscription to what every handle of
///    the backend publishes (rule 15); a subscriber that may have missed events hears
///    [`EventError::Lagged`](crate::EventError::Lagged).
/// 10. **Claim** ([`claim_task`](Self::claim_task)): among the visible-to-anyone tasks
///     (any owner, not expired at `now`) whose [`TaskRecord::queued_tool`] is one of
///     `tools`, take the oldest by `(created_at, id)` and change it with `f` exactly as
///     [`update_task`](Self::update_task) does (atomic, written back, announced once
///     durable); `Ok(None)` when there is none. A backend may pass over a task another
///     claim holds locked at that moment (`FOR UPDATE SKIP LOCKED`). One that picks a
///     task before it locks it meets [`StoreError::NotQueued`] from `f` when another
///     claim won the race: it moves on to the next task, never returns that error. So
///     the backend keeps an index of waiting tasks by tool and `(created_at, id)`, in
///     step with every write (the index follows `queued_tool` of the record written).
/// 11. **Failures** of the backend itself are [`StoreError::Unavailable`] when a retry
///     may succeed (connection lost, timeout, busy) and [`StoreError::Backend`] otherwise.
/// 12. **Operator's view** (optional: by default the three methods answer
///     [`StoreError::Unsupported`]). [`operator_list_tasks`](Self::operator_list_tasks):
///     the visible tasks of any owner matching `filter` whose `(created_at, id)` comes
///     before `before`, newest first, at most `limit` (at least 1); `next_cursor` is
///     [`OperatorFilter::cursor`](crate::OperatorFilter::cursor) of the page's last
///     position when more may follow. It reads the tasks through an index in creation
///     order, never every task. [`operator_read_task`](Self::operator_read_task): any
///     owner's visible task. [`operator_count_tasks`](Self::operator_count_tasks): the
///     stored tasks by status and tool.
/// 13. **Task logs** (optional: [`LOGS`](Self::LOGS) is `false` by default; then the
///     operations never fill [`TaskRecord::log_append`] and the two log methods answer
///     [`StoreError::Unsupported`]). A backend with `LOGS = true` keeps, per task, an
///     ordered log ([`crate::log`]) with a counter of the next `seq` (from 0), and
///     deletes it with the task (sweep, or any removal of the record). Then:
///     - [`insert_task`](Self::insert_task), [`update_task`](Self::update_task) and
///       [`claim_task`](Self::claim_task) take the drafts in the record's
///       [`log_append`](TaskRecord::log_append) (leaving it empty in the record they
///       return) and write them as the entries `next, next + 1, ...` at `now`, in the
///       same atomic write as the record; a write that does not happen (an error, the
///       revision unchanged, a lost compare-and-set whose rerun makes them again)
///       writes none;
///     - [`append_log_entries`](Self::append_log_entries) appends drafts (never none:
///       the operations answer an empty append themselves) to the log of
///       the owner's visible, unfinished task ([`StoreError::NotFound`],
///       [`StoreError::Terminal`] otherwise) without changing the record (its revision
///       stays), atomically with respect to every write of that task on any handle (no
///       `seq` given twice, none skipped), publishes
///       [`TaskEvent::Logged`](crate::TaskEvent::Logged) once durable, and returns the
///       `seq` of the last entry;
///     - after every append, the oldest entries are dropped while the log holds more
///       than [`Limits::max_log_entries`] entries or more than [`Limits::max_log_bytes`]
///       bytes ([`LogEntry::size`](crate::LogEntry::size) summed); the newest is never
///       dropped;
///     - [`read_log_entries`](Self::read_log_entries) reads the owner's visible task's
///       entries with `seq > after` (from the earliest kept when `after` is `None`),
///       oldest first, at most `limit` (at least 1), with the earliest `seq` kept and the
///       next `seq` ([`LogPage`](crate::LogPage)).
/// 14. **Node registry** (optional: by default the three methods answer
///     [`StoreError::Unsupported`]). One entry per node id, shared by every handle, at
///     the backend's time `now`. [`beat_node`](Self::beat_node): atomically, when the
///     beat is [`starting`](crate::NodeBeat::starting) or no entry exists, write
///     `started_at = heartbeat_at = now` with no drain asked; else set `heartbeat_at = now`,
///     the role and interval, keep `started_at` and the drain flag, and set `drained` to
///     the beat's only when the drain flag is up; return the entry as written.
///     [`drain_node`](Self::drain_node): atomically raise the flag of an existing entry
///     not forgotten at `now` ([`NodeRecord::forget_at`](crate::NodeRecord::forget_at)),
///     else [`StoreError::NotFound`]. [`list_node_entries`](Self::list_node_entries):
///     remove the entries forgotten at `now` and return the rest by id. Every returned
///     entry is [`NodeRecord::settled`](crate::NodeRecord::settled) at `now`.
/// 15. **Idempotency keys** (optional: [`IDEMPOTENCY`](Self::IDEMPOTENCY) is `false` by
///     default; then a create whose [`NewTask`](crate::NewTask) carries a key is refused
///     with [`StoreError::Unsupported`] before [`insert_task`](Self::insert_task) runs).
///     A backend with `IDEMPOTENCY = true` keeps an index `(owner, key) -> task id` of
///     the records carrying [`TaskRecord::idempotency`]. In
///     [`insert_task`](Self::insert_task), when the record `make` built carries one and
///     the index holds the key for a task of that owner still visible at `now` (not
///     expired), it stores nothing, counts nothing, publishes nothing and answers
///     [`StoreError::AlreadyExists`] with that task's current record when the
///     fingerprints are equal, else [`StoreError::IdempotencyConflict`]; these come
///     before the limits. Otherwise it stores the record and the index entry (replacing
///     an entry of an expired task) in the same atomic write, so of any number of
///     concurrent inserts with one key on any handles exactly one stores a task. The
///     entry goes with its task (sweep, or any removal of the record).
///
/// The methods are named apart from [`TaskStore`](crate::TaskStore)'s, so both traits can
/// be in scope at once.
pub trait Backend: Send + Sync + fmt::Debug + 'static {
    /// Whether [`update_task`](Self::update_task) may call its closure more than once
    /// (an optimistic backend retrying a lost compare-and-set). When `true` (the safe
    /// default) the operations keep their arguments and give each run a copy; a backend
    /// that runs each closure exactly once (under a lock, in a transaction) sets it to
    /// `false` and the arguments are moved into the record, uncopied. Such a backend
    /// that ran a closure twice would meet [`StoreError::Backend`].
    const RERUNS_UPDATES: bool = true;

    /// The backend's name, as [`TaskStore::backend`](crate::TaskStore::backend) reports
    /// it (by the OpenTelemetry `db.system.name` values where one exists); `"other"` by
    /// default.
    const NAME: &'static str = "other";

    /// Whether the backend keeps task logs (contract rule 13). `false` by default: the
    /// operations then write no log entry, and `tasks/stream` is refused by a server on
    /// this store.
    const LOGS: bool = false;

    /// Whether the backend keeps idempotency keys (contract rule 15). `false` by
    /// default: a create with a key is then refused with [`StoreError::Unsupported`].
    const IDEMPOTENCY: bool = false;

    /// The limits and defaults this handle enforces.
    fn limits(&self) -> &Limits;

    /// Stores the new record `make` builds, within the live-task limits (contract rule 5).
    fn insert_task<M>(
        &self,
        make: M,
        announce: Announce<()>,
    ) -> impl Future<Output = Result<TaskRecord, StoreError>> + Send
    where
        M: FnOnce(&Limits, Millis) -> TaskRecord + Send + 'static;

    /// Changes the owner's task with `f`, atomically, and announces the change once it is
    /// durable (contract rule 4).
    fn update_task<R, F>(
        &self,
        owner: &Owner,
        id: &TaskId,
        f: F,
        announce: Announce<R>,
    ) -> impl Future<Output = Result<(R, TaskRecord), StoreError>> + Send
    where
        R: Send + 'static,
        F: FnMut(&mut TaskRecord, Millis, &Limits) -> Result<R, StoreError> + Send + 'static;

    /// The owner's visible task (contract rule 3).
    fn read_task(
        &self,
        owner: &Owner,
        id: &TaskId,
    ) -> impl Future<Output = Result<TaskRecord, StoreError>> + Send;

    /// One page of the owner's visible tasks after `after` (contract rule 6).
    fn list_tasks(
        &self,
        owner: &Owner,
        after: Option<(Millis, TaskId)>,
        limit: usize,
    ) -> impl Future<Output = Result<TaskPage, StoreError>> + Send;

    /// Changes the oldest task waiting for a worker among `tools` with `f`, atomically,
    /// and announces the change once it is durable (contract rule 10).
    fn claim_task<R, F>(
        &self,
        tools: &[String],
        f: F,
        announce: Announce<R>,
    ) -> impl Future<Output = Result<Option<(R, TaskRecord)>, StoreError>> + Send
    where
        R: Send + 'static,
        F: FnMut(&mut TaskRecord, Millis, &Limits) -> Result<R, StoreError>
            + Clone
            + Send
            + 'static;

    /// One page of every owner's visible tasks matching `filter` before `before`, newest
    /// first (contract rule 12).
    fn operator_list_tasks(
        &self,
        filter: &OperatorFilter,
        before: Option<(Millis, TaskId)>,
        limit: usize,
    ) -> impl Future<Output = Result<OperatorPage, StoreError>> + Send {
        let _ = (filter, before, limit);
        std::future::ready(Err(StoreError::Unsupported {
            operation: "operator listing",
        }))
    }

    /// Any owner's visible task (contract rule 12).
    fn operator_read_task(
        &self,
        id: &TaskId,
    ) -> impl Future<Output = Result<TaskRecord, StoreError>> + Send {
        let _ = id;
        std::future::ready(Err(StoreError::Unsupported {
            operation: "operator reads",
        }))
    }

    /// The stored tasks counted by status and tool (contract rule 12).
    fn operator_count_tasks(&self) -> impl Future<Output = Result<TaskCounts, StoreError>> + Send {
        std::future::ready(Err(StoreError::Unsupported {
            operation: "operator counts",
        }))
    }

    /// Appends `drafts` to the log of the owner's visible, unfinished task (contract rule
    /// 13). Unsupported by default.
    fn append_log_entries(
        &self,
        owner: &Owner,
        id: &TaskId,
        drafts: Vec<LogDraft>,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send {
        let _ = (owner, id, drafts);
        std::future::ready(Err(StoreError::Unsupported {
            operation: "task logs",
        }))
    }

    /// At most `limit` entries of the owner's task's log after `after` (contract rule 13).
    /// Unsupported by default.
    fn read_log_entries(
        &self,
        owner: &Owner,
        id: &TaskId,
        after: Option<u64>,
        limit: usize,
    ) -> impl Future<Output = Result<LogPage, StoreError>> + Send {
        let _ = (owner, id, after, limit);
        std::future::ready(Err(StoreError::Unsupported {
            operation: "task logs",
        }))
    }

    /// Writes a node's heartbeat (contract rule 14). Unsupported by default.
    fn beat_node(
        &self,
        beat: &NodeBeat,
    ) -> impl Future<Output = Result<NodeRecord, StoreError>> + Send {
        let _ = beat;
        std::future::ready(Err(StoreError::Unsupported {
            operation: "the node registry",
        }))
    }

    /// Raises node `id`'s drain flag (contract rule 14). Unsupported by default.
    fn drain_node(&self, id: &str) -> impl Future<Output = Result<NodeRecord, StoreError>> + Send {
        let _ = id;
        std::future::ready(Err(StoreError::Unsupported {
            operation: "the node registry",
        }))
    }

    /// Every node entry not forgotten, by id (contract rule 14). Unsupported by default.
    fn list_node_entries(
        &self,
    ) -> impl Future<Output = Result<Vec<NodeRecord>, StoreError>> + Send {
        std::future::ready(Err(StoreError::Unsupported {
            operation: "the node registry",
        }))
    }

    /// Deletes expired tasks and reports what needs attention (contract rule 7).
    fn sweep_tasks(&self) -> impl Future<Output = Result<SweepReport, StoreError>> + Send;

    /// Subscribes to the change feed of the whole backend (contract rule 8).
    fn subscribe(&self) -> EventStream;

    /// Where this backend keeps MCP 2025-11-25 session records, if it keeps them
    /// ([`TaskStore::sessions`](crate::TaskStore::sessions)). `None` by default: a server
    /// on such a store keeps its sessions in its own memory.
    fn session_store(&self) -> Option<&dyn SessionStore> {
        None
    }
}
