//! The task runtime: runs tools as tasks in the background, carries input answers and
//! cancel requests from the store's events to the running tools, keeps each task's lease
//! alive, sweeps expired tasks and fails tasks whose worker is gone, and shuts down
//! without leaving a task unfinished.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use mcp_tasks::{
    EventError, NewTask, Owner, Recovery, StoreError, TaskEvent, TaskId, TaskKey, TaskRecord,
    TaskStore,
};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::ReplyWritten;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::jsonrpc::ErrorObject;
use tokio::sync::{Notify, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use mcp_tasks_protocol::v2026::ClientCapabilities;

use crate::auth::Identity;
use crate::context::{TaskCaller, ToolContext, ToolError};
use crate::retry::{Backoff, while_transient};
use crate::tool::ToolDef;

pub(crate) mod asking;
mod config;

pub use config::{
    CANCELLED_MESSAGE, LEASE_LAPSED_MESSAGE, RuntimeConfig, SHUTDOWN_MESSAGE, WORKER_LOST_MESSAGE,
    worker_lost_error,
};

#[derive(Debug)]
struct Running {
    owner: Owner,
    cancel: CancellationToken,
    wake: Arc<Notify>,
}

#[derive(Debug)]
struct Inner {
    store: Arc<dyn TaskStore>,
    config: RuntimeConfig,
    running: Mutex<HashMap<TaskId, Running>>,
    /// Stops the background loops and new launches.
    stopping: CancellationToken,
    /// Gives up retrying outcomes the store could not take (the end of shutdown).
    abandon: CancellationToken,
    /// Tasks whose outcome is known but not yet written (the store is unavailable).
    unwritten: Mutex<BTreeSet<TaskId>>,
    tasks: TaskTracker,
    /// Woken when a task may have become claimable (a change to an unfinished task, a
    /// lag): the worker loop, if this node runs one, looks for work.
    pub(crate) queue_changed: Notify,
}

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

/// How a run ended: the tool's own outcome, or its lease lost first.
enum Ran {
    Finished(Result<JsonObject, ToolError>),
    LeaseLost(ErrorObject),
}

impl TaskRuntime {
    /// Starts the runtime's event pump and sweeper on the current tokio runtime.
    pub fn start(store: Arc<dyn TaskStore>, config: RuntimeConfig) -> TaskRuntime {
        let runtime = TaskRuntime {
            inner: Arc::new(Inner {
                store,
                config,
                running: Mutex::default(),
                stopping: CancellationToken::new(),
                abandon: CancellationToken::new(),
                unwritten: Mutex::default(),
                tasks: TaskTracker::new(),
                queue_changed: Notify::new(),
            }),
        };
        tokio::spawn(runtime.clone().pump_events());
        tokio::spawn(runtime.clone().sweep_loop());
        runtime
    }

    /// The store the runtime's tasks live in.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.inner.store
    }

    fn running(&self) -> MutexGuard<'_, HashMap<TaskId, Running>> {
        self.inner.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// False once shutdown has begun: no new task may start.
    pub fn is_accepting(&self) -> bool {
        !self.inner.tasks.is_closed()
    }

    /// How many tasks this node is running.
    pub fn running_count(&self) -> usize {
        self.running().len()
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
        let store = Arc::clone(&self.inner.store);
        let cancel = self.inner.stopping.child_token();
        let wake = Arc::new(Notify::new());
        self.running().insert(
            key.id.clone(),
            Running {
                owner: key.owner.clone(),
                cancel: cancel.clone(),
                wake: Arc::clone(&wake),
            },
        );
        let runtime = self.clone();
        self.inner.tasks.spawn(async move {
            let span = tracing::info_span!("task", task_id = %key.id, tool = tool.name());
            let ctx = ToolContext::task(
                Arc::clone(&store),
                key.clone(),
                wake,
                cancel.clone(),
                caller,
                attempt,
            );
            let run = runtime.run(ctx, &key, &tool, args, &cancel, after);
            match tracing::Instrument::instrument(run, span).await {
                Ran::Finished(outcome) => {
                    runtime.finish(&key, outcome).await;
                    runtime.running().remove(&key.id);
                }
                Ran::LeaseLost(lost) => {
                    // Still listed as running: the sweep leaves it to this recovery,
                    // which knows why the lease went.
                    runtime.recover(&key, lost).await;
                    runtime.running().remove(&key.id);
                }
            }
            drop(slot);
        });
    }

    async fn run(
        &self,
        ctx: ToolContext,
        key: &TaskKey,
        tool: &ToolDef,
        args: JsonObject,
        cancel: &CancellationToken,
        after: Option<ReplyWritten>,
    ) -> Ran {
        let work = async {
            if let Some(after) = after {
                after.wait().await;
            }
            tool.run(ctx, args).await
        };
        let renew = self.keep_lease(key);
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

    /// Renews the lease until it cannot; returns why it stopped. A renewal that meets a
    /// transient store failure is retried with a backoff for as long as the lease, as
    /// last written, has more than a tenth of its length to run; only then is the tool
    /// stopped (a renewal that lands late resumes normally).
    async fn keep_lease(&self, key: &TaskKey) -> ErrorObject {
        let config = &self.inner.config;
        let margin = config.lease / 10;
        // Claimed (created leased, or claimed) just before the tool started.
        let mut expires = Instant::now() + config.lease;
        loop {
            tokio::time::sleep(config.renew_every).await;
            let mut backoff = Backoff::default();
            let mut failing = false;
            loop {
                let sent = Instant::now();
                // A backend may hang rather than fail while it is out (a command waiting
                // for its response timeout): an attempt may last only while the lease does.
                let left = expires.saturating_duration_since(sent + margin);
                let renew = self.inner.store.renew_lease(
                    &key.owner,
                    &key.id,
                    &config.node_id,
                    millis(config.lease),
                );
                let renewed = match tokio::time::timeout(left, renew).await {
                    Ok(renewed) => renewed,
                    Err(_) => Err(StoreError::unavailable(
                        "the lease renewal did not finish while the lease lasted",
                    )),
                };
                match renewed {
                    Ok(_) => {
                        // The store computed the new expiry no earlier than `sent`.
                        expires = sent + config.lease;
                        if failing {
                            tracing::info!(task_id = %key.id, "lease renewed again after store failures");
                        }
                        break;
                    }
                    Err(e) if e.is_transient() && Instant::now() + margin < expires => {
                        if std::mem::replace(&mut failing, true) {
                            tracing::debug!(task_id = %key.id, error = %e, "lease renewal failed again");
                        } else {
                            tracing::warn!(task_id = %key.id, error = %e, "lease renewal failed; retrying while the lease lasts");
                        }
                        // The last attempt comes at the deadline, however long the step.
                        let deadline = expires.checked_sub(margin).unwrap_or(expires);
                        tokio::select! {
                            _ = backoff.wait() => {}
                            _ = tokio::time::sleep_until(deadline) => {}
                        }
                    }
                    Err(e) if e.is_transient() => {
                        tracing::error!(task_id = %key.id, error = %e, "the store stayed unavailable until the lease would lapse; stopping the task");
                        return ErrorObject::new(error_codes::INTERNAL_ERROR, LEASE_LAPSED_MESSAGE);
                    }
                    Err(e) => {
                        tracing::warn!(task_id = %key.id, error = %e, "lease renewal failed; stopping the task");
                        return ErrorObject::new(
                            error_codes::INTERNAL_ERROR,
                            format!(
                                "Worker lost: the server running this task lost its lease ({e})."
                            ),
                        );
                    }
                }
            }
        }
    }

    /// The run stopped because its lease could not be kept (the store unavailable for
    /// longer than the lease, or the lease taken): it writes no outcome, which might land
    /// over a newer run's, and the task is recovered as after a worker crash, by its
    /// delivery: an at-least-once task waits for a worker again (this node's included,
    /// the attempt counted), another fails with `lost`. Retried while the store is
    /// unavailable; a lease another node holds (or not lapsed yet) is left to it, or to
    /// the sweep.
    async fn recover(&self, key: &TaskKey, lost: ErrorObject) {
        let what = format!("recovering task {} after its lease was lost", key.id);
        let recovered = while_transient(&self.inner.abandon, &what, || {
            self.inner
                .store
                .recover_lapsed(&key.owner, &key.id, lost.clone())
        })
        .await;
        match recovered {
            Ok(Recovery::Requeued { attempt }) => {
                tracing::warn!(task_id = %key.id, attempt, "run stopped with its lease lost; the task waits for a worker again");
                self.inner.queue_changed.notify_one();
            }
            Ok(Recovery::Failed) => {
                tracing::warn!(task_id = %key.id, reason = %lost.message, "task failed: its run lost its lease")
            }
            Ok(Recovery::Cancelled) => {
                tracing::info!(task_id = %key.id, "task cancelled: its run lost its lease")
            }
            Ok(Recovery::NotLapsed) => {
                tracing::debug!(task_id = %key.id, "lease lost but not lapsed here: another worker holds it, or the sweep recovers it")
            }
            Err(e) => {
                tracing::warn!(task_id = %key.id, error = %e, "could not recover a task whose run lost its lease; the sweep will")
            }
        }
    }

    /// Records how the tool ended (first terminal write wins) and releases the lease.
    /// A transient store failure is retried with a backoff until the write lands, the
    /// task is gone, or another writer won; meanwhile the outcome stays in this task's
    /// memory (so at most one per task this node runs). Shutdown gives up after its
    /// grace periods and names the task in the log.
    async fn finish(&self, key: &TaskKey, outcome: Result<JsonObject, ToolError>) {
        let finish = self.outcome_write(outcome);
        let what = format!("recording the outcome of task {}", key.id);
        let mut first = true;
        let written = while_transient(&self.inner.abandon, &what, || {
            if !std::mem::take(&mut first) {
                self.unwritten().insert(key.id.clone());
            }
            self.write_outcome(key, &finish)
        })
        .await;
        self.unwritten().remove(&key.id);
        match written {
            Ok(t) if !t.won => {
                tracing::debug!(task_id = %key.id, status = t.record.status.as_str(), "task already finished")
            }
            Ok(t) => {
                tracing::info!(task_id = %key.id, status = t.record.status.as_str(), "task finished")
            }
            Err(StoreError::NotFound) => {
                tracing::debug!(task_id = %key.id, "task expired before it finished")
            }
            Err(e) if e.is_transient() => {
                tracing::error!(task_id = %key.id, error = %e, "shutting down with the task's outcome unwritten: the store stayed unavailable; the sweep will fail it as worker lost")
            }
            Err(e) => {
                tracing::error!(task_id = %key.id, error = %e, "cannot record the task's outcome")
            }
        }
        let _ = self
            .inner
            .store
            .release_lease(&key.owner, &key.id, &self.inner.config.node_id)
            .await;
    }

    /// The terminal write `outcome` calls for.
    fn outcome_write(&self, outcome: Result<JsonObject, ToolError>) -> Finish {
        match outcome {
            Ok(result) => Finish::Complete(result),
            Err(ToolError::Rpc(error)) => Finish::Fail(error),
            Err(ToolError::Cancelled) => Finish::Cancel(if self.inner.stopping.is_cancelled() {
                SHUTDOWN_MESSAGE
            } else {
                CANCELLED_MESSAGE
            }),
            Err(ToolError::InputRequired) => Finish::Fail(ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                "The tool asked for input outside a request",
            )),
        }
    }

    /// One attempt at the terminal write; a result over the store's limit fails the task.
    async fn write_outcome(
        &self,
        key: &TaskKey,
        finish: &Finish,
    ) -> Result<mcp_tasks::Transition, StoreError> {
        let store = &self.inner.store;
        match finish {
            Finish::Complete(result) => {
                match store.complete(&key.owner, &key.id, result.clone()).await {
                    Err(StoreError::LimitExceeded { limit, max }) => {
                        let error = ErrorObject::new(
                            error_codes::INTERNAL_ERROR,
                            format!(
                                "The tool's result exceeds the server's limit ({limit}, at most {max})"
                            ),
                        );
                        store.fail(&key.owner, &key.id, error).await
                    }
                    other => other,
                }
            }
            Finish::Fail(error) => store.fail(&key.owner, &key.id, error.clone()).await,
            Finish::Cancel(message) => {
                store
                    .cancel(&key.owner, &key.id, Some((*message).to_owned()))
                    .await
            }
        }
    }

    fn unwritten(&self) -> MutexGuard<'_, BTreeSet<TaskId>> {
        self.inner
            .unwritten
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Carries store events to the tools running here.
    async fn pump_events(self) {
        let mut events = self.inner.store.events();
        loop {
            let event = tokio::select! {
                _ = self.inner.stopping.cancelled() => return,
                e = events.recv() => e,
            };
            match event {
                Ok(TaskEvent::InputResponded { key, .. }) => {
                    if let Some(r) = self.running().get(&key.id) {
                        r.wake.notify_waiters();
                    }
                }
                Ok(TaskEvent::CancelRequested { key }) => {
                    if let Some(r) = self.running().get(&key.id) {
                        r.cancel.cancel();
                    }
                }
                Ok(TaskEvent::Changed { key, status, .. }) if status.is_terminal() => {
                    // Finished by someone else (e.g. a 2025-11-25 tasks/cancel): stop the work.
                    if let Some(r) = self.running().get(&key.id) {
                        r.cancel.cancel();
                    }
                }
                Ok(TaskEvent::Changed { queued: true, .. }) => {
                    // Created or requeued for a worker: look for work.
                    self.inner.queue_changed.notify_one();
                }
                // Otherwise changed and unfinished, or running somewhere: nothing to claim.
                Ok(TaskEvent::Changed { .. }) => {}
                Err(EventError::Lagged(n)) => {
                    self.inner.queue_changed.notify_one();
                    tracing::warn!(
                        dropped = n,
                        "task events lagged; re-checking every task running here"
                    );
                    for r in self.running().values() {
                        r.wake.notify_waiters();
                    }
                    // A cancel request or a terminal write made elsewhere during the gap
                    // raised no event we heard: read the records (off the pump, which
                    // must keep draining the feed).
                    tokio::spawn(self.clone().recheck_running());
                }
                Err(EventError::Closed) => return,
            }
        }
    }

    /// Re-reads every task running here and stops those that were finished, asked to
    /// stop, or expired meanwhile: what the events lost in a lag would have done.
    async fn recheck_running(self) {
        let keys: Vec<TaskKey> = self
            .running()
            .iter()
            .map(|(id, r)| TaskKey {
                owner: r.owner.clone(),
                id: id.clone(),
            })
            .collect();
        for key in keys {
            let stop = match self.inner.store.get(&key.owner, &key.id).await {
                Ok(rec) => rec.is_terminal() || rec.cancel_requested,
                Err(StoreError::NotFound) => true,
                // The store is the truth but unreachable now; the lease renewal and the
                // input re-check will notice a lasting failure.
                Err(_) => false,
            };
            if stop && let Some(r) = self.running().get(&key.id) {
                tracing::info!(task_id = %key.id, "task finished or cancelled elsewhere during an event lag; stopping it");
                r.cancel.cancel();
            }
        }
    }

    async fn sweep_loop(self) {
        let mut failing = false;
        loop {
            tokio::select! {
                _ = self.inner.stopping.cancelled() => return,
                _ = tokio::time::sleep(self.inner.config.sweep_every) => {}
            }
            // Said once per run of failures (a store outage fails every sweep).
            match self.sweep_once().await {
                Ok(()) if failing => {
                    failing = false;
                    tracing::info!("sweep works again");
                }
                Ok(()) => {}
                Err(e) if failing => tracing::debug!(error = %e, "sweep failed again"),
                Err(e) => {
                    failing = true;
                    tracing::warn!(error = %e, "sweep failed");
                }
            }
        }
    }

    /// One sweep: purge expired tasks (stopping their work if it runs here) and recover
    /// unfinished tasks whose worker stopped renewing its lease: by the tool's delivery,
    /// failed as worker lost or made to wait for another worker.
    pub async fn sweep_once(&self) -> Result<(), StoreError> {
        let report = self.inner.store.sweep().await?;
        for key in &report.expired_unfinished {
            tracing::info!(task_id = %key.id, "task TTL ran out before it finished; stopping its work");
            if let Some(r) = self.running().get(&key.id) {
                r.cancel.cancel();
            }
        }
        for key in &report.lease_lapsed {
            if self.running().contains_key(&key.id) {
                continue;
            }
            match self
                .inner
                .store
                .recover_lapsed(&key.owner, &key.id, worker_lost_error())
                .await
            {
                Ok(Recovery::Failed) => {
                    tracing::warn!(task_id = %key.id, "task failed: its worker is gone")
                }
                Ok(Recovery::Requeued { attempt }) => {
                    tracing::warn!(task_id = %key.id, attempt, "run lost its worker; the task waits for another");
                    self.inner.queue_changed.notify_one();
                }
                Ok(Recovery::Cancelled) => {
                    tracing::info!(task_id = %key.id, "task cancelled: its worker is gone")
                }
                _ => {}
            }
        }
        Ok(())
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
                let ids: Vec<String> = self.unwritten().iter().map(ToString::to_string).collect();
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

/// The terminal write a finished tool calls for.
#[derive(Debug)]
enum Finish {
    Complete(JsonObject),
    Fail(ErrorObject),
    Cancel(&'static str),
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
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
    }
}
