//! What a task runtime holds, shared by its parts: the store, the configuration, the tasks
//! this node runs (with the tokens that stop and wake their tools), the tokens that stop
//! the runtime, the outcomes not yet written, and who watches which tasks.
//!
//! **Invariant.** State only: each part of the runtime (`lease.rs`, `outcome.rs`,
//! `events.rs`, `sweep.rs`, and `mod.rs`, which starts and stops it) adds its own methods
//! in its own file; a lock taken here is never held across an `.await`.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use mcp_tasks::{Owner, TaskId, TaskStore};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::config::RuntimeConfig;
use super::watch::Watchers;

/// A task this node runs: whose it is, and how to reach its tool.
#[derive(Debug)]
pub(super) struct Running {
    pub(super) owner: Owner,
    /// Stops the tool (a cancel request, the task finished elsewhere, its TTL run out).
    pub(super) cancel: CancellationToken,
    /// Wakes the tool waiting for an input answer.
    pub(super) wake: Arc<Notify>,
}

/// Everything a runtime holds; a `TaskRuntime` is an `Arc` of it.
#[derive(Debug)]
pub(super) struct Inner {
    pub(super) store: Arc<dyn TaskStore>,
    pub(super) config: RuntimeConfig,
    pub(super) running: Mutex<HashMap<TaskId, Running>>,
    /// Stops the background loops and new launches.
    pub(super) stopping: CancellationToken,
    /// Gives up retrying outcomes the store could not take (the end of shutdown).
    pub(super) abandon: CancellationToken,
    /// Tasks whose outcome is known but not yet written (the store is unavailable).
    pub(super) unwritten: Mutex<BTreeSet<TaskId>>,
    pub(super) tasks: TaskTracker,
    /// Woken when a task may have become claimable (a change to an unfinished task, a
    /// lag): the worker loop, if this node runs one, looks for work.
    pub(super) queue_changed: Notify,
    /// Who watches which tasks (`watch.rs`): the store's events routed to them.
    pub(super) watchers: Arc<Watchers>,
    /// The node id, as task log entries name it (`mcp_tasks::LogScope`).
    pub(super) log_node: Arc<str>,
}

impl Inner {
    /// Nothing running yet, nothing stopped.
    pub(super) fn new(store: Arc<dyn TaskStore>, config: RuntimeConfig) -> Inner {
        Inner {
            store,
            running: Mutex::default(),
            stopping: CancellationToken::new(),
            abandon: CancellationToken::new(),
            unwritten: Mutex::default(),
            tasks: TaskTracker::new(),
            queue_changed: Notify::new(),
            watchers: Arc::default(),
            log_node: Arc::from(config.node_id.as_str()),
            config,
        }
    }

    /// The tasks this node runs, by id.
    pub(super) fn running(&self) -> MutexGuard<'_, HashMap<TaskId, Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tasks whose outcome is known here but not yet written.
    pub(super) fn unwritten(&self) -> MutexGuard<'_, BTreeSet<TaskId>> {
        self.unwritten.lock().unwrap_or_else(|e| e.into_inner())
    }
}
