//! This node in the store's node registry (contract rule 24): it registers when the
//! server starts and beats every [`NodeConfig::heartbeat`] with its role, so the operator
//! console lists every API and worker node of a shared store. A node that runs tasks
//! (roles `worker` and `all`) reads in each beat's answer whether an operator asked it to
//! drain: it then claims no more queued tasks (`worker.rs`), creates the tasks of its own
//! API queued for the other workers instead of running them (role `all`), lets those it
//! holds finish (their leases renewed as usual), and once it holds none says `drained`.
//!
//! **Invariant.** A drain loses nothing: no task is given up or failed by it, only no new
//! one is taken. A claim in flight when the drain is seen finishes before the node says
//! it saw the drain ([`Drain::begin`] waits for it).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks::{NodeBeat, OperatorFilter, StoreError, TaskRecord};
use tokio::sync::{RwLock, RwLockReadGuard};

use crate::executor::{Executor, Launch, Role};
use crate::retry::Backoff;
use crate::runtime::TaskRuntime;

/// How this node takes part in the node registry.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// How often the node writes its heartbeat (and reads whether it is asked to drain).
    /// It is listed `lost` after three intervals without one. Default 5 s.
    pub heartbeat: Duration,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            heartbeat: Duration::from_secs(5),
        }
    }
}

/// Whether this node was asked to drain, and the gate its claims pass.
#[derive(Debug, Default)]
pub(crate) struct Drain {
    requested: AtomicBool,
    /// Every claim holds it shared while it runs; [`begin`](Self::begin) takes it
    /// exclusively once, so that no claim started before the drain is still running
    /// after it.
    gate: RwLock<()>,
}

impl Drain {
    /// True once the node was asked to drain.
    pub(crate) fn is_requested(&self) -> bool {
        self.requested.load(Ordering::Acquire)
    }

    /// A claim about to run: `None` when the node is draining (claim nothing), else the
    /// gate held until the claim ends.
    pub(crate) async fn claim_gate(&self) -> Option<RwLockReadGuard<'_, ()>> {
        let gate = self.gate.read().await;
        (!self.is_requested()).then_some(gate)
    }

    /// Stops new claims, and waits for those in flight to end.
    async fn begin(&self) {
        self.requested.store(true, Ordering::Release);
        drop(self.gate.write().await);
    }
}

/// The registry's name of `role`.
fn role_name(role: Role) -> &'static str {
    match role {
        Role::Api => "api",
        Role::Worker => "worker",
        Role::All => "all",
    }
}

/// Starts the heartbeat loop of this node (until the runtime stops). A store without the
/// node registry is said once at DEBUG, and the loop ends.
pub(crate) fn start(runtime: TaskRuntime, role: Role, config: NodeConfig, drain: Arc<Drain>) {
    tokio::spawn(beat_loop(runtime, role, config, drain));
}

async fn beat_loop(runtime: TaskRuntime, role: Role, config: NodeConfig, drain: Arc<Drain>) {
    let every = config.heartbeat.max(Duration::from_millis(1));
    let id = runtime.config().node_id.clone();
    let mut starting = true;
    let mut backoff = Backoff::default();
    let mut failing = false;
    let mut said_drained = false;
    loop {
        let drained = drain.is_requested() && holds_none(&runtime, &id).await;
        let beat = NodeBeat {
            id: id.clone(),
            role: role_name(role).to_owned(),
            interval_ms: u64::try_from(every.as_millis()).unwrap_or(u64::MAX),
            starting,
            drained,
        };
        let mut again_at_once = false;
        match runtime.store().heartbeat_node(&beat).await {
            Ok(entry) => {
                starting = false;
                backoff = Backoff::default();
                if failing {
                    tracing::info!(node_id = %id, "node heartbeat written again");
                    failing = false;
                }
                if entry.drain_requested && role.claims() && !drain.is_requested() {
                    tracing::info!(node_id = %id, "asked to drain: claiming no new task; finishing those held");
                    drain.begin().await;
                    // Say at once whether it holds none.
                    again_at_once = true;
                } else if entry.drained && !said_drained {
                    tracing::info!(node_id = %id, "drained: this node holds no task");
                    said_drained = true;
                }
            }
            Err(StoreError::Unsupported { operation }) => {
                tracing::debug!(node_id = %id, "no node registry: the task store does not support {operation}");
                return;
            }
            Err(e) => {
                if !failing {
                    tracing::warn!(node_id = %id, error = %e, "writing the node heartbeat failed; trying again");
                    failing = true;
                }
                tokio::select! {
                    _ = runtime.stopping().cancelled() => return,
                    _ = backoff.wait() => {}
                }
                continue;
            }
        }
        if again_at_once {
            continue;
        }
        tokio::select! {
            _ = runtime.stopping().cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
    }
}

/// Whether this node runs no task and the store shows no lease of its (a store without
/// the operator's view: the runtime's count alone).
async fn holds_none(runtime: &TaskRuntime, id: &str) -> bool {
    if runtime.running_count() > 0 {
        return false;
    }
    let filter = OperatorFilter {
        lease_holder: Some(id.to_owned()),
        ..OperatorFilter::default()
    };
    match runtime.store().operator_list(&filter, None, 1).await {
        Ok(page) => page.tasks.is_empty(),
        Err(StoreError::Unsupported { .. }) => true,
        Err(_) => false,
    }
}

/// The executor of a node of role `all` that may be drained: runs each task here, as
/// [`InProcess`](crate::InProcess) does, until the node is asked to drain; then queues it
/// for the other workers.
#[derive(Debug)]
pub(crate) struct DrainAware {
    pub(crate) inner: Arc<dyn Executor>,
    pub(crate) drain: Arc<Drain>,
}

#[async_trait]
impl Executor for DrainAware {
    async fn execute(&self, launch: Launch) -> Result<TaskRecord, StoreError> {
        if self.drain.is_requested() {
            launch.enqueue().await
        } else {
            self.inner.execute(launch).await
        }
    }
}
