//! The task runtime: runs tools as tasks in the background, carries input answers and
//! cancel requests from the store's events to the running tools, keeps each task's lease
//! alive, sweeps expired tasks and fails tasks whose worker is gone, and shuts down
//! without leaving a task unfinished.
//!
//! This file holds [`TaskRuntime`] itself: starting it, launching a run, the run (the
//! tool against its lease), and shutdown. The parts each have a file, all methods of the
//! state they share (`inner.rs`): `lease.rs` (keeping a run's lease, recovering its task
//! when it cannot), `outcome.rs` (writing how a run ended), `events.rs` (the store's
//! events carried to the running tools), `watch.rs` (the store's events routed to whoever
//! watches a task or an owner's tasks: listen streams, status watchers), `sweep.rs` (expired tasks and lapsed leases);
//! `config.rs` holds the timing and the messages tasks end with. None of them imports this
//! file. `asking.rs` (asking a 2025-11-25 client as a task) stands apart.

use std::sync::Arc;

use mcp_tasks::{NewTask, StoreError, TaskKey, TaskRecord, TaskStore};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::ReplyWritten;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use tokio::sync::{Notify, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;

use futures::future::BoxFuture;
use mcp_tasks_protocol::v2026::{CallToolResult, ClientCapabilities};

use crate::auth::Identity;
use crate::context::{TaskCaller, ToolContext, ToolError};
use crate::tool::ToolDef;

mod config;
mod events;
mod inner;
mod lease;
mod outcome;
mod sweep;
mod watch;

use config::millis;
use inner::{Inner, Running};
pub(crate) use watch::TaskWatch;

pub use config::{
    CANCELLED_MESSAGE, LEASE_LAPSED_MESSAGE, ROUND_ENDED_MESSAGE, RuntimeConfig, SHUTDOWN_MESSAGE,
    WORKER_LOST_MESSAGE, worker_lost_error,
};

/// Runs tools as tasks. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TaskRuntime {
    inner: Arc<Inner>,
}

/// How a run began: on the node that created the task (its tool waiting, if `after` is
/// given, until the response announcing the task is written; the lease is kept
/// meanwhile), or claimed by a worker (`Claimed`: its capacity, held until the outcome
/// is written).
pub(crate) enum Start {
    Created { after: Option<ReplyWritten> },
    Claimed(OwnedSemaphorePermit),
}

/// How a call that answered in its request ended, for its task record
/// ([`TaskRuntime::end_answered`]).
pub(crate) enum Answered {
    /// The tool's outcome: its result as a JSON object, or how it failed.
    Ended(Result<JsonObject, ToolError>),
    /// The round ended `input_required`: the client goes on in a new call.
    RoundEnded,
}

/// How a run ended: the tool's own outcome, or its lease lost first.
enum Ran {
    Finished(Result<JsonObject, ToolError>),
    LeaseLost(ErrorObject),
}

impl TaskRuntime {
    /// Starts the runtime's event pump and sweeper on the current tokio runtime (and,
    /// when telemetry's metrics are read, the periodic count of the store's tasks).
    pub fn start(store: Arc<dyn TaskStore>, config: RuntimeConfig) -> TaskRuntime {
        let runtime = TaskRuntime {
            inner: Arc::new(Inner::new(store, config)),
        };
        tokio::spawn(Arc::clone(&runtime.inner).pump_events());
        tokio::spawn(Arc::clone(&runtime.inner).sweep_loop());
        crate::telemetry::count_live(&runtime.inner.store, &runtime.inner.stopping);
        runtime
    }

    /// The store the runtime's tasks live in.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.inner.store
    }

    /// The store's events about the tasks `keys` (registered now: read the tasks after
    /// this, and no later change is missed).
    pub(crate) fn watch_tasks(&self, keys: impl IntoIterator<Item = TaskKey>) -> TaskWatch {
        self.inner.watchers.tasks(keys)
    }

    /// The store's events about every task of `owner` (registered now, as
    /// [`watch_tasks`](TaskRuntime::watch_tasks)).
    pub(crate) fn watch_owner(&self, owner: mcp_tasks::Owner) -> TaskWatch {
        self.inner.watchers.owner(owner)
    }

    /// False once shutdown has begun: no new task may start.
    pub fn is_accepting(&self) -> bool {
        !self.inner.tasks.is_closed()
    }

    /// How many tasks this node is running.
    pub fn running_count(&self) -> usize {
        self.inner.running().len()
    }

    /// Creates `new` as a task leased to this node and runs `tool` with `args` as it:
    /// `create` and `launch` with one store write fewer (`TaskStore::create_leased`).
    /// The task is durable when this returns.
    pub async fn create_and_launch(
        &self,
        new: NewTask,
        tool: ToolDef,
        args: JsonObject,
        identity: Option<Identity>,
    ) -> Result<TaskRecord, StoreError> {
        self.create_and_launch_after(new, tool, args, identity, None)
            .await
    }

    /// [`create_and_launch`](Self::create_and_launch) whose tool starts only once `after`
    /// fired (the response announcing the task is written): until then nothing about the
    /// task changes, so no stream has anything to say about it before the client knows it.
    pub(crate) async fn create_and_launch_after(
        &self,
        new: NewTask,
        tool: ToolDef,
        args: JsonObject,
        identity: Option<Identity>,
        after: Option<ReplyWritten>,
    ) -> Result<TaskRecord, StoreError> {
        let config = &self.inner.config;
        let record = self
            .inner
            .store
            .create_leased(new, &config.node_id, millis(config.lease))
            .await?;
        let caller = task_caller(&record, identity);
        let (key, attempt) = (record.key(), record.attempt());
        self.run_leased(key, tool, args, caller, attempt, Start::Created { after });
        Ok(record)
    }

    /// Runs `tool` with `args` as the (already created, durable) task `record`.
    pub async fn launch(
        &self,
        record: &TaskRecord,
        tool: ToolDef,
        args: JsonObject,
    ) -> Result<(), StoreError> {
        let key = record.key();
        let config = &self.inner.config;
        self.inner
            .store
            .claim_lease(&key.owner, &key.id, &config.node_id, millis(config.lease))
            .await?;
        let caller = task_caller(record, None);
        let start = Start::Created { after: None };
        self.run_leased(key, tool, args, caller, record.attempt().max(1), start);
        Ok(())
    }

    /// The runtime's configuration.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }

    /// The scope of the task log entries this node writes for `actor` (`None`: as each
    /// operation implies), naming this node.
    pub(crate) fn log_scope(&self, actor: Option<mcp_tasks::Actor>) -> mcp_tasks::LogScope {
        mcp_tasks::LogScope {
            node: Some(Arc::clone(&self.inner.log_node)),
            actor,
        }
    }

    pub(crate) fn stopping(&self) -> &CancellationToken {
        &self.inner.stopping
    }

    pub(crate) fn queue_changed(&self) -> &Notify {
        &self.inner.queue_changed
    }

    /// Runs `tool` as the task `key`, whose lease this node holds, as its run `attempt`;
    /// `start` says how the run began ([`Start`]).
    pub(crate) fn run_leased(
        &self,
        key: TaskKey,
        tool: ToolDef,
        args: JsonObject,
        caller: TaskCaller,
        attempt: u32,
        start: Start,
    ) {
        let (slot, after) = match start {
            Start::Created { after } => (None, after),
            Start::Claimed(slot) => (Some(slot), None),
        };
        let cancel = self.inner.stopping.child_token();
        let wake = Arc::new(Notify::new());
        let claimed = slot.as_ref().map(|_| self.inner.config.node_id.as_str());
        let observed = crate::telemetry::task_run(
            &key.id,
            tool.name(),
            attempt,
            caller.trace_context.as_ref(),
            Some(caller.created_at),
            claimed,
        );
        let ctx = ToolContext::task(
            Arc::clone(&self.inner.store),
            key.clone(),
            Arc::clone(&wake),
            cancel.clone(),
            caller,
            attempt,
        );
        let work = Box::pin(async move {
            if let Some(after) = after {
                after.wait().await;
            }
            tool.run(ctx, args).await
        });
        self.spawn_run(key, work, cancel, wake, slot, observed);
    }

    /// A token for a tool that may become one of this runtime's tasks: cancelled when the
    /// runtime stops, like those of the tasks it runs.
    pub(crate) fn tool_cancellation(&self) -> CancellationToken {
        self.inner.stopping.child_token()
    }

    /// Creates `new` as a task leased to this node, for a tool already running here
    /// (a call promoted at its deadline), which [`adopt`](Self::adopt) then hands over.
    pub(crate) async fn create_leased(&self, new: NewTask) -> Result<TaskRecord, StoreError> {
        let config = &self.inner.config;
        self.inner
            .store
            .create_leased(new, &config.node_id, millis(config.lease))
            .await
    }

    /// Runs the tool already under way in `work` (the tool `tool`) as the task `key`,
    /// which this node created leased to itself ([`create_leased`](Self::create_leased)):
    /// `cancel` is the tool's token, `wake` the one its context waits for answers on.
    pub(crate) fn adopt(
        &self,
        key: TaskKey,
        tool: &str,
        work: BoxFuture<'static, Result<CallToolResult, ToolError>>,
        cancel: CancellationToken,
        wake: Arc<Notify>,
    ) {
        // In the trace of the call it was promoted from (the current span).
        let trace = crate::telemetry::creating_context();
        let observed = crate::telemetry::task_run(&key.id, tool, 1, trace.as_ref(), None, None);
        self.spawn_run(key, work, cancel, wake, None, observed);
    }

    /// Keeps the lease of the task `key` (created leased to this node) until it is lost;
    /// answers why it was.
    pub(crate) async fn keep_lease(&self, key: &TaskKey) -> ErrorObject {
        self.inner.keep_lease(key).await
    }

    /// Ends the task `key`, whose call answered in its request, in the background: as the
    /// tool ended (`outcome`), or cancelled with `message` when the call's round ended
    /// `input_required`. Retried through a store outage like any run's outcome.
    pub(crate) fn end_answered(&self, key: TaskKey, outcome: Answered) {
        let runtime = self.clone();
        self.inner.tasks.spawn(async move {
            match outcome {
                Answered::Ended(outcome) => {
                    runtime.inner.finish(&key, outcome).await;
                }
                Answered::RoundEnded => runtime.inner.end_round(&key).await,
            }
        });
    }

    /// Lists the task `key` among those running here and drives `work` as its run on the
    /// runtime's tracker: against its lease, then writing how it ended.
    fn spawn_run(
        &self,
        key: TaskKey,
        work: BoxFuture<'static, Result<CallToolResult, ToolError>>,
        cancel: CancellationToken,
        wake: Arc<Notify>,
        slot: Option<OwnedSemaphorePermit>,
        observed: crate::telemetry::TaskRun,
    ) {
        self.inner.running().insert(
            key.id.clone(),
            Running {
                owner: key.owner.clone(),
                cancel: cancel.clone(),
                wake,
            },
        );
        let runtime = self.clone();
        let scope = self.log_scope(None);
        self.inner.tasks.spawn(scope.run(async move {
            let span =
                tracing::info_span!(parent: observed.span(), "task", task_id = %key.id, tool = observed.tool());
            let run = tracing::Instrument::instrument(runtime.run(&key, work, &cancel), span);
            // Entered too (beneath the log span), so the run's events (its input rounds,
            // status changes) land on the execution span, which the log layer does not see.
            match tracing::Instrument::instrument(run, observed.span().clone()).await {
                Ran::Finished(outcome) => {
                    let written = runtime.inner.finish(&key, outcome).await;
                    runtime.inner.running().remove(&key.id);
                    observed.finished(written.as_ref());
                }
                Ran::LeaseLost(lost) => {
                    // Still listed as running: the sweep leaves it to this recovery,
                    // which knows why the lease went.
                    runtime.inner.recover(&key, lost).await;
                    runtime.inner.running().remove(&key.id);
                    observed.lease_lost();
                }
            }
            drop(slot);
        }));
    }

    async fn run(
        &self,
        key: &TaskKey,
        work: BoxFuture<'static, Result<CallToolResult, ToolError>>,
        cancel: &CancellationToken,
    ) -> Ran {
        let renew = self.inner.keep_lease(key);
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Ran::Finished(Err(ToolError::Cancelled)),
            lost = renew => Ran::LeaseLost(lost),
            result = work => Ran::Finished(result.and_then(|result| {
                match serde_json::to_value(result) {
                    Ok(serde_json::Value::Object(obj)) => Ok(obj),
                    _ => Err(ToolError::rpc(error_codes::INTERNAL_ERROR, "the tool's result is not a JSON object")),
                }
            })),
        }
    }

    /// One sweep: purge expired tasks (stopping their work if it runs here) and recover
    /// unfinished tasks whose worker stopped renewing its lease: by the tool's delivery,
    /// failed as worker lost or made to wait for another worker.
    pub async fn sweep_once(&self) -> Result<(), StoreError> {
        self.inner.sweep_once().await
    }

    /// Stops launching, lets running tasks go on for the grace period, cancels the rest
    /// (they end `cancelled`), and waits for every task to record its outcome. Outcomes
    /// the store cannot take (it is unavailable) are retried for one more grace period,
    /// then given up: their task ids are logged, and the sweep of another instance (or the
    /// next start on SQLite) fails those tasks as worker lost.
    pub async fn shutdown(&self) {
        self.inner.tasks.close();
        let grace = self.inner.config.shutdown_grace;
        let running = self.running_count();
        if running > 0 {
            tracing::info!(
                running,
                grace_ms = millis(grace),
                "shutdown: waiting for running tasks to finish"
            );
        }
        if tokio::time::timeout(grace, self.inner.tasks.wait())
            .await
            .is_err()
        {
            tracing::info!(
                running = self.running_count(),
                "grace period over; cancelling running tasks"
            );
            self.inner.stopping.cancel();
            if tokio::time::timeout(grace, self.inner.tasks.wait())
                .await
                .is_err()
            {
                let ids: Vec<String> = self
                    .inner
                    .unwritten()
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                tracing::error!(
                    tasks = ?ids,
                    "shutdown: the store is unavailable; giving up the outcomes of these tasks"
                );
                self.inner.abandon.cancel();
                self.inner.tasks.wait().await;
            }
        }
        self.inner.stopping.cancel();
    }
}

/// What a run of `record` knows of the request that created it: `identity`, and from
/// its job the client capabilities declared (MCP 2026-07-28) and the related tasks.
pub(crate) fn task_caller(record: &TaskRecord, identity: Option<Identity>) -> TaskCaller {
    let job = record.job.as_ref();
    let client_capabilities = job
        .and_then(|job| job.declarations.clone())
        .filter(|d| !d.is_null())
        .and_then(|d| {
            serde_json::from_value::<ClientCapabilities>(d)
                .inspect_err(|e| tracing::debug!(task_id = %record.id, error = %e, "stored declarations unreadable"))
                .ok()
        });
    TaskCaller {
        identity,
        client_capabilities,
        related_tasks: job.map(|job| job.related_tasks.clone()).unwrap_or_default(),
        trace_context: record.trace_context.clone(),
        created_at: record.created_at,
    }
}
