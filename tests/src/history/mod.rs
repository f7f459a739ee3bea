//! Jepsen/Elle-style histories of client operations on a deployment of the demo, and an
//! offline checker of the promises a task system makes.
//!
//! Every operation a client sends (a create, a `tasks/get`, a `tasks/update` with an
//! answer, a `tasks/cancel`, a read of a task's event log) is an [`Op`]: which client,
//! which API node, what it asked, when it was invoked and when it completed (monotonic
//! nanoseconds since the [`Recorder`] started) and its [`Outcome`]: `Ok` with the result,
//! `Err` with a JSON-RPC error the server answered, or `Unknown` (no answer, a broken
//! connection, "store unavailable": the operation may or may not have taken effect).
//!
//! [`check`](check::check) reads a whole [`History`] afterwards and returns a [`Report`]
//! naming every [`Violation`] with its task id and the operations involved. Unknown
//! outcomes are allowed either way: an unknown create is not required to exist, an
//! unknown answer may or may not have been delivered. [`driver`] records histories
//! against real demo nodes (`tests/durability.rs`); [`throwaway_postgres`] is a PostgreSQL
//! server of the test's own, to crash and restart; [`one_way_proxy`] a TCP proxy that
//! loses the server's replies while it passes the client's requests; [`replicated_cluster`] a
//! Redis Cluster with replicas whose primaries are killed and failed over.

pub mod check;
pub mod driver;
pub mod one_way_proxy;
pub mod replicated_cluster;
#[cfg(test)]
mod tests;
pub mod throwaway_postgres;

use std::sync::{Mutex, PoisonError};

use serde_json::Value;
use tokio::time::Instant;

pub use check::{Report, Violation, ViolationKind, check};

/// What a task was created to do, and so what the checker expects of it.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskSpec {
    /// The demo's `slow_compute` (delivered at least once, 3 runs at most): its result
    /// names its `label` and `seconds` (`LABEL: done after SECONDS s`).
    Compute {
        /// Unique in the history.
        label: String,
        /// How long it works.
        seconds: f64,
    },
    /// The demo's `confirm_delete` (delivered at most once): asks a yes/no question and
    /// answers `Deleted FILE ...` or `Kept FILE.` after the answer.
    Confirm {
        /// Unique in the history.
        filename: String,
    },
}

impl TaskSpec {
    /// How many runs of its tool may start.
    pub fn max_runs(&self) -> usize {
        match self {
            TaskSpec::Compute { .. } => 3,
            TaskSpec::Confirm { .. } => 1,
        }
    }
}

/// What an operation asked.
#[derive(Debug, Clone, PartialEq)]
pub enum OpKind {
    /// `tools/call` as a task; an `Ok` outcome holds the `CreateTaskResult` (its `taskId`).
    Create(TaskSpec),
    /// `tasks/get` of `task`; an `Ok` outcome holds the task.
    Get {
        /// The task id.
        task: String,
    },
    /// `tasks/update` answering the input request `key` of `task` with `confirm`.
    Update {
        /// The task id.
        task: String,
        /// The input request's key.
        key: String,
        /// The answer given (`{"confirm": ...}`).
        confirm: bool,
    },
    /// `tasks/cancel` of `task`.
    Cancel {
        /// The task id.
        task: String,
    },
    /// `tasks/stream` of `task` from its start to its end; an `Ok` outcome holds the
    /// events' params, in order, as a JSON array.
    Log {
        /// The task id.
        task: String,
    },
}

impl OpKind {
    /// The task the operation is about (a create's is in its outcome).
    pub fn task(&self) -> Option<&str> {
        match self {
            OpKind::Create(_) => None,
            OpKind::Get { task }
            | OpKind::Update { task, .. }
            | OpKind::Cancel { task }
            | OpKind::Log { task } => Some(task),
        }
    }

    /// A short name: `create`, `get`, `update`, `cancel`, `log`.
    pub fn name(&self) -> &'static str {
        match self {
            OpKind::Create(_) => "create",
            OpKind::Get { .. } => "get",
            OpKind::Update { .. } => "update",
            OpKind::Cancel { .. } => "cancel",
            OpKind::Log { .. } => "log",
        }
    }
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The JSON-RPC result.
    Ok(Value),
    /// A JSON-RPC error the server answered: the operation did not take effect.
    Err {
        /// The JSON-RPC error code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// No definite answer (why): it may or may not have taken effect.
    Unknown(String),
}

impl Outcome {
    /// The result, when `Ok`.
    pub fn ok(&self) -> Option<&Value> {
        match self {
            Outcome::Ok(value) => Some(value),
            _ => None,
        }
    }

    /// Whether the outcome is unknown.
    pub fn is_unknown(&self) -> bool {
        matches!(self, Outcome::Unknown(_))
    }
}

/// One operation of a history.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    /// Its index in the history (set by the [`Recorder`]).
    pub index: usize,
    /// The client that sent it (clients are sequential: one operation at a time).
    pub client: usize,
    /// The API node it went to (an index into the deployment's API nodes).
    pub node: usize,
    /// What it asked.
    pub kind: OpKind,
    /// When it was sent, in nanoseconds since the recorder started.
    pub invoked: u64,
    /// When its outcome came, in nanoseconds since the recorder started.
    pub completed: u64,
    /// How it ended.
    pub outcome: Outcome,
}

impl Op {
    /// The task the operation is about: its kind's, or a create's acknowledged id.
    pub fn task(&self) -> Option<&str> {
        self.kind
            .task()
            .or_else(|| self.outcome.ok().and_then(|v| v["taskId"].as_str()))
    }

    /// Whether this operation completed before `other` was invoked (real-time order).
    pub fn precedes(&self, other: &Op) -> bool {
        self.completed <= other.invoked
    }

    /// `#INDEX client C node N KIND`: how a report names it.
    pub fn describe(&self) -> String {
        format!(
            "#{} (client {}, node {}, {})",
            self.index,
            self.client,
            self.node,
            self.kind.name()
        )
    }
}

/// A whole history: every operation, in the order they were recorded (completion order).
pub type History = Vec<Op>;

/// Records operations from many clients at once.
#[derive(Debug)]
pub struct Recorder {
    started: Instant,
    ops: Mutex<Vec<Op>>,
}

impl Default for Recorder {
    fn default() -> Recorder {
        Recorder::new()
    }
}

impl Recorder {
    /// A recorder whose clock starts now.
    pub fn new() -> Recorder {
        Recorder {
            started: Instant::now(),
            ops: Mutex::default(),
        }
    }

    /// Nanoseconds since the recorder started (the timestamps of [`Op`]).
    pub fn now(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Records an operation invoked at `invoked` (from [`now`](Self::now)) that just
    /// completed with `outcome`.
    pub fn record(
        &self,
        client: usize,
        node: usize,
        kind: OpKind,
        invoked: u64,
        outcome: Outcome,
    ) -> usize {
        let completed = self.now();
        let mut ops = self.ops.lock().unwrap_or_else(PoisonError::into_inner);
        let index = ops.len();
        ops.push(Op {
            index,
            client,
            node,
            kind,
            invoked,
            completed,
            outcome,
        });
        index
    }

    /// How many operations were recorded so far.
    pub fn len(&self) -> usize {
        self.ops
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether nothing was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of the history so far.
    pub fn history(&self) -> History {
        self.ops
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
