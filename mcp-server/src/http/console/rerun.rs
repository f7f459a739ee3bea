//! `POST /console/api/tasks/{id}/rerun`: a finished task run again, as a new task of the
//! same owner with the same tool and arguments (and what its job kept of the caller: the
//! principal and scopes, the declarations, the related tasks), through the path
//! `tools/call` takes ([`call::launch_task`]: the server's executor runs it here or queues
//! it for a worker). Answers `{"taskId": new id}`.
//!
//! Whether a task may be re-run is [`check`]: it must be finished (`completed`, `failed`,
//! `cancelled`), made by `tools/call` with a job (its arguments), of a tool this server
//! still has, that may run as a task, and whose [`Rerun`] policy allows it (by default
//! not when the task asked for input: the answers were its caller's). A refusal is 409
//! naming the reason; an unknown task 404. The arguments are checked against the tool's
//! input schema as it is now, and the caller's scopes against those it requires now.
//!
//! **The links.** The new task's job names the task it re-runs ([`Job::rerun_of`]), and
//! its creation writes the log entry [`kinds::RERUN`] `{"rerunOf": old id}` in the same
//! write (the operator as its actor). The old task is finished, and a finished task's
//! log never changes (contract rules 6 and 23: the terminal entry is the last), so the
//! link back is found, not written: [`view`] lists the re-runs of a finished task
//! (`rerunAs`) from the operator's listing of the owner's tasks of the same tool created
//! since it, at most [`MAX_LOOKUP`] of them. The re-run is audited (INFO, `op="console:
//! rerun"`) with the operator as actor, the owner as principal, the old task's id and the
//! new one's (`rerun_as`), and every refusal with its reason.

use std::fmt;
use std::sync::Arc;

use axum::extract::{Extension, Path, State};
use axum::routing::post;
use axum::{Json, Router};
use mcp_tasks::{Actor, LogScope, OperatorFilter, TaskRecord, TaskStore};
use mcp_tasks_protocol::error_codes;
use serde::Serialize;
use serde_json::{Value, json};

use super::Console;
use super::access::Operator;
use super::api::path_id;
use super::error::ApiError;
use super::views::{MAX_LIMIT, TaskDetail};
use crate::audit::TARGET;
use crate::auth::Identity;
use crate::call::{self, JobOf};
use crate::errors::ServerError;
use crate::state::State as ServerState;
use crate::tool::{Rerun, TaskPolicy, ToolDef};

#[cfg(doc)]
use mcp_tasks::{Job, log::kinds};

/// The most tasks [`view`] reads to find a finished task's re-runs.
pub(super) const MAX_LOOKUP: usize = 1_000;

/// The route, at its full path.
pub(super) fn routes() -> Router<Arc<Console>> {
    Router::new().route("/console/api/tasks/{id}/rerun", post(rerun))
}

/// Why a task cannot be re-run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// It has not finished (its status).
    Unfinished(&'static str),
    /// It was not made by `tools/call` (no tool named).
    NotATool,
    /// Its record keeps no job (no arguments): written by an older build.
    NoJob,
    /// Its tool is not (or no longer) registered on this server.
    UnknownTool(String),
    /// Its tool runs synchronously only: no task of it can be made.
    Synchronous(String),
    /// Its tool's policy is [`Rerun::Never`].
    Never(String),
    /// It asked for input and its tool's policy is [`Rerun::UnlessAsked`].
    Asked(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Unfinished(status) => write!(
                f,
                "the task is {status}: only a finished task (completed, failed or cancelled) can be re-run"
            ),
            Refusal::NotATool => f.write_str("the task was not made by a tool call"),
            Refusal::NoJob => f.write_str(
                "the task's record keeps no arguments (it was written by an older version)",
            ),
            Refusal::UnknownTool(tool) => {
                write!(f, "the tool {tool} is no longer registered on this server")
            }
            Refusal::Synchronous(tool) => {
                write!(
                    f,
                    "the tool {tool} runs synchronously only, never as a task"
                )
            }
            Refusal::Never(tool) => write!(f, "the tool {tool} does not allow re-runs"),
            Refusal::Asked(tool) => write!(
                f,
                "the task asked for input, and the tool {tool} allows re-runs only of tasks that did not"
            ),
        }
    }
}

/// The tool that would re-run `rec`, or why `rec` cannot be re-run on this server.
pub(super) fn check<'s>(state: &'s ServerState, rec: &TaskRecord) -> Result<&'s ToolDef, Refusal> {
    decide(rec, |name| state.tool(name))
}

/// [`check`] with the server's tools as `tool`.
fn decide<'t>(
    rec: &TaskRecord,
    tool: impl FnOnce(&str) -> Option<&'t ToolDef>,
) -> Result<&'t ToolDef, Refusal> {
    if !rec.is_terminal() {
        return Err(Refusal::Unfinished(rec.status.as_str()));
    }
    let name = rec.origin.tool.as_deref().ok_or(Refusal::NotATool)?;
    if rec.job.is_none() {
        return Err(Refusal::NoJob);
    }
    let def = tool(name).ok_or_else(|| Refusal::UnknownTool(name.to_owned()))?;
    if def.policy() == TaskPolicy::Synchronous {
        return Err(Refusal::Synchronous(name.to_owned()));
    }
    match def.rerun_policy() {
        Rerun::Allowed => Ok(def),
        Rerun::Never => Err(Refusal::Never(name.to_owned())),
        // Every input key the task ever asked for stays in its record.
        Rerun::UnlessAsked if !rec.used_input_keys.is_empty() => {
            Err(Refusal::Asked(name.to_owned()))
        }
        Rerun::UnlessAsked => Ok(def),
    }
}

/// What the task view says about re-runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RerunView {
    /// Whether `POST .../rerun` would make a new task now.
    rerunnable: bool,
    /// Why not, when not.
    rerun_refused: Option<String>,
    /// The task this one re-runs.
    rerun_of: Option<String>,
    /// The re-runs of this task, newest first (among the owner's tasks of the same tool
    /// created since it, [`MAX_LOOKUP`] at most).
    rerun_as: Vec<String>,
}

/// A task in full with what it says about re-runs: `GET /console/api/tasks/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct WithRerun {
    #[serde(flatten)]
    detail: TaskDetail,
    #[serde(flatten)]
    rerun: RerunView,
}

/// `detail` (of `rec`) with its [`RerunView`]: whether it may be re-run, the task it
/// re-runs, and (for a finished task) its re-runs, found by a bounded lookup.
pub(super) async fn view(
    console: &Console,
    rec: &TaskRecord,
    detail: TaskDetail,
) -> Result<WithRerun, ApiError> {
    let refused = check(&console.state, rec).err();
    let rerun_as = if rec.is_terminal() {
        reruns_of(console.store.as_ref(), rec).await?
    } else {
        Vec::new()
    };
    Ok(WithRerun {
        detail,
        rerun: RerunView {
            rerunnable: refused.is_none(),
            rerun_refused: refused.map(|r| r.to_string()),
            rerun_of: rec
                .job
                .as_ref()
                .and_then(|j| j.rerun_of.as_ref())
                .map(|id| id.as_str().to_owned()),
            rerun_as,
        },
    })
}

/// The ids of the re-runs of `rec`, newest first: among the owner's tasks of the same
/// tool created since it, [`MAX_LOOKUP`] at most.
async fn reruns_of(store: &dyn TaskStore, rec: &TaskRecord) -> Result<Vec<String>, ApiError> {
    let Some(tool) = rec.origin.tool.clone() else {
        return Ok(Vec::new());
    };
    let filter = OperatorFilter {
        owner: Some(rec.owner.clone()),
        tool: Some(tool),
        created_from: Some(rec.created_at),
        ..OperatorFilter::default()
    };
    let mut found = Vec::new();
    let mut cursor: Option<String> = None;
    let mut read = 0;
    while read < MAX_LOOKUP {
        let page = store
            .operator_list(&filter, cursor.as_deref(), MAX_LIMIT.min(MAX_LOOKUP - read))
            .await?;
        read += page.tasks.len();
        found.extend(
            page.tasks
                .iter()
                .filter(|t| {
                    t.job
                        .as_ref()
                        .is_some_and(|j| j.rerun_of.as_ref() == Some(&rec.id))
                })
                .map(|t| t.id.as_str().to_owned()),
        );
        match page.next_cursor {
            Some(next) if !page.tasks.is_empty() => cursor = Some(next),
            _ => break,
        }
    }
    Ok(found)
}

/// The handler.
async fn rerun(
    State(console): State<Arc<Console>>,
    Extension(Operator(operator)): Extension<Operator>,
    Path(params): Path<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    let old_id = path_id(params)?;
    let old = console.store.operator_get(&old_id).await?;
    let created = start(&console, &old).await;
    audit(&console, &operator, &old, &created);
    let new = created?;
    Ok(Json(json!({ "taskId": new.id.as_str() })))
}

/// Makes and starts the re-run of `old`.
async fn start(console: &Console, old: &TaskRecord) -> Result<TaskRecord, ApiError> {
    let state = &console.state;
    let tool = check(state, old).map_err(|r| ApiError::Conflict(r.to_string()))?;
    let Some(job) = old.job.as_deref() else {
        return Err(ApiError::Conflict(Refusal::NoJob.to_string()));
    };
    // The caller as the job kept it, as a worker that claims the task sees it.
    let identity = job.principal.clone().map(|principal| Identity {
        principal,
        scopes: job.scopes.clone(),
    });
    let missing: Vec<&str> = tool
        .required_scopes()
        .iter()
        .filter(|s| !job.scopes.contains(*s))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(ApiError::Conflict(format!(
            "the tool {} now requires the scope {} that the task's caller was not granted",
            tool.name(),
            missing.join(", ")
        )));
    }
    let mut args = job.arguments.clone();
    tool.validate_in_place(&mut args).map_err(|e| {
        ApiError::Conflict(format!(
            "the task's arguments no longer pass the tool's input schema: {}",
            e.message
        ))
    })?;
    let caller = JobOf {
        identity: identity.as_ref(),
        declarations: job.declarations.clone(),
        related_tasks: job.related_tasks.clone(),
    };
    let mut new = call::new_task(
        state,
        &old.owner,
        tool,
        args,
        old.ttl_ms,
        old.origin.revision,
        caller,
    );
    if let Some(job) = new.job.as_mut() {
        job.rerun_of = Some(old.id.clone());
    }
    // The new task's log names the operator as who made it.
    let scope = LogScope {
        node: None,
        actor: Some(Actor::Operator),
    };
    scope
        .run(call::launch_task(state, tool, new, identity, None))
        .await
        .map_err(launch_error)
}

/// A failed launch as the console answers it.
fn launch_error(e: ServerError) -> ApiError {
    match e {
        ServerError::ShuttingDown => {
            ApiError::NotNow("the server is shutting down: it starts no new task".into())
        }
        ServerError::Rpc(e) if e.code == error_codes::INVALID_REQUEST => {
            // A store limit (e.g. the owner's tasks): the message names it.
            ApiError::Conflict(e.message)
        }
        ServerError::Rpc(e)
            if e.data
                .as_ref()
                .is_some_and(|d| d.get("retryable") == Some(&Value::Bool(true))) =>
        {
            ApiError::Unavailable
        }
        other => {
            tracing::error!(error = %other, "console: a re-run could not be started");
            ApiError::Internal
        }
    }
}

/// The audit line of a re-run of `old` by `operator`.
fn audit(
    console: &Console,
    operator: &str,
    old: &TaskRecord,
    created: &Result<TaskRecord, ApiError>,
) {
    let owner = crate::audit::principal(&console.seal, &old.owner);
    let task_id = old.id.as_str();
    match created {
        Ok(new) => tracing::info!(
            target: TARGET,
            actor = %operator,
            principal = %owner,
            task_id,
            op = "console: rerun",
            outcome = "ok",
            rerun_as = new.id.as_str()
        ),
        Err(e) => tracing::info!(
            target: TARGET,
            actor = %operator,
            principal = %owner,
            task_id,
            op = "console: rerun",
            outcome = "refused",
            reason = %refusal(e)
        ),
    }
}

/// Why a re-run was refused, as its audit line says it.
fn refusal(e: &ApiError) -> &str {
    match e {
        ApiError::Conflict(m) | ApiError::NotNow(m) | ApiError::BadRequest(m) => m,
        ApiError::Unavailable => "the task store is unavailable",
        _ => "the task store failed",
    }
}

#[cfg(test)]
mod tests {
    use mcp_tasks::{Job, NewTask, TaskId};
    use mcp_tasks_protocol::tasks::TaskStatus;

    use super::*;
    use crate::{CallToolResult, ToolContext};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}

    fn tool(name: &str, policy: TaskPolicy, rerun: Rerun) -> ToolDef {
        ToolDef::new(name, policy, |_ctx: ToolContext, _: NoArgs| async {
            Ok(CallToolResult::text("ok"))
        })
        .expect("a tool")
        .rerun(rerun)
    }

    fn record(status: TaskStatus, asked: bool, job: bool) -> TaskRecord {
        let new = NewTask {
            job: job.then(|| Job::new(Default::default())),
            ..super::super::test_task("alice", Some("t"))
        };
        let mut rec = mcp_tasks::rules::new_record(
            TaskId::from_wire("t1"),
            new,
            &mcp_tasks::Limits::default(),
            0,
        );
        rec.status = status;
        if asked {
            rec.used_input_keys.insert("confirm".into());
        }
        rec
    }

    #[test]
    fn the_policy_decides_for_finished_tasks_only() {
        let unless = tool("t", TaskPolicy::Required, Rerun::UnlessAsked);
        let allowed = tool("t", TaskPolicy::Required, Rerun::Allowed);
        let never = tool("t", TaskPolicy::Required, Rerun::Never);
        let sync = tool("t", TaskPolicy::Synchronous, Rerun::Allowed);
        let failed = record(TaskStatus::Failed, false, true);
        let asked = record(TaskStatus::Completed, true, true);
        assert!(decide(&failed, |_| Some(&unless)).is_ok());
        assert_eq!(
            decide(&asked, |_| Some(&unless)).err(),
            Some(Refusal::Asked("t".into()))
        );
        assert!(decide(&asked, |_| Some(&allowed)).is_ok());
        assert_eq!(
            decide(&failed, |_| Some(&never)).err(),
            Some(Refusal::Never("t".into()))
        );
        assert_eq!(
            decide(&failed, |_| Some(&sync)).err(),
            Some(Refusal::Synchronous("t".into()))
        );
        assert_eq!(
            decide(&failed, |_| None).err(),
            Some(Refusal::UnknownTool("t".into()))
        );
        for status in [TaskStatus::Working, TaskStatus::InputRequired] {
            let running = record(status, false, true);
            assert_eq!(
                decide(&running, |_| Some(&allowed)).err(),
                Some(Refusal::Unfinished(status.as_str()))
            );
        }
        let old = record(TaskStatus::Cancelled, false, false);
        assert_eq!(decide(&old, |_| Some(&allowed)).err(), Some(Refusal::NoJob));
        assert!(
            Refusal::Asked("confirm_delete".into())
                .to_string()
                .contains("asked for input")
        );
    }
}
