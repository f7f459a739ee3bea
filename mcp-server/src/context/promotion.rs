//! A synchronous call that may become a task at its deadline ([`TaskPolicy::After`]):
//! the part of its context that says which it is now.
//!
//! **Invariant.** A call is promoted at most once, and only while it is still the
//! request's to answer: once the tool has asked a question this round cannot answer (the
//! call is about to end `input_required`), it is no longer promotable; once promoted,
//! every question and status goes to the task. Both decisions are taken under one lock,
//! so a question asked at the deadline goes one way or the other, never both.
//!
//! [`TaskPolicy::After`]: crate::TaskPolicy::After

use std::sync::{Arc, OnceLock};

use mcp_tasks::{TaskKey, TaskStore};
use tokio::sync::{Mutex, MutexGuard, Notify};

/// Where a task's tool reaches its task: the store, the task, and the wake-up its input
/// answers arrive by.
#[derive(Clone)]
pub(crate) struct TaskBinding {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) key: TaskKey,
    pub(crate) wake: Arc<Notify>,
}

/// What a promotable call is now.
pub(crate) enum Phase {
    /// Still the request's to answer; the status message the tool set so far (a task
    /// created from the call starts with it).
    Call { status: Option<String> },
    /// About to end this round with `input_required`: no longer promotable.
    Ending,
    /// A task now.
    Task(TaskBinding),
}

/// The promotion state of one call, shared by its context and the request serving it.
pub(crate) struct Promotion {
    phase: Mutex<Phase>,
    /// Set once, when promoted (read without the lock by `task_id` and the reports).
    key: OnceLock<TaskKey>,
}

impl Default for Promotion {
    fn default() -> Self {
        Promotion {
            phase: Mutex::new(Phase::Call { status: None }),
            key: OnceLock::new(),
        }
    }
}

impl std::fmt::Debug for Promotion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Promotion")
            .field("task", &self.key.get().map(|k| k.id.as_str()))
            .finish()
    }
}

impl Promotion {
    /// The phase, locked: a decision taken under it holds until the guard drops.
    pub(crate) async fn phase(&self) -> MutexGuard<'_, Phase> {
        self.phase.lock().await
    }

    /// The task the call became, once promoted.
    pub(crate) fn task(&self) -> Option<&TaskKey> {
        self.key.get()
    }

    /// Makes the call the task `binding` (under the phase lock the caller holds).
    pub(crate) fn promote(&self, phase: &mut Phase, binding: TaskBinding) {
        let _ = self.key.set(binding.key.clone());
        *phase = Phase::Task(binding);
    }
}
