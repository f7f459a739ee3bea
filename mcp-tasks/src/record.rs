//! What the store keeps for each task: [`TaskRecord`] and the values it is made of.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use mcp_tasks_protocol::tasks::TaskStatus;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::StoreError;

/// Milliseconds since the Unix epoch, from the store's [`Clock`](crate::Clock).
pub type Millis = i64;

/// A task id: 128 random bits as 32 lowercase hex digits. Unguessable, so it can double
/// as a bearer token where no principal exists.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TaskId(String);

impl TaskId {
    /// A fresh id: 128 bits from the operating system's CSPRNG.
    pub fn random() -> Result<TaskId, getrandom::Error> {
        let mut bits = [0u8; 16];
        getrandom::fill(&mut bits)?;
        Ok(TaskId(format!("{:032x}", u128::from_be_bytes(bits))))
    }

    /// Wraps an id received from a peer. Any string is accepted: an id the store never
    /// minted simply reads as unknown.
    pub fn from_wire(id: impl Into<String>) -> TaskId {
        TaskId(id.into())
    }

    /// The id as it goes on the wire.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who a task belongs to: the caller's authenticated principal, or (2025-11-25 without
/// authentication) its session. Every read and write is scoped by it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Owner(String);

impl Owner {
    /// The owner named by `principal`.
    pub fn new(principal: impl Into<String>) -> Owner {
        Owner(principal.into())
    }

    /// The principal's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A task's full address: its owner and its id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TaskKey {
    /// Who the task belongs to.
    pub owner: Owner,
    /// The task's id.
    pub id: TaskId,
}

/// The wire revision of the request that created a task (it decides the views the
/// task is shown in by default, e.g. whether an `isError` result reads as failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WireRevision {
    /// MCP 2026-07-28 with the `io.modelcontextprotocol/tasks` extension.
    #[serde(rename = "2026-07-28")]
    V2026_07_28,
    /// MCP 2025-11-25 tasks (SEP-1686).
    #[serde(rename = "2025-11-25")]
    V2025_11_25,
}

/// The request a task runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The JSON-RPC method, e.g. `tools/call`.
    pub method: String,
    /// The tool's name, for `tools/call`.
    pub tool: Option<String>,
    /// The wire revision of the request.
    pub revision: WireRevision,
}

/// How a task ended: the original request's result, or its JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The request's result (`completed`).
    Result(JsonObject),
    /// The request's JSON-RPC error (`failed`).
    Error(ErrorObject),
}

/// Who runs a task, until when. A worker renews its lease while it runs; a lease that
/// lapses means the worker (or its node) is gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The worker (and node) holding the lease.
    pub holder: String,
    /// When the lease lapses unless renewed.
    pub expires_at: Millis,
}

/// What happens to a task whose worker is lost (its lease lapsed) before it finished.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Delivery {
    /// The task fails ("worker lost"): the tool never runs twice. The default.
    #[default]
    AtMostOnce,
    /// The task waits for a worker again, until `max_attempts` runs have started; then
    /// it fails like an at-most-once task. The tool may run more than once.
    AtLeastOnce {
        /// How many runs may start, the first included (at least 1).
        max_attempts: u32,
    },
}

impl Delivery {
    /// How many runs may start: 1 for at most once.
    pub fn max_attempts(self) -> u32 {
        match self {
            Delivery::AtMostOnce => 1,
            Delivery::AtLeastOnce { max_attempts } => max_attempts.max(1),
        }
    }
}

/// What a worker needs to run a task, kept in its record from its creation: the tool is
/// [`Origin::tool`]; the arguments, what the request declared and who called are here.
/// A record without a job (written by an older build, or by `create` without one) can
/// only be run by the process that created it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// The tool's arguments, as validated when the task was created.
    pub arguments: JsonObject,
    /// What the creating request declared about its client (MCP 2026-07-28: its
    /// `clientCapabilities`), as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declarations: Option<Value>,
    /// The caller's authenticated principal, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The scopes the caller's credentials granted.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub scopes: BTreeSet<String>,
    /// Earlier tasks of the same owner the creating request named as related
    /// (`io.modelcontextprotocol/relatedTaskIds`), checked when it was made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related_tasks: Vec<String>,
    /// What a lost worker means for the task.
    #[serde(default)]
    pub delivery: Delivery,
    /// How many runs have started (0 while it waits for its first worker).
    #[serde(default)]
    pub attempts: u32,
    /// The task this one re-runs (the operator's console re-ran it with the same tool,
    /// arguments and owner); its creation writes a
    /// [`kinds::RERUN`](crate::log::kinds::RERUN) log entry naming it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_of: Option<TaskId>,
}

impl Job {
    /// A job running a tool with `arguments`, at most once, for an anonymous caller.
    pub fn new(arguments: JsonObject) -> Job {
        Job {
            arguments,
            declarations: None,
            principal: None,
            scopes: BTreeSet::new(),
            related_tasks: Vec::new(),
            delivery: Delivery::AtMostOnce,
            attempts: 0,
            rerun_of: None,
        }
    }
}

/// What [`TaskStore::recover_lapsed`](crate::TaskStore::recover_lapsed) did with a task
/// whose worker's lease lapsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// Nothing: the task is finished, its lease is live again, or it has none.
    NotLapsed,
    /// At least once with attempts left: the task waits for a worker again.
    Requeued {
        /// The run that was lost (the next claim starts `attempt + 1`).
        attempt: u32,
    },
    /// Failed with the error given (at most once, or no attempt left).
    Failed,
    /// Its cancel had been requested: ended `cancelled`.
    Cancelled,
}

/// One task as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task's id (`taskId`).
    pub id: TaskId,
    /// Who the task belongs to.
    pub owner: Owner,
    /// Where the task stands (`status`).
    pub status: TaskStatus,
    /// The human-readable status (`statusMessage`).
    pub status_message: Option<String>,
    /// When the task was created (`createdAt`).
    pub created_at: Millis,
    /// When the task last changed (`lastUpdatedAt`).
    pub last_updated_at: Millis,
    /// How long the task is kept after `created_at`; `None` keeps it until deleted.
    pub ttl_ms: Option<u64>,
    /// How often to poll, suggested to the requestor (`pollIntervalMs`).
    pub poll_interval_ms: Option<u64>,
    /// The request the task runs.
    pub origin: Origin,
    /// Set once, when the task reaches `completed` or `failed`.
    pub outcome: Option<Outcome>,
    /// Input requests waiting for an answer, by key.
    pub input_requests: BTreeMap<String, Value>,
    /// Answers received and not yet taken by the worker, by key.
    pub input_responses: BTreeMap<String, Value>,
    /// Every key ever requested: keys are unique for the task's whole life.
    pub used_input_keys: BTreeSet<String>,
    /// Set by `tasks/cancel` while the task runs: its worker should stop.
    pub cancel_requested: bool,
    /// The worker running the task, while one holds it.
    pub lease: Option<Lease>,
    /// Bumped by every change; starts at 1.
    pub revision: u64,
    /// What a worker needs to run the task (absent in records of older builds). Shared:
    /// inline it would add about 200 bytes to every record, job or not, and a read of the
    /// record (`tasks/get`) copies a pointer, not the tool's arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<Arc<Job>>,
    /// The W3C trace context of the call that created the task, so that whoever runs it
    /// (another node, a restart, a second at-least-once run) continues that call's trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_context: Option<TraceContext>,
    /// Entries the write of this record appends to the task's log, in the same atomic
    /// write ([`Backend`](crate::Backend) rule 13): filled by the operations, taken and
    /// cleared by the backend. Never stored in the record, always empty in a record read
    /// from a store.
    #[serde(skip)]
    pub log_append: Vec<crate::log::LogDraft>,
    /// The idempotency key the task was created with, and the fingerprint of its request
    /// ([`TaskStore`](crate::TaskStore) rule 25): while the task is kept, another create
    /// of the same owner with that key gets this task (or is refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency: Option<Idempotency>,
}

impl TaskRecord {
    /// The task's full address: its owner and its id.
    pub fn key(&self) -> TaskKey {
        TaskKey {
            owner: self.owner.clone(),
            id: self.id.clone(),
        }
    }

    /// When the task may be purged, if ever.
    pub fn expires_at(&self) -> Option<Millis> {
        self.ttl_ms.map(|ttl| {
            self.created_at
                .saturating_add(i64::try_from(ttl).unwrap_or(i64::MAX))
        })
    }

    /// True once `now` has reached `created_at + ttl`.
    pub fn is_expired(&self, now: Millis) -> bool {
        self.expires_at().is_some_and(|at| now >= at)
    }

    /// True once the task is `completed`, `failed` or `cancelled`.
    pub fn is_terminal(&self) -> bool {
        self.status.is_terminal()
    }

    /// The tool of a task waiting for a worker: one with a job, unfinished, not leased
    /// and not asked to stop. Backends index tasks by it for claims.
    pub fn queued_tool(&self) -> Option<&str> {
        if self.job.is_none() || self.lease.is_some() || self.is_terminal() || self.cancel_requested
        {
            return None;
        }
        self.origin.tool.as_deref()
    }

    /// The run under way or last started (1 for the first); 0 before any.
    pub fn attempt(&self) -> u32 {
        self.job.as_ref().map_or(0, |j| j.attempts)
    }
}

/// What [`TaskStore::create`](crate::TaskStore::create) needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTask {
    /// Who the task belongs to.
    pub owner: Owner,
    /// The TTL the requestor asked for; `None` takes the store's default. Clamped to the
    /// store's maximum.
    pub ttl_ms: Option<u64>,
    /// The poll interval to suggest; `None` takes the store's default.
    pub poll_interval_ms: Option<u64>,
    /// The request the task runs.
    pub origin: Origin,
    /// The first status message, if any.
    pub status_message: Option<String>,
    /// What a worker needs to run it; `None` for a task only its creator can run.
    pub job: Option<Job>,
    /// The creating call's trace context, kept with the task (`None`: not traced).
    pub trace_context: Option<TraceContext>,
    /// Creates at most one task per owner and key while that task is kept
    /// ([`TaskStore`](crate::TaskStore) rule 25); `None`: an ordinary create.
    pub idempotency: Option<Idempotency>,
}

/// An idempotency key and the fingerprint of the request it was given with
/// ([`TaskStore`](crate::TaskStore) rule 25). The key is the caller's (at most
/// [`Idempotency::MAX_KEY_BYTES`] bytes, not empty), scoped by the task's owner; the
/// fingerprint is opaque to the store (a server hashes the tool's name and arguments),
/// which only compares it: a repeat with the same fingerprint gets the first task, one
/// with another is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Idempotency {
    /// The caller's key.
    pub key: String,
    /// What the request was, as the caller computed it.
    pub fingerprint: String,
}

impl Idempotency {
    /// The longest key accepted, in bytes.
    pub const MAX_KEY_BYTES: usize = 255;

    /// A key and fingerprint; refuses a key that is empty or longer than
    /// [`MAX_KEY_BYTES`](Self::MAX_KEY_BYTES) with [`StoreError::InvalidIdempotencyKey`].
    pub fn new(
        key: impl Into<String>,
        fingerprint: impl Into<String>,
    ) -> Result<Idempotency, StoreError> {
        let idempotency = Idempotency {
            key: key.into(),
            fingerprint: fingerprint.into(),
        };
        idempotency.check()?;
        Ok(idempotency)
    }

    /// Checks the key as [`new`](Self::new) does (the fields are public, so the store
    /// checks again on create).
    pub fn check(&self) -> Result<(), StoreError> {
        if self.key.is_empty() {
            return Err(StoreError::InvalidIdempotencyKey {
                reason: "the idempotency key is empty",
            });
        }
        if self.key.len() > Self::MAX_KEY_BYTES {
            return Err(StoreError::InvalidIdempotencyKey {
                reason: "the idempotency key is longer than 255 bytes",
            });
        }
        Ok(())
    }
}

/// A W3C Trace Context (the `traceparent` and `tracestate` values), as text: a store keeps
/// it and hands it back unchanged, and never reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceContext {
    /// The `traceparent` value (`00-{trace id}-{span id}-{flags}`).
    pub traceparent: String,
    /// The `tracestate` value, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}

/// The outcome of a terminal write: whether this call moved the task, and the record as
/// it stands (the winner's, when this call lost).
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// True when this call moved the task to its terminal status.
    pub won: bool,
    /// The record after the write.
    pub record: TaskRecord,
}

/// The outcome of [`TaskStore::resolve_input`](crate::TaskStore::resolve_input): the keys
/// that were outstanding and are now answered, and the record after.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The keys this call answered.
    pub accepted: Vec<String>,
    /// The record after the write.
    pub record: TaskRecord,
}

/// One page of [`TaskStore::list`](crate::TaskStore::list), oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskPage {
    /// The tasks of this page, oldest first.
    pub tasks: Vec<TaskRecord>,
    /// Present when more tasks may follow; opaque to clients.
    pub next_cursor: Option<String>,
}

/// What a sweep did and found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SweepReport {
    /// How many tasks past their TTL were deleted.
    pub purged: usize,
    /// Of those, the ones that had not finished: their work should be stopped.
    pub expired_unfinished: Vec<TaskKey>,
    /// Unfinished tasks whose worker's lease lapsed: the worker is gone.
    pub lease_lapsed: Vec<TaskKey>,
}
