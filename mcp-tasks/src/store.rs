//! The [`TaskStore`] trait and its contract.

use async_trait::async_trait;
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use serde_json::Value;
use std::collections::BTreeMap;

use crate::error::StoreError;
use crate::event::EventStream;
use crate::log::{LogDraft, LogPage};
use crate::node::{NodeBeat, NodeRecord};
use crate::operator::{OperatorFilter, OperatorPage, TaskCounts};
use crate::record::{
    Lease, NewTask, Owner, Recovery, Resolved, SweepReport, TaskId, TaskPage, TaskRecord,
    Transition,
};

/// Durable storage of MCP tasks, shared by every server instance that serves them.
///
/// # Contract
///
/// Every backend obeys these rules; [`conformance`](crate::conformance) checks each one.
///
/// 1. **Thread-safe.** Every method may be called concurrently, from any number of
///    handles (clones, or handles opened on the same backend by other processes).
/// 2. **Durable create.** When `create` returns, `get` of that task succeeds on every
///    handle of the backend; no eventual-consistency window.
/// 3. **Ids** are 128 random bits, never reused.
/// 4. **Owner scope.** Every operation names the owner. A task of another owner reads as
///    [`StoreError::NotFound`], exactly like an unknown id, on every operation.
/// 5. **Statuses.** A task starts `working`. `working <-> input_required`; either may move
///    to `completed`, `failed` or `cancelled`, which are terminal.
/// 6. **First terminal write wins**, atomically: of any number of concurrent `complete`,
///    `fail` and `cancel` calls, exactly one reports `won: true`; the others change nothing
///    and return the winner's record. Nothing ever leaves a terminal state, and a terminal
///    record never changes again (operations that would change it return
///    [`StoreError::Terminal`] or, for `complete`/`fail`/`cancel`, `won: false`).
/// 7. **Outcome.** `completed` carries the result, `failed` the JSON-RPC error. The
///    terminal write also sets the status message to what the outcome says, never the
///    progress text of the run that ended: `fail` to the error's message; `complete` to
///    the tool error's first text when the result says `isError: true`, else none;
///    `cancel` to the message given (the previous one when none is).
/// 8. **Input requests** merge into the pending set and make the task `input_required`.
///    Keys are unique for the task's whole life: requesting a key used before (pending or
///    answered) is [`StoreError::InputKeyReused`], and nothing changes.
/// 9. **Input responses** (`resolve_input`) accept answers to pending keys only; unknown or
///    already answered keys are ignored. Accepted answers are kept until the worker takes
///    them (`take_input_response`). When no request is left pending the task is `working`
///    again. On a terminal task nothing changes and no event is raised.
/// 10. **Cancel request** (`request_cancel`) only raises a flag and an event; the worker
///     decides. `cancel` is the terminal write.
/// 11. **Leases.** `claim_lease` succeeds when no live lease exists or the caller holds it;
///     `renew_lease` needs the caller to hold a live lease (a lapsed one is lost) and
///     `release_lease` needs the caller to hold it. `create_leased` gives the same task and
///     lease as `create` then `claim_lease`, in one write. A terminal write ends the lease
///     (the record it returns has none), so a finished worker need not release it.
/// 12. **TTL.** A task expires when `now >= created_at + ttl`. From then on it reads as
///     `NotFound`; `sweep` deletes it and reports it if it was unfinished. `sweep` also
///     reports unfinished tasks whose lease lapsed (their worker is gone).
/// 13. **Listing** returns one owner's tasks oldest first, ordered by `(created_at, id)`,
///     in pages with an opaque keyset cursor: no task appears twice and none present for
///     the whole listing is missed, whatever is inserted or expires meanwhile. A cursor the
///     store did not issue is [`StoreError::InvalidCursor`].
/// 14. **Revision** increases with every change of a record.
/// 15. **Events.** After a change is durable, the store publishes it ([`TaskEvent`](crate::TaskEvent))
///     to every handle's event feed. Events wake waiters; the record is the truth.
/// 16. **Limits** ([`Limits`](crate::Limits)) refuse with [`StoreError::LimitExceeded`]
///     and change nothing; the TTL is clamped, not refused.
/// 17. **Time** comes from the store's [`Clock`](crate::Clock) only.
/// 18. **Queued tasks and claims.** A task created with a [`Job`](crate::Job) and no
///     lease waits for a worker ([`TaskRecord::queued_tool`]). `claim_next(tools, holder,
///     ttl)` leases such a task of one of `tools` to `holder` and counts the run
///     ([`TaskRecord::attempt`]; a run after the first says `Attempt N of M` in the status
///     message), or returns `None` when none waits. No two claims ever hold one task: a
///     claimed task waits no more until rule 20 makes it wait again. The
///     [`Changed`](crate::TaskEvent::Changed) event of a change says whether the task
///     waits for a worker after it (`queued`), so workers look for work only then.
///     The record's [`TraceContext`](crate::TraceContext), given at creation, is kept
///     unchanged through every later write and claim.
/// 19. **Claim order** is creation order per tool: a claim takes the oldest waiting task
///     of its tools by `(created_at, id)`, passing over only tasks another claim is
///     taking at that moment.
/// 20. **Lapsed claims** (`recover_lapsed`): an unfinished task whose lease lapsed waits
///     for a worker again when its job is at least once with attempts left (its pending
///     input requests and unread answers are dropped, its keys stay used); ends
///     `cancelled` when its cancel was requested; otherwise fails with the given error
///     ("worker lost"). A task whose lease did not lapse is left alone.
/// 21. **Cancel of a queued task.** `request_cancel` on a task waiting for a worker
///     cancels it at once; a task whose cancel was requested is never claimed, so it
///     never runs.
/// 22. **Operator's view** (`operator_list`, `operator_get`, `operator_counts`): the
///     only operations not scoped by owner, for the person running the server, never for
///     a peer. `operator_list` returns the visible (unexpired) tasks of every owner
///     matching an [`OperatorFilter`], newest first by `(created_at, id)`, in pages with
///     an opaque keyset cursor bound to the filter: no task appears twice and none present
///     for the whole listing is missed; a cursor not issued for the same filter is
///     [`StoreError::InvalidCursor`]. `operator_get` reads any owner's visible task, the
///     whole record. `operator_counts` counts the *stored* tasks by status and by tool
///     (a task past its TTL counts until the sweep deletes it). Cost: a page reads the
///     tasks it returns plus those the filter passes over in the one index it walks
///     newest first (the owner's, the lease holder's, the tool's, the status's, or all
///     tasks'), never every task by design; the counts are kept with every write by the
///     memory and Redis stores (reading them costs O(statuses + tools), per shard) and
///     are one grouped pass over the stored tasks in the SQL stores (O(tasks)). A store
///     that does not implement them (the default of the three methods, for stores
///     written before them) answers [`StoreError::Unsupported`].
/// 23. **Task logs** ([`crate::log`]; optional: a store that keeps none says so with
///     [`keeps_logs`](Self::keeps_logs) `false`, the default, and its
///     [`append_log`](Self::append_log) and [`read_log`](Self::read_log) answer
///     [`StoreError::Unsupported`]). A store that keeps them keeps per task an ordered
///     log whose entries are numbered from 0 without gaps, also when many handles append
///     at once. Every change of state writes its entry ([`log::kinds`](crate::log::kinds))
///     in the same atomic write as the change: created (`status` `working`, seq 0),
///     status message, input asked, answers accepted, cancel asked, claimed, lost run
///     requeued, finished (the terminal write's entry is the task's last). `append_log`
///     adds a tool's entries to an unfinished task ([`StoreError::Terminal`] after) and
///     wakes readers ([`TaskEvent::Logged`](crate::TaskEvent::Logged)); its types are
///     checked ([`log::check_draft`](crate::log::check_draft)). Each entry carries the
///     store's time and the node and actor of the writer's [`LogScope`](crate::LogScope).
///     Retention: at most [`Limits::max_log_entries`](crate::Limits::max_log_entries)
///     entries and [`Limits::max_log_bytes`](crate::Limits::max_log_bytes) bytes per
///     task, the oldest dropped first, the newest always kept; `read_log` says which is
///     the earliest kept. The log is owner-scoped like the task (rule 4) and goes with it
///     (rule 12). A task a store held before it kept logs (a store upgraded in place) has
///     no creation entry: its log starts at 0 with its first change after the upgrade.
/// 24. **Node registry** ([`crate::node`]; optional: the default of the three methods,
///     for stores written before it, answers [`StoreError::Unsupported`]). Not scoped by
///     owner, for the servers sharing the store and their operator, never for a peer.
///     `heartbeat_node` writes a node's entry at the store's time: a
///     [`starting`](crate::NodeBeat::starting) beat, or one for an id without an entry,
///     starts it afresh (`started_at` = `heartbeat_at` = now, no drain asked); a later
///     beat moves `heartbeat_at` to now and keeps `started_at` and the drain request, and
///     records [`drained`](crate::NodeBeat::drained) only while a drain is asked. It
///     returns the entry, so the node reads whether it is asked to drain.
///     `request_drain` raises the drain flag of a listed node ([`StoreError::NotFound`]
///     for an id without an entry) and returns the entry. `list_nodes` returns every
///     entry, by id, each with its [`NodeState`](crate::NodeState) at the store's time:
///     lost once its heartbeat is [`LOST_AFTER_BEATS`](crate::node::LOST_AFTER_BEATS)
///     of its intervals old, else drained, draining or active by the flags; an entry
///     [`FORGET_AFTER_MS`](crate::node::FORGET_AFTER_MS) past lost is removed (and neither
///     listed nor drained). Every handle sees a write at once (rule 2).
/// 25. **Idempotent create** (optional: a store that keeps no idempotency keys says so
///     with [`supports_idempotency`](Self::supports_idempotency) `false`, the default,
///     and refuses a create carrying one with [`StoreError::Unsupported`], never
///     ignoring it). `create` and `create_leased` with
///     [`NewTask::idempotency`](crate::NewTask::idempotency) create at most one task per
///     `(owner, key)` while that task is kept (until its TTL ends, rule 12): a repeat
///     whose fingerprint is the same creates nothing and answers
///     [`StoreError::AlreadyExists`] with that task's current record; one with another
///     fingerprint answers [`StoreError::IdempotencyConflict`]. Neither counts against a
///     limit (rule 16) or writes anything. Atomic across handles: of any number of
///     concurrent creates with one key, exactly one creates the task. Keys are scoped by
///     owner (rule 4): another owner's key neither collides nor shows. Once the task
///     expired, the key is free again. A key is 1 to 255 bytes
///     ([`Idempotency::new`](crate::Idempotency::new)), else
///     [`StoreError::InvalidIdempotencyKey`]; the fingerprint is opaque, only compared.
#[async_trait]
pub trait TaskStore: Send + Sync + std::fmt::Debug + 'static {
    /// Creates a `working` task and returns it once it is durable (rule 2).
    async fn create(&self, new: NewTask) -> Result<TaskRecord, StoreError>;

    /// Creates a `working` task already leased to `holder` for `ttl_ms` (rules 2 and 11):
    /// what a server that runs the task it creates needs. The default runs `create`,
    /// `claim_lease` and `get` in turn (a task whose claim fails is cancelled, so that
    /// none is left without a worker); a backend overrides it to do it in one write.
    async fn create_leased(
        &self,
        new: NewTask,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<TaskRecord, StoreError> {
        let record = self.create(new).await?;
        if let Err(e) = self
            .claim_lease(&record.owner, &record.id, holder, ttl_ms)
            .await
        {
            let _ = self
                .cancel(
                    &record.owner,
                    &record.id,
                    Some(format!("The task could not be leased to its worker: {e}")),
                )
                .await;
            return Err(e);
        }
        self.get(&record.owner, &record.id).await
    }

    /// Reads a task.
    async fn get(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError>;

    /// One page of `owner`'s tasks after `cursor`, at most `limit` long (rule 13).
    async fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<TaskPage, StoreError>;

    /// Sets (or clears) the status message of an unfinished task.
    async fn set_status_message(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<TaskRecord, StoreError>;

    /// Adds input requests by key and makes the task `input_required` (rule 8).
    async fn request_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        requests: BTreeMap<String, Value>,
    ) -> Result<TaskRecord, StoreError>;

    /// Accepts answers to pending input requests (rule 9).
    async fn resolve_input(
        &self,
        owner: &Owner,
        id: &TaskId,
        responses: BTreeMap<String, Value>,
    ) -> Result<Resolved, StoreError>;

    /// Removes and returns the answer to `key`, if it has arrived.
    async fn take_input_response(
        &self,
        owner: &Owner,
        id: &TaskId,
        key: &str,
    ) -> Result<Option<Value>, StoreError>;

    /// Terminal write: `completed` with `result` (rule 6).
    async fn complete(
        &self,
        owner: &Owner,
        id: &TaskId,
        result: JsonObject,
    ) -> Result<Transition, StoreError>;

    /// Terminal write: `failed` with a JSON-RPC error (rule 6).
    async fn fail(
        &self,
        owner: &Owner,
        id: &TaskId,
        error: ErrorObject,
    ) -> Result<Transition, StoreError>;

    /// Terminal write: `cancelled` (rule 6).
    async fn cancel(
        &self,
        owner: &Owner,
        id: &TaskId,
        message: Option<String>,
    ) -> Result<Transition, StoreError>;

    /// Asks the worker to stop (rule 10). A no-op on a finished task.
    async fn request_cancel(&self, owner: &Owner, id: &TaskId) -> Result<TaskRecord, StoreError>;

    /// Takes (or re-takes) the lease of an unfinished task for `ttl_ms` (rule 11).
    async fn claim_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError>;

    /// Extends a lease the caller holds.
    async fn renew_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Lease, StoreError>;

    /// Gives up a lease the caller holds.
    async fn release_lease(
        &self,
        owner: &Owner,
        id: &TaskId,
        holder: &str,
    ) -> Result<(), StoreError>;

    /// Leases the oldest task waiting for a worker among `tools` to `holder` for `ttl_ms`
    /// (rules 18 and 19); `None` when none waits.
    async fn claim_next(
        &self,
        tools: &[String],
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Option<TaskRecord>, StoreError>;

    /// Decides the fate of a task whose lease lapsed, by its job's delivery (rule 20);
    /// `lost` is the error a task that cannot run again fails with.
    async fn recover_lapsed(
        &self,
        owner: &Owner,
        id: &TaskId,
        lost: ErrorObject,
    ) -> Result<Recovery, StoreError>;

    /// Deletes expired tasks and reports what needs attention (rule 12).
    async fn sweep(&self) -> Result<SweepReport, StoreError>;

    /// One page of every owner's tasks matching `filter`, newest first, after `cursor`,
    /// at most `limit` long (rule 22). Unsupported by default.
    async fn operator_list(
        &self,
        filter: &OperatorFilter,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<OperatorPage, StoreError> {
        let _ = (filter, cursor, limit);
        Err(StoreError::Unsupported {
            operation: "operator listing",
        })
    }

    /// Reads any owner's task, the whole record (rule 22). Unsupported by default.
    async fn operator_get(&self, id: &TaskId) -> Result<TaskRecord, StoreError> {
        let _ = id;
        Err(StoreError::Unsupported {
            operation: "operator reads",
        })
    }

    /// Counts the stored tasks by status and by tool (rule 22). Unsupported by default.
    async fn operator_counts(&self) -> Result<TaskCounts, StoreError> {
        Err(StoreError::Unsupported {
            operation: "operator counts",
        })
    }

    /// Whether this store keeps task logs (rule 23). `false` by default.
    fn keeps_logs(&self) -> bool {
        false
    }

    /// Whether this store keeps idempotency keys (rule 25). `false` by default: a create
    /// carrying one is then refused with [`StoreError::Unsupported`].
    fn supports_idempotency(&self) -> bool {
        false
    }

    /// Appends a tool's `entries` to the log of the owner's unfinished task and returns
    /// the `seq` of the last (rule 23). Unsupported by default.
    async fn append_log(
        &self,
        owner: &Owner,
        id: &TaskId,
        entries: Vec<LogDraft>,
    ) -> Result<u64, StoreError> {
        let _ = (owner, id, entries);
        Err(StoreError::Unsupported {
            operation: "task logs",
        })
    }

    /// At most `limit` entries of the owner's task's log after `after` (from the earliest
    /// kept when `None`), with the earliest kept and the next `seq` (rule 23).
    /// Unsupported by default.
    async fn read_log(
        &self,
        owner: &Owner,
        id: &TaskId,
        after: Option<u64>,
        limit: usize,
    ) -> Result<LogPage, StoreError> {
        let _ = (owner, id, after, limit);
        Err(StoreError::Unsupported {
            operation: "task logs",
        })
    }

    /// Writes this node's heartbeat and returns its entry, whose drain flag says whether
    /// it is asked to drain (rule 24). Unsupported by default.
    async fn heartbeat_node(&self, beat: &NodeBeat) -> Result<NodeRecord, StoreError> {
        let _ = beat;
        Err(StoreError::Unsupported {
            operation: "the node registry",
        })
    }

    /// Every node of the registry, by id, with its state now (rule 24). Unsupported by
    /// default.
    async fn list_nodes(&self) -> Result<Vec<NodeRecord>, StoreError> {
        Err(StoreError::Unsupported {
            operation: "the node registry",
        })
    }

    /// Asks node `id` to drain (rule 24). Unsupported by default.
    async fn request_drain(&self, id: &str) -> Result<NodeRecord, StoreError> {
        let _ = id;
        Err(StoreError::Unsupported {
            operation: "the node registry",
        })
    }

    /// Subscribes to the change feed of the whole backend (rule 15).
    fn events(&self) -> EventStream;

    /// Where the store keeps MCP 2025-11-25 session records
    /// ([`SessionStore`](crate::session::SessionStore), its own contract), if it keeps them.
    fn sessions(&self) -> Option<&dyn crate::session::SessionStore> {
        None
    }

    /// The backend's name, for telemetry and logs: `memory`, `sqlite`, `postgresql`,
    /// `redis` (standalone or Cluster) for the bundled stores, by the OpenTelemetry
    /// `db.system.name` values; a third-party store names itself (default `"other"`).
    /// Describes the store, changes nothing: no rule of the contract depends on it, and a
    /// store that wraps another (a decorator, such as [`Decorated`](crate::Decorated))
    /// reports the one it wraps.
    fn backend(&self) -> &'static str {
        "other"
    }
}
