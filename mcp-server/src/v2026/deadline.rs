//! `tools/call` of a deadline-promoted tool on MCP 2026-07-28 ([`TaskPolicy::After`], or
//! an `Optional` tool under `ServerBuilder::promote_after`): the tool starts at once in
//! the request; if it ends within the deadline the request answers as a synchronous
//! round would (its result, `input_required`, or its error) and nothing is written to
//! the store; otherwise the call becomes a task at the deadline (one store write) and
//! the tool runs on as that task. A tool that asks for it (`ToolDef::record_up_front`)
//! has its record written at the start instead, its lease kept while the call runs, and
//! ended as the call ended when it answers in time. So does a call with an idempotency
//! key, so that a repeat finds its task from the start (and, once the call answered in
//! time, the record ended as it ended).
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

use mcp_tasks::{Idempotency, TaskRecord, WireRevision};
use mcp_tasks_protocol::JsonObject;
use mcp_tasks_protocol::error_codes;
use mcp_tasks_protocol::tasks::{CallToolReply, CreateTaskResult};
use mcp_tasks_protocol::v2026::CallToolResult;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::rounds::{self, Target};
use crate::audit;
use crate::call::{JobOf, is_keyed_refusal, keyed_refusal, new_task};
use crate::context::{CallScope, Phase, Promotion, TaskBinding, ToolContext, ToolError};
use crate::errors::{ServerError, call_error};
use crate::revision::Caller;
use crate::runtime::Answered;
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
    /// The call's idempotency key: the record is then written up front, so a repeat
    /// finds it from the start.
    pub(super) idempotency: Option<Idempotency>,
}

/// How the record of a call written up front came out.
enum UpFront {
    /// Written now, leased here.
    Created(TaskRecord),
    /// The call's idempotency key already names this task: nothing runs.
    Existing(TaskRecord),
}

impl DeadlineCall<'_> {
    /// Runs the tool with `args`; answers synchronously if it ends within `deadline`,
    /// with the task it became otherwise.
    pub(super) async fn run(
        self,
        args: JsonObject,
        deadline: Duration,
    ) -> Result<CallToolReply, ServerError> {
        let runtime = &self.state.runtime;
        // Durable from the start when the tool asks for it: the record now, leased here.
        // Its job copies the arguments: the tool has them too.
        // A keyed call too, so that a repeat finds the task from the start.
        let up_front = if self.tool.record_up_front || self.idempotency.is_some() {
            match self.create(args.clone(), None).await? {
                UpFront::Created(record) => Some(record),
                UpFront::Existing(record) => {
                    return Ok(CallToolReply::Task(CreateTaskResult::from(views::task(
                        &record,
                    ))));
                }
            }
        } else {
            None
        };
        let promotion = Arc::new(Promotion::default());
        // The tool's own token: the request's cancels it only while the call is the
        // request's; once a task, `tasks/cancel` (through the runtime) does.
        let cancel = runtime.tool_cancellation();
        let ctx = ToolContext::promotable(
            self.answers.clone(),
            cancel.clone(),
            self.scope.clone(),
            Arc::clone(&promotion),
        );
        // Shared with the tool, which reads them in place, and moved into the job only
        // if the call is promoted: no copy per call.
        let args = Arc::new(args);
        let mut job_args = up_front.is_none().then(|| Arc::clone(&args));
        let mut work = self.tool.run_shared(ctx.clone(), args);
        let timer = tokio::time::sleep(deadline);
        tokio::pin!(timer);
        let renew = async {
            match &up_front {
                Some(record) => runtime.keep_lease(&record.key()).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(renew);
        let mut timer_fired = false;
        let result = loop {
            tokio::select! {
                biased;
                result = &mut work => break result,
                _ = self.request_cancel.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
                // The record's lease went before the deadline: the sweep recovers the task
                // by the tool's delivery; this call stops.
                lost = &mut renew => return Err(call_error(ToolError::Rpc(lost))),
                // A call its client cancelled is not promoted: it ends in the request.
                _ = &mut timer, if !timer_fired && !cancel.is_cancelled() => {
                    timer_fired = true;
                    let promoted = self.promote(&promotion, job_args.take(), up_front.as_ref()).await;
                    if let Some((record, wake)) = promoted {
                        let key = record.key();
                        runtime.adopt(key, self.tool.name(), work, cancel, wake);
                        return Ok(CallToolReply::Task(CreateTaskResult::from(views::task(&record))));
                    }
                }
            }
        };
        if let Some(record) = &up_front {
            runtime.end_answered(record.key(), answered(&result));
        }
        self.reply(&ctx, result)
    }

    /// Makes the call a task, unless its round is ending `input_required`, the server is
    /// shutting down, or the store refuses (the call then stays synchronous). The task is
    /// `up_front` when its record was written at the start, else created now with `args`
    /// (by then the tool has read its share, so they move into the job uncopied).
    async fn promote(
        &self,
        promotion: &Promotion,
        args: Option<Arc<JsonObject>>,
        up_front: Option<&TaskRecord>,
    ) -> Option<(TaskRecord, Arc<Notify>)> {
        let state = self.state;
        if !state.runtime.is_accepting() {
            return None;
        }
        let mut phase = promotion.phase().await;
        let Phase::Call { status } = &*phase else {
            return None;
        };
        let record = match up_front {
            None => match self
                .create(
                    args.map(Arc::unwrap_or_clone).unwrap_or_default(),
                    status.clone(),
                )
                .await
            {
                Ok(UpFront::Created(record)) => record,
                // Unkeyed here (a keyed call's record is written up front).
                Ok(UpFront::Existing(_)) => return None,
                Err(e) => {
                    tracing::warn!(tool = self.tool.name(), error = %e, "cannot promote the call to a task; it stays synchronous");
                    return None;
                }
            },
            Some(record) => {
                let mut record = record.clone();
                if let Some(message) = status {
                    let key = record.key();
                    let set =
                        state
                            .store
                            .set_status_message(&key.owner, &key.id, Some(message.clone()));
                    if let Ok(changed) = set.await {
                        record = changed;
                    }
                }
                record
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

    /// Writes the call's task record (leased to this node) with `status` as its message;
    /// with an idempotency key, finds the task the key already names instead.
    async fn create(
        &self,
        args: JsonObject,
        status: Option<String>,
    ) -> Result<UpFront, ServerError> {
        let job = JobOf {
            identity: self.caller.identity.as_ref(),
            declarations: self.declarations.clone(),
            related_tasks: self.scope.related_tasks.clone(),
        };
        let owner = &self.caller.owner;
        let revision = WireRevision::V2026_07_28;
        let mut new = new_task(self.state, owner, self.tool, args, None, revision, job);
        new.status_message = status;
        new.idempotency = self.idempotency.clone();
        let keyed = new.idempotency.is_some();
        let created = match self.state.runtime.create_leased(new).await {
            Err(e) if keyed && is_keyed_refusal(&e) => {
                return keyed_refusal(e).map(UpFront::Existing);
            }
            created => created.map_err(|e| mcp_tasks_protocol::jsonrpc::ErrorObject::from(&e)),
        };
        let id = created.as_ref().map(|r| r.id.as_str()).unwrap_or_default();
        audit::record(
            self.state.cursor_key(),
            audit::CREATE_TASK,
            owner,
            id,
            &created,
        );
        Ok(UpFront::Created(created?))
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

/// How a call that answered in its request ended, for its record written up front.
fn answered(result: &Result<CallToolResult, ToolError>) -> Answered {
    match result {
        Ok(result) => Answered::Ended(match serde_json::to_value(result) {
            Ok(serde_json::Value::Object(obj)) => Ok(obj),
            _ => Err(ToolError::rpc(
                error_codes::INTERNAL_ERROR,
                "the tool's result is not a JSON object",
            )),
        }),
        Err(ToolError::InputRequired) => Answered::RoundEnded,
        Err(e) => Answered::Ended(Err(e.clone())),
    }
}
