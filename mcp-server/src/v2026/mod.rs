//! The handlers of MCP 2026-07-28 with the tasks extension (SEP-2663): stateless, the
//! caller's capabilities in each request's `_meta`, results inlined in `tasks/get`, input
//! answered with `tasks/update`, `subscriptions/listen` for push.
//!
//! **Invariant.** The server decides whether a call is a task, only for a request whose
//! own `_meta` declares the extension; nothing is remembered between requests.

mod deadline;
pub(crate) mod features;
mod listen;
mod rounds;
mod stream;

use jsonrpsee::Extensions;
use mcp_tasks::{Owner, StoreError, TaskId, WireRevision};
use mcp_tasks_protocol::meta::RELATED_TASK_IDS;
use mcp_tasks_protocol::method::Request;
use mcp_tasks_protocol::tasks::{
    self, CallToolReply, CancelTaskResult, CreateTaskResult, GetTaskResult, UpdateTaskResult,
};
use mcp_tasks_protocol::v2026::{
    self, DiscoverResult, ListToolsResult, ResultMeta, ServerCapabilities, Tool, ToolInputSchema,
};
use serde::Deserialize;
use serde_json::Value;

use crate::audit;
use crate::cache::Cacheable;
use crate::call::{Requester, find_tool, idempotency, idempotency_key, start_task};
use crate::context::{ToolContext, ToolError};
use crate::errors::ServerError;
use crate::errors::call_error;
use crate::revision::Caller;
use crate::revision::SUPPORTED_VERSIONS;
use crate::state::State;
use crate::tool::{TaskPolicy, ToolDef};
use crate::views;

pub(crate) use listen::listen;
pub(crate) use stream::stream;

fn require_tasks(caller: &Caller) -> Result<(), ServerError> {
    if caller.declares_tasks {
        Ok(())
    } else {
        Err(ServerError::MissingTasksCapability)
    }
}

/// The caller of a task method: one that declares the tasks extension (-32021 otherwise).
fn task_caller(ext: &Extensions) -> Result<Caller, ServerError> {
    let caller = Caller::from_extensions(ext);
    require_tasks(&caller)?;
    Ok(caller)
}

fn task_id(id: &str) -> TaskId {
    TaskId::from_wire(id)
}

/// `server/discover`.
pub(crate) fn discover(state: &State) -> Result<DiscoverResult, ServerError> {
    if !state.stateless {
        return Err(ServerError::MethodNotFound(
            "Method not found: this server speaks MCP 2025-11-25 only (initialize)".to_owned(),
        ));
    }
    let catalog = &state.catalog;
    let capabilities = ServerCapabilities {
        tools: Some(Default::default()),
        // Any tool may log (`ToolContext::log`) to a request that asks for it.
        logging: Some(Default::default()),
        resources: catalog.has_resources().then(|| v2026::ResourcesCapability {
            subscribe: Some(true),
            ..Default::default()
        }),
        prompts: catalog.has_prompts().then(Default::default),
        completions: catalog.has_completions().then(Default::default),
        ..Default::default()
    };
    // Task event streams (draft SEP-2694) need a store that keeps task logs.
    let capabilities = if state.store.keeps_logs() {
        tasks::TasksExtensionCapability::declare_on_server_with_event_streams(capabilities)
    } else {
        tasks::TasksExtensionCapability::declare_on_server(capabilities)
    };
    let mut result = DiscoverResult::new(capabilities);
    result.supported_versions = SUPPORTED_VERSIONS.iter().map(|v| (*v).to_owned()).collect();
    result.instructions = state.instructions.clone();
    (result.cache_scope, result.ttl_ms) = state.cache_hints.members(Cacheable::Discover);
    result.meta = Some(ResultMeta {
        server_info: Some(state.info.clone()),
        ..Default::default()
    });
    Ok(result)
}

fn tool_listing(tool: &ToolDef) -> Tool {
    let schema: ToolInputSchema =
        serde_json::from_value(Value::Object(tool.input_schema.clone())).unwrap_or_default();
    let mut listed = Tool::new(tool.name(), schema);
    listed.title = tool.title.clone();
    listed.description = tool.description.clone();
    listed
}

/// `tools/list`: every tool, on one page, with the configured `cacheScope` and `ttlMs`.
pub(crate) fn tools_list(state: &State) -> ListToolsResult {
    let keys = state.store.supports_idempotency();
    let mut result = ListToolsResult::new(
        state
            .tools
            .values()
            .map(|tool| {
                let mut listed = tool_listing(tool);
                if keys && tool.dedupes_keyed_calls(false) {
                    crate::tool::flag_idempotent(&mut listed.meta);
                }
                listed
            })
            .collect(),
    );
    (result.cache_scope, result.ttl_ms) = state.cache_hints.members(Cacheable::Tools);
    result
}

/// `tools/call`: a task when the request declares the extension and the tool wants one
/// (after any preflight rounds; at its deadline for a deadline-promoted tool), else the
/// tool runs now, in MRTR rounds.
pub(crate) async fn tools_call(
    state: &State,
    mut params: v2026::CallToolRequestParams,
    ext: &Extensions,
) -> Result<CallToolReply, ServerError> {
    let caller = Caller::from_extensions(ext);
    let mut args = params.arguments.take().unwrap_or_default();
    let tool = find_tool(state, &params.name, &mut args, caller.identity.as_ref())?;
    if tool.policy() == TaskPolicy::Required && !caller.declares_tasks {
        return Err(ServerError::MissingTasksCapability);
    }
    // Checked on every call; used only by one that creates a task (a synchronous answer
    // creates nothing to repeat). Fingerprinted on the arguments as the client sent them.
    let key = idempotency_key(params.idempotency_key.take(), Some(&params.meta.extra))?;
    let keyed = match key {
        Some(key) if caller.declares_tasks && tool.wants_task(&args) => {
            idempotency(Some(key), tool.name(), &args)?
        }
        _ => None,
    };
    let target = rounds::Target {
        method: v2026::CallTool::METHOD,
        name: tool.name(),
    };
    let answers = rounds::answers(
        &state.cursor_key,
        &caller.owner,
        target,
        params.request_state.as_deref(),
        params.input_responses.as_ref(),
    )?;
    let (cancel, mut call_scope) = rounds::request_scope(ext, &mut params.meta, &caller);
    call_scope.related_tasks = related_tasks(state, &caller.owner, &params.meta).await?;
    let scope = || call_scope.clone();

    if caller.declares_tasks && tool.wants_task(&args) {
        // Input the tool needs before the task exists is gathered in rounds first.
        let ctx = ToolContext::rounds(answers.clone(), cancel.clone(), scope());
        let args = match tool.preflight_args(ctx.clone(), args).await {
            Ok(args) => args,
            Err(ToolError::InputRequired) => {
                return rounds::input_required(
                    &state.cursor_key,
                    &caller.owner,
                    target,
                    &ctx,
                    answers,
                )
                .map(CallToolReply::InputRequired);
            }
            Err(e) => return Err(call_error(e)),
        };
        if let Some(deadline) = tool.deadline(&args, state.promote_after) {
            let call = deadline::DeadlineCall {
                state,
                tool,
                caller: &caller,
                target,
                answers,
                request_cancel: cancel,
                scope: scope(),
                declarations: declarations(&call_scope),
                idempotency: keyed,
            };
            // Boxed, as `start_task` below: a synchronous call's future (the common case)
            // stays small instead of carrying the task paths' state on every request.
            return Box::pin(call.run(args, deadline)).await;
        }
        let record = Box::pin(start_task(
            state,
            &caller.owner,
            tool,
            args,
            None,
            WireRevision::V2026_07_28,
            Requester {
                related_tasks: call_scope.related_tasks.clone(),
                identity: caller.identity.clone(),
                declarations: declarations(&call_scope),
                // Nothing is pushed about a task the client did not name (listen's taskIds).
                announced: None,
                idempotency: keyed,
            },
        ))
        .await?;
        return Ok(CallToolReply::Task(CreateTaskResult::from(views::task(
            &record,
        ))));
    }

    let ctx = ToolContext::rounds(answers.clone(), cancel, call_scope);
    let result = tool.run(ctx.clone(), args).await;
    rounds::call_reply(
        &state.cursor_key,
        &caller.owner,
        target,
        &ctx,
        answers,
        result,
    )
}

/// The capabilities a call declared, as its task keeps them (taken from its `_meta` into
/// its scope by [`rounds::request_scope`]).
fn declarations(scope: &crate::context::CallScope) -> Option<serde_json::Value> {
    serde_json::to_value(scope.client_capabilities.as_ref()?).ok()
}

/// The most related task ids one request may name.
const MAX_RELATED_TASKS: usize = 64;

/// The earlier tasks a request names as related (`io.modelcontextprotocol/relatedTaskIds`
/// in its `_meta`, the tasks extension draft): a list of task ids, each the caller's own
/// and unexpired, as `tasks/get` would find it; anything else is invalid params, naming
/// the id.
async fn related_tasks(
    state: &State,
    owner: &Owner,
    meta: &v2026::RequestMeta,
) -> Result<Vec<String>, ServerError> {
    let Some(value) = meta.extra.get(RELATED_TASK_IDS) else {
        return Ok(Vec::new());
    };
    let mut ids = Vec::<String>::deserialize(value).map_err(|_| {
        ServerError::InvalidParams(format!("{RELATED_TASK_IDS} must be a list of task ids"))
    })?;
    if ids.len() > MAX_RELATED_TASKS {
        return Err(ServerError::InvalidParams(format!(
            "{RELATED_TASK_IDS} names {} tasks; at most {MAX_RELATED_TASKS}",
            ids.len()
        )));
    }
    // Each id once, in the order named; all looked up at once.
    let mut seen = std::collections::HashSet::new();
    ids.retain(|id| seen.insert(id.clone()));
    let lookups = ids.iter().map(|id| async move {
        match state
            .store()
            .get(owner, &TaskId::from_wire(id.as_str()))
            .await
        {
            Ok(_) => Ok(()),
            Err(StoreError::NotFound) => Err(ServerError::InvalidParams(format!(
                "{RELATED_TASK_IDS}: no task {id:?}"
            ))),
            Err(e) => Err(e.into()),
        }
    });
    futures::future::try_join_all(lookups).await?;
    Ok(ids)
}

/// `tasks/get`: the detailed task, with the poll interval this reader earns.
pub(crate) async fn tasks_get(
    state: &State,
    params: tasks::GetTaskRequestParams,
    ext: &Extensions,
) -> Result<GetTaskResult, ServerError> {
    let caller = task_caller(ext)?;
    let outcome = state
        .store
        .get(&caller.owner, &task_id(&params.task_id))
        .await;
    let record = audit::audited(
        state.cursor_key(),
        tasks::GetTask::METHOD,
        &caller.owner,
        &params.task_id,
        outcome,
    )?;
    Ok(GetTaskResult::from(views::detailed(state.metered(record))))
}

/// `tasks/update`: answers to the task's input requests.
pub(crate) async fn tasks_update(
    state: &State,
    params: tasks::UpdateTaskRequestParams,
    ext: &Extensions,
) -> Result<UpdateTaskResult, ServerError> {
    let caller = task_caller(ext)?;
    if let Some((key, _)) = params.input_responses.iter().find(|(_, v)| !v.is_object()) {
        return Err(ServerError::InvalidParams(format!(
            "Invalid params: inputResponses.{key} must be an object"
        )));
    }
    let responses = params.input_responses.into_iter().collect();
    let id = task_id(&params.task_id);
    let outcome = state
        .store
        .resolve_input(&caller.owner, &id, responses)
        .await;
    audit::audited(
        state.cursor_key(),
        tasks::UpdateTask::METHOD,
        &caller.owner,
        &params.task_id,
        outcome,
    )?;
    Ok(UpdateTaskResult::default())
}

/// `tasks/cancel`: asks the worker to stop (an acknowledgement, not the task).
pub(crate) async fn tasks_cancel(
    state: &State,
    params: tasks::CancelTaskRequestParams,
    ext: &Extensions,
) -> Result<CancelTaskResult, ServerError> {
    let caller = task_caller(ext)?;
    let outcome = state
        .store
        .request_cancel(&caller.owner, &task_id(&params.task_id))
        .await;
    audit::audited(
        state.cursor_key(),
        tasks::CancelTask::METHOD,
        &caller.owner,
        &params.task_id,
        outcome,
    )?;
    Ok(CancelTaskResult::default())
}
