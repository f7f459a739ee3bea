//! The worker loop of a node with role `worker` or `all`: claims the oldest task waiting
//! for a worker among the tools it has (`TaskStore::claim_next`), and runs it on the task
//! runtime under its lease, with at most `max_tasks` at once. It looks for work when the
//! store's events say a task may be waiting (the runtime's event pump), and at least
//! every `poll` (events are wake-ups, and may be lost). Once the node is asked to drain
//! (`node.rs`), it claims nothing more; the tasks it holds run on.

use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use mcp_tasks::TaskRecord;
use tokio::sync::Semaphore;

use crate::auth::Identity;
use crate::node::Drain;
use crate::retry::Backoff;
use crate::runtime::TaskRuntime;
use crate::tool::{TaskPolicy, ToolDef};

/// How a worker looks for work.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Tasks this node runs at once, at most.
    pub max_tasks: usize,
    /// The longest a waiting task may go unseen when no event wakes the worker.
    pub poll: Duration,
    /// Claims this node makes at once (each a store transaction that waits for its
    /// commit): more keep a busy queue drained faster; the store's `SKIP LOCKED` (or
    /// atomic script) gives each a different task.
    pub claimers: usize,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            max_tasks: 64,
            poll: Duration::from_secs(1),
            claimers: 4,
        }
    }
}

/// Starts the worker loop for `tools` (those that may run as tasks).
///
/// While `drain` says the node is asked to drain, the loops claim nothing (the tasks
/// already claimed run on).
pub(crate) fn start(
    runtime: TaskRuntime,
    tools: &IndexMap<String, ToolDef>,
    config: WorkerConfig,
    drain: Arc<Drain>,
) {
    let tools: Arc<IndexMap<String, ToolDef>> = Arc::new(
        tools
            .iter()
            .filter(|(_, t)| t.policy() != TaskPolicy::Synchronous)
            .map(|(n, t)| (n.clone(), t.clone()))
            .collect(),
    );
    // The claim loops share the node's task slots.
    let slots = Arc::new(Semaphore::new(config.max_tasks.max(1)));
    for _ in 0..config.claimers.max(1) {
        tokio::spawn(run(
            runtime.clone(),
            Arc::clone(&tools),
            config.clone(),
            Arc::clone(&slots),
            Arc::clone(&drain),
        ));
    }
}

async fn run(
    runtime: TaskRuntime,
    tools: Arc<IndexMap<String, ToolDef>>,
    config: WorkerConfig,
    slots: Arc<Semaphore>,
    drain: Arc<Drain>,
) {
    let names: Vec<String> = tools.keys().cloned().collect();
    let node = runtime.config().node_id.clone();
    let lease = runtime.config().lease;
    let lease_ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
    let mut backoff = Backoff::default();
    loop {
        let slot = tokio::select! {
            _ = runtime.stopping().cancelled() => return,
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => return,
            },
        };
        if !runtime.is_accepting() {
            return;
        }
        // Held while this claim runs: a drain seen meanwhile waits for it.
        let Some(gate) = drain.claim_gate().await else {
            // Draining: claim nothing more; the tasks held run on.
            drop(slot);
            tokio::select! {
                _ = runtime.stopping().cancelled() => return,
                _ = tokio::time::sleep(config.poll) => {}
            }
            continue;
        };
        // Registered before looking, so a task queued in between still wakes us.
        let woken = runtime.queue_changed().notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        // In the node's log scope, so the claim's log entry names this node.
        let claimed = runtime
            .log_scope(None)
            .run(runtime.store().claim_next(&names, &node, lease_ms))
            .await;
        drop(gate);
        match claimed {
            Ok(Some(record)) => {
                backoff = Backoff::default();
                launch(&runtime, &tools, record, slot);
            }
            Ok(None) => {
                drop(slot);
                tokio::select! {
                    _ = runtime.stopping().cancelled() => return,
                    _ = &mut woken => {}
                    _ = tokio::time::sleep(config.poll) => {}
                }
            }
            Err(e) => {
                drop(slot);
                tracing::warn!(error = %e, "claiming a task failed; trying again");
                tokio::select! {
                    _ = runtime.stopping().cancelled() => return,
                    _ = backoff.wait() => {}
                }
            }
        }
    }
}

/// Runs a claimed task: its tool, arguments and caller come from its job.
fn launch(
    runtime: &TaskRuntime,
    tools: &IndexMap<String, ToolDef>,
    record: TaskRecord,
    slot: tokio::sync::OwnedSemaphorePermit,
) {
    let (Some(job), Some(tool)) = (
        record.job.as_ref(),
        record.origin.tool.as_deref().and_then(|t| tools.get(t)),
    ) else {
        // Claimed by tool name, so neither happens; the lease lapses and the sweep decides.
        tracing::error!(task_id = %record.id, "claimed a task this node cannot run");
        return;
    };
    let identity = job.principal.clone().map(|principal| Identity {
        principal,
        scopes: job.scopes.clone(),
    });
    tracing::debug!(task_id = %record.id, tool = tool.name(), attempt = record.attempt(), "claimed a task");
    runtime.run_leased(
        record.key(),
        tool.clone(),
        job.arguments.clone(),
        crate::runtime::task_caller(&record, identity),
        record.attempt(),
        crate::runtime::Start::Claimed(slot),
    );
}
