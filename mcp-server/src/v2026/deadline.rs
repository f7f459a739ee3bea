//! `tools/call` of a deadline-promoted tool on MCP 2026-07-28 ([`TaskPolicy::After`], or
//! an `Optional` tool under `ServerBuilder::promote_after`): the tool starts at once in
//! the request; if it ends within the deadline the request answers as a synchronous
//! round would (its result, `input_required`, or its error) and nothing is written to
//! the store; otherwise the call becomes a task at the deadline (one store write) and
//! the tool runs on as that task.
//!
//! **Invariant.** The tool's future is the same before and after: the request polls it
//! until the deadline, then hands it to the task runtime, never running it twice. Its
//! context ([`Promotion`]) switches from the request to the task in one step, and a
//! call whose round is ending `input_required` is not promoted. A promotion the store
//! refuses leaves the call synchronous.
//!
//! [`TaskPolicy::After`]: crate::TaskPolicy::After

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::{TaskRecord, WireRevision};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::tasks::{CallToolReply, CreateTaskResult};
use mcp_tasks_protocol::v2026::CallToolResult;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::rounds::{self, Target};
use crate::audit;
use crate::call::{JobOf, new_task};
use crate::context::{CallScope, Phase, Promotion, TaskBinding, ToolContext, ToolError};
use crate::errors::ServerError;
use crate::revision::Caller;
use crate::state::State;
use crate::tool::ToolDef;
use crate::views;

/// One deadline-promoted call: what its synchronous answer and its task need.
pub(super) struct DeadlineCall<'a> {
    pub(super) state: &'a State,
    pub(super) tool: &'a ToolDef,
    pub(super) caller: &'a Caller,
    pub(super) target: Target<'a>,
    /// The answers of the rounds so far.
    pub(super) answers: JsonObject,
    /// Cancelled by the client's `notifications/cancelled` (or the request's end).
    pub(super) request_cancel: CancellationToken,
    pub(super) scope: CallScope,
    /// The client capabilities the request declared, kept in the task's job.
    pub(super) declarations: Option<serde_json::Value>,
}

impl DeadlineCall<'_> {
    /// Runs the tool with `args`; answers synchronously if it ends within `deadline`,
    /// with the task it became otherwise.
    pub(super) async fn run(
        self,
        args: JsonObject,
        deadline: Duration,
    ) -> Result<CallToolReply, ServerError> {
        let promotion = Arc::new(Promotion::default());
        // The tool's own token: the request's cancels it only while the call is the
        // request's; once a task, `tasks/cancel` (through the runtime) does.
        let cancel = self.state.runtime.tool_cancellation();
        let ctx = ToolContext::promotable(
            self.answers.clone(),
            cancel.clone(),
            self.scope.clone(),
            Arc::clone(&promotion),
        );
        let job_args = args.clone();
        let mut work = self.tool.run(ctx.clone(), args);
        let timer = tokio::time::sleep(deadline);
        tokio::pin!(timer);
        let mut timer_fired = false;
        let result = loop {
            tokio::select! {
                biased;
                result = &mut work => break result,
                _ = self.request_cancel.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
                _ = &mut timer, if !timer_fired => {
                    timer_fired = true;
                    if let Some((record, wake)) = self.promote(&promotion, job_args.clone()).await {
                        let key = record.key();
                        self.state.runtime.adopt(key, self.tool.name(), work, cancel, wake);
                        return Ok(CallToolReply::Task(CreateTaskResult::from(views::task(&record))));
                    }
                }
            }
        };
        self.reply(&ctx, result)
    }

    /// Makes the call a task, unless its round is ending `input_required`, the server is
    /// shutting down, or the store refuses (the call then stays synchronous).
    async fn promote(
        &self,
        promotion: &Promotion,
        args: JsonObject,
    ) -> Option<(TaskRecord, Arc<Notify>)> {
        let state = self.state;
        if !state.runtime.is_accepting() {
            return None;
        }
        let mut phase = promotion.phase().await;
        let Phase::Call { status } = &*phase else {
            return None;
        };
        let job = JobOf {
            identity: self.caller.identity.as_ref(),
            declarations: self.declarations.clone(),
            related_tasks: self.scope.related_tasks.clone(),
        };
        let owner = &self.caller.owner;
        let mut new = new_task(
            state,
            owner,
            self.tool,
            args,
            None,
            WireRevision::V2026_07_28,
            job,
        );
        new.status_message = status.clone();
        let created = state
            .runtime
            .create_leased(new)
            .await
            .map_err(|e| mcp_tasks_protocol::jsonrpc::ErrorObject::from(&e));
        let id = created.as_ref().map(|r| r.id.as_str()).unwrap_or_default();
        audit::record("tools/call: promote to task", owner, id, &created);
        let record = match created {
            Ok(record) => record,
            Err(e) => {
                tracing::warn!(tool = self.tool.name(), error = %e.message, "cannot promote the call to a task; it stays synchronous");
                return None;
            }
        };
        let wake = Arc::new(Notify::new());
        let binding = TaskBinding {
            store: Arc::clone(&state.store),
            key: record.key(),
            wake: Arc::clone(&wake),
        };
        promotion.promote(&mut phase, binding);
        Some((record, wake))
    }

    fn reply(
        self,
        ctx: &ToolContext,
        result: Result<CallToolResult, ToolError>,
    ) -> Result<CallToolReply, ServerError> {
        let owner = &self.caller.owner;
        let key = &self.state.cursor_key;
        rounds::call_reply(key, owner, self.target, ctx, self.answers, result)
    }
}
