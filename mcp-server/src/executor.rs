//! The executor seam: where a created task runs. The runtime hands each task a
//! `tools/call` creates to the server's [`Executor`] as a [`Launch`]; the executor creates
//! it (durable when it returns) and sees that something runs it.
//!
//! - [`InProcess`]: creates the task leased to this node and runs the tool here, at once
//!   (role `all`, the default).
//! - [`Queue`]: creates the task waiting for a worker; any worker node (role `worker` or
//!   `all`) on the same store claims it (role `api`).
//! - Your own: call [`Launch::enqueue`] and hand [`Launch::job`] to an outside system
//!   that claims it with [`TaskStore::claim_next`] and reports back through the store
//!   (`renew_lease`, `complete`/`fail`), or run it however you like with
//!   [`Launch::run_here`].
//!
//! **Invariant.** The store is the only channel between an API node and a worker: the
//! task record (its [`Job`]: arguments, the request's declarations,
//! principal and scopes, delivery) holds everything a run needs, wherever it runs.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks::{Job, NewTask, StoreError, TaskRecord, TaskStore};
use mcp_tasks_protocol::engine::ReplyWritten;

use crate::auth::Identity;
use crate::runtime::TaskRuntime;
use crate::tool::ToolDef;

/// What a node does with tasks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Role {
    /// Serves every method and creates tasks, runs no tools: its tasks wait (`working`)
    /// until a worker claims them.
    Api,
    /// Claims tasks from the store and runs them; serves no MCP requests.
    Worker,
    /// Both: runs the tasks it creates at once, and claims those others queued.
    #[default]
    All,
}

impl Role {
    /// Whether this node runs a worker loop.
    pub fn claims(self) -> bool {
        matches!(self, Role::Worker | Role::All)
    }

    /// The executor of this role: [`InProcess`] for `all`, [`Queue`] otherwise.
    pub fn executor(self) -> Arc<dyn Executor> {
        match self {
            Role::All => Arc::new(InProcess),
            Role::Api | Role::Worker => Arc::new(Queue),
        }
    }
}

impl std::str::FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Role, String> {
        match s {
            "api" => Ok(Role::Api),
            "worker" => Ok(Role::Worker),
            "all" => Ok(Role::All),
            other => Err(format!(
                "unknown role {other:?}: expected api, worker or all"
            )),
        }
    }
}

/// A task about to be created: the record to create (with its [`Job`]), the tool, and
/// the caller's credentials.
#[derive(Debug)]
pub struct Launch {
    pub(crate) runtime: TaskRuntime,
    pub(crate) new: NewTask,
    pub(crate) tool: ToolDef,
    pub(crate) identity: Option<Identity>,
    /// Fired once the response announcing the task is written (MCP 2025-11-25): the
    /// tool starts only then, so nothing about the task reaches the client before it.
    pub(crate) start_after: Option<ReplyWritten>,
}

impl Launch {
    /// The task to create.
    pub fn new_task(&self) -> &NewTask {
        &self.new
    }

    /// What a worker needs to run it.
    pub fn job(&self) -> Option<&Job> {
        self.new.job.as_ref()
    }

    /// The store the task goes into.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        self.runtime.store()
    }

    /// Creates the task leased to this node and runs the tool here: at once, or (MCP
    /// 2025-11-25) once the response announcing the task is written.
    pub async fn run_here(self) -> Result<TaskRecord, StoreError> {
        let args = self
            .new
            .job
            .as_ref()
            .map(|job| job.arguments.clone())
            .unwrap_or_default();
        self.runtime
            .create_and_launch_after(self.new, self.tool, args, self.identity, self.start_after)
            .await
    }

    /// Creates the task waiting for a worker (it stays `working` until one claims it).
    pub async fn enqueue(self) -> Result<TaskRecord, StoreError> {
        self.runtime.store().create(self.new).await
    }
}

/// Where a created task runs.
#[async_trait]
pub trait Executor: Send + Sync + fmt::Debug + 'static {
    /// Creates the task of `launch`, durable when this returns, and starts it on its way.
    /// A call with an idempotency key has `launch.new_task().idempotency` set: the store
    /// may then refuse the create (`StoreError::AlreadyExists`, `IdempotencyConflict`);
    /// return that error as it came, starting nothing (the server answers with the task
    /// the key names, or -32602).
    async fn execute(&self, launch: Launch) -> Result<TaskRecord, StoreError>;
}

/// Runs each task in this process, at once (today's single-node behaviour).
#[derive(Debug, Clone, Copy, Default)]
pub struct InProcess;

#[async_trait]
impl Executor for InProcess {
    async fn execute(&self, launch: Launch) -> Result<TaskRecord, StoreError> {
        launch.run_here().await
    }
}

/// Queues each task for the worker nodes of the store.
#[derive(Debug, Clone, Copy, Default)]
pub struct Queue;

#[async_trait]
impl Executor for Queue {
    async fn execute(&self, launch: Launch) -> Result<TaskRecord, StoreError> {
        launch.enqueue().await
    }
}
