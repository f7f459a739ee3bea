//! The `tools/call` core both revisions share: find and check the tool, and start its
//! task (the error a tool's failure answers a request with is `errors::call_error`).
//!
//! **Invariant.** Knows no wire revision's shapes: the revision modules turn what this
//! returns into their own views.

use mcp_tasks::{Job, NewTask, Origin, Owner, TaskRecord, WireRevision};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::engine::ReplyWritten;
use mcp_tasks_protocol::method::Request;
use mcp_tasks_protocol::v2026::CallTool;

use crate::audit;
use crate::auth::Identity;
use crate::errors::ServerError;
use crate::executor::Launch;
use crate::state::State;
use crate::tool::ToolDef;

/// The tool `name`, once the caller's credentials grant every scope it requires (none
/// without credentials) and `args` passed its input schema.
pub(crate) fn find_tool<'s>(
    state: &'s State,
    name: &str,
    args: &mut JsonObject,
    identity: Option<&Identity>,
) -> Result<&'s ToolDef, ServerError> {
    let tool = state
        .tool(name)
        .ok_or_else(|| ServerError::UnknownTool(name.to_owned()))?;
    let needed = tool.required_scopes();
    if !needed.is_empty() && !identity.is_some_and(|i| i.missing(needed).is_empty()) {
        return Err(ServerError::InsufficientScope {
            tool: name.to_owned(),
            scopes: needed.to_vec(),
        });
    }
    tool.validate_in_place(args)?;
    Ok(tool)
}

/// Who asked for a task, as its record keeps it for the worker.
pub(crate) struct Requester {
    /// The caller's credentials as they were when the task was created.
    pub(crate) identity: Option<Identity>,
    /// What the request declared (MCP 2026-07-28: its client capabilities).
    pub(crate) declarations: Option<serde_json::Value>,
    /// The earlier tasks it named as related, checked.
    pub(crate) related_tasks: Vec<String>,
    /// Fired once the response announcing the task is written: the tool waits for it
    /// (MCP 2025-11-25, where a task's messages must not precede its `CreateTaskResult`).
    pub(crate) announced: Option<ReplyWritten>,
}

/// What a task's job keeps of its caller besides the arguments.
pub(crate) struct JobOf<'a> {
    pub(crate) identity: Option<&'a Identity>,
    pub(crate) declarations: Option<serde_json::Value>,
    pub(crate) related_tasks: Vec<String>,
}

/// The task to create for a call of `tool` with `args` by `owner` (asked on the
/// `revision` wire, with this TTL if the client asked for one): its record keeps what a
/// worker needs to run it (the job).
pub(crate) fn new_task(
    state: &State,
    owner: &Owner,
    tool: &ToolDef,
    args: JsonObject,
    ttl_ms: Option<u64>,
    revision: WireRevision,
    caller: JobOf<'_>,
) -> NewTask {
    NewTask {
        // The creating call's trace: whoever runs the task continues it.
        trace_context: crate::telemetry::creating_context(),
        owner: owner.clone(),
        ttl_ms,
        poll_interval_ms: state.poll_interval_ms,
        origin: Origin {
            // `tools/call` on both wires.
            method: CallTool::METHOD.to_owned(),
            tool: Some(tool.name().to_owned()),
            revision,
        },
        status_message: None,
        job: Some(Job {
            arguments: args,
            declarations: caller.declarations,
            principal: caller.identity.map(|i| i.principal.clone()),
            scopes: caller
                .identity
                .map(|i| i.scopes.clone())
                .unwrap_or_default(),
            related_tasks: caller.related_tasks,
            delivery: tool.delivery,
            attempts: 0,
            rerun_of: None,
        }),
    }
}

/// Creates a task of `owner` running `tool` with `args` (asked on the `revision` wire,
/// with this TTL if the client asked for one) and hands it to the server's executor
/// (this node runs it, or a worker node claims it). The task is durable when this
/// returns: any node finds it. Its record keeps what a worker needs: the arguments,
/// the `requester`'s declarations and identity and the tool's delivery.
pub(crate) async fn start_task(
    state: &State,
    owner: &Owner,
    tool: &ToolDef,
    args: JsonObject,
    ttl_ms: Option<u64>,
    revision: WireRevision,
    requester: Requester,
) -> Result<TaskRecord, ServerError> {
    let Requester {
        identity,
        declarations,
        related_tasks,
        announced,
    } = requester;
    if !state.runtime.is_accepting() {
        return Err(ServerError::ShuttingDown);
    }
    let job = JobOf {
        identity: identity.as_ref(),
        declarations,
        related_tasks,
    };
    let new = new_task(state, owner, tool, args, ttl_ms, revision, job);
    launch_task(state, tool, new, identity, announced).await
}

/// Hands the task `new` (made by [`new_task`]) of `tool` to the server's executor: this
/// node runs it, or a worker node claims it; `identity` is the caller's, whose tool
/// context the run gets. Durable when this returns; audited as created. What
/// [`start_task`] and the console's re-run share.
pub(crate) async fn launch_task(
    state: &State,
    tool: &ToolDef,
    new: NewTask,
    identity: Option<Identity>,
    announced: Option<ReplyWritten>,
) -> Result<TaskRecord, ServerError> {
    if !state.runtime.is_accepting() {
        return Err(ServerError::ShuttingDown);
    }
    let owner = new.owner.clone();
    let launch = Launch {
        runtime: state.runtime.clone(),
        new,
        tool: tool.clone(),
        identity,
        start_after: announced,
    };
    let created = state
        .executor
        .execute(launch)
        .await
        .map_err(|e| mcp_tasks_protocol::jsonrpc::ErrorObject::from(&e));
    let id = created
        .as_ref()
        .map(|r| r.id.as_str().to_owned())
        .unwrap_or_default();
    audit::record(
        state.cursor_key(),
        audit::CREATE_TASK,
        &owner,
        &id,
        &created,
    );
    if created.is_ok() {
        crate::telemetry::task_created(tool.name());
    }
    Ok(created?)
}
